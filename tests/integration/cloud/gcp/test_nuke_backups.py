"""Nuke's GCP backups (cloud-manager's pkg/kcp/provider/gcp/nuke) against the GCP stand-in: the Scope's
backups in every location are listed through the real ``google-cloud-filestore`` client, deleted by the
Nuke plan's calls through the same client, and hold the Nuke ``Deleting`` until none is listed; backups of
other runtimes, shared ones and foreign ones stay."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from kube import clusters, resources
from kube.refusal import Refusal
from kube.toolkit import execute
from kube.toolkit.outcome import Outcome
from kubedev import DevAPIServer
from standins.gcp import GcpStandIn
from tasks.cloud import names, registry, settings
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.gcp.nuke_backups import NUKE_SIDE, listed
from tasks.cloud.install import install
from tasks.cloud.kcp.nuke import reconcile
from tasks.cloud.kcp.nuke_plan import plan
from tests.fixtures.devapi import real_cluster
from workers.controller import Key

from .conftest import PROJECT

pytestmark = pytest.mark.integration

NOW = "2026-01-01T00:00:00Z"
SCOPE: dict[str, Any] = {"metadata": {"name": "kyma-1", "namespace": "kcp-system"},
         "spec": {"provider": "gcp", "scope": {"gcp": {"project": PROJECT}}}}
MINE = {"managed-by": "cloud-manager", "scope-name": "kyma-1"}


def t(seconds: float) -> float:
    return seconds


def name(location: str, backup: str, project: str = PROJECT) -> str:
    return f"projects/{project}/locations/{location}/backups/{backup}"


@pytest.fixture
def seeded(gcp: GcpStandIn) -> GcpStandIn:
    gcp.state.op_delay = 0.0
    fs = gcp.filestore
    fs.put_backup(name("us-east4", "mine-1"), labels=MINE)
    fs.put_backup(name("europe-west3", "mine-2"), labels={**MINE, "cm-allow-c-2": "accessible"})
    fs.put_backup(name("us-east4", "going"), labels=MINE, state="DELETING")
    fs.put_backup(name("us-east4", "other-runtime"), labels={"managed-by": "cloud-manager", "scope-name": "kyma-10"})
    fs.put_backup(name("us-east4", "shared-with-me"),
                  labels={"managed-by": "cloud-manager", "scope-name": "kyma-2", "cm-allow-c-1": "accessible"})
    fs.put_backup(name("us-east4", "hand-made"), labels={"scope-name": "kyma-1"})
    fs.put_backup(name("us-east4", "mine-elsewhere", "other-project"), labels=MINE)
    return gcp


def test_the_scopes_backups_go_in_every_location_and_hold_the_nuke(seeded: GcpStandIn) -> None:
    s = settings.load({"RECONCILERY_GCP_ENDPOINT_URL": seeded.url})
    client = NUKE_SIDE.clients(SCOPE, s)
    assert isinstance(client, FileBackupClient)
    found = NUKE_SIDE.list(client, SCOPE)
    assert sorted((o.id, o.deleting) for o in found) == [
        (name("europe-west3", "mine-2"), False), (name("us-east4", "going"), True), (name("us-east4", "mine-1"), False)]
    nuke: dict[str, Any] = {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"name": "kyma-1"}}, "status": {}}
    first = plan(nuke, {}, t, NOW, {NUKE_SIDE.kind: found})
    execute(first, clients={NUKE_SIDE.kind: client})
    assert first.status is not None and first.status["state"] == "Deleting" and first.requeue_after == 10
    left = seeded.filestore.backups()
    assert sorted(left) == sorted([name("us-east4", n) for n in ("going", "other-runtime", "shared-with-me",
                                                                 "hand-made")]
                                  + [name("us-east4", "mine-elsewhere", "other-project")])
    seeded.filestore.finish()  # the DELETING one (put there by hand) has no operation: it stays listed
    nuke["status"] = first.status
    second = plan(nuke, {}, t, NOW, {NUKE_SIDE.kind: listed(client, SCOPE)})
    executed = execute(second, clients={NUKE_SIDE.kind: client})
    assert executed.answers == ()  # its deletion runs: not asked again
    assert second.status is not None and {**nuke["status"], **second.status}["state"] == "Deleting"
    assert second.requeue_after == 10
    assert second.status["resources"] == [{"kind": "FilestoreBackup", "resourceType": "ProviderResource", "objects": {
        name("europe-west3", "mine-2"): "Deleted", name("us-east4", "going"): "Deleting",
        name("us-east4", "mine-1"): "Deleted"}}]


def test_a_refused_listing_is_the_nukes_error_and_a_gone_backup_is_deleted(seeded: GcpStandIn) -> None:
    client = FileBackupClient(endpoint=seeded.url)
    seeded.state.inject("GET", "/backups", 403, "Permission 'file.backups.list' denied")
    with pytest.raises(Refusal) as refused:
        listed(client, SCOPE)
    assert refused.value.failure.status == 403 and "file.backups.list" in refused.value.failure.message
    assert NUKE_SIDE.list_failed == "ErrorListingGcpFilestoreBackups"
    assert client.delete_backup(name("us-east4", "never-was")) is None  # gone between list and delete: done
    assert listed(client, {"metadata": {"name": "kyma-1"}, "spec": {"scope": {}}}) == []  # no project: nothing
    out = plan({"metadata": {"name": "k"}, "spec": {"scope": {"name": "kyma-1"}}, "status": {}}, {}, t, NOW,
               {NUKE_SIDE.kind: listed(client, SCOPE)})
    seeded.state.inject("DELETE", "/backups/", 500, "backend error", times=5)
    executed = execute(out, clients={NUKE_SIDE.kind: client})
    assert isinstance(executed.outcome, Outcome) and executed.outcome.requeue_after == 10  # asked again later


def test_a_zonal_chain_goes_one_backup_per_turn_without_refusals(gcp: GcpStandIn) -> None:
    """Filestore deletes the backups of one ZONAL/REGIONAL source one at a time; Nuke asks for one per turn."""
    gcp.state.op_delay = 60.0  # deletes keep running until finish()
    source = f"projects/{PROJECT}/locations/us-east4-a/instances/gone"
    for backup in ("z1", "z2"):
        gcp.filestore.put_backup(name("us-east4", backup), source_instance=source, labels=MINE, tier="ZONAL")
    client = FileBackupClient(endpoint=gcp.url)
    nuke: dict[str, Any] = {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"name": "kyma-1"}}, "status": {}}
    for expected in (["z1"], ["z2"]):
        found = listed(client, SCOPE)
        assert [o.id.rsplit("/", 1)[-1] for o in found if not o.deleting] == expected
        out = plan(nuke, {}, t, NOW, {NUKE_SIDE.kind: found})
        executed = execute(out, clients={NUKE_SIDE.kind: client})
        assert executed.refused is None and out.requeue_after == 10
        gcp.filestore.finish()
        nuke["status"] = {**nuke["status"], **(out.status or {})}
    assert listed(client, SCOPE) == []


@pytest.fixture
def declared() -> Iterator[None]:
    """A kind declaring the GCP backups as Nuke's provider resources, as the GcpNfsVolumeBackup kind does
    (``provider_nuke={"gcp": NUKE_SIDE}``); undeclared after the test."""
    kind = registry.register(registry.Kind(name="zz-test-nuke-gcp-backups", provider_nuke={"gcp": NUKE_SIDE}))
    try:
        yield
    finally:
        registry.unregister(kind)


@pytest.mark.skipif(real_cluster(), reason="a named cluster of the dev API server")
def test_nuke_reconcile_deletes_the_runtimes_backups_then_is_ready(
        devapi_clean: DevAPIServer, seeded: GcpStandIn, declared: None) -> None:
    """The Nuke controller (tasks/cloud/kcp/nuke.py) with the hook: the Scope's backups are deleted through
    the Scope's credentials and tracked as ProviderResource FilestoreBackup until none is listed."""
    seeded.filestore.put_backup(name("us-east4", "going"), labels={"scope-name": "unlisted"})  # not ours now
    devapi_clean.add_cluster("kcp-nuke")
    cfg = k8s.Configuration()
    cfg.host = devapi_clean.cluster_url("kcp-nuke")
    kcp = clusters.register("kcp-nuke", k8s.ApiClient(cfg))
    install(kcp, "kcp")
    kcp.create(resources.NAMESPACE, {"metadata": {"name": "kcp-system"}})
    kcp.create(names.SCOPE, {**SCOPE, "apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "Scope",
                             "spec": {**SCOPE["spec"], "kymaName": "kyma-1", "shootName": "c-1", "region": "us-east4",
                                      "scope": {"gcp": {"project": PROJECT, "vpcNetwork": "vpc"}}}})
    kcp.create(names.NUKE, {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "Nuke",
                            "metadata": {"name": "kyma-1", "namespace": "kcp-system"},
                            "spec": {"scope": {"name": "kyma-1"}}})
    settings.override(settings.load({"RECONCILERY_GCP_ENDPOINT_URL": seeded.url,
                                     "RECONCILERY_CLOUD_TIME_SCALE": "1000"}))
    try:
        key = Key("kcp-nuke", "kcp-system", "kyma-1")
        first = reconcile(key)
        nuke = kcp.get(names.NUKE, "kyma-1", "kcp-system")
        assert nuke is not None and nuke["status"]["state"] == "Deleting" and first.requeue_after
        assert nuke["status"]["resources"] == [{"kind": "FilestoreBackup", "resourceType": "ProviderResource",
                                                "objects": {name("europe-west3", "mine-2"): "Deleting",
                                                            name("us-east4", "mine-1"): "Deleting"}}]
        assert sorted(n.rsplit("/", 1)[-1] for n in seeded.filestore.backups()) == [
            "going", "hand-made", "mine-elsewhere", "other-runtime", "shared-with-me"]
        reconcile(key)
        nuke = kcp.get(names.NUKE, "kyma-1", "kcp-system")
        assert nuke is not None and nuke["status"]["state"] == "Ready"
        assert nuke["status"]["resources"][0]["objects"] == {name("europe-west3", "mine-2"): "Deleted",
                                                             name("us-east4", "mine-1"): "Deleted"}
    finally:
        settings.override(None)
        clusters.unregister("kcp-nuke")
