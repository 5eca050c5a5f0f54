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
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.actions import Action, Write
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud import scope as shoots
from tasks.cloud.step import StepBuilder

__all__ = ["EXPOSED_DATA_EVERY", "RESYNC", "TRIAL", "exposed_data_due",
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
                existing: Obj | None) -> Outcome:
    """The Scope to write, the Outcome's one write: ``create`` when none exists, else an ``update``
    (replace) under the read ``resourceVersion`` keeping its labels and finalizers."""
    desired = shoots.build_scope(kyma=kyma, namespace=namespace, gardener_cluster=gardener_cluster, shoot=shoot,
                                 provider=provider, info=info, existing=existing)
    if existing is None:
        return Outcome(writes=(Action.on("create", names.SCOPE, desired),))
    desired["metadata"]["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    return Outcome(writes=(Action.on("update", names.SCOPE, desired, actual=dict(existing)),))


def plan_network(scope: Obj, network: Obj | None, reference: Mapping[str, Any], t: Timing) -> Outcome | None:
    """The ``<kyma>--kyma`` Network's turn: create it (``reference``: the provider's
    ``spec.network.reference``) when it is missing, then come back after 1 s; come back after 1 s while it is
    not Ready; ``None``: it is Ready, the Scope's turn goes on."""
    if network is None:
        return Outcome(requeue_after=t(1), writes=(
            Action.on("create", names.NETWORK, shoots.kyma_network_object(scope, reference)),))
    if not cond.is_true((network.get("status") or {}).get("conditions"), names.COND_READY):
        return Outcome(requeue_after=t(1))
    return None


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


def kyma_info_writes(namespace: Obj | None, configmap: Obj | None, ips: Sequence[str]) -> Outcome:
    """The SKR writes that publish ``ips`` (``", "``-joined) in ``kyma-system/kyma-info`` key
    ``cloud.natGatewayIps``, given the ``kyma-system`` Namespace and the ConfigMap as read (``None``:
    missing): the Namespace created (one created meanwhile is fine), the ConfigMap created or its value
    patched; nothing when it holds the value already."""
    value = ", ".join(ips)
    writes: list[Action] = []
    if namespace is None:
        writes.append(Action.on("create", resources.NAMESPACE, {"metadata": {"name": names.KYMA_SYSTEM}}))
    if configmap is None:
        writes.append(Action.on("create", resources.CONFIGMAP, {
            "metadata": {"name": names.KYMA_INFO, "namespace": names.KYMA_SYSTEM},
            "data": {names.KYMA_INFO_NAT_KEY: value}}))
    elif (configmap.get("data") or {}).get(names.KYMA_INFO_NAT_KEY) != value:
        writes.append(Action.named("patch", resources.CONFIGMAP, names.KYMA_INFO, names.KYMA_SYSTEM,
                                   body={"data": {names.KYMA_INFO_NAT_KEY: value}}))

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        if namespace is None and write is writes[0] and failure.conflict:
            return None  # the Namespace was created meanwhile
        return Outcome(error=str(failure))

    return Outcome(writes=tuple(writes), refused=refused)


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


def plan_gone(scope: Obj, nuke: Obj | None, nuke_enabled: bool, t: Timing) -> Outcome:
    """The runtime (GardenerCluster) is gone and the Scope exists: delete the kyma Network (always,
    idempotent); when nuking (:func:`nukes`), create the Nuke and come back, delete a finished Nuke of an
    earlier runtime and come back, or wait for the Nuke to be Ready; then release the Scope (its finalizer
    removed with the legacy names, then deleted). ``nuke``: the Nuke of the scope's name as read (read only
    when :func:`nukes`)."""
    meta = scope.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    network = Action.named("delete", names.NETWORK, names.kyma_network(name), namespace)
    if nukes(scope, nuke_enabled):
        if nuke is None:
            return Outcome(requeue_after=t(1), writes=(network, Action.on("create", names.NUKE, {
                "metadata": {"name": name, "namespace": namespace, "labels": {names.LABEL_KYMA_NAME: name}},
                "spec": {"scope": {"name": name}}})))
        created = str((nuke.get("metadata") or {}).get("creationTimestamp") or "")
        if created < str(meta.get("creationTimestamp") or ""):  # a finished Nuke of an earlier runtime
            return Outcome(requeue_after=t(1), writes=(network, Action.named("delete", names.NUKE, name, namespace)))
        if (nuke.get("status") or {}).get("state") != names.STATE_READY:
            return Outcome(requeue_after=t(1), writes=(network,))
    return Outcome(writes=(network, Action.finalizer(False, names.SCOPE, scope, names.FINALIZER,
                                                     legacy=names.LEGACY_FINALIZERS),
                           Action.named("delete", names.SCOPE, name, namespace)))
