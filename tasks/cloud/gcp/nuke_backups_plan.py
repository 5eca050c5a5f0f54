"""Which Filestore backups are a nuked runtime's, and how Nuke deletes them (pure): cloud-manager's
``pkg/kcp/provider/gcp/nuke`` (``loadNfsBackups.go``, ``deleteNfsBackups.go``; flag ``nukeBackupsGcp``).

The original lists ``ListBackups`` of ``projects/<scope.spec.scope.gcp.project>/locations/-`` (every
location) with ``GetSkrBackupsFilter(scope name)``:
``labels.managed-by="cloud-manager" AND labels.scope-name="<scope>"`` (the labels the GcpNfsVolumeBackup
flow puts on each backup it creates: ``pkg/skr/gcpnfsvolumebackup/v2/state.go``), and deletes each one not
in state ``DELETING`` by its full name. Backups other shoots shared with this runtime (``cm-allow-<shoot>``)
carry their own scope's name and are not selected.

We list the same way and, as the provider's answer is not what decides what we delete, keep only the
backups whose labels and name say they are this Scope's (:func:`owned`): a filter the API ignored or
widened never deletes another runtime's backup. Where Filestore deletes a backup chain one backup at a
time, we ask for one per chain and turn (:func:`objects`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.cloud.kcp.nuke_plan import ProviderObject

__all__ = ["KIND", "LIST_FAILED", "MANAGED_BY", "listing", "objects", "owned"]

#: The Nuke's status kind of these resources (the original's ``kindFilestoreBackup``).
KIND = "FilestoreBackup"
#: The Nuke's Error reason when the listing is refused.
LIST_FAILED = "ErrorListingGcpFilestoreBackups"
#: ``labels.managed-by`` of every backup the original (and we) create (``gcpclient.ManagedByValue``).
MANAGED_BY = "cloud-manager"
MANAGED_BY_KEY, SCOPE_NAME_KEY = "managed-by", "scope-name"
#: The call that deletes one backup, ``<client>.delete_backup(name)``.
DELETE_METHOD = "delete_backup"
_BACKUP_NAME_RE = re.compile(r"^projects/([^/]+)/locations/[^/]+/backups/[^/]+$")
#: A value Google accepts as a label value (and so may be one of a backup's).
_LABEL_VALUE_RE = re.compile(r"^[-_a-z0-9]{1,63}$")


def _project(scope: Mapping[str, Any]) -> str:
    return str((((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}).get("project") or "")


def _scope_name(scope: Mapping[str, Any]) -> str:
    return str((scope.get("metadata") or {}).get("name") or "")


def listing(scope: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(parent, filter)`` of the ``ListBackups`` that finds the runtime's backups: every location of the
    Scope's project, this Scope's labels. ``None`` when the Scope names no project, or a name no backup
    label can hold (nothing of the runtime's can be found: nothing to delete)."""
    project, scope_name = _project(scope), _scope_name(scope)
    if not project or "/" in project or not _LABEL_VALUE_RE.match(scope_name):
        return None
    return (f"projects/{project}/locations/-",
            f'labels.{MANAGED_BY_KEY}="{MANAGED_BY}" AND labels.{SCOPE_NAME_KEY}="{scope_name}"')


def owned(backup: Mapping[str, Any], scope: Mapping[str, Any]) -> bool:
    """Whether ``backup`` (the API's JSON) is the Scope's: in its project, labelled managed by us for it."""
    labels = backup.get("labels") or {}
    match = _BACKUP_NAME_RE.match(str(backup.get("name") or ""))
    return (match is not None and match.group(1) == _project(scope) and isinstance(labels, Mapping)
            and labels.get(MANAGED_BY_KEY) == MANAGED_BY and labels.get(SCOPE_NAME_KEY) == _scope_name(scope)
            and bool(_scope_name(scope)))


def _chain(backup: Mapping[str, Any]) -> str:
    """The backup chain whose deletes run one at a time (its source instance and region), ``""`` for none:
    Filestore deletes the backups of one chain one after another outside the BASIC tiers (a second delete
    answers ``RESOURCE_EXHAUSTED``, documented in "Operations concurrency")."""
    source = str(backup.get("sourceInstance") or "")
    if not source or str(backup.get("sourceInstanceTier") or "BASIC").startswith("BASIC"):
        return ""
    return f"{source} {str(backup['name']).rsplit('/backups/', 1)[0]}"


def objects(backups: Iterable[Mapping[str, Any]], scope: Mapping[str, Any]) -> list[ProviderObject]:
    """The Scope's backups among ``backups`` as Nuke's provider objects, oldest first (by ``createTime``,
    then name; a second one of a name dropped): each deleted by ``delete_backup(name)`` unless its state
    is ``DELETING``, or, in a chain deleted one at a time (:func:`_chain`), another of its chain is
    being deleted or asked first this turn (it waits for a later turn: no call a refusal would answer,
    which would hold up the deletes of other chains). The original asks for all at once and logs the
    refusals."""
    mine: dict[str, Mapping[str, Any]] = {}
    for backup in backups:
        if owned(backup, scope):
            mine.setdefault(str(backup["name"]), backup)
    ordered = sorted(mine.values(), key=lambda b: (str(b.get("createTime") or ""), str(b["name"])))
    busy = {_chain(b) for b in ordered if str(b.get("state") or "") == "DELETING"} - {""}
    found: list[ProviderObject] = []
    for backup in ordered:
        name, chain = str(backup["name"]), _chain(backup)
        deleting = str(backup.get("state") or "") == "DELETING"
        waits = not deleting and chain in busy
        if not deleting and chain:
            busy.add(chain)
        found.append(ProviderObject(name, deleting or waits, DELETE_METHOD, (name,)))
    return found
