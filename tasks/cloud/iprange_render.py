"""``reconcilery render iprange``: what the controllers would decide for IpRanges, offline (pure).

For each IpRange (SKR ``cloud-resources`` or KCP ``cloud-control`` kind) and one Scope: the SKR
validation (CIDR syntax and size, overlaps among the given SKR IpRanges, the quota of 1 per SKR),
the CIDR (given, or allocated as the KCP loop would: the first free /22 after the nodes range) and
its ranges, and the provider plan: what the KCP IpRange controller would create for it, taken from the
Scope's provider (:func:`provider_plan`):

- AWS: the CIDR block associated with the shoot's VPC and one subnet per Scope zone (the CIDR split in a
  power of two);
- GCP: one range, the global address ``cm-<name>`` (INTERNAL, VPC_PEERING) on the shoot's VPC, reserved
  for the Private Service Access connection ``servicenetworking-googleapis-com``;
- Azure: one range, the Cloud Manager VNet ``<vpcNetwork>--cm`` (resource group and VNet with the CIDR,
  peered with the shoot's VNet) and its subnet with a security group, the private DNS zone and its link.

``<name>`` is the KCP IpRange's name: a KCP IpRange's own, an SKR IpRange's ``status.id`` (``<id>``
when it has none yet). Cloud state (VPC blocks, existing subnets and addresses) is not known offline, so
those checks are left to the live controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kube.manifests import json_type
from tasks.cloud import names
from tasks.cloud.allocate import AllocationError, allocate_cidr
from tasks.cloud.azure.scope import cm_name
from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones
from tasks.cloud.validate import cidr_failure, overlap_winner, quota_exceeded

__all__ = ["Rendered", "provider_plan", "render_ipranges", "shape_errors"]

GCP_PSA_PEERING = "servicenetworking-googleapis-com"
AZURE_DNS_ZONE = "privatelink.redis.cache.windows.net"


@dataclass(frozen=True)
class Rendered:
    """One IpRange's outcome: ``state`` (``Ready`` when it would be provisioned, else ``Error``)."""

    name: str
    kind: str
    cidr: str
    allocated: bool
    ranges: list[tuple[str, str]] = field(default_factory=list)
    state: str = names.STATE_READY
    outcome: str = ""
    provider: str = ""
    plan: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ranges"] = [{"zone": z, "range": r} for z, r in self.ranges]
        return out


#: Fields :func:`render_ipranges` reads: path below the object -> JSON type (``*``: the Scope's provider).
_SCOPE_FIELDS = (("spec", "object"), ("spec.provider", "string"), ("spec.region", "string"),
                 ("spec.shootName", "string"), ("spec.scope", "object"), ("spec.scope.*", "object"),
                 ("spec.scope.*.vpcNetwork", "string"), ("spec.scope.*.project", "string"),
                 ("spec.scope.*.network", "object"), ("spec.scope.*.network.nodes", "string"),
                 ("spec.scope.*.network.pods", "string"), ("spec.scope.*.network.services", "string"),
                 ("spec.scope.*.network.zones", "array"))
_IPRANGE_FIELDS = (("metadata", "object"), ("metadata.name", "string"), ("spec", "object"),
                   ("spec.cidr", "string"), ("status", "object"), ("status.id", "string"))


def _type_errors(obj: Mapping[str, Any], fields: Sequence[tuple[str, str]], provider: str) -> list[str]:
    errors = []
    for path, expected in fields:
        value: Any = obj
        for part in path.replace("*", provider).split("."):
            value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                break
        if value is not None and json_type(value) != expected:
            errors.append(f"{path.replace('*', provider)}: must be of type {expected}, got {json_type(value)}")
    return errors


def shape_errors(scope: Mapping[str, Any], ipranges: Sequence[Mapping[str, Any]]) -> list[str]:
    """Fields of the wrong JSON type among those :func:`render_ipranges` reads, as
    ``"<kind> <name>: <path>: must be of type <t>, got <t'>"`` (``[]``: the input can be rendered);
    absent fields are fine. Pure."""
    spec = scope.get("spec")
    provider = str(spec.get("provider")) if isinstance(spec, dict) and isinstance(spec.get("provider"), str) else ""
    out = [f"Scope: {e}" for e in _type_errors(scope, _SCOPE_FIELDS if provider else _SCOPE_FIELDS[:5], provider)]
    for obj in ipranges:
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        out += [f"IpRange {name if isinstance(name, str) else '?'}: {e}"
                for e in _type_errors(obj, _IPRANGE_FIELDS, provider)]
    return out


def _scope_parts(scope: Mapping[str, Any]) -> tuple[str, list[str], list[str], str]:
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    info = (spec.get("scope") or {}).get(provider) or {}
    network = info.get("network") or {}
    existing = [str(network.get(k) or "") for k in ("nodes", "pods", "services")]
    zones = [str(z.get("name")) for z in network.get("zones") or [] if isinstance(z, dict) and z.get("name")]
    return provider, existing, zones, str(spec.get("region") or "")


