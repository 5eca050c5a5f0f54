"""The SKR NFS volume plan (pkg/skr/awsnfsvolume, pkg/skr/gcpnfsvolume), table-driven from the notes:
id, ownership, PV/PVC owners, quota, IpRange, the KCP mirror, the status projection, PV/PVC, deletion (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.toolkit import Outcome
from tasks.cloud import names
from tasks.cloud.skr import nfsvolume_plan
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse
from tasks.cloud.skr.nfsvolume_plan import AWS, GCP, Seen, claim, location, persistent_volume
from tasks.cloud.validate import quota_exceeded
from tests.unit.cloud.outcomes import SkrWrites

NOW = "2026-01-01T00:00:00Z"
ID = "0b8e5f4e-3a51-4b7e-9a5b-2f1b6c1d9e70"
NEW = "6f1c1f0e-8c1d-4c52-a0f7-3b1fcb8f7a11"
IPR_ID = "3f0c1c1e-0000-4000-8000-000000000001"
READY_IPR = IpRangeUse({"metadata": {"name": "default"},
                        "status": {"id": IPR_ID, "conditions": [{"type": "Ready", "status": "True"}]}})
SCOPE = {"spec": {"region": "us-east4", "scope": {"gcp": {"workers": [{"zones": ["us-east4-a", "us-east4-b"]}]}}}}


def t(seconds: float) -> float:
    return seconds


def vol(kind: str = AWS, status: dict[str, Any] | None = None, finalizer: bool = True, deleting: bool = False,
        name: str = "data", spec: dict[str, Any] | None = None, created: str = NOW) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "creationTimestamp": created,
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    base = {"capacity": "100Gi"} if kind == AWS else {"tier": "BASIC_HDD", "capacityGb": 1024, "fileShareName": "vol1"}
    return {"metadata": meta, "spec": {**base, **(spec or {})}, "status": status or {}}


def kcp(name: str = ID, conditions: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None,
        remote: str = "data", deleting: bool = False, gcp: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {names.LABEL_KYMA_NAME: "k", names.LABEL_REMOTE_NAME: remote,
                                                     names.LABEL_REMOTE_NAMESPACE: "ns"}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    spec = {"instance": {"gcp": {"capacityGb": 1024, "location": "us-east4-a", **(gcp or {})}}}
    return {"metadata": meta, "spec": spec, "status": {"conditions": conditions or [], **(status or {})}}


def cond(type_: str, reason: str, message: str = "", status: str = "True") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def ours(kind: str = "pv", name: str = ID, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "labels": {names.LABEL_NFS_VOLUME_NAME: "data", names.LABEL_NFS_VOLUME_NAMESPACE: "ns"},
            "finalizers": [names.FINALIZER], **extra}
    return {"metadata": meta, "spec": {}}


def seen(obj: dict[str, Any], kind: str = AWS, **kw: Any) -> Seen:
    base: dict[str, Any] = {"kcp": None, "iprange": READY_IPR, "kyma": "k", "kcp_namespace": "kcp-system",
                            "everyone": [obj], "quota": 5, "scope": SCOPE}
    return Seen(kind=kind, obj=obj, **{**base, **kw})


class Planned(SkrWrites):
    """The plan's writes as the tests name them: the KCP NfsInstance's ``kcp_*``, the PV / PVC read
    (``pv_*`` / ``pvc_*``: ``_release`` and ``_delete`` whether it goes) and a stale PV (``stale_pv_*``: its
    name)."""

    def __init__(self, outcome: Outcome, seen: Seen) -> None:
        super().__init__(outcome, names.NFS_INSTANCE)
        self.kcp_create, self.kcp_patch, self.kcp_delete = self.create, self.patch, self.delete
        pv = str(((seen.pv or {}).get("metadata") or {}).get("name") or "")
        pvc = str(((seen.pvc or {}).get("metadata") or {}).get("name") or "")
        self.pv_create = self.one(self.created, "PersistentVolume")
        self.pvc_create = self.one(self.created, "PersistentVolumeClaim")
        self.pv_patch = self.one([body for name, body in self.patched.get("PersistentVolume", []) if name == pv], "")
        self.pvc_patch = self.one([body for name, body in self.patched.get("PersistentVolumeClaim", [])
                                   if name == pvc], "")
        pvs = self.released.get("PersistentVolume", [])
        self.pv_release = bool(pv) and pv in pvs
        self.pvc_release = bool(pvc) and pvc in self.released.get("PersistentVolumeClaim", [])
        self.stale_pv_release = self.one([n for n in pvs if n != pv], "")
        deleted = self.deleted.get("PersistentVolume", [])
        self.pv_delete = bool(pv) and pv in deleted
        self.pvc_delete = bool(pvc) and pvc in self.deleted.get("PersistentVolumeClaim", [])
        self.stale_pv_delete = self.one([n for n in deleted if n != pv], "")

    def one(self, found: Any, kind: str) -> Any:
        """The one item of ``found`` (a list, or ``found[kind]``; ``None``: none)."""
        return super().one({kind: found} if isinstance(found, list) else found, kind)

    @property
    def nothing_written(self) -> bool:
        """The plan makes no write (only its status, Event, finalizer and requeue)."""
        return self.step.writes == ()


def run(s: Seen) -> Planned:
    return Planned(nfsvolume_plan.plan(s, NEW, t, NOW), s)


def reasons(p: Planned) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (p.step.status or {}).get("conditions") or []]


# ---- id, ownership --------------------------------------------------------------------------------------


def test_aws_new_volume_gets_an_id_label_and_its_mirror_in_one_turn() -> None:
    p = run(seen(vol(finalizer=False)))
    assert p.label_id == NEW and p.step.add_finalizer == names.FINALIZER
    assert p.step.status is not None and p.step.status["id"] == NEW and p.step.status["state"] == "Creating"
    assert p.kcp_create is not None
    assert p.kcp_create["metadata"] == {"name": NEW, "namespace": "kcp-system", "labels": {
        names.LABEL_KYMA_NAME: "k", names.LABEL_REMOTE_NAME: "data", names.LABEL_REMOTE_NAMESPACE: "ns",
        names.LABEL_MODULE: "cloud-manager"}}
    assert p.kcp_create["spec"] == {"scope": {"name": "k"}, "remoteRef": {"namespace": "ns", "name": "data"},
                                    "ipRange": {"name": IPR_ID},
                                    "instance": {"aws": {"performanceMode": "generalPurpose",
                                                         "throughput": "bursting"}}}


@pytest.mark.parametrize("bad", ["..", ".", "x/y", "NOT-A-UUID", ID.upper()])
def test_an_id_that_is_not_a_uuid_touches_nothing(bad: str) -> None:
    p = run(seen(vol(status={"id": bad})))
    assert p.kcp_create is None and p.kcp_delete is None and p.pv_create is None
    assert reasons(p) == [("Error", "InvalidId", f"AwsNfsVolume id {bad!r} is not a UUID")]


def test_a_kcp_object_of_another_owner_is_never_touched() -> None:
    p = run(seen(vol(status={"id": ID}, deleting=True), kcp=kcp(remote="someone-else")))
    assert p.kcp_delete is None and p.step.remove_finalizer is None
    assert reasons(p)[0][1] == "NotOwned"


def test_gcp_finds_its_mirror_by_labels_and_takes_its_name() -> None:
    p = run(seen(vol(GCP), GCP, kcp=kcp(conditions=[cond("Ready", "Ready", "ok")],
                                        status={"hosts": ["10.0.0.2"], "capacityGb": 1024})))
    assert p.label_id is None and p.kcp_create is None
    assert p.step.status is not None and p.step.status["id"] == ID


def test_gcp_new_volume_is_named_by_a_fresh_uuid_with_its_location() -> None:
    p = run(seen(vol(GCP), GCP, zone_pick=1))
    assert p.kcp_create is not None and p.kcp_create["metadata"]["name"] == NEW
    assert p.kcp_create["spec"]["instance"] == {"gcp": {"location": "us-east4-b", "tier": "BASIC_HDD",
                                                        "fileShareName": "vol1", "capacityGb": 1024,
                                                        "connectMode": "PRIVATE_SERVICE_ACCESS"}}
    assert p.step.status == {"id": NEW, "location": "us-east4-b", "state": "Processing"}


def test_gcp_location_rules() -> None:
    assert location(vol(GCP, spec={"tier": "REGIONAL"}), SCOPE) == "us-east4"
    assert location(vol(GCP, spec={"location": "europe-west1-b"}), SCOPE) == "europe-west1-b"
    assert location(vol(GCP), {"spec": {"scope": {"gcp": {"workers": []}}}}) is None
    p = run(seen(vol(GCP), GCP, scope={"spec": {"scope": {"gcp": {}}}}))
    assert reasons(p) == [("Error", "NoWorkerZones", "Could not automatically select a zone")]


# ---- PV/PVC owners, quota, IpRange -------------------------------------------------------------------


def test_a_pv_of_another_owner_is_an_error() -> None:
    foreign = {"metadata": {"name": ID, "labels": {}}}
    p = run(seen(vol(status={"id": ID}), pv=foreign))
    assert reasons(p) == [("Error", "PVNameInvalid", f"Desired PV({ID}) already exists with different owner")]
    p = run(seen(vol(status={"id": ID}), pvc={"metadata": {"name": "data", "labels": {}}}))
    assert reasons(p) == [("Error", "PVCNameInvalid", "Desired PVC(ns/data) already exists with different owner")]


def test_a_foreign_pv_is_not_deleted_with_the_volume() -> None:
    foreign = {"metadata": {"name": ID, "labels": {}}}
    p = run(seen(vol(status={"id": ID}, deleting=True), pv=foreign, pvc=foreign))
    assert not p.pv_delete and not p.pvc_delete and p.step.remove_finalizer == names.FINALIZER


def test_quota_older_wins() -> None:
    vols = [vol(name=f"v{i}", created=f"2026-01-01T00:00:0{i}Z") for i in range(3)]
    p = run(seen(vols[2], everyone=vols, quota=2))
    assert reasons(p) == [("QuotaExceeded", "QuotaExceeded", "Maximum number of 2 resources exceeded")]
    assert p.kcp_create is None and p.step.status is not None and p.step.status["state"] == "Error"
    assert run(seen(vols[1], everyone=vols, quota=2)).kcp_create is not None


@given(st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["a", "b"])), min_size=1, max_size=8, unique=True),
       st.integers(0, 8))
def test_quota_admits_exactly_the_oldest(keys: list[tuple[int, str]], quota: int) -> None:
    vols = [{"metadata": {"name": f"v{n}", "namespace": ns, "creationTimestamp": f"2026-01-01T00:00:0{n}Z"}}
            for n, ns in keys]
    admitted = [v for v in vols if not quota_exceeded(v, vols, quota)]
    assert len(admitted) == min(quota, len(vols))
    assert quota_exceeded(vols[0], vols, None) is False


def test_iprange_missing_waiting_or_created() -> None:
    p = run(seen(vol(), iprange=IpRangeUse(None, missing="Specified IpRange x does not exist")))
    assert reasons(p) == [("Error", "IpRangeNotFound", "Specified IpRange x does not exist")]
    p = run(seen(vol(status={"id": ID}), iprange=IpRangeUse({"status": {}}, wait=True)))
    assert p.kcp_create is None and p.step.requeue_after == 10


# ---- projection, PV/PVC --------------------------------------------------------------------------------


def test_aws_kcp_error_is_copied_and_ready_removed() -> None:
    obj = vol(status={"id": ID, "state": "Ready", "conditions": [cond("Ready", "Ready")]})
    p = run(seen(obj, kcp=kcp(conditions=[cond("Error", "FailedCreatingFileSystem", "boom")])))
    assert reasons(p) == [("Error", "Error", "boom")] and p.step.status is not None
    assert p.step.status["state"] == "Error" and p.step.requeue_after is None and p.pv_create is None


def test_aws_ready_writes_server_and_creates_pv_and_pvc() -> None:
    obj = vol(status={"id": ID, "state": "Creating"}, spec={"volumeClaim": {"name": "claim", "labels": {"a": "b"}}})
    host = "fs-1.efs.eu-central-1.amazonaws.com"
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready", "NFS instance is ready")],
                              status={"hosts": [host], "capacity": "6Ki"})))
    assert p.step.status is not None
    assert p.step.status["server"] == host and p.step.status["capacity"] == "6Ki" and p.step.status["state"] == "Ready"
    assert reasons(p) == [("Ready", "Ready", "NFS instance is ready")]
    assert p.pv_create is not None and p.pvc_create is not None
    assert p.pv_create["metadata"]["name"] == ID and p.pv_create["metadata"]["finalizers"] == [names.FINALIZER]
    assert p.pv_create["spec"] == {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteMany"],
                                   "nfs": {"server": host, "path": "/", "readOnly": False}}
    assert p.pvc_create["metadata"]["name"] == "claim" and p.pvc_create["metadata"]["labels"]["a"] == "b"
    assert p.pvc_create["metadata"]["labels"][names.LABEL_NFS_VOLUME_CAPACITY] == "100Gi"
    assert p.pvc_create["spec"]["volumeName"] == ID and p.pvc_create["spec"]["storageClassName"] == ""


def test_gcp_not_ready_maps_the_kcp_state() -> None:
    for kcp_state, mine in (("Creating", "Creating"), ("Updating", "Updating"), ("Deleting", "Deleting"),
                            ("Whatever", "Processing")):
        p = run(seen(vol(GCP, status={"id": ID}), GCP, kcp=kcp(status={"state": kcp_state})))
        assert p.step.status is not None and p.step.status["state"] == mine and p.step.requeue_after


def test_gcp_ready_pv_path_is_the_file_share_and_protocol_mount_option() -> None:
    ready = kcp(conditions=[cond("Ready", "Ready", "Filestore instance provisioned in GCP.")],
                status={"hosts": ["10.251.0.2"], "capacityGb": 1024, "capacity": "1024Gi",
                        "stateData": {"gcpNfsProtocol": "NFS_V4_1"}})
    p = run(seen(vol(GCP, status={"id": ID}), GCP, kcp=ready))
    assert p.pv_create is not None
    assert p.pv_create["spec"]["nfs"] == {"server": "10.251.0.2", "path": "/vol1"}
    assert p.pv_create["spec"]["mountOptions"] == ["nfsvers=4.1"] and p.pv_create["spec"]["storageClassName"] == ""
    assert p.step.status is not None and p.step.status["protocol"] == "NFS_V4_1"


def test_gcp_capacity_change_is_written_to_the_mirror() -> None:
    obj = vol(GCP, status={"id": ID, "state": "Ready", "conditions": [cond("Ready", "Ready")]},
              spec={"capacityGb": 2048})
    p = run(seen(obj, GCP, kcp=kcp(conditions=[cond("Ready", "Ready")])))
    assert p.kcp_patch == {"spec": {"instance": {"gcp": {"capacityGb": 2048}}}}
    assert p.step.status is not None and p.step.status["state"] == "Processing" and reasons(p) == []


def test_capacity_and_labels_drift_is_patched_onto_pv_and_pvc() -> None:
    obj = vol(status={"id": ID, "state": "Ready", "server": "s", "conditions": [cond("Ready", "Ready")]},
              spec={"capacity": "200Gi"})
    pv = ours("pv")
    pv["metadata"]["labels"]["stale"] = "x"
    pv["spec"] = {"capacity": {"storage": "100Gi"}}
    pvc = ours("pvc", name="data")
    pvc["spec"] = {"resources": {"requests": {"storage": "100Gi"}}}
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv, pvc=pvc))
    assert p.pv_create is None and p.pvc_create is None
    assert p.pv_patch is not None and p.pv_patch["spec"] == {"capacity": {"storage": "200Gi"}}
    assert p.pv_patch["metadata"]["labels"]["stale"] is None
    assert p.pvc_patch is not None and "spec" not in p.pvc_patch  # a static claim is never resized
    assert p.pvc_patch["metadata"]["labels"][names.LABEL_NFS_VOLUME_CAPACITY] == "200Gi"


# ---- a Released PV (the original's sanitizeReleasedVolume) ---------------------------------------------

OLD_CLAIM = {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data", "uid": "old-claim-uid"}


def ready_pair(kind: str, phase: str, claim_ref: dict[str, Any] | None,
               spec: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Ready volume and the PV as the plan wrote it (no drift), in ``phase`` with ``claim_ref``."""
    status = {"id": ID, "state": "Ready", "server": "fs-1.efs", "hosts": ["10.0.0.2"],
              "conditions": [cond("Ready", "Ready")]}
    obj = vol(kind, status=status, spec=spec)
    pv = persistent_volume(kind, obj, ID)
    if claim_ref is not None:
        pv["spec"]["claimRef"] = claim_ref
    pv["status"] = {"phase": phase}
    return obj, pv


