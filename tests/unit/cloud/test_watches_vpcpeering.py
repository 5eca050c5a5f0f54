"""The Cloud watch mappings of VPC peering: a Network's status change wakes the VpcPeerings naming it, a
deleted VpcPeering wakes its two Networks and the scope's Nuke (pure functions over the stores; the
peering's mapping is the registry's, from its declaration's ``networks`` and ``nuke``)."""

from __future__ import annotations

from typing import Any

from tasks.cloud import registry
from tasks.cloud.watches import kind_mapper, map_network, registrations, store_of
from watchers.engine import WatchEvent
from workers.controller import Key

NS = "kcp-system"
VPCPEERINGS = store_of(registry.get("vpcpeering"))
map_vpcpeering = kind_mapper(registry.get("vpcpeering"))


def peering(name: str, local: str, remote: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"scope": {"name": "k"}, "details": {
        "localNetwork": {"name": local}, "remoteNetwork": {"name": remote}}}}


class Stores:
    def __init__(self, **lists: list[dict[str, Any]]) -> None:
        self.lists = lists

    def list(self, registration: str) -> list[dict[str, Any]]:
        return self.lists[registration]


def test_a_network_status_change_wakes_the_peerings_naming_it() -> None:
    net = {"metadata": {"name": "k--kyma", "namespace": NS}, "spec": {"scope": {"name": "k"}}, "status": {"s": 1}}
    stores = Stores(**{"cloud-kcp-ipranges": [], VPCPEERINGS: [peering("a", "k--kyma", "a"), peering("b", "x", "b"),
                                                              peering("c", "k--c", "k--kyma")]})
    out = map_network(WatchEvent("MODIFIED", net, {**net, "status": {}}, "local"), stores)  # type: ignore[arg-type]
    assert [(c, k.name) for c, k in out] == [("cloud-network", "k--kyma"), ("cloud-vpcpeering", "a"),
                                             ("cloud-vpcpeering", "c")]
    unchanged = map_network(WatchEvent("MODIFIED", net, net, "local"), stores)  # type: ignore[arg-type]
    assert [c for c, _ in unchanged] == ["cloud-network"]
    alone = Stores(**{"cloud-kcp-ipranges": []})  # VpcPeerings not watched in this process
    assert [c for c, _ in map_network(WatchEvent("ADDED", net, None, "local"), alone)] == ["cloud-network"]  # type: ignore[arg-type]


def test_a_deleted_peering_wakes_its_networks_and_the_nuke() -> None:
    obj = peering("p", "k--kyma", "p")
    assert list(map_vpcpeering(WatchEvent("MODIFIED", obj, obj, "local"), Stores())) == [  # type: ignore[arg-type]
        ("cloud-vpcpeering", Key("local", NS, "p"))]
    assert [(c, k.name) for c, k in map_vpcpeering(WatchEvent("DELETED", obj, obj, "local"), Stores())] == [  # type: ignore[arg-type]
        ("cloud-vpcpeering", "p"), ("cloud-network", "k--kyma"), ("cloud-network", "p"), ("cloud-nuke", "k")]


def test_the_peering_watch_feeds_its_controller_its_networks_and_the_nuke() -> None:
    by_name = {r.name: r for r in registrations()}
    assert VPCPEERINGS == "cloud-vpcpeerings"
    assert by_name[VPCPEERINGS].controllers == ("cloud-vpcpeering", "cloud-network", "cloud-nuke")
    assert "cloud-vpcpeering" in by_name["cloud-networks"].controllers
