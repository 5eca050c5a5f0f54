"""One RateLimit reconcile as a pure function: validation, the EnvoyFilter, the status.

As api-gateway's RateLimit controller (``internal/controller/gateway/ratelimit``, ``internal/ratelimit``):

1. the EnvoyFilter CRD must exist → else ``Error`` "dependency missing ...";
2. an APIGateway CR must exist and the oldest one be ``Ready`` → else ``Warning`` (retried);
3. validation → ``Error`` "failed to validate RateLimit: <first problem>": the fields (wrong types,
   missing required fields, which the CRD enforces when its schema is), ``fillInterval`` at least 50 ms
   and every bucket's a multiple of the default one, Pods selected in the namespace, no other RateLimit
   selecting any of them, and (unless all are ingress gateways) the Istio sidecar on every one;
4. the EnvoyFilter named like the RateLimit, in its namespace, owned by it (controller reference), with
   the two config patches of the notes (§8); created, or updated when it differs;
5. ``Ready`` "Finished reconciliation".

The plan answers one :class:`~kube.toolkit.outcome.Outcome`: the EnvoyFilter's create or update, the
status merge patch (``state``, ``description``; none when unchanged) with its Event (``Normal``
``Reconciled`` for ``Ready``, else ``Warning`` named after the state), and the requeue (``Ready``) or the
error (``Warning`` and ``Error``: retried with backoff, as the original returns an error for both). A
refused write is ``Error`` "failed to create EnvoyFilter: <error>", as the original.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kube.diff import needs_update, owner_reference, prepare_replace
from kube.refusal import Failure
from kube.toolkit.actions import Action, Write
from kube.toolkit.outcome import Event, Outcome, status_patch
from tasks.apigateway import model
from tasks.apigateway import status as st
from tasks.apigateway.operator.model import oldest_apigateway
from tasks.apigateway.parsing import as_dict, as_list
from tasks.apigateway.ratelimit.model import Bucket, RateLimit

ENVOY_FILTER_CRD = model.ENVOY_FILTER.crd_name
#: Seconds to the next reconcile of a ``Ready`` RateLimit (seed: 30 min).
RECONCILIATION_SECONDS = 1800.0
READY_DESCRIPTION = "Finished reconciliation"
MIN_FILL_INTERVAL_NS = 50_000_000
LOCAL_RATE_LIMIT_FILTER = "envoy.filters.http.local_ratelimit"
LOCAL_RATE_LIMIT_TYPE_URL = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
TYPED_STRUCT = "type.googleapis.com/udpa.type.v1.TypedStruct"
HTTP_CONNECTION_MANAGER = "envoy.filters.network.http_connection_manager"
SIDECAR_STATUS_ANNOTATION = "sidecar.istio.io/status"
#: Descriptor keys Envoy reads from pseudo headers.
PSEUDO_HEADERS = ("path", "method", "scheme")


@dataclass(frozen=True)
class RateLimitState:
    """What one reconcile looks at.

    Attributes:
        crds: installed CRD names (``None`` = unknown, assume the EnvoyFilter CRD is installed).
        apigateways: every APIGateway CR of the cluster.
        pods: the Pods of the RateLimit's namespace.
        ratelimits: the RateLimits of the RateLimit's namespace (itself included or not).
        envoy_filter: the EnvoyFilter named like the RateLimit, if it exists.
    """

    crds: frozenset[str] | None = None
    apigateways: tuple[dict[str, Any], ...] = ()
    pods: tuple[dict[str, Any], ...] = ()
    ratelimits: tuple[dict[str, Any], ...] = ()
    envoy_filter: dict[str, Any] | None = None


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_dict(as_dict(obj.get("metadata")).get("labels")).items()}


def _selects(selector: dict[str, str], pod: dict[str, Any]) -> bool:
    labels = _labels(pod)
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def go_map(values: dict[str, str]) -> str:
    """``map[k1:v1 k2:v2]`` as Go prints a ``map[string]string`` (keys sorted)."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(values.items())) + "]"


