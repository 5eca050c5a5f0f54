"""The AWS IpRange flow's I/O (``pkg/kcp/provider/aws/iprange/v2``): read → the pure plan of
:mod:`tasks.cloud.aws.iprange_plan` → EC2 calls → Outcome.

:func:`read` asks :class:`~tasks.cloud.aws.client.Ec2` for the VPC and its subnets; the plan decides
(every reason, message and requeue is the plan module's); :func:`apply` makes the planned calls in order
through :func:`tasks.cloud.calls.make_calls`. A refused call or read reaches the plan as its plain
:class:`~tasks.cloud.aws.iprange_plan.Failure` (:func:`failure`): retryable SDK errors come back after
10 s without an Error; others write an Error condition and back off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

import tasks.cloud.aws.iprange_plan as p
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws.client import AwsError, AwsRefused, Ec2, ec2_for
from tasks.cloud.calls import make_calls
from tasks.cloud.providers import IpRangeContext

log = structlog.get_logger("tasks.cloud.aws")

__all__ = ["apply", "delete", "failure", "read", "reconcile"]


def failure(exc: AwsError, name: str = "") -> p.Failure:
    """A refused AWS request (of the IpRange ``name``) as the plan's plain :class:`Failure`: the user's
    words (:func:`~tasks.cloud.aws.client.user_message`) and whether it is retryable."""
    if exc.retryable:
        log.info("aws retryable error", iprange=name, error=str(exc))
    return p.Failure(status=exc.status, message=exc.user, text=str(exc), retryable=exc.retryable)


def read(ec2: Ec2, obj: Mapping[str, Any], scope: Mapping[str, Any]) -> p.Read:
    """The VPC (by ``status.vpcId``, else by the Scope's VPC name) and its subnets. Raises
    :class:`~tasks.cloud.aws.client.AwsError`."""
    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc_id = str((obj.get("status") or {}).get("vpcId") or "")
    vpc = ec2.vpc(vpc_id) if vpc_id else ec2.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    return p.Read(vpc, ec2.subnets(vpc["VpcId"]) if vpc is not None else [])


def apply(ec2: Ec2, plan: p.Plan) -> Outcome:
    """Make the plan's calls in order; the Outcome they lead to (a refused call's Error or retry). A call
    that got no answer raises :class:`~tasks.cloud.aws.client.AwsError`."""
    return make_calls(ec2, plan, AwsRefused, lambda exc: failure(exc, plan.run.name))


def _client(ctx: IpRangeContext) -> Ec2:
    spec = ctx.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return ec2_for(ctx.settings, account, str(spec.get("region") or ""))


def _turn(ctx: IpRangeContext, plan: Callable[[p.Read], p.Plan], reason: str) -> Outcome:
    try:
        ec2 = _client(ctx)
        return apply(ec2, plan(read(ec2, ctx.obj, ctx.scope)))
    except AwsError as exc:
        return p.read_failed(ctx.obj, failure(exc, ctx.name), reason, ctx.settings.t)


def reconcile(ctx: IpRangeContext) -> Outcome:
    """One provisioning turn of the KCP IpRange of ``ctx`` (read → :func:`~tasks.cloud.aws.iprange_plan.plan_create`
    → calls)."""
    return _turn(ctx, lambda found: p.plan_create(ctx.obj, ctx.scope, found, ctx.settings.t),
                 names.REASON_CLOUD_PROVIDER_ERROR)


def delete(ctx: IpRangeContext) -> Outcome:
    """One deletion turn (read → :func:`~tasks.cloud.aws.iprange_plan.plan_delete` → calls)."""
    return _turn(ctx, lambda found: p.plan_delete(ctx.obj, found, ctx.settings.t), names.REASON_UNKNOWN)
