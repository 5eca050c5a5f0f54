"""The AWS VPC peering flow (``pkg/kcp/provider/aws/vpcpeering``): read → pure plan → calls → Outcome.

Two EC2 clients, both by STS AssumeRole of the peering role (``AWS_PEERING_ROLE_NAME``, default
``CloudManagerPeeringRole``, :func:`~tasks.cloud.aws.client.peering_ec2_for`): the local one in the
Scope's account and region, the remote one in the account and region of the remote KCP Network (the
customer's). :func:`read` gathers the local VPC (by the Scope's ``vpcNetwork`` Name tag) and its route
tables, the connection ``status.id``, the remote VPC and its route tables and the connection
``status.remoteId`` as the customer's account sees it; :mod:`tasks.cloud.aws.vpcpeering_plan` decides;
:func:`apply` makes the calls on their side. The decisions, reasons and messages are the plan module's.

Differences from the original: while deleting, a customer account that cannot be reached any more (role
removed) or a remote Network already gone does not block the deletion: the local side is removed and
the remote parts are skipped (the original retries the remote client forever).
"""

from __future__ import annotations

from typing import Any

import structlog

import tasks.cloud.aws.vpcpeering_plan as p
from kube.toolkit.outcome import Outcome
from tasks.cloud.aws.client import AwsError, Ec2, is_retryable, peering_ec2_for, user_message
from tasks.cloud.providers import VpcPeeringContext
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.aws.vpcpeering")

__all__ = ["apply", "delete", "failure", "read", "reconcile"]

def failure(exc: AwsError) -> p.Failure:
    """A refused AWS request as the plan's plain :class:`Failure`."""
    return p.Failure(code=exc.code, message=exc.message or exc.user, retryable=exc.retryable, not_found=exc.not_found)


def read(local: Ec2, remote: Ec2 | None, obj: dict[str, Any], scope: Any, remote_network: Any) -> p.Read:
    """What the plan needs. A refused read of the remote VPC is ``Read.remote_error``; other refused
    reads raise :class:`~tasks.cloud.aws.client.AwsError`."""
    status = obj.get("status") or {}
    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc = local.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    tables = local.route_tables(str(vpc["VpcId"])) if vpc else []
    peering = local.peering(str(status["id"])) if status.get("id") else None
    if remote is None:
        return p.Read(vpc, tables, peering)
    remote_vpc_id = str(p.remote_reference(remote_network).get("vpcId") or "")
    try:
        remote_vpc = remote.vpc(remote_vpc_id) if remote_vpc_id else None
    except AwsError as exc:
        return p.Read(vpc, tables, peering, remote_error=failure(exc))
    remote_tables = remote.route_tables(remote_vpc_id) if remote_vpc else []
    remote_peering = remote.peering(str(status["remoteId"])) if status.get("remoteId") else None
    return p.Read(vpc, tables, peering, remote_vpc, None if remote_vpc else p.Failure(not_found=True),
                remote_tables, remote_peering)


def apply(local: Ec2, remote: Ec2 | None, plan: p.Plan) -> Outcome:
    """Make the plan's calls in order on their side; the Outcome they lead to."""
    answers: list[Any] = []
    for call in plan.calls:
        side = remote if call.remote else local
        if side is None:
            continue
        try:
            answers.append(getattr(side, call.method)(*call.args))
        except AwsError as exc:
            log.info("aws peering call refused", peering=plan.run.name, call=call.method, error=str(exc))
            return plan.failed(call, failure(exc), answers)
    return plan.done(answers)


def _clients(ctx: VpcPeeringContext) -> tuple[Ec2, Ec2 | None, str, AwsError | None]:
    """The KCP-side client, the customer-side one (``None`` without a remote), the customer's account and
    the non-retryable error that refused the customer-side client (then that client is ``None``).

    A refused KCP-side client, or a retryable refusal of the customer side, is raised (the caller's
    :func:`_refused` tries again in 10 s or with backoff)."""
    spec = ctx.scope.get("spec") or {}
    account = str(((spec.get("scope") or {}).get("aws") or {}).get("accountId") or "")
    local = peering_ec2_for(ctx.settings, account, str(spec.get("region") or ""))
    reference = p.remote_reference(ctx.remote)
    remote_account = str(reference.get("awsAccountId") or "")

    if ctx.remote is None:
        return local, None, remote_account, None
    try:
        remote = peering_ec2_for(ctx.settings, remote_account, str(reference.get("region") or ""))
    except AwsError as exc:
        if is_retryable(exc):
            raise
        return local, None, remote_account, exc
    return local, remote, remote_account, None


def reconcile(ctx: VpcPeeringContext) -> Outcome:
    """One provisioning turn of the KCP VpcPeering of ``ctx``."""
    try:
        local, remote, account, refused = _clients(ctx)
        if refused is not None:
            log.info("aws peering remote client refused", peering=ctx.name, account=account, error=str(refused))
            return p.remote_client_failed(ctx.obj, account, ctx.settings.t)
        found = read(local, remote, ctx.obj, ctx.scope, ctx.remote)
        plan = p.plan_create(ctx.obj, ctx.scope, ctx.remote, found, ctx.settings.t, ctx.settings.peering_network_tag)
        return apply(local, remote, plan)
    except AwsError as exc:
        return _refused(ctx, exc)


def delete(ctx: VpcPeeringContext) -> Outcome:
    """One deletion turn (the finalizer goes once every call was made)."""
    try:
        local, remote, account, refused = _clients(ctx)
        if refused is not None:
            log.warning("aws peering: customer account unreachable, its side is left", peering=ctx.name,
                        account=account, error=str(refused))
        try:
            found = read(local, remote, ctx.obj, ctx.scope, ctx.remote)
        except AwsError as exc:
            if remote is None or is_retryable(exc):
                raise
            found = read(local, None, ctx.obj, ctx.scope, ctx.remote)
            remote = None
        return apply(local, remote, p.plan_delete(ctx.obj, ctx.scope, found, ctx.settings.t))
    except AwsError as exc:
        return _refused(ctx, exc)


def _refused(ctx: VpcPeeringContext, exc: Exception) -> Outcome:
    """A refused read or local client: retryable -> 10 s; else logged and again with backoff."""
    run = StepBuilder(ctx.obj)
    if is_retryable(exc):
        return run.step(requeue_after=ctx.settings.t(10))
    log.warning("aws peering request refused", peering=ctx.name, error=str(exc))
    return run.step(error=f"AWS request refused: {user_message(exc)}")
