"""Filestore backup names, labels and the ownership rule of the GCP NFS backup family (pure).

As cloud-manager's ``pkg/kcp/provider/gcp/client/gcpConstants.go`` (paths, ``GetSharedBackupsFilter``),
``pkg/util/labels.go`` (the ``kyma-project__cloud-manager__*`` label keys),
``pkg/skr/gcpnfsvolumebackup/v2/state.go`` (``SetFilestoreLabels``, ``HasProperLabels``, ``cm-allow-<shoot>``)
and ``pkg/skr/gcpnfsvolumerestore/v2/state.go`` (``IsAllowedToRestoreBackup``).

Everything an SKR says (a location, an id, a ``backupUrl``, a shoot name in ``accessibleFrom``) is checked
here before it becomes part of a request path or a label: :func:`backup_path` answers ``None`` for a part
that is no Filestore id, so a crafted value never names another project's or another path's resource.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ACCESSIBLE_FROM_VALUE", "ALLOW_PREFIX", "BACKUP_URL_MESSAGE", "MANAGED_BY", "allow_key", "allowed",
           "backup_id", "backup_path", "backup_url", "instance_path", "labels_for", "parse_backup_url",
           "project", "shared_filter", "shoot", "uri_of"]

MANAGED_BY_KEY, SCOPE_NAME_KEY = "managed-by", "scope-name"
#: ``gcpclient.ManagedByValue``.
MANAGED_BY = "cloud-manager"
SHOOT_NAME_KEY = "kyma-project__cloud-manager__shoot-name"
VOLUME_NAME_KEY = "kyma-project__cloud-manager__skr-volume-name"
VOLUME_NAMESPACE_KEY = "kyma-project__cloud-manager__skr-volume-namespace"
BACKUP_NAME_KEY = "kyma-project__cloud-manager__skr-backup-name"
BACKUP_NAMESPACE_KEY = "kyma-project__cloud-manager__skr-backup-namespace"
#: The value of every ``cm-allow-<shoot>`` label (``util.GcpLabelBackupAccessibleFrom``).
ACCESSIBLE_FROM_VALUE = "kyma-project__cloud-manager__accessible-from"
ALLOW_PREFIX = "cm-allow-"
BACKUP_URL_MESSAGE = "invalid backup URL format, expected '{location_id}/{backup_id}', got '%s'"

#: A Filestore location (a region or a zone) or resource id: what may stand between two slashes.
_ID_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: A value Google accepts as a label value.
_LABEL_VALUE_RE = re.compile(r"^[-_a-z0-9]{0,63}$")
#: A label key Google accepts.
_LABEL_KEY_RE = re.compile(r"^[a-z][-_a-z0-9]{0,62}$")
_BACKUP_RE = re.compile(r"^projects/([^/]+)/locations/([^/]+)/backups/([^/]+)$")


def project(scope: Mapping[str, Any]) -> str:
    """The Scope's GCP project (``spec.scope.gcp.project``)."""
    return str((((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}).get("project") or "")


def shoot(scope: Mapping[str, Any]) -> str:
    """The Scope's shoot (``spec.shootName``)."""
    return str((scope.get("spec") or {}).get("shootName") or "")


def valid_id(value: str) -> bool:
    """Whether ``value`` is a Filestore location or resource id (lower case, digits, dashes; <= 63)."""
    return bool(_ID_RE.match(value))


def backup_id(ident: str) -> str:
    """The Filestore backup id of an SKR backup whose ``status.id`` is ``ident``: ``cm-<first 60 of id>``
    (the original's ``cm-%.60s``)."""
    return f"cm-{ident[:60]}"


def backup_path(project_: str, location: str, backup: str) -> str | None:
    """``projects/<p>/locations/<l>/backups/<b>`` (``GetFileBackupPath``); ``None`` when a part is no id."""
    if not project_ or "/" in project_ or not valid_id(location) or not valid_id(backup):
        return None
    return f"projects/{project_}/locations/{location}/backups/{backup}"


def instance_path(project_: str, location: str, instance: str) -> str | None:
    """``projects/<p>/locations/<l>/instances/<i>`` (``GetFilestoreInstancePath``); ``None`` for a bad part."""
    if not project_ or "/" in project_ or not valid_id(location) or not valid_id(instance):
        return None
    return f"projects/{project_}/locations/{location}/instances/{instance}"


def parse_backup_url(url: str) -> tuple[str, str] | None:
    """``(location, backup id)`` of a ``backupUrl`` ``<location_id>/<backup_id>`` (the original's
    ``convertBackupUrlToFullPath``); ``None`` when it is not exactly two ids."""
    parts = url.split("/")
    if len(parts) != 2 or not valid_id(parts[0]) or not valid_id(parts[1]):
        return None
    return parts[0], parts[1]


def backup_url(project_: str, url: str) -> str | None:
    """The full backup name a ``backupUrl`` names in the Scope's project (``None``: malformed)."""
    parsed = parse_backup_url(url)
    return None if parsed is None else backup_path(project_, *parsed)


def uri_of(name: str) -> tuple[str, str] | None:
    """``(location/backup, location)`` of a full backup name (discovery's ``uri`` and ``location``)."""
    match = _BACKUP_RE.match(name)
    if match is None:
        return None
    return f"{match.group(2)}/{match.group(3)}", match.group(2)


def allow_key(shoot_: str) -> str:
    """``cm-allow-<shoot>`` (``ConvertToAccessibleFromKey``)."""
    return f"{ALLOW_PREFIX}{shoot_}"


def _label_value(value: str) -> str:
    """``value`` as a label value can hold it (lower case; ``""`` when it cannot)."""
    value = value.lower()
    return value if _LABEL_VALUE_RE.match(value) else ""


def labels_for(scope: Mapping[str, Any], backup: Mapping[str, Any], current: Mapping[str, str] | None = None
               ) -> dict[str, str]:
    """The labels of the Filestore backup of the SKR ``backup`` (``SetFilestoreLabels``): ``managed-by``,
    ``scope-name``, the volume's and the backup's names and namespaces, the shoot, a ``cm-allow-<shoot>``
    per ``spec.accessibleFrom``; ``current``'s other labels are kept, its stale ``cm-allow-*`` ones go."""
    meta, spec = backup.get("metadata") or {}, backup.get("spec") or {}
    volume = (spec.get("source") or {}).get("volume") or {}
    namespace = str(meta.get("namespace") or "")
    labels = {k: v for k, v in (current or {}).items() if not str(k).startswith(ALLOW_PREFIX)}
    labels.update({
        MANAGED_BY_KEY: MANAGED_BY, SCOPE_NAME_KEY: _label_value(str((scope.get("metadata") or {}).get("name") or "")),
        VOLUME_NAME_KEY: _label_value(str(volume.get("name") or "")),
        VOLUME_NAMESPACE_KEY: _label_value(str(volume.get("namespace") or namespace)),
        BACKUP_NAME_KEY: _label_value(str(meta.get("name") or "")), BACKUP_NAMESPACE_KEY: _label_value(namespace),
        SHOOT_NAME_KEY: _label_value(shoot(scope))})
    for other in accessible_from(backup):
        labels[allow_key(other)] = ACCESSIBLE_FROM_VALUE
    return labels


def accessible_from(backup: Mapping[str, Any]) -> list[str]:
    """``spec.accessibleFrom``, sorted, each one a label key can carry (others left out: the CRD bounds
    the list to 10)."""
    found = (backup.get("spec") or {}).get("accessibleFrom") or []
    return sorted({s for s in found if isinstance(s, str) and s and _LABEL_KEY_RE.match(allow_key(s))})


def allowed(backup: Mapping[str, Any] | None, scope: Mapping[str, Any]) -> bool:
    """Whether this runtime may restore from ``backup`` (the Filestore backup's JSON): it is managed by
    Cloud Manager, in the Scope's project, and this shoot's (``shoot-name``) or shared with it
    (``cm-allow-<shoot>`` or ``cm-allow-all``) — ``IsAllowedToRestoreBackup``, also for backups named by
    reference (whose status an SKR can write)."""
    if backup is None:
        return False
    labels = backup.get("labels") or {}
    match = _BACKUP_RE.match(str(backup.get("name") or ""))
    if not isinstance(labels, Mapping) or match is None or match.group(1) != project(scope):
        return False
    me = shoot(scope)
    if labels.get(MANAGED_BY_KEY) != MANAGED_BY or not me:
        return False
    return (labels.get(allow_key(me)) == ACCESSIBLE_FROM_VALUE or labels.get(allow_key("all")) == ACCESSIBLE_FROM_VALUE
            or labels.get(SHOOT_NAME_KEY) == me)


def shared_filter(shoot_: str, subaccount: str) -> str:
    """``GetSharedBackupsFilter``: the backups shared with the shoot (or subaccount) or with all."""
    return (f'labels.{MANAGED_BY_KEY}="{MANAGED_BY}" AND ( labels.{allow_key(shoot_)}="{ACCESSIBLE_FROM_VALUE}"'
            f' OR labels.{allow_key(subaccount)}="{ACCESSIBLE_FROM_VALUE}"'
            f' OR labels.{allow_key("all")}="{ACCESSIBLE_FROM_VALUE}")')


def by_name(backups: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``backups`` by name, a second one of a name dropped."""
    seen: dict[str, Mapping[str, Any]] = {}
    for b in backups:
        seen.setdefault(str(b.get("name") or ""), b)
    return [seen[k] for k in sorted(seen)]
