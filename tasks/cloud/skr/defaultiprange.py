"""The IpRange of an SKR consumer, read and (the default one) created: the I/O around
:mod:`tasks.cloud.skr.defaultiprange_plan` (cloud-manager's ``pkg/skr/common/defaultiprange``).

A consumer's reconciler (NFS volumes, Redis) calls :func:`resolve` in its read and, in its plan,
:func:`step` when the use is not :attr:`~.defaultiprange_plan.IpRangeUse.ready`::

    use = defaultiprange.resolve(ctx, obj)          # read (creates the default IpRange when missing)
    if not use.ready:
        return defaultiprange.step(use, run, t)      # the consumer's Error / wait
    kcp_iprange_name = use.kcp_name                  # the KCP mirror's name (the SKR IpRange's status.id)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kube import Conflict
from kube.toolkit.step import Step
from tasks.cloud import names
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.defaultiprange_plan import (
    DEFAULT_NAME,
    REASON_IPRANGE_NOT_FOUND,
    IpRangeUse,
    decide,
    default_manifest,
    reference,
    wanted,
)
from tasks.cloud.step import StepBuilder

__all__ = ["DEFAULT_NAME", "REASON_IPRANGE_NOT_FOUND", "IpRangeUse", "decide", "default_manifest", "reference",
           "resolve", "step", "wanted"]

#: Seconds (scaled by ``settings.t``) a consumer waits for its IpRange to become Ready.
WAIT_READY = 10.0


def resolve(ctx: SkrContext, consumer: Mapping[str, Any]) -> IpRangeUse:
    """Read the IpRange ``consumer`` uses (from the connect's snapshot) and create the default one when
    :func:`decide` says so (one that appeared meanwhile is used). An IpRange that is not Ready yet gets an
    IpRange turn at once (the IpRanges of this connect were reconciled before its consumers): a new one
    gets its KCP mirror, a provisioned one its Ready, in this connect rather than the next. Raises
    ``kube.ApiError``."""
    from tasks.cloud.skr import iprange  # the IpRange reconciler: a consumer's dependency, not the reverse

    name = wanted(consumer)
    use = decide(consumer, ctx.get(names.SKR_IPRANGE, name))
    if use.create is not None:
        with contextlib.suppress(Conflict):  # created by another consumer of this connect meanwhile
            ctx.skr.create(names.SKR_IPRANGE, use.create)
    if use.wait:
        ctx.forget(names.SKR_IPRANGE)
        iprange.reconcile(ctx, "", name)
        ctx.forget(names.SKR_IPRANGE)
        found = ctx.skr.get(names.SKR_IPRANGE, name)
        use = decide(consumer, found) if found is not None else IpRangeUse(None, wait=True)
    return use


def step(use: IpRangeUse, run: StepBuilder, t: Callable[[float], float]) -> Step:
    """The consumer's Step when ``use`` is not ready: Error ``IpRangeNotFound`` (forget), else come
    back after :data:`WAIT_READY` seconds (the IpRange's own reconcile makes it Ready)."""
    if use.missing is not None:
        return run.fail(REASON_IPRANGE_NOT_FOUND, use.missing)
    return run.step(requeue_after=t(WAIT_READY))
