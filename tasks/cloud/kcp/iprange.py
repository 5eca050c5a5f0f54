"""The ``cloud-iprange`` controller: KCP IpRanges into cloud subnets (``pkg/kcp/iprange``).

The common part, in the original's order, then the provider's flow (:mod:`tasks.cloud.providers`):

1. load the IpRange and its Scope (missing Scope: Error ``ScopeNoFound`` (sic) ``Scope <name> does not
   exist``, requeue 60 s); add the finalizer;
2. allocate a CIDR when neither ``spec.cidr`` nor ``status.cidr`` is set (the first free /22 after the
   nodes range; unknown nodes: ``CidrAllocationFailed`` ``Error due to unknown SKR nodes range``),
   else copy ``spec.cidr`` into ``status.cidr``;
3. the Network: ``spec.network.name`` or ``<scope>--kyma``; a missing kyma network is an Error
   ``Kyma network not found`` (requeue 300 s), another missing one ``Network not found``; a missing
   ``<scope>--cm`` network is created (type ``cloud-resources``); wait until it is Ready (10 s), an
   Error network gives ``Network in error state`` (300 s);
4. deleting: refused while an NfsInstance, RedisInstance or RedisCluster uses it (Warning
   ``DeleteWhileUsed`` ``Can not be deleted while used by <Kind>: [ns/name ...]``, requeue 10 s);
   then the provider's delete (skipped when the network is already gone), the ``--cm`` network, the
   finalizer;
5. the provider's turn (read → pure plan → provider calls, :mod:`tasks.cloud.providers`), whose
   :class:`~kube.toolkit.Step` is carried out here (provisioned: state ``Ready``, the single
   condition Ready/True). A provider whose IpRange depends on a KCP VpcPeering (Azure: the kyma ↔
   Cloud Manager VNet peering ``<scope>``, :meth:`~tasks.cloud.providers.Provider.iprange_peering`)
   gets it as read in ``ctx.peering``, and its Step (a :class:`~tasks.cloud.step.ChildStep`) says when
   it must exist or be gone: created here (labels ``kymaName`` = the Scope, the module's) or deleted
   here, as the original's ``kymaPeeringCreate`` / ``kymaPeeringDelete``. A VpcPeering of that name
   not labelled with the Scope's kyma name is someone else's: never touched, the IpRange gets an Error
   (looked at again after 60 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

import kube.toolkit.conditions as cond
from kube import Kube
from kube.toolkit import StatusWriter, deleting, remove_finalizer
from tasks.cloud import names, providers, settings
from tasks.cloud.allocate import AllocationError, allocate_cidr
from tasks.cloud.kcp.common import carry_out_step, finalized, go_list, load, used_by
from tasks.cloud.providers import IpRangeContext
from tasks.cloud.step import ChildStep, StepBuilder, gone, with_child
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.iprange")

__all__ = ["reconcile"]


def reconcile(key: Key) -> Result:
    """Reconcile the KCP IpRange ``key``."""
    s, kcp, obj = load(key, names.KCP_IPRANGE)
    if obj is None:
        return Result.done()
    status = StatusWriter(kcp, names.KCP_IPRANGE, obj)
    scope_name = str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "")
    scope = kcp.get(names.SCOPE, scope_name, key.namespace)
    if scope is None:
        if deleting(obj):  # nothing can have been provisioned without a Scope to reach the cloud with
            remove_finalizer(kcp, names.KCP_IPRANGE, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
            return Result.done()
        status.fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {scope_name} does not exist")
        return Result.requeue(s.t(60))
    provider = providers.get(str((scope.get("spec") or {}).get("provider") or ""))
    if not deleting(obj):
        obj = finalized(kcp, names.KCP_IPRANGE, obj)
        status.obj = obj
        if provider is None:
            status.fail(names.REASON_UNKNOWN, f"Unknown provider {(scope.get('spec') or {}).get('provider')}")
            return Result.done()
        stop = _cidr(status, scope, provider, s)
        if stop is not None:
            return stop
    network_name = str(((obj.get("spec") or {}).get("network") or {}).get("name") or names.kyma_network(scope_name))
    network = kcp.get(names.NETWORK, network_name, key.namespace)
    if network is None and not deleting(obj):
        stop = _missing_network(kcp, status, scope, network_name, scope_name, s)
        if stop is not None:
            return stop
    if network is not None and not deleting(obj):
        net_conds = (network.get("status") or {}).get("conditions") or []
        if cond.is_true(net_conds, names.COND_ERROR) or (network.get("status") or {}).get("state") == names.STATE_ERROR:
            status.fail(names.REASON_UNKNOWN, "Network in error state")
            return Result.requeue(s.t(300))
        if not cond.is_true(net_conds, names.COND_READY):
            return Result.requeue(s.t(10))
    wanted = provider.iprange_peering(scope) if provider is not None else None
    peering = kcp.get(names.VPC_PEERING, wanted["metadata"]["name"], key.namespace) if wanted else None
    if wanted and peering is not None and not _ours(peering, scope_name):
        return carry_out_step(kcp, names.KCP_IPRANGE, status.obj, StepBuilder(status.obj).fail(
            names.REASON_UNKNOWN, f"VpcPeering {wanted['metadata']['name']} exists and does not belong to "
            f"kyma {scope_name}", requeue_after=s.t(60)))
    if deleting(obj):
        return _delete(kcp, status, scope, network, provider, scope_name, network_name, s, wanted, peering)
    assert provider is not None
    ctx = IpRangeContext(kube=kcp, obj=status.obj, scope=scope, network=network, settings=s, peering=peering)
    step = provider.reconcile_iprange(ctx)
    _child(kcp, step, wanted, peering, scope_name, key.namespace)
    return carry_out_step(kcp, names.KCP_IPRANGE, status.obj, step)


def _ours(peering: Mapping[str, Any], scope_name: str) -> bool:
    """Whether the VpcPeering carries the Scope's kyma name (made by an IpRange of it)."""
    return ((peering.get("metadata") or {}).get("labels") or {}).get(names.LABEL_KYMA_NAME) == scope_name


