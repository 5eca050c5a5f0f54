"""The KCP IpRange on Azure: one reconcile step covering what the original spreads over three KCP
reconcilers for an Azure IpRange (reference notes §5.3 steps 4, 5 and 8, §5.7, §8):

- the Cloud Manager network ``<vpcNetwork>--cm`` (the Network reconciler, ``pkg/kcp/provider/azure/network``):
  resource group and VNet with the IpRange CIDR as address space, in the Scope's region;
- the peering between the shoot VNet and that network (the VpcPeering ``<scope>``,
  ``pkg/kcp/provider/azure/vpcpeering``): ``cm--<shoot>`` in the shoot VNet and ``kyma--<shoot>`` in the
  CM VNet, waited for until ``Connected``;
- the IpRange itself (``pkg/kcp/provider/azure/iprange``): security group → subnet (address prefix =
  ``status.cidr``, that security group) → private DNS zone ``privatelink.redis.cache.windows.net``
  (``.chinacloudapi.cn`` on AzureChina) → virtual network link ``<kcpIpRangeName>`` from the zone to
  the shoot VNet, each waited for until ``provisioningState`` is ``Succeeded``.

Deletion goes in reverse: link (and wait) → DNS zone → subnet → security group → peerings (remote
side first, as the original) → CM VNet → CM resource group; then the finalizer may go.

Contract::

    step = reconcile(iprange, scope, client)          # -> kube.toolkit.Step

- ``iprange``: the KCP IpRange dict (``metadata.name``, ``metadata.deletionTimestamp``, ``spec.cidr``,
  ``spec.network.name`` — ``<scope>--cm`` on Azure, as the SKR loop projects it —, ``status``). The
  common part (Scope, finalizer, CIDR allocation, delete-while-used) runs before; this step needs
  ``status.cidr`` or ``spec.cidr``. ``network_type`` (the KCP Network's ``spec.type``) may be passed
  when the controller knows it; otherwise the network name decides.
- ``scope``: the KCP Scope dict (``metadata.name``, ``spec.region``, ``spec.shootName``,
  ``spec.scope.azure.{subscriptionId, vpcNetwork}``).
- ``client``: a :class:`tasks.cloud.azure.client.AzureClient` for the Scope's subscription.

One step does at most one cloud write and answers a :class:`Step` (status merge patch, requeue, finalizer,
Event). Errors as the original: HTTP 429 anywhere → come back after 60 s with no status change; a failed
load of the security group / subnet → Error ``Error loading security group`` / ``Error loading subnet``
(60 s); of the DNS zone / link → an Error condition ``Failed loading AzureIpRange: <err>`` (60 s); a
failed create → state Error, exclusive condition Error (reason ``Error``) ``Error creating Azure
security group`` / ``... subnet`` / ``... privateDnsZone`` / ``... virtualNetworkLink`` (300 s); a failed
delete → ``Error deleting virtualNetworkLink`` / ``dnsZone`` / ``subnet`` / ``security group`` (60 s;
409 on the link or zone → wait 60 s); CM network → ``Failed to create Azure Resource Group`` /
``Failed to create Azure VNet`` (60 s); peerings → reason ``FailedCreatingVpcPeeringConnection``,
``Error creating VPC peering`` / ``Error creating remote VPC peering`` (300 s, as the IpRange waits on a
peering in error). Not on a CM network → ``Unsupported network type``, not retried. Ready: state
``Ready``, condition Ready/``Ready``/``Ready``.

Deliberate differences (fixes): a resource whose provisioning ended ``Failed`` is PUT again (with the
create error in status) instead of being waited on forever; the subnet create and delete do not block
the worker until ARM is done (the next step re-reads ``provisioningState``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Protocol

from kube.toolkit.step import Step
from tasks.cloud.azure.client import AzureApiError
from tasks.cloud.azure.scope import cm_name
from tasks.cloud.step import ERROR, StepBuilder, gone

DNS_ZONE = "privatelink.redis.cache.windows.net"
DNS_ZONE_CHINA = "privatelink.redis.cache.chinacloudapi.cn"
NETWORK_TYPE_CLOUD_RESOURCES = "cloud-resources"
REASON_ERROR = "Error"
REASON_PEERING = "FailedCreatingVpcPeeringConnection"
REASON_INVALID_CIDR = "InvalidCidr"


@dataclass(frozen=True)
class Timing:
    """Requeue delays in seconds (the original's ``util.Timing`` values)."""

    wait: float = 10.0            #: provisioning not finished yet (T10s)
    peering_wait: float = 1.0     #: peering not Connected yet (T1s)
    throttled: float = 60.0       #: HTTP 429 (T60s)
    load_error: float = 60.0      #: a resource could not be read (T60s)
    create_error: float = 300.0   #: a resource could not be created (T300s)
    delete_error: float = 60.0    #: a resource could not be deleted (T60s)
    link_delete_wait: float = 60.0  #: the link is being deleted (T60s)
    network_error: float = 60.0   #: the CM network could not be created (T60s)

    def scaled(self, factor: float) -> Timing:
        """All delays times ``factor`` (tests run them fast, as the original divides by 100)."""
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})


