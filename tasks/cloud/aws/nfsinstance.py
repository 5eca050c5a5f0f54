"""The AWS NfsInstance flow's I/O: read through :class:`~tasks.cloud.aws.client.Efs`, plan
(:mod:`tasks.cloud.aws.nfsinstance_plan`, pure), make the planned calls, answer the Outcome.

A refused call: retryable (throttling, 5xx) -> come back after 10 s without touching the status; else
the call's Error (``FailedCreatingFileSystem`` ..., the SDK's message) and its retry (or backoff).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws.client import AwsError, AwsRefused, Efs, efs_for, is_retryable, user_message
from tasks.cloud.aws.nfsinstance_plan import Call, Plan, Read, plan_create, plan_delete
from tasks.cloud.providers import NfsInstanceContext
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.aws")

__all__ = ["apply", "delete", "read", "reconcile"]


def read(efs: Efs, obj: Mapping[str, Any], iprange: Mapping[str, Any] | None) -> Read:
    """The security group, the file system, its mount targets and the VPCs of foreign mount-target
    subnets. Raises :class:`~tasks.cloud.aws.client.AwsError`."""
    meta = obj["metadata"]
    ip_status = (iprange or {}).get("status") or {}
    group = efs.security_group(str(ip_status.get("vpcId") or ""), str(meta["name"]),
                               f"{meta.get('namespace', '')}/{meta['name']}")
    fs = efs.file_system(str(meta["name"]))
    mts = efs.mount_targets(str(fs["FileSystemId"])) if fs is not None else []
    ours = {str(s.get("id")) for s in ip_status.get("subnets") or []}
    foreign = sorted({str(m.get("SubnetId")) for m in mts if str(m.get("SubnetId")) not in ours})
    return Read(group, fs, mts, efs.subnet_vpcs(foreign) if foreign else {})


def _refused(run: StepBuilder, call: Call | None, exc: Exception, t: Callable[[float], float]) -> Outcome:
    if is_retryable(exc):
        log.info("aws retryable error", nfsinstance=run.name, error=str(exc))
        return run.step(requeue_after=t(10))
    reason = call.reason if call else names.REASON_CLOUD_PROVIDER_ERROR
    message = f"{call.prefix if call else ''}{user_message(exc)}"
    if call is not None and call.retry is not None:
        return run.fail(reason, message, requeue_after=call.retry, exclusive=False)
    return run.fail(reason, message, backoff=True)


def apply(efs: Efs, plan: Plan, t: Callable[[float], float]) -> Outcome:
    """Make the plan's calls in order; its Outcome, or a refused call's."""
    for call in plan.calls:
        try:
            getattr(efs, call.method)(*call.args)
        except AwsRefused as exc:
            return _refused(plan.run, call, exc, t)
    return plan.step


def _client(ctx: NfsInstanceContext) -> Efs:
    spec = ctx.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return efs_for(ctx.settings, account, str(spec.get("region") or ""))


def _turn(ctx: NfsInstanceContext, plan: Callable[[Read], Plan]) -> Outcome:
    try:
        efs = _client(ctx)
        return apply(efs, plan(read(efs, ctx.obj, ctx.iprange)), ctx.settings.t)
    except AwsError as exc:
        return _refused(StepBuilder(ctx.obj), None, exc, ctx.settings.t)


def reconcile(ctx: NfsInstanceContext) -> Outcome:
    """One provisioning turn of the KCP NfsInstance of ``ctx``."""
    return _turn(ctx, lambda found: plan_create(ctx.obj, ctx.scope, ctx.iprange or {}, found, ctx.settings.t,
                                                ctx.settings.efs_capacity_check_interval))


def delete(ctx: NfsInstanceContext) -> Outcome:
    """One deletion turn."""
    return _turn(ctx, lambda found: plan_delete(ctx.obj, found, ctx.settings.t))
