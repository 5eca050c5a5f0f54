"""The KCP VpcPeering on GCP: the I/O around :mod:`tasks.cloud.gcp.vpcpeering_plan` (the flow, its
messages and the fixes are documented there), declared as the kind's ``gcp`` provider (:data:`SIDE`): the
Compute client of a turn (one service account for both sides), the reads of :func:`read`; and the seeding
of a customer's network for local runs and tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.calls import attempt
from tasks.cloud.gcp.clients import compute
from tasks.cloud.gcp.scope import kyma_network_reference
from tasks.cloud.gcp.vpcpeering_plan import (
    Network,
    Read,
    VpcPeeringClient,
    local_peering_name,
    owned,
    plan_create,
    plan_delete,
)
from tasks.cloud.registry import ProviderSide, Turn
from tasks.cloud.scope import kyma_network

__all__ = ["SIDE", "read", "seed_network"]


def _networks(turn: Turn) -> tuple[Network | None, Network | None]:
    """The GCP networks the local and remote KCP Networks name (``None``: names none; the remote one: gone).
    A local Network already gone (a runtime being deleted) is the shoot's network of the Scope, so the
    local peering is still removed and the remote one still compared with it (ownership)."""
    local = getattr(turn.seen, "local", None)
    return (Network.of(local) if local is not None else kyma_network(turn.scope, kyma_network_reference, Network.of),
            Network.of(getattr(turn.seen, "remote", None)))


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """Everything one turn may need (refusals kept in the :class:`Read`; fencing errors pass through)."""
    client: VpcPeeringClient = clients[""]
    obj = turn.obj
    local, remote = _networks(turn)
    status = obj.get("status") or {}
    details = ((obj.get("spec") or {}).get("details") or {})
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    remote_op = remote_op_error = local_op = local_op_error = None
    remote_peering = remote_error = local_peering = local_error = None
    tag_keys = tags_error = None
    if remote is not None:
        op_name = str(status.get("remotePeeringOperation") or "")
        if not deleting and not status.get("remoteId") and op_name:
            remote_op, remote_op_error = attempt(client.get_global_operation, remote.project, op_name)
        remote_peering, remote_error = attempt(client.get_peering, remote.project, remote.name,
                                            str(details.get("peeringName") or ""))
    if local is not None:
        op_name = str(status.get("localPeeringOperation") or "")
        if not deleting and not status.get("id") and op_name:
            local_op, local_op_error = attempt(client.get_global_operation, local.project, op_name)
        local_peering, local_error = attempt(client.get_peering, local.project, local.name,
                                             local_peering_name(turn.name))
    # the tags, unless the remote peering is this object's (the plan checks them for any other)
    if not deleting and remote is not None and remote_error is None \
            and not owned(str(status.get("remoteId") or ""), remote_peering, local):
        tag_keys, tags_error = attempt(client.network_tag_keys, remote.project, remote.name)
    return Read(remote_op=remote_op, remote_op_error=remote_op_error, remote_peering=remote_peering,
                remote_error=remote_error, local_op=local_op, local_op_error=local_op_error,
                local_peering=local_peering, local_error=local_error, tag_keys=tag_keys, tags_error=tags_error)


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


#: The kind's ``gcp`` provider: the Compute client of the process (:func:`~tasks.cloud.gcp.clients.compute`).
SIDE = ProviderSide(
    clients=lambda turn: {"": compute(turn.settings)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, *_networks(turn), found, turn.t),
    delete=lambda found, turn: plan_delete(turn.obj, *_networks(turn), found, turn.t))
