"""The KCP VpcPeering on Azure (cloud-manager's ``pkg/kcp/provider/azure/vpcpeering``, notes §8).

Two virtual network peerings make one connection: the *local* one, named ``details.localPeeringName``
(else the KCP name), in the local VNet (the shoot's, ``<kyma>--kyma``; allows VNet access, uses the
remote gateways iff ``details.useRemoteGateway``, no gateway transit), and the *remote* one, named
``details.peeringName``, in the customer's VNet (allows VNet access, no remote gateways, allows gateway
transit iff ``useRemoteGateway``). Three clients, as the original's: ``local`` (the Scope's
subscription and tenant), ``peering`` (the same, with the remote tenant as auxiliary tenant: creating a
peering needs access to both VNets) and ``remote`` (the remote VNet's subscription, the remote tenant —
the local one when none is given — with the local tenant as auxiliary when they differ). Credentials:
``AZURE_PEERING_CLIENT_ID`` / ``AZURE_PEERING_CLIENT_SECRET`` (else the default ones), a service
principal that exists in both tenants.

One turn is read → pure plan → calls → Outcome (docs/cloud.md, "A new kind: the recipe"): the shell
:mod:`tasks.cloud.azure.vpcpeering` builds the three clients and loads both peerings and, before the
remote peering exists, the remote VNet (:class:`Read`, refusals kept as :class:`~kube.refusal.Failure` s);
:func:`plan_create` / :func:`plan_delete` here decide (pure: no I/O) and answer an
:class:`~kube.toolkit.Outcome`: the calls (:class:`~kube.toolkit.Call` on client ``local``, ``peering``
or ``remote``; their ``kind``: ``local_create``, ``remote_create``, ``remote_delete``, ``local_delete``),
what they lead to and what a refused one means, which the executor carries out.

Flow, as the original's: the local client not buildable -> Error ``CloudProviderError`` ``Failed
creating Azure client for tenant <t> subscription <s>: <why>`` (5 min, :func:`client_failed`); a local or
remote network that names no VNet -> Error ``The <side> network names no Azure VNet``; state
``Initiated`` at first; the remote VNet must carry a tag whose key is the
configured network tag or the shoot name, unless the remote network is Kyma's or Cloud Manager's
(``Warning``, ``FailedLoadingRemoteVpcNetwork`` ``Loaded remote VPC network has no matching tags``, 60 s);
the remote peering name is required (``Peering name not specified``); create the local peering, then the
remote one (in the same turn), wait until the local one is ``Connected`` (1 s); Ready: state ``Ready``,
``status.id`` / ``remoteId`` the peerings' resource ids, the single condition Ready/``Ready``/``Ready``.
Azure's error codes are mapped to the original's messages and state ``Warning`` (:func:`error_message`);
HTTP 429 comes back after 60 s (10 s while loading the local peering) without a status change.
Deleting: the remote peering when ``details.deleteRemotePeering`` and it is this object's (:func:`owned`; a
failure is ignored, as the original), then the local one; then the finalizer may go.

Ownership of the remote peering (the original's rule, which the port had lost): the customer's VNet and the
peering's name come from the SKR object, i.e. from the tenant, and the peering service principal is shared
by every tenant. The remote peering is this object's only when ``status.remoteId`` is recorded and is its
resource id, and it references this object's local (the shoot's) VNet (:func:`owned`); ``remoteId`` is
recorded when this object's PUT of the remote peering answered, or at Ready for a peering to the shoot's
VNet that passed the tag check. Only then is it deleted (``deleteRemotePeering``) and the tag check
skipped; a peering of that name referencing another VNet is the Warning below and is never deleted:
deletion leaves it alone (an Event ``RemotePeeringNotOwned`` says so, naming only what the tenant gave) and
the object finishes deleting. The original's ``peeringRemoteLoad.go`` kept the remote peering only when it
referenced the local VNet and ``peeringRemoteDelete.go`` deleted only that one; the port deleted any peering
of that name, so tenant A, naming tenant B's customer VNet and B's remote peering, removed B's peering.

Deliberate differences (fixes): a failed load of the remote peering whose error maps to a warning ends
in state ``Warning`` (the original overwrote it with ``Error``); the "Failed creating Azure client"
message names tenant and subscription in that order (the original swapped them); a local peering left
``Disconnected`` by the customer removing their side is PUT again before their side is re-created
(Azure refuses the latter otherwise; the original did so only with ``vpcPeeringSync``); peerings' remote
VNet ids are compared case-insensitively (ARM ids are); the Ready state is ``Ready`` (the original's
``Connected``). The ``vpcPeeringSync`` flag (off in GA) is not ported.
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

__all__ = [
    "ERROR_MESSAGES",
    "UNAUTHENTICATED",
    "Read",
    "VNet",
    "VpcPeeringClient",
    "client_failed",
    "error_message",
    "kyma_peering",
    "local_peering_name",
    "network_type",
    "owned",
    "plan_create",
    "plan_delete",
    "read_failed",
    "vnet_tagged",
]

#: Seconds to wait: ``t(10)`` is 10 s scaled by the domain's ``time_scale``.
Timing = Callable[[float], float]

STATE_INITIATED = "Initiated"
STATE_WARNING = "Warning"
STATE_ERROR = "Error"
REASON_FAILED_CREATING = "FailedCreatingVpcPeeringConnection"
REASON_FAILED_LOADING_NETWORK = "FailedLoadingRemoteVpcNetwork"
REASON_FAILED_LOADING_PEERING = "FailedLoadingRemoteVpcPeeringConnection"
REASON_UNAUTHORIZED = "Unauthorized"
REASON_CLOUD_PROVIDER_ERROR = "CloudProviderError"
REASON_ERROR = "Error"
REASON_NOT_OWNED = "RemotePeeringNotOwned"
CONNECTED = "Connected"
DISCONNECTED = "Disconnected"
#: Remote network types peered without the tag check (the original's ``predicateRequireVNetShootTag``).
UNTAGGED_NETWORK_TYPES = ("kyma", "cloud-resources")

#: Azure error code -> the user's message (the original's ``azuremeta.GetErrorMessage``); each is a Warning.
ERROR_MESSAGES = {
    "RemotePeeringIsDisconnected": "Cannot create or update peering because remote peering referencing parent "
    "virtual network is in Disconnected state. Update or re-create the remote peering to get it back to Initiated "
    "state. Peering gets Disconnected when remote vnet or remote peering is deleted and re-created",
    "AnotherPeeringAlreadyReferencesRemoteVnet": "Peering already references remote virtual network. Cannot add "
    "another peering referencing the same remote virtual network.",
    "AuthorizationFailed": "Not authorized to perform action.",
    "VnetAddressSpaceOverlapsWithAlreadyPeeredVnet": "Cannot create or update peering. Virtual networks cannot be "
    "peered because address space of the first virtual network overlaps with address space of third virtual network "
    "already peered with the second virtual network.",
    "InvalidResourceName": "Resource name is invalid. The name can be up to 80 characters long. It must begin with a "
    "word character, and it must end with a word character. The name may contain word characters or '.', '-'.",
    "VnetAddressSpacesOverlap": "Cannot create or update peering. Virtual networks cannot be peered because their "
    "address spaces overlap. ",
    "InvalidAuthenticationTokenTenant": "Authentication failed",
    "Conflict": "Another Azure operation is pending for requested object",
}
MISSING_SERVICE_PRINCIPAL = "The client application is missing service principal in the remote tenant"
_OVERLAPPING = re.compile(r'Overlapping address prefixes:[^"]*')
#: The code of a credential that could not get a token (``tasks.cloud.azure.client.UNAUTHENTICATED``: this
#: module imports no client).
UNAUTHENTICATED = "ClientAuthenticationError"


#: The code of the refusal a local client that cannot be built is reported as (:func:`client_failed`).
CLIENT_FAILED = "AzureClientFailed"


def unauthorized(failure: Failure) -> bool:
    """ARM code ``AuthorizationFailed`` (the original's ``IsUnauthorized``)."""
    return failure.code == "AuthorizationFailed"


def unauthenticated(failure: Failure) -> bool:
    """No token could be had (the original's ``IsUnauthenticated``), e.g. the service principal does not
    exist in the remote tenant."""
    return failure.status == 0 and failure.code == UNAUTHENTICATED


def error_message(err: Failure, default: str) -> tuple[str, bool]:
    """``(message, is_warning)`` for an Azure failure, as the original's ``GetErrorMessage``: a known
    code's message (``VnetAddressSpacesOverlap`` with ARM's "Overlapping address prefixes: ..." appended),
    else ARM's own message; a credential failure is the missing service principal; all these are
    warnings. A failure without an answer (transport) is ``default``, an error."""
    if err.status > 0:  # ARM answered
        known = ERROR_MESSAGES.get(err.code)
        if known is not None:
            if err.code == "VnetAddressSpacesOverlap":
                match = _OVERLAPPING.search(err.message)
                known += match.group(0) if match else ""
            return known, True
        if err.message:
            return err.message, True
    if unauthenticated(err):
        return MISSING_SERVICE_PRINCIPAL, True
    return default, False


class VpcPeeringClient(Protocol):
    """What this flow needs of :class:`tasks.cloud.azure.client.AzureClient`."""

    def get_vnet(self, rg: str, name: str) -> dict[str, Any] | None: ...
    def get_peering(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None: ...
    def create_peering(self, rg: str, vnet: str, name: str, remote_vnet_id: str, *, allow_vnet_access: bool = True,
                       use_remote_gateways: bool = False,
                       allow_gateway_transit: bool = False) -> dict[str, Any] | None: ...
    def delete_peering(self, rg: str, vnet: str, name: str) -> None: ...


_VNET_ID = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Network/"
                      r"virtualNetworks/([^/]+)$", re.IGNORECASE)


@dataclass(frozen=True)
class VNet:
    """An Azure virtual network (a KCP Network's ``reference.azure``)."""

    subscription: str
    resource_group: str
    name: str
    tenant: str = ""

    @classmethod
    def of(cls, kcp_network: Mapping[str, Any] | None) -> VNet | None:
        """The VNet a KCP Network names (``status.network.azure``, else ``spec.network.reference.azure``);
        None when it names none."""
        ref = network_reference(kcp_network, "azure")
        vnet = cls(str(ref.get("subscriptionId") or ""), str(ref.get("resourceGroup") or ""),
                   str(ref.get("networkName") or ""), str(ref.get("tenantId") or ""))
        return vnet if vnet.subscription and vnet.resource_group and vnet.name else None

    @classmethod
    def from_id(cls, resource_id: str, tenant: str = "") -> VNet | None:
        """The VNet of a resource id ``/subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Network/
        virtualNetworks/<name>`` (an SKR AzureVpcPeering's ``remoteVnet``); None for anything else."""
        match = _VNET_ID.match(resource_id or "")
        return cls(match.group(1), match.group(2), match.group(3), tenant) if match else None

    @property
    def id(self) -> str:
        """The VNet's resource id."""
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}/providers/"
                f"Microsoft.Network/virtualNetworks/{self.name}")