def test_a_released_pv_loses_its_claim_ref_so_the_recreated_pvc_binds() -> None:
    """The user deleted only the PVC: the PV is Released and still names the old claim's UID. The turn
    creates the PVC again and clears the claimRef, nothing else of the PV."""
    obj, pv = ready_pair(AWS, "Released", OLD_CLAIM)
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv))
    assert p.pv_patch == {"spec": {"claimRef": None}}
    assert p.pvc_create is not None and p.pvc_create["spec"]["volumeName"] == ID
    assert p.pv_create is None and p.pv_delete is False
    # the re-created PVC already there (the claimRef was not cleared yet): cleared all the same
    pvc = claim(AWS, obj, ID)
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv, pvc=pvc))
    assert p.pv_patch == {"spec": {"claimRef": None}} and p.pvc_create is None and p.pvc_patch is None


def test_a_released_gcp_pv_with_drift_gets_both_in_one_patch() -> None:
    obj, pv = ready_pair(GCP, "Released", OLD_CLAIM, spec={"capacityGb": 2048})
    ready = kcp(conditions=[cond("Ready", "Ready")], gcp={"capacityGb": 2048})
    pv["spec"]["capacity"] = {"storage": "1024Gi"}
    p = run(seen(obj, GCP, kcp=ready, pv=pv))
    assert p.pv_patch == {"spec": {"capacity": {"storage": "2048Gi"}, "claimRef": None}}


