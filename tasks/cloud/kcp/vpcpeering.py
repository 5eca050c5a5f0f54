"""The ``cloud-vpcpeering`` controller: KCP VpcPeerings into the providers' peerings (``pkg/kcp/vpcpeering``).

read (the VpcPeering, its Scope, the local and remote Networks) → :func:`~.vpcpeering_plan.plan` (the
provider-independent part: Scope, networks Ready, finalizer) → the provider named by
``Scope.spec.provider`` (:meth:`~tasks.cloud.providers.Provider.reconcile_vpcpeering` /
``delete_vpcpeering`` with a :class:`~tasks.cloud.providers.VpcPeeringContext`), whose
:class:`~kube.toolkit.Outcome` is carried out here. Deletion is handed to the provider with whatever
networks are left (``None`` when gone) and ends with the finalizer's removal.
"""

from __future__ import annotations

from typing import Any

from kube import Kube
from tasks.cloud import names, providers
from tasks.cloud.kcp.common import carry_out_step, finalized, load
from tasks.cloud.kcp.iprange_plan import scope_name
from tasks.cloud.kcp.vpcpeering_plan import Seen, network_refs, plan
from tasks.cloud.providers import VpcPeeringContext
from workers.controller import Key, Result

__all__ = ["read", "reconcile"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> tuple[Seen, providers.Provider | None]:
    """The Scope, its provider and the two Networks. Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace) if scope_name(obj) else None
    provider = providers.get(str((scope.get("spec") or {}).get("provider") or "")) if scope else None
    (local_ns, local_name), (remote_ns, remote_name) = network_refs(obj)
    local = kcp.get(names.NETWORK, local_name, local_ns) if local_name else None
    remote = kcp.get(names.NETWORK, remote_name, remote_ns) if remote_name else None
    return Seen(obj, scope, provider is not None, local, remote), provider


def reconcile(key: Key) -> Result:
    """Reconcile the KCP VpcPeering ``key``."""
    s, kcp, obj = load(key, names.VPC_PEERING)
    if obj is None:
        return Result.done()
    seen, provider = read(kcp, obj, key.namespace)
    decided = plan(seen, s.t)
    if not decided.provider or provider is None or seen.scope is None:
        return carry_out_step(kcp, names.VPC_PEERING, obj, decided.step)
    if decided.step.add_finalizer:
        obj = finalized(kcp, names.VPC_PEERING, obj)
    ctx = VpcPeeringContext(kube=kcp, obj=obj, scope=seen.scope, local=seen.local, remote=seen.remote, settings=s)
    step = provider.delete_vpcpeering(ctx) if decided.provider == "delete" else provider.reconcile_vpcpeering(ctx)
    return carry_out_step(kcp, names.VPC_PEERING, obj, step)
