"""The AWS VPC peering flow's I/O (``pkg/kcp/provider/aws/vpcpeering``): the two EC2 clients of a turn and
the reads of :func:`read`; the decisions are the pure plans of :mod:`tasks.cloud.aws.vpcpeering_plan`,
declared as the kind's ``aws`` provider (:data:`SIDE`).

Two EC2 clients, both by STS AssumeRole of the peering role (``AWS_PEERING_ROLE_NAME``, default
``CloudManagerPeeringRole``, :func:`~tasks.cloud.aws.client.peering_ec2_for`): the local one (``""``) in
the Scope's account and region, the remote one (``"remote"``) in the account and region of the remote KCP
Network (the customer's). A remote client that cannot be built for a definite reason (the role removed)
is left out, and :func:`read` reports it as part of what it found (the plans decide: an Error while
provisioning, the remote side skipped while deleting); a refused local client or a transient refusal is
the flow's :func:`~tasks.cloud.aws.vpcpeering_plan.read_failed`.

:func:`read` gathers the local VPC (by the Scope's ``vpcNetwork`` Name tag) and its route tables, the
connection ``status.id``, the remote VPC and its route tables and the connection ``status.remoteId`` as
the customer's account sees it; the executor makes the plan's calls on their side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from tasks.cloud.aws.client import AwsError, Ec2, peering_ec2_for
from tasks.cloud.aws.vpcpeering_plan import Read, plan_create, plan_delete, read_failed, remote_reference
from tasks.cloud.registry import ProviderSide, Turn

log = structlog.get_logger("tasks.cloud.aws.vpcpeering")

__all__ = ["SIDE", "clients", "read"]


def _remote_network(turn: Turn) -> Mapping[str, Any] | None:
    """The remote KCP Network the KCP read found (``None``: gone)."""
    return getattr(turn.seen, "remote", None)


def clients(turn: Turn) -> dict[str, Any]:
    """The KCP-side EC2 client (``""``) and, with a remote Network, the customer-side one (``"remote"``;
    left out when its account refused it for good). Raises :class:`~tasks.cloud.aws.client.AwsError`
    for a refused KCP-side client or a transient refusal of the customer's."""
    spec = turn.scope.get("spec") or {}
    account = str(((spec.get("scope") or {}).get("aws") or {}).get("accountId") or "")
    found: dict[str, Any] = {"": peering_ec2_for(turn.settings, account, str(spec.get("region") or ""))}
    remote = _remote_network(turn)
    if remote is None:
        return found
    reference = remote_reference(remote)
    remote_account = str(reference.get("awsAccountId") or "")
    try:
        found["remote"] = peering_ec2_for(turn.settings, remote_account, str(reference.get("region") or ""))
    except AwsError as exc:
        if exc.retryable:
            raise
        log.info("aws peering: the customer's account refused its client", peering=turn.name,
                 account=remote_account, error=str(exc))
    return found


def read(found: Mapping[str, Any], turn: Turn) -> Read:
    """What the plans need. A refused read of the remote VPC is ``Read.remote_error``, of its route tables
    or connection ``Read.remote_read_error``; a missing customer-side client ``Read.remote_unreachable``.
    Raises :class:`~tasks.cloud.aws.client.AwsError` for a refused local read."""
    local: Ec2 = found[""]
    status = turn.obj.get("status") or {}
    aws = ((turn.scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc = local.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    tables = local.route_tables(str(vpc["VpcId"])) if vpc else []
    peering = local.peering(str(status["id"])) if status.get("id") else None
    remote: Ec2 | None = found.get("remote")
    if remote is None:
        return Read(vpc, tables, peering, remote_unreachable=_remote_network(turn) is not None)
    remote_vpc_id = str(remote_reference(_remote_network(turn)).get("vpcId") or "")
    try:
        remote_vpc = remote.vpc(remote_vpc_id) if remote_vpc_id else None
    except AwsError as exc:
        return Read(vpc, tables, peering, remote_error=exc.failure)
    try:
        remote_tables = remote.route_tables(remote_vpc_id) if remote_vpc else []
        remote_peering = remote.peering(str(status["remoteId"])) if status.get("remoteId") else None
    except AwsError as exc:
        return Read(vpc, tables, peering, remote_read_error=exc.failure)
    return Read(vpc, tables, peering, remote_vpc, None, remote_tables, remote_peering)


#: The kind's ``aws`` provider.
SIDE = ProviderSide(
    clients=clients, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, _remote_network(turn), found, turn.t,
                                           turn.settings.peering_network_tag),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t),
    read_failed=lambda failure, turn: read_failed(failure, turn.t))