@pytest.mark.parametrize(("phase", "claim_ref"), [("Bound", OLD_CLAIM), ("Available", None), ("Released", None),
                                                  ("Pending", OLD_CLAIM)])
def test_a_pv_not_released_with_a_claim_ref_keeps_it(phase: str, claim_ref: dict[str, Any] | None) -> None:
    obj, pv = ready_pair(AWS, phase, claim_ref)
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv, pvc=claim(AWS, obj, ID)))
    assert p.pv_patch is None


@pytest.mark.parametrize("kind", [AWS, GCP])
def test_a_pvc_the_user_deleted_loses_cloud_managers_finalizer_and_comes_back(kind: str) -> None:
    """The original's removePersistenceVolumeClaimFinalizer runs while the volume lives: without it the deleted
    claim would stay Terminating and its PV Bound for ever (no sanitizing, no name change)."""
    obj, pv = ready_pair(kind, "Bound", OLD_CLAIM)
    ready = kcp(conditions=[cond("Ready", "Ready")], status={"hosts": ["10.0.0.2"]})
    deleted = claim(kind, obj, ID)
    deleted["metadata"].update(deletionTimestamp=NOW, labels={"stale": "x", **deleted["metadata"]["labels"]})
    p = run(seen(obj, kind, kcp=ready, pv=pv, pvc=deleted))
    assert p.pvc_release and p.pvc_patch is None and p.pvc_create is None and p.step.requeue_after == 1
    deleted["metadata"]["finalizers"] = ["kubernetes.io/pvc-protection"]  # a Pod still mounts it: wait
    p = run(seen(obj, kind, kcp=ready, pv=pv, pvc=deleted))
    assert not p.pvc_release and p.pvc_patch is None and p.step.requeue_after is None
    pv["status"] = {"phase": "Released"}  # gone: the claim again, the PV's claimRef cleared
    p = run(seen(obj, kind, kcp=ready, pv=pv))
    assert p.pvc_create is not None and p.pv_patch == {"spec": {"claimRef": None}}


