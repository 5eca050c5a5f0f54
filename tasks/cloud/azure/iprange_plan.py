"""The KCP IpRange on Azure, the plan (pure): one turn over what :mod:`tasks.cloud.azure.iprange` read
(:class:`Read`), answered as the :class:`~kube.toolkit.Outcome` of its ARM writes (:class:`Call`, made by
the executor) and what their answers and refusals lead to. It covers what the original spreads over three KCP
reconcilers for an Azure IpRange (reference notes §5.3 steps 4, 5 and 8, §5.7, §8):

- the Cloud Manager network ``<vpcNetwork>--cm`` (the Network reconciler, ``pkg/kcp/provider/azure/network``):
  resource group and VNet with the IpRange CIDR as address space, in the Scope's region;
- once that VNet is ``Succeeded``: the KCP VpcPeering ``<scope>`` between the shoot VNet and it (the
  original's ``pkg/kcp/iprange/kymaPeeringCreate.go`` / ``kymaPeeringWait.go``), as
  :func:`tasks.cloud.azure.vpcpeering_plan.kyma_peering` describes it: the plan's Outcome creates it
  when missing (:func:`tasks.cloud.kcp.iprange_plan.peering_writes`: labelled with the Scope's kyma
  name), and the KCP VpcPeering controller (:mod:`tasks.cloud.azure.vpcpeering`)
  makes ``cm--<shoot>`` in the shoot VNet and ``kyma--<shoot>`` in the CM VNet; the IpRange waits until
  the VpcPeering is Ready, so operators see this peering as every other;
- the IpRange itself (``pkg/kcp/provider/azure/iprange``): security group → subnet (address prefix =
  ``status.cidr``, that security group) → private DNS zone ``privatelink.redis.cache.windows.net``
  (``.chinacloudapi.cn`` on AzureChina) → virtual network link ``<kcpIpRangeName>`` from the zone to
  the shoot VNet, each waited for until ``provisioningState`` is ``Succeeded``.

Deletion goes in reverse: link (and wait) → DNS zone → subnet → security group → the KCP VpcPeering
(the Outcome deletes it; waited for until the turn reads it missing, its own deletion
removes both ARM peerings) → CM VNet → CM resource group; then the finalizer may go.

The plan walks the chain in that order and ends at the first resource that is not done: the writes
it planned on the way (a missing resource group and VNet are created in one turn) and the Outcome.
Errors as the original: HTTP 429 on any request → come back after 60 s with no
status change; a failed read of the security group / subnet → Error ``Error loading security group`` /
``Error loading subnet`` (60 s); of the DNS zone / link → an Error condition ``Failed loading
AzureIpRange: <err>`` (60 s); a failed create → state Error, exclusive condition Error (reason
``Error``) ``Error creating Azure security group`` / ``... subnet`` / ``... privateDnsZone`` / ``...
virtualNetworkLink`` (300 s); a failed delete → ``Error deleting virtualNetworkLink`` / ``dnsZone`` /
``subnet`` / ``security group`` (60 s; 409 on the link or zone → wait 60 s); CM network → ``Failed to
create Azure Resource Group`` (60 s) / ``Failed to create Azure VNet`` (300 s); a VpcPeering in Error → reason
``FailedCreatingVpcPeeringConnection``, ``Error creating VPC peering`` (300 s; the VpcPeering's own
status says why). Not on a CM network → ``Unsupported
network type``, not retried. Ready: state ``Ready``, condition Ready/``Ready``/``Ready``.

Deliberate differences (fixes): a resource whose provisioning ended ``Failed`` is PUT again (with the
create error in status) instead of being waited on forever; the subnet create and delete do not block
the worker until ARM is done (the next turn reads ``provisioningState`` again).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud.azure.scope import cm_name
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.calls import UNREAD, need, with_planned
from tasks.cloud.kcp.iprange_plan import peering_writes
from tasks.cloud.step import ERROR, StepBuilder, gone

__all__ = ["DNS_ZONE", "DNS_ZONE_CHINA", "NETWORK_TYPE_CLOUD_RESOURCES", "REASON_ERROR", "REASON_INVALID_CIDR",
           "REASON_PEERING", "Call", "Read", "Target", "Timing", "peering_failed",
           "peering_ready", "plan", "private_dns_zone_name", "vnet_id"]

DNS_ZONE = "privatelink.redis.cache.windows.net"
DNS_ZONE_CHINA = "privatelink.redis.cache.chinacloudapi.cn"
NETWORK_TYPE_CLOUD_RESOURCES = "cloud-resources"
REASON_ERROR = "Error"
REASON_PEERING = "FailedCreatingVpcPeeringConnection"
REASON_INVALID_CIDR = "InvalidCidr"

#: A read's answer: the resource (``None``: not found) or the refusal.
Got = Mapping[str, Any] | None | Failure


@dataclass(frozen=True)
class Timing:
    """Requeue delays in seconds (the original's ``util.Timing`` values)."""

    wait: float = 10.0            #: provisioning not finished yet (T10s)
    peering_wait: float = 1.0     #: the kyma VpcPeering not Ready / not gone yet (T1s)
    throttled: float = 60.0       #: HTTP 429 (T60s)
    load_error: float = 60.0      #: a resource could not be read (T60s)
    create_error: float = 300.0   #: a resource could not be created (T300s)
    delete_error: float = 60.0    #: a resource could not be deleted (T60s)
    link_delete_wait: float = 60.0  #: the link is being deleted (T60s)
    network_error: float = 60.0   #: the CM network could not be created (T60s)

    def scaled(self, factor: float) -> Timing:
        """All delays times ``factor`` (tests run them fast, as the original divides by 100)."""
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})


