"""The GCP NfsInstance flow's I/O: read through :class:`~tasks.cloud.gcp.client.FilestoreClient`, plan
(:mod:`tasks.cloud.gcp.nfsinstance_plan`, pure), make the planned call, answer the Outcome. A refused call
or read is an Error ``GCPError`` with the API's message (429 and 5xx: come back without one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud.gcp.client import FilestoreClient, GcpApiError
from tasks.cloud.gcp.nfsinstance_plan import REASON_GCP_ERROR, Plan, Read, instance_name, plan_create, plan_delete
from tasks.cloud.step import StepBuilder

__all__ = ["apply", "delete", "read", "reconcile"]


def read(client: FilestoreClient, obj: Mapping[str, Any], scope: Mapping[str, Any]) -> Read:
    """The instance and the tracked operation. Raises :class:`GcpApiError`."""
    op_name = str((obj.get("status") or {}).get("opIdentifier") or "")
    return Read(client.get_instance(instance_name(obj, scope)), client.get_operation(op_name) if op_name else None)


def _refused(run: StepBuilder, exc: GcpApiError, retry: float) -> Outcome:
    if exc.status == 429 or exc.status >= 500 or exc.status == 0:
        return run.step(requeue_after=retry)
    return run.fail(REASON_GCP_ERROR, exc.message, backoff=True)


def apply(client: FilestoreClient, plan: Plan, retry: float) -> Outcome:
    """Make the plan's call; its Outcome with the new operation in ``status.opIdentifier``."""
    if plan.call is None:
        return plan.step
    try:
        operation = getattr(client, plan.call.method)(*plan.call.args)
    except GcpApiError as exc:
        return _refused(plan.run, exc, retry)
    plan.run.set(opIdentifier=str(operation))
    return plan.run.step(requeue_after=plan.step.requeue_after, remove_finalizer=plan.step.remove_finalizer)


def _turn(client: FilestoreClient, obj: Mapping[str, Any], scope: Mapping[str, Any], retry: float,
          plan: Callable[[Read], Plan]) -> Outcome:
    try:
        return apply(client, plan(read(client, obj, scope)), retry)
    except GcpApiError as exc:
        return _refused(StepBuilder(obj), exc, retry)


def reconcile(client: FilestoreClient, obj: Mapping[str, Any], scope: Mapping[str, Any],
              iprange: Mapping[str, Any], t: Callable[[float], float], retry: float) -> Outcome:
    """One provisioning turn of the KCP NfsInstance ``obj``."""
    return _turn(client, obj, scope, retry, lambda found: plan_create(obj, scope, iprange, found, t, retry))


def delete(client: FilestoreClient, obj: Mapping[str, Any], scope: Mapping[str, Any],
           t: Callable[[float], float], retry: float) -> Outcome:
    """One deletion turn."""
    return _turn(client, obj, scope, retry, lambda found: plan_delete(obj, scope, found, t, retry))
