"""The KCP VpcPeering on GCP (cloud-manager's ``pkg/kcp/provider/gcp/vpcpeering``, notes §8).

Two VPC network peerings make one connection: the *remote* one, named ``details.peeringName``, in the
customer's network (remote → kyma; it exports custom routes iff ``details.importCustomRoutes``), made
first, and the *local* one, ``cm-<kcpName>``, in the shoot's network (kyma → remote; imports custom
routes iff asked, never exports them). Both exchange subnet routes. The service account of Cloud
Manager needs ``compute.networks.addPeering``/``removePeering``/``get`` on both sides and
``resourcemanager`` tag read access on the remote one.

One turn is read → pure plan → at most one call → Outcome (docs/cloud.md, "A new kind: the recipe"): the
shell :mod:`tasks.cloud.gcp.vpcpeering` reads through :class:`~tasks.cloud.gcp.client.GcpClient` the
pending operations (``status.remotePeeringOperation`` / ``localPeeringOperation``), both peerings and,
before the remote peering exists, the remote network's tag keys (:class:`Read`, refusals kept as
:class:`~kube.refusal.Failure` s); :func:`plan_create` / :func:`plan_delete` here decide (pure: no I/O)
and answer an :class:`~kube.toolkit.Outcome`: at most one :class:`~kube.toolkit.Call` (its ``kind``:
``remote_add``, ``local_add``, ``local_remove``, ``remote_remove``), what its answer leads to
(``then``) and what its refusal means (``refused``), which the executor carries out.

Flow, as the original's: a local or remote network that names no GCP network -> Error ``The <side> network
names no GCP project and network`` (state ``Disconnected``); a running remote operation → 10 s; a running
local one → 60 s; the remote network must carry a tag whose key is the shoot name, else state
``Disconnected`` and ``FailedCreatingVpcPeeringConnection`` ``Error creating VpcPeering, remote VPC does not
have a tag with the key: <shoot>`` (5 min); create the remote peering (its operation in
``status.remotePeeringOperation``, 30 s), wait until it exists, create the local one
(``status.localPeeringOperation``, 30 s), wait until both are ``ACTIVE`` (10 s); ``status.id`` / ``remoteId``
are the two peerings' names; Ready: state ``Ready``, the single condition Ready/``Ready`` ``VpcPeering
:<peeringName> is provisioned`` (sic). Deleting: remove the Ready condition, remove the local peering and wait
until it is gone (10 s), then the remote one when ``details.deleteRemotePeering`` and it is this object's
(:func:`owned`; a 429 → 60 s, an operation in progress → 10 s, anything else is logged and ignored, as the
original), then the finalizer may go.

Ownership of the remote peering (fix: the original's GCP flow has the flaw; Azure's original has the rule).
The customer's network and the peering's name come from the SKR object, i.e. from the tenant, and the
service account is shared by every tenant. The original found the remote peering by name only: a peering of
that name made it skip the tag check, recorded its name in ``status.remoteId`` and deleted it with
``deleteRemotePeering`` — so tenant A, naming tenant B's customer network and B's remote peering, peered A's
shoot into B's customer network and, deleting the object, removed B's peering. Here the remote peering is
this object's (:func:`owned`) only when ``status.remoteId`` names it *and* its peer network is this
object's local (the shoot's) network; ``remoteId`` is recorded only for a peering to the local network that
passed the tag check. A peering of that name to any other network is never adopted (``Disconnected``,
``FailedCreatingVpcPeeringConnection`` ``Peering with the same name <name> already exists in network
<project>/<network>``, 5 min) and never deleted: deletion leaves a peering that is not this object's alone
(an Event ``RemotePeeringNotOwned`` says so, naming only what the tenant gave) and the object finishes
deleting. The tag check is skipped only for an owned remote peering.

Deliberate differences (fixes, each noted where it is made): ownership above; the tag check runs only until
the remote peering is this object's (the original re-checks every turn, so removing the tag later broke a
working peering; Azure's flow already skips it); the tag key must be the shoot name exactly (any parent:
``<project or organization>/<shoot>``; the original's ``strings.Contains`` accepted a key naming another
shoot that contains this one, e.g. ``c-1`` in ``c-10``, and the landscape-wide ``PEERING_NETWORK_TAG``
opened a network so tagged to every tenant's shoot: on GCP that setting authorises nothing); the specific
"not found" / "insufficient permissions" messages of the remote network stay (the original overwrote them
with the generic one); a failed peering operation is reported and forgotten, so the peering is tried again
after 5 min (the original kept re-reading the failed operation forever); an add or remove refused because
another peering operation of either network runs is a wait, not an error; the Ready state is ``Ready`` (the
original's ``Connected``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kube.refusal import Failure
from kube.toolkit.actions import Call, Write
from kube.toolkit.outcome import Event, Outcome
from tasks.cloud import names
from tasks.cloud.scope import network_reference
from tasks.cloud.step import StepBuilder

__all__ = ["Network", "Read", "VpcPeeringClient", "local_peering_name", "not_authorized", "operation_in_progress",
           "owned", "peer_network", "plan_create", "plan_delete", "tagged"]

#: Seconds to wait: ``t(10)`` is 10 s scaled by the domain's ``time_scale``.
Timing = Callable[[float], float]

STATE_DISCONNECTED = "Disconnected"  # the original's VirtualNetworkPeeringStateDisconnected
REASON_FAILED_CREATING = "FailedCreatingVpcPeeringConnection"
REASON_UNAUTHORIZED = "Unauthorized"
REASON_ERROR = "Error"
REASON_QUOTA_EXCEEDED = "QuotaExceeded"
REASON_NOT_OWNED = "RemotePeeringNotOwned"
COND_ERROR = "Error"
COND_READY = "Ready"
COND_QUOTA_EXCEEDED = "QuotaExceeded"
ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"


#: The status field that keeps the operation a call of this kind answers.
RECORDS = {"remote_add": "remotePeeringOperation", "local_add": "localPeeringOperation"}


def not_authorized(failure: Failure) -> bool:
    """403 (the original's ``IsNotAuthorized``)."""
    return failure.status == 403


def operation_in_progress(failure: Failure) -> bool:
    """400 "There is a peering operation in progress on the local or peer network" (the original's
    ``IsOperationInProgressError``)."""
    return failure.status == 400 and "operation in progress" in failure.message


class VpcPeeringClient(Protocol):
    """What this flow needs of :class:`tasks.cloud.gcp.client.GcpClient`."""

    def get_peering(self, project: str, network: str, name: str) -> dict[str, Any] | None: ...
    def get_global_operation(self, project: str, name: str) -> dict[str, Any] | None: ...
    def network_tag_keys(self, project: str, network: str) -> list[str]: ...
    def add_peering(self, project: str, network: str, name: str, peer_project: str, peer_network: str, *,
                    import_custom_routes: bool, export_custom_routes: bool) -> str: ...
    def remove_peering(self, project: str, network: str, name: str) -> str: ...


@dataclass(frozen=True)
class Network:
    """A GCP VPC network: ``project`` and ``name`` (a KCP Network's ``reference.gcp``)."""

    project: str
    name: str

    @classmethod
    def of(cls, kcp_network: Mapping[str, Any] | None) -> Network | None:
        """The GCP network a KCP Network names (``status.network.gcp``, else ``spec.network.reference.gcp``);
        None when it names none."""
        ref = network_reference(kcp_network, "gcp")
        project, name = str(ref.get("gcpProject") or ""), str(ref.get("networkName") or "")
        return cls(project, name) if project and name else None

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"


def local_peering_name(kcp_name: str) -> str:
    """The peering in the shoot's network: ``cm-<kcpName>`` (the original's ``getKymaVpcPeeringName``)."""
    return f"cm-{kcp_name}"


def tagged(tag_keys: Sequence[str], shoot: str) -> bool:
    """Whether a network whose effective tags have these namespaced keys (``<parent>/<shortName>``, the
    parent a project or an organization) may be peered with the shoot ``shoot``: a key whose short name
    *is* the shoot name. Fix: the original (``checkIfRemoteVpcIsTagged.go``) accepted any key that
    *contains* the shoot name or ``PEERING_NETWORK_TAG`` — a key naming another shoot (``c-10`` for ``c-1``)
    or one landscape-wide key opened the network to every tenant; an empty shoot matches nothing."""
    return bool(shoot) and any(str(key).rsplit("/", 1)[-1] == shoot for key in tag_keys)


_NETWORK_URL = re.compile(r"(?:^|/)projects/([^/]+)/global/networks/([^/]+)$")


def peer_network(peering: Mapping[str, Any] | None) -> Network | None:
    """The network a peering peers with: its ``network``, a URL
    ``https://www.googleapis.com/compute/v1/projects/<p>/global/networks/<n>`` (or the relative
    ``projects/<p>/global/networks/<n>``); None when it names none."""
    match = _NETWORK_URL.search(str((peering or {}).get("network") or ""))
    return Network(match.group(1), match.group(2)) if match else None


def owned(remote_id: str, peering: Mapping[str, Any] | None, local: Network | None) -> bool:
    """Whether the remote ``peering`` is the one this object made: ``status.remoteId`` (``remote_id``) is
    recorded and names it, and it peers with this object's ``local`` (the shoot's) network. Only an owned
    remote peering skips the tag check and is deleted (fix, see the module doc)."""
    return (bool(remote_id) and peering is not None and local is not None
            and str(peering.get("name") or "") == remote_id and peer_network(peering) == local)


@dataclass(frozen=True)
class Read:
    """What one turn read. ``*_op``: the compute operation of ``status.*PeeringOperation`` (read only
    while that side has no id yet); ``*_peering``: the peering (None: none of that name); ``*_error``: the
    read of that item was refused; ``tag_keys``: the remote network's tag keys (None: not read; read
    while creating unless the remote peering is this object's, :func:`owned`)."""

    remote_op: Mapping[str, Any] | None = None
    remote_op_error: Failure | None = None
    remote_peering: Mapping[str, Any] | None = None
    remote_error: Failure | None = None
    local_op: Mapping[str, Any] | None = None
    local_op_error: Failure | None = None
    local_peering: Mapping[str, Any] | None = None
    local_error: Failure | None = None
    tag_keys: list[str] | None = None
    tags_error: Failure | None = None


def _refusal(run: StepBuilder, t: Timing, remote: Network, kind: str, err: Failure) -> Outcome:
    """What a refused call of ``kind`` means."""
    if kind in ("remote_add", "local_add") and operation_in_progress(err):
        return run.step(requeue_after=t(10))  # another peering operation of either network runs (fix)
    if kind == "remote_add":
        message = (f"Error creating Remote VpcPeering for network {remote} due to insufficient permissions"
                   if not_authorized(err) else "Error creating Remote VpcPeering")
        return run.fail(REASON_FAILED_CREATING, message, requeue_after=t(60), state=STATE_DISCONNECTED)
    if kind == "local_add":
        return run.fail(REASON_FAILED_CREATING, "Error creating local network VpcPeering",
                        requeue_after=t(60), state=STATE_DISCONNECTED)
    if kind == "local_remove":
        if operation_in_progress(err):  # the last remove still runs (fix: no Error for it)
            return run.step(requeue_after=t(10))
        return run.fail(REASON_ERROR, "Error deleting local network VpcPeering", requeue_after=t(60), state=None)
    if kind == "remote_remove":
        if err.too_many_requests:
            return run.step(requeue_after=t(60))
        if operation_in_progress(err):
            return run.step(requeue_after=t(10))
        # the original logs it (the executor does) and lets the object go: the remote side is the customer's
        return run.step(remove_finalizer=names.FINALIZER)
    return run.fail(REASON_ERROR, err.message, backoff=True, state=None)


def _call(run: StepBuilder, t: Timing, remote: Network, call: Call, requeue_after: float | None = None) -> Outcome:
    """The Outcome of one ``call``: once made, its operation recorded (:data:`RECORDS`) and back after
    ``requeue_after`` (a remote removal: the finalizer goes); refused: :func:`_refusal`."""

    def then(answers: Sequence[Any]) -> Outcome:
        if call.kind == "remote_remove":
            return run.step(remove_finalizer=names.FINALIZER)
        answer = answers[0] if answers else None
        if call.kind in RECORDS and answer:
            run.set(**{RECORDS[call.kind]: str(answer)})
        return run.step(requeue_after=requeue_after)

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
        return _refusal(run, t, remote, call.kind, failure)

    return Outcome(writes=(call,), then=then, refused=refused)


def _op_failed(op: Mapping[str, Any] | None) -> str | None:
    """The error text of a DONE operation that failed (None: not failed)."""
    if not op or op.get("status") != "DONE" or not op.get("error"):
        return None
    errors = (op.get("error") or {}).get("errors") or []
    return " ".join(f"{e.get('code', '')} {e.get('message', '')}" for e in errors) or "failed"


def _running(op: Mapping[str, Any] | None) -> bool:
    return op is not None and op.get("status") != "DONE"


def _operation(run: StepBuilder, op: Mapping[str, Any] | None, status_field: str, poll: float) -> Outcome | str | None:
    """What the operation kept in ``status.<status_field>`` says: a Outcome polling it again in ``poll``
    seconds while it runs; the error text of a failed one, which is then forgotten (fix: so the
    peering is tried again rather than stuck on it); ``None`` when there is none or it succeeded."""
    if _running(op):
        return run.step(requeue_after=poll)
    failure = _op_failed(op)
    if failure is not None:
        run.set(**{status_field: None})
    return failure


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], local: Network | None, remote: Network | None,
                found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One provisioning turn over what the shell read (pure). See the module doc for the flow and the
    ownership rule of the remote peering."""
    run = StepBuilder(obj, now)
    if local is None or remote is None:
        missing = "local" if local is None else "remote"
        return run.fail(REASON_ERROR, f"The {missing} network names no GCP project and network",
                        state=STATE_DISCONNECTED)
    details = (run.spec.get("details") or {})
    peering_name = str(details.get("peeringName") or "")
    import_routes = bool(details.get("importCustomRoutes"))
    shoot = str((scope.get("spec") or {}).get("shootName") or "")

    # 1. the remote operation
    remote_op_name = str(run.status.get("remotePeeringOperation") or "")
    if found.remote_op_error is not None:
        if not_authorized(found.remote_op_error):
            return run.fail(REASON_UNAUTHORIZED, "Error fetching GCP remote peering operation due to insufficient "
                            "permissions, please check the documentation for more details",
                            requeue_after=t(300))
        return run.fail(REASON_ERROR, f"Error loading Remote Vpc Peering Operation: {remote_op_name}",
                        requeue_after=t(60), state=None, exclusive=False)
    remote_failure = _operation(run, found.remote_op, "remotePeeringOperation", t(10))
    if isinstance(remote_failure, Outcome):
        return remote_failure
    if remote_failure is not None:  # tried again after 5 min
        if "QUOTA_EXCEEDED" in remote_failure:
            return run.fail(REASON_QUOTA_EXCEEDED, "Error creating remote Vpc Peering due to quota limits, please "
                            "check if your vpc quota limits are not exceeded.", requeue_after=t(300),
                            state=STATE_DISCONNECTED)
        return run.fail(REASON_ERROR, "The cloud provider had an error while creating Vpc Peering ",
                        requeue_after=t(300), state=STATE_DISCONNECTED)

    # 2. the remote peering (its network)
    if found.remote_error is not None:
        err = found.remote_error
        if err.not_found:
            message = f"Remote VPC Network {remote} not found."
        elif not_authorized(err):
            message = f"Unable to fetch remote VPC network {remote} due to insufficient permissions."
        else:
            message = "Error loading Remote Vpc Peering"
        return run.fail(REASON_FAILED_CREATING, message, requeue_after=t(60), state=STATE_DISCONNECTED)

    # 3. the local operation
    local_op_name = str(run.status.get("localPeeringOperation") or "")
    if found.local_op_error is not None:
        return run.fail(REASON_ERROR, f"Error loading Local Vpc Peering LocalOperation: {local_op_name}",
                        requeue_after=t(60), state=None, exclusive=False)
    local_failure = _operation(run, found.local_op, "localPeeringOperation", t(60))
    if isinstance(local_failure, Outcome):
        return local_failure
    if local_failure is not None:
        if "QUOTA_EXCEEDED" in local_failure:
            run.exclusive(COND_QUOTA_EXCEEDED, True, REASON_QUOTA_EXCEEDED, "Error creating Local Vpc Peering due to "
                          "quota limits, please check if your vpc quota limits are not exceeded.",
                          STATE_DISCONNECTED)
            return run.step(requeue_after=t(300))
        return run.fail(REASON_ERROR, "The cloud provider had an error while creating Local Vpc Peering",
                        requeue_after=t(300), state=STATE_DISCONNECTED)

    # 4. the local peering
    if found.local_error is not None:
        return run.fail(REASON_FAILED_CREATING, "Error loading Local Vpc Peering", requeue_after=t(60),
                        state=STATE_DISCONNECTED)

    # 5. the local id (the local peering is in the shoot's network, named after this object)
    if found.local_peering is not None and not run.status.get("id"):
        run.set(id=str(found.local_peering.get("name") or ""))

    # 6. a remote peering of that name to another network is someone else's: never adopted (fix)
    remote_peering = found.remote_peering
    if remote_peering is not None and peer_network(remote_peering) != local:
        return run.fail(REASON_FAILED_CREATING, f"Peering with the same name {peering_name} already exists in "
                        f"network {remote}", requeue_after=t(300), state=STATE_DISCONNECTED)

    # 7. the remote network's tag, unless the remote peering is this object's (fix: not skipped for any
    # peering of that name, nor re-checked once it is ours)
    mine = owned(str(run.status.get("remoteId") or ""), remote_peering, local)
    if not mine:
        if found.tags_error is not None:
            message = (f"Error fetching GCP remote network tags for network {remote}, due to insufficient "
                       "permissions" if not_authorized(found.tags_error) else "Error fetching GCP remote network tags")
            return run.fail(REASON_FAILED_CREATING, message, requeue_after=t(300), state=None)
        if not tagged(list(found.tag_keys or []), shoot):
            return run.fail(REASON_FAILED_CREATING, "Error creating VpcPeering, remote VPC does not have a tag "
                            f"with the key: {shoot}", requeue_after=t(300), state=STATE_DISCONNECTED)
    # 8. the remote peering: remote -> kyma, exporting custom routes iff kyma imports them
    if remote_peering is None:
        return _call(run, t, remote, Call(
            "add_peering", (remote.project, remote.name, peering_name, local.project, local.name),
            {"import_custom_routes": False, "export_custom_routes": import_routes}, kind="remote_add"), t(30))
    if not mine:  # a peering to the shoot's network that the customer's tag allows: this object's from now on
        run.set(remoteId=str(remote_peering.get("name") or ""))
    if remote_peering.get("state") not in (ACTIVE, INACTIVE):
        return run.step(requeue_after=t(10))

    # 9. the local peering: kyma -> remote, importing custom routes if asked
    if found.local_peering is None:
        return _call(run, t, remote, Call(
            "add_peering", (local.project, local.name, local_peering_name(run.name), remote.project, remote.name),
            {"import_custom_routes": import_routes, "export_custom_routes": False}, kind="local_add"), t(30))

    # 10. both ACTIVE
    if found.local_peering.get("state") != ACTIVE or remote_peering.get("state") != ACTIVE:
        return run.step(requeue_after=t(10))
    return run.ready(f"VpcPeering :{peering_name} is provisioned")


def plan_delete(obj: Mapping[str, Any], local: Network | None, remote: Network | None, found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One deletion turn (pure): the local peering (waiting until it is gone), then the remote one when
    ``details.deleteRemotePeering`` and it is this object's (:func:`owned`; fix: the original removed any
    peering of that name, another tenant's too); a remote peering that is not is left alone, an Event
    ``RemotePeeringNotOwned`` says so; then the finalizer may go."""
    run = StepBuilder(obj, now).without(COND_READY)
    details = (run.spec.get("details") or {})
    placeholder = remote or Network("", "")

    if found.local_error is not None and not found.local_error.not_found:
        return run.fail(REASON_FAILED_CREATING, "Error loading Local Vpc Peering", requeue_after=t(60),
                        state=STATE_DISCONNECTED)
    if found.local_peering is not None and local is not None:
        remove = Call("remove_peering", (local.project, local.name, local_peering_name(run.name)), kind="local_remove")
        return _call(run, t, placeholder, remove, t(10))
    if details.get("deleteRemotePeering") and found.remote_peering is not None and remote is not None:
        name = str(details.get("peeringName") or "")
        if owned(str(run.status.get("remoteId") or ""), found.remote_peering, local):
            return _call(run, t, placeholder, Call("remove_peering", (remote.project, remote.name, name),
                                                   kind="remote_remove"))
        return run.step(remove_finalizer=names.FINALIZER, event=Event(
            "Warning", REASON_NOT_OWNED, f"Remote VPC peering {name} in network {remote} was not created by this "
            "VpcPeering: it is left in place"))
    return run.step(remove_finalizer=names.FINALIZER)
