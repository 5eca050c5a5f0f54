"""API Gateway watch registrations: which changes enqueue which keys of the ``apirule``, ``apigateway``
and ``ratelimit`` controllers.

As api-gateway's APIRule controller watches (``SetupWithManager``), plus the owned kinds:

- APIRules: added, deleted, ``metadata.generation`` changed, the ``original-version`` /
  ``v1beta1-spec`` annotations changed, or ``deletionTimestamp`` appeared. Status-only updates
  (our own status writes) and metadata-only updates (our finalizer) enqueue nothing.
- Services: a Service added, deleted or whose ``spec`` changed → every APIRule that references it
  (spec level or rule level, namespace defaulting to the APIRule's), for the old and the new object.
- Namespaces: the ``gateway.kyma-project.io/allow-apirules-from`` annotation added, changed or removed
  (or the Namespace added or deleted) → every APIRule with a Service in that namespace outside its own
  (granted: its policies are written; withdrawn: they are deleted at once). Not in the original.
- The ``kyma-system/api-gateway-config`` ConfigMap (data changed, added, deleted) → every APIRule.
- Istio Gateways: ``kyma-system/kyma-gateway`` → every APIRule; another Gateway → the APIRules that
  name it in ``spec.gateway`` (or through an ExternalGateway).
- Owned VirtualServices, AuthorizationPolicies and RequestAuthentications (label selector on the owner
  label) deleted, or whose spec or labels changed → their owner APIRule, as controller-runtime's
  ``Owns()`` (someone else's edit is reverted at once). Our own creates enqueue nothing.

- APIGateway CRs: added or deleted → every APIGateway; generation or deletionTimestamp changed → itself;
  ``status.state`` changed → every RateLimit (they wait for a ``Ready`` APIGateway). The ingress gateway
  Service and the ``kyma-gateway`` Gateway → the oldest APIGateway. APIRules and RateLimits deleted →
  the APIGateways being deleted (they may no longer be blocked).
- RateLimits: added, deleted or new generation → the RateLimits of its namespace (conflicts); owned
  EnvoyFilters deleted or changed → their RateLimit.
- NetworkPolicies in ``kyma-system`` labelled ``api-gateway.kyma-project.io/managed-by`` deleted, or whose
  spec or labels changed → the APIGateway the label names (the original's NetworkPolicy watch: drift is
  repaired at once).

The watcher exports ``reconcilery_apigateway_apirules{state}``: the APIRules of its APIRule cache by
``status.state`` (``Ready``, ``Warning``, ``Error``, ``Processing``, ``Deleting``; ``None`` before the first
status, ``Other`` for anything else: bounded). The APIRule map function keeps a ``(namespace, name) →
state`` map and a count per state (:class:`StateCounts`, one per :class:`Stores`), so an event costs O(1)
and a deleted APIRule (a ``DELETED`` event, or the difference of a relist) leaves the counts; a resync's
repeated ``ADDED`` events change nothing. Memory: one small entry per cached APIRule beside the cached
object itself. The gauge reads the live maps at scrape time, so a process exports it only once it
watches APIRules (the leader of the watchers; a standby exports nothing) and a dropped cache drops out.

The APIRule cache and the owned objects' caches are packed (``WatchRegistration.packed``): one entry
per APIRule and owned object of a few hundred bytes, where decoded dicts took some 15 KB per APIRule;
their map functions read single objects (the event's) and keys (``Stores.keys``), never decode a cache.

Services and Gateways are mapped through an index ``dependency → APIRules`` that the APIRule map
function keeps up to date from the APIRule cache's events (one per :class:`Stores`), so a Service
event costs a dictionary lookup instead of parsing every cached APIRule.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from informers.store import Stores, object_key
from kube import resources
from kube.toolkit.metrics import gauge
from kube.toolkit.outcome import deleting
from tasks.apigateway import model, reads
from tasks.apigateway.controller import APIRULE, CONTROLLER_NAME, GATEWAY, OWNED
from tasks.apigateway.namespaces import ALLOW_APIRULES
from tasks.apigateway.operator.model import oldest_apigateway
from tasks.apigateway.operator.resources import NETWORK_POLICY, NETWORK_POLICY_OWNER_LABEL, NETWORK_POLICY_RESOURCE
from tasks.apigateway.parsing import V1BETA1_SPEC_ANNOTATION
from tasks.apigateway.state import reads_for
from tasks.apigateway.status import STATES, state_label
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

log = structlog.get_logger("tasks.apigateway.watches")

APIRULES = "apigateway-apirules"
APIGATEWAYS = "apigateway-apigateways"
RATELIMITS = "apigateway-ratelimits"
ENVOY_FILTERS = "apigateway-envoyfilters"
NETWORK_POLICIES = "apigateway-networkpolicies"
APIGATEWAY_CONTROLLER = "apigateway"
RATELIMIT_CONTROLLER = "ratelimit"
#: The ingress gateway Service: its load balancer is the Kyma Gateway's DNSEntry target.
INGRESS_SERVICE = ("istio-system", "istio-ingressgateway")
SERVICES = "apigateway-services"
CONFIG = "apigateway-config"
NAMESPACES = "apigateway-namespaces"
GATEWAYS = "apigateway-gateways"
OWNED_PREFIX = "apigateway-owned-"

#: A dependency of an APIRule: ``("Service" | "Gateway", namespace, name)`` or ``("Namespace", "", name)``.
Dependency = tuple[str, str, str]
WATCHED_ANNOTATIONS = (model.ORIGINAL_VERSION_ANNOTATION, V1BETA1_SPEC_ANNOTATION)


def _meta(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def dependencies(apirule: Mapping[str, Any]) -> set[Dependency]:
    """The Services and Gateways whose changes can change the reconcile of ``apirule`` (pure)."""
    reads = reads_for(apirule)
    deps = {("Service", ns, name) for ns, name in reads.services}
    deps |= {("Gateway", ns, name) for ns, name in reads.gateways}
    deps |= {("Namespace", "", name) for name in reads.namespaces}
    return deps


class DependencyIndex:
    """``dependency → APIRule (namespace, name)`` for the APIRules of one cache. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_rule: dict[tuple[str, str], set[Dependency]] = {}
        self._by_dep: dict[Dependency, set[tuple[str, str]]] = {}
        self.seen = False

    def update(self, apirule: Mapping[str, Any], deleted: bool = False) -> None:
        """Record the APIRule's current dependencies (none once ``deleted``)."""
        key = object_key(apirule)
        deps = set() if deleted else dependencies(apirule)
        with self._lock:
            self.seen = True
            for dep in self._by_rule.pop(key, set()) - deps:
                rules = self._by_dep.get(dep)
                if rules is not None:
                    rules.discard(key)
                    if not rules:
                        del self._by_dep[dep]
            if deps:
                self._by_rule[key] = deps
                for dep in deps:
                    self._by_dep.setdefault(dep, set()).add(key)

    def rebuild(self, apirules: Iterable[Mapping[str, Any]]) -> None:
        """Index exactly ``apirules`` (the cache, when the index starts late)."""
        with self._lock:
            self.seen = True
            self._by_rule.clear()
            self._by_dep.clear()
        for apirule in apirules:
            self.update(apirule)

    def rules_for(self, dep: Dependency) -> list[tuple[str, str]]:
        """The APIRules depending on ``dep``, sorted."""
        with self._lock:
            return sorted(self._by_dep.get(dep, ()))


