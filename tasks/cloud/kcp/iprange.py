"""The ``cloud-iprange`` controller: KCP IpRanges into cloud subnets (``pkg/kcp/iprange``): read →
:func:`~.iprange_plan.plan` → apply, with the provider's turn (its own read → pure plan → calls) between
the plan's Outcome and :func:`~.iprange_plan.finish`'s writes.

The common part, in the original's order (the decisions are :mod:`tasks.cloud.kcp.iprange_plan`'s), then
the provider's flow (:mod:`tasks.cloud.providers`):

1. load the IpRange and its Scope (missing Scope: Error ``ScopeNoFound`` (sic) ``Scope <name> does not
   exist``, requeue 60 s); add the finalizer;
2. allocate a CIDR when neither ``spec.cidr`` nor ``status.cidr`` is set (the first free /22 after the
   nodes range; unknown nodes: ``CidrAllocationFailed`` ``Error due to unknown SKR nodes range``),
   else copy ``spec.cidr`` into ``status.cidr``;
3. the Network: ``spec.network.name`` or ``<scope>--kyma``; a missing kyma network is an Error
   ``Kyma network not found`` (requeue 300 s), another missing one ``Network not found``; a missing
   ``<scope>--cm`` network is created (type ``cloud-resources``); wait until it is Ready (10 s), an
   Error network gives ``Network in error state`` (300 s);
4. deleting: refused while a consumer (:func:`tasks.cloud.registry.iprange_consumers`) uses it (Warning
   ``DeleteWhileUsed`` ``Can not be deleted while used by <Kind>: [ns/name ...]``, requeue 10 s);
   then the provider's delete (skipped when the network is already gone), the ``--cm`` network, the
   finalizer;
5. the provider's turn (read → pure plan → provider calls, :mod:`tasks.cloud.providers`), whose
   :class:`~kube.toolkit.Outcome` is carried out here (provisioned: state ``Ready``, the single
   condition Ready/True). A provider whose IpRange depends on a KCP VpcPeering (Azure: the kyma ↔
   Cloud Manager VNet peering ``<scope>``, :meth:`~tasks.cloud.providers.Provider.iprange_peering`)
   gets it as read in ``ctx.peering``, and its Outcome (a :class:`~tasks.cloud.step.ChildStep`) says when
   it must exist or be gone: created here (labels ``kymaName`` = the Scope, the module's) or deleted
   here, as the original's ``kymaPeeringCreate`` / ``kymaPeeringDelete``. A VpcPeering of that name
   not labelled with the Scope's kyma name is someone else's: never touched, the IpRange gets an Error
   (looked at again after 60 s).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from kube import Kube
from kube.toolkit import Action, Outcome, execute
from tasks.cloud import clouds, names, providers, registry
from tasks.cloud.kcp.common import load, used_by
from tasks.cloud.kcp.iprange_plan import VPC_PEERING, Seen, finish, network_name, plan, scope_name
from tasks.cloud.providers import IpRangeContext
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.iprange")

__all__ = ["read", "reconcile"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> tuple[Seen, providers.Provider | None]:
    """The Scope and its provider, the Network, the provider's VpcPeering and, while deleting, the
    consumers. Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None), None
    provider = clouds.get(str((scope.get("spec") or {}).get("provider") or ""))
    network = kcp.get(names.NETWORK, network_name(obj), namespace)
    wanted = provider.iprange_peering(scope) if provider is not None else None
    peering = kcp.get(names.VPC_PEERING, wanted["metadata"]["name"], namespace) if wanted else None
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    consumers = registry.iprange_consumers(skr=False)
    users = used_by(kcp, consumers, namespace, str(obj["metadata"]["name"])) if deleting else {}
    return Seen(obj, scope, provider is not None, provider.existing_ranges(scope) if provider is not None else [],
                network, wanted, peering, users), provider


def _logged(actions: Iterable[Action], kyma: str) -> None:
    """Log the kyma VpcPeering writes among ``actions`` (made)."""
    for action in actions:
        if action.kind == VPC_PEERING:
            log.info(f"kyma peering {action.verb}d", vpcpeering=action.name, kyma=kyma)


def reconcile(key: Key) -> Result:
    """Reconcile the KCP IpRange ``key``: read → :func:`~.iprange_plan.plan` → apply (the provider's turn
    between the plan's Outcome and :func:`~.iprange_plan.finish`'s writes)."""
    s, kcp, obj = load(key, names.KCP_IPRANGE)
    if obj is None:
        return Result.done()
    seen, provider = read(kcp, obj, key.namespace)
    decided = plan(seen, s.t)
    if decided.warning:
        log.warning("cidr allocation failed", iprange=obj["metadata"]["name"], error=decided.warning)
    current = execute(decided.step, kcp, names.KCP_IPRANGE, obj, legacy_finalizers=names.LEGACY_FINALIZERS).obj
    execute(Outcome(writes=decided.actions), kcp, names.KCP_IPRANGE, current or obj)
    if decided.provider and provider is not None and seen.scope is not None:
        ctx = IpRangeContext(kube=kcp, obj=current or obj, scope=seen.scope, network=seen.network, settings=s,
                             peering=seen.peering)
        turn = provider.delete_iprange(ctx) if decided.provider == "delete" else provider.reconcile_iprange(ctx)
    elif decided.turn is not None:
        turn = decided.turn
    else:
        return decided.step.as_result()
    finished = finish(seen, turn)
    done = execute(turn.first(*finished), kcp, names.KCP_IPRANGE, current or obj,
                   legacy_finalizers=names.LEGACY_FINALIZERS)
    _logged(finished, scope_name(obj))
    return done.result
