"""The KCP VpcPeering on Azure: the I/O around :mod:`tasks.cloud.azure.vpcpeering_plan` (the flow, its
messages and the fixes are documented there), declared as the kind's ``azure`` provider (:data:`SIDE`):
the three ARM clients of a turn (:func:`clients`), the reads of :func:`read`; and the seeding of a
customer's network for local runs and tests.

Clients, as the original's, with the peering credentials (``AZURE_PEERING_CLIENT_ID`` /
``AZURE_PEERING_CLIENT_SECRET``, else the default ones: :func:`tasks.cloud.azure.clients.peering`):
``local`` (the Scope's subscription and tenant), ``peering`` (the same, with the remote tenant as
auxiliary tenant: creating a peering needs access to both VNets) and ``remote`` (the remote VNet's
subscription and tenant, the local tenant as auxiliary when they differ). A local client that cannot be
built is the plan's :func:`~tasks.cloud.azure.vpcpeering_plan.client_failed`; remote ones that cannot be
built are left out, and :func:`read` reports it (``Read.client_error``) for the plans to decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kube.refusal import Failure, Refusal
from tasks.cloud.azure.clients import peering, scope_azure
from tasks.cloud.azure.scope import kyma_network_reference
from tasks.cloud.azure.vpcpeering_plan import (
    CLIENT_FAILED,
    ERROR_MESSAGES,
    UNTAGGED_NETWORK_TYPES,
    Read,
    VNet,
    VpcPeeringClient,
    _rg_vnet,
    local_peering_name,
    network_type,
    owned,
    plan_create,
    plan_delete,
    read_failed,
)
from tasks.cloud.calls import attempt
from tasks.cloud.registry import ProviderSide, Turn
from tasks.cloud.scope import kyma_network

log = structlog.get_logger("tasks.cloud.azure")

__all__ = ["ERROR_MESSAGES", "SIDE", "ClientFailed", "clients", "read", "seed_vnet"]

#: ``Read.client_error`` when the remote clients could not be built (the reason is logged).
REMOTE_CLIENTS_FAILED = "the remote clients could not be built"


class ClientFailed(Refusal):
    """The local ARM client could not be built (unusable credentials): the user's words."""

    @property
    def failure(self) -> Failure:
        """A definite refusal of code :data:`~tasks.cloud.azure.vpcpeering_plan.CLIENT_FAILED`."""
        return Failure("refused", code=CLIENT_FAILED, message=str(self), text=str(self))


def _vnets(turn: Turn) -> tuple[VNet | None, VNet | None]:
    """The VNets the local and remote KCP Networks name (``None``: names none; the remote one: gone). A
    local Network already gone (a runtime being deleted) is the shoot's VNet of the Scope, so the local
    peering is still deleted and the remote one still compared with it (ownership)."""
    local = getattr(turn.seen, "local", None)
    return (VNet.of(local) if local is not None else kyma_network(turn.scope, kyma_network_reference, VNet.of),
            VNet.of(getattr(turn.seen, "remote", None)))


def clients(turn: Turn) -> dict[str, Any]:
    """``local`` and, with a remote VNet, ``peering`` and ``remote`` (left out when they cannot be built).
    Raises :class:`ClientFailed` when the local one cannot be built."""
    azure = scope_azure(turn.scope)
    local_tenant = str(azure.get("tenantId") or turn.settings.azure_tenant_id or "")
    subscription = str(azure.get("subscriptionId") or "")
    try:
        found: dict[str, Any] = {"local": peering(turn.settings, subscription, local_tenant)}
    except ValueError as exc:
        raise ClientFailed(f"Failed creating Azure client for tenant {local_tenant} subscription "
                           f"{azure.get('subscriptionId')}: {exc}") from exc
    remote = _vnets(turn)[1]
    if remote is None:
        return found
    remote_tenant = remote.tenant or local_tenant
    try:
        both = peering(turn.settings, subscription, local_tenant, (remote.tenant,) if remote.tenant else ())
        theirs = peering(turn.settings, remote.subscription, remote_tenant,
                         (local_tenant,) if remote_tenant != local_tenant else ())
    except ValueError as exc:
        log.warning("azure peering: the remote clients could not be built", vpcpeering=turn.name, error=str(exc))
        return found
    return {**found, "peering": both, "remote": theirs}


def read(found: Mapping[str, Any], turn: Turn) -> Read:
    """Everything one turn may need; refusals are kept in the :class:`Read` (``client_error``: the remote
    clients are missing)."""
    obj = turn.obj
    local, remote = _vnets(turn)
    remote_type = network_type(getattr(turn.seen, "remote", None))
    client_error = REMOTE_CLIENTS_FAILED if remote is not None and "remote" not in found else ""
    status = obj.get("status") or {}
    details = (obj.get("spec") or {}).get("details") or {}
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    local_peering = local_error = remote_peering = remote_error = remote_vnet = remote_vnet_error = None
    if local is not None:
        client: VpcPeeringClient = found["local"]
        rg, vnet = _rg_vnet(str(status.get("id") or ""), local)
        local_peering, local_error = attempt(client.get_peering, rg, vnet, local_peering_name(obj))
        if local_error is not None and not local_error.not_found:
            log.warning("azure local peering not loaded", vpcpeering=turn.name, error=str(local_error))
    peering_name = str(details.get("peeringName") or "")
    if remote is not None and not client_error and peering_name:
        theirs: VpcPeeringClient = found["remote"]
        rg, vnet = _rg_vnet(str(status.get("remoteId") or ""), remote)
        remote_peering, remote_error = attempt(theirs.get_peering, rg, vnet, peering_name)
        if deleting and remote_error is not None:
            remote_error = None  # ignored while deleting, as the original
        # the VNet's tags, unless the remote peering is this object's (the plan checks them for any other)
        if not deleting and remote_error is None and remote_type not in UNTAGGED_NETWORK_TYPES \
                and not owned(str(status.get("remoteId") or ""), remote_peering, local):
            remote_vnet, remote_vnet_error = attempt(theirs.get_vnet, remote.resource_group, remote.name)
    return Read(local_peering=local_peering, local_error=local_error, remote_peering=remote_peering,
                remote_error=remote_error, remote_vnet=remote_vnet, remote_vnet_error=remote_vnet_error,
                client_error=client_error)


def seed_vnet(client: Any, resource_group: str, name: str, location: str, cidr: str,
              tags: Mapping[str, str] | None = None) -> str:
    """Create a resource group and a VNet with address space ``cidr`` and ``tags`` (idempotent ARM PUTs) —
    the customer's VNet of an AzureVpcPeering (tag key = the shoot name), in the customer's subscription
    (``client``'s). Seeds local runs (``reconcilery up``) and tests through the SDK. Returns its id."""
    client.create_resource_group(resource_group, location)
    vnet = client.create_vnet(resource_group, name, location, cidr, tags=dict(tags or {})) or {}
    return str(vnet.get("id") or "")


#: The kind's ``azure`` provider.
SIDE = ProviderSide(
    clients=clients, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, *_vnets(turn),
                                           network_type(getattr(turn.seen, "remote", None)), found, turn.t,
                                           turn.settings.peering_network_tag),
    delete=lambda found, turn: plan_delete(turn.obj, *_vnets(turn), found, turn.t),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
