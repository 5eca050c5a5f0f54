"""The AWS RedisInstance flow (``pkg/kcp/provider/aws/redisinstance``): read → the pure plan of
:mod:`tasks.cloud.aws.redisinstance_plan` → ElastiCache / Secrets Manager / EC2 calls → Outcome.

:func:`read` asks :class:`~tasks.cloud.aws.client.ElastiCache` for every piece by its name
(``cm-<kcpName>``); :func:`apply` makes the plan's calls in order. A retryable SDK error (throttling,
5xx, connection) comes back after 10 s without a status change; another refused call is the Error of
its step (``CloudProviderError`` with the original's words), back after 60 s.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import structlog

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws.client import AwsError, AwsRefused, ElastiCache, elasticache_for, is_retryable, user_message
from tasks.cloud.aws.redisinstance_plan import Plan, Read, plan_create, plan_delete, resource_names
from tasks.cloud.providers import RedisInstanceContext
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.aws")

__all__ = ["apply", "delete", "read", "reconcile"]


def read(ec: ElastiCache, ctx: RedisInstanceContext) -> Read:
    """Every AWS piece of ``ctx.obj`` (``None`` for a missing one). Raises :class:`~tasks.cloud.aws.client.AwsError`."""
    n = resource_names(ctx.name)
    group = ec.replication_group(n["group"])
    vpc_id = str(((ctx.iprange or {}).get("status") or {}).get("vpcId") or "")
    security_group = ec.security_group(vpc_id, n["security_group"], f"{ctx.namespace}/{ctx.name}") if vpc_id else None
    return Read(subnet_group=ec.subnet_group(n["subnet_group"]), main=ec.parameter_group(n["parameter_group"]),
                temp=ec.parameter_group(n["temp_parameter_group"]), token=ec.auth_token(n["secret"]),
                user_group=ec.user_group(n["user_group"]), security_group=security_group, group=group,
                members=ec.members([str(m) for m in (group or {}).get("MemberClusters") or []]))


def apply(ec: ElastiCache, plan: Plan) -> Outcome:
    """Make the plan's calls in order; the Outcome they lead to (a refused call's Error or retry)."""
    for call in plan.calls:
        try:
            getattr(ec, call.method)(**call.kwargs)
        except AwsRefused as exc:
            if is_retryable(exc):
                log.info("aws retryable error", redisinstance=plan.run.name, call=call.method, error=str(exc))
                return plan.run.step(requeue_after=plan.t(10))
            log.warning("aws call refused", redisinstance=plan.run.name, call=call.method,
                        error=user_message(exc))
            return plan.failed(call)
    return plan.step


def _turn(ctx: RedisInstanceContext, decide: Callable[[Read], Plan]) -> Outcome:
    spec = ctx.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    try:
        ec = elasticache_for(ctx.settings, account, str(spec.get("region") or ""))
        return apply(ec, decide(read(ec, ctx)))
    except AwsError as exc:
        if is_retryable(exc):
            return StepBuilder(ctx.obj).step(requeue_after=ctx.settings.t(10))
        return StepBuilder(ctx.obj).fail(names.REASON_CLOUD_PROVIDER_ERROR, user_message(exc),
                                         requeue_after=ctx.settings.t(60))


def reconcile(ctx: RedisInstanceContext) -> Outcome:
    """One provisioning turn of the KCP RedisInstance of ``ctx``."""
    return _turn(ctx, lambda found: plan_create(ctx.obj, ctx.scope, ctx.iprange or {}, found,
                                                secrets.token_urlsafe(32), ctx.settings.t))


def delete(ctx: RedisInstanceContext) -> Outcome:
    """One deletion turn of the KCP RedisInstance of ``ctx``."""
    return _turn(ctx, lambda found: plan_delete(ctx.obj, found, ctx.settings.t))
