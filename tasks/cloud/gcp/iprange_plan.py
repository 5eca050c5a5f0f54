"""The KCP IpRange on GCP, the plan (pure): one turn of the original's GCP provider flow
(``pkg/kcp/provider/gcp/iprange/v3``, reference notes §5.6) over what :mod:`tasks.cloud.gcp.iprange`
read (:class:`Read`), answered as the :class:`~kube.toolkit.Outcome` of at most one GCP write
(:class:`Call`, made by the executor) and what its answer or refusal leads to.

- The KCP IpRange (``metadata.name``, ``metadata.deletionTimestamp``, ``spec.cidr``,
  ``spec.remoteRef.name``, ``spec.options.gcp.purpose``, ``status``). The common part of the KCP
  IpRange reconciler (notes §5.3: Scope, finalizer, CIDR allocation, network, delete-while-used) runs
  before; creating needs ``status.cidr`` or ``spec.cidr``.
- The Scope: ``spec.scope.gcp.project`` and ``spec.scope.gcp.vpcNetwork`` (:func:`target`).

Flow, as the original's:

1. Pending operation (``status.opIdentifier``): ``status.state`` tells which API owns it —
   ``SyncPSAConnection``/``DeletePSAConnection`` a Service Networking operation (404: forgotten),
   ``SyncAddress``/``DeleteAddress`` a Compute global operation. Not done: come back after
   ``retry_wait`` (5 s, ``GCP_RETRY_WAIT_DURATION``) without a status change. Failed: Error condition
   reason ``GCPError`` with the operation's message, operation forgotten, retried with backoff.
2. The global address ``cm-<name>``; when missing, the legacy name ``spec.remoteRef.name`` (accepted only
   on the scope's VPC). ``cm-<name>`` on another VPC: ``GCPError`` ``Obtained IpRange belongs to another
   VPC.``, not retried.
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

A refused read is an Error with backoff (``Error getting address from GCP``, ...; a refused operation
read quotes the API and keeps the state); a refused write an Error with the API's message
(``Error creating Address: <msg>``, ...) and a retry after ``retry_wait``.

Deliberate differences from the original (each a fix): state is ``Ready`` when Ready (the original
leaves the last operation state there) and ``Error`` on errors other than a failed poll; deletion only
takes *this* range out of a connection others still use (the original deletes the whole connection);
a deleting IpRange without a CIDR still cleans up (the original stops at "CIDR is required" forever).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import UNREAD, need, with_planned
from tasks.cloud.step import StepBuilder, gone

__all__ = ["ANOTHER_VPC_MESSAGE", "COMPUTE_STATES", "DELETE_ADDRESS", "DELETE_PSA_CONNECTION", "DESCRIPTION",
           "PSA_STATES", "READY_MESSAGE", "REASON_GCP_ERROR", "REASON_INVALID_CIDR", "RETRY_WAIT", "SYNC_ADDRESS",
           "SYNC_PSA_CONNECTION", "Call", "Read", "address_name", "is_psa", "legacy_name", "parse_cidr",
           "plan", "target"]

SYNC_ADDRESS = "SyncAddress"
SYNC_PSA_CONNECTION = "SyncPSAConnection"
DELETE_PSA_CONNECTION = "DeletePSAConnection"
DELETE_ADDRESS = "DeleteAddress"
#: The states whose ``opIdentifier`` is a Service Networking operation, and a Compute global one.
PSA_STATES = (SYNC_PSA_CONNECTION, DELETE_PSA_CONNECTION)
COMPUTE_STATES = (SYNC_ADDRESS, DELETE_ADDRESS)
DESCRIPTION = "Kyma cloud-manager IP Range"
READY_MESSAGE = "IpRange provisioned in GCP"
REASON_GCP_ERROR = "GCPError"
REASON_INVALID_CIDR = "InvalidCidr"
ANOTHER_VPC_MESSAGE = "Obtained IpRange belongs to another VPC."
PSA_PURPOSE = "VPC_PEERING"
PSA_PEERING_NAME = "servicenetworking-googleapis-com"

#: ``GcpRetryWaitTime``'s default: how long to wait for a running operation (seconds).
RETRY_WAIT = 5.0

#: A read's answer: the resource (``None``: not found) or the refusal.
Got = Mapping[str, Any] | None | Failure


def address_name(kcp_name: str) -> str:
    """The global address of a KCP IpRange: ``cm-<name>`` (the original's ``GetIpRangeName``)."""
    return f"cm-{kcp_name}"


def legacy_name(iprange: Mapping[str, Any]) -> str:
    """The legacy address name to fall back to (``spec.remoteRef.name``), ``""`` when there is none or
    it is ``cm-<name>`` itself."""
    legacy = str((((iprange.get("spec") or {}).get("remoteRef")) or {}).get("name") or "")
    name = str((iprange.get("metadata") or {}).get("name") or "")
    return "" if legacy == address_name(name) else legacy


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


def is_psa(iprange: Mapping[str, Any]) -> bool:
    """True when the IpRange is for Private Service Access (purpose ``VPC_PEERING``, the default)."""
    options = ((iprange.get("spec") or {}).get("options") or {}).get("gcp")
    return not options or options.get("purpose", PSA_PURPOSE) in (PSA_PURPOSE, "")


def target(scope: Mapping[str, Any]) -> tuple[str, str]:
    """``(project, vpc)`` of the Scope. Raises ``ValueError`` when either is missing."""
    gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
    project, vpc = str(gcp.get("project", "")), str(gcp.get("vpcNetwork", ""))
    if not project or not vpc:
        raise ValueError(f"Scope {(scope.get('metadata') or {}).get('name')!r} has no spec.scope.gcp project "
                         "and vpcNetwork")
    return project, vpc


def _in_vpc(address: Mapping[str, Any], vpc: str) -> bool:
    return str(address.get("network") or "").endswith(f"/{vpc}")


@dataclass(frozen=True)
class Read:
    """What one turn read from GCP (a refused read is a :class:`Failure`; a field the plan did not
    need is :data:`~tasks.cloud.calls.UNREAD`), in the order the plan asks for them:

    - ``operation``: the pending operation of ``status.opIdentifier`` (``None``: not found); asked for
      only while one is pending in a state that names its API;
    - ``address``: ``cm-<name>`` (``None``: not found); ``legacy``: the :func:`legacy_name` address, asked
      for only when ``cm-<name>`` is missing;
    - ``connections``: the VPC's Service Networking connections (PSA purpose only);
    - ``addresses``: the VPC's global addresses (only when creating and a PSA connection exists).
    """

    operation: Got = UNREAD
    address: Got = UNREAD
    legacy: Got = UNREAD
    connections: Sequence[Mapping[str, Any]] | Failure = UNREAD
    addresses: Sequence[Mapping[str, Any]] | Failure = UNREAD


@dataclass(frozen=True)
class Call:
    """One GCP write: ``GcpClient.<method>(*args)``, answering an operation name. Failure: an Error
    ``prefix`` + the API's message, retried after the wait."""

    method: str
    args: tuple[Any, ...]
    prefix: str = ""


def _call(run: StepBuilder, retry_wait: float, call: Call, state: str) -> Outcome:
    """The Outcome making ``call``, which starts an operation in state ``state``: once made, its answer is
    the operation to wait for (come back after the wait); refused, an Error ``prefix`` + the API's
    message, retried after the wait."""
    return with_planned((call,), lambda answers: run.started(state, str(answers[0]), retry_wait),
                        lambda c, failure: run.fail(REASON_GCP_ERROR, f"{c.prefix}{failure.message}",
                                                    requeue_after=retry_wait))


def plan(iprange: Mapping[str, Any], scope: Mapping[str, Any], found: Read, retry_wait: float = RETRY_WAIT,
         now: str | None = None) -> Outcome:
    """One turn of the KCP IpRange on GCP over ``found`` (see the module doc). Raises
    :class:`~tasks.cloud.calls.Needed` naming the next read while one it looks at is unread. A Scope
    without a GCP project and VPC is an Error ``GCPError`` saying so."""
    run = StepBuilder(iprange, now)
    try:
        project, vpc = target(scope)
    except ValueError as exc:
        return run.fail(REASON_GCP_ERROR, str(exc))
    return _plan(run, iprange, project, vpc, found, retry_wait)


def _plan(run: StepBuilder, iprange: Mapping[str, Any], project: str, vpc: str, found: Read,
          retry_wait: float) -> Outcome:

    # CIDR (create path only: deletion finds the address by name)
    ip, prefix = "", 0
    if not run.deleting:
        cidr = str(run.status.get("cidr") or run.spec.get("cidr") or "")
        if not cidr:
            return run.fail(REASON_INVALID_CIDR, "CIDR is required")
        if not run.status.get("cidr"):
            run.set(cidr=cidr)
        try:
            ip, prefix = parse_cidr(cidr)
        except ValueError as err:
            return run.fail(REASON_INVALID_CIDR, str(err))

    # 1. a pending operation
    waiting = _operation(run, found, retry_wait)
    if waiting is not None:
        return waiting

    # 2. the global address (new name, then the legacy one)
    address = need(found, "address")
    if isinstance(address, Failure):
        return run.fail(REASON_GCP_ERROR, "Error getting address from GCP", backoff=True)
    if address is not None and not _in_vpc(address, vpc):
        return run.fail(REASON_GCP_ERROR, ANOTHER_VPC_MESSAGE)
    if address is None and legacy_name(iprange):
        fallback = need(found, "legacy")
        if isinstance(fallback, Failure):
            return run.fail(REASON_GCP_ERROR, "Error getting fallback IpRange address from GCP", backoff=True)
        if fallback is not None and _in_vpc(fallback, vpc):
            address = fallback

    # 3. the PSA connection
    connection: Mapping[str, Any] | None = None
    psa = is_psa(iprange)
    if psa:
        connections = need(found, "connections")
        if isinstance(connections, Failure):
            return run.fail(REASON_GCP_ERROR, "Error listing Service Connections from GCP", backoff=True)
        connection = next((c for c in connections if c.get("peering") == PSA_PEERING_NAME), None)

    if run.deleting:
        return _delete(run, retry_wait, project, vpc, address, connection)
    return _create(run, retry_wait, project, vpc, address, connection, found, psa, ip, prefix)


def _operation(run: StepBuilder, found: Read, retry_wait: float) -> Outcome | None:
    """The pending operation's verdict: a Outcome to answer now, or ``None`` to go on (operation forgotten)."""
    if not run.status.get("opIdentifier"):
        return None
    state = run.status.get("state")
    if state not in PSA_STATES and state not in COMPUTE_STATES:
        run.set(opIdentifier=None)  # unknown state: forget the operation (the original does the same)
        return None
    op = need(found, "operation")
    if isinstance(op, Failure):
        return run.fail(REASON_GCP_ERROR, op.message, backoff=True, state=None)
    psa = state in PSA_STATES
    if op is not None and not (op.get("done") if psa else op.get("status") == "DONE"):
        return run.step(requeue_after=retry_wait)
    run.set(opIdentifier=None)
    if op is None or not op.get("error"):
        return None
    if psa:
        return run.fail(REASON_GCP_ERROR, "Service Networking operation failed", backoff=True)
    errors = (op.get("error") or {}).get("errors") or []
    message = op.get("statusMessage") or (errors[0].get("message") if errors else "") \
        or "Operation failed with no error message"
    return run.fail(REASON_GCP_ERROR, str(message), backoff=True)


def _create(run: StepBuilder, retry_wait: float, project: str, vpc: str, address: Mapping[str, Any] | None,
            connection: Mapping[str, Any] | None, found: Read, psa: bool, ip: str, prefix: int) -> Outcome:
    def call(state: str, method: str, *args: Any, prefix: str) -> Outcome:
        return _call(run, retry_wait, Call(method, args, prefix), state)

    if address is None:
        return call(SYNC_ADDRESS, "insert_global_address", project, vpc, address_name(run.name), DESCRIPTION, ip,
                    prefix, prefix="Error creating Address: ")
    name = str(address.get("name"))
    if not run.status.get("id"):
        run.set(id=name)
    if psa:
        if connection is None:
            return call(SYNC_PSA_CONNECTION, "create_service_connection", project, vpc, [name],
                        prefix="Error creating PSA Connection: ")
        listed = need(found, "addresses")
        if isinstance(listed, Failure):
            return run.fail(REASON_GCP_ERROR, "Error listing Global Addresses from GCP", backoff=True)
        ranges = sorted({str(a["name"]) for a in listed if a.get("purpose") == PSA_PURPOSE})
        reserved = list(connection.get("reservedPeeringRanges") or [])
        if sorted(reserved) != ranges:
            if ranges:
                return call(SYNC_PSA_CONNECTION, "patch_service_connection", project, vpc, ranges,
                            prefix="Error updating PSA Connection: ")
            return call(SYNC_PSA_CONNECTION, "delete_service_connection", project, vpc,
                        prefix="Error updating PSA Connection: ")
        if name not in reserved:
            return run.step()
    return run.ready(READY_MESSAGE)


def _delete(run: StepBuilder, retry_wait: float, project: str, vpc: str, address: Mapping[str, Any] | None,
            connection: Mapping[str, Any] | None) -> Outcome:
    name = str(address.get("name")) if address is not None else address_name(run.name)
    if connection is not None:
        reserved = list(connection.get("reservedPeeringRanges") or [])
        if name in reserved:
            rest = [r for r in reserved if r != name]
            call = Call("patch_service_connection", (project, vpc, rest)) if rest \
                else Call("delete_service_connection", (project, vpc))
            return _call(run, retry_wait, call, DELETE_PSA_CONNECTION)
    if address is not None:
        delete = Call("delete_global_address", (project, name), "Error deleting Address: ")
        return _call(run, retry_wait, delete, DELETE_ADDRESS)
    return gone()
