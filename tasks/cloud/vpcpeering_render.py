"""``reconcilery render vpcpeering``: what the controllers would decide for SKR VPC peerings, offline (pure):
:func:`render_peerings` (the SKR plan's KCP objects, the provider's steps)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.toolkit.actions import Action
from tasks.cloud import names
from tasks.cloud.aws.vpcpeering_plan import AUTO, MATCHED, NONE, UNMATCHED
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr.vpcpeering_plan import KINDS, Seen, plan

__all__ = ["RenderedPeering", "peering_plan", "render_peerings"]

_PLACEHOLDER_ID = "00000000-0000-4000-8000-00000000d1d0"


@dataclass(frozen=True)
class RenderedPeering(Rendered):
    """One SKR VPC peering's outcome: ``state`` (``Ready`` when it would be provisioned, else
    ``Error``), the KCP objects the SKR loop would create (``kcp``: ``Network <id>``, ``VpcPeering <id>``
    with their specs) and the provider's plan (one line per cloud step)."""

    provider: str = ""
    kcp: list[dict[str, Any]] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)


def peering_plan(scope: Mapping[str, Any], peering: Mapping[str, Any], network: Mapping[str, Any]) -> list[str]:
    """What the KCP VpcPeering ``peering`` (with its remote ``network``) becomes in the Scope's provider,
    one line per step in the providers' order (AWS: :mod:`tasks.cloud.aws.vpcpeering_plan`; GCP and Azure
    after the notes). Cloud state (the VPCs' CIDR blocks, route tables, tags) is not known offline."""
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    info = (spec.get("scope") or {}).get(provider) or {}
    vpc, shoot = str(info.get("vpcNetwork") or "?"), str(spec.get("shootName") or "?")
    name = str((peering.get("metadata") or {}).get("name") or "<id>")
    details = (peering.get("spec") or {}).get("details") or {}
    reference = (((network.get("spec") or {}).get("network") or {}).get("reference") or {}).get(provider) or {}
    if provider == "aws":
        account, region = reference.get("awsAccountId", "?"), reference.get("region", "?")
        strategy = str(details.get("remoteRouteTableUpdateStrategy") or AUTO)
        local_cidr = str(((info.get("network") or {}).get("vpc") or {}).get("cidr") or
                         (info.get("network") or {}).get("nodes") or "the VPC's CIDR")
        tables = {AUTO: "every route table", MATCHED: f"the route tables tagged {shoot}",
                  UNMATCHED: f"the route tables not tagged {shoot}", NONE: ""}[strategy]
        lines = [f"assume the peering role (AWS_PEERING_ROLE_NAME) in {info.get('accountId', '?')} "
                 f"({spec.get('region', '?')}) and in {account} ({region})",
                 f"check: VPC {reference.get('vpcId', '?')} carries a tag with key {shoot} (or PEERING_NETWORK_TAG)",
                 f"VPC peering connection {name} from VPC {vpc} to {reference.get('vpcId', '?')} (owner {account}, "
                 f"{region}), tagged with the shoot {shoot}",
                 f"accept it in account {account}; wait until active",
                 f"routes in every route table of {vpc}: each CIDR block of {reference.get('vpcId', '?')} via it"]
        lines.append(f"routes in {tables} of {reference.get('vpcId', '?')}: {local_cidr} via it ({strategy})"
                     if tables else "no routes in the customer's route tables (NONE)")
        lines.append("on deletion: routes, the connection, the customer's routes"
                     + (", the customer's side of the connection" if details.get("deleteRemotePeering") else ""))
        return lines
    if provider == "gcp":
        project = reference.get("gcpProject", "?")
        remote = f"projects/{project}/global/networks/{reference.get('networkName', '?')}"
        local = f"projects/{info.get('project') or '?'}/global/networks/{vpc}"
        custom = bool(details.get("importCustomRoutes"))
        return [f"check: {remote} carries a tag whose key is exactly {shoot} (PEERING_NETWORK_TAG does not count "
                "on GCP), unless the remote peering is this one's",
                f"remote peering {details.get('peeringName', '?')} in {remote} to {local} "
                f"(exportCustomRoutes {str(custom).lower()})",
                f"local peering cm-{name} in {local} to {remote} (importCustomRoutes {str(custom).lower()}, "
                "exchangeSubnetRoutes true); wait until both are ACTIVE",
                "on deletion: the local peering" + (", the remote one if this peering created it (status.remoteId, "
                                                    "peered with the shoot's network)"
                                                    if details.get("deleteRemotePeering") else "")]
    if provider == "azure":
        remote = (f"/subscriptions/{reference.get('subscriptionId', '?')}/resourceGroups/"
                  f"{reference.get('resourceGroup', '?')}/providers/Microsoft.Network/virtualNetworks/"
                  f"{reference.get('networkName', '?')}")
        gateway = bool(details.get("useRemoteGateway"))
        return [f"check: VNet {reference.get('networkName', '?')} carries a tag {shoot} (or PEERING_NETWORK_TAG)",
                f"local peering {details.get('localPeeringName') or name} in VNet {vpc} to {remote} (allowVnetAccess, "
                f"useRemoteGateways {str(gateway).lower()})",
                f"remote peering {details.get('peeringName', '?')} in {remote} to {vpc} (allowVnetAccess, "
                f"allowGatewayTransit {str(gateway).lower()}); wait until both are Connected",
                "on deletion: the local peering" + (", the remote one if this peering created it (status.remoteId, "
                                                    "referencing the shoot's VNet)"
                                                    if details.get("deleteRemotePeering") else "")]
    return []


