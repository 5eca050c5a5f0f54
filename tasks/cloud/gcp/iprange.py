"""The KCP IpRange on GCP: one reconcile step of the original's GCP provider flow
(``pkg/kcp/provider/gcp/iprange/v3``, reference notes §5.6).

Contract::

    step = reconcile(iprange, scope, client)          # -> kube.toolkit.Step

- ``iprange``: the KCP ``cloud-control.kyma-project.io/v1beta1`` IpRange as a dict (``metadata.name``,
  ``metadata.deletionTimestamp``, ``spec.cidr``, ``spec.remoteRef.name``, ``spec.options.gcp.purpose``,
  ``status``). The common part of the KCP IpRange reconciler (notes §5.3: Scope, finalizer, CIDR
  allocation, network, delete-while-used) runs before; this step needs ``status.cidr`` or ``spec.cidr``.
- ``scope``: the KCP Scope as a dict; ``spec.scope.gcp.project`` and ``spec.scope.gcp.vpcNetwork``.
- ``client``: a :class:`tasks.cloud.gcp.client.GcpClient` (or anything with its methods).

The step does at most one cloud write, then answers a :class:`Step`: the status merge patch to write
(``state``, ``cidr``, ``id``, ``opIdentifier``, ``conditions``), when to come back, and on deletion
whether the finalizer may go. The controller carries it out (:func:`kube.toolkit.carry_out`) and
returns ``step.as_result()``.

Flow, as the original's:

1. Pending operation (``status.opIdentifier``): ``status.state`` tells which API owns it —
   ``SyncPSAConnection``/``DeletePSAConnection`` a Service Networking operation (404: forgotten),
   ``SyncAddress``/``DeleteAddress`` a Compute global operation. Not done: come back after
   ``retry_wait`` (5 s, ``GCP_RETRY_WAIT_DURATION``) without a status change. Failed: Error condition
   reason ``GCPError`` with the operation's message, operation forgotten, retried with backoff.
2. The global address ``cm-<name>``; on 404 the legacy name ``spec.remoteRef.name`` (accepted only on
   the scope's VPC). ``cm-<name>`` on another VPC: ``GCPError`` ``Obtained IpRange belongs to another VPC.``,
   not retried.
3. The PSA connection (peering ``servicenetworking-googleapis-com``) when the purpose is ``VPC_PEERING``
   (the default).
4. Create: insert the address (``INTERNAL``, ``VPC_PEERING``, description ``Kyma cloud-manager IP Range``;
   state ``SyncAddress``), ``status.id`` = the address name; the peering ranges are all VPC_PEERING
   addresses of the VPC (just this one while there is no connection); create the connection or patch
   its reserved ranges (delete it when none are left; state ``SyncPSAConnection``). Ready when no
   operation is pending, the address exists and the connection holds it: state ``Ready``, condition
   Ready/``Ready``/``IpRange provisioned in GCP``.
5. Delete: take this range out of the connection (state ``DeletePSAConnection``), then delete the address
   (state ``DeleteAddress``), each waiting for its operation; then the finalizer may go.

Deliberate differences from the original (each a fix): state is ``Ready`` when Ready (the original
leaves the last operation state there) and ``Error`` on errors other than a failed poll; deletion only
takes *this* range out of a connection others still use (the original deletes the whole connection);
a deleting IpRange without a CIDR still cleans up (the original stops at "CIDR is required" forever).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Protocol

from kube.toolkit.step import Step
from tasks.cloud.gcp.client import GcpApiError, network_filter
from tasks.cloud.step import StepBuilder, gone

SYNC_ADDRESS = "SyncAddress"
SYNC_PSA_CONNECTION = "SyncPSAConnection"
DELETE_PSA_CONNECTION = "DeletePSAConnection"
DELETE_ADDRESS = "DeleteAddress"
DESCRIPTION = "Kyma cloud-manager IP Range"
READY_MESSAGE = "IpRange provisioned in GCP"
REASON_GCP_ERROR = "GCPError"
REASON_INVALID_CIDR = "InvalidCidr"
ANOTHER_VPC_MESSAGE = "Obtained IpRange belongs to another VPC."
PSA_PURPOSE = "VPC_PEERING"
PSA_PEERING_NAME = "servicenetworking-googleapis-com"


def retry_wait_from_env() -> float:
    """``GCP_RETRY_WAIT_DURATION`` (Go duration such as ``5s``/``500ms``, or seconds), default
    :data:`RETRY_WAIT`, from this process's settings (:mod:`tasks.cloud.settings`)."""
    from tasks.cloud import settings

    return settings.current().gcp_retry_wait


#: ``GcpRetryWaitTime``'s default: how long to wait for a running operation (seconds).
RETRY_WAIT = 5.0