def validate(rl: RateLimit, state: RateLimitState) -> str | None:
    """The first problem of ``rl`` (the original stops at the first), or ``None``."""
    if rl.failures:
        return "; ".join(str(f) for f in rl.failures)
    if rl.default_bucket is None or any(b.bucket is None for b in rl.buckets):  # not reached: parse fails first
        return "Attribute '.spec.local': incomplete buckets"
    default = rl.default_bucket.fill_interval_ns
    if default < MIN_FILL_INTERVAL_NS:
        return "defaultBucket: fillInterval must be greater or equal 50ms"
    for i, config in enumerate(rl.buckets):
        interval = config.bucket.fill_interval_ns if config.bucket else default
        if interval < MIN_FILL_INTERVAL_NS:
            return f"bucket '[{i}]': fillInterval must be greater or equal 50ms"
        if interval % default != 0:
            return f"bucket '[{i}]': fillInterval must be a multiple of defaultBucket fillInterval"
    pods = [p for p in state.pods if _selects(rl.selector_labels, p)]
    if not pods:
        return f"no pods found with the given selectors: {go_map(rl.selector_labels)} in namespace {rl.namespace}"
    names = {str(as_dict(p.get("metadata")).get("name")) for p in pods}
    conflicting = []
    for other in state.ratelimits:
        other_rl = RateLimit.parse(other)
        if other_rl.name == rl.name:
            continue
        if any(_selects(other_rl.selector_labels, p) and str(as_dict(p.get("metadata")).get("name")) in names
               for p in state.pods):
            conflicting.append(other_rl.name)
    if conflicting:
        return f"conflicting with the following RateLimit CRs: {', '.join(conflicting)}"
    if all(_labels(p).get("istio") == "ingressgateway" for p in pods):
        return None
    missing = [p for p in pods
               if SIDECAR_STATUS_ANNOTATION not in as_dict(as_dict(p.get("metadata")).get("annotations"))]
    if missing:
        refs = ", ".join(f"{as_dict(p.get('metadata')).get('namespace')}/{as_dict(p.get('metadata')).get('name')}"
                         for p in missing)
        return f"sidecar injection is not enabled for the following pods: {refs}"
    return None


def token_bucket(bucket: Bucket) -> dict[str, Any]:
    """Envoy's ``token_bucket``; ``fill_interval`` as Go's ``%fs`` of the seconds (``0.050000s``)."""
    return {"max_tokens": bucket.max_tokens, "tokens_per_fill": bucket.tokens_per_fill,
            "fill_interval": f"{bucket.fill_interval_ns / 1e9:.6f}s"}


def config_patches(rl: RateLimit) -> list[dict[str, Any]]:
    """The two patches: the local rate limit HTTP filter before the HTTP connection manager, and the route
    configuration (``rate_limits`` actions and ``typed_per_filter_config``). Context ``GATEWAY`` when
    the selector has ``app: istio-ingressgateway``, else ``SIDECAR_INBOUND``."""
    default = rl.default_bucket or Bucket(0, 0, 0)  # only valid RateLimits get here
    context = "GATEWAY" if rl.selector_labels.get("app") == "istio-ingressgateway" else "SIDECAR_INBOUND"
    actions: list[dict[str, Any]] = []
    descriptors = []
    for config in rl.buckets:
        if config.bucket is None:
            continue
        entries = ([{"key": "path", "value": config.path}] if config.path else []) + [
            {"key": k, "value": v} for k, v in sorted(config.headers.items())]
        for entry in entries:
            key = entry["key"]
            header = f":{key}" if key in PSEUDO_HEADERS else key
            if not any(a["request_headers"]["header_name"] == header for a in actions):
                actions.append({"request_headers": {"header_name": header, "descriptor_key": key}})
        descriptors.append({"entries": entries, "token_bucket": token_bucket(config.bucket)})
    return [
        {
            "applyTo": "HTTP_FILTER",
            "match": {"context": context, "listener": {"filterChain": {"filter": {"name": HTTP_CONNECTION_MANAGER}}}},
            "patch": {"operation": "INSERT_BEFORE", "value": {
                "name": LOCAL_RATE_LIMIT_FILTER,
                "typed_config": {"@type": TYPED_STRUCT, "type_url": LOCAL_RATE_LIMIT_TYPE_URL,
                                 "value": {"stat_prefix": "http_local_rate_limiter"}},
            }},
        },
        {
            "applyTo": "HTTP_ROUTE",
            "match": {"context": context},
            "patch": {"operation": "MERGE", "value": {
                "route": {"rate_limits": [{"actions": actions}] if actions else []},
                "typed_per_filter_config": {LOCAL_RATE_LIMIT_FILTER: {
                    "@type": TYPED_STRUCT,
                    "type_url": LOCAL_RATE_LIMIT_TYPE_URL,
                    "value": {
                        "stat_prefix": "rate_limit",
                        "enable_x_ratelimit_headers": "DRAFT_VERSION_03" if rl.enable_response_headers else "OFF",
                        "filter_enabled": {"runtime_key": "local_rate_limit_enabled",
                                           "default_value": {"numerator": 100, "denominator": "HUNDRED"}},
                        "filter_enforced": {"runtime_key": "local_rate_limit_enforced",
                                            "default_value": {"numerator": 100 if rl.enforce else 0,
                                                              "denominator": "HUNDRED"}},
                        "always_consume_default_token_bucket": False,
                        "token_bucket": token_bucket(default),
                        "descriptors": descriptors,
                    },
                }},
            }},
        },
    ]


