"""Reading the API Gateway controllers' settings from the environment (shared by the three controllers)."""

from __future__ import annotations

from collections.abc import Mapping

_YES = ("1", "true", "yes", "on", "allow")
_NO = ("", "0", "false", "no", "off", "deny")


def env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """``env[name]`` as seconds (``default`` when unset or blank). Raises ``ValueError`` naming a bad value."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected seconds") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r}: must be >= 0")
    return value


def v1beta1_access(env: Mapping[str, str]) -> bool:
    """``RECONCILERY_APIRULE_V1BETA1_ACCESS``: ``allow`` (also 1/true/yes/on) reconciles v1beta1 APIRules and
    installs Ory Oathkeeper; ``deny`` (default; also 0/false/no/off). It stands for the original's signed
    ``kyma-system/apirule-access`` ConfigMap (notes §5.6). Raises ``ValueError`` for other values."""
    raw = env.get("RECONCILERY_APIRULE_V1BETA1_ACCESS", "").strip().lower()
    if raw not in _YES + _NO:
        raise ValueError(f"RECONCILERY_APIRULE_V1BETA1_ACCESS={raw!r}: expected allow or deny")
    return raw in _YES
