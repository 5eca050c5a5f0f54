"""What ``reconcilery render redisinstance`` and ``render rediscluster`` share (pure): the Scope's facts and
the checks an SKR Redis object passes before its KCP mirror is shown, in the SKR plans' words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud import names
from tasks.cloud.skr.redis_common_plan import secret_name
from tasks.cloud.skr.redisinstance_plan import REASON_INVALID_EXTRA_DATA, extra_data_invalid

__all__ = ["defaulted", "refusal", "scope_facts", "secret_line", "where"]


def scope_facts(scope: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(provider, kyma, KCP namespace)`` of a KCP Scope (``?`` / ``kcp-system`` when unset)."""
    spec = scope.get("spec") or {}
    return (str(spec.get("provider") or ""), str(spec.get("kymaName") or (scope.get("metadata") or {}).get("name")
                                                  or "?"),
            str((scope.get("metadata") or {}).get("namespace") or names.KCP_NAMESPACE))


def where(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace/name, kind)`` of an SKR object as the rendering names it."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}", str(obj.get("kind") or "?")


def refusal(obj: Mapping[str, Any], provider: str, kinds: Mapping[str, str], desired: Any,
            unknown: Mapping[str, str]) -> str | None:
    """Why the SKR object is an Error, or ``None``: its kind is not ``provider``'s (``kinds``: kind ->
    provider), its tier is unknown (``desired`` is ``None``; ``unknown``: the message per provider), or its
    ``authSecret.extraData`` is not a bounded object (as the SKR plan refuses it, before anything is made)."""
    kind = str(obj.get("kind") or "?")
    if kinds.get(kind) != provider:
        return f"{kind} is not served in an SKR of provider {provider or '?'}"
    if desired is None:
        return f"Error: {unknown[provider]}"
    extra = ((obj.get("spec") or {}).get("authSecret") or {}).get("extraData")
    invalid = "authSecret.extraData must be an object" if extra is not None and not isinstance(extra, Mapping) \
        else extra_data_invalid(extra)
    return None if invalid is None else f"{REASON_INVALID_EXTRA_DATA}: {invalid}"


def defaulted(obj: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(its id, else <id>; the object with its namespace defaulted to default)``: what the mirror is
    projected from."""
    meta = obj.get("metadata") or {}
    return (str((obj.get("status") or {}).get("id") or "<id>"),
            {**obj, "metadata": {**meta, "namespace": meta.get("namespace") or "default"}})


def secret_line(obj: Mapping[str, Any], keys: str) -> str:
    """The auth Secret's line: its namespace/name and ``keys`` once Ready (``+ extraData`` when templated)."""
    extra = ((obj.get("spec") or {}).get("authSecret") or {}).get("extraData")
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    return f"Secret {namespace}/{secret_name(obj)} once Ready: {keys}" + (" + extraData" if extra else "")
