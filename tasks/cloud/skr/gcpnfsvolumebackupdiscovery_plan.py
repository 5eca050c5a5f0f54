"""The SKR GcpNfsVolumeBackupDiscovery plan (cluster scoped): one turn's decision over what was read (pure).

As cloud-manager's ``pkg/skr/gcpnfsvolumebackupdiscovery``: a new discovery is ``Processing``; a
``Processing`` one lists the backups other shoots shared with this one (``ListBackups`` of every location of
the Scope's project with ``GetSharedBackupsFilter``: managed by Cloud Manager and labelled
``cm-allow-<shoot>`` or ``cm-allow-all``) into its status and is ``Done``: ``availableBackupsCount``,
``availableBackupUris`` (``<location>/<backup>``), ``availableBackups`` (uri, location, the shoot, backup
and volume names and namespaces of the backup's labels, its creation time), ``discoverySnapshotTime``,
the condition Ready ``Successfully discovered available Nfs Volume Backups from GCP``. Any other state is
left alone (a discovery is a one-shot job: a new one discovers again). A refused listing: transient -> back
after the retry wait; else ``Error`` ``Failed to load shared Nfs Volume Backups from GCP`` (not again).

Deliberate differences: only backups of the Scope's project that the API answered and whose labels say they
are shared with this shoot are shown (the filter is not what decides), at most
:data:`~tasks.cloud.gcp.nfsbackup_client.MAX_LISTED`, by name; the discovery has no finalizer (nothing at
the provider is its own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.step import StepBuilder

__all__ = ["KINDS", "Seen", "available", "plan"]

Timing = Callable[[float], float]
KINDS = {"gcp": names.GCP_NFS_VOLUME_BACKUP_DISCOVERY}
STATE_DONE = "Done"
READY_MESSAGE = "Successfully discovered available Nfs Volume Backups from GCP"
ERROR_MESSAGE = "Failed to load shared Nfs Volume Backups from GCP"


@dataclass(frozen=True)
class Seen:
    """What one turn read: the discovery, the Scope, the shared backups listed (``None``: not listed) or the
    refused listing, the GCP retry wait (seconds, unscaled), the SKR's discoveries and their quota."""

    obj: Mapping[str, Any]
    scope: Mapping[str, Any]
    backups: Sequence[Mapping[str, Any]] | None = None
    failure: Failure | None = None
    retry: float = 5.0
    everyone: Sequence[Mapping[str, Any]] = ()
    quota: int | None = None


def _shared(backup: Mapping[str, Any], scope: Mapping[str, Any]) -> bool:
    labels = backup.get("labels") or {}
    me = fs.shoot(scope)
    return (isinstance(labels, Mapping) and labels.get(fs.MANAGED_BY_KEY) == fs.MANAGED_BY and bool(me)
            and (labels.get(fs.allow_key(me)) == fs.ACCESSIBLE_FROM_VALUE
                 or labels.get(fs.allow_key("all")) == fs.ACCESSIBLE_FROM_VALUE)
            and str(backup.get("name") or "").startswith(f"projects/{fs.project(scope)}/locations/"))


def available(backups: Sequence[Mapping[str, Any]], scope: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``availableBackups`` entries of the shared ``backups`` (by name; see the module doc)."""
    out: list[dict[str, Any]] = []
    for backup in fs.by_name(b for b in backups if _shared(b, scope)):
        found = fs.uri_of(str(backup.get("name") or ""))
        if found is None:
            continue
        labels = backup.get("labels") or {}
        entry: dict[str, Any] = {"uri": found[0], "location": found[1]}
        for key, label in (("shootName", fs.SHOOT_NAME_KEY), ("backupName", fs.BACKUP_NAME_KEY),
                           ("backupNamespace", fs.BACKUP_NAMESPACE_KEY), ("volumeName", fs.VOLUME_NAME_KEY),
                           ("volumeNamespace", fs.VOLUME_NAMESPACE_KEY)):
            if labels.get(label):
                entry[key] = str(labels[label])
        if backup.get("createTime"):
            entry["creationTime"] = str(backup["createTime"])
        out.append(entry)
    return out


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the discovery (see the module doc)."""
    run = StepBuilder(seen.obj, now)
    state = str(run.status.get("state") or "")
    if run.deleting:
        return Outcome()
    if not state or cond.find(run.conditions, names.COND_QUOTA_EXCEEDED) is not None:
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return over
        run.set(state=names.STATE_PROCESSING)
        return run.step(requeue_after=t(0.1))
    if state != names.STATE_PROCESSING:
        return Outcome()
    if seen.failure is not None:
        if seen.failure.retryable:
            return run.step(requeue_after=t(seen.retry))
        run.without(names.COND_READY)
        return run.fail(names.REASON_ERROR, ERROR_MESSAGE, exclusive=False)
    if seen.backups is None:
        return run.step(requeue_after=t(seen.retry))
    entries = available(seen.backups, seen.scope)
    run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, STATE_DONE,
                  discoverySnapshotTime=now, availableBackupsCount=len(entries),
                  availableBackupUris=[e["uri"] for e in entries], availableBackups=entries)
    return run.step()
