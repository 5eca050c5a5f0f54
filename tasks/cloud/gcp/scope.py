"""The GCP part of a KCP Scope, built from the Garden shoot and its credentials (pure; the original's
``pkg/kcp/scope/scopeCreateGcp.go`` and ``networkReferenceKymaCreate.go``, reference notes §4.2).

Contract::

    section = scope_section(shoot, credentials)   # {"gcp": {...}} for Scope spec.scope, or None
    network = kyma_network_reference(scope)       # {"gcp": {"gcpProject", "networkName"}}

``shoot`` is the ``core.gardener.cloud/v1beta1`` Shoot as a dict; ``credentials`` the data of the
credentials Secret, decoded (see :func:`secret_values`). ``None`` means the original's logging-only
stop: the error is logged, the Scope is not built and nothing is requeued.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("tasks.cloud.gcp.scope")

SERVICE_ACCOUNT_KEY = "serviceaccount.json"


def secret_values(secret: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's values as text: ``data`` base64-decoded, overlaid by ``stringData``."""
    out = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
    out.update({k: str(v) for k, v in (secret.get("stringData") or {}).items()})
    return out


def vpc_network_name(shoot_namespace: str, shoot_name: str) -> str:
    """``shoot--<project>--<shoot>``, project = namespace without ``garden-`` (``GardenerVpcName``)."""
    project = shoot_namespace.removeprefix("garden-")
    return f"shoot--{project}--{shoot_name}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def scope_section(shoot: Mapping[str, Any], credentials: Mapping[str, str | bytes]) -> dict[str, Any] | None:
    """``{"gcp": {project, vpcNetwork, network{nodes,pods,services}, workers[{zones}]}}``.

    ``project`` is ``project_id`` of the ``serviceaccount.json`` credential; ``workers`` copies each
    shoot worker's zones, in order. Returns None (after logging the original's error) when the key is
    missing, is not JSON, or has no ``project_id``.
    """
    raw = credentials.get(SERVICE_ACCOUNT_KEY)
    if raw is None:
        log.error("error defining GCP scope: gardener credential for gcp missing serviceaccount.json key")
        return None
    try:
        data = json.loads(_text(raw))
    except ValueError as err:
        log.error("error defining GCP scope: error decoding serviceaccount.json: %s", err)
        return None
    if not isinstance(data, dict) or not data.get("project_id"):
        log.error("error defining GCP scope: gardener gcp credentials missing project_id")
        return None
    meta = shoot.get("metadata") or {}
    spec = shoot.get("spec") or {}
    networking = spec.get("networking") or {}
    workers = (spec.get("provider") or {}).get("workers") or []
    network = {k: networking[k] for k in ("nodes", "pods", "services") if networking.get(k)}
    return {"gcp": {
        "project": str(data["project_id"]),
        "vpcNetwork": vpc_network_name(str(meta.get("namespace", "")), str(meta.get("name", ""))),
        "network": network,
        "workers": [{"zones": list(w.get("zones") or [])} for w in workers],
    }}


def needs_rebuild(scope: Mapping[str, Any]) -> bool:
    """True when a GCP Scope lacks ``workers`` (the original rebuilds it then)."""
    gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
    return not gcp.get("workers")


def kyma_network_reference(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The ``<kyma>--kyma`` Network's ``spec.network.reference``: ``{"gcp": {gcpProject, networkName}}``."""
    gcp = scope["spec"]["scope"]["gcp"]
    return {"gcp": {"gcpProject": gcp["project"], "networkName": gcp["vpcNetwork"]}}


__all__ = ["kyma_network_reference", "needs_rebuild", "scope_section", "secret_values", "vpc_network_name"]