def desired_envoy_filter(rl: RateLimit) -> dict[str, Any]:
    """The EnvoyFilter of a valid RateLimit (``networking.istio.io/v1alpha3``), named like it, in its
    namespace, with a controller ``ownerReference`` (when the RateLimit has a ``uid``: not in ``render``)."""
    meta: dict[str, Any] = {"name": rl.name, "namespace": rl.namespace}
    if rl.uid:
        meta["ownerReferences"] = [owner_reference({**rl.raw, "apiVersion": rl.api_version or
                                                     model.RATELIMIT.api_version, "kind": model.RATELIMIT.kind})]
    return {
        "apiVersion": model.ENVOY_FILTER.api_version,
        "kind": model.ENVOY_FILTER.kind,
        "metadata": meta,
        "spec": {"workloadSelector": {"labels": dict(rl.selector_labels)}, "configPatches": config_patches(rl)},
    }


def answer(obj: Mapping[str, Any], status: st.Status, requeue_after: float = RECONCILIATION_SECONDS) -> Outcome:
    """The Outcome that leaves RateLimit ``obj`` (as read) with ``status``: its merge patch and Event
    when it changed; ``Ready`` comes back after ``requeue_after``, anything else is an error."""
    current = obj.get("status") if isinstance(obj.get("status"), dict) else None
    patch = status_patch(current, status.to_dict())
    type_, reason = ("Normal", "Reconciled") if status.state == st.READY else ("Warning", status.state)
    event = Event(type_, reason, status.description) if patch is not None else None
    if status.state == st.READY:
        return Outcome(status=patch, event=event, requeue_after=requeue_after)
    return Outcome(status=patch, event=event, error=status.description)


def plan(obj: dict[str, Any], state: RateLimitState, requeue_after: float = RECONCILIATION_SECONDS) -> Outcome:
    """The reconcile of RateLimit ``obj`` against ``state`` (see the module doc). Pure; never raises."""
    rl = RateLimit.parse(obj)
    if state.crds is not None and ENVOY_FILTER_CRD not in state.crds:
        return answer(obj, st.Status(st.ERROR, f"dependency missing '{ENVOY_FILTER_CRD}': customresourcedefinitions"
                                               f'.apiextensions.k8s.io "{ENVOY_FILTER_CRD}" not found'))
    oldest = oldest_apigateway(state.apigateways)
    if oldest is None:
        return answer(obj, st.Status(st.WARNING, "failed to reconcile RateLimit CR because of missing APIGateway "
                                                 "CR in the cluster"))
    gateway_state = as_dict(oldest.get("status")).get("state")
    if gateway_state != st.READY:
        return answer(obj, st.Status(st.WARNING, f"failed to create RateLimit CR because APIGateway CR is in "
                                                 f"{gateway_state or ''} state"))
    problem = validate(rl, state)
    if problem is not None:
        return answer(obj, st.Status(st.ERROR, f"failed to validate RateLimit: {problem}"))
    desired = desired_envoy_filter(rl)
    actual = state.envoy_filter
    ready = answer(obj, st.Status(st.READY, READY_DESCRIPTION), requeue_after)
    if actual is None:
        write = Action("create", model.ENVOY_FILTER.kind, copy.deepcopy(desired))
    elif needs_update(desired, actual) or (
            "ownerReferences" in desired["metadata"] and _owner_refs(actual) != _owner_refs(desired)):
        write = Action("update", model.ENVOY_FILTER.kind, prepare_replace(desired, actual), actual=dict(actual))
    else:
        return ready

    def refused(_write: Write, failure: Failure, _answers: Sequence[Any]) -> Outcome:
        if failure.conflict:  # stale, or created meanwhile: the reconcile fails and runs again on fresh state
            return Outcome(error=str(failure))
        return answer(obj, st.Status(st.ERROR, f"failed to create EnvoyFilter: {failure.message}"))

    return replace(ready, writes=(write,), refused=refused)


def collect_garbage(name: str, envoy_filter: Mapping[str, Any] | None) -> Outcome:
    """The Outcome for RateLimit ``name`` that is gone: delete its EnvoyFilter (same name and namespace)
    when it is still there and owned by it (clusters without a garbage collector)."""
    owners = as_list(as_dict((envoy_filter or {}).get("metadata")).get("ownerReferences"))
    if envoy_filter is None or not any(isinstance(o, dict) and o.get("kind") == model.RATELIMIT.kind
                                       and o.get("name") == name for o in owners):
        return Outcome()
    return Outcome(writes=(Action("delete", model.ENVOY_FILTER.kind, dict(envoy_filter), actual=dict(envoy_filter)),))


def _owner_refs(obj: dict[str, Any]) -> list[Any]:
    refs = as_dict(obj.get("metadata")).get("ownerReferences")
    return refs if isinstance(refs, list) else []
