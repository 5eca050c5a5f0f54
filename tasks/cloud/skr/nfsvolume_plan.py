"""The SKR NFS volume plan: AwsNfsVolume and GcpNfsVolume, one turn's decision over what was read (pure).

As cloud-manager's ``pkg/skr/awsnfsvolume`` and ``pkg/skr/gcpnfsvolume``. :func:`plan` takes a
:class:`Seen` (the volume, its KCP ``NfsInstance``, the IpRange it uses, its PersistentVolume and
PersistentVolumeClaim) and answers the volume's :class:`~kube.toolkit.Outcome`, whose writes are the id
label, the KCP writes (``cluster="kcp"``) and the PV/PVC writes, in that order (:func:`_outcome`). In the
original's order:

0. ownership before action (:mod:`tasks.cloud.ownership`): an id that is not a UUID is an Error
   ``InvalidId``; a KCP NfsInstance of that name without this volume's owner labels is ``NotOwned``;
1. the id. AWS: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id`` (state
   ``Processing``), the KCP object's name. GCP: the KCP object is found by its owner labels (the
   lexicographically first when several); a new one is named by a fresh UUID that ``status.id`` then
   carries;
2. ``validatePersistentVolume`` / ``...Claim``: a PV (PVC) of the wanted name that is not this volume's
   (labels ``nfsVolumeName`` / ``nfsVolumeNamespace``) is an Error ``PVNameInvalid`` ``Desired PV(<name>)
   already exists with different owner`` (``PVCNameInvalid`` ``Desired PVC(<ns>/<name>) ...``); such a
   PV/PVC is never changed or deleted;
3. the quota (default 5 per kind and SKR, older wins): ``QuotaExceeded`` ``Maximum number of <n>
   resources exceeded`` until the volume fits (checked only while it has no KCP object; the original
   has a GcpNfsVolume quota only when one is configured: 5 by default here, issue 27);
4. the IpRange (:mod:`tasks.cloud.skr.defaultiprange`): ``IpRangeNotFound``, the default created, or wait;
   ``NotOwned`` when its id names no KCP IpRange of its own (:func:`~.defaultiprange_plan.owned`, issue 27);
5. the finalizer; 6. the KCP NfsInstance created (§2.5 of the notes: scope, remoteRef, ``ipRange.name`` =
   the SKR IpRange's ``status.id``, ``instance.aws`` / ``instance.gcp``), state ``Creating`` (AWS) /
   ``Processing`` (GCP); GCP location: ``spec.location``, else the region (REGIONAL) or a zone of the
   first worker pool (none: Error ``NoWorkerZones`` ``Could not automatically select a zone``); GCP from a
   backup (``sourceBackup`` / ``sourceBackupUrl``): ``instance.gcp.sourceBackup``, or the source's Error
   (:mod:`tasks.cloud.skr.gcpnfsvolume_source_plan`);
7. GCP: a changed ``spec.capacityGb`` is written to the KCP object (Ready removed, ``Processing``);
   GCP, a renamed PV (the original's ``deletePVForNameChange``): this volume's PV of another name than the
   wanted one (:func:`stale_pvs`) that is not ``Released`` or ``Available`` is an Error
   ``PVNotReadyForNameChange``; one that is goes (Ready removed, ``Processing``, come back after 3 s), so
   the PV of the new name is created once it is gone;
8. the KCP status projected back (§3.6 of the notes); 9. once Ready: the PV (name ``spec.volume.name``
   or ``status.id``; NFS server AWS ``status.server`` path ``/``, GCP ``hosts[0]`` path
   ``/<fileShareName>``; RWX; capacity; labels and annotations of the spec plus the volume labels;
   Cloud Manager's finalizer) and the PVC (name ``spec.volumeClaim.name`` or the volume's, bound by
   ``volumeName``, ``storageClassName: ""``, RWX, request = capacity); later capacity changes are patched
   onto the PV, labels and annotations onto both (a static claim's request is never resized); a PV left
   ``Released`` by a deleted claim loses its ``spec.claimRef`` (the original's ``sanitizeReleasedVolume``),
   so the re-created PVC can bind to it instead of staying ``Pending`` (in the turn that creates the PVC,
   so without the original's 1 s requeue); a PV or PVC of the volume that someone deleted loses Cloud
   Manager's finalizer (from step 7 on, as the original's ``remove*Finalizer``) and is created again once
   it is gone;
10. deleting: the PVC (condition ``Deleting`` ``DeletingPersistentVolumeClaim``), waiting until it is
    gone (Kubernetes keeps it while a Pod uses it), the PV likewise (``DeletingPersistentVolume``, state
    ``Deleting``), then the KCP object, waiting until it is gone, then the finalizer. A GCP volume
    deletes a stale PV (a PV left under an old name) likewise, after the PV of the wanted name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import claim_id, foreign, owner_labels
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, blocked
from tasks.cloud.skr.gcpnfsvolume_source_plan import SourceUse
from tasks.cloud.step import StepBuilder

__all__ = ["AWS", "GCP", "KINDS", "Seen", "claim_name", "location", "mirror", "plan", "pv_name", "released",
           "stale_pvs"]

AWS = "aws"
GCP = "gcp"
REASON_PV_NAME_INVALID = "PVNameInvalid"
REASON_PVC_NAME_INVALID = "PVCNameInvalid"
REASON_PV_NOT_READY_FOR_NAME_CHANGE = "PVNotReadyForNameChange"
REPLACEABLE_PHASES = ("Released", "Available")
REASON_NO_WORKER_ZONES = "NoWorkerZones"
REASON_DELETING_PV = "DeletingPersistentVolume"
REASON_DELETING_PVC = "DeletingPersistentVolumeClaim"
COND_DELETING = "Deleting"
STATE_UPDATING = "Updating"
Timing = Callable[[float], float]
#: The SKR resource of each provider's volume.
KINDS = {AWS: names.AWS_NFS_VOLUME, GCP: names.GCP_NFS_VOLUME}


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        kind: :data:`AWS` or :data:`GCP`.
        obj: the volume.
        kcp: its KCP NfsInstance (AWS: named by the id; GCP: named by ``status.id``, else found by owner
            labels); ``None``: none, or an id that is not a UUID (never looked up).
        iprange: the IpRange it uses (:func:`tasks.cloud.skr.defaultiprange.resolve`).
        pv: the PersistentVolume of :func:`pv_name` (``None``: none); pvc: the claim of :func:`claim_name`.
        labelled_pvs: GCP: the PVs carrying this volume's ``nfsVolumeName`` / ``nfsVolumeNamespace`` labels
            (the original's ``loadPersistenceVolume`` reads by them); the plan trusts none of them by the
            read alone (:func:`stale_pvs`).
        everyone: the volumes of this kind in the SKR (the quota).
        kyma, kcp_namespace: the runtime and where its mirrors live.
        quota: volumes allowed (``None``: unlimited).
        scope: the runtime's KCP Scope (GCP: region, worker zones).
        zone_pick: which worker zone a GCP zonal instance gets (index modulo the zones; the original
            picks at random).
        source: GCP, a volume without a KCP object: the backup it is created from
            (:mod:`tasks.cloud.skr.gcpnfsvolume_source_plan`; ``None``: none).
    """

    kind: str
    obj: Mapping[str, Any]
    kcp: Mapping[str, Any] | None
    iprange: IpRangeUse
    kyma: str
    kcp_namespace: str
    pv: Mapping[str, Any] | None = None
    pvc: Mapping[str, Any] | None = None
    labelled_pvs: Sequence[Mapping[str, Any]] = ()
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None
    scope: Mapping[str, Any] = field(default_factory=dict)
    zone_pick: int = 0
    source: SourceUse | None = None


