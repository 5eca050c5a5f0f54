"""Saving ``SkrStatus`` (KCP, same name as the Kyma, in ``kcp-system``) after a connect: read the
current one, :func:`~tasks.cloud.skr.skrstatus_plan.plan` (pure: identity, connection times, one
condition per handle: the create or replace), :func:`kube.toolkit.execute`; the time since the previous
connect it records is observed as the SKR's revisit interval (:mod:`tasks.cloud.skr.fleet`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube
from kube.clock import now_rfc3339
from kube.toolkit import execute
from tasks.cloud import names
from tasks.cloud.rotation import revisit_interval
from tasks.cloud.skr import fleet
from tasks.cloud.skr.skrstatus_plan import plan

__all__ = ["save"]


def save(kcp: Kube, namespace: str, kyma: str, scope: Mapping[str, Any] | None,
         handles: list[dict[str, Any]], now: str = "") -> dict[str, Any]:
    """Create or replace the SkrStatus of ``kyma``; ``handles`` are ``{title, ok, outcomes, ...}``;
    ``now``: the connect's time (default: the clock). Returns the object as written. Raises
    ``kube.ApiError``."""
    current = kcp.get(names.SKR_STATUS, kyma, namespace)
    now = now or now_rfc3339()
    saved = dict(execute(plan(namespace, kyma, scope, current, handles, now), kcp).answers[-1])
    previous = [str(t) for t in ((current or {}).get("spec") or {}).get("pastConnections") or []]
    interval = revisit_interval(previous, now)
    if interval is not None:  # the time since this SKR's previous connect (tasks.cloud.skr.fleet)
        fleet.REVISIT.observe(interval)
    return saved