def test_a_pv_the_user_deleted_loses_cloud_managers_finalizer_and_is_not_patched() -> None:
    obj, pv = ready_pair(GCP, "Bound", OLD_CLAIM, spec={"capacityGb": 2048})
    pv["metadata"]["deletionTimestamp"] = NOW
    ready = kcp(conditions=[cond("Ready", "Ready")], status={"hosts": ["10.0.0.2"]}, gcp={"capacityGb": 2048})
    p = run(seen(obj, GCP, kcp=ready, pv=pv, pvc=claim(GCP, obj, ID)))
    assert p.pv_release and p.pv_patch is None and p.pv_create is None and not p.pv_delete


def test_a_deleting_volume_does_not_sanitize_its_released_pv() -> None:
    obj, pv = ready_pair(AWS, "Released", OLD_CLAIM)
    obj["metadata"]["deletionTimestamp"] = NOW
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv))
    assert p.pv_delete and p.pv_patch is None


# ---- a renamed PV (the original's deletePVForNameChange, GCP) -------------------------------------------

NEW_PV = "new-pv"
HOST = "10.0.0.2"
NOT_READY = ("PV[{}] exists with state {}, and it cannot be replaced with a new name. Only PVs in Released or "
             "Available state can be replaced.")


def renamed(conditions: list[dict[str, Any]] | None = None, state: str = "Ready",
            deleting: bool = False) -> dict[str, Any]:
    """A Ready GcpNfsVolume whose ``spec.volume.name`` changed from the default (its id) to ``new-pv``."""
    status = {"id": ID, "state": state, "hosts": [HOST], "capacityGb": 1024, "location": "us-east4-a",
              "conditions": [cond("Ready", "Ready")] if conditions is None else conditions}
    return vol(GCP, status=status, spec={"volume": {"name": NEW_PV}}, deleting=deleting)