_indexes: weakref.WeakKeyDictionary[Stores, DependencyIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def index_of(stores: Stores) -> DependencyIndex:
    """The dependency index of the APIRule cache in ``stores`` (built from the cache on first use)."""
    with _indexes_lock:
        index = _indexes.get(stores)
        if index is None:
            index = _indexes[stores] = DependencyIndex()
    if not index.seen:
        with contextlib.suppress(KeyError):  # KeyError: APIRules are not watched in this process
            index.rebuild(stores.list(APIRULES))
    return index


APIRULES_BY_STATE = gauge(
    "reconcilery_apigateway_apirules",
    "APIRules of the watcher's cache by status.state (Ready, Warning, Error, Processing, Deleting; None: no "
    "status yet; Other).", ["state"])
#: Every value of the gauge's ``state`` label.
STATE_LABELS = (*STATES, "None", "Other")


class StateCounts:
    """``(namespace, name) → state label`` of the APIRules of one cache, and how many have each. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = dict.fromkeys(STATE_LABELS, 0)

    def update(self, apirule: Mapping[str, Any], deleted: bool = False) -> None:
        """Record the APIRule's state (forget it once ``deleted``); O(1), idempotent."""
        key = object_key(apirule)
        new = None if deleted else state_label(apirule)
        with self._lock:
            old = self._states.pop(key, None)
            if old is not None:
                self._counts[old] -= 1
            if new is not None:
                self._states[key] = new
                self._counts[new] += 1

    def rebuild(self, apirules: Iterable[Mapping[str, Any]]) -> None:
        """Count exactly ``apirules`` (the cache, when counting starts late)."""
        with self._lock:
            self._states.clear()
            self._counts = dict.fromkeys(STATE_LABELS, 0)
        for apirule in apirules:
            self.update(apirule)

    def count(self, state: str) -> int:
        """How many APIRules have the state label ``state``."""
        with self._lock:
            return self._counts.get(state, 0)


_state_counts: weakref.WeakKeyDictionary[Stores, StateCounts] = weakref.WeakKeyDictionary()
_gauge_bound = False


def _apirules_in(state: str) -> float:
    with _indexes_lock:
        counts = list(_state_counts.values())
    return float(sum(c.count(state) for c in counts))


def state_counts_of(stores: Stores) -> StateCounts:
    """The state counts of the APIRule cache in ``stores`` (built from the cache on first use; the
    gauge reads them from then on)."""
    global _gauge_bound
    with _indexes_lock:
        counts = _state_counts.get(stores)
        created = counts is None
        if counts is None:
            counts = _state_counts[stores] = StateCounts()
        if not _gauge_bound:
            _gauge_bound = True
            for label in STATE_LABELS:
                APIRULES_BY_STATE.labels(label).set_function(functools.partial(_apirules_in, label))
    if created:
        with contextlib.suppress(KeyError):  # KeyError: APIRules are not watched in this process
            counts.rebuild(stores.list(APIRULES))
    return counts


def _key(event: WatchEvent, namespace: str, name: str) -> tuple[str, Key]:
    return CONTROLLER_NAME, Key(event.cluster, namespace, name)


def _all_apirules(event: WatchEvent, stores: Stores) -> list[tuple[str, Key]]:
    return [_key(event, *ref) for ref in stores.keys(APIRULES)]  # keys only: nothing decoded


def generation_changed(event: WatchEvent) -> bool:
    """controller-runtime's ``GenerationChangedPredicate`` plus a ``deletionTimestamp`` appearing: every
    event but a ``MODIFIED`` (its old object known) that kept ``metadata.generation`` and the deletion
    state (status and finalizer writes)."""
    if event.type != "MODIFIED" or event.old is None:
        return True
    new, old = _meta(event.object), _meta(event.old)
    return new.get("generation") != old.get("generation") or deleting(event.object) != deleting(event.old)


def drifted(event: WatchEvent, fields: tuple[str, ...] = ("spec",)) -> bool:
    """Whether an event of a generated object may be drift to repair: it was deleted, or modified in one
    of its top-level ``fields`` or its labels (an add is our own create; a status change is not drift)."""
    if event.type == "ADDED":
        return False
    if event.type != "MODIFIED" or event.old is None:
        return True
    return any(event.object.get(f) != event.old.get(f) for f in fields) or \
        _meta(event.object).get("labels") != _meta(event.old).get("labels")


def apirule_changed(event: WatchEvent) -> bool:
    """Whether an APIRule event needs a reconcile (controller-runtime's GenerationChangedPredicate
    or the version annotations, as api-gateway's predicate; plus a deletionTimestamp appearing)."""
    if generation_changed(event):
        return True
    new_ann = _meta(event.object).get("annotations") or {}
    old_ann = _meta(event.old).get("annotations") or {}
    return any(new_ann.get(a) != old_ann.get(a) for a in WATCHED_ANNOTATIONS)


def same_dependencies(event: WatchEvent) -> bool:
    """Whether an APIRule event cannot change the APIRule's dependencies: a ``MODIFIED`` (its old
    object known) with the same ``spec``, ``apiVersion`` and annotations, everything
    :func:`dependencies` reads (our own status and finalizer writes: two of the three events of a
    create). Comparing costs a few microseconds; parsing the APIRule again about a hundred."""
    if event.type != "MODIFIED" or event.old is None:
        return False
    new, old = event.object, event.old
    return (new.get("spec") == old.get("spec") and new.get("apiVersion") == old.get("apiVersion")
            and _meta(new).get("annotations") == _meta(old).get("annotations"))


def map_apirule(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """An APIRule event → its own key (see :func:`apirule_changed`); keeps the dependency index and the
    state counts. The index is left as it is for an event that cannot change the dependencies
    (:func:`same_dependencies`): the APIRule is not parsed again.

    A malformed spec never costs the APIRule its key: the parsers do not raise on wrong types, and
    should indexing fail anyway the key is still enqueued (the reconcile reports the problem)."""
    try:
        index = index_of(stores)
        if not same_dependencies(event):
            index.update(event.object, deleted=event.type == "DELETED")
    except Exception:  # defence in depth, see above
        log.exception("apirule dependency index update failed", key="/".join(object_key(event.object)))
    try:
        state_counts_of(stores).update(event.object, deleted=event.type == "DELETED")
    except Exception:  # a metric never costs the APIRule its key
        log.exception("apirule state count update failed", key="/".join(object_key(event.object)))
    if not apirule_changed(event):
        return []
    return [_key(event, *object_key(event.object)), *_deleting_apigateways(event, stores)]


def _spec_changed(event: WatchEvent) -> bool:
    if event.type != "MODIFIED" or event.old is None:
        return True
    return event.object.get("spec") != event.old.get("spec")


def map_service(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """A Service added, deleted or with a changed spec → every APIRule referencing it; the ingress
    gateway Service (spec or load balancer status changed) → the oldest APIGateway (its DNSEntry)."""
    namespace, name = object_key(event.object)
    if (namespace, name) == INGRESS_SERVICE and (
            _spec_changed(event) or event.object.get("status") != (event.old or {}).get("status")):
        return [*_oldest_apigateway(event, stores),
                *([_key(event, *ref) for ref in index_of(stores).rules_for(("Service", namespace, name))]
                  if _spec_changed(event) else [])]
    if not _spec_changed(event):
        return []
    return [_key(event, *ref) for ref in index_of(stores).rules_for(("Service", namespace, name))]


def map_namespace(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """A Namespace added or deleted, or its ``allow-apirules-from`` annotation changed → every APIRule
    with a Service in it outside the APIRule's own namespace."""
    if event.type == "MODIFIED" and event.old is not None and (
            (_meta(event.object).get("annotations") or {}).get(ALLOW_APIRULES)
            == (_meta(event.old).get("annotations") or {}).get(ALLOW_APIRULES)):
        return []
    name = str(_meta(event.object).get("name") or "")
    return [_key(event, *ref) for ref in index_of(stores).rules_for(("Namespace", "", name))]


def map_config(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """The ``api-gateway-config`` ConfigMap added, deleted or with changed data → every APIRule."""
    if object_key(event.object) != model.CONFIG_MAP:
        return []
    if event.type == "MODIFIED" and event.old is not None and event.object.get("data") == event.old.get("data"):
        return []
    return _all_apirules(event, stores)


def map_gateway(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """The default ``kyma-gateway`` → every APIRule; another Gateway → the APIRules using it."""
    if not _spec_changed(event):
        return []
    namespace, name = object_key(event.object)
    if (namespace, name) == model.DEFAULT_GATEWAY:  # also managed by the APIGateway: edits are reverted
        return [*_all_apirules(event, stores), *_oldest_apigateway(event, stores)]
    return [_key(event, *ref) for ref in index_of(stores).rules_for(("Gateway", namespace, name))]


def owner_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(namespace, name)`` of the APIRule owning ``obj`` by its owner labels (new or legacy)."""
    labels = _meta(obj).get("labels") or {}
    name, namespace = labels.get(model.OWNER_NAME_LABEL), labels.get(model.OWNER_NAMESPACE_LABEL)
    if name and namespace:
        return str(namespace), str(name)
    legacy = str(labels.get(model.LEGACY_OWNER_LABEL) or "")
    name, dot, namespace = legacy.rpartition(".")  # names may hold dots, namespaces may not
    return (namespace, name) if dot and name and namespace else None


def map_owned(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """An owned object deleted, or its spec or labels changed → its owner APIRule."""
    if not drifted(event):
        return []
    owners = {owner_of(event.object), owner_of(event.old)} - {None}
    return [_key(event, *owner) for owner in sorted(o for o in owners if o is not None)]


# --- APIGateway and RateLimit --------------------------------------------------------------------


def _apigateway_key(event: WatchEvent, name: str) -> tuple[str, Key]:
    return APIGATEWAY_CONTROLLER, Key(event.cluster, "", name)


def _oldest_apigateway(event: WatchEvent, stores: Stores) -> list[tuple[str, Key]]:
    try:
        oldest = oldest_apigateway(stores.list(APIGATEWAYS))
    except KeyError:  # APIGateways are not watched in this process
        return []
    return [_apigateway_key(event, str(_meta(oldest).get("name")))] if oldest else []


def _deleting_apigateways(event: WatchEvent, stores: Stores) -> list[tuple[str, Key]]:
    """APIGateways whose deletion may wait for the object of ``event`` (a blocker went away)."""
    if event.type != "DELETED":
        return []
    try:
        items = stores.list(APIGATEWAYS)
    except KeyError:
        return []
    return [_apigateway_key(event, str(_meta(o).get("name"))) for o in items if deleting(o)]


def _all_ratelimits(event: WatchEvent, stores: Stores) -> list[tuple[str, Key]]:
    try:
        items = stores.list(RATELIMITS)
    except KeyError:
        return []
    return [(RATELIMIT_CONTROLLER, Key(event.cluster, *object_key(o))) for o in items]


def map_apigateway(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """An APIGateway added or deleted → every APIGateway (which one is the oldest may change); its
    generation or deletionTimestamp changed → itself; its ``status.state`` changed → every RateLimit
    (they wait for the oldest APIGateway to be ``Ready``)."""
    keys: list[tuple[str, Key]] = []
    if event.type in ("ADDED", "DELETED") or event.old is None:
        keys += [_apigateway_key(event, str(_meta(o).get("name"))) for o in stores.list(APIGATEWAYS)]
        keys.append(_apigateway_key(event, str(_meta(event.object).get("name"))))
    elif apirule_changed(event):  # generation or deletionTimestamp (annotations are not ours to watch)
        keys.append(_apigateway_key(event, str(_meta(event.object).get("name"))))
    state = ((event.object.get("status") or {}).get("state"), ((event.old or {}).get("status") or {}).get("state"))
    if event.type != "MODIFIED" or state[0] != state[1]:
        keys += _all_ratelimits(event, stores)
    return list(dict.fromkeys(keys))


def map_ratelimit(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """A RateLimit added, deleted or with a new generation → itself and (same namespace) the RateLimits
    that may conflict with it; deleted → APIGateways waiting for it to go."""
    if not apirule_changed(event):
        return []
    namespace, _ = object_key(event.object)
    keys = [(RATELIMIT_CONTROLLER, Key(event.cluster, *object_key(o))) for o in stores.list(RATELIMITS)
            if object_key(o)[0] == namespace]
    keys.append((RATELIMIT_CONTROLLER, Key(event.cluster, *object_key(event.object))))
    return list(dict.fromkeys([*keys, *_deleting_apigateways(event, stores)]))


def map_envoy_filter(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """An EnvoyFilter owned by a RateLimit deleted, or its spec changed → the RateLimit (reverts edits)."""
    if event.type == "ADDED" or not _spec_changed(event):
        return []
    owners = _meta(event.object).get("ownerReferences") or []
    namespace, _ = object_key(event.object)
    return [(RATELIMIT_CONTROLLER, Key(event.cluster, namespace, str(o.get("name")))) for o in owners
            if isinstance(o, dict) and o.get("kind") == model.RATELIMIT.kind and o.get("name")]


def map_network_policy(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """The module's NetworkPolicy deleted, or its spec or labels changed → the APIGateway named by its
    ``api-gateway.kyma-project.io/managed-by`` label (old and new object)."""
    if not drifted(event):
        return []
    owners = [(_meta(o).get("labels") or {}).get(NETWORK_POLICY_OWNER_LABEL) for o in (event.object, event.old)]
    return list(dict.fromkeys(_apigateway_key(event, str(o)) for o in owners if o))


_CONTROLLERS = (CONTROLLER_NAME,)

REGISTRATIONS: list[WatchRegistration] = [
    WatchRegistration(name=APIRULES, resource=APIRULE, namespace=None, label_selector=None,
                      map_event=map_apirule, controllers=(CONTROLLER_NAME, APIGATEWAY_CONTROLLER), packed=True),
    WatchRegistration(name=SERVICES, resource=resources.SERVICE, namespace=None, label_selector=None,
                      map_event=map_service, controllers=(CONTROLLER_NAME, APIGATEWAY_CONTROLLER)),
    WatchRegistration(name=NAMESPACES, resource=resources.NAMESPACE, namespace=None, label_selector=None,
                      map_event=map_namespace, controllers=_CONTROLLERS),
    WatchRegistration(name=CONFIG, resource=resources.CONFIGMAP, namespace=model.CONFIG_MAP[0],
                      label_selector=None, map_event=map_config, controllers=_CONTROLLERS,
                      field_selector=f"metadata.name={model.CONFIG_MAP[1]}"),
    WatchRegistration(name=GATEWAYS, resource=GATEWAY, namespace=None, label_selector=None,
                      map_event=map_gateway, controllers=(CONTROLLER_NAME, APIGATEWAY_CONTROLLER)),
    *(
        WatchRegistration(name=OWNED_PREFIX + kind.lower(), resource=OWNED[kind], namespace=None,
                          label_selector=model.OWNER_NAME_LABEL, map_event=map_owned, controllers=_CONTROLLERS,
                          packed=True)
        for kind in (model.VIRTUAL_SERVICE.kind, model.AUTHORIZATION_POLICY.kind, model.REQUEST_AUTHENTICATION.kind,
                     model.ORY_RULE.kind)
    ),
    WatchRegistration(name=APIGATEWAYS, resource=reads.APIGATEWAY, namespace=None, label_selector=None,
                      map_event=map_apigateway, controllers=(APIGATEWAY_CONTROLLER, RATELIMIT_CONTROLLER)),
    WatchRegistration(name=RATELIMITS, resource=reads.RATELIMIT, namespace=None, label_selector=None,
                      map_event=map_ratelimit, controllers=(RATELIMIT_CONTROLLER, APIGATEWAY_CONTROLLER)),
    WatchRegistration(name=ENVOY_FILTERS, resource=reads.ENVOY_FILTER, namespace=None, label_selector=None,
                      map_event=map_envoy_filter, controllers=(RATELIMIT_CONTROLLER,)),
    WatchRegistration(name=NETWORK_POLICIES, resource=NETWORK_POLICY_RESOURCE, namespace=NETWORK_POLICY[0],
                      label_selector=NETWORK_POLICY_OWNER_LABEL, map_event=map_network_policy,
                      controllers=(APIGATEWAY_CONTROLLER,)),
]


def registrations() -> list[WatchRegistration]:
    """The watches of this module (:data:`REGISTRATIONS`), as every domain's watch module answers them."""
    return REGISTRATIONS
