"""The KCP VpcPeering on GCP: the I/O shell around :mod:`tasks.cloud.gcp.vpcpeering_plan` (read →
pure plan → the planned calls → Outcome; the flow, its messages and the fixes are documented there), and
the seeding of a customer's network for local runs and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import attempt, marked_deleting
from tasks.cloud.gcp.client import GcpApiError
from tasks.cloud.gcp.vpcpeering_plan import (
    REASON_ERROR,
    STATE_DISCONNECTED,
    Network,
    Plan,
    Read,
    Timing,
    VpcPeeringClient,
    local_peering_name,
    plan_create,
    plan_delete,
)
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.gcp")

__all__ = ["apply", "read", "reconcile", "seed_network"]


def _try(fn: Callable[..., Any], *args: Any) -> tuple[Any, GcpApiError | None]:
    return attempt(GcpApiError, fn, *args)


def read(client: VpcPeeringClient, obj: Mapping[str, Any], local: Network | None, remote: Network | None) -> Read:
    """Everything one turn may need (failures kept in the :class:`Read`; fencing errors pass through)."""
    status = obj.get("status") or {}
    details = ((obj.get("spec") or {}).get("details") or {})
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    name = str((obj.get("metadata") or {}).get("name") or "")
    remote_op = remote_op_error = local_op = local_op_error = None
    remote_peering = remote_error = local_peering = local_error = None
    tag_keys = tags_error = None
    if remote is not None:
        op_name = str(status.get("remotePeeringOperation") or "")
        if not deleting and not status.get("remoteId") and op_name:
            remote_op, remote_op_error = _try(client.get_global_operation, remote.project, op_name)
        remote_peering, remote_error = _try(client.get_peering, remote.project, remote.name,
                                            str(details.get("peeringName") or ""))
    if local is not None:
        op_name = str(status.get("localPeeringOperation") or "")
        if not deleting and not status.get("id") and op_name:
            local_op, local_op_error = _try(client.get_global_operation, local.project, op_name)
        local_peering, local_error = _try(client.get_peering, local.project, local.name, local_peering_name(name))
    if not deleting and remote is not None and remote_peering is None and remote_error is None:
        tag_keys, tags_error = _try(client.network_tag_keys, remote.project, remote.name)
    return Read(remote_op=remote_op, remote_op_error=remote_op_error, remote_peering=remote_peering,
                remote_error=remote_error, local_op=local_op, local_op_error=local_op_error,
                local_peering=local_peering, local_error=local_error, tag_keys=tag_keys, tags_error=tags_error)


def apply(client: VpcPeeringClient, plan: Plan) -> Outcome:
    """Make the plan's call (if any); the Outcome it leads to."""
    if plan.call is None:
        return plan.done()
    try:
        answer = getattr(client, plan.call.method)(*plan.call.args, **plan.call.kwargs)
    except GcpApiError as err:
        log.warning("gcp peering call refused", vpcpeering=plan.run.name, call=plan.call.kind, status=err.status,
                    error=err.message)
        return plan.failed(err)
    return plan.done(answer)


def reconcile(client: VpcPeeringClient, obj: Mapping[str, Any], scope: Mapping[str, Any],
              local_network: Mapping[str, Any] | None, remote_network: Mapping[str, Any] | None, t: Timing,
              network_tag: str = "", deleting: bool | None = None) -> Outcome:
    """One turn of the KCP VpcPeering ``obj`` on GCP (read → :func:`plan_create` / :func:`plan_delete` →
    the call). ``local_network`` / ``remote_network``: the KCP Networks of ``details``; ``deleting``:
    remove it (default: whether ``obj`` has a ``deletionTimestamp``)."""
    local, remote = Network.of(local_network), Network.of(remote_network)
    obj = marked_deleting(obj, deleting)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return apply(client, plan_delete(obj, local, remote, read(client, obj, local, remote), t))
    if local is None or remote is None:
        missing = "local" if local is None else "remote"
        return StepBuilder(obj).fail(REASON_ERROR, f"The {missing} network names no GCP project and network",
                                     state=STATE_DISCONNECTED)
    return apply(client, plan_create(obj, scope, local, remote, read(client, obj, local, remote), t, network_tag))


def seed_network(client: Any, project: str, name: str, tag_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """Create the VPC network ``project/name`` when missing (custom mode, waited for) and bind a tag
    ``<project>/<key>/true`` for each of ``tag_keys`` — what a customer does before ordering a
    GcpVpcPeering (tag key = the shoot name), and what Gardener did for the shoot's network. Seeds
    local runs (``reconcilery up``) and tests through the SDKs. Returns the network."""
    if client.get_network(project, name) is None:
        client.insert_network(project, name, description="seeded by reconcilery", wait=True)
    for key in tag_keys:
        if f"{project}/{key}" not in client.network_tag_keys(project, name):
            client.tag_network(project, name, key)
    return dict(client.get_network(project, name) or {})