_PEERING_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Network/"
                         r"virtualNetworks/([^/]+)(?:/virtualNetworkPeerings/[^/]+)?$", re.IGNORECASE)


def _rg_vnet(resource_id: str, fallback: VNet) -> tuple[str, str]:
    """Resource group and VNet of a peering's (or VNet's) resource id, else of ``fallback``."""
    match = _PEERING_ID.match(resource_id or "")
    return (match.group(1), match.group(2)) if match else (fallback.resource_group, fallback.name)


def local_peering_name(obj: Mapping[str, Any]) -> str:
    """``details.localPeeringName``, else the KCP name (the original's ``GetLocalPeeringName``)."""
    details = (obj.get("spec") or {}).get("details") or {}
    return str(details.get("localPeeringName") or (obj.get("metadata") or {}).get("name") or "")


def kyma_peering(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The KCP VpcPeering between the shoot's VNet and the Cloud Manager VNet of an Azure IpRange, as the
    original's IpRange reconciler creates it (``pkg/kcp/iprange/kymaPeeringCreate.go``): named after the
    Scope, local network ``<kyma>--kyma`` (peering ``cm--<shoot>`` in the shoot's VNet), remote network
    ``<kyma>--cm`` (peering ``kyma--<shoot>`` in the Cloud Manager VNet; a ``cloud-resources`` network:
    no tag check), ``deleteRemotePeering`` true."""
    meta = scope.get("metadata") or {}
    spec = scope.get("spec") or {}
    kyma, shoot = str(meta.get("name") or spec.get("kymaName") or ""), str(spec.get("shootName") or "")
    return {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "VpcPeering",
            "metadata": {"name": kyma, "namespace": str(meta.get("namespace") or names.KCP_NAMESPACE)},
            "spec": {"remoteRef": {"namespace": "none", "name": "none"}, "scope": {"name": kyma},
                     "details": {"localNetwork": {"name": f"{kyma}--kyma"}, "remoteNetwork": {"name": f"{kyma}--cm"},
                                 "peeringName": f"kyma--{shoot}", "localPeeringName": f"cm--{shoot}",
                                 "deleteRemotePeering": True}}}


def vnet_tagged(vnet: Mapping[str, Any], shoot: str, network_tag: str) -> bool:
    """Whether the VNet carries a tag whose key is the configured network tag or the shoot name."""
    tags = vnet.get("tags") or {}
    return (bool(network_tag) and network_tag in tags) or (bool(shoot) and shoot in tags)


def points_to(peering: Mapping[str, Any] | None) -> str:
    """The resource id of the VNet a peering references (``properties.remoteVirtualNetwork.id``)."""
    return str((((peering or {}).get("properties") or {}).get("remoteVirtualNetwork") or {}).get("id") or "")


def owned(remote_id: str, peering: Mapping[str, Any] | None, local: VNet | None) -> bool:
    """Whether the remote ``peering`` is the one this object made: ``status.remoteId`` (``remote_id``) is
    recorded and is its resource id, and it references this object's ``local`` (the shoot's) VNet (ARM ids
    compared case-insensitively). Only an owned remote peering skips the tag check and is deleted (the
    original's rule, see the module doc)."""
    return (bool(remote_id) and peering is not None and local is not None
            and str(peering.get("id") or "").lower() == remote_id.lower()
            and points_to(peering).lower() == local.id.lower())


@dataclass(frozen=True)
class Read:
    """What one turn read (``*_error``: that read failed; ``remote_vnet``: read while creating unless the
    remote peering is this object's (:func:`owned`), for the tag check; ``client_error``: the remote
    clients could not be built)."""

    local_peering: Mapping[str, Any] | None = None
    local_error: Failure | None = None
    remote_peering: Mapping[str, Any] | None = None
    remote_error: Failure | None = None
    remote_vnet: Mapping[str, Any] | None = None
    remote_vnet_error: Failure | None = None
    client_error: str = ""


def _refusal(run: StepBuilder, t: Timing, call: Call, err: Failure) -> Outcome | None:
    """What a refused ``call`` means; None: go on (a refused remote delete, as the original)."""
    if call.kind == "remote_delete":  # the executor logs it
        return None
    if err.too_many_requests:
        return Outcome(requeue_after=t(60))
    if call.kind == "local_delete":
        return run.step(requeue_after=t(300))
    default = "Error creating VPC peering" if call.kind == "local_create" else "Error creating remote VPC peering"
    message, warning = error_message(err, default)
    run.without(names.COND_READY)
    return run.fail(REASON_FAILED_CREATING, message, state=STATE_WARNING if warning else STATE_ERROR,
                    exclusive=False)


def _calls(run: StepBuilder, t: Timing, calls: Sequence[Call],
           then: Outcome | Callable[[Sequence[Any]], Outcome]) -> Outcome:
    """``calls`` in order, then ``then`` (an Outcome, or one made of the calls' answers); a refused one:
    :func:`_refusal`."""
    if not calls:
        return then if isinstance(then, Outcome) else then(())

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        assert isinstance(write, Call)
        return _refusal(run, t, write, failure)

    if isinstance(then, Outcome):
        fixed = then
        return Outcome(writes=tuple(calls), then=lambda answers: fixed, refused=refused)
    return Outcome(writes=tuple(calls), then=then, refused=refused)


def client_failed(obj: Mapping[str, Any], why: str, t: Timing, now: str | None = None) -> Outcome:
    """The local client could not be built (``why``: ``Failed creating Azure client for tenant <t>
    subscription <s>: <reason>``): Error ``CloudProviderError``, back after 5 min."""
    return StepBuilder(obj, now).fail(REASON_CLOUD_PROVIDER_ERROR, why, requeue_after=t(300))


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, now: str | None = None) -> Outcome:
    """A refused client or read: the local client not buildable (code :data:`CLIENT_FAILED`) is
    :func:`client_failed`; a transient refusal comes back after its delay (10 s), the status untouched;
    any other fails the turn with backoff."""
    if failure.code == CLIENT_FAILED:
        return client_failed(obj, failure.message, t, now)
    if failure.retryable:
        return Outcome(requeue_after=t(failure.delay if failure.delay is not None else 10.0))
    return Outcome(error=str(failure))


def network_type(kcp_network: Mapping[str, Any] | None) -> str:
    """A KCP Network's type (``status.networkType``, else ``spec.type``; ``""`` without a network)."""
    network = kcp_network or {}
    return str((network.get("status") or {}).get("networkType") or (network.get("spec") or {}).get("type") or "")


def _load_failed(run: StepBuilder, t: Timing, err: Failure, default: str, reason: str) -> Outcome:
    """A failed load of the remote peering (or VNet): 429 → 60 s; else the mapped message."""
    if err.too_many_requests:
        return Outcome(requeue_after=t(60))
    message, warning = error_message(err, default)
    requeue: float | None = None
    if unauthorized(err):
        reason, requeue = REASON_UNAUTHORIZED, t(300)
    elif unauthenticated(err):
        requeue = t(300)
    run.without(names.COND_READY)
    return run.fail(reason, message, requeue_after=requeue, state=STATE_WARNING if warning else STATE_ERROR,
                    exclusive=False)


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], local: VNet | None, remote: VNet | None,
                remote_type: str, found: Read, t: Timing, network_tag: str = "", now: str | None = None) -> Outcome:
    """One provisioning turn over what the shell read (pure). See the module doc for the flow."""
    run = StepBuilder(obj, now)
    if local is None or remote is None:
        missing = "local" if local is None else "remote"
        return run.fail(REASON_ERROR, f"The {missing} network names no Azure VNet")
    details = run.spec.get("details") or {}
    peering_name = str(details.get("peeringName") or "")
    use_remote_gateway = bool(details.get("useRemoteGateway"))
    shoot = str((scope.get("spec") or {}).get("shootName") or "")
    azure = ((scope.get("spec") or {}).get("scope") or {}).get("azure") or {}

    if not run.status.get("state"):
        run.set(state=STATE_INITIATED)
    # the local peering
    local_peering = found.local_peering
    if found.local_error is not None and not found.local_error.not_found:
        err = found.local_error
        if err.too_many_requests:
            return run.step(requeue_after=t(10))
        return run.step(requeue_after=t(300))
    # the remote clients
    if found.client_error:
        tenant = remote.tenant or str(azure.get("tenantId") or "")
        return run.fail(REASON_CLOUD_PROVIDER_ERROR, f"Failed creating Azure client for tenant {tenant} "
                        f"subscription {remote.subscription}", requeue_after=t(300))
    # the remote peering
    remote_peering = found.remote_peering
    if found.remote_error is not None and not found.remote_error.not_found:
        return _load_failed(run, t, found.remote_error, "Error loading remote VPC peering",
                            REASON_FAILED_LOADING_PEERING)
    if remote_peering is not None and points_to(remote_peering).lower() != local.id.lower():
        # a peering of that name to another VNet: someone else's, never adopted nor deleted
        run.without(names.COND_READY)
        return run.fail(REASON_FAILED_LOADING_PEERING, f"Peering with the same name {peering_name} already "
                        f"exists in network {remote.id}", state=STATE_WARNING, exclusive=False)
    if not peering_name:
        return run.fail(REASON_ERROR, "Peering name not specified")
    mine = owned(str(run.status.get("remoteId") or ""), remote_peering, local)
    # the remote VNet's tag, unless the remote peering is this object's (fix: not skipped for any peering of
    # that name)
    if not mine and remote_type not in UNTAGGED_NETWORK_TYPES:
        if found.remote_vnet_error is not None:
            err = found.remote_vnet_error
            if err.too_many_requests:
                return Outcome(requeue_after=t(60))
            message, warning = error_message(err, "Error loading remote network")
            requeue: float | None = t(60)
            if err.not_found:  # the user must change the object: no requeue
                message, requeue = "Remote VPC network not found", None
            reason = REASON_UNAUTHORIZED if unauthorized(err) else REASON_FAILED_LOADING_NETWORK
            return run.fail(reason, message, requeue_after=requeue,
                            state=STATE_WARNING if warning else STATE_ERROR, exclusive=False)
        if not vnet_tagged(found.remote_vnet or {}, shoot, network_tag):
            return run.fail(REASON_FAILED_LOADING_NETWORK, "Loaded remote VPC network has no matching tags",
                            requeue_after=t(60), state=STATE_WARNING, exclusive=False)
    calls: list[Call] = []
    state = str(((local_peering or {}).get("properties") or {}).get("peeringState") or "")
    # fix: a local peering Disconnected (the customer removed their side) is PUT again before their side is
    # made anew, which Azure requires (the original only did so with the vpcPeeringSync flag)
    if local_peering is None or state == DISCONNECTED:
        calls.append(Call("create_peering", (local.resource_group, local.name, local_peering_name(obj), remote.id),
                          {"allow_vnet_access": True, "use_remote_gateways": use_remote_gateway,
                           "allow_gateway_transit": False}, client="peering", kind="local_create"))
    if remote_peering is None:
        calls.append(Call("create_peering", (remote.resource_group, remote.name, peering_name, local.id),
                          {"allow_vnet_access": True, "use_remote_gateways": False,
                           "allow_gateway_transit": use_remote_gateway}, client="remote", kind="remote_create"))
    if calls or state != CONNECTED or local_peering is None or remote_peering is None:
        def made(answers: Sequence[Any]) -> Outcome:
            if remote_peering is None:  # the remote peering this object made (the last call): its id recorded
                created = answers[-1] if answers and isinstance(answers[-1], Mapping) else {}
                run.set(remoteId=str(created.get("id") or f"{remote.id}/virtualNetworkPeerings/{peering_name}"))
            return run.step(requeue_after=t(1))
        return _calls(run, t, calls, made)
    run.set(id=str(local_peering.get("id") or ""), remoteId=str(remote_peering.get("id") or ""))
    return run.ready()


