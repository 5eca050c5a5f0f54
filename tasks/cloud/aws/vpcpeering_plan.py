"""The AWS VPC peering plan (``pkg/kcp/provider/aws/vpcpeering``): one turn's decision over what was read
(pure; the clients and reads are :mod:`tasks.cloud.aws.vpcpeering`).

:class:`Read` is what the local client (the peering role in the Scope's account) and the remote client
(the peering role in the customer's account) found; :func:`plan_create` and :func:`plan_delete` answer an
:class:`~kube.toolkit.Outcome` whose writes are the EC2 calls (:class:`~kube.toolkit.Call` on client
``""``, the local one, or ``"remote"``), whose ``then`` is what they lead to and whose ``refused`` is what
a refused one means. The original's steps, reasons, states and messages, in its order:

create: the customer's account unreachable (its client not built: the peering role not assumable) is an
Error ``Error`` ``Failed creating AWS client for account <account>`` (:func:`remote_client_failed`); state
``initiating-request`` on the first turn; the local VPC by its Name tag (``VpcNotFound`` ``AWS VPC <name>
not found``); the remote VPC (``VpcNotFound`` ``Remote VPC ID <id> not found``, or the
original's words for ``UnauthorizedOperation`` / ``AccessDenied`` with state ``Warning``, requeue 60 s);
until the remote side accepted: the remote VPC must carry a tag whose key is ``PEERING_NETWORK_TAG`` or the
shoot name (Error ``FailedLoadingRemoteVpcNetwork`` ``Loaded remote Vpc network has no matching tags``,
requeue 60 s); ``CreateVpcPeeringConnection`` tagged ``Name``, ``.../name``, ``.../remote-name``,
``.../scope``, ``.../shoot`` (refused: state ``Warning``, ``FailedCreatingVpcPeeringConnection``
``Failed creating VpcPeerings. <msg>``, requeue 60 s), ``status.id``/``vpcId``; wait while
``initiating-request`` (1 s); a ``failed``/``expired``/``rejected``/``deleted``/``deleting`` connection:
state = its code, ``FailedAcceptingVpcPeeringConnection`` with AWS's message, forget; accept from the remote
side (refused: ``Failed accepting VpcPeerings <msg>``, requeue 60 s), ``status.remoteId``; wait ``active``
(1 s); a route in every local route table to each CIDR block of the remote VPC (refused: state Error,
``FailedCreatingRoutes`` ``Failed creating route for local route table``, forget); a route to the local
VPC's CIDR in the remote route tables the strategy selects (:func:`should_update`; refused: state
``Warning``, ``Failed updating routes for remote route table <id>. <msg>``, requeue 60 s,
``RouteNotSupported`` forgets); Ready: state = the connection's code (``active``), the single condition
Ready ``Additional VpcPeerings(s) are provisioned``.

delete: the Ready condition removed; the local routes through the connection; the connection (unless
already ``failed``/``expired``/``rejected``/``deleted``); the remote routes through it in the tables the
strategy selects; the remote side of the connection only with ``deleteRemotePeering``; then the
finalizer. A refused call comes back after 10 s (retryable) or 60 s, the status untouched. A customer's
account that cannot be reached any more (role removed, its reads refused) or a remote Network already
gone does not block the deletion: the remote parts are skipped (the original retries forever).

Retryable errors (throttling, 5xx, connection) come back after 10 s without touching the status; another
refused read fails the turn with backoff (:func:`read_failed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.refusal import Failure
from kube.toolkit.actions import Call, Write
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["AUTO", "MATCHED", "NONE", "READY_MESSAGE", "UNMATCHED", "Read", "has_tag", "peering_tags",
           "plan_create", "plan_delete", "read_failed", "remote_client_failed", "remote_reference", "should_update",
           "words"]

Timing = Callable[[float], float]

AUTO, NONE, MATCHED, UNMATCHED = "AUTO", "NONE", "MATCHED", "UNMATCHED"
READY_MESSAGE = "Additional VpcPeerings(s) are provisioned"
INITIATING = "initiating-request"
ACTIVE = "active"
TERMINATED = ("failed", "expired", "rejected", "deleted")
#: The original's words for codes a user can act on (``awsmeta.GetErrorMessage``); the flag: state Warning.
KNOWN_MESSAGES = {"UnauthorizedOperation": "Not authorized to perform this operation.",
                  "AccessDenied": "Not authorized to assume role.",
                  "RouteNotSupported": "Route not supported."}
#: The call kinds whose answer (a connection) records its id: ``status.<field>``.
RECORDS = {"create": "id", "accept": "remoteId"}


def words(failure: Failure, default: str = "") -> str:
    """The original's words for a known code, else AWS's message (the original: ``default``, often empty;
    here the user gets AWS's reason)."""
    return KNOWN_MESSAGES.get(failure.code) or failure.message or default


@dataclass(frozen=True)
class Read:
    """What one turn read.

    Attributes:
        vpc: the local VPC (by the Scope's ``vpcNetwork`` Name tag; ``None``: not found).
        route_tables: the local VPC's route tables.
        peering: the connection ``status.id`` as the local account sees it (``None``: none).
        remote_vpc: the customer's VPC (``None``: not read, see ``remote_error``).
        remote_error: why the customer's VPC could not be read.
        remote_route_tables: its route tables.
        remote_peering: the connection ``status.remoteId`` as the customer's account sees it.
        remote_unreachable: the customer's client could not be built (a definite refusal: the peering role
            not assumable there); nothing remote was read.
        remote_read_error: a read of the customer's route tables or connection was refused (then those
            are empty).
    """

    vpc: Mapping[str, Any] | None
    route_tables: Sequence[Mapping[str, Any]] = field(default_factory=list)
    peering: Mapping[str, Any] | None = None
    remote_vpc: Mapping[str, Any] | None = None
    remote_error: Failure | None = None
    remote_route_tables: Sequence[Mapping[str, Any]] = field(default_factory=list)
    remote_peering: Mapping[str, Any] | None = None
    remote_unreachable: bool = False
    remote_read_error: Failure | None = None


def _record(run: StepBuilder, writes: Sequence[Write], answers: Sequence[Any]) -> None:
    """The ids of the connections the calls made so far answered (:data:`RECORDS`)."""
    for write, answer in zip(writes, answers, strict=False):
        field = RECORDS.get(write.kind) if isinstance(write, Call) else None
        if field and isinstance(answer, Mapping):
            run.set(**{field: str(answer.get("VpcPeeringConnectionId") or "")})


def _refusal(run: StepBuilder, t: Timing, call: Call, failure: Failure) -> Outcome:
    """What a refused ``call`` means (by its kind)."""
    if failure.retryable:
        return run.step(requeue_after=t(10))
    if call.kind == "create":
        return run.without(names.COND_READY).fail(
            names.REASON_FAILED_CREATING_VPC_PEERING_CONNECTION,
            f"Failed creating VpcPeerings. {words(failure)}", state=names.STATE_WARNING,
            requeue_after=t(60), exclusive=False)
    if call.kind == "accept":
        return run.fail(names.REASON_FAILED_ACCEPTING_VPC_PEERING_CONNECTION,
                        f"Failed accepting VpcPeerings {words(failure)}", requeue_after=t(60))
    if call.kind == "route":
        return run.without(names.COND_READY).fail(names.REASON_FAILED_CREATING_ROUTES,
                                                  "Failed creating route for local route table", exclusive=False)
    if call.kind == "remote-route":
        table = str(call.args[0]) if call.args else ""
        forget = failure.code == "RouteNotSupported"
        return run.fail(names.REASON_FAILED_CREATING_ROUTES,
                        f"Failed updating routes for remote route table {table}. {words(failure)}",
                        state=names.STATE_WARNING, requeue_after=None if forget else t(60), exclusive=False)
    return run.step(requeue_after=t(60))  # deletion: the status untouched, again in a minute


def _calls(run: StepBuilder, t: Timing, calls: Sequence[Call],
           after: Callable[[StepBuilder], Outcome] | None = None) -> Outcome:
    """``calls`` in order; once made, their connections' ids recorded and ``after`` (default: back in 1 s);
    a refused one: :func:`_refusal` (the ids answered before it recorded)."""

    def then(answers: Sequence[Any]) -> Outcome:
        _record(run, calls, answers)
        return after(run) if after is not None else run.step(requeue_after=t(1))

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
        _record(run, calls, answers)
        assert isinstance(write, Call)
        return _refusal(run, t, write, failure)

    return Outcome(writes=tuple(calls), then=then, refused=refused)


def has_tag(obj: Mapping[str, Any] | None, key: str) -> bool:
    """Whether the EC2 object carries a tag with key ``key`` (any value; an empty key never matches)."""
    return bool(key) and any(tag.get("Key") == key for tag in (obj or {}).get("Tags") or [])


def should_update(table: Mapping[str, Any], strategy: str, shoot: str) -> bool:
    """Whether a remote route table gets the route (``awsutil.ShouldUpdateRouteTable``): ``AUTO`` every
    table, ``MATCHED`` the tables tagged with the shoot name, ``UNMATCHED`` those that are not, ``NONE``
    none."""
    strategy = strategy or AUTO
    return strategy == AUTO or (strategy == MATCHED and has_tag(table, shoot)) or \
        (strategy == UNMATCHED and not has_tag(table, shoot))


def remote_reference(remote: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The remote KCP Network's AWS reference (``status.network``, else ``spec``): awsAccountId, region, vpcId."""
    if remote is None:
        return {}
    status = ((remote.get("status") or {}).get("network") or {}).get("aws")
    return status or ((((remote.get("spec") or {}).get("network") or {}).get("reference") or {}).get("aws") or {})


def _scope(scope: Mapping[str, Any]) -> tuple[str, str]:
    spec = scope.get("spec") or {}
    aws = (spec.get("scope") or {}).get("aws") or {}
    return str(aws.get("vpcNetwork") or ""), str(spec.get("shootName") or "")


def peering_tags(obj: Mapping[str, Any], scope: Mapping[str, Any]) -> dict[str, str]:
    """The connection's tags: ``Name`` (the KCP name), ``.../name`` (``ns/name``), ``.../remote-name``
    (the SKR ``ns/name``), ``.../scope``, ``.../shoot``."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    remote = spec.get("remoteRef") or {}
    return {"Name": str(meta.get("name") or ""),
            names.TAG_NAME: f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            names.TAG_REMOTE_NAME: f"{remote.get('namespace', '')}/{remote.get('name', '')}",
            names.TAG_SCOPE: str((spec.get("scope") or {}).get("name") or ""),
            names.TAG_SHOOT: _scope(scope)[1]}


def _code(peering: Mapping[str, Any] | None) -> str:
    return str(((peering or {}).get("Status") or {}).get("Code") or "")


def _routes_through(table: Mapping[str, Any], peering_id: str) -> list[str]:
    return [str(r.get("DestinationCidrBlock")) for r in table.get("Routes") or []
            if r.get("VpcPeeringConnectionId") == peering_id and r.get("DestinationCidrBlock")]


def _has_route(table: Mapping[str, Any], peering_id: str, cidr: str) -> bool:
    return cidr in _routes_through(table, peering_id)


def remote_client_failed(obj: Mapping[str, Any], account: str, t: Timing, now: str | None = None) -> Outcome:
    """The Outcome when the customer's account cannot be reached (the peering role not assumable): Error
    reason ``Error`` ``Failed creating AWS client for account <account>``, state Error, requeue 60 s."""
    return StepBuilder(obj, now).fail(names.REASON_ERROR, f"Failed creating AWS client for account {account}",
                                      requeue_after=t(60), exclusive=False)


def read_failed(failure: Failure, t: Timing) -> Outcome:
    """A refused read (or KCP-side client): retryable -> back after 10 s; else the turn fails with backoff
    (``AWS request refused: <words>``); the status untouched either way."""
    if failure.retryable:
        return Outcome(requeue_after=t(10))
    return Outcome(error=f"AWS request refused: {failure.message}")


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], remote: Mapping[str, Any] | None,
                found: Read, t: Timing, network_tag: str = "", now: str | None = None) -> Outcome:
    """One provisioning turn over what was read (see the module doc)."""
    reference = remote_reference(remote)
    if found.remote_unreachable:
        return remote_client_failed(obj, str(reference.get("awsAccountId") or ""), t, now)
    if found.remote_read_error is not None:
        return read_failed(found.remote_read_error, t)
    run = StepBuilder(obj, now)
    details = (obj.get("spec") or {}).get("details") or {}
    strategy = str(details.get("remoteRouteTableUpdateStrategy") or AUTO)
    vpc_name, shoot = _scope(scope)

    if not run.status.get("state"):
        run.set(state=INITIATING)
    vpc = found.vpc
    if vpc is None:
        return run.fail(names.REASON_VPC_NOT_FOUND, f"AWS VPC {vpc_name} not found")
    vpc_id = str(vpc.get("VpcId") or "")
    run.set(vpcId=vpc_id)
    remote_vpc = found.remote_vpc
    if remote_vpc is None:
        failure = found.remote_error or Failure("not_found")
        if failure.retryable:
            return run.step(requeue_after=t(10))
        warning = failure.code in KNOWN_MESSAGES
        message = words(failure, "Error loading remote VPC Network")
        if failure.not_found:
            message = f"Remote VPC ID {reference.get('vpcId', '')} not found"
        requeue = t(60) if failure.code in ("UnauthorizedOperation", "AccessDenied") else None
        return run.without(names.COND_READY).fail(
            names.REASON_VPC_NOT_FOUND, message, state=names.STATE_WARNING if warning else names.STATE_ERROR,
            requeue_after=requeue, exclusive=False)
    peering, remote_peering = found.peering, found.remote_peering
    if remote_peering is None and not (has_tag(remote_vpc, network_tag) or has_tag(remote_vpc, shoot)):
        return run.fail(names.REASON_FAILED_LOADING_REMOTE_VPC_NETWORK,
                        "Loaded remote Vpc network has no matching tags", state=None,
                        requeue_after=t(60), exclusive=False)
    if peering is None:
        call = Call("create_peering", (vpc_id, str(remote_vpc.get("VpcId") or ""), str(reference.get("region") or ""),
                                       str(remote_vpc.get("OwnerId") or reference.get("awsAccountId") or ""),
                                       peering_tags(obj, scope)), kind="create")
        return _calls(run, t, (call,))
    peering_id = str(peering.get("VpcPeeringConnectionId") or "")
    code = _code(peering)
    if code == INITIATING:
        return run.step(requeue_after=t(1))
    if code in (*TERMINATED, "deleting"):
        message = str(((peering.get("Status") or {}).get("Message")) or "")
        return run.without(names.COND_READY).fail(names.REASON_FAILED_ACCEPTING_VPC_PEERING_CONNECTION,
                                                  message, state=code, exclusive=False)
    if remote_peering is None:
        return _calls(run, t, (Call("accept_peering", (peering_id,), client="remote", kind="accept"),))
    if code != ACTIVE:
        return run.step(requeue_after=t(1))
    calls: list[Call] = []
    blocks = [str(a.get("CidrBlock")) for a in remote_vpc.get("CidrBlockAssociationSet") or []
              if a.get("CidrBlock") and ((a.get("CidrBlockState") or {}).get("State") or "associated")
              not in ("disassociated", "disassociating")]
    for table in found.route_tables:
        for block in blocks:
            if not _has_route(table, peering_id, block):
                calls.append(Call("create_route", (str(table.get("RouteTableId")), block, peering_id), kind="route"))
    local_cidr = str(vpc.get("CidrBlock") or "")
    if strategy != NONE and local_cidr:
        for table in found.remote_route_tables:
            if should_update(table, strategy, shoot) and not _has_route(table, peering_id, local_cidr):
                calls.append(Call("create_route", (str(table.get("RouteTableId")), local_cidr, peering_id),
                                  client="remote", kind="remote-route"))

    def ready(run: StepBuilder) -> Outcome:
        return run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, code).step()

    return _calls(run, t, calls, after=ready)


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One deletion turn over what was read (see the module doc): every call, then the finalizer. A
    retryable refusal of the customer's reads comes back after 10 s; any other skips the remote parts."""
    if found.remote_read_error is not None and found.remote_read_error.retryable:
        return read_failed(found.remote_read_error, t)
    run = StepBuilder(obj, now).without(names.COND_READY)
    details = (obj.get("spec") or {}).get("details") or {}
    strategy = str(details.get("remoteRouteTableUpdateStrategy") or AUTO)
    shoot = _scope(scope)[1]
    local_id = str(run.status.get("id") or "")
    remote_id = str(run.status.get("remoteId") or "")
    calls: list[Call] = []
    if local_id:
        for table in found.route_tables:
            calls += [Call("delete_route", (str(table.get("RouteTableId")), cidr), kind="delete")
                      for cidr in _routes_through(table, local_id)]
    if found.peering is not None and _code(found.peering) not in TERMINATED:
        calls.append(Call("delete_peering", (str(found.peering.get("VpcPeeringConnectionId")),), kind="delete"))
    if remote_id:
        for table in found.remote_route_tables:
            if should_update(table, strategy, shoot):
                calls += [Call("delete_route", (str(table.get("RouteTableId")), cidr), client="remote", kind="delete")
                          for cidr in _routes_through(table, remote_id)]
    if details.get("deleteRemotePeering") and found.remote_peering is not None and \
            _code(found.remote_peering) not in TERMINATED:
        calls.append(Call("delete_peering", (str(found.remote_peering.get("VpcPeeringConnectionId")),),
                          client="remote", kind="delete"))
    return _calls(run, t, calls, after=lambda r: r.step(remove_finalizer=names.FINALIZER))
