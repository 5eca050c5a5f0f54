"""bench/skr_shard.py and bench/skr_fleet.py: an SKR server process seeds the same clusters the bench's own
process would, from a template that crossed a process boundary as JSON."""

from __future__ import annotations

import json

import pytest

from bench import skr_fleet, skr_shard
from kubedev.store import Store
from tasks.cloud import names

TEMPLATE_ID = "0000aaaa-0000-4000-8000-000000000000"


def template_in(store: Store) -> skr_fleet.Template:
    """A template SKR ``tmpl-aws`` holding one IpRange with its id (as bootstrap leaves it), snapshotted."""
    skr_fleet.seed_cluster(store, "aws")
    res = names.SKR_IPRANGE
    rt = store.registry.lookup(res.group, res.version, res.plural)
    assert rt is not None
    obj = store.create(rt, None, {"metadata": {"name": "default", "labels": {names.LABEL_KYMA_NAME: "tmpl-aws"}},
                                  "spec": {"cidr": "10.251.0.0/22"}, "status": {"id": TEMPLATE_ID, "state": "Ready"}},
                       keep_status=True)
    return skr_fleet.Template("aws", "tmpl-aws", skr_objects=[(rt, obj)], ids=[TEMPLATE_ID])


@pytest.mark.parametrize(("shards", "owners"), [(1, [0, 0, 0, 0]), (2, [0, 1, 0, 1]), (3, [0, 1, 2, 0])])
def test_skrs_are_spread_over_the_servers_by_index(shards: int, owners: list[int]) -> None:
    assert [skr_shard.shard_of(i, shards) for i in range(4)] == owners


def test_a_template_sent_as_json_clones_like_the_original() -> None:
    template = template_in(Store())
    target = Store()
    skr_fleet.seed_cluster(target, "aws")  # as the server process: its first cluster resolves the resources
    shipped = skr_fleet.template_from_json(json.loads(json.dumps(skr_fleet.template_to_json(template))), target)
    assert skr_fleet.clone_skr(target, shipped, "skr-0007", 7) == 1
    res = names.SKR_IPRANGE
    rt = target.registry.lookup(res.group, res.version, res.plural)
    assert rt is not None
    clone = target.get(rt, None, "default")
    assert clone["metadata"]["labels"] == {names.LABEL_KYMA_NAME: "skr-0007"}
    assert clone["status"]["id"] == skr_fleet.clone_ids(template, 7)[TEMPLATE_ID] != TEMPLATE_ID
    assert clone["spec"] == {"cidr": "10.251.0.0/22"}


def test_a_seeded_cluster_serves_the_skr_crds_and_a_ready_cloudresources() -> None:
    store = Store()
    skr_fleet.seed_cluster(store, "aws")
    res = names.CLOUD_RESOURCES
    rt = store.registry.lookup(res.group, res.version, res.plural)
    assert rt is not None
    cr = store.get(rt, names.KYMA_SYSTEM, "default")
    assert cr["status"]["state"] == "Ready"
    assert cr["metadata"]["finalizers"] == [names.FINALIZER]
    assert store.registry.lookup("cloud-resources.kyma-project.io", "v1beta1", "awsnfsvolumes") is not None


def test_a_template_of_a_kind_not_served_is_refused() -> None:
    data = {"provider": "aws", "kyma": "tmpl-aws", "ids": [],
            "skr_objects": [[["example.com", "v1", "widgets"], {"metadata": {"name": "w"}}]]}
    with pytest.raises(KeyError):
        skr_fleet.template_from_json(data, Store())


def test_the_kubeconfig_points_at_the_cluster_on_its_server() -> None:
    config = skr_shard.kubeconfig_of("http://127.0.0.1:4242", "skr-0003")
    assert config["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:4242/clusters/skr-0003"