def plan_delete(obj: Mapping[str, Any], local: VNet | None, remote: VNet | None, found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One deletion turn (pure): the remote peering when ``details.deleteRemotePeering`` and it is this
    object's (:func:`owned`; else it stays and an Event ``RemotePeeringNotOwned`` says so), then the local
    one; the finalizer goes in the same turn (ARM deletes them on its own time, as in the original)."""
    run = StepBuilder(obj, now)
    details = run.spec.get("details") or {}

    if found.local_error is not None and not found.local_error.not_found:
        return run.step(requeue_after=t(10) if found.local_error.too_many_requests else t(300))
    if found.client_error and remote is not None:
        return run.fail(REASON_CLOUD_PROVIDER_ERROR, f"Failed creating Azure client for tenant {remote.tenant} "
                        f"subscription {remote.subscription}", requeue_after=t(300))
    calls: list[Call] = []
    event: Event | None = None
    if details.get("deleteRemotePeering") and found.remote_peering is not None and remote is not None:
        name = str(details.get("peeringName") or "")
        if owned(str(run.status.get("remoteId") or ""), found.remote_peering, local):
            rg, vnet = _rg_vnet(str(found.remote_peering.get("id") or ""), remote)
            calls.append(Call("delete_peering", (rg, vnet, name), client="remote", kind="remote_delete"))
        else:  # fix: another tenant's peering of that name, or one this object never recorded, stays
            event = Event("Warning", REASON_NOT_OWNED, f"Remote VPC peering {name} in network {remote.id} was not "
                          "created by this VpcPeering: it is left in place")
    if found.local_peering is not None and local is not None:
        rg, vnet = _rg_vnet(str(found.local_peering.get("id") or ""), local)
        calls.append(Call("delete_peering", (rg, vnet, local_peering_name(obj)), client="local", kind="local_delete"))
    return _calls(run, t, calls, run.step(remove_finalizer=names.FINALIZER, event=event))
