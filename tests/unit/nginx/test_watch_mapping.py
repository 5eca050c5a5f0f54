"""Watch events -> (host, upstream) keys: who gets re-synced when something changes."""

from __future__ import annotations

from typing import Any

import pytest

from informers.store import Stores
from tasks.nginx.controller import CONTROLLER_NAME, host_keys, parse_host_key, shard_of
from tasks.nginx.translate import UpstreamRef
from tasks.nginx.watches import CONFIG, NODES, SERVICES, map_config, map_node, map_service, registrations
from tests.unit.nginx.test_translate import node, service
from watchers.engine import WatchEvent

HOSTS = "http://127.0.0.1:9000/api, http://127.0.0.1:9001/api"


def configmap(hosts: str = HOSTS, name: str = "nkl-config") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "nkl"}, "data": {"nginx-hosts": hosts}}


def stores(*services: dict[str, Any], cm: dict[str, Any] | None = None) -> Stores:
    s = Stores()
    s.add(SERVICES).replace(list(services))
    s.add(NODES).replace([])
    s.add(CONFIG).replace([cm or configmap()])
    return s


def keys(pairs: Any) -> set[tuple[str, str]]:
    out = set()
    for controller, key in pairs:
        assert controller == CONTROLLER_NAME and key.cluster == "local"
        out.add((key.namespace, key.name))
    return out


H0, H1 = "http://127.0.0.1:9000/api", "http://127.0.0.1:9001/api"
WEB = service("web", [("nkl-web", 30001), ("metrics", 30002)])
DB = service("db", [("nkl-db", 30003)], {"nginxinc.io/nkl-db": "stream"})


def test_registrations_watch_services_nodes_and_the_configmap() -> None:
    by_name = {r.name: r for r in registrations()}
    assert by_name[SERVICES].namespace == "nginx-ingress"
    assert by_name[NODES].namespace is None
    assert by_name[CONFIG].namespace == "nkl" and by_name[CONFIG].field_selector == "metadata.name=nkl-config"


def test_a_service_maps_to_its_upstreams_on_every_host() -> None:
    event = WatchEvent("ADDED", WEB, None, "local")
    assert keys(map_service(event, stores(WEB))) == {(H0, "http:web"), (H1, "http:web")}


def test_a_removed_or_renamed_port_is_synced_too() -> None:
    new = service("web", [("nkl-web2", 30001)])
    event = WatchEvent("MODIFIED", new, WEB, "local")
    assert keys(map_service(event, stores(new))) == {(h, u) for h in (H0, H1) for u in ("http:web", "http:web2")}


def test_an_annotation_change_syncs_both_protocols() -> None:
    new = service("web", [("nkl-web", 30001)], {"nginxinc.io/nkl-web": "stream"})
    event = WatchEvent("MODIFIED", new, WEB, "local")
    assert keys(map_service(event, stores(new))) == {(h, u) for h in (H0, H1) for u in ("http:web", "stream:web")}


def test_a_deleted_service_empties_its_upstreams() -> None:
    assert keys(map_service(WatchEvent("DELETED", WEB, WEB, "local"), stores())) == {(H0, "http:web"),
                                                                                    (H1, "http:web")}


def test_a_service_without_prefixed_ports_maps_to_nothing() -> None:
    svc = service("other", [("http", 30005)])
    assert list(map_service(WatchEvent("ADDED", svc, None, "local"), stores(svc))) == []


def test_no_configmap_no_hosts_no_keys() -> None:
    s = stores(WEB)
    s.store(CONFIG).replace([])
    assert list(map_service(WatchEvent("ADDED", WEB, None, "local"), s)) == []


def test_node_join_leave_and_address_change_sync_every_upstream_as_one_key_per_host() -> None:
    s = stores(WEB, DB)
    every = {(h, f"*{i}/8") for h in (H0, H1) for i in range(8)}
    w = node("w0", "10.0.1.11")
    assert keys(map_node(WatchEvent("ADDED", w, None, "local"), s)) == every
    assert keys(map_node(WatchEvent("DELETED", w, w, "local"), s)) == every
    moved = node("w0", "10.0.1.99")
    assert keys(map_node(WatchEvent("MODIFIED", moved, w, "local"), s)) == every
    second_ip = node("w0", "10.0.1.11", extra=[{"type": "InternalIP", "address": "10.0.2.11"}])
    assert keys(map_node(WatchEvent("MODIFIED", second_ip, w, "local"), s)) == every
    promoted = node("w0", "10.0.1.11", labels={"node-role.kubernetes.io/control-plane": ""})
    assert keys(map_node(WatchEvent("MODIFIED", promoted, w, "local"), s)) == every


def test_node_heartbeats_sync_nothing() -> None:
    w = node("w0", "10.0.1.11")
    beat = {**w, "status": {**w["status"], "conditions": [{"type": "Ready", "status": "True"}]}}
    assert list(map_node(WatchEvent("MODIFIED", beat, w, "local"), stores(WEB))) == []


def test_a_configmap_change_syncs_every_upstream_on_every_host_including_new_ones() -> None:
    h2 = "http://127.0.0.1:9002/api"
    cm = configmap(HOSTS + "," + h2)
    event = WatchEvent("MODIFIED", cm, configmap(), "local")
    assert keys(map_config(event, stores(WEB, DB, cm=cm))) == {(h, f"*{i}/8") for h in (H0, H1, h2) for i in range(8)}


def test_another_configmap_is_ignored() -> None:
    other = configmap(name="something-else")
    assert list(map_config(WatchEvent("ADDED", other, None, "local"), stores(WEB))) == []


def test_invalid_settings_still_enqueue_the_valid_hosts() -> None:
    cm = {"metadata": {"name": "nkl-config", "namespace": "nkl"},
          "data": {"nginx-hosts": H0 + ",not-a-url", "tls-mode": "bogus"}}
    assert keys(map_config(WatchEvent("ADDED", cm, None, "local"), stores(WEB, cm=cm))) == {
        (H0, f"*{i}/8") for i in range(8)}


def test_host_shards_partition_the_upstreams_and_their_names_parse() -> None:
    refs = [UpstreamRef(p, f"u{i}") for p in ("http", "stream") for i in range(200)]
    shards = [{r for r in refs if shard_of(r, 8) == i} for i in range(8)]
    assert set().union(*shards) == set(refs) and sum(map(len, shards)) == len(refs) and all(shards)
    assert [parse_host_key(k.name) for k in host_keys(H0, 3)] == [(0, 3), (1, 3), (2, 3)]
    assert parse_host_key("*") == (0, 1) and parse_host_key("http:web") is None
    for bad in ("*3/3", "*x/8", "*1", "*1/0"):
        with pytest.raises(ValueError):
            parse_host_key(bad)