def _invalid_strategy(obj: Mapping[str, Any]) -> str:
    """The API server's answer to an AwsVpcPeering whose ``remoteRouteTableUpdateStrategy`` is not one of
    the CRD's enum values (``""`` when it is, or for the other kinds)."""
    value = (obj.get("spec") or {}).get("remoteRouteTableUpdateStrategy")
    if obj.get("kind") != "AwsVpcPeering" or value is None or value in (AUTO, NONE, MATCHED, UNMATCHED):
        return ""
    supported = ", ".join(f'"{v}"' for v in (AUTO, NONE, MATCHED, UNMATCHED))
    return f'spec.remoteRouteTableUpdateStrategy: Unsupported value: "{value}": supported values: {supported}'


def render_peerings(scope: Mapping[str, Any], peerings: Sequence[Mapping[str, Any]],
                    quotas: Mapping[str, int | None] | None = None) -> list[RenderedPeering]:
    """The outcome of every SKR peering (``AwsVpcPeering``, ``GcpVpcPeering``, ``AzureVpcPeering``) with
    ``scope``: the SKR plan of :mod:`tasks.cloud.skr.vpcpeering_plan` for a new object (so the KCP
    objects are the ones the SKR loop would create, named by ``status.id`` or ``<id>``) and the
    provider's steps (:func:`peering_plan`). A kind of another provider than the Scope's is an Error
    (its CRD is not installed in that SKR). ``quotas``: kind -> allowed per SKR (default unlimited)."""
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    kyma = str(spec.get("kymaName") or (scope.get("metadata") or {}).get("name") or "?")
    namespace = str((scope.get("metadata") or {}).get("namespace") or names.KCP_NAMESPACE)
    kinds = {res.kind: p for p, res in KINDS.items()}
    now = "9999-12-31T23:59:59Z"
    stamped = [{**o, "metadata": {"creationTimestamp": now, **(o.get("metadata") or {})}} for o in peerings]
    out: list[RenderedPeering] = []
    for obj in stamped:
        name = str((obj.get("metadata") or {}).get("name") or "?")
        kind = str(obj.get("kind") or "?")
        if kinds.get(kind) != provider:
            out.append(RenderedPeering(name, kind, names.STATE_ERROR,
                                       f"{kind} is not served in an SKR of provider {provider or '?'}", provider))
            continue
        invalid = _invalid_strategy(obj)
        if invalid:  # the CRD's enum refuses it in a cluster; offline it is this Error, not a KeyError
            out.append(RenderedPeering(name, kind, names.STATE_ERROR, invalid, provider))
            continue
        ident = str((obj.get("status") or {}).get("id") or "")
        planned = ident or _PLACEHOLDER_ID  # the plan wants a UUID; shown as <id>
        fresh = {**obj, "status": {**(obj.get("status") or {}), "id": planned}}
        same = [o for o in stamped if o.get("kind") == kind]
        seen = Seen(provider=provider, obj=fresh, kyma=kyma, kcp_namespace=namespace, everyone=same,
                    quota=(quotas or {}).get(kind))
        decided = plan(seen, planned, lambda s: s, now)
        bodies = [w.object for w in decided.writes if isinstance(w, Action) and w.verb == "create" and w.cluster]
        created = [json.loads(json.dumps(body).replace(_PLACEHOLDER_ID, "<id>")) for body in bodies]
        ident = ident or "<id>"
        if len(created) != 2:
            conditions = (decided.status or {}).get("conditions") or [{}]
            reason, message = conditions[0].get("reason", "?"), conditions[0].get("message", "")
            out.append(RenderedPeering(name, kind, names.STATE_ERROR, f"{reason}: {message}", provider))
            continue
        network, peering = created
        out.append(RenderedPeering(name, kind, names.STATE_READY,
                                   f"valid; Network and VpcPeering {ident} in {namespace}", provider,
                                   created, peering_plan(scope, peering, network)))
    return out