def old_pv(phase: str, name: str = ID, owner: str = "data", server: str = HOST, **meta: Any) -> dict[str, Any]:
    """The PV the plan wrote under the old name (``owner``'s labels, NFS server ``server``) in ``phase``."""
    pv = persistent_volume(GCP, vol(GCP, name=owner, status={"hosts": [server]}), name)
    pv["metadata"].update(meta)
    pv["status"] = {"phase": phase}
    return pv


def gcp_seen(obj: dict[str, Any], *labelled: dict[str, Any], **kw: Any) -> Seen:
    return seen(obj, GCP, kcp=kcp(conditions=[cond("Ready", "Ready")], status={"hosts": [HOST]}),
                labelled_pvs=list(labelled), **kw)


@pytest.mark.parametrize("phase", ["Released", "Available"])
def test_a_renamed_volume_deletes_its_released_or_available_pv_and_comes_back(phase: str) -> None:
    p = run(gcp_seen(renamed(), old_pv(phase)))
    assert p.stale_pv_delete == ID and p.pv_delete is False
    assert p.pv_create is None and p.pvc_create is None and p.pv_patch is None  # the new PV after the old one
    assert p.step.requeue_after == 3
    # Ready goes until the PV of the new name is there
    assert p.step.status == {"state": "Processing", "conditions": []}


