# mypy: disable-error-code="union-attr, index, arg-type"
"""What a steady SKR connect reads (issue 31), against the dev API server (no worker, no cloud: about a
second): the installer's one list of its CRDs and what it does when the SKR's owner changed one, and the
connect's reads kept until a turn writes (a consumer's IpRange and its KCP mirror read once)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from informers import informer
from kube import Kube, resources
from kube.clusters import RemoteKube
from kubedev import DevAPIServer
from tasks.cloud import install, names, registry
from tasks.cloud import settings as cloud_settings
from tasks.cloud.skr import connect, installer
from tasks.cloud.skr.context import KEEP_SHARE, SkrContext
from tests.fixtures.devapi import real_cluster
from workers.controller import Result

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(real_cluster(), reason="named clusters are a dev API server feature")]

SKR = "skr-reads"
VERSION = names.ANNOTATION_VERSION


def _api(server: DevAPIServer, cluster: str | None) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = server.cluster_url(cluster)
    return client.ApiClient(cfg)


@pytest.fixture
def skr(devapi_clean: DevAPIServer) -> Iterator[tuple[DevAPIServer, Kube]]:
    devapi_clean.add_cluster(SKR)
    kube = RemoteKube(_api(devapi_clean, SKR), cluster=SKR, timeout=10)
    try:
        yield devapi_clean, kube
    finally:
        kube.close()
        devapi_clean.remove_cluster(SKR)


def _counted(server: DevAPIServer, cluster: str | None, action: object) -> dict[str, int]:
    before = server.request_counts(cluster)
    assert callable(action)
    action()
    after = server.request_counts(cluster)
    return {v: n - before.get(v, 0) for v, n in after.items() if n - before.get(v, 0)}


def _install(kube: Kube) -> list[str]:
    return installer.install_crds(kube, "aws", cloud_settings.load({}))


def test_the_installer_lists_its_crds_once_and_reapplies_what_the_owner_changed(skr: tuple[DevAPIServer, Kube]) -> None:
    server, kube = skr
    manifests = install.shared_crds("skr", provider="aws")
    ours = [m["metadata"]["name"] for m in manifests]
    assert {o.rsplit(": ", 1)[1] for o in _install(kube)} == {"created"}
    steady: list[str] = []
    assert _counted(server, SKR, lambda: steady.extend(_install(kube))) == {"LIST": 1}  # no GET per CRD
    assert steady == [f"{name}: skipped" for name in ours]

    changed, unlabelled, deleted = ours[1], ours[2], ours[3]
    crd = kube.get(resources.CRD, changed)
    crd["metadata"]["annotations"][VERSION] = "v0.0.0-customer"
    crd["spec"]["names"]["categories"] = ["customer"]
    kube.replace(resources.CRD, crd)
    crd = kube.get(resources.CRD, unlabelled)
    crd["metadata"]["labels"] = {"customer": "owned"}
    kube.replace(resources.CRD, crd)
    kube.delete(resources.CRD, deleted)
    server.call(lambda: None)  # the delete is done before the next read
    outcomes = dict(o.rsplit(": ", 1) for o in _install(kube))
    assert outcomes == {**{n: "skipped" for n in ours}, changed: "updated", unlabelled: "updated", deleted: "created"}
    manifest = next(m for m in manifests if m["metadata"]["name"] == changed)
    restored = kube.get(resources.CRD, changed)
    assert restored["metadata"]["annotations"][VERSION] == manifest["metadata"]["annotations"][VERSION]
    assert restored["spec"]["names"].get("categories") == manifest["spec"]["names"].get("categories")
    assert installer.labelled(kube.get(resources.CRD, unlabelled))  # labelled again: found by the list
    assert _counted(server, SKR, lambda: _install(kube)) == {"LIST": 1}


def test_a_foreign_crd_with_the_installers_label_is_left_alone(skr: tuple[DevAPIServer, Kube]) -> None:
    _, kube = skr
    _install(kube)
    label = {install.LABEL_INSTALLER: install.INSTALLER_VALUE}
    foreign = {"metadata": {"name": "widgets.example.com", "labels": label},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    version = kube.create(resources.CRD, foreign)["metadata"]["resourceVersion"]
    outcomes = _install(kube)
    assert all(not o.startswith("widgets.") for o in outcomes)
    assert {o.rsplit(": ", 1)[1] for o in outcomes} == {"skipped"}
    assert kube.get(resources.CRD, "widgets.example.com")["metadata"]["resourceVersion"] == version


def _ctx(server: DevAPIServer, kube: Kube) -> SkrContext:
    return SkrContext(kyma=SKR, skr=kube, kcp=Kube(_api(server, None), timeout=10), scope={"spec": {"provider": "aws"}},
                      settings=cloud_settings.load({}), deadline=time.monotonic() + 10)


def test_a_consumers_iprange_and_its_mirror_are_read_once_until_a_turn_writes(skr: tuple[DevAPIServer, Kube]) -> None:
    server, kube = skr
    install.install(kube, "skr", provider="aws")
    install.install(Kube(_api(server, None), timeout=10), "kcp")
    kube.create(names.SKR_IPRANGE, {"metadata": {"name": "default"}, "spec": {"cidr": "10.251.0.0/22"}})
    ctx = _ctx(server, kube)
    ident = "00000001-0000-4000-8000-000000000001"

    def iprange_turn(c: SkrContext, namespace: str, name: str) -> Result:
        assert c.get(names.SKR_IPRANGE, name) is not None
        c.mirror(names.KCP_IPRANGE, ident)
        return Result.done()

    with informer.direct_reads():  # the KCP read from the API server, as while the informers are not synced
        assert connect._run(ctx, names.SKR_IPRANGE, iprange_turn, "IpRange", )["ok"]

    def consumer_reads() -> None:  # each consumer's read (defaultiprange.resolve) after the IpRange's turn
        assert ctx.get(names.SKR_IPRANGE, "default") is not None
        assert ctx.mirror(names.KCP_IPRANGE, ident) is None

    ctx.forget_all(keep=registry.kept_skr_resources())
    assert _counted(server, SKR, consumer_reads) == {}  # the small IpRange snapshot was kept
    with informer.direct_reads():
        assert _counted(server, None, consumer_reads) == {}  # the mirror was read by the IpRange's turn
        ctx.wrote()
        assert _counted(server, None, consumer_reads) == {"GET": 1}  # a turn wrote: read again, once
        assert _counted(server, None, consumer_reads) == {}
    ctx.wrote()
    watches = server.request_counts(None).get("WATCH", 0)
    consumer_reads()  # the first read from the informers (tasks.cloud.reads) starts them: a list and a watch
    deadline = time.monotonic() + 10
    while server.request_counts(None).get("WATCH", 0) == watches and time.monotonic() < deadline:
        time.sleep(0.01)
    ctx.wrote()
    assert _counted(server, None, consumer_reads) == {}  # then no request
    started = informer.informers_for(ctx.kcp).find(names.KCP_IPRANGE, "kcp-system")
    assert started is not None and started.store.packed and not started.store.label_index  # read by name only
    ctx.forget(names.SKR_IPRANGE)  # a turn wrote the IpRange: its snapshot is gone, the object read once
    assert _counted(server, SKR, consumer_reads) == {"GET": 1}
    assert _counted(server, SKR, consumer_reads) == {}


def test_a_large_snapshot_is_not_kept_past_its_turn(skr: tuple[DevAPIServer, Kube]) -> None:
    server, kube = skr
    install.install(kube, "skr", provider="aws")
    for n in range(3):
        kube.create(names.SKR_IPRANGE, {"metadata": {"name": f"r{n}"}, "spec": {"cidr": f"10.25{n}.0.0/22"}})
    ctx = _ctx(server, kube)
    assert ctx.skr.budget is not None
    _, _, size = kube.list_measured(names.SKR_IPRANGE)
    kube.budget.give(size)
    ctx.skr.budget.total = size * KEEP_SHARE - 1  # the list takes more than 1/KEEP_SHARE of it
    assert connect._run(ctx, names.SKR_IPRANGE, lambda c, ns, name: Result.done(), "IpRange")["ok"]
    assert ctx.skr.budget.left == ctx.skr.budget.total
    assert _counted(server, SKR, lambda: ctx.get(names.SKR_IPRANGE, "r1")) == {"GET": 1}
