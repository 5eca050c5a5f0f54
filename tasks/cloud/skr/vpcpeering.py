"""The SKR VPC peering reads (AwsVpcPeering, GcpVpcPeering, AzureVpcPeering): what
:func:`~.vpcpeering_plan.plan` decides over, once per connect per object.

The object, the connect's peerings of its kind (the quota), and the KCP VpcPeering and remote Network
named by the object's id (never for an id that is not a UUID). The plan's writes (id label, finalizer,
the KCP objects, status) are carried out by the connect's executor (:mod:`tasks.cloud.skr.kind`). Only
the kind of the SKR's provider is reconciled (its CRD is the only one installed). As cloud-manager's
``pkg/skr/{aws,gcp,azure}vpcpeering``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource
from tasks.cloud import names
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.kind import mirror
from tasks.cloud.skr.vpcpeering_plan import Seen, identity

__all__ = ["read", "summary"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the KCP objects only for a UUID id). Raises ``kube.ApiError``."""
    ident = identity(obj)
    peering, network = ctx.mirror(names.VPC_PEERING, ident), ctx.mirror(names.NETWORK, ident)
    return Seen(provider=ctx.provider, obj=obj, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace,
                peering=peering, network=network, everyone=ctx.objects(res),
                quota=ctx.quota(res))


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the KCP VpcPeering's state and ids (AWS: the connection; GCP/Azure: the
    peering's name) and the local network."""
    found = mirror(kcp, names.VPC_PEERING, obj, kyma)
    if found is None:
        return Summary("")
    kst, details = found.get("status") or {}, (found.get("spec") or {}).get("details") or {}
    parts = [f"kcp {kst.get('state') or '?'}", f"id {kst['id']}" if kst.get("id") else "",
             f"peering {details['peeringName']}" if details.get("peeringName") else "",
             f"local {names.kyma_network(kyma)}"]
    return Summary("; ".join(p for p in parts if p))
