"""Building the KCP Scope from the Garden's objects (pure): the common part, the rebuild rule, the
``<kyma>--kyma`` Network.

After ``pkg/kcp/scope`` (``createScope*``, ``shouldScopeExist``). The provider-specific part
(``spec.scope.<provider>``, e.g. the AWS account read from STS) comes from the provider layer
(:meth:`tasks.cloud.providers.Provider.scope_info`); everything here works on plain dicts.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tasks.cloud import names

__all__ = [
    "ScopeError",
    "binding_secret_ref",
    "build_scope",
    "decode_secret",
    "kyma_network",
    "kyma_network_object",
    "missing_labels",
    "network_reference",
    "scope_labels",
    "shoot_name",
]

Obj = Mapping[str, Any]


class ScopeError(ValueError):
    """The Scope cannot be built from what the Garden holds (message says why)."""


def shoot_name(gardener_cluster: Obj) -> str:
    """The shoot's name: label ``kyma-project.io/shoot-name``, falling back to ``spec.shoot.name``."""
    labels = (gardener_cluster.get("metadata") or {}).get("labels") or {}
    return str(labels.get(names.LABEL_SHOOT_NAME) or ((gardener_cluster.get("spec") or {}).get("shoot") or {})
               .get("name") or "")


def scope_labels(gardener_cluster: Obj) -> dict[str, str]:
    """The five Scope labels present on the GardenerCluster (global account, subaccount, shoot name,
    region, broker plan)."""
    labels = (gardener_cluster.get("metadata") or {}).get("labels") or {}
    return {k: str(labels[k]) for k in names.SCOPE_LABELS if labels.get(k)}


def missing_labels(scope: Obj, gardener_cluster: Obj) -> list[str]:
    """Scope labels the GardenerCluster carries but the Scope lacks (or has another value for), plus
    ``cloud-manager.kyma-project.io/kymaName`` when missing: any of them makes the Scope be rebuilt."""
    have = (scope.get("metadata") or {}).get("labels") or {}
    missing = [k for k, v in scope_labels(gardener_cluster).items() if have.get(k) != v]
    if not have.get(names.LABEL_KYMA_NAME):
        missing.append(names.LABEL_KYMA_NAME)
    return missing


def binding_secret_ref(binding: Obj, kind: str) -> tuple[str, str, str]:
    """``(provider type, secret namespace, secret name)`` of a CredentialsBinding (``credentialsRef``,
    which must reference a Secret) or a SecretBinding (``secretRef``). Raises :class:`ScopeError`."""
    provider = str((binding.get("provider") or {}).get("type") or "")
    namespace = str((binding.get("metadata") or {}).get("namespace") or "")
    if kind == "CredentialsBinding":
        ref = binding.get("credentialsRef") or {}
        if ref.get("kind", "Secret") != "Secret":
            raise ScopeError(f"CredentialsBinding {binding.get('metadata', {}).get('name')} references a "
                             f"{ref.get('kind')}, not a Secret")
    else:
        ref = binding.get("secretRef") or {}
    if not ref.get("name"):
        raise ScopeError(f"{kind} has no secret reference")
    return provider, str(ref.get("namespace") or namespace), str(ref["name"])


def decode_secret(secret: Obj) -> dict[str, str]:
    """A Secret's ``data`` (base64) and ``stringData`` as text. Undecodable values are skipped."""
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            continue
    for key, value in (secret.get("stringData") or {}).items():
        out[str(key)] = str(value)
    return out


def build_scope(*, kyma: str, namespace: str, gardener_cluster: Obj, shoot: Obj, provider: str,
                info: Mapping[str, Any], existing: Obj | None = None) -> dict[str, Any]:
    """The Scope object (name = the kyma name): labels (``kymaName`` and the five of the
    GardenerCluster), the finalizer, ``spec.kymaName/shootName/region/provider`` and
    ``spec.scope.<provider> = info``. Labels and finalizers of ``existing`` are kept."""
    old_meta = (existing or {}).get("metadata") or {}
    labels = {**(old_meta.get("labels") or {}), names.LABEL_KYMA_NAME: kyma, **scope_labels(gardener_cluster)}
    finalizers = list(old_meta.get("finalizers") or [])
    if names.FINALIZER not in finalizers:
        finalizers.append(names.FINALIZER)
    return {
        "apiVersion": names.SCOPE.api_version, "kind": names.SCOPE.kind,
        "metadata": {"name": kyma, "namespace": namespace, "labels": labels, "finalizers": finalizers},
        "spec": {
            "kymaName": kyma,
            "shootName": shoot_name(gardener_cluster) or str((shoot.get("metadata") or {}).get("name") or ""),
            "region": str((shoot.get("spec") or {}).get("region") or ""),
            "provider": provider,
            "scope": {provider: dict(info)},
        },
    }


def kyma_network_object(scope: Obj, reference: Mapping[str, Any]) -> dict[str, Any]:
    """The KCP Network ``<kyma>--kyma`` (type ``kyma``) referencing the shoot's VPC: ``reference`` is
    the provider's ``spec.network.reference`` (e.g. ``{"aws": {...}}``)."""
    meta = scope.get("metadata") or {}
    name = str(meta.get("name"))
    return {
        "apiVersion": names.NETWORK.api_version, "kind": names.NETWORK.kind,
        "metadata": {"name": names.kyma_network(name), "namespace": meta.get("namespace"),
                     "labels": {names.LABEL_KYMA_NAME: name}},
        "spec": {"scope": {"name": name}, "type": "kyma", "network": {"reference": dict(reference)}},
    }


def network_reference(kcp_network: Obj | None, provider: str) -> Mapping[str, Any]:
    """The ``provider`` reference (e.g. ``{"gcpProject": ..., "networkName": ...}``) a KCP Network names:
    ``status.network.<provider>``, else ``spec.network.reference.<provider>``; empty when it names none."""
    if not kcp_network:
        return {}
    return ((kcp_network.get("status") or {}).get("network") or {}).get(provider) \
        or (((kcp_network.get("spec") or {}).get("network") or {}).get("reference") or {}).get(provider) or {}


N = TypeVar("N")


def kyma_network(scope: Obj, reference: Callable[[Obj], Mapping[str, Any]], of: Callable[[Obj], N]) -> N | None:
    """The runtime's own network as the Scope names it: ``of`` (a provider's network parser) over a KCP
    Network whose ``spec.network.reference`` is ``reference(scope)`` (the provider's
    ``kyma_network_reference``); ``None`` when the Scope names none (either raises ``KeyError`` /
    ``TypeError``). What a remote peering is compared with when the local Network is already gone."""
    try:
        return of({"spec": {"network": {"reference": reference(scope)}}})
    except (KeyError, TypeError):
        return None