@pytest.mark.parametrize("phase", ["Bound", "Pending", "Failed"])
def test_a_renamed_volume_whose_pv_is_still_claimed_is_an_error(phase: str) -> None:
    p = run(gcp_seen(renamed(), old_pv(phase)))
    assert p.stale_pv_delete is None and p.pv_create is None and p.pvc_create is None
    assert reasons(p) == [("Error", "PVNotReadyForNameChange", NOT_READY.format(ID, phase))]
    assert p.step.status is not None and p.step.status["state"] == "Error"
    assert p.step.requeue_after is None and p.step.event is not None


def test_the_name_change_error_clears_once_the_pv_is_released() -> None:
    stuck = renamed([cond("Error", "PVNotReadyForNameChange", NOT_READY.format(ID, "Bound"))], state="Error")
    again = run(gcp_seen(stuck, old_pv("Bound")))
    assert again.step.status is None and again.step.event is None  # unchanged: no status write, no Event
    p = run(gcp_seen(stuck, old_pv("Released")))
    assert p.stale_pv_delete == ID and p.step.status == {"state": "Processing", "conditions": []}
    # the next turns: the old PV held by the finalizer loses it, the new PV and its claim come, Ready again
    held = old_pv("Released", deletionTimestamp=NOW)
    p = run(gcp_seen(renamed([], state="Processing"), held))
    assert p.stale_pv_release == ID and p.stale_pv_delete is None
    assert p.pv_create is not None and p.pv_create["metadata"]["name"] == NEW_PV
    assert p.pvc_create is not None and p.pvc_create["spec"]["volumeName"] == NEW_PV
    assert p.step.status is not None and p.step.status["state"] == "Ready"