def _child(kcp: Kube, step: Any, wanted: dict[str, Any] | None, peering: dict[str, Any] | None,
           scope_name: str, namespace: str) -> None:
    """Create or delete the provider's VpcPeering as ``step`` says (:class:`ChildStep`). Raises ``kube.ApiError``."""
    if not wanted or not isinstance(step, ChildStep) or step.child is None:
        return
    name = str(wanted["metadata"]["name"])
    if step.child and peering is None:
        meta = wanted["metadata"]
        meta["namespace"] = namespace
        meta["labels"] = {**(meta.get("labels") or {}), names.LABEL_KYMA_NAME: scope_name,
                          names.LABEL_MODULE: names.MODULE_LABEL_VALUE}
        kcp.create(names.VPC_PEERING, wanted)
        log.info("kyma peering created", vpcpeering=name, kyma=scope_name)
    elif not step.child and peering is not None and not (peering.get("metadata") or {}).get("deletionTimestamp"):
        kcp.delete(names.VPC_PEERING, name, namespace)
        log.info("kyma peering deleted", vpcpeering=name, kyma=scope_name)


def _cidr(status: StatusWriter, scope: dict, provider: providers.Provider, s: settings.CloudSettings) -> Result | None:
    spec_cidr = str((status.obj.get("spec") or {}).get("cidr") or "")
    if status.status.get("cidr"):
        return None
    if spec_cidr:
        status.patch(cidr=spec_cidr)
        return None
    existing = provider.existing_ranges(scope)
    if not existing or not existing[0]:
        status.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Error due to unknown SKR nodes range")
        return Result.done()
    try:
        cidr = allocate_cidr(existing)
    except AllocationError as exc:
        log.warning("cidr allocation failed", iprange=status.obj["metadata"]["name"], error=str(exc))
        status.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Unable to allocate CIDR")
        return Result.done()
    status.patch(cidr=cidr)
    return None


def _missing_network(kcp: Kube, status: StatusWriter, scope: dict, network_name: str, scope_name: str,
                     s: settings.CloudSettings) -> Result | None:
    if network_name == names.kyma_network(scope_name):
        status.fail(names.REASON_NOT_FOUND, "Kyma network not found")
        return Result.requeue(s.t(300))
    if network_name != names.cm_network(scope_name):
        status.fail(names.REASON_NOT_FOUND, "Network not found")
        return Result.requeue(s.t(300))
    kcp.create(names.NETWORK, {
        "metadata": {"name": network_name, "namespace": status.obj["metadata"]["namespace"],
                     "labels": {names.LABEL_KYMA_NAME: scope_name}},
        "spec": {"scope": {"name": scope_name}, "type": "cloud-resources",
                 "network": {"managed": {"cidr": status.status.get("cidr", ""),
                                         "location": (scope.get("spec") or {}).get("region", "")}}},
    })
    return Result.requeue(s.t(10))


def _delete(kcp: Kube, status: StatusWriter, scope: dict, network: dict | None,
            provider: providers.Provider | None, scope_name: str, network_name: str, s: settings.CloudSettings,
            wanted: dict[str, Any] | None = None, peering: dict[str, Any] | None = None) -> Result:
    name, namespace = str(status.obj["metadata"]["name"]), str(status.obj["metadata"].get("namespace") or "")
    users = used_by(kcp, names.KCP_IPRANGE_CONSUMERS, namespace, name)
    if users:
        message = "; ".join(f"Can not be deleted while used by {kind}: {go_list(refs)}" for kind, refs in users.items())
        status.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED, message, names.STATE_WARNING)
        return Result.requeue(s.t(10))
    status.set_conditions(cond.remove(status.conditions, names.COND_WARNING), names.STATE_DELETING)
    step = gone()
    if provider is not None and network is not None:
        ctx = IpRangeContext(kube=kcp, obj=status.obj, scope=scope, network=network, settings=s, peering=peering)
        step = provider.delete_iprange(ctx)
        _child(kcp, step, wanted, peering, scope_name, namespace)
    elif peering is not None:  # the network is gone, the provider has nothing left: the VpcPeering still goes first
        step = with_child(StepBuilder(status.obj).step(requeue_after=s.t(1)), False)
        _child(kcp, step, wanted, peering, scope_name, namespace)
    if step.remove_finalizer and network_name == names.cm_network(scope_name) and network is not None:
        kcp.delete(names.NETWORK, network_name, namespace)
    return carry_out_step(kcp, names.KCP_IPRANGE, status.obj, step)
