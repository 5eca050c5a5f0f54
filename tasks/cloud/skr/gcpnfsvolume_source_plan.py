"""The backup a new GcpNfsVolume is created from (``spec.sourceBackup`` / ``spec.sourceBackupUrl``), decided
over what was read (pure).

As cloud-manager's ``pkg/skr/gcpnfsvolume`` ``populateBackupUrl``, ``loadBackup`` and
``checkRestorePermissions`` (run while the volume has no KCP NfsInstance): by reference, the
GcpNfsVolumeBackup of this SKR must exist (else Error ``MissingNfsVolumeBackup`` ``Error loading
GcpNfsVolumeBackup``) and be Ready (``NfsVolumeBackupNotReady`` ``GcpNfsVolumeBackup is not ready``); its
Filestore backup is ``cm-<its id>`` in its location in the Scope's project. By URL ``<location>/<backup>``
in the Scope's project (malformed: Error ``Error`` ``Invalid SourceBackupUrl format: ...``). Either way
the ownership rule (:func:`tasks.cloud.gcp.nfsbackup_plan.allowed`) holds, also for a reference (whose
status an SKR can write; the original checks only URLs): a backup that cannot be read is ``Failed``
``Failed to get backup details for permission check``, one neither this shoot's nor shared with it is
``Failed`` ``Not allowed to restore from the specified backup``. The KCP NfsInstance then gets
``instance.gcp.sourceBackup``, the backup's full name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from tasks.cloud import names
from tasks.cloud.gcp import nfsbackup_plan as fs

__all__ = ["SourceUse", "decide", "reference", "wanted"]

REASON_MISSING_BACKUP = "MissingNfsVolumeBackup"
REASON_BACKUP_NOT_READY = "NfsVolumeBackupNotReady"
STATE_FAILED = "Failed"


@dataclass(frozen=True)
class SourceUse:
    """The source backup's full name (``path``), or why there is none: ``error`` ``(reason, message)``,
    ``state`` (``Error``, or ``Failed`` when it will not change), ``retry`` (look again: the backup may
    appear or become Ready)."""

    path: str | None = None
    error: tuple[str, str] | None = None
    state: str = names.STATE_ERROR
    retry: bool = False


def wanted(obj: Mapping[str, Any]) -> bool:
    """Whether the volume names a source backup."""
    spec = obj.get("spec") or {}
    return bool((spec.get("sourceBackup") or {}).get("name") or spec.get("sourceBackupUrl"))


def reference(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``spec.sourceBackup`` (namespace: the volume's when unset), ``None``: none."""
    ref = (obj.get("spec") or {}).get("sourceBackup") or {}
    if not ref.get("name"):
        return None
    return str(ref.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""), str(ref["name"])


def path_of(obj: Mapping[str, Any], scope: Mapping[str, Any], source: Mapping[str, Any] | None
            ) -> SourceUse:
    """The backup's full name before the ownership rule (see the module doc)."""
    project = fs.project(scope)
    if reference(obj) is not None:
        if source is None:
            return SourceUse(error=(REASON_MISSING_BACKUP, "Error loading GcpNfsVolumeBackup"), retry=True)
        status = source.get("status") or {}
        path = fs.backup_path(project, str(status.get("location") or ""), fs.backup_id(str(status.get("id") or "")))
        if not cond.is_true(list(status.get("conditions") or []), names.COND_READY) or path is None \
                or not status.get("id"):
            return SourceUse(error=(REASON_BACKUP_NOT_READY, "GcpNfsVolumeBackup is not ready"), retry=True)
        return SourceUse(path=path)
    url = str((obj.get("spec") or {}).get("sourceBackupUrl") or "")
    path = fs.backup_url(project, url)
    if path is None:
        return SourceUse(error=(names.REASON_ERROR, "Invalid SourceBackupUrl format: " + fs.BACKUP_URL_MESSAGE % url))
    return SourceUse(path=path)


def decide(obj: Mapping[str, Any], scope: Mapping[str, Any], source: Mapping[str, Any] | None,
           backup: Mapping[str, Any] | None) -> SourceUse:
    """The source of the volume ``obj``: :func:`path_of`, then the ownership rule over ``backup`` (the
    Filestore backup read, ``None``: none or unreadable)."""
    use = path_of(obj, scope, source)
    if use.path is None:
        return use
    if backup is None:
        return SourceUse(error=(names.REASON_ERROR, "Failed to get backup details for permission check"),
                         state=STATE_FAILED)
    if not fs.allowed(backup, scope):
        return SourceUse(error=(names.REASON_ERROR, "Not allowed to restore from the specified backup"),
                         state=STATE_FAILED)
    return use
