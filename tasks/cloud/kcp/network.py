"""The ``cloud-network`` controller: KCP Networks (``pkg/kcp/network``).

A reference Network (type ``kyma``: the shoot's own VPC, created by the Scope controller as
``<kyma>--kyma``; type ``external``: a peer's) is Ready once its reference is copied into
``status.network``. A managed one (type ``cloud-resources``, ``<kyma>--cm``) is provisioned by the
Scope's provider. Deletion waits while an IpRange of the scope still lives in the Network (Warning
``DeleteWhileUsed``), so a scope's IpRanges are always deleted before their network.
"""

from __future__ import annotations

from dataclasses import replace

from kube import Kube
from kube.toolkit import StatusWriter, deleting, remove_finalizer
from tasks.cloud import names, providers, settings
from tasks.cloud.kcp.common import carry_out_step, finalized, go_list, load
from tasks.cloud.providers import NetworkContext
from tasks.cloud.step import StepBuilder, gone
from workers.controller import Key, Result

__all__ = ["reconcile"]

MANAGED = "cloud-resources"


def reconcile(key: Key) -> Result:
    """Reconcile the KCP Network ``key``."""
    s, kcp, obj = load(key, names.NETWORK)
    if obj is None:
        return Result.done()
    spec = obj.get("spec") or {}
    scope_name = str((spec.get("scope") or {}).get("name") or "")
    kind = str(spec.get("type") or "external")
    status = StatusWriter(kcp, names.NETWORK, obj)
    if deleting(obj):
        users = [f"{i['metadata']['namespace']}/{i['metadata']['name']}"
                 for i in kcp.list(names.KCP_IPRANGE, key.namespace)
                 if str(((i.get("spec") or {}).get("network") or {}).get("name") or names.kyma_network(
                     str(((i.get("spec") or {}).get("scope") or {}).get("name") or ""))) == key.name]
        if users:
            status.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                             f"Can not be deleted while used by: {go_list(users)}", names.STATE_WARNING)
            return Result.requeue(s.t(10))
        if kind == MANAGED:
            return _managed(kcp, status, scope_name, key, s, delete=True)
        remove_finalizer(kcp, names.NETWORK, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
        return Result.done()
    status.obj = finalized(kcp, names.NETWORK, obj)
    if kind == MANAGED:
        return _managed(kcp, status, scope_name, key, s, delete=False)
    reference = (spec.get("network") or {}).get("reference") or {}
    status.ready(network=reference, networkType=kind)
    return Result.done()


def _managed(kcp: Kube, status: StatusWriter, scope_name: str, key: Key, s: settings.CloudSettings,
             delete: bool) -> Result:
    """A managed network: the provider's Step (its Scope gone while deleting: nothing is left to remove)."""
    scope = kcp.get(names.SCOPE, scope_name, key.namespace)
    if scope is None:
        if delete:
            return carry_out_step(kcp, names.NETWORK, status.obj, gone())
        status.fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {scope_name} does not exist")
        return Result.requeue(s.t(60))
    provider = providers.get(str((scope.get("spec") or {}).get("provider") or ""))
    if provider is None:
        step = StepBuilder(status.obj).fail(names.REASON_UNKNOWN, "Unsupported network type")
        return carry_out_step(kcp, names.NETWORK, status.obj, replace(step, remove_finalizer=names.FINALIZER)
                              if delete else step)
    ctx = NetworkContext(kube=kcp, obj=status.obj, scope=scope, settings=s)
    step = provider.delete_network(ctx) if delete else provider.reconcile_network(ctx)
    return carry_out_step(kcp, names.NETWORK, status.obj, step)
