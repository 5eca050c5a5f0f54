"""The ``cloud-scope`` controller's decisions (pure; ``pkg/kcp/scope``), over what
:mod:`tasks.cloud.kcp.scope` read. The time is an input (``now``, RFC 3339), never read here.

One turn, while the GardenerCluster exists and is not being deleted:

1. :func:`needs_build`: the Scope is (re)built when it is missing, lacks one of its labels
   (:func:`tasks.cloud.scope.missing_labels`) or its provider says it is incomplete;
   :func:`scope_write` is the Scope object to create or replace (built by
   :func:`tasks.cloud.scope.build_scope`, keeping labels and finalizers of the one read);
2. :func:`plan_network`: the ``<kyma>--kyma`` Network to create, or a wait (1 s) until it is Ready;
3. exposed data (flag ``exposeData``, not on ``trial`` plans, at most once an hour,
   :func:`exposed_data_due`): the NAT gateway IPs go into the SKR's ConfigMap ``kyma-system/kyma-info``
   key ``cloud.natGatewayIps`` (:func:`kyma_info_writes`) and into ``status.exposedData``;
4. :func:`plan_ready`: state ``Ready`` with the condition Ready/True ``Ready`` (and the exposed data),
   one status write; come back after 30 min (the resync), or after 60 s when the exposed data must be
   retried.

Otherwise the runtime is gone (:func:`plan_gone`): delete the ``<kyma>--kyma`` Network, create a Nuke
and wait for it (unless disabled or trial; a finished Nuke of an earlier runtime of the same name is
deleted first), then release the Scope's finalizer and delete it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud import scope as shoots
from tasks.cloud.step import StepBuilder

__all__ = ["EXPOSED_DATA_EVERY", "RESYNC", "TRIAL", "GonePlan", "KymaInfo", "NetworkPlan", "exposed_data_due",
           "kyma_info_writes", "needs_build", "nukes", "plan_gone", "plan_network", "plan_ready", "scope_write"]

#: Seconds between two turns of a Ready Scope, and between two reads of the exposed data.
RESYNC = 30 * 60
EXPOSED_DATA_EVERY = 60 * 60
#: Seconds until a failed exposed-data read or write is retried.
EXPOSED_DATA_RETRY = 60
TRIAL = "trial"

Obj = Mapping[str, Any]
Timing = Callable[[float], float]


def _labels(obj: Obj | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _trial(scope: Obj) -> bool:
    return _labels(scope).get(names.LABEL_BROKER_PLAN) == TRIAL


def needs_build(scope: Obj | None, gardener_cluster: Obj, incomplete: bool) -> bool:
    """Whether the Scope must be (re)built from the Garden: it is missing, a label of the
    GardenerCluster is missing or differs, or its provider said it is ``incomplete``."""
    return scope is None or bool(shoots.missing_labels(scope, gardener_cluster)) or incomplete


def scope_write(kyma: str, namespace: str, gardener_cluster: Obj, shoot: Obj, provider: str, info: Mapping[str, Any],
                existing: Obj | None) -> Action:
    """The Scope to write: ``create`` when none exists, else an ``update`` (replace) under the read
    ``resourceVersion`` keeping its labels and finalizers."""
    desired = shoots.build_scope(kyma=kyma, namespace=namespace, gardener_cluster=gardener_cluster, shoot=shoot,
                                 provider=provider, info=info, existing=existing)
    if existing is None:
        return Action("create", names.SCOPE.kind, desired)
    desired["metadata"]["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    return Action("update", names.SCOPE.kind, desired, actual=dict(existing))


@dataclass(frozen=True)
class NetworkPlan:
    """The ``<kyma>--kyma`` Network: ``create`` it, or come back after ``requeue_after`` (not Ready yet);
    both ``None``: it is Ready, go on."""

    create: dict[str, Any] | None = None
    requeue_after: float | None = None

    @property
    def ready(self) -> bool:
        """Whether the Network is Ready (the turn goes on)."""
        return self.create is None and self.requeue_after is None


def plan_network(scope: Obj, network: Obj | None, reference: Mapping[str, Any], t: Timing) -> NetworkPlan:
    """Create the kyma Network (``reference``: the provider's ``spec.network.reference``) when it is
    missing, then wait 1 s; wait 1 s while it is not Ready."""
    if network is None:
        return NetworkPlan(create=shoots.kyma_network_object(scope, reference), requeue_after=t(1))
    if not cond.is_true((network.get("status") or {}).get("conditions"), names.COND_READY):
        return NetworkPlan(requeue_after=t(1))
    return NetworkPlan()


def _parse(ts: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def exposed_data_due(scope: Obj, expose_data: bool, now: str, t: Timing) -> bool:
    """Whether the exposed data are read now: the flag is on, the plan is not ``trial``, and the last
    read (``status.exposedData.readTime``) is missing, unreadable, or at least an hour before ``now``."""
    if not expose_data or _trial(scope):
        return False
    last = _parse(str(((scope.get("status") or {}).get("exposedData") or {}).get("readTime") or ""))
    current = _parse(now)
    if last is None or current is None:
        return True
    return (current - last).total_seconds() >= t(EXPOSED_DATA_EVERY)


@dataclass(frozen=True)
class KymaInfo:
    """The SKR writes that publish the NAT gateway IPs: the ``kyma-system`` Namespace to create, the
    ``kyma-system/kyma-info`` ConfigMap to ``create`` (a manifest) or its merge ``patch``; nothing when
    it holds the value already."""

    create_namespace: bool = False
    create: dict[str, Any] | None = None
    patch: dict[str, Any] | None = None


def kyma_info_writes(namespace: Obj | None, configmap: Obj | None, ips: Sequence[str]) -> KymaInfo:
    """Publish ``ips`` (``", "``-joined) in ``kyma-system/kyma-info`` key ``cloud.natGatewayIps``, given
    the ``kyma-system`` Namespace and the ConfigMap as read (``None``: missing)."""
    value = ", ".join(ips)
    create = None
    patch = None
    if configmap is None:
        create = {"metadata": {"name": names.KYMA_INFO, "namespace": names.KYMA_SYSTEM},
                  "data": {names.KYMA_INFO_NAT_KEY: value}}
    elif (configmap.get("data") or {}).get(names.KYMA_INFO_NAT_KEY) != value:
        patch = {"data": {names.KYMA_INFO_NAT_KEY: value}}
    return KymaInfo(create_namespace=namespace is None, create=create, patch=patch)


def plan_ready(scope: Obj, now: str, t: Timing, published: Sequence[str] | None = None, retry: bool = False) -> Outcome:
    """The Ready Scope's Outcome: state ``Ready``, the single condition Ready/True ``Ready``, with
    ``status.exposedData`` (``natGatewayIps`` = ``published``, ``readTime`` = ``now``) when the exposed
    data were just published; come back after the resync (30 min), or after 60 s when ``retry``."""
    run = StepBuilder(scope, now)
    if published is not None:
        run.set(exposedData={"natGatewayIps": list(published), "readTime": now})
    run.exclusive(names.COND_READY, True, names.REASON_READY, names.REASON_READY, names.STATE_READY)
    return run.step(requeue_after=t(EXPOSED_DATA_RETRY) if retry else t(RESYNC))


def nukes(scope: Obj, enabled: bool) -> bool:
    """Whether a gone runtime's objects are nuked: the ``nuke`` flag is on and the plan is not ``trial``."""
    return enabled and not _trial(scope)


@dataclass(frozen=True)
class GonePlan:
    """The gone runtime's turn: delete the kyma Network (always, idempotent), then the Nuke to
    ``create`` or ``delete`` and come back after ``requeue_after``, or ``release`` the Scope (remove
    its finalizer, then delete it)."""

    delete_network: bool = True
    create_nuke: dict[str, Any] | None = None
    delete_nuke: bool = False
    requeue_after: float | None = None
    release: bool = False


def plan_gone(scope: Obj, nuke: Obj | None, nuke_enabled: bool, t: Timing) -> GonePlan:
    """The runtime (GardenerCluster) is gone and the Scope exists: see :class:`GonePlan`. ``nuke``:
    the Nuke of the scope's name as read (read only when :func:`nukes`)."""
    if nukes(scope, nuke_enabled):
        meta = scope.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), meta.get("namespace")
        if nuke is None:
            return GonePlan(create_nuke={"metadata": {"name": name, "namespace": namespace,
                                                      "labels": {names.LABEL_KYMA_NAME: name}},
                                         "spec": {"scope": {"name": name}}}, requeue_after=t(1))
        created = str((nuke.get("metadata") or {}).get("creationTimestamp") or "")
        if created < str(meta.get("creationTimestamp") or ""):
            return GonePlan(delete_nuke=True, requeue_after=t(1))  # a finished Nuke of an earlier runtime
        if (nuke.get("status") or {}).get("state") != names.STATE_READY:
            return GonePlan(requeue_after=t(1))
    return GonePlan(release=True)
