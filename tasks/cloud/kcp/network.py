"""The ``cloud-network`` controller: KCP Networks (``pkg/kcp/network``): read → :func:`~.network_plan.plan` → apply.

A reference Network (type ``kyma``: the shoot's own VPC, created by the Scope controller as
``<kyma>--kyma``; type ``external``: a peer's, created for an SKR VPC peering) is Ready once its reference
is copied into ``status.network``. A managed one (type ``cloud-resources``, ``<kyma>--cm``) is provisioned
by the Scope's provider. Deletion waits while a KCP IpRange lives in the Network or a VpcPeering names it
as its local or remote network (Warning ``DeleteWhileUsed``), so a scope's IpRanges and peerings are
always deleted before their networks. The decisions are :mod:`tasks.cloud.kcp.network_plan`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kube import Kube
from kube.toolkit import deleting
from tasks.cloud import clouds, names, settings
from tasks.cloud.kcp.common import carry_out_step, finalized, list_served, load
from tasks.cloud.kcp.iprange_plan import network_name, scope_name
from tasks.cloud.kcp.network_plan import Seen, plan
from tasks.cloud.providers import NetworkContext
from tasks.cloud.step import StepBuilder, gone
from workers.controller import Key, Result

__all__ = ["read", "reconcile"]


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope and, while deleting, the IpRanges and VpcPeerings that use the Network. Raises ``kube.ApiError``."""
    name = str(obj["metadata"]["name"])
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace) if scope_name(obj) else None
    if not deleting(obj):
        return Seen(obj, scope)
    ipranges = [_ref(i) for i in kcp.list(names.KCP_IPRANGE, namespace) if network_name(i) == name]
    peerings = list_served(kcp, names.VPC_PEERING, namespace)

    def using(side: str) -> list[str]:
        return [_ref(p) for p in peerings
                if str((((p.get("spec") or {}).get("details") or {}).get(side) or {}).get("name") or "") == name]

    return Seen(obj, scope, ipranges, using("localNetwork"), using("remoteNetwork"))


def reconcile(key: Key) -> Result:
    """Reconcile the KCP Network ``key``."""
    s, kcp, obj = load(key, names.NETWORK)
    if obj is None:
        return Result.done()
    seen = read(kcp, obj, key.namespace)
    decided = plan(seen, s.t)
    if not decided.handoff:
        return carry_out_step(kcp, names.NETWORK, obj, decided)
    if decided.add_finalizer:
        obj = finalized(kcp, names.NETWORK, obj)
    return _managed(kcp, obj, seen.scope, s, delete=decided.handoff == "delete")


def _managed(kcp: Kube, obj: dict[str, Any], scope: Any, s: settings.CloudSettings, delete: bool) -> Result:
    """A managed network: the provider's Outcome (its Scope gone while deleting: nothing is left to remove)."""
    if scope is None:
        if delete:
            return carry_out_step(kcp, names.NETWORK, obj, gone())
        step = StepBuilder(obj).fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {scope_name(obj)} does not exist",
                                     requeue_after=s.t(60))
        return carry_out_step(kcp, names.NETWORK, obj, step)
    provider = clouds.get(str((scope.get("spec") or {}).get("provider") or ""))
    if provider is None:
        step = StepBuilder(obj).fail(names.REASON_UNKNOWN, "Unsupported network type")
        return carry_out_step(kcp, names.NETWORK, obj, replace(step, remove_finalizer=names.FINALIZER)
                              if delete else step)
    ctx = NetworkContext(kube=kcp, obj=obj, scope=scope, settings=s)
    step = provider.delete_network(ctx) if delete else provider.reconcile_network(ctx)
    return carry_out_step(kcp, names.NETWORK, obj, step)


