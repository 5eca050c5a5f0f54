"""The GCP NFS backup family's plans (pure): GcpNfsVolumeBackup (id, create, labels, Ready, capacity cadence,
short-circuit, markFailed, ownership, deletion), GcpNfsVolumeRestore (sources, ownership rule, lease,
running operation found again, Done / Failed), GcpNfsVolumeBackupDiscovery, GcpNfsVolume from a backup,
the names and labels of :mod:`tasks.cloud.gcp.nfsbackup_plan`, and the kinds' ``render``."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit import Action, Call
from kube.toolkit.conditions import condition
from tasks.cloud import names, registry
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.skr import gcpnfsvolume_source_plan as src
from tasks.cloud.skr import gcpnfsvolumebackup_plan as bk
from tasks.cloud.skr import gcpnfsvolumebackupdiscovery_plan as disc
from tasks.cloud.skr import gcpnfsvolumerestore_plan as rs
from tasks.cloud.skr.gcpnfsbackup_render import render_backups, render_restores
from tests.unit.cloud.outcomes import answered, refuse

ID = "0b0c5bd2-54a4-4a4e-9d4e-3c1f4b2f6a10"
NEW = "7f1de3b0-1c1e-4b5e-9d3a-5b8c9d0e1f2a"
NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T02:00:00Z"
SCOPE = {"metadata": {"name": "k1", "namespace": "kcp-system"},
         "spec": {"kymaName": "k1", "provider": "gcp", "region": "us-east4", "shootName": "shoot-a",
                  "scope": {"gcp": {"project": "p1", "vpcNetwork": "vpc1"}}}}
INSTANCE = "projects/p1/locations/us-east4-a/instances/cm-" + NEW
BACKUP = f"projects/p1/locations/us-east4/backups/cm-{ID}"
OP = "projects/p1/locations/us-east4/operations/op-1"


def t(s: float) -> float:
    return s


def ready() -> list[dict[str, Any]]:
    return [condition("Ready", True, "Ready", "ok", NOW)]


# -- names and labels -------------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "path"), [
    ("us-east4/cm-1", "projects/p1/locations/us-east4/backups/cm-1"),
    ("us-east4/cm-1/x", None), ("../x/cm-1", None), ("us-east4/", None), ("US/cm", None), ("a/b/c", None),
    ("projects%2Fother/cm", None)])
def test_backup_url_names_only_a_backup_of_the_scopes_project(url: str, path: str | None) -> None:
    assert fs.backup_url("p1", url) == path


def test_labels_are_the_originals_and_stale_allow_labels_go() -> None:
    obj = {"metadata": {"name": "b1", "namespace": "ns"},
           "spec": {"source": {"volume": {"name": "v1"}}, "accessibleFrom": ["shoot-b", "BAD/one"]}}
    labels = fs.labels_for(SCOPE, obj, {"cm-allow-old": fs.ACCESSIBLE_FROM_VALUE, "other": "kept"})
    assert labels == {"managed-by": "cloud-manager", "scope-name": "k1", fs.VOLUME_NAME_KEY: "v1",
                      fs.VOLUME_NAMESPACE_KEY: "ns", fs.BACKUP_NAME_KEY: "b1", fs.BACKUP_NAMESPACE_KEY: "ns",
                      fs.SHOOT_NAME_KEY: "shoot-a", "cm-allow-shoot-b": fs.ACCESSIBLE_FROM_VALUE, "other": "kept"}


@pytest.mark.parametrize(("labels", "name", "ok"), [
    ({"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-a"}, BACKUP, True),
    ({"managed-by": "cloud-manager", "cm-allow-shoot-a": fs.ACCESSIBLE_FROM_VALUE}, BACKUP, True),
    ({"managed-by": "cloud-manager", "cm-allow-all": fs.ACCESSIBLE_FROM_VALUE}, BACKUP, True),
    ({"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-b"}, BACKUP, False),
    ({fs.SHOOT_NAME_KEY: "shoot-a"}, BACKUP, False),
    ({"managed-by": "cloud-manager", "cm-allow-shoot-a": "yes"}, BACKUP, False),
    ({"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-a"}, BACKUP.replace("p1", "p2"), False)])
def test_the_ownership_rule(labels: dict[str, str], name: str, ok: bool) -> None:
    assert fs.allowed({"name": name, "labels": labels}, SCOPE) is ok


# -- GcpNfsVolumeBackup -------------------------------------------------------------------------------

def backup_obj(status: dict[str, Any] | None = None, finalizer: bool = True, deleting: bool = False,
               labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "b1", "namespace": "ns", "labels": labels or {},
                            "creationTimestamp": NOW}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"source": {"volume": {"name": "v1"}}, **spec}, "status": status or {}}


def volume(is_ready: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": "v1", "namespace": "ns"}, "spec": {"fileShareName": "vol1"},
            "status": {"conditions": ready() if is_ready else [], "id": NEW}}


def filestore(obj: dict[str, Any], state: str = "READY", **labels: str) -> dict[str, Any]:
    return {"name": BACKUP, "state": state, "storageBytes": str(3 * 2**30),
            "labels": {**fs.labels_for(SCOPE, obj), **labels}}


def seen(obj: dict[str, Any], **kw: Any) -> bk.Seen:
    return bk.Seen(obj=obj, scope=SCOPE, retry=5.0, **kw)


def test_a_new_backup_gets_its_id_and_location_first() -> None:
    out = bk.plan(seen(backup_obj(finalizer=False)), NEW, t, NOW)
    assert out.add_finalizer == names.FINALIZER and not out.writes
    assert out.status is not None and out.status["id"] == NEW and out.status["location"] == "us-east4"
    out = bk.plan(seen(backup_obj(finalizer=False, location="europe-west3")), NEW, t, NOW)
    assert out.status is not None and out.status["location"] == "europe-west3"


def test_create_backup_of_the_volumes_own_instance() -> None:
    obj = backup_obj({"id": ID, "location": "us-east4"})
    out = bk.plan(seen(obj, volume=volume(), instance=INSTANCE, file_share="vol1"), NEW, t, NOW)
    (call,) = out.writes
    assert isinstance(call, Call) and call.method == "create_backup"
    assert call.kwargs["parent"] == "projects/p1/locations/us-east4" and call.kwargs["backup_id"] == f"cm-{ID}"
    assert call.kwargs["backup"]["sourceInstance"] == INSTANCE
    assert call.kwargs["backup"]["labels"]["scope-name"] == "k1"
    assert out.status is not None and out.status["state"] == "Creating"
    after = answered(out, OP)
    assert after.status is not None and after.status["opIdentifier"] == OP
    refused = refuse(out, call, "quota", status=403)
    assert refused is not None and refused.status is not None and refused.status["state"] == "Error"
    assert refused.requeue_after == 5.0


@pytest.mark.parametrize(("vol", "instance", "message"), [
    (None, None, "Error loading GcpNfsVolume"), (volume(False), INSTANCE, "GcpNfsVolume is not ready"),
    (volume(), None, "GcpNfsVolume is not ready")])  # a volume whose KCP mirror is not its own
def test_the_source_volume_must_be_ready_and_this_runtimes(vol: Any, instance: Any, message: str) -> None:
    out = bk.plan(seen(backup_obj({"id": ID, "location": "us-east4"}), volume=vol, instance=instance), NEW, t, NOW)
    assert not out.writes and out.status is not None
    assert out.status["conditions"][0]["message"] == message and out.requeue_after is None  # the next connect


def test_an_id_that_is_no_uuid_never_names_a_backup() -> None:
    out = bk.plan(seen(backup_obj({"id": "../x", "location": "us-east4"})), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["reason"] == "InvalidId" and not out.writes


def test_operation_running_failed_done() -> None:
    obj = backup_obj({"id": ID, "location": "us-east4", "opIdentifier": OP, "state": "Creating"})
    assert bk.plan(seen(obj, operation={"name": OP, "done": False}), NEW, t, NOW).requeue_after == 5.0
    out = bk.plan(seen(obj, operation={"name": OP, "done": True, "error": {"message": "x"}}), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Error"
    assert out.status["conditions"][0]["message"] == "Operation failed" and out.requeue_after is None
    b = filestore(obj)
    out = bk.plan(seen(obj, operation={"name": OP, "done": True}, backup=b), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Ready"
    assert out.status["conditions"][0]["message"] == f"Backup operation finished successfully: {OP}"
    assert out.status["capacity"] == "3Gi" and out.status["lastCapacityUpdate"] == NOW
    assert out.status["fileStoreBackupLabels"] == b["labels"]


def test_changed_accessible_from_patches_the_labels() -> None:
    obj = backup_obj({"id": ID, "location": "us-east4", "state": "Ready"}, accessibleFrom=["shoot-b"])
    b = filestore(backup_obj())
    out = bk.plan(seen(obj, backup=b), NEW, t, NOW)
    (call,) = out.writes
    assert isinstance(call, Call) and call.method == "update_backup_labels"
    assert call.kwargs["labels"]["cm-allow-shoot-b"] == fs.ACCESSIBLE_FROM_VALUE
    assert out.status is not None and out.status["accessibleFrom"] == "shoot-b"


def test_a_ready_backup_is_not_read_again_before_its_capacity_is_due() -> None:
    obj = backup_obj()
    labels = fs.labels_for(SCOPE, obj)
    done = backup_obj({"id": ID, "location": "us-east4", "state": "Ready", "accessibleFrom": "",
                       "lastCapacityUpdate": NOW, "fileStoreBackupLabels": labels, "conditions": ready()})
    assert not bk.needs_provider(done, SCOPE, "2026-01-01T00:30:00Z")
    assert bk.plan(seen(done), NEW, t, "2026-01-01T00:30:00Z") == bk.Outcome()
    assert bk.needs_provider(done, SCOPE, LATER)
    out = bk.plan(seen(done, backup=filestore(obj)), NEW, t, LATER)
    assert out.status == {"capacity": "3Gi", "lastCapacityUpdate": LATER}


def test_a_backup_that_is_not_this_objects_is_never_patched_or_deleted() -> None:
    obj = backup_obj({"id": ID, "location": "us-east4", "state": "Ready"})
    foreign = filestore(obj, **{"scope-name": "other"})
    out = bk.plan(seen(obj, backup=foreign), NEW, t, NOW)
    assert not out.writes and out.status is not None and out.status["conditions"][0]["reason"] == "NotOwned"
    gone = bk.plan(seen(backup_obj({"id": ID, "location": "us-east4"}, deleting=True), backup=foreign), NEW, t, NOW)
    assert not gone.writes and gone.remove_finalizer == names.FINALIZER


def test_deletion_deletes_the_backup_then_the_finalizer() -> None:
    obj = backup_obj({"id": ID, "location": "us-east4", "state": "Ready"}, deleting=True)
    out = bk.plan(seen(obj, backup=filestore(obj)), NEW, t, NOW)
    (call,) = out.writes
    assert isinstance(call, Call) and call.method == "delete_backup" and call.kwargs["name"] == BACKUP
    assert out.status is not None and out.status["state"] == "Deleting"
    waiting = backup_obj({"id": ID, "location": "us-east4", "state": "Deleting", "opIdentifier": OP}, deleting=True)
    assert bk.plan(seen(waiting, backup=filestore(obj, "DELETING"), operation={"done": False}), NEW, t,
                   NOW).requeue_after == 5.0
    assert bk.plan(seen(waiting, operation={"done": True}), NEW, t, NOW).remove_finalizer == names.FINALIZER


def test_an_errored_schedule_backup_with_a_newer_one_fails() -> None:
    obj = backup_obj({"id": ID, "state": "Error", "conditions": [condition("Error", True, "GCPError", "x", NOW)]},
                     labels={names.LABEL_SCHEDULE_NAME: "s1"})
    out = bk.plan(seen(obj, newer=True), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Failed"
    assert out.status["conditions"][0]["reason"] == "BackupFailed"
    assert out.status["conditions"][0]["message"].endswith("more recent backup(s) is available.")
    failed = backup_obj({"id": ID, "state": "Failed"})
    assert bk.plan(seen(failed), NEW, t, NOW) == bk.Outcome() and not bk.needs_provider(failed, SCOPE, NOW)


def test_quantity_is_binary_si() -> None:
    assert [bk.quantity(n) for n in (0, 1023, 1024, 3 * 2**30, 2**40 + 1)] == \
        ["0", "1023", "1Ki", "3Gi", str(2**40 + 1)]


# -- GcpNfsVolumeRestore ------------------------------------------------------------------------------

def restore_obj(status: dict[str, Any] | None = None, finalizer: bool = True, deleting: bool = False,
                **source: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r1", "namespace": "ns", "creationTimestamp": NOW}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"destination": {"volume": {"name": "v1"}},
                                       "source": source or {"backupUrl": f"us-east4/cm-{ID}"}},
            "status": status or {}}


SHARED = {"name": BACKUP, "state": "READY", "labels": {"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-b",
                                                       "cm-allow-shoot-a": fs.ACCESSIBLE_FROM_VALUE}}


def rseen(obj: dict[str, Any], **kw: Any) -> rs.Seen:
    kw.setdefault("volume", volume())
    kw.setdefault("instance", INSTANCE)
    kw.setdefault("file_share", "vol1")
    return rs.Seen(obj=obj, scope=SCOPE, retry=5.0, **kw)


def test_restore_takes_the_lease_then_restores() -> None:
    out = rs.plan(rseen(restore_obj(), backup=SHARED), NEW, t, NOW)
    lease, call = out.writes
    assert isinstance(lease, Action) and lease.verb == "create" and lease.object["metadata"]["name"] == "restore-v1"
    assert lease.object["spec"]["holderIdentity"] == "ns/r1"
    assert isinstance(call, Call) and call.method == "restore_instance"
    assert call.kwargs == {"name": INSTANCE, "file_share": "vol1", "source_backup": BACKUP}
    assert out.status is not None and out.status["state"] == "InProgress"
    assert answered(out, None, OP).status["opIdentifier"] == OP  # type: ignore[index]
    taken = refuse(out, lease, "exists", status=409)
    assert taken is not None and taken.requeue_after == 10.0


def test_one_restore_at_a_time_per_volume() -> None:
    other = {"metadata": {"name": "restore-v1", "resourceVersion": "7"},
             "spec": {"holderIdentity": "ns/r0", "renewTime": NOW, "leaseDurationSeconds": 600}}
    out = rs.plan(rseen(restore_obj(), backup=SHARED, lease=other), NEW, t, "2026-01-01T00:05:00Z")
    assert not out.writes and out.requeue_after == 10.0
    out = rs.plan(rseen(restore_obj(), backup=SHARED, lease=other), NEW, t, "2026-01-01T00:11:00Z")  # expired
    lease = out.writes[0]
    assert isinstance(lease, Action) and lease.verb == "patch" and lease.body is not None
    assert lease.body["spec"]["holderIdentity"] == "ns/r1" and lease.body["metadata"]["resourceVersion"] == "7"


def test_a_running_restore_is_found_again_after_a_restart() -> None:
    out = rs.plan(rseen(restore_obj({"state": "Processing"}), backup=SHARED, running={"name": OP}), NEW, t, NOW)
    assert out.status is not None and out.status["opIdentifier"] == OP
    assert not any(isinstance(w, Call) for w in out.writes)


@pytest.mark.parametrize(("backup", "message"), [
    ({**SHARED, "labels": {"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-b"}}, rs.NOT_ALLOWED),
    (None, rs.NOT_READABLE)])
def test_a_backup_of_another_shoot_needs_its_allow_label(backup: Any, message: str) -> None:
    out = rs.plan(rseen(restore_obj(), backup=backup), NEW, t, NOW)
    assert not out.writes and out.status is not None and out.status["state"] == "Failed"
    assert out.status["conditions"][0]["message"] == message


def test_restore_by_reference_needs_a_ready_backup_of_this_skr() -> None:
    ref: dict[str, Any] = {"backup": {"name": "b1", "namespace": "ns"}}
    out = rs.plan(rseen(restore_obj(**ref)), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["reason"] == "MissingNfsVolumeBackup"
    pending = backup_obj({"id": ID, "location": "us-east4"})
    out = rs.plan(rseen(restore_obj(**ref), source=pending), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["reason"] == "NfsVolumeBackupNotReady"
    done = backup_obj({"id": ID, "location": "us-east4", "conditions": ready()})
    mine = {**SHARED, "labels": {"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-a"}}
    out = rs.plan(rseen(restore_obj(**ref), source=done, backup=mine), NEW, t, NOW)
    assert out.writes[-1].kwargs["source_backup"] == BACKUP  # type: ignore[union-attr]


def test_restore_volume_errors_and_bad_url() -> None:
    out = rs.plan(rseen(restore_obj(), volume=None), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["reason"] == "MissingNfsVolume"
    out = rs.plan(rseen(restore_obj(), volume=volume(False)), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["reason"] == "NfsVolumeNotReady"
    out = rs.plan(rseen(restore_obj(backupUrl="a/b/c")), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["message"].startswith("Invalid SourceBackupUrl")


def test_restore_operation_done_or_failed_releases_the_lease() -> None:
    mine = {"metadata": {"name": "restore-v1"}, "spec": {"holderIdentity": "ns/r1"}}
    obj = restore_obj({"state": "InProgress", "opIdentifier": OP})
    assert rs.plan(rseen(obj, operation={"done": False}, lease=mine), NEW, t, NOW).requeue_after == 5.0
    out = rs.plan(rseen(obj, operation={"done": True}, lease=mine), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Done"
    assert [(w.verb, w.name) for w in out.writes] == [("delete", "restore-v1")]  # type: ignore[union-attr]
    out = rs.plan(rseen(obj, operation={"done": True, "error": {"message": "bad"}}, lease=mine), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Failed" and len(out.writes) == 1
    assert rs.plan(rseen(restore_obj({"state": "Done"})), NEW, t, NOW) == rs.Outcome()
    gone = rs.plan(rseen(restore_obj({"state": "Done"}, deleting=True), lease=mine), NEW, t, NOW)
    assert gone.remove_finalizer == names.FINALIZER and len(gone.writes) == 1
    others = {"metadata": {"name": "restore-v1"}, "spec": {"holderIdentity": "ns/r0"}}
    assert not rs.plan(rseen(restore_obj({"state": "Done"}, deleting=True), lease=others), NEW, t, NOW).writes


# -- GcpNfsVolumeBackupDiscovery ---------------------------------------------------------------------

def test_discovery_lists_the_shared_backups_once() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "d1"}, "status": {}}
    out = disc.plan(disc.Seen(obj, SCOPE), NEW, t, NOW)
    assert out.status == {"state": "Processing"}
    obj["status"] = {"state": "Processing"}
    unshared = {**SHARED, "name": "projects/p1/locations/eu/backups/x", "labels": {"managed-by": "cloud-manager"}}
    listed = [SHARED, unshared, {**SHARED, "name": "projects/p2/locations/us-east4/backups/y"}]
    out = disc.plan(disc.Seen(obj, SCOPE, backups=listed), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Done" and out.status["availableBackupsCount"] == 1
    assert out.status["availableBackupUris"] == [f"us-east4/cm-{ID}"]
    assert out.status["availableBackups"][0]["shootName"] == "shoot-b"
    failed = disc.plan(disc.Seen(obj, SCOPE, failure=Failure("refused", 403, "", "no", "no")), NEW, t, NOW)
    assert failed.status is not None and failed.status["state"] == "Error"
    assert disc.plan(disc.Seen({**obj, "status": {"state": "Done"}}, SCOPE), NEW, t, NOW) == disc.Outcome()


# -- GcpNfsVolume from a backup ----------------------------------------------------------------------

def test_volume_source_backup() -> None:
    vol = {"metadata": {"name": "v2", "namespace": "ns"}, "spec": {"sourceBackup": {"name": "b1", "namespace": "ns"}}}
    assert src.decide(vol, SCOPE, None, None).error == ("MissingNfsVolumeBackup", "Error loading GcpNfsVolumeBackup")
    pending = backup_obj({"id": ID, "location": "us-east4"})
    assert src.decide(vol, SCOPE, pending, None).error == ("NfsVolumeBackupNotReady", "GcpNfsVolumeBackup is not ready")
    done = backup_obj({"id": ID, "location": "us-east4", "conditions": ready()})
    mine = {**SHARED, "labels": {"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-a"}}
    assert src.decide(vol, SCOPE, done, mine).path == BACKUP
    by_url = {"metadata": {"name": "v2", "namespace": "ns"}, "spec": {"sourceBackupUrl": f"us-east4/cm-{ID}"}}
    foreign = {**SHARED, "labels": {"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-b"}}
    use = src.decide(by_url, SCOPE, None, foreign)
    assert use.state == "Failed" and use.error == ("Error", "Not allowed to restore from the specified backup")
    assert src.decide(by_url, SCOPE, None, SHARED).path == BACKUP


def test_volume_plan_puts_the_source_into_the_kcp_instance() -> None:
    from tasks.cloud.skr import nfsvolume_plan as nv
    from tasks.cloud.skr.defaultiprange_plan import IpRangeUse

    obj = {"metadata": {"name": "v2", "namespace": "ns", "finalizers": [names.FINALIZER]},
           "spec": {"tier": "BASIC_HDD", "capacityGb": 1024, "fileShareName": "vol1", "location": "us-east4-a",
                    "sourceBackupUrl": f"us-east4/cm-{ID}"}, "status": {}}
    use = IpRangeUse({"metadata": {"name": "default"}, "status": {"id": NEW, "state": "Ready", "conditions": ready()}})
    base = nv.Seen(kind="gcp", obj=obj, kcp=None, iprange=use, kyma="k1", kcp_namespace="kcp-system", scope=SCOPE)
    out = nv.plan(nv.Seen(**{**base.__dict__, "source": src.SourceUse(path=BACKUP)}), NEW, t, NOW)
    (create,) = [w for w in out.writes if isinstance(w, Action) and w.verb == "create"]
    assert create.object["spec"]["instance"]["gcp"]["sourceBackup"] == BACKUP
    refused = src.SourceUse(error=("Error", "Not allowed to restore from the specified backup"), state="Failed")
    out = nv.plan(nv.Seen(**{**base.__dict__, "source": refused}), NEW, t, NOW)
    assert out.status is not None and out.status["state"] == "Failed" and not out.writes


# -- declarations and render --------------------------------------------------------------------------

def test_declarations_and_quota() -> None:
    assert registry.get("gcpnfsvolumebackup").provider_nuke["gcp"].kind == "FilestoreBackup"
    assert registry.quota_default(names.quota_key(names.GCP_NFS_VOLUME_RESTORE)) is None  # as the original
    assert registry.quota_default(names.quota_key(names.GCP_NFS_VOLUME_BACKUP)) is None
    gcp = [res.kind for _, res in registry.skr_kinds("gcp")]
    assert gcp.index("GcpNfsVolume") < gcp.index("GcpNfsVolumeBackup") < gcp.index("GcpNfsVolumeRestore")
    assert "GcpNfsVolumeBackup" not in [res.kind for _, res in registry.skr_kinds("aws")]


def test_render_backup_and_restore() -> None:
    vol = {"kind": "GcpNfsVolume", "metadata": {"name": "v1", "namespace": "ns"},
           "spec": {"fileShareName": "vol1", "location": "us-east4-a"}}
    b = {**backup_obj(accessibleFrom=["shoot-b"]), "kind": "GcpNfsVolumeBackup"}
    (row,) = render_backups(SCOPE, [vol, b])
    assert row.state == "Ready" and "cm-allow-shoot-b" in row.plan[1]
    assert "projects/p1/locations/us-east4/backups/cm-<id>" in row.plan[0]
    r = {**restore_obj(), "kind": "GcpNfsVolumeRestore"}
    bad = {**restore_obj(backupUrl="x"), "kind": "GcpNfsVolumeRestore"}
    rows = render_restores(SCOPE, [vol, r, bad])
    assert [x.state for x in rows] == ["Ready", "Error"] and BACKUP in rows[0].plan[1]


def test_a_long_name_is_an_empty_label_and_the_backup_stays_its_own() -> None:
    long = "b" * 70
    obj = backup_obj({"id": ID, "location": "us-east4", "state": "Ready"})
    obj["metadata"]["name"] = long
    b = filestore(obj)
    assert b["labels"][fs.BACKUP_NAME_KEY] == ""
    out = bk.plan(seen(obj, backup=b), NEW, t, NOW)
    assert out.status is not None and out.status["conditions"][0]["type"] == "Ready" and not out.writes


# -- the CRDs' rules ----------------------------------------------------------------------------------

def _schema(plural: str) -> Any:
    import pathlib

    import yaml

    from kubedev.schema import Schema

    crds = pathlib.Path(names.__file__).parent / "crds" / "skr" / "gcp"
    path = crds / f"{plural}.cloud-resources.kyma-project.io.yaml"
    crd = yaml.safe_load(path.read_text())
    return Schema.compile(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize(("plural", "spec", "old", "error"), [
    ("gcpnfsvolumebackups", {"source": {"volume": {"name": "v"}}, "accessibleFrom": ["all", "x"]}, None,
     "The value 'all' cannot be combined with other values."),
    ("gcpnfsvolumebackups", {"source": {"volume": {"name": "v"}}, "location": "mars-1"}, None, "location"),
    ("gcpnfsvolumebackups", {"source": {"volume": {"name": "w"}}}, {"source": {"volume": {"name": "v"}}},
     "source is immutable."),
    ("gcpnfsvolumebackups", {"source": {"volume": {"name": "v"}}, "location": "us-east4"}, None, ""),
    ("gcpnfsvolumerestores", {"destination": {"volume": {"name": "v"}},
                              "source": {"backupUrl": "us-east4/b", "backup": {"name": "b", "namespace": "n"}}},
     None, "source"),
    ("gcpnfsvolumerestores", {"destination": {"volume": {"name": "v"}}, "source": {"backupUrl": "nourl"}}, None,
     "backupUrl"),
    ("gcpnfsvolumerestores", {"destination": {"volume": {"name": "v"}}, "source": {"backupUrl": "us-east4/b"}},
     None, "")])
def test_the_crds_rules(plural: str, spec: dict[str, Any], old: dict[str, Any] | None, error: str) -> None:
    errors = [str(e) for e in _schema(plural).validate({"spec": spec}, {"spec": old} if old else None)]
    assert (error in " ".join(errors)) if error else errors == [], errors