def test_another_error_is_not_cleared_by_the_name_change() -> None:
    other = renamed([cond("Error", "Error", "instance broke")], state="Error")
    p = run(gcp_seen(other, old_pv("Available")))
    assert p.stale_pv_delete == ID and p.step.status == {"state": "Processing"}  # its conditions unchanged


def test_a_stale_pv_deleted_without_cloud_managers_finalizer_is_left_to_kubernetes() -> None:
    p = run(gcp_seen(renamed(), old_pv("Released", deletionTimestamp=NOW, finalizers=[])))
    assert p.stale_pv_release is None and p.stale_pv_delete is None and p.pv_create is not None


@pytest.mark.parametrize(("kind", "pv"), [
    (GCP, old_pv("Released", owner="other")),  # another volume's labels
    (GCP, old_pv("Released", server="10.9.9.9")),  # our labels, another server (an AwsNfsVolume's of that name)
    (AWS, old_pv("Released")),  # AWS has no rename
])
def test_a_pv_that_is_not_this_volumes_is_never_replaced(kind: str, pv: dict[str, Any]) -> None:
    obj = renamed() if kind == GCP else vol(AWS, status={"id": ID, "state": "Ready", "server": "fs-1.efs",
                                                         "conditions": [cond("Ready", "Ready")]},
                                            spec={"volume": {"name": NEW_PV}})
    ready = kcp(conditions=[cond("Ready", "Ready")], status={"hosts": [HOST]})
    p = run(seen(obj, kind, kcp=ready, labelled_pvs=[pv]))
    assert p.stale_pv_delete is None and p.stale_pv_release is None and p.step.status is None  # still Ready
    assert p.pv_create is not None and p.pv_create["metadata"]["name"] == NEW_PV
    p = run(seen({**obj, "metadata": {**obj["metadata"], "deletionTimestamp": NOW}}, kind, kcp=ready,
                 labelled_pvs=[pv]))
    assert p.stale_pv_delete is None and p.kcp_delete == ID  # deleting: straight to the KCP object


def test_a_foreign_pv_of_the_new_name_stops_the_rename() -> None:
    taken = old_pv("Available", name=NEW_PV, owner="other")
    p = run(gcp_seen(renamed(), old_pv("Released"), pv=taken))
    assert p.stale_pv_delete is None and p.pv_patch is None
    assert reasons(p) == [("Error", "PVNameInvalid", f"Desired PV({NEW_PV}) already exists with different owner")]


def test_a_renamed_volume_being_deleted_deletes_its_old_pv_whatever_its_phase() -> None:
    """No name change while deleting (never the Error): the PVC, then the old PV, then the KCP object."""
    obj = renamed(deleting=True)
    bound = old_pv("Bound")
    p = run(gcp_seen(obj, bound, pvc=ours("pvc", name="data")))
    assert p.pvc_delete and p.stale_pv_delete is None and reasons(p)[-1][1] == "DeletingPersistentVolumeClaim"
    p = run(gcp_seen(obj, bound))
    assert p.stale_pv_delete == ID and p.pv_delete is False and p.kcp_delete is None
    assert ("Deleting", "DeletingPersistentVolume", f"Deleting PersistentVolume {ID}") in reasons(p)
    assert "PVNotReadyForNameChange" not in str(p.step)
    p = run(gcp_seen(obj, old_pv("Released", deletionTimestamp=NOW)))
    assert p.stale_pv_release == ID and p.kcp_delete is None and p.step.requeue_after
    p = run(gcp_seen(obj))
    assert p.kcp_delete == ID


# ---- deletion ------------------------------------------------------------------------------------------