class IpRangeClient(Protocol):
    """What this step needs of :class:`tasks.cloud.gcp.client.GcpClient`."""

    def get_global_address(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_global_addresses(self, project: str, filter: str = "") -> list[dict[str, Any]]: ...
    def insert_global_address(self, project: str, vpc: str, name: str, description: str, address: str,
                              prefix_length: int) -> str: ...
    def delete_global_address(self, project: str, name: str) -> str: ...
    def get_global_operation(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_service_connections(self, project: str, vpc: str) -> list[dict[str, Any]]: ...
    def create_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def patch_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def delete_service_connection(self, project: str, vpc: str) -> str: ...
    def get_service_networking_operation(self, name: str) -> dict[str, Any] | None: ...


def address_name(kcp_name: str) -> str:
    """The global address of a KCP IpRange: ``cm-<name>`` (the original's ``GetIpRangeName``)."""
    return f"cm-{kcp_name}"


def parse_cidr(cidr: str) -> tuple[str, int]:
    """``(network address, prefix length)`` of an IPv4/IPv6 network CIDR (the original's
    ``CidrParseIPnPrefix``). Raises ``ValueError`` with the original's messages."""
    try:
        iface = ipaddress.ip_interface(cidr)
    except ValueError:
        raise ValueError(f"invalid CIDR address: {cidr}") from None
    if "/" not in cidr:
        raise ValueError(f"invalid CIDR address: {cidr}")
    if iface.ip != iface.network.network_address:
        raise ValueError(f"{cidr} is not a valid network")
    return str(iface.ip), iface.network.prefixlen


def is_psa(iprange: dict[str, Any]) -> bool:
    """True when the IpRange is for Private Service Access (purpose ``VPC_PEERING``, the default)."""
    options = ((iprange.get("spec") or {}).get("options") or {}).get("gcp")
    return not options or options.get("purpose", PSA_PURPOSE) in (PSA_PURPOSE, "")


def _in_vpc(address: dict[str, Any], vpc: str) -> bool:
    return str(address.get("network") or "").endswith(f"/{vpc}")


class _Run(StepBuilder):
    """One step's context: the object, the scope's project and VPC, the status being built."""

    def __init__(self, iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, now: str | None,
                 retry_wait: float) -> None:
        super().__init__(iprange, now)
        gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
        self.project = str(gcp.get("project", ""))
        self.vpc = str(gcp.get("vpcNetwork", ""))
        self.client = client
        self.retry_wait = retry_wait


def reconcile(iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, *,
              now: str | None = None, retry_wait: float | None = None) -> Step:
    """One reconcile step of a KCP IpRange on GCP (see the module docstring for the contract).

    Never raises for cloud errors (they become conditions); raises ``fencing.FenceError`` when the
    reconcile must stop writing, ``ValueError`` for a Scope without a GCP project and VPC, and
    ``KeyError`` when ``iprange`` has no ``metadata.name``.
    """
    run = _Run(iprange, scope, client, now, retry_wait_from_env() if retry_wait is None else retry_wait)
    if not run.project or not run.vpc:
        raise ValueError(f"Scope {(scope.get('metadata') or {}).get('name')!r} has no spec.scope.gcp project "
                         "and vpcNetwork")

    # CIDR (create path only: deletion finds the address by name)
    prefix = 0
    ip = ""
    if not run.deleting:
        cidr = run.status.get("cidr") or run.spec.get("cidr") or ""
        if not cidr:
            return run.fail(REASON_INVALID_CIDR, "CIDR is required")
        if not run.status.get("cidr"):
            run.changes["cidr"] = cidr
        try:
            ip, prefix = parse_cidr(cidr)
        except ValueError as err:
            return run.fail(REASON_INVALID_CIDR, str(err))

    # 1. a pending operation
    waiting = _wait_operation(run)
    if waiting is not None:
        return waiting

    # 2. the global address (new name, then the legacy one)
    try:
        address = client.get_global_address(run.project, address_name(run.name))
    except GcpApiError:
        return run.fail(REASON_GCP_ERROR, "Error getting address from GCP", backoff=True)
    if address is not None and not _in_vpc(address, run.vpc):
        return run.fail(REASON_GCP_ERROR, ANOTHER_VPC_MESSAGE)
    legacy = str((run.spec.get("remoteRef") or {}).get("name") or "")
    if address is None and legacy and legacy != address_name(run.name):
        try:
            fallback = client.get_global_address(run.project, legacy)
        except GcpApiError:
            return run.fail(REASON_GCP_ERROR, "Error getting fallback IpRange address from GCP", backoff=True)
        if fallback is not None and _in_vpc(fallback, run.vpc):
            address = fallback

    # 3. the PSA connection
    connection: dict[str, Any] | None = None
    psa = is_psa(iprange)
    if psa:
        try:
            connections = client.list_service_connections(run.project, run.vpc)
        except GcpApiError:
            return run.fail(REASON_GCP_ERROR, "Error listing Service Connections from GCP", backoff=True)
        connection = next((c for c in connections if c.get("peering") == PSA_PEERING_NAME), None)

    if run.deleting:
        return _delete(run, address, connection)
    return _create(run, address, connection, psa, ip, prefix)


def _wait_operation(run: _Run) -> Step | None:
    """The pending operation's verdict: a Step to return now, or None to go on (op cleared)."""
    op_name = run.status.get("opIdentifier") or ""
    if not op_name:
        return None
    state = run.status.get("state")
    client = run.client
    if state in (SYNC_PSA_CONNECTION, DELETE_PSA_CONNECTION):
        try:
            op = client.get_service_networking_operation(op_name)
        except GcpApiError as err:
            return run.fail(REASON_GCP_ERROR, err.message, backoff=True, state=None)
        if op is not None and not op.get("done"):
            return run.step(requeue_after=run.retry_wait)
        run.changes["opIdentifier"] = None
        if op is not None and op.get("error"):
            return run.fail(REASON_GCP_ERROR, "Service Networking operation failed", backoff=True)
        return None
    if state in (SYNC_ADDRESS, DELETE_ADDRESS):
        try:
            op = client.get_global_operation(run.project, op_name)
        except GcpApiError as err:
            return run.fail(REASON_GCP_ERROR, err.message, backoff=True, state=None)
        if op is not None and op.get("status") != "DONE":
            return run.step(requeue_after=run.retry_wait)
        run.changes["opIdentifier"] = None
        if op is not None and op.get("error"):
            errors = (op.get("error") or {}).get("errors") or []
            message = op.get("statusMessage") or (errors[0].get("message") if errors else "") \
                or "Operation failed with no error message"
            return run.fail(REASON_GCP_ERROR, str(message), backoff=True)
        return None
    # unknown state: forget the operation (the original does the same)
    run.changes["opIdentifier"] = None
    return None


def _create(run: _Run, address: dict[str, Any] | None, connection: dict[str, Any] | None, psa: bool,
            ip: str, prefix: int) -> Step:
    client = run.client
    if address is None:
        try:
            op = client.insert_global_address(run.project, run.vpc, address_name(run.name), DESCRIPTION, ip, prefix)
        except GcpApiError as err:
            return run.fail(REASON_GCP_ERROR, f"Error creating Address: {err.message}",
                            requeue_after=run.retry_wait)
        return run.started(SYNC_ADDRESS, op, run.retry_wait)
    name = str(address.get("name"))
    if not run.status.get("id"):
        run.changes["id"] = name

    if psa:
        if connection is None:
            ranges = [name]
        else:
            try:
                listed = client.list_global_addresses(run.project, network_filter(run.project, run.vpc))
            except GcpApiError:
                return run.fail(REASON_GCP_ERROR, "Error listing Global Addresses from GCP", backoff=True)
            ranges = sorted({str(a["name"]) for a in listed if a.get("purpose") == PSA_PURPOSE})
        if connection is None:
            try:
                op = client.create_service_connection(run.project, run.vpc, ranges)
            except GcpApiError as err:
                return run.fail(REASON_GCP_ERROR, f"Error creating PSA Connection: {err.message}",
                                requeue_after=run.retry_wait)
            return run.started(SYNC_PSA_CONNECTION, op, run.retry_wait)
        reserved = list(connection.get("reservedPeeringRanges") or [])
        if sorted(reserved) != ranges:
            try:
                op = (client.patch_service_connection(run.project, run.vpc, ranges) if ranges
                      else client.delete_service_connection(run.project, run.vpc))
            except GcpApiError as err:
                return run.fail(REASON_GCP_ERROR, f"Error updating PSA Connection: {err.message}",
                                requeue_after=run.retry_wait)
            return run.started(SYNC_PSA_CONNECTION, op, run.retry_wait)
        if name not in reserved:
            return run.step()

    return run.ready(READY_MESSAGE)


def _delete(run: _Run, address: dict[str, Any] | None, connection: dict[str, Any] | None) -> Step:
    client = run.client
    name = str(address.get("name")) if address is not None else address_name(run.name)
    if connection is not None:
        reserved = list(connection.get("reservedPeeringRanges") or [])
        if name in reserved:
            rest = [r for r in reserved if r != name]
            try:
                op = (client.patch_service_connection(run.project, run.vpc, rest) if rest
                      else client.delete_service_connection(run.project, run.vpc))
            except GcpApiError as err:
                return run.fail(REASON_GCP_ERROR, err.message, requeue_after=run.retry_wait)
            return run.started(DELETE_PSA_CONNECTION, op, run.retry_wait)
    if address is not None:
        try:
            op = client.delete_global_address(run.project, name)
        except GcpApiError as err:
            return run.fail(REASON_GCP_ERROR, f"Error deleting Address: {err.message}",
                            requeue_after=run.retry_wait)
        return run.started(DELETE_ADDRESS, op, run.retry_wait)
    return gone()


__all__ = ["ANOTHER_VPC_MESSAGE", "DELETE_ADDRESS", "DELETE_PSA_CONNECTION", "DESCRIPTION", "READY_MESSAGE",
           "REASON_GCP_ERROR", "REASON_INVALID_CIDR", "RETRY_WAIT", "SYNC_ADDRESS", "SYNC_PSA_CONNECTION",
           "IpRangeClient", "address_name", "is_psa", "parse_cidr", "reconcile"]
