"""``reconcilery render awsnfsvolumebackup`` / ``awsnfsvolumerestore``: what the SKR reconcilers would ask of AWS Backup
for AwsNfsVolumeBackups and AwsNfsVolumeRestores, offline (pure).

Each object is run through its real plan (:func:`tasks.cloud.aws.nfsbackup_plan.plan`,
:func:`tasks.cloud.aws.nfsrestore_plan.plan`) as it would be once its dependencies are in place: a volume
given among the manifests is taken as Ready with its file system (``<fsId>``), a backup given as Ready with its
recovery point (``<recoveryPointId>``), the vault as existing. A volume or backup that is not given is the
plan's Error (``MissingNfsVolume`` / ``MissingNfsVolumeBackup``), as the SKR would answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.toolkit.actions import Call
from kube.toolkit.conditions import condition
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws import nfsbackup_plan as bp
from tasks.cloud.aws import nfsrestore_plan as rp
from tasks.cloud.rendered import Rendered

__all__ = ["RENDERED_BACKUPS", "RENDERED_RESTORES", "RenderedJob", "render_backups", "render_restores"]

#: The manifests each command takes.
RENDERED_BACKUPS = (names.AWS_NFS_VOLUME_BACKUP.kind, names.AWS_NFS_VOLUME.kind)
RENDERED_RESTORES = (names.AWS_NFS_VOLUME_RESTORE.kind, names.AWS_NFS_VOLUME_BACKUP.kind, names.AWS_NFS_VOLUME.kind)

_NOW = "1970-01-01T00:00:00Z"
_TOKEN = "token-placeholder"
_FS = "fsid-placeholder"
_POINT = "rpid-placeholder"
_PLACEHOLDERS = {_FS: "<fsId>", _POINT: "<recoveryPointId>", _TOKEN: "<idempotencyToken>"}


@dataclass(frozen=True)
class RenderedJob(Rendered):
    """One backup's or restore's outcome: ``state`` ``Ready`` (its job would start) or ``Error``; ``plan``
    one line per AWS Backup call."""

    plan: list[str] = field(default_factory=list)


def _where(scope: Mapping[str, Any]) -> bp.Where:
    spec = scope.get("spec") or {}
    return bp.Where(scope=str((scope.get("metadata") or {}).get("name") or "<scope>"),
                    region=str(spec.get("region") or "<region>"),
                    account=str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "<account>"),
                    shoot=str(spec.get("shootName") or ""))


def _named(docs: Sequence[Mapping[str, Any]], kind: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    def key(doc: Mapping[str, Any]) -> tuple[str, str]:
        meta = doc.get("metadata") or {}
        return str(meta.get("namespace") or "default"), str(meta.get("name"))

    return {key(d): d for d in docs if d.get("kind") == kind}


def _ready(obj: Mapping[str, Any], **status: Any) -> dict[str, Any]:
    meta = {"namespace": "default", **(obj.get("metadata") or {})}
    return {**obj, "metadata": meta, "status": {
        **status, "conditions": [condition(names.COND_READY, True, names.REASON_READY, "Ready", _NOW)]}}


def _text(value: Any) -> str:
    out = str(value)
    for placeholder, shown in _PLACEHOLDERS.items():
        out = out.replace(placeholder, shown)
    return out


def _line(call: Call) -> str:
    args = ", ".join(f"{k}={_text(v)}" for k, v in call.kwargs.items() if v is not None)
    where = f" in {call.client}" if call.client else ""
    return f"{call.method}{where}({args})"


def _row(name: str, kind: str, outcome: Outcome, lines: list[str]) -> RenderedJob:
    conditions = (outcome.status or {}).get("conditions") or []
    error = next((c for c in conditions if c.get("type") != names.COND_READY), None)
    if error is not None:
        return RenderedJob(name, kind, names.STATE_ERROR, f"{error['reason']}: {_text(error['message'])}")
    lines += [_line(c) for c in outcome.writes if isinstance(c, Call)]
    return RenderedJob(name, kind, names.STATE_READY, "valid", lines)


def _prepared(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {"namespace": "default", **(obj.get("metadata") or {}), "finalizers": [names.FINALIZER],
            "creationTimestamp": _NOW}
    return {**obj, "metadata": meta, "status": {"idempotencyToken": _TOKEN}}


def render_backups(scope: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], settings: Any = None
                   ) -> list[RenderedJob]:
    """The outcome of every AwsNfsVolumeBackup of ``docs`` with ``scope`` (module doc)."""
    where = _where(scope)
    volumes = _named(docs, names.AWS_NFS_VOLUME.kind)
    out: list[RenderedJob] = []
    for doc in docs:
        if doc.get("kind") != names.AWS_NFS_VOLUME_BACKUP.kind:
            continue
        obj = _prepared(doc)
        name = f"{obj['metadata']['namespace']}/{obj['metadata'].get('name') or '?'}"
        volume = volumes.get(bp.volume_ref(obj))
        seen = bp.Seen(obj=obj, where=where, volume=_ready(volume, id="<id>") if volume else None,
                       instance={"status": {"id": _FS}}, vaults=[{"BackupVaultName": bp.vault_name(where.scope)}])
        lines = [f"vault {bp.vault_name(where.scope)} in {where.region} (created when missing)"]
        outcome = bp.plan(seen, _TOKEN, lambda s: s, _NOW)
        row = _row(name, str(doc.get("kind")), outcome, lines)
        dest = bp.remote(obj, where)
        if row.state == names.STATE_READY and dest:
            row.plan.extend([f"vault {bp.vault_name(where.scope)} in {dest} (created when missing)",
                             f"start_copy_job(recovery_point_arn=<recovery point>, destination_vault_arn="
                             f"{bp.vault_arn(where, dest)}) once the recovery point is complete"])
        out.append(row)
    return out


def render_restores(scope: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], settings: Any = None
                    ) -> list[RenderedJob]:
    """The outcome of every AwsNfsVolumeRestore of ``docs`` with ``scope`` (module doc)."""
    where = _where(scope)
    volumes = _named(docs, names.AWS_NFS_VOLUME.kind)
    backups = _named(docs, names.AWS_NFS_VOLUME_BACKUP.kind)
    out: list[RenderedJob] = []
    for doc in docs:
        if doc.get("kind") != names.AWS_NFS_VOLUME_RESTORE.kind:
            continue
        obj = _prepared(doc)
        name = f"{obj['metadata']['namespace']}/{obj['metadata'].get('name') or '?'}"
        found = backups.get(rp.backup_ref(obj))
        backup = _ready(found, id=_POINT) if found else None
        volume = volumes.get(bp.volume_ref(backup)) if backup else None
        seen = rp.Seen(obj=obj, where=where, backup=backup, volume=_ready(volume, id="<id>") if volume else None,
                       instance={"status": {"id": _FS}}, metadata={"RestoreMetadata": {}})
        outcome = rp.plan(seen, _TOKEN, lambda s: s, _NOW)
        out.append(_row(name, str(doc.get("kind")), outcome,
                        [f"restore_metadata({bp.vault_name(where.scope)}, <recoveryPointId>)"]))
    return out