def private_dns_zone_name(cloud: str = "AzureCloud") -> str:
    """The Redis private-link zone (the original's ``NewPrivateDnsZoneName``)."""
    return DNS_ZONE_CHINA if cloud == "AzureChina" else DNS_ZONE


def vnet_id(subscription: str, rg: str, name: str) -> str:
    """A virtual network's resource id."""
    return f"/subscriptions/{subscription}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{name}"


def peering_ready(peering: Mapping[str, Any]) -> bool:
    """Whether a KCP VpcPeering is Ready (condition Ready true, or state ``Ready``)."""
    status = peering.get("status") or {}
    return cond.is_true(status.get("conditions") or [], "Ready") or status.get("state") == "Ready"


def peering_failed(peering: Mapping[str, Any]) -> bool:
    """Whether a KCP VpcPeering is in error (condition Error true, or state ``Error``)."""
    status = peering.get("status") or {}
    return cond.is_true(status.get("conditions") or [], "Error") or status.get("state") == ERROR


def _value(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def _state(resource: Mapping[str, Any]) -> str:
    """``properties.provisioningState`` of a resource."""
    return _value((resource.get("properties") or {}).get("provisioningState"))


@dataclass(frozen=True)
class Target:
    """Where the IpRange's resources live, from the Scope: its name, shoot, region, subscription, the
    shoot VNet (``vpc``, also its resource group), the CM VNet and group (``cm``) and the DNS zone."""

    scope_name: str
    shoot: str
    region: str
    subscription: str
    vpc: str
    cm: str
    zone: str

    @classmethod
    def of(cls, scope: Mapping[str, Any], subscription: str = "", cloud: str = "AzureCloud") -> Target:
        """The Scope's target (``subscription``: used when the Scope names none). Raises ``ValueError``
        for a Scope without ``spec.scope.azure.vpcNetwork``, ``spec.shootName`` or a name."""
        spec = scope.get("spec") or {}
        azure = (spec.get("scope") or {}).get("azure") or {}
        vpc = str(azure.get("vpcNetwork") or "")
        found = cls(scope_name=str((scope.get("metadata") or {}).get("name") or spec.get("kymaName") or ""),
                    shoot=str(spec.get("shootName") or ""), region=str(spec.get("region") or ""),
                    subscription=str(azure.get("subscriptionId") or subscription), vpc=vpc, cm=cm_name(vpc),
                    zone=private_dns_zone_name(cloud))
        if not found.vpc or not found.shoot or not found.scope_name:
            raise ValueError(f"Scope {found.scope_name!r} has no spec.scope.azure.vpcNetwork, spec.shootName or name")
        return found



@dataclass(frozen=True)
class Read:
    """What one turn read from ARM (each resource, ``None`` when missing, or a :class:`Failure`; one
    the plan did not need is :data:`~tasks.cloud.calls.UNREAD`): the CM resource group and VNet, the
    security group, subnet, private DNS zone and the IpRange's link. The plan asks for them in its
    walk's order, so a turn reads the chain up to where it stops (as the original, which read each
    just before deciding on it)."""

    group: Got = UNREAD
    vnet: Got = UNREAD
    nsg: Got = UNREAD
    subnet: Got = UNREAD
    zone: Got = UNREAD
    link: Got = UNREAD


@dataclass(frozen=True)
class Call:
    """One ARM write: ``AzureClient.<method>(*args)``. Failure (other than 429, which always means "come
    back after ``throttled``"): with ``conflict_wait`` set a 409 means "come back after it"; else an
    Error condition ``message`` (``reason``) and a retry after ``requeue_after``, or, with no
    ``message``, no condition: the client's error as the backoff error, retried after ``requeue_after``."""

    method: str
    args: tuple[Any, ...]
    message: str | None
    requeue_after: float
    reason: str = REASON_ERROR
    conflict_wait: float | None = None


def _failed(run: StepBuilder, timing: Timing, call: Call, failure: Failure) -> Outcome:
    """The Outcome of a refused ARM call (``run``: the status as planned before the turn's end)."""
    if failure.too_many_requests:
        return Outcome(requeue_after=timing.throttled)
    if call.conflict_wait is not None and failure.conflict:
        return run.step(requeue_after=call.conflict_wait)
    if call.message is None:
        return run.step(requeue_after=call.requeue_after, error=failure.text)
    return _error(run, call.message, call.requeue_after, call.reason)


def _error(run: StepBuilder, message: str, requeue_after: float | None, reason: str = REASON_ERROR, *,
           exclusive: bool = True, state: str | None = ERROR) -> Outcome:
    """An Error condition (exclusive, or set among the others) and ``state``; come back after ``requeue_after``."""
    return run.fail(reason, message, requeue_after=requeue_after, state=state, exclusive=exclusive)


class _Walk:
    """The plan being built: the writes planned so far, ended by :meth:`end` with the turn's Outcome."""

    def __init__(self, run: StepBuilder, timing: Timing, network_type: str | None = None,
                 peering: Mapping[str, Any] | None = None, wanted: Mapping[str, Any] | None = None) -> None:
        self.run = run
        self.t = timing
        self.network_type = network_type
        self.peering = peering
        self.wanted = wanted
        self.calls: list[Call] = []

    def call(self, method: str, *args: Any, message: str | None, requeue_after: float, reason: str = REASON_ERROR,
             conflict_wait: float | None = None) -> None:
        self.calls.append(Call(method, args, message, requeue_after, reason, conflict_wait))

    def end(self, final: Callable[[StepBuilder], Outcome], peering: bool | None = None) -> Outcome:
        """The turn's Outcome: the calls, then the Outcome ``final`` builds (a refused call's Outcome is
        built over the status as it was before ``final``); ``peering`` ``True`` / ``False``: the kyma
        VpcPeering must exist / be gone, written first (``None``: left as it is)."""
        before = copy.copy(self.run)
        before.changes = dict(self.run.changes)
        last = final(self.run)
        if peering is not None and self.wanted is not None:
            last = last.first(*peering_writes(self.run.obj, self.wanted, self.peering, peering))
        calls = tuple(self.calls)
        return with_planned(calls, lambda answers: last, lambda call, failure: _failed(before, self.t, call, failure))

    def refused(self, refused: Failure, step: Callable[[StepBuilder, Failure], Outcome]) -> Outcome:
        """A refused read ends the turn: 429 → come back after ``throttled`` (no status change), else ``step``."""
        if refused.too_many_requests:
            return self.end(lambda run: Outcome(requeue_after=self.t.throttled))
        return self.end(lambda run: step(run, refused))

    def ensure(self, resource: Mapping[str, Any] | None, method: str, args: tuple[Any, ...], message: str,
               wait: float) -> Outcome | None:
        """``None`` when ``resource`` is ``Succeeded``; else the end of the turn: create it when missing
        (come back after ``wait``), PUT a ``Failed`` one again (and report ``message``), or wait."""
        state = None if resource is None else _state(resource)
        if state == "Succeeded":
            return None
        if state in (None, "Failed"):
            self.call(method, *args, message=message, requeue_after=self.t.create_error)
        if state == "Failed":
            return self.end(lambda run: _error(run, message, self.t.create_error))
        return self.end(lambda run: run.step(requeue_after=wait))

    def deleted(self, resource: Mapping[str, Any] | None, method: str, args: tuple[Any, ...], message: str | None,
                wait: float, conflict_wait: float | None = None) -> Outcome | None:
        """``None`` when ``resource`` is gone; else the end of the turn: delete it (unless it is being
        deleted) and come back after ``wait``."""
        if resource is None:
            return None
        if _state(resource) != "Deleting":
            self.call(method, *args, message=message,
                      requeue_after=self.t.delete_error if message is not None else self.t.wait,
                      conflict_wait=conflict_wait)
        return self.end(lambda run: run.step(requeue_after=wait))


def plan(iprange: Mapping[str, Any], scope: Mapping[str, Any], found: Read, timing: Timing = Timing(), *,
         now: str | None = None, subscription: str = "", cloud: str = "AzureCloud",
         network_type: str | None = None, peering: Mapping[str, Any] | None = None) -> Outcome:
    """One turn of a KCP IpRange on Azure over ``found`` (see the module doc). ``network_type``: the KCP
    Network's ``spec.type`` when the controller knows it (else the network name decides);
    ``peering``: the KCP VpcPeering ``<scope>`` as the controller read it (``None``: missing). Raises
    :class:`~tasks.cloud.calls.Needed` naming the next read while one it looks at is unread. A Scope
    without the Azure fields (:meth:`Target.of`) is an Error saying so."""
    run = StepBuilder(iprange, now)
    try:
        target = Target.of(scope, subscription, cloud)
    except ValueError as exc:
        return run.fail(REASON_ERROR, str(exc))
    walk = _Walk(run, timing, network_type, peering, kyma_peering(scope))
    return _delete(walk, target, found) if run.deleting else _create(walk, target, found)


def _create(w: _Walk, at: Target, found: Read) -> Outcome:
    run, t, cm = w.run, w.t, at.cm
    network = str((run.spec.get("network") or {}).get("name") or f"{at.scope_name}--kyma")
    on_cm = w.network_type == NETWORK_TYPE_CLOUD_RESOURCES if w.network_type \
        else network == f"{at.scope_name}--cm"
    if not on_cm:
        return w.end(lambda r: _error(r, "Unsupported network type", None))
    cidr = str(run.status.get("cidr") or run.spec.get("cidr") or "")
    if not cidr:
        return w.end(lambda r: _error(r, "CIDR is required", None, REASON_INVALID_CIDR))
    if not run.status.get("cidr"):
        run.set(cidr=cidr)

    def load_failed(run: StepBuilder, refused: Failure) -> Outcome:
        return run.step(requeue_after=t.wait)

    # The CM network: resource group, then VNet (the Network reconciler's job in the original).
    group = need(found, "group")
    if isinstance(group, Failure):
        return w.refused(group, load_failed)
    if group is None:
        w.call("create_resource_group", cm, at.region, message="Failed to create Azure Resource Group",
               requeue_after=t.network_error)
    vnet = need(found, "vnet")
    if isinstance(vnet, Failure):
        return w.refused(vnet, load_failed)
    ended = w.ensure(vnet, "create_vnet", (cm, cm, at.region, cidr), "Failed to create Azure VNet", t.wait)
    if ended:
        return ended

    # The kyma VpcPeering <scope>: must exist (the controller creates it), waited for until Ready.
    kyma_id = vnet_id(at.subscription, at.vpc, at.vpc)
    peering = w.peering
    if peering is None or not peering_ready(peering):
        if peering is not None and peering_failed(peering):
            return w.end(lambda run: _error(run, "Error creating VPC peering", t.create_error, REASON_PEERING),
                         peering=True)
        return w.end(lambda run: run.step(requeue_after=t.peering_wait), peering=True)

    # Security group → subnet → private DNS zone → virtual network link.
    nsg = need(found, "nsg")
    if isinstance(nsg, Failure):
        return w.refused(nsg, lambda run, _: _error(run, "Error loading security group", t.load_error))
    ended = w.ensure(nsg, "create_security_group", (cm, cm, at.region), "Error creating Azure security group", t.wait)
    if ended:
        return ended
    assert nsg is not None  # Succeeded past ensure
    subnet = need(found, "subnet")
    if isinstance(subnet, Failure):
        return w.refused(subnet, lambda run, _: _error(run, "Error loading subnet", t.load_error))
    ended = w.ensure(subnet, "create_subnet", (cm, cm, cm, cidr, nsg["id"]), "Error creating Azure subnet",
                     t.wait)
    if ended:
        return ended

    def load_dns_failed(run: StepBuilder, refused: Failure) -> Outcome:
        return _error(run, f"Failed loading AzureIpRange: {refused.text}", t.load_error, exclusive=False, state=None)

    zone = need(found, "zone")
    if isinstance(zone, Failure):
        return w.refused(zone, load_dns_failed)
    ended = w.ensure(zone, "create_private_dns_zone", (cm, at.zone), "Error creating Azure privateDnsZone",
                     t.wait)
    if ended:
        return ended
    link = need(found, "link")
    if isinstance(link, Failure):
        return w.refused(link, load_dns_failed)
    ended = w.ensure(link, "create_vnet_link", (cm, at.zone, w.run.name, kyma_id),
                     "Error creating Azure virtualNetworkLink", t.wait)
    return ended or w.end(lambda run: run.ready())


def _delete(w: _Walk, at: Target, found: Read) -> Outcome:
    t, cm = w.t, at.cm

    def load_failed(run: StepBuilder, refused: Failure) -> Outcome:
        return run.step(requeue_after=t.load_error)

    # (read, how a refused read ends the turn, the delete call, its error message, wait, 409 wait)
    chain: list[tuple[str, Callable[[StepBuilder, Failure], Outcome], str, tuple[Any, ...], str | None, float,
                      float | None]] = [
        ("link", load_failed, "delete_vnet_link", (cm, at.zone, w.run.name), "Error deleting virtualNetworkLink",
         t.link_delete_wait, t.throttled),
        ("zone", load_failed, "delete_private_dns_zone", (cm, at.zone), "Error deleting dnsZone", t.wait,
         t.throttled),
        ("subnet", lambda run, _: _error(run, "Error loading subnet", t.load_error), "delete_subnet",
         (cm, cm, cm), "Error deleting subnet", t.wait, None),
        ("nsg", lambda run, _: _error(run, "Error loading security group", t.load_error),
         "delete_security_group", (cm, cm), "Error deleting security group", t.wait, None),
        ("vnet", load_failed, "delete_vnet", (cm, cm), None, t.wait, None),
        ("group", load_failed, "delete_resource_group", (cm,), None, t.wait, None),
    ]
    for key, on_refused, method, args, message, wait, conflict_wait in chain:
        if key == "vnet" and w.peering is not None:  # the kyma VpcPeering goes before the CM VNet
            return w.end(lambda run: run.step(requeue_after=t.peering_wait), peering=False)
        got = need(found, key)
        if isinstance(got, Failure):
            return w.refused(got, on_refused)
        ended = w.deleted(got, method, args, message, wait, conflict_wait)
        if ended:
            return ended
    return w.end(lambda run: gone())