def _kcp_name(obj: Mapping[str, Any], kind: str) -> str:
    if kind == "KCP":
        return str((obj.get("metadata") or {}).get("name") or "?")
    return str((obj.get("status") or {}).get("id") or "<id>")


def provider_plan(scope: Mapping[str, Any], kcp_name: str, cidr: str,
                  ranges: Sequence[tuple[str, str]] = ()) -> list[str]:
    """What the KCP IpRange ``kcp_name`` with ``cidr`` becomes in the Scope's provider, one line per
    cloud object, in creation order (names as the provider layers make them; see the module doc).
    ``ranges`` are AWS's (zone, range) subnets. An unknown provider has no plan (``[]``)."""
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    info = (spec.get("scope") or {}).get(provider) or {}
    vpc = str(info.get("vpcNetwork") or "?")
    if provider == "aws":
        return [f"VPC {vpc}: associate CIDR block {cidr}"] + [
            f"subnet {kcp_name}-{i} in {zone}: {r}" for i, (zone, r) in enumerate(ranges)]
    if provider == "gcp":
        network = f"projects/{info.get('project') or '?'}/global/networks/{vpc}"
        return [f"global address cm-{kcp_name}: {cidr} (INTERNAL, VPC_PEERING) on {network}",
                f"PSA connection {GCP_PSA_PEERING} of {vpc}: reserved ranges include cm-{kcp_name}"]
    if provider == "azure":
        cm, shoot = cm_name(vpc), str(spec.get("shootName") or "?")
        region, scope_name = str(spec.get("region") or "?"), str((scope.get("metadata") or {}).get("name") or "?")
        return [f"resource group and VNet {cm}: {cidr} in {region}",
                f"KCP VpcPeering {scope_name} (created by the IpRange): VNet peerings cm--{shoot} (in {vpc}) "
                f"and kyma--{shoot} (in {cm})",
                f"security group {cm}; subnet {cm}: {cidr}",
                f"private DNS zone {AZURE_DNS_ZONE}; virtual network link {kcp_name} to {vpc}"]
    return []


def render_ipranges(scope: Mapping[str, Any], ipranges: Sequence[Mapping[str, Any]],
                    quota: int | None = 1) -> list[Rendered]:
    """The outcome of every IpRange with ``scope`` (see the module doc)."""
    provider, existing, zones, region = _scope_parts(scope)
    skr = [o for o in ipranges if str(o.get("apiVersion", "")).startswith(names.SKR_GROUP)]
    now = "9999-12-31T23:59:59Z"  # not yet created objects count as newest, in file order
    stamped = [{**o, "metadata": {"creationTimestamp": now, **(o.get("metadata") or {})}} for o in skr]
    out: list[Rendered] = []
    for obj in ipranges:
        name = str((obj.get("metadata") or {}).get("name") or "?")
        kind = "SKR" if obj in skr else "KCP"
        cidr = str((obj.get("spec") or {}).get("cidr") or "")
        if kind == "SKR":
            me = stamped[skr.index(obj)]
            failure = cidr_failure(cidr) if cidr else None
            if failure:
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_INVALID_CIDR}: {failure}"))
                continue
            winner = overlap_winner(me, stamped)
            if winner is not None:
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_OVERLAP}: CIDR overlaps with {winner}"))
                continue
            if quota_exceeded(me, stamped, quota):
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_QUOTA_EXCEEDED}: Maximum number of {quota} resources "
                                            "exceeded"))
                continue
        allocated = not cidr
        if allocated:
            if not existing[0]:
                out.append(Rendered(name, kind, "", True, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_ALLOCATION_FAILED}: Error due to unknown SKR nodes "
                                            "range"))
                continue
            try:
                cidr = allocate_cidr(existing)
            except AllocationError:
                out.append(Rendered(name, kind, "", True, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_ALLOCATION_FAILED}: Unable to allocate CIDR"))
                continue
        if provider == "aws":
            try:
                ranges = list(zip(zones, split_by_zones(cidr, len(zones)), strict=True))
            except CidrParseError:
                out.append(Rendered(name, kind, cidr, allocated, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_INVALID_CIDR}: Can not parse CIDR"))
                continue
            except CidrSplitError as exc:
                out.append(Rendered(name, kind, cidr, allocated, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_CAN_NOT_SPLIT}: {exc}"))
                continue
            what = f"{len(ranges)} subnet(s)"
        elif provider == "gcp":
            ranges, what = [("global", cidr)], "1 global address"
        elif provider == "azure":
            ranges, what = [(region or provider, cidr)], "1 subnet"
        else:
            ranges, what = [(region or provider, cidr)], "1 range"
        how = "allocated" if allocated else "given"
        out.append(Rendered(name, kind, cidr, allocated, ranges, names.STATE_READY, f"valid; CIDR {how}; {what}",
                            provider, provider_plan(scope, _kcp_name(obj, kind), cidr, ranges)))
    return out
