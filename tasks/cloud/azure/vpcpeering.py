"""The KCP VpcPeering on Azure: the I/O shell around :mod:`tasks.cloud.azure.vpcpeering_plan` (read →
pure plan → the planned calls → Outcome; the flow, its messages and the fixes are documented there), and
the seeding of a customer's network for local runs and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kube.toolkit.outcome import Outcome
from tasks.cloud.azure.client import AzureApiError
from tasks.cloud.azure.vpcpeering_plan import (
    ERROR_MESSAGES,
    REASON_ERROR,
    UNTAGGED_NETWORK_TYPES,
    Plan,
    Read,
    Timing,
    VNet,
    VpcPeeringClient,
    _rg_vnet,
    local_peering_name,
    plan_create,
    plan_delete,
)
from tasks.cloud.calls import attempt, marked_deleting
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.azure")

__all__ = ["ERROR_MESSAGES", "apply", "read", "reconcile", "seed_vnet"]


def _try(fn: Callable[..., Any], *args: Any) -> tuple[Any, AzureApiError | None]:
    return attempt(AzureApiError, fn, *args)


def read(clients: Mapping[str, VpcPeeringClient], obj: Mapping[str, Any], local: VNet | None, remote: VNet | None,
         remote_type: str = "", client_error: str = "") -> Read:
    """Everything one turn may need; ``clients``: ``local`` (and ``peering``, ``remote`` unless
    ``client_error`` says why they could not be built). Failures are kept in the :class:`Read`."""
    status = obj.get("status") or {}
    details = (obj.get("spec") or {}).get("details") or {}
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    local_peering = local_error = remote_peering = remote_error = remote_vnet = remote_vnet_error = None
    if local is not None:
        rg, vnet = _rg_vnet(str(status.get("id") or ""), local)
        local_peering, local_error = _try(clients["local"].get_peering, rg, vnet, local_peering_name(obj))
        if local_error is not None and not local_error.not_found:
            log.warning("azure local peering not loaded", vpcpeering=(obj.get("metadata") or {}).get("name"),
                        error=str(local_error))
    peering_name = str(details.get("peeringName") or "")
    if remote is not None and not client_error and peering_name:
        rg, vnet = _rg_vnet(str(status.get("remoteId") or ""), remote)
        remote_peering, remote_error = _try(clients["remote"].get_peering, rg, vnet, peering_name)
        if deleting and remote_error is not None:
            remote_error = None  # ignored while deleting, as the original
        if not deleting and remote_peering is None and remote_error is None \
                and remote_type not in UNTAGGED_NETWORK_TYPES:
            remote_vnet, remote_vnet_error = _try(clients["remote"].get_vnet, remote.resource_group, remote.name)
    return Read(local_peering=local_peering, local_error=local_error, remote_peering=remote_peering,
                remote_error=remote_error, remote_vnet=remote_vnet, remote_vnet_error=remote_vnet_error,
                client_error=client_error)


def apply(clients: Mapping[str, VpcPeeringClient], plan: Plan) -> Outcome:
    """Make the plan's calls in order; the Outcome they lead to."""
    for call in plan.calls:
        try:
            getattr(clients[call.client], call.method)(*call.args, **call.kwargs)
        except AzureApiError as err:
            log.warning("azure peering call refused", vpcpeering=plan.run.name, call=call.kind, status=err.status,
                        code=err.code, error=str(err))
            step = plan.failed(call, err)
            if step is not None:
                return step
    return plan.done()


def reconcile(clients: Mapping[str, VpcPeeringClient], obj: Mapping[str, Any], scope: Mapping[str, Any],
              local_network: Mapping[str, Any] | None, remote_network: Mapping[str, Any] | None, t: Timing,
              network_tag: str = "", client_error: str = "", deleting: bool | None = None) -> Outcome:
    """One turn of the KCP VpcPeering ``obj`` on Azure (read → :func:`plan_create` / :func:`plan_delete`
    → the calls). ``local_network`` / ``remote_network``: the KCP Networks of ``details``; ``deleting``:
    remove it (default: whether ``obj`` has a ``deletionTimestamp``)."""
    local, remote = VNet.of(local_network), VNet.of(remote_network)
    obj = marked_deleting(obj, deleting)
    remote_type = str(((remote_network or {}).get("status") or {}).get("networkType")
                      or ((remote_network or {}).get("spec") or {}).get("type") or "")
    found = read(clients, obj, local, remote, remote_type, client_error)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return apply(clients, plan_delete(obj, local, remote, found, t))
    if local is None or remote is None:
        missing = "local" if local is None else "remote"
        return StepBuilder(obj).fail(REASON_ERROR, f"The {missing} network names no Azure VNet")
    return apply(clients, plan_create(obj, scope, local, remote, remote_type, found, t, network_tag))


def seed_vnet(client: Any, resource_group: str, name: str, location: str, cidr: str,
              tags: Mapping[str, str] | None = None) -> str:
    """Create a resource group and a VNet with address space ``cidr`` and ``tags`` (idempotent ARM PUTs) —
    the customer's VNet of an AzureVpcPeering (tag key = the shoot name), in the customer's subscription
    (``client``'s). Seeds local runs (``reconcilery up``) and tests through the SDK. Returns its id."""
    client.create_resource_group(resource_group, location)
    vnet = client.create_vnet(resource_group, name, location, cidr, tags=dict(tags or {})) or {}
    return str(vnet.get("id") or "")
