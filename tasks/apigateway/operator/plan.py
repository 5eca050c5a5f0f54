"""One APIGateway reconcile as a pure function (api-gateway's ``internal/controller/operator``).

1. Only the oldest APIGateway CR reconciles the module; the others get ``Warning`` "stopped APIGateway CR
   reconciliation: only APIGateway CR <oldest> reconciles the module" (condition ``OlderCRExists``).
2. The module's NetworkPolicy (:func:`.resources.network_policy`) while ``spec.networkPoliciesEnabled``
   (and the CR is not being deleted), else its removal: before the dependency check, as the original, so
   it is written whatever happens next.
3. Dependencies (unless deleting): the Istio Gateway and VirtualService CRDs.
4. Finalizer ``gateways.operator.kyma-project.io/api-gateway-reconciliation`` (the seed's name). On
   deletion it stays while APIRules, Ory Oathkeeper Rules or RateLimits exist: ``Warning`` with the
   original's texts, the blocking objects listed in the log and (five at most) in the condition.
5. The Kyma Gateway (:mod:`.resources`) while ``spec.enableKymaGateway`` is true, guarded by the finalizer
   ``gateways.operator.kyma-project.io/kyma-gateway``; disabling or deleting it is blocked (``Warning``)
   while APIRules or VirtualServices use ``kyma-system/kyma-gateway``. The domain is
   ``kube-system/shoot-info``'s ``domain`` (Gardener: Certificate + DNSEntry) or ``local.kyma.dev``
   (self-signed Secret).
6. Ory Oathkeeper while v1beta1 APIRules are allowed (the access gate); otherwise removed (CRD last) once
   no Ory Rules are left. Its HorizontalPodAutoscaler only on production clusters (deleted on evaluation
   clusters, which run one replica). Its Deployment must become available within ``oathkeeper_ready_seconds`` of its
   creation (the original waits 60 x 2 s in the reconcile; here the reconcile requeues every 2 s
   instead of blocking a worker), else ``Error`` "Oathkeeper did not start successfully".
7. ``Ready`` "Successfully reconciled"; the next reconcile after ``reconciliation_interval`` (seed: 10 h).

Writes are minimal: an object is created when missing, updated only when it differs from the desired
manifest in what the manifest sets, and deleted only when it exists.

The plan's :class:`~kube.toolkit.outcome.Outcome` (``OperatorPlan.outcome``) lists, in order, the
finalizers to add, the writes, the finalizers to remove; the status merge patch (by
:func:`~kube.toolkit.outcome.status_patch`: the ``Ready`` condition's transition time kept while it
says the same) with its Event (``Normal`` for Ready and Processing, else ``Warning``, reason the
condition's); the requeue or the error; and what a refused write means (``Error`` "Error during
reconciliation", condition ``ReconcileFailed`` with the refused write and the API server's words; the
finalizers are not removed). :func:`kube.toolkit.execute` carries it out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kube.toolkit.conditions as conditions
from kube.clock import now_rfc3339
from kube.diff import needs_update, prepare_replace
from kube.refusal import Failure
from kube.toolkit.actions import Action, Write
from kube.toolkit.outcome import Event, Outcome, status_patch
from tasks.apigateway import model
from tasks.apigateway import status as st
from tasks.apigateway.operator import resources as res
from tasks.apigateway.operator.model import APIGateway, oldest_apigateway
from tasks.apigateway.parsing import V1BETA1_SPEC_ANNOTATION, as_dict, as_list

#: ``Action.kind`` of the finalizer changes on the APIGateway CR itself.
APIGATEWAY_KIND = model.APIGATEWAY.kind
FINALIZER = "gateways.operator.kyma-project.io/api-gateway-reconciliation"
KYMA_GATEWAY_FINALIZER = "gateways.operator.kyma-project.io/kyma-gateway"
READY_DESCRIPTION = "Successfully reconciled"
PROCESSING = "Processing"
LOGS_HINT = "Please take a look at kyma-system/api-gateway-controller-manager logs to see more information about " \
            "the warning"
REQUIRED_CRDS = ("gateways.networking.istio.io", "virtualservices.networking.istio.io")
GARDENER_CRDS = ("dnsentries.dns.gardener.cloud", "certificates.cert.gardener.cloud")
MAX_LISTED = 5
#: Conditions (type ``Ready``): ``reason`` → (message, status), as the original's ``conditions`` package.
CONDITIONS = {
    "ReconcileSucceeded": ("Reconciliation succeeded", "True"),
    "ReconcileFailed": ("Reconciliation failed", "False"),
    "ReconcileProcessing": ("Reconcile processing", "Unknown"),
    "OlderCRExists": ("API Gateway CR is not the oldest one and does not represent the module state", "False"),
    "CustomResourceMisconfigured": ("API Gateway CR has invalid configuration", "False"),
    "DependenciesMissing": ("Module dependencies missing", "False"),
    "KymaGatewayReconcileFailed": ("Kyma Gateway reconciliation failed", "False"),
    "KymaGatewayDeletionBlocked": ("Kyma Gateway deletion blocked because of the existing custom resources", "False"),
    "OathkeeperReconcileFailed": ("Ory Oathkeeper reconciliation failed", "False"),
    "DeletionBlockedExistingResources": ("API Gateway deletion blocked because of the existing custom resources",
                                         "False"),
}


@dataclass(frozen=True)
class OperatorPolicy:
    """Timing and switches of the ``apigateway`` controller.

    Attributes:
        reconciliation_interval: seconds to the next reconcile after success (seed: 10 h).
        v1beta1_access: v1beta1 APIRules are reconciled, so Ory Oathkeeper is installed.
        oathkeeper_ready_seconds: how long the Oathkeeper Deployment may take to become available
            (the original's 60 x 2 s); 0 = do not wait (clusters without a kubelet, e.g. the dev API server).
        images: the Oathkeeper Deployment's images.
    """

    reconciliation_interval: float = 36000.0
    v1beta1_access: bool = False
    oathkeeper_ready_seconds: float = 120.0
    images: res.Images = field(default_factory=res.Images)


@dataclass(frozen=True)
class OperatorState:
    """What one reconcile looks at.

    Attributes:
        apigateways: every APIGateway CR.
        crds: installed CRD names (``None`` = unknown: assume Istio's, not Gardener's).
        shoot_info: ConfigMap ``kube-system/shoot-info`` (Gardener), if any.
        ingress_service: Service ``istio-system/istio-ingressgateway``, if any (DNSEntry targets).
        managed: the managed objects that exist, by ``(kind, namespace, name)``.
        apirules, virtual_services, ory_rules, ratelimits: every object of these kinds (deletion checks).
        nodes: the cluster's Nodes (evaluation clusters get one Oathkeeper replica and no HPA); ``None``:
            unknown (``render`` without Nodes), sized as production.
        now: the time of the reconcile (``datetime``, UTC).
    """

    apigateways: tuple[dict[str, Any], ...] = ()
    crds: frozenset[str] | None = None
    shoot_info: dict[str, Any] | None = None
    ingress_service: dict[str, Any] | None = None
    managed: Mapping[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    apirules: tuple[dict[str, Any], ...] = ()
    virtual_services: tuple[dict[str, Any], ...] = ()
    ory_rules: tuple[dict[str, Any], ...] = ()
    ratelimits: tuple[dict[str, Any], ...] = ()
    nodes: tuple[dict[str, Any], ...] | None = ()
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass(frozen=True)
class Op(Action):
    """One write, the toolkit's :class:`~kube.toolkit.Action` (``kind`` a key of ``res.RESOURCES``):
    ``create`` / ``update`` ``object`` (an ``update`` carries the read resourceVersion), or ``delete``
    the object named by ``object``'s metadata. A created object with ``data: None`` is a Secret whose
    content the controller generates (:mod:`.secrets`)."""

    @classmethod
    def deleting(cls, ref: tuple[str, str, str]) -> Op:
        """``delete`` of ``ref`` = ``(kind, namespace, name)``."""
        kind, namespace, name = ref
        return cls("delete", kind, {"metadata": {"name": name, "namespace": namespace}})

    @property
    def ref(self) -> tuple[str, str, str]:
        """``(kind, namespace, name)`` (``""`` namespace: cluster-scoped)."""
        return self.kind, self.namespace, self.name

    @property
    def obj(self) -> dict[str, Any] | None:
        """The manifest to write; ``None`` for a delete."""
        return None if self.verb == "delete" else self.object

    def describe(self) -> str:
        """``create Gateway kyma-system/kyma-gateway``; a cluster-scoped object without the slash."""
        kind, namespace, name = self.ref
        return f"{self.verb} {kind} {namespace + '/' if namespace else ''}{name}"


@dataclass(frozen=True)
class OperatorStatus:
    """``status.state``, ``status.description`` and the ``Ready`` condition's ``reason`` (its message is
    the reason's message plus ``extra``)."""

    state: str
    description: str
    reason: str
    extra: str = ""

    def condition(self, now: str, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``Ready`` condition; ``lastTransitionTime`` kept while its status does not change."""
        message, status = CONDITIONS[self.reason]
        new = {"type": "Ready", "status": status, "reason": self.reason, "message": message + self.extra,
               "lastTransitionTime": now}  # ``now`` as given: ``render`` passes ""
        return conditions.set_exclusive([dict(previous)] if previous else None, new)[0]

    def body(self, now: str, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``status`` to write (``now`` RFC 3339)."""
        previous = next((c for c in as_list((current or {}).get("conditions"))
                         if isinstance(c, dict) and c.get("type") == "Ready"), None)
        body: dict[str, Any] = {"state": self.state, "conditions": [self.condition(now, previous)]}
        if self.description:
            body["description"] = self.description
        return body


@dataclass(frozen=True)
class OperatorPlan:
    """What one reconcile does: ``outcome`` (the module doc), and for ``render`` and the logs what it
    decided: ``status`` (``None``: the CR is gone once its finalizers are), ``blocking`` (every object
    blocking a deletion, to log) and ``desired`` (every managed object rendered)."""

    status: OperatorStatus | None
    outcome: Outcome
    blocking: tuple[str, ...] = ()
    desired: tuple[dict[str, Any], ...] = ()

    @property
    def ops(self) -> tuple[Op, ...]:
        """The writes of managed objects, in order (the finalizer changes left out)."""
        return tuple(w for w in self.outcome.writes if isinstance(w, Op))

    @property
    def add_finalizers(self) -> tuple[str, ...]:
        """The finalizers added first."""
        return _finalizers(self.outcome, "add_finalizer")

    @property
    def remove_finalizers(self) -> tuple[str, ...]:
        """The finalizers removed after the writes."""
        return _finalizers(self.outcome, "remove_finalizer")

    @property
    def failed(self) -> bool:
        """The reconcile reports an error, so the key backs off."""
        return self.outcome.error is not None


def _finalizers(outcome: Outcome, verb: str) -> tuple[str, ...]:
    return tuple(str((w.body or {}).get("finalizer")) for w in outcome.writes
                 if isinstance(w, Action) and not isinstance(w, Op) and w.verb == verb)


def _planned(obj: Mapping[str, Any], state: OperatorState, status: OperatorStatus | None, ops: Sequence[Op] = (),
             add: Sequence[str] = (), remove: Sequence[str] = (), *, failed: bool = False,
             requeue_after: float | None = None, blocking: tuple[str, ...] = (),
             desired: Sequence[dict[str, Any]] = ()) -> OperatorPlan:
    """The plan whose Outcome adds ``add``, writes ``ops``, removes ``remove`` and leaves ``status``."""
    manifest = dict(obj)
    writes: list[Write] = [Action("add_finalizer", APIGATEWAY_KIND, manifest, body={"finalizer": f}) for f in add]
    writes += ops
    writes += [Action("remove_finalizer", APIGATEWAY_KIND, manifest, body={"finalizer": f}) for f in remove]
    patch, event = _status(obj, status, now_rfc3339(state.now))
    description = status.description if status is not None else ""

    def refused(write: Write, failure: Failure, _answers: Sequence[Any]) -> Outcome:
        if not isinstance(write, Op) or failure.conflict:  # a finalizer's patch, or a stale write: again
            return Outcome(error=str(failure))
        error = f"{write.describe()}: {failure.message}"
        stopped = OperatorStatus(st.ERROR, "Error during reconciliation", "ReconcileFailed", f": {error}")
        stopped_patch, stopped_event = _status(obj, stopped, now_rfc3339(state.now))
        return Outcome(status=stopped_patch, event=stopped_event, error=error)

    outcome = Outcome(status=patch, event=event, writes=tuple(writes), refused=refused if writes else None,
                      requeue_after=None if failed else requeue_after, error=description if failed else None)
    return OperatorPlan(status, outcome, blocking, tuple(desired))


def _status(obj: Mapping[str, Any], status: OperatorStatus | None, now: str) -> tuple[dict[str, Any] | None,
                                                                                      Event | None]:
    """The merge patch of the APIGateway's ``.status`` to ``status`` and its Event; ``(None, None)``
    when it says so already."""
    if status is None:
        return None, None
    current = obj.get("status") if isinstance(obj.get("status"), dict) else None
    patch = status_patch(current, status.body(now, current))
    if patch is None:
        return None, None
    type_ = "Normal" if status.state in (st.READY, PROCESSING) else "Warning"
    return patch, Event(type_, status.reason, status.description)


class _Problem(Exception):
    def __init__(self, status: OperatorStatus, blocking: tuple[str, ...] = ()) -> None:
        super().__init__(status.description)
        self.status = status
        self.blocking = blocking


def _names(objects: tuple[dict[str, Any], ...] | list[dict[str, Any]], namespaced: bool = True) -> list[str]:
    out = []
    for obj in objects:
        meta = as_dict(obj.get("metadata"))
        out.append(f"{meta.get('namespace')}/{meta.get('name')}" if namespaced else str(meta.get("name")))
    return out


def _blocked(what: str, found: list[str]) -> OperatorStatus:
    return OperatorStatus(st.WARNING, f"There are {what} that block the deletion of API-Gateway CR. {LOGS_HINT}",
                          "DeletionBlockedExistingResources", ": " + ", ".join(found[:MAX_LISTED]))


def apirule_uses_kyma_gateway(apirule: Mapping[str, Any]) -> bool:
    """The APIRule's ``spec.gateway`` (or that of its stored v1beta1 spec) is ``kyma-system/kyma-gateway``."""
    if as_dict(apirule.get("spec")).get("gateway") == res.KYMA_GATEWAY_REF:
        return True
    text = as_dict(as_dict(apirule.get("metadata")).get("annotations")).get(V1BETA1_SPEC_ANNOTATION)
    try:
        spec = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return False
    return isinstance(spec, dict) and spec.get("gateway") == res.KYMA_GATEWAY_REF


def virtual_service_uses_kyma_gateway(vs: Mapping[str, Any]) -> bool:
    """The VirtualService routes on ``kyma-system/kyma-gateway`` (``istio-system/istio-healthz`` excluded)."""
    meta = as_dict(vs.get("metadata"))
    if (meta.get("namespace"), meta.get("name")) == res.HEALTHZ_VIRTUAL_SERVICE:
        return False
    return res.KYMA_GATEWAY_REF in as_list(as_dict(vs.get("spec")).get("gateways"))


_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
             "Ti": 2**40}


def quantity(text: Any) -> float:
    """A Kubernetes quantity (``4``, ``3800m``, ``16Gi``) as a number; 0 when unreadable."""
    match = _QUANTITY.match(str(text))
    if not match or match.group(2) not in _SUFFIXES:
        return 0.0
    try:
        return float(match.group(1)) * _SUFFIXES[match.group(2)]
    except ValueError:
        return 0.0


def evaluation_cluster(nodes: tuple[dict[str, Any], ...]) -> bool:
    """Less than 5 CPUs or 10 GB of memory in all (``clusterconfig.EvaluateClusterSize``)."""
    cpu = sum(quantity(as_dict(as_dict(n.get("status")).get("capacity")).get("cpu", 0)) for n in nodes)
    memory = sum(quantity(as_dict(as_dict(n.get("status")).get("capacity")).get("memory", 0)) for n in nodes)
    return cpu < 5 or memory < 10e9


def _parse_time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def deployment_available(deployment: Mapping[str, Any]) -> bool:
    """The Deployment's ``Available`` condition is ``True`` (``hasMinimumReplicasAvailable``)."""
    return any(isinstance(c, dict) and c.get("type") == "Available" and c.get("status") == "True"
               for c in as_list(as_dict(deployment.get("status")).get("conditions")))


class _Ops:
    def __init__(self, state: OperatorState) -> None:
        self.state = state
        self.ops: list[Op] = []
        self.desired: list[dict[str, Any]] = []

    def apply(self, obj: dict[str, Any]) -> None:
        self.desired.append(obj)
        key = res.ref(obj)
        actual = self.state.managed.get(key)
        if actual is None:
            self.ops.append(Op("create", key[0], obj))
        elif obj.get("data", 0) is None:
            return  # generated content: never replaced
        elif needs_update(obj, actual):
            self.ops.append(Op("update", key[0], prepare_replace(obj, actual)))

    def delete(self, key: tuple[str, str, str]) -> None:
        if key in self.state.managed:
            self.ops.append(Op.deleting(key))


def _kyma_gateway(gw: APIGateway, state: OperatorState, ops: _Ops) -> None:
    """The Kyma Gateway objects (enabled), or their removal (disabled / deleting) unless it is in use."""
    if not gw.enable_kyma_gateway or gw.deleting:
        users = [a for a in state.apirules if apirule_uses_kyma_gateway(a)]
        users += [v for v in state.virtual_services if virtual_service_uses_kyma_gateway(v)]
        if users:
            names = _names(users, namespaced=False)
            raise _Problem(OperatorStatus(
                st.WARNING, f"There are custom resources that block the deletion of Kyma Gateway. {LOGS_HINT}",
                "KymaGatewayDeletionBlocked", ": " + ", ".join(names[:MAX_LISTED])), tuple(_names(users)))
        for key in res.kyma_gateway_refs():
            ops.delete(key)
        return
    domain = str(as_dict((state.shoot_info or {}).get("data")).get("domain") or "") or res.NON_GARDENER_DOMAIN
    gardener = state.crds is not None and all(c in state.crds for c in GARDENER_CRDS)
    if gardener and domain != res.NON_GARDENER_DOMAIN:
        targets, ip_stack, error = _ingress_targets(state.ingress_service)
        if error:
            raise _Problem(OperatorStatus(st.ERROR, "Error during Kyma Gateway reconciliation",
                                          "KymaGatewayReconcileFailed", f": failed to fetch Istio ingress gateway "
                                                                        f"IP: {error}"))
        ops.apply(res.dns_entry(domain, targets, ip_stack))
        ops.apply(res.certificate(domain))
    else:
        ops.apply(res.certificate_secret())
    ops.apply(res.healthz_virtual_service(domain))
    for namespace, name in res.LEGACY_UI_CONFIG_MAPS:
        ops.delete(("ConfigMap", namespace, name))
    ops.apply(res.kyma_gateway(domain))


def _ingress_targets(service: dict[str, Any] | None) -> tuple[list[str], str, str]:
    """``(targets, ip stack, error)`` from the ingress gateway Service's load balancer status."""
    name = "/".join(res.INGRESS_SERVICE)
    if service is None:
        return [], "ipv4", f'services "{res.INGRESS_SERVICE[1]}" not found'
    families = as_list(as_dict(service.get("spec")).get("ipFamilies"))
    stack = "dual-stack" if len(families) == 2 else ("ipv6" if families == ["IPv6"] else "ipv4")
    ingress = as_list(as_dict(as_dict(service.get("status")).get("loadBalancer")).get("ingress"))
    if not ingress:
        return [], stack, f"no ingress exists for {name}"
    targets = [str(v) for i in ingress if isinstance(i, dict) for k in ("ip", "hostname") if (v := i.get(k))]
    if not targets:
        return [], stack, f"no ingress targets found for {name}"
    return targets, stack, ""


def _oathkeeper(gw: APIGateway, state: OperatorState, settings: OperatorPolicy, ops: _Ops) -> float | None:
    """Oathkeeper's objects; returns seconds to requeue while its Deployment is not available yet."""
    keys = res.oathkeeper_refs()
    if not settings.v1beta1_access or gw.deleting:
        if gw.deleting or not state.ory_rules:
            for key in reversed(keys):
                ops.delete(key)
        return None
    current = state.managed.get(("Deployment", res.NAMESPACE, res.OATHKEEPER))
    production = state.nodes is None or not evaluation_cluster(state.nodes)
    replicas = 1 if not production else (as_dict((current or {}).get("spec")).get("replicas") or 3)
    for obj in res.oathkeeper(settings.images, int(replicas), autoscaled=production):
        ops.apply(obj)
    if not production:
        ops.delete(res.ref(res.hpa()))
    if settings.oathkeeper_ready_seconds <= 0:
        return None
    if current is not None and deployment_available(current):
        return None
    created = _parse_time(as_dict((current or {}).get("metadata")).get("creationTimestamp"))
    if created is not None and (state.now - created).total_seconds() > settings.oathkeeper_ready_seconds:
        raise _Problem(OperatorStatus(st.ERROR, "Oathkeeper did not start successfully", "OathkeeperReconcileFailed"))
    return 2.0


def plan(obj: Mapping[str, Any], state: OperatorState, settings: OperatorPolicy | None = None) -> OperatorPlan:
    """The reconcile of APIGateway ``obj`` against ``state``. Pure; never raises."""
    settings = settings or OperatorPolicy()
    gw = APIGateway.parse(obj)
    if gw.failures:
        text = "; ".join(str(f) for f in gw.failures)
        return _planned(obj, state, OperatorStatus(st.ERROR, f"Invalid APIGateway CR: {text}",
                                                   "CustomResourceMisconfigured"), failed=True)
    if len(state.apigateways) > 1:
        oldest = APIGateway.parse(oldest_apigateway(state.apigateways) or {})
        if (oldest.uid, oldest.name) != (gw.uid, gw.name):
            return _planned(obj, state, OperatorStatus(st.WARNING, f"stopped APIGateway CR reconciliation: only "
                                                                   f"APIGateway CR {oldest.name} reconciles the module",
                                                       "OlderCRExists"))
    add: list[str] = []
    remove: list[str] = []
    finalizers = set(gw.finalizers)
    policies = _Ops(state)
    if gw.network_policies and not gw.deleting:
        policies.apply(res.network_policy(gw.name))
    else:
        for key in res.network_policy_refs():
            policies.delete(key)
    try:
        if not gw.deleting:
            for crd in REQUIRED_CRDS:
                if state.crds is not None and crd not in state.crds:
                    raise _Problem(OperatorStatus(st.ERROR, f"CRD {crd} is not present. Make sure to install required "
                                                            "dependencies for the component", "DependenciesMissing"))
            if FINALIZER not in finalizers:
                add.append(FINALIZER)
        elif FINALIZER in finalizers:
            for what, found in (("APIRule(s)", _names(state.apirules)),
                                ("ORY Oathkeeper Rule(s)", _names(state.ory_rules)),
                                ("RateLimit(s)", _names(state.ratelimits))):
                if found:
                    raise _Problem(_blocked(what, found), tuple(found))
            remove.append(FINALIZER)
        ops = _Ops(state)
        ops.ops, ops.desired = list(policies.ops), list(policies.desired)
        if gw.enable_kyma_gateway and not gw.deleting and KYMA_GATEWAY_FINALIZER not in finalizers:
            add.append(KYMA_GATEWAY_FINALIZER)
            finalizers.add(KYMA_GATEWAY_FINALIZER)
        if KYMA_GATEWAY_FINALIZER in finalizers:
            _kyma_gateway(gw, state, ops)
            if not gw.enable_kyma_gateway or gw.deleting:
                remove.append(KYMA_GATEWAY_FINALIZER)
        wait = _oathkeeper(gw, state, settings, ops)
    except _Problem as problem:
        return _planned(obj, state, problem.status, policies.ops, add, failed=True, blocking=problem.blocking,
                        desired=policies.desired)
    if gw.deleting:
        return _planned(obj, state, None, ops.ops, add, remove, desired=ops.desired)
    if wait is not None:
        status = OperatorStatus(PROCESSING, "Waiting for the Ory Oathkeeper Deployment to become available",
                                "ReconcileProcessing")
        return _planned(obj, state, status, ops.ops, add, remove, requeue_after=wait, desired=ops.desired)
    return _planned(obj, state, OperatorStatus(st.READY, READY_DESCRIPTION, "ReconcileSucceeded"), ops.ops, add,
                    remove, requeue_after=settings.reconciliation_interval, desired=ops.desired)
