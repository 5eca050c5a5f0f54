"""The IpRange of an SKR consumer, read and (the default one) created: the I/O around
:mod:`tasks.cloud.skr.defaultiprange_plan` (cloud-manager's ``pkg/skr/common/defaultiprange``).

A consumer's reconciler (an IpRange consumer of :mod:`tasks.cloud.registry`) calls :func:`resolve` in its
read and, in its pure plan, :func:`~.defaultiprange_plan.blocked`::

    use = defaultiprange.resolve(ctx, obj)          # read (creates the default IpRange when missing)
    waiting = defaultiprange_plan.blocked(use, run, t)  # in the pure plan: the consumer's Error / wait
    if waiting is not None:
        return waiting
    kcp_iprange_name = use.kcp_name                  # the KCP mirror's name (the SKR IpRange's status.id)

The KCP IpRange that name stands for is used only when it is the SKR IpRange's own mirror
(:func:`~.defaultiprange_plan.owned`): the id is tenant-written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kube import Conflict
from kube.toolkit import deleting
from tasks.cloud import names, registry
from tasks.cloud.skr import kind
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, decide, owned, wanted

__all__ = ["resolve"]


def resolve(ctx: SkrContext, consumer: Mapping[str, Any]) -> IpRangeUse:
    """Read the IpRange ``consumer`` uses (from the connect's snapshot) and create the default one when
    :func:`decide` says so (one that appeared meanwhile is used). An IpRange that is not Ready yet gets an
    IpRange turn at once (the IpRanges of this connect were reconciled before its consumers): a new one
    gets its KCP mirror, a provisioned one its Ready, in this connect rather than the next. The IpRange's
    ``status.id`` is then checked (:func:`owned`): the KCP IpRange it names is read (only for a UUID) and
    must be this SKR IpRange's mirror. Raises ``kube.ApiError``."""
    name = wanted(consumer)
    use = decide(consumer, ctx.get(names.SKR_IPRANGE, name))
    if use.create is not None:
        with contextlib.suppress(Conflict):  # created by another consumer of this connect meanwhile
            ctx.skr.create(names.SKR_IPRANGE, use.create)
    if use.wait:
        ctx.forget(names.SKR_IPRANGE)
        kind.reconcile(ctx, "", name, kind=registry.get("iprange"), res=names.SKR_IPRANGE)
        ctx.forget(names.SKR_IPRANGE)
        found = ctx.skr.get(names.SKR_IPRANGE, name)
        use = decide(consumer, found) if found is not None else IpRangeUse(None, wait=True)
    if use.kcp_name and not deleting(consumer):
        use = owned(use, ctx.mirror(names.KCP_IPRANGE, use.kcp_name), ctx.kyma)
    return use

