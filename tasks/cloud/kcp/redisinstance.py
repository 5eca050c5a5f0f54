"""The ``cloud-redisinstance`` controller: KCP RedisInstances into the providers' managed Redis
(``pkg/kcp/redisinstance``).

The common part of an IpRange's consumer (:mod:`tasks.cloud.kcp.consumer`: the Scope, the IpRange, the
finalizer; the IpRange waited for 10 s at a time: the provider needs its subnets / range), then the
provider's turn (read → pure plan → provider calls, :mod:`tasks.cloud.providers`) whose
:class:`~kube.toolkit.Outcome` is carried out: ``reconcile_redisinstance`` or, deleting,
``delete_redisinstance`` (its ``remove_finalizer`` once every cloud piece is gone).
"""

from __future__ import annotations

from tasks.cloud import names
from tasks.cloud.kcp import consumer
from tasks.cloud.kcp.consumer import REASON_INVALID_IPRANGE_REFERENCE, ConsumerKind
from tasks.cloud.providers import RedisInstanceContext
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "reconcile"]

KIND: ConsumerKind[RedisInstanceContext] = ConsumerKind(
    names.REDIS_INSTANCE, RedisInstanceContext, lambda p, ctx: p.reconcile_redisinstance(ctx),
    lambda p, ctx: p.delete_redisinstance(ctx), wait_ready=10)


def reconcile(key: Key) -> Result:
    """Reconcile the KCP RedisInstance ``key``."""
    return consumer.reconcile(key, KIND)