def _outcome(step: Outcome, seen: Seen, *, label_id: str | None = None, kcp_create: dict[str, Any] | None = None,
             kcp_patch: dict[str, Any] | None = None, kcp_delete: str | None = None,
             pv_create: dict[str, Any] | None = None, pv_patch: dict[str, Any] | None = None,
             pv_release: bool = False, pv_delete: bool = False, pvc_create: dict[str, Any] | None = None,
             pvc_patch: dict[str, Any] | None = None, pvc_release: bool = False, pvc_delete: bool = False,
             stale_pv_release: str | None = None, stale_pv_delete: str | None = None) -> Outcome:
    """``step`` with the turn's writes, in this order: ``label_id`` (the id label), the KCP object
    (``kcp_create`` / ``kcp_patch`` a merge patch of its spec / ``kcp_delete`` its name), the PV and PVC
    (``*_create``, ``*_patch`` merge patches of the ones read, ``*_release`` drop Cloud Manager's finalizer
    from the one read, ``*_delete``), then ``stale_pv_release`` / ``stale_pv_delete`` the same for the stale
    PV of that name (one of :attr:`Seen.labelled_pvs`). The step's finalizer is added before them all."""
    meta = _meta(seen.obj)
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    pv, pvc = seen.pv, seen.pvc
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", KINDS[seen.kind], name, namespace, body={names.LABEL_SKR_ID: label_id}))
    if kcp_create is not None:
        writes.append(Action.on("create", names.NFS_INSTANCE, kcp_create, cluster="kcp"))
    if kcp_patch is not None and seen.kcp is not None:
        writes.append(Action.named("patch", names.NFS_INSTANCE, str(_meta(seen.kcp)["name"]), seen.kcp_namespace,
                                   body=kcp_patch, cluster="kcp"))
    if kcp_delete is not None:
        writes.append(Action.named("delete", names.NFS_INSTANCE, kcp_delete, seen.kcp_namespace, cluster="kcp"))
    if pv_create is not None:
        writes.append(Action.on("create", resources.PERSISTENT_VOLUME, pv_create))
    if pv_patch is not None and pv is not None:
        writes.append(Action.named("patch", resources.PERSISTENT_VOLUME, str(_meta(pv)["name"]), body=pv_patch))
    if pvc_create is not None:
        writes.append(Action.on("create", resources.PERSISTENT_VOLUME_CLAIM, pvc_create))
    if pvc_patch is not None and pvc is not None:
        writes.append(Action.named("patch", resources.PERSISTENT_VOLUME_CLAIM, str(_meta(pvc)["name"]), namespace,
                                   body=pvc_patch))
    if pvc_release and pvc is not None:
        writes.append(Action.finalizer(False, resources.PERSISTENT_VOLUME_CLAIM, pvc, names.FINALIZER))
    if pvc_delete and pvc is not None:
        writes.append(Action.named("delete", resources.PERSISTENT_VOLUME_CLAIM, str(_meta(pvc)["name"]), namespace))
    if pv_release and pv is not None:
        writes.append(Action.finalizer(False, resources.PERSISTENT_VOLUME, pv, names.FINALIZER))
    if pv_delete and pv is not None:
        writes.append(Action.named("delete", resources.PERSISTENT_VOLUME, str(_meta(pv)["name"])))
    stale = {str(_meta(found).get("name")): found for found in seen.labelled_pvs}
    if stale_pv_release is not None and stale_pv_release in stale:
        writes.append(Action.finalizer(False, resources.PERSISTENT_VOLUME, stale[stale_pv_release], names.FINALIZER))
    if stale_pv_delete is not None and stale_pv_delete in stale:
        writes.append(Action.named("delete", resources.PERSISTENT_VOLUME, stale_pv_delete))
    return step.also(*writes)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def valid_name(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 subdomain (what a PV or PVC may be called)."""
    return len(name) <= 253 and bool(_DNS_SUBDOMAIN.match(name))


def invalid_names(obj: Mapping[str, Any], wanted_pv: str) -> tuple[str, str] | None:
    """``(reason, message)`` when the PV name ``wanted_pv`` or the volume's PVC name is not a valid object
    name (the volume's Error), else ``None``."""
    for reason, what, wanted in ((REASON_PV_NAME_INVALID, "PV", wanted_pv),
                                 (REASON_PVC_NAME_INVALID, "PVC", claim_name(obj))):
        if wanted and not valid_name(wanted):
            return reason, f"Desired {what} name {wanted!r} is not a valid object name"
    return None


def pv_name(obj: Mapping[str, Any]) -> str:
    """The PV's name: ``spec.volume.name``, else ``status.id`` (``""`` before the id)."""
    return str((_spec(obj).get("volume") or {}).get("name") or (obj.get("status") or {}).get("id") or "")


def claim_name(obj: Mapping[str, Any]) -> str:
    """The PVC's name: ``spec.volumeClaim.name``, else the volume's name."""
    return str((_spec(obj).get("volumeClaim") or {}).get("name") or _meta(obj).get("name") or "")


def capacity(kind: str, obj: Mapping[str, Any]) -> str:
    """The storage quantity of the PV/PVC: AWS ``spec.capacity``; GCP ``<spec.capacityGb>Gi``."""
    if kind == AWS:
        return str(_spec(obj).get("capacity") or "")
    return f"{int(_spec(obj).get('capacityGb') or 0)}Gi"


def _owned(local: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> bool:
    labels = _meta(local or {}).get("labels") or {}
    return labels.get(names.LABEL_NFS_VOLUME_NAME) == _meta(obj).get("name") and \
        labels.get(names.LABEL_NFS_VOLUME_NAMESPACE) == _meta(obj).get("namespace")


def _labels(obj: Mapping[str, Any], part: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    labels = {str(k): str(v) for k, v in ((_spec(obj).get(part) or {}).get("labels") or {}).items()}
    labels.update({names.LABEL_NFS_VOLUME_NAME: str(_meta(obj).get("name")),
                   names.LABEL_NFS_VOLUME_NAMESPACE: str(_meta(obj).get("namespace")),
                   names.LABEL_MANAGED: "true", **names.CLOUD_MANAGER_DEFAULT_LABELS, **(extra or {})})
    return labels


def _annotations(obj: Mapping[str, Any], part: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((_spec(obj).get(part) or {}).get("annotations") or {}).items()}


def _nfs_source(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    status = obj.get("status") or {}
    if kind == AWS:
        return {"server": str(status.get("server") or ""), "path": "/", "readOnly": False}
    hosts = list(status.get("hosts") or [])
    return {"server": str(hosts[0]) if hosts else "", "path": f"/{_spec(obj).get('fileShareName') or ''}"}


def persistent_volume(kind: str, obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The PV of the volume (``obj`` with the status of this turn)."""
    spec: dict[str, Any] = {"capacity": {"storage": capacity(kind, obj)}, "accessModes": ["ReadWriteMany"],
                            "nfs": _nfs_source(kind, obj)}
    if kind == GCP:
        spec["storageClassName"] = ""
        if (obj.get("status") or {}).get("protocol") == "NFS_V4_1":
            spec["mountOptions"] = ["nfsvers=4.1"]
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": _labels(obj, "volume"), "annotations": _annotations(obj, "volume"),
                         "finalizers": [names.FINALIZER]},
            "spec": spec}


def _claim_labels(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    extra = {names.LABEL_NFS_VOLUME_CAPACITY: capacity(kind, obj)} if kind == AWS else None
    return _labels(obj, "volumeClaim", extra)


def claim(kind: str, obj: Mapping[str, Any], volume_name: str) -> dict[str, Any]:
    """The PVC bound to the PV ``volume_name``."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim_name(obj), "namespace": str(_meta(obj).get("namespace") or ""),
                         "labels": _claim_labels(kind, obj), "annotations": _annotations(obj, "volumeClaim"),
                         "finalizers": [names.FINALIZER]},
            "spec": {"volumeName": volume_name, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                     "volumeMode": "Filesystem", "resources": {"requests": {"storage": capacity(kind, obj)}}}}


def location(obj: Mapping[str, Any], scope: Mapping[str, Any], zone_pick: int = 0) -> str | None:
    """The GCP instance's location: ``spec.location``; else the Scope's region for REGIONAL, else a zone
    of the first worker pool (``None``: no zone to pick)."""
    given = str(_spec(obj).get("location") or "")
    if given:
        return given
    spec = scope.get("spec") or {}
    if _spec(obj).get("tier") == "REGIONAL":
        return str(spec.get("region") or "") or None
    workers = ((spec.get("scope") or {}).get("gcp") or {}).get("workers") or []
    zones = [str(z) for z in (workers[0].get("zones") or [])] if workers else []
    return zones[zone_pick % len(zones)] if zones else None


def mirror(seen: Seen, kcp_name: str, iprange_id: str, where: str = "") -> dict[str, Any]:
    """The KCP NfsInstance of the volume (§2.5 of the notes)."""
    obj = seen.obj
    name, namespace = str(_meta(obj)["name"]), str(_meta(obj).get("namespace") or "")
    spec = _spec(obj)
    if seen.kind == AWS:
        instance: dict[str, Any] = {"aws": {"performanceMode": str(spec.get("performanceMode") or "generalPurpose"),
                                            "throughput": str(spec.get("throughput") or "bursting")}}
    else:
        instance = {"gcp": {"location": where, "tier": str(spec.get("tier") or "BASIC_HDD"),
                            "fileShareName": str(spec.get("fileShareName") or "vol1"),
                            "capacityGb": int(spec.get("capacityGb") or 2560),
                            "connectMode": "PRIVATE_SERVICE_ACCESS"}}
        if seen.source is not None and seen.source.path:
            instance["gcp"]["sourceBackup"] = seen.source.path
    return {"apiVersion": names.NFS_INSTANCE.api_version, "kind": names.NFS_INSTANCE.kind,
            "metadata": {"name": kcp_name, "namespace": seen.kcp_namespace,
                         "labels": {**owner_labels(seen.kyma, name, namespace),
                                    names.LABEL_MODULE: names.MODULE_LABEL_VALUE}},
            "spec": {"scope": {"name": seen.kyma}, "remoteRef": {"namespace": namespace, "name": name},
                     "ipRange": {"name": iprange_id}, "instance": instance}}


def _kcp_conditions(kcp: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(c) for c in (kcp.get("status") or {}).get("conditions") or []]


def _project(seen: Seen, run: StepBuilder, kcp: Mapping[str, Any], t: Timing) -> Outcome | None:
    """§3.6: the KCP status onto the volume. A Outcome to stop with, or ``None`` to go on (Ready)."""
    kcp_status = kcp.get("status") or {}
    kcp_conds = _kcp_conditions(kcp)
    error = cond.find(kcp_conds, names.COND_ERROR)
    ready = cond.find(kcp_conds, names.COND_READY)
    mine = run.conditions
    if seen.kind == AWS:
        size = kcp_status.get("capacity")
        if size is not None and str(size) != str(run.status.get("capacity")):
            run.set(capacity=size)
    else:
        gcp = ((_spec(kcp).get("instance") or {}).get("gcp")) or {}
        copied = {"capacityGb": kcp_status.get("capacityGb"), "capacity": kcp_status.get("capacity"),
                  "hosts": kcp_status.get("hosts"), "location": gcp.get("location"),
                  "protocol": (kcp_status.get("stateData") or {}).get("gcpNfsProtocol")}
        run.set(**{k: v for k, v in copied.items() if v not in (None, "", [])})
    if error is not None and error.get("status") == "True":
        if cond.find(mine, names.COND_ERROR) is None:
            run.set(conditions=cond.set_condition(cond.remove(mine, names.COND_READY), cond.condition(
                names.COND_ERROR, True, names.REASON_ERROR, str(error.get("message") or ""), run.now)),
                state=names.STATE_ERROR)
        return run.step()
    if ready is not None and ready.get("status") == "True":
        if cond.find(mine, names.COND_READY) is None:
            if seen.kind == AWS and kcp_status.get("hosts"):
                run.set(server=str(kcp_status["hosts"][0]))
            run.set(conditions=cond.set_condition(cond.remove(mine, names.COND_ERROR), cond.condition(
                names.COND_READY, True, names.REASON_READY, str(ready.get("message") or ""), run.now)),
                state=names.STATE_READY)
        return None
    if seen.kind == GCP:
        state = str(kcp_status.get("state") or "")
        run.set(state={"Creating": "Creating", "Updating": STATE_UPDATING, "Deleting": "Deleting"}.get(
            state, names.STATE_PROCESSING))
    return run.step(requeue_after=t(1))


def _with_status(obj: Mapping[str, Any], run: StepBuilder) -> dict[str, Any]:
    status = dict(obj.get("status") or {})
    status.update({k: v for k, v in run.changes.items() if v is not None})
    return {**obj, "status": status}


def released(pv: Mapping[str, Any]) -> bool:
    """Whether the PV is ``Released`` with a ``spec.claimRef`` left behind (its claim was deleted; the
    claimRef still names the old claim's UID, so no new claim can bind until it is cleared). As the
    original's ``sanitizeReleasedVolume`` (``pkg/skr/awsnfsvolume``, ``pkg/skr/gcpnfsvolume``), which
    clears it on every turn of a volume not being deleted."""
    return (pv.get("status") or {}).get("phase") == "Released" and bool((pv.get("spec") or {}).get("claimRef"))


def stale_pvs(seen: Seen, wanted: str) -> list[Mapping[str, Any]]:
    """GCP: this volume's PVs named other than ``wanted`` (left by a changed ``spec.volume.name``), by name.

    One of :attr:`Seen.labelled_pvs` counts only when it carries this volume's labels (the PV ownership
    rule, as ``PVNameInvalid``) and its NFS server is one of the volume's ``status.hosts`` (it serves this
    volume's instance: the labels alone do not tell an AwsNfsVolume's PV of the same name and namespace
    apart). Any other PV is never touched. AWS: none (the original has no rename)."""
    if seen.kind != GCP:
        return []
    hosts = {str(h) for h in (seen.obj.get("status") or {}).get("hosts") or []}
    found = [pv for pv in seen.labelled_pvs
             if str(_meta(pv).get("name") or "") not in ("", wanted) and _owned(pv, seen.obj)
             and str(((pv.get("spec") or {}).get("nfs") or {}).get("server") or "") in hosts]
    return sorted(found, key=lambda pv: str(_meta(pv).get("name")))


def _terminating(local: Mapping[str, Any]) -> bool:
    return deleting(local)


def _let_go(seen: Seen) -> dict[str, Any]:
    """The original's ``removePersistenceVolumeFinalizer`` / ``...ClaimFinalizer`` while the volume lives:
    this volume's PV or PVC that someone deleted loses Cloud Manager's finalizer, so it can go (a deleted
    claim leaves its PV ``Released``, which a name change needs); the writes (``pv_release`` /
    ``pvc_release``)."""
    out: dict[str, Any] = {}
    for key, local in (("pv_release", seen.pv), ("pvc_release", seen.pvc)):
        if local is not None and _owned(local, seen.obj) and _terminating(local) \
                and has_finalizer(local, names.FINALIZER):
            out[key] = True
    return out


def _rename(seen: Seen, run: StepBuilder, wanted: str, t: Timing) -> tuple[Outcome | None, dict[str, Any]]:
    """The original's ``deletePVForNameChange`` (GCP, the volume not being deleted): the stale PV of a
    renamed volume. Answers ``(a Outcome to stop with or None to go on, the writes)``: a stale PV being deleted
    loses Cloud Manager's finalizer (the flow goes on); one not ``Released`` / ``Available`` (still bound to
    a claim) is an Error ``PVNotReadyForNameChange`` (no requeue: the next connect looks again); else it is
    deleted, Ready and that Error go, state ``Processing``, back after 3 s."""
    stale = stale_pvs(seen, wanted)
    if not stale:
        return None, {}
    old = stale[0]
    old_name = str(_meta(old)["name"])
    if _terminating(old):
        held = has_finalizer(old, names.FINALIZER)
        return None, {"stale_pv_release": old_name} if held else {}
    phase = str((old.get("status") or {}).get("phase") or "")
    if phase not in REPLACEABLE_PHASES:
        return run.fail(REASON_PV_NOT_READY_FOR_NAME_CHANGE,
                        f"PV[{old_name}] exists with state {phase}, and it cannot be replaced with a new name. "
                        "Only PVs in Released or Available state can be replaced."), {}
    error = cond.find(run.conditions, names.COND_ERROR)
    if error is not None and error.get("reason") == REASON_PV_NOT_READY_FOR_NAME_CHANGE:
        run.without(names.COND_ERROR)
    run.without(names.COND_READY).set(state=names.STATE_PROCESSING)  # Ready again with the new PV
    return run.step(requeue_after=t(3)), {"stale_pv_delete": old_name}


def _drift(current: Mapping[str, Any], desired: Mapping[str, Any],
           capacity_path: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """A merge patch bringing ``current`` (PV/PVC) to ``desired``'s labels, annotations (superset) and
    capacity (at ``capacity_path``; none for a PVC: Kubernetes resizes only dynamically provisioned claims,
    and the original changes only its labels and annotations)."""
    patch: dict[str, Any] = {}
    meta, want = _meta(current), _meta(desired)
    if dict(meta.get("labels") or {}) != want.get("labels"):
        stale = {k: None for k in (meta.get("labels") or {}) if k not in want["labels"]}
        patch.setdefault("metadata", {})["labels"] = {**stale, **want["labels"]}
    have = meta.get("annotations") or {}
    if any(have.get(k) != v for k, v in (want.get("annotations") or {}).items()):
        patch.setdefault("metadata", {})["annotations"] = dict(want["annotations"])

    def at(obj: Mapping[str, Any]) -> Any:
        for key in capacity_path:
            obj = (obj or {}).get(key) or {}
        return obj or None

    if capacity_path and at(current) != at(desired):
        node: dict[str, Any] = patch
        for key in capacity_path[:-1]:
            node = node.setdefault(key, {})
        node[capacity_path[-1]] = at(desired)
    return patch or None


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the NFS volume (see the module doc). ``new_id``: the UUID a new id / KCP object gets;
    ``t``: scales seconds; ``now``: RFC 3339 for conditions."""
    obj, kind = seen.obj, seen.kind
    run = StepBuilder(obj, now)
    meta = _meta(obj)
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    finalized = has_finalizer(obj, names.FINALIZER)
    ident = str(run.status.get("id") or "")
    label_id: str | None = None
    if run.deleting and not finalized:
        return Outcome()
    kcp = seen.kcp
    if kind == AWS or ident:  # 0, 1
        ident, label_id, refused = claim_id(run, new_id, f"{kind.capitalize()}NfsVolume",
                                            foreign(kcp, seen.kyma, name, namespace))
        if refused is not None:
            return refused
    elif kcp is not None:  # GCP: found by its owner labels
        ident = str(_meta(kcp).get("name") or "")
        run.set(id=ident)

    def stop(step: Outcome, **writes: Any) -> Outcome:
        return _outcome(step, seen, label_id=label_id, **writes)

    if run.deleting:  # 10
        return _delete(seen, run, label_id, t)
    wanted_pv = str((_spec(obj).get("volume") or {}).get("name") or ident)
    invalid = invalid_names(obj, wanted_pv)
    if invalid:  # never a request path from an untrusted name
        return stop(run.fail(*invalid))
    if seen.pv is not None and not _owned(seen.pv, obj):  # 2
        run.without(names.COND_READY)
        return stop(run.fail(REASON_PV_NAME_INVALID, f"Desired PV({wanted_pv}) already exists with different owner"))
    if seen.pvc is not None and not _owned(seen.pvc, obj):
        run.without(names.COND_READY)
        return stop(run.fail(REASON_PVC_NAME_INVALID,
                             f"Desired PVC({namespace}/{claim_name(obj)}) already exists with different owner"))
    if kcp is None:  # 3
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return stop(over)
    use = seen.iprange  # 4
    waiting = blocked(use, run, t)
    if waiting is not None:
        return stop(waiting)
    add = None if finalized else names.FINALIZER  # 5
    if kcp is None:  # 6
        kcp_name = ident or new_id
        where = ""
        if kind == GCP and seen.source is not None and seen.source.error is not None:  # from a backup
            return stop(run.fail(*seen.source.error, state=seen.source.state))  # again at the next connect
        if kind == GCP:
            found = location(obj, seen.scope, seen.zone_pick)
            if found is None:
                return stop(run.fail(REASON_NO_WORKER_ZONES, "Could not automatically select a zone"))
            where = found
            run.set(id=kcp_name, location=where)
        run.set(state=names.STATE_CREATING if kind == AWS else names.STATE_PROCESSING)
        return stop(run.step(add_finalizer=add, requeue_after=t(0.2)),
                    kcp_create=mirror(seen, kcp_name, use.kcp_name, where))
    kcp_patch = None
    if kind == GCP:  # 7
        gcp = (_spec(kcp).get("instance") or {}).get("gcp") or {}
        want = int(_spec(obj).get("capacityGb") or 0)
        if want and int(gcp.get("capacityGb") or 0) != want:
            run.without(names.COND_READY).set(state=names.STATE_PROCESSING)
            return stop(run.step(add_finalizer=add, requeue_after=t(1)),
                        kcp_patch={"spec": {"instance": {"gcp": {"capacityGb": want}}}})
    renamed, stale = _rename(seen, run, wanted_pv, t)  # 7, GCP
    stale = {**_let_go(seen), **stale}
    if renamed is not None:
        return stop(replace(renamed, add_finalizer=add), **stale)
    waiting = _project(seen, run, kcp, t)  # 8
    if waiting is not None:
        return stop(Outcome(status=waiting.status, event=waiting.event, add_finalizer=add,
                         requeue_after=waiting.requeue_after), **stale)
    current = _with_status(obj, run)  # 9
    volume_name = wanted_pv or ident
    pv_new = persistent_volume(kind, current, volume_name)
    pvc_new = claim(kind, current, volume_name)
    writes: dict[str, Any] = {"kcp_patch": kcp_patch, **stale}
    if seen.pv is None:
        if not pv_new["spec"]["nfs"]["server"]:
            return stop(run.step(add_finalizer=add, requeue_after=t(1)), **stale)
        writes["pv_create"] = pv_new
    elif not _terminating(seen.pv):  # one being deleted is created again once it is gone
        writes["pv_patch"] = _drift(seen.pv, pv_new, ("spec", "capacity", "storage"))
        if released(seen.pv):
            patch = dict(writes["pv_patch"] or {})
            patch["spec"] = {**(patch.get("spec") or {}), "claimRef": None}
            writes["pv_patch"] = patch
    if seen.pvc is None:
        writes["pvc_create"] = pvc_new
    elif not _terminating(seen.pvc):
        writes["pvc_patch"] = _drift(seen.pvc, pvc_new)
    again = t(1) if stale.get("pv_release") or stale.get("pvc_release") else None  # to create it again
    return stop(run.step(add_finalizer=add, requeue_after=again), **writes)


def _delete(seen: Seen, run: StepBuilder, label_id: str | None, t: Timing) -> Outcome:
    obj = seen.obj
    pvc = seen.pvc if seen.pvc is not None and _owned(seen.pvc, obj) else None
    pv = seen.pv if seen.pv is not None and _owned(seen.pv, obj) else None
    if pvc is not None:
        if deleting(pvc):
            return _outcome(run.step(requeue_after=t(0.2)), seen, label_id=label_id,
                            pvc_release=has_finalizer(pvc, names.FINALIZER))
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_DELETING, True, REASON_DELETING_PVC, f"Deleting PersistentVolumeClaim {_meta(pvc).get('name')}",
            run.now)))
        return _outcome(run.step(requeue_after=t(0.2)), seen, label_id=label_id, pvc_delete=True)
    stale = False
    if pv is None:  # GCP: a PV left under an old name goes too (the original deletes the PV found by labels)
        left = stale_pvs(seen, pv_name(obj))
        pv, stale = (left[0], True) if left else (None, False)
    if pv is not None:
        pv_name_ = str(_meta(pv).get("name"))
        if deleting(pv):
            held = has_finalizer(pv, names.FINALIZER)
            release: dict[str, Any] = ({"stale_pv_release": pv_name_ if held else None} if stale
                                       else {"pv_release": held})
            return _outcome(run.step(requeue_after=t(0.2)), seen, label_id=label_id, **release)
        run.set(state=names.STATE_DELETING, conditions=cond.set_condition(run.conditions, cond.condition(
            COND_DELETING, True, REASON_DELETING_PV, f"Deleting PersistentVolume {pv_name_}", run.now)))
        delete: dict[str, Any] = {"stale_pv_delete": pv_name_} if stale else {"pv_delete": True}
        return _outcome(run.step(requeue_after=t(0.2)), seen, label_id=label_id, **delete)
    kcp = seen.kcp
    if kcp is not None:
        run.set(state=names.STATE_DELETING)
        return _outcome(run.step(requeue_after=t(1)), seen, label_id=label_id,
                        kcp_delete=None if deleting(kcp) else str(_meta(kcp).get("name")))
    return _outcome(run.step(remove_finalizer=names.FINALIZER), seen, label_id=label_id)