class IpRangeClient(Protocol):
    """What this step needs of :class:`tasks.cloud.azure.client.AzureClient`."""

    subscription_id: str

    def get_resource_group(self, name: str) -> dict[str, Any] | None: ...
    def create_resource_group(self, name: str, location: str) -> dict[str, Any]: ...
    def delete_resource_group(self, name: str) -> None: ...
    def get_vnet(self, rg: str, name: str) -> dict[str, Any] | None: ...
    def create_vnet(self, rg: str, name: str, location: str, cidr: str) -> dict[str, Any] | None: ...
    def delete_vnet(self, rg: str, name: str) -> None: ...
    def get_peering(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None: ...
    def create_peering(self, rg: str, vnet: str, name: str, remote_vnet_id: str) -> dict[str, Any] | None: ...
    def delete_peering(self, rg: str, vnet: str, name: str) -> None: ...
    def get_security_group(self, rg: str, name: str) -> dict[str, Any] | None: ...
    def create_security_group(self, rg: str, name: str, location: str) -> dict[str, Any] | None: ...
    def delete_security_group(self, rg: str, name: str) -> None: ...
    def get_subnet(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None: ...
    def create_subnet(self, rg: str, vnet: str, name: str, address_prefix: str,
                      security_group_id: str) -> dict[str, Any] | None: ...
    def delete_subnet(self, rg: str, vnet: str, name: str) -> None: ...
    def get_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None: ...
    def create_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None: ...
    def delete_private_dns_zone(self, rg: str, zone: str) -> None: ...
    def get_vnet_link(self, rg: str, zone: str, name: str) -> dict[str, Any] | None: ...
    def create_vnet_link(self, rg: str, zone: str, name: str, vnet_id: str) -> dict[str, Any] | None: ...
    def delete_vnet_link(self, rg: str, zone: str, name: str) -> None: ...


def private_dns_zone_name(cloud: str = "AzureCloud") -> str:
    """The Redis private-link zone (the original's ``NewPrivateDnsZoneName``)."""
    return DNS_ZONE_CHINA if cloud == "AzureChina" else DNS_ZONE


def vnet_id(subscription: str, rg: str, name: str) -> str:
    """A virtual network's resource id."""
    return f"/subscriptions/{subscription}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{name}"


def peering_names(shoot: str) -> tuple[str, str]:
    """``(in the shoot VNet, in the CM VNet)`` = ``("cm--<shoot>", "kyma--<shoot>")`` (notes §5.3 step 5:
    ``localPeeringName``, ``peeringName``)."""
    return f"cm--{shoot}", f"kyma--{shoot}"


def _value(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def _state(resource: dict[str, Any] | None) -> str:
    """``properties.provisioningState`` of a resource."""
    return _value(((resource or {}).get("properties") or {}).get("provisioningState"))


class _Stop(Exception):
    """Ends the step with ``step``."""

    def __init__(self, step: Step) -> None:
        super().__init__("stop")
        self.step = step


class _Run(StepBuilder):
    def __init__(self, iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, now: str | None,
                 timing: Timing, cloud: str) -> None:
        super().__init__(iprange, now)
        spec = scope.get("spec") or {}
        azure = (spec.get("scope") or {}).get("azure") or {}
        self.scope_name = str((scope.get("metadata") or {}).get("name") or spec.get("kymaName") or "")
        self.shoot = str(spec.get("shootName") or "")
        self.region = str(spec.get("region") or "")
        self.subscription = str(azure.get("subscriptionId") or client.subscription_id)
        self.vpc = str(azure.get("vpcNetwork") or "")
        self.cm = cm_name(self.vpc)
        self.zone = private_dns_zone_name(cloud)
        self.client = client
        self.timing = timing

    def error(self, message: str, requeue_after: float | None, reason: str = REASON_ERROR,
              *, exclusive_condition: bool = True, state: str | None = ERROR) -> Step:
        """An Error condition (exclusive, or set among the others) and ``state``; come back after
        ``requeue_after`` seconds."""
        return self.fail(reason, message, requeue_after=requeue_after, state=state, exclusive=exclusive_condition)

    def call(self, fn: Any, *args: Any, on_error: Any) -> Any:
        """``fn(*args)``; a 429 ends the step (come back later, status untouched); any other failure
        ends it with ``on_error(err)``."""
        try:
            return fn(*args)
        except AzureApiError as err:
            if err.too_many_requests:
                raise _Stop(Step(requeue_after=self.timing.throttled)) from err
            raise _Stop(on_error(err)) from err


def reconcile(iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, *, now: str | None = None,
              timing: Timing = Timing(), cloud: str = "AzureCloud", network_type: str | None = None) -> Step:
    """One reconcile step of a KCP IpRange on Azure (see the module docstring for the contract).

    Never raises for cloud errors (they become conditions or requeues); raises ``fencing.FenceError``
    when the reconcile must stop writing and ``ValueError`` for a Scope without the Azure fields.
    """
    run = _Run(iprange, scope, client, now, timing, cloud)
    if not run.vpc or not run.shoot or not run.scope_name:
        raise ValueError(f"Scope {run.scope_name!r} has no spec.scope.azure.vpcNetwork, spec.shootName or name")
    try:
        if run.deleting:
            return _delete(run)
        network = str((run.spec.get("network") or {}).get("name") or f"{run.scope_name}--kyma")
        on_cm = network_type == NETWORK_TYPE_CLOUD_RESOURCES if network_type \
            else network == f"{run.scope_name}--cm"
        if not on_cm:
            return run.error("Unsupported network type", None)
        cidr = run.status.get("cidr") or run.spec.get("cidr") or ""
        if not cidr:
            return run.error("CIDR is required", None, REASON_INVALID_CIDR)
        if not run.status.get("cidr"):
            run.changes["cidr"] = cidr
        return _create(run, cidr)
    except _Stop as stop:
        return stop.step


def _ensure(run: _Run, resource: dict[str, Any] | None, create: Any, args: tuple[Any, ...], message: str,
            wait: float) -> None:
    """Create ``resource`` when missing and wait until it is ``Succeeded`` (a ``Failed`` one is PUT again
    and reported); returns only when it is ``Succeeded``."""
    def created_failed(err: AzureApiError) -> Step:
        return run.error(message, run.timing.create_error)

    if resource is None:
        run.call(create, *args, on_error=created_failed)
        raise _Stop(run.step(requeue_after=wait))
    state = _state(resource)
    if state == "Succeeded":
        return
    if state == "Failed":
        run.call(create, *args, on_error=created_failed)
        raise _Stop(run.error(message, run.timing.create_error))
    raise _Stop(run.step(requeue_after=wait))


def _create(run: _Run, cidr: str) -> Step:
    c, t = run.client, run.timing

    # The CM network: resource group, then VNet (the Network reconciler's job in the original).
    def load_failed(err: AzureApiError) -> Step:
        return run.step(requeue_after=t.wait)

    group = run.call(c.get_resource_group, run.cm, on_error=load_failed)
    if group is None:
        run.call(c.create_resource_group, run.cm, run.region,
                 on_error=lambda err: run.error("Failed to create Azure Resource Group", t.network_error))
    vnet = run.call(c.get_vnet, run.cm, run.cm, on_error=load_failed)
    _ensure(run, vnet, c.create_vnet, (run.cm, run.cm, run.region, cidr), "Failed to create Azure VNet", t.wait)

    # The peering between the shoot VNet and the CM VNet (the VpcPeering reconciler's job).
    local_name, remote_name = peering_names(run.shoot)
    kyma_id, cm_id = vnet_id(run.subscription, run.vpc, run.vpc), vnet_id(run.subscription, run.cm, run.cm)
    local = run.call(c.get_peering, run.vpc, run.vpc, local_name, on_error=load_failed)
    if local is None:
        run.call(c.create_peering, run.vpc, run.vpc, local_name, cm_id,
                 on_error=lambda err: run.error("Error creating VPC peering", t.create_error, REASON_PEERING))
    remote = run.call(c.get_peering, run.cm, run.cm, remote_name, on_error=load_failed)
    if remote is None:
        run.call(c.create_peering, run.cm, run.cm, remote_name, kyma_id,
                 on_error=lambda err: run.error("Error creating remote VPC peering", t.create_error, REASON_PEERING))
    if local is None or remote is None:
        return run.step(requeue_after=t.peering_wait)
    if _value((local.get("properties") or {}).get("peeringState")) != "Connected":
        return run.step(requeue_after=t.peering_wait)

    # Security group → subnet → private DNS zone → virtual network link.
    nsg = run.call(c.get_security_group, run.cm, run.cm,
                   on_error=lambda err: run.error("Error loading security group", t.load_error))
    _ensure(run, nsg, c.create_security_group, (run.cm, run.cm, run.region), "Error creating Azure security group",
            t.wait)
    assert nsg is not None
    subnet = run.call(c.get_subnet, run.cm, run.cm, run.cm,
                      on_error=lambda err: run.error("Error loading subnet", t.load_error))
    _ensure(run, subnet, c.create_subnet, (run.cm, run.cm, run.cm, cidr, nsg["id"]), "Error creating Azure subnet",
            t.wait)

    def load_dns_failed(err: AzureApiError) -> Step:
        return run.error(f"Failed loading AzureIpRange: {err}", t.load_error, exclusive_condition=False, state=None)

    zone = run.call(c.get_private_dns_zone, run.cm, run.zone, on_error=load_dns_failed)
    _ensure(run, zone, c.create_private_dns_zone, (run.cm, run.zone), "Error creating Azure privateDnsZone", t.wait)
    link = run.call(c.get_vnet_link, run.cm, run.zone, run.name, on_error=load_dns_failed)
    _ensure(run, link, c.create_vnet_link, (run.cm, run.zone, run.name, kyma_id),
            "Error creating Azure virtualNetworkLink", t.wait)

    return run.ready()


def _delete(run: _Run) -> Step:
    c, t = run.client, run.timing

    def load_failed(err: AzureApiError) -> Step:
        return run.step(requeue_after=t.load_error)

    def deleted(resource: dict[str, Any] | None, delete: Any, args: tuple[Any, ...], message: str | None,
                wait: float, conflict_wait: float | None = None) -> None:
        """Delete ``resource`` (or wait while it is being deleted); returns only when it is gone."""
        if resource is None:
            return
        if _state(resource) != "Deleting":
            def failed(err: AzureApiError) -> Step:
                if conflict_wait is not None and err.conflict:
                    return run.step(requeue_after=conflict_wait)
                if message is None:
                    return run.step(requeue_after=t.wait, error=str(err))
                return run.error(message, t.delete_error)

            run.call(delete, *args, on_error=failed)
        raise _Stop(run.step(requeue_after=wait))

    link = run.call(c.get_vnet_link, run.cm, run.zone, run.name, on_error=load_failed)
    deleted(link, c.delete_vnet_link, (run.cm, run.zone, run.name), "Error deleting virtualNetworkLink",
            t.link_delete_wait, conflict_wait=t.throttled)
    zone = run.call(c.get_private_dns_zone, run.cm, run.zone, on_error=load_failed)
    deleted(zone, c.delete_private_dns_zone, (run.cm, run.zone), "Error deleting dnsZone", t.wait,
            conflict_wait=t.throttled)
    subnet = run.call(c.get_subnet, run.cm, run.cm, run.cm,
                      on_error=lambda err: run.error("Error loading subnet", t.load_error))
    deleted(subnet, c.delete_subnet, (run.cm, run.cm, run.cm), "Error deleting subnet", t.wait)
    nsg = run.call(c.get_security_group, run.cm, run.cm,
                   on_error=lambda err: run.error("Error loading security group", t.load_error))
    deleted(nsg, c.delete_security_group, (run.cm, run.cm), "Error deleting security group", t.wait)

    # the kyma peering (remote side first, as the original), then the CM network
    local_name, remote_name = peering_names(run.shoot)
    remote = run.call(c.get_peering, run.cm, run.cm, remote_name, on_error=load_failed)
    deleted(remote, c.delete_peering, (run.cm, run.cm, remote_name), None, t.peering_wait)
    local = run.call(c.get_peering, run.vpc, run.vpc, local_name, on_error=load_failed)
    deleted(local, c.delete_peering, (run.vpc, run.vpc, local_name), None, t.peering_wait)
    vnet = run.call(c.get_vnet, run.cm, run.cm, on_error=load_failed)
    deleted(vnet, c.delete_vnet, (run.cm, run.cm), None, t.wait)
    group = run.call(c.get_resource_group, run.cm, on_error=load_failed)
    deleted(group, c.delete_resource_group, (run.cm,), None, t.wait)
    return gone()


__all__ = ["DNS_ZONE", "DNS_ZONE_CHINA", "IpRangeClient", "Timing", "peering_names", "private_dns_zone_name",
           "reconcile", "vnet_id"]