def test_deletion_order_pvc_pv_kcp_finalizer() -> None:
    obj = vol(status={"id": ID, "state": "Ready"}, deleting=True)
    p = run(seen(obj, kcp=kcp(), pv=ours("pv"), pvc=ours("pvc", name="data")))
    assert p.pvc_delete and not p.pv_delete and p.kcp_delete is None
    assert reasons(p) == [("Deleting", "DeletingPersistentVolumeClaim", "Deleting PersistentVolumeClaim data")]
    p = run(seen(obj, kcp=kcp(), pv=ours("pv"), pvc=ours("pvc", name="data", deletionTimestamp=NOW)))
    assert p.pvc_release and not p.pv_delete and p.step.requeue_after
    p = run(seen(obj, kcp=kcp(), pv=ours("pv")))
    assert p.pv_delete and p.step.status is not None and p.step.status["state"] == "Deleting"
    p = run(seen(obj, kcp=kcp()))
    assert p.kcp_delete == ID and p.step.remove_finalizer is None
    p = run(seen(obj, kcp=kcp(deleting=True)))
    assert p.kcp_delete is None and p.step.requeue_after
    p = run(seen(obj))
    assert p.step.remove_finalizer == names.FINALIZER


def test_deleting_waits_for_a_pvc_or_pv_held_by_someone_elses_finalizer() -> None:
    """A Pod mounting the PVC: Kubernetes' pvc-protection holds its deletion (the original's
    ``waitPVCDeleted``). Only Cloud Manager's own finalizer is released; the volume waits, never goes on to
    the PV or the KCP object, and never drops its own finalizer while the PVC is there."""
    obj = vol(status={"id": ID, "state": "Ready"}, deleting=True)
    protection = "kubernetes.io/pvc-protection"
    both = ours("pvc", name="data", deletionTimestamp=NOW, finalizers=[protection, names.FINALIZER])
    p = run(seen(obj, kcp=kcp(), pv=ours("pv"), pvc=both))
    assert p.pvc_release and p.step.requeue_after
    foreign_only = ours("pvc", name="data", deletionTimestamp=NOW, finalizers=[protection])
    for _ in range(2):  # every later turn the same: wait, touch nothing
        p = run(seen(obj, kcp=kcp(), pv=ours("pv"), pvc=foreign_only))
        assert p.nothing_written and p.step.requeue_after and p.step.remove_finalizer is None
    pv_held = ours("pv", deletionTimestamp=NOW, finalizers=["kubernetes.io/pv-protection"])
    p = run(seen(obj, kcp=kcp(), pv=pv_held))
    assert p.nothing_written and p.step.requeue_after and p.step.remove_finalizer is None


def test_deleting_without_finalizer_does_nothing() -> None:
    p = run(seen(vol(finalizer=False, deleting=True)))
    assert p.nothing_written and p.step.status is None and p.step.remove_finalizer is None


def test_the_writes_come_in_the_order_the_flow_needs() -> None:
    """The id label before the KCP mirror; a Released PV's claimRef cleared before its claim is created again;
    a deleted claim only loses Cloud Manager's finalizer (the PV waits for it)."""
    p = run(seen(vol(finalizer=False)))
    assert [(w.verb, w.kind, w.cluster) for w in p.step.writes] == [  # type: ignore[union-attr]
        ("label", "AwsNfsVolume", ""), ("create", "NfsInstance", "kcp")]
    obj, pv = ready_pair(AWS, "Released", OLD_CLAIM)
    p = run(seen(obj, kcp=kcp(conditions=[cond("Ready", "Ready")]), pv=pv))
    assert [(w.verb, w.kind) for w in p.step.writes] == [  # type: ignore[union-attr]
        ("patch", "PersistentVolume"), ("create", "PersistentVolumeClaim")]
    gone = vol(status={"id": ID, "state": "Ready"}, deleting=True)
    p = run(seen(gone, kcp=kcp(), pv=ours("pv"), pvc=ours("pvc", name="data", deletionTimestamp=NOW)))
    assert [(w.verb, w.kind) for w in p.step.writes] == [  # type: ignore[union-attr]
        ("remove_finalizer", "PersistentVolumeClaim")]


@pytest.mark.parametrize("bad", ["..", "a/b", "UPPER", "x" * 254, "%2e"])
def test_an_invalid_pv_or_pvc_name_is_an_error_before_any_request(bad: str) -> None:
    p = run(seen(vol(status={"id": ID}, spec={"volume": {"name": bad}})))
    assert reasons(p) == [("Error", "PVNameInvalid", f"Desired PV name {bad!r} is not a valid object name")]
    assert p.pv_create is None and p.kcp_create is None
    p = run(seen(vol(status={"id": ID}, spec={"volumeClaim": {"name": bad}})))
    assert reasons(p)[0][1] == "PVCNameInvalid" and p.pvc_create is None
