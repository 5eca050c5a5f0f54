"""``reconcilery render gcpnfsvolumebackup`` / ``gcpnfsvolumerestore``: what the SKR loop would ask Filestore
for, offline (pure).

For each GcpNfsVolumeBackup with one Scope (and the GcpNfsVolume manifests given): the backup
``cm-<id>`` in ``spec.location`` or the Scope's region, of the volume's instance ``cm-<kcp id>`` and share,
with its labels (``managed-by``, ``scope-name``, the names, ``cm-allow-<shoot>`` per ``accessibleFrom``).
For each GcpNfsVolumeRestore (with the volumes and backups given): ``RestoreInstance`` of the destination's
instance and share from the backup it names (by reference: the backup's location and id; by
``backupUrl``: in the Scope's project), and the ownership rule it is subject to. Names not known offline
stay placeholders: ``<id>`` (the backup's id), ``<kcp id>`` (the volume's KCP NfsInstance), ``<location>``
(the volume's zone). A reference to a manifest not given is an Error row, as the controller's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.rendered import Rendered

__all__ = ["BACKUP", "RESTORE", "VOLUME", "RenderedBackup", "render_backups", "render_restores"]

PLACEHOLDER_ID = "<id>"
BACKUP, RESTORE = names.GCP_NFS_VOLUME_BACKUP.kind, names.GCP_NFS_VOLUME_RESTORE.kind
VOLUME = names.GCP_NFS_VOLUME.kind


@dataclass(frozen=True)
class RenderedBackup(Rendered):
    """One backup's or restore's outcome: ``state`` ``Ready`` (would be made) or ``Error``; ``plan`` one line
    per Filestore request."""

    plan: list[str] = field(default_factory=list)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any], default_ns: str = "default") -> tuple[str, str]:
    return str(_meta(obj).get("namespace") or default_ns), str(_meta(obj).get("name") or "")


def _index(docs: Sequence[Mapping[str, Any]], kind: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {_key(d): d for d in docs if d.get("kind") == kind}


def _instance(scope: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    where = str((volume.get("spec") or {}).get("location") or "") or "<location>"
    return f"projects/{fs.project(scope) or '<project>'}/locations/{where}/instances/cm-<kcp id>"


def render_backups(scope: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]) -> list[RenderedBackup]:
    """One row per GcpNfsVolumeBackup of ``docs`` (see the module doc)."""
    volumes = _index(docs, VOLUME)
    rows: list[RenderedBackup] = []
    for obj in (d for d in docs if d.get("kind") == BACKUP):
        namespace, name = _key(obj)
        ref = ((obj.get("spec") or {}).get("source") or {}).get("volume") or {}
        volume = volumes.get((str(ref.get("namespace") or namespace), str(ref.get("name") or "")))
        if volume is None:
            rows.append(RenderedBackup(name, BACKUP, names.STATE_ERROR, "Error loading GcpNfsVolume"))
            continue
        where = str((obj.get("spec") or {}).get("location") or "") or str((scope.get("spec") or {}).get("region") or "")
        labels = fs.labels_for(scope, {**obj, "metadata": {**_meta(obj), "namespace": namespace}})
        share = str((volume.get("spec") or {}).get("fileShareName") or "vol1")
        rows.append(RenderedBackup(name, BACKUP, names.STATE_READY, f"backup cm-{PLACEHOLDER_ID} in {where}", plan=[
            f"CreateBackup projects/{fs.project(scope) or '<project>'}/locations/{where}/backups/cm-{PLACEHOLDER_ID}"
            f" of {_instance(scope, volume)} share {share}",
            "labels " + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())),
            "on deletion: DeleteBackup of it"]))
    return rows


def render_restores(scope: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]) -> list[RenderedBackup]:
    """One row per GcpNfsVolumeRestore of ``docs`` (see the module doc)."""
    volumes, backups = _index(docs, VOLUME), _index(docs, BACKUP)
    rows: list[RenderedBackup] = []
    project, shoot = fs.project(scope) or "<project>", fs.shoot(scope) or "<shoot>"
    for obj in (d for d in docs if d.get("kind") == RESTORE):
        namespace, name = _key(obj)
        spec = obj.get("spec") or {}
        dst = (spec.get("destination") or {}).get("volume") or {}
        volume = volumes.get((str(dst.get("namespace") or namespace), str(dst.get("name") or "")))
        if volume is None:
            rows.append(RenderedBackup(name, RESTORE, names.STATE_ERROR, "Error loading GcpNfsVolume"))
            continue
        source = spec.get("source") or {}
        rule = f"allowed when the backup is {shoot}'s or carries {fs.allow_key(shoot)} / {fs.allow_key('all')}"
        if (source.get("backup") or {}).get("name"):
            ref = source["backup"]
            backup = backups.get((str(ref.get("namespace") or namespace), str(ref["name"])))
            if backup is None:
                rows.append(RenderedBackup(name, RESTORE, names.STATE_ERROR, "Error loading GcpNfsVolumeBackup"))
                continue
            where = str((backup.get("spec") or {}).get("location") or "") or \
                str((scope.get("spec") or {}).get("region") or "")
            path = f"projects/{project}/locations/{where}/backups/cm-{PLACEHOLDER_ID}"
        else:
            url = str(source.get("backupUrl") or "")
            found = fs.backup_url(project, url)
            if found is None:
                rows.append(RenderedBackup(name, RESTORE, names.STATE_ERROR,
                                           "Invalid SourceBackupUrl format: " + fs.BACKUP_URL_MESSAGE % url))
                continue
            path = found
        share = str((volume.get("spec") or {}).get("fileShareName") or "vol1")
        rows.append(RenderedBackup(name, RESTORE, names.STATE_READY, f"restore {path} into {dst.get('name')}", plan=[
            f"lease restore-{dst.get('name')} held by {namespace}/{name} (one restore at a time per volume)",
            f"RestoreInstance {_instance(scope, volume)} share {share} from {path} ({rule})"]))
    return rows
