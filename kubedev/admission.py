"""Mutating and validating admission webhooks for the dev API server, as the real server's
``MutatingAdmissionWebhook`` and ``ValidatingAdmissionWebhook``.

On CREATE and UPDATE (PUT) the server calls, in order (configurations sorted by name, webhooks in
list order), every webhook of the stored ``admissionregistration.k8s.io/v1``
MutatingWebhookConfigurations whose ``rules``, ``namespaceSelector`` and ``objectSelector`` match, and
applies each answer's JSONPatch before calling the next (as ``k8s.io/apiserver/pkg/admission/plugin/
webhook/mutating/dispatcher.go``). Differences from a real cluster: a mutating webhook is called only by
``clientConfig.url`` (a ``service`` reference is skipped with a log line), no
reinvocation, ``matchPolicy: Equivalent`` matches like ``Exact``, no ``matchConditions``, PATCH
requests are not admitted.

Validating webhooks (``admissionregistration.k8s.io/v1`` ValidatingWebhookConfigurations, matched the
same way) are called after the mutating ones on CREATE and UPDATE (PUT) with the mutated object, and on
DELETE of one object with ``object: null`` and ``oldObject`` the stored object (``options``
``DeleteOptions``), as ``validating/dispatcher.go``: an answer ``allowed: false`` rejects the request, one
carrying a patch is a call failure ("validating webhook may not return a patch"), ``failurePolicy``
decides about unreachable webhooks. A validating webhook's ``service`` reference is reached through the
Service's Endpoints in the store (as the CRD conversion webhook's, :func:`webhook_target`: the dev server
has no cluster network), its certificate verified for ``<service>.<namespace>.svc``. Differences: they
are called one after the other (the real server calls them in parallel; the first refusal in name order
wins), not for a DELETE of a collection or a PATCH.

The matching, the AdmissionReview request, the answer's interpretation and the error shapes are
pure functions; :class:`Admission` is the I/O shell (aiohttp client, never blocking the loop).
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import ssl
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from kubedev.errors import ApiError
from kubedev.patching import PatchError, json_patch
from kubedev.resources import ResourceType
from kubedev.selectors import LabelRequirement
from kubedev.store import NAMESPACE_KEY, Store

__all__ = [
    "VWC_PLURAL",
    "Admission",
    "CallFailure",
    "MatchedWebhook",
    "apply_review_response",
    "call_failure_error",
    "check_validation_response",
    "matching_webhooks",
    "review_request",
    "rule_matches",
    "selector_matches",
    "webhook_target",
]

log = logging.getLogger("kubedev.admission")

Obj = dict[str, Any]
MWC_GROUP, MWC_VERSION, MWC_PLURAL = "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"
VWC_PLURAL = "validatingwebhookconfigurations"
_DEFAULT_TIMEOUT = 10  # seconds, the v1 default of timeoutSeconds (allowed range 1..30)
# The real server never calls webhooks for its own webhook configurations (so they can't lock a cluster out).
_EXEMPT = {(MWC_GROUP, MWC_PLURAL), (MWC_GROUP, VWC_PLURAL)}
_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
#: The userInfo the dev server puts in every AdmissionReview (it does not authenticate).
DEV_USER: Mapping[str, Any] = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass(frozen=True)
class MatchedWebhook:
    """A webhook to call: its configuration's name and the webhook entry (a plain dict)."""

    configuration: str
    webhook: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.webhook.get("name", ""))

    @property
    def fail_closed(self) -> bool:
        """``failurePolicy: Fail`` (the v1 default)."""
        return self.webhook.get("failurePolicy", "Fail") != "Ignore"

    @property
    def timeout(self) -> float:
        """``timeoutSeconds`` in seconds (default 10, clamped to 1..30 like the API's validation)."""
        raw = self.webhook.get("timeoutSeconds")
        value = raw if isinstance(raw, int) and not isinstance(raw, bool) else _DEFAULT_TIMEOUT
        return float(min(30, max(1, value)))


class CallFailure(Exception):
    """Calling a webhook failed or it answered something unusable (``failurePolicy`` decides)."""


# ---- matching (pure) ----------------------------------------------------------------------------


def _in(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(patterns: Any, resource: str, subresource: str) -> bool:
    """``pods`` matches only the resource, ``pods/status`` its subresource, ``*`` every resource,
    ``*/*`` everything, ``*/status`` every status subresource (as ``rules.Matcher``)."""
    if not isinstance(patterns, list):
        return False
    for pattern in patterns:
        res, _, sub = str(pattern).partition("/")
        if pattern == "*/*":
            return True
        if (res == "*" or res == resource) and ((not sub and not subresource) or sub == "*" or
                                                 (sub and sub == subresource)):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], rt: ResourceType, operation: str, subresource: str = "") -> bool:
    """Whether one ``RuleWithOperations`` matches ``operation`` on ``rt`` (``*`` wildcards; ``scope``
    ``Cluster``/``Namespaced``/``*``)."""
    scope = rule.get("scope", "*")
    if (scope == "Cluster" and rt.namespaced) or (scope == "Namespaced" and not rt.namespaced):
        return False
    return (_in(rule.get("operations"), operation) and _in(rule.get("apiGroups"), rt.group)
            and _in(rule.get("apiVersions"), rt.version)
            and _resource_matches(rule.get("resources"), rt.plural, subresource))


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether a ``metav1.LabelSelector`` (``matchLabels`` + ``matchExpressions`` with ``In``,
    ``NotIn``, ``Exists``, ``DoesNotExist``) selects ``labels``; ``None``/``{}`` selects everything,
    an unknown operator nothing."""
    if not selector:
        return True
    if not isinstance(selector, Mapping):
        return False
    reqs = [LabelRequirement(str(k), "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            return False
        reqs.append(LabelRequirement(str(expr.get("key", "")), op, tuple(str(v) for v in expr.get("values") or ())))
    return all(r.matches(labels) for r in reqs)


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def matching_webhooks(configurations: Iterable[Mapping[str, Any]], rt: ResourceType, operation: str,
                      obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                      namespace_labels: Mapping[str, str] | None, subresource: str = "") -> list[MatchedWebhook]:
    """The webhooks to call for ``operation`` on ``obj`` (``old`` on UPDATE), in call order.

    ``namespace_labels`` are the labels of the object's namespace (``None`` for a cluster-scoped
    object: ``namespaceSelector`` then applies to a Namespace's own labels and to nothing else). The
    ``objectSelector`` must select the new or the old object.
    """
    if (rt.group, rt.plural) in _EXEMPT:
        return []
    found: list[MatchedWebhook] = []
    for config in sorted(configurations, key=lambda c: str((c.get("metadata") or {}).get("name", ""))):
        cname = str((config.get("metadata") or {}).get("name", ""))
        for hook in config.get("webhooks") or []:
            if not isinstance(hook, Mapping):
                continue
            if not any(isinstance(r, Mapping) and rule_matches(r, rt, operation, subresource)
                       for r in hook.get("rules") or []):
                continue
            ns_selector = hook.get("namespaceSelector")
            if rt.storage_key == NAMESPACE_KEY:
                if not selector_matches(ns_selector, _labels(obj)):
                    continue
            elif rt.namespaced and not selector_matches(ns_selector, namespace_labels or {}):
                continue
            obj_selector = hook.get("objectSelector")
            if not (selector_matches(obj_selector, _labels(obj))
                    or (old is not None and selector_matches(obj_selector, _labels(old)))):
                continue
            found.append(MatchedWebhook(cname, hook))
    return found


# ---- the review (pure) --------------------------------------------------------------------------


def review_request(rt: ResourceType, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                   namespace: str, dry_run: bool, uid: str | None = None, subresource: str = "",
                   user: Mapping[str, Any] = DEV_USER) -> Obj:
    """An ``admission.k8s.io/v1`` AdmissionReview asking about ``operation`` on ``obj`` (``None`` for a
    DELETE, whose ``old`` is the stored object)."""
    kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    options_kind = _OPTIONS_KINDS.get(operation, "UpdateOptions")
    request: Obj = {
        "uid": uid or str(uuid.uuid4()), "kind": kind, "resource": resource,
        "requestKind": kind, "requestResource": resource,
        "name": str(((obj or old or {}).get("metadata") or {}).get("name", "")),
        "operation": operation, "userInfo": dict(user), "object": obj, "oldObject": old,
        "dryRun": dry_run, "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"},
    }
    if subresource:
        request["subResource"] = subresource
        request["requestSubResource"] = subresource
    if rt.namespaced:
        request["namespace"] = namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def denied_error(webhook: str, status: Mapping[str, Any] | None) -> ApiError:
    """The rejection for ``allowed: false``, worded as ``webhookerrors.ToStatusErr``: code < 400 becomes
    400, the message is ``admission webhook "<name>" denied the request: <message or reason>``."""
    status = dict(status or {})
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    denied = f'admission webhook "{webhook}" denied the request'
    text = status.get("message") or status.get("reason")
    message = f"{denied}: {text}" if text else f"{denied} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiError(code, str(status.get("reason") or ""), message, details)


def call_failure_error(webhook: str, cause: str) -> ApiError:
    """The 500 of a failed call under ``failurePolicy: Fail``, shaped as ``apierrors.NewInternalError``."""
    inner = f'failed calling webhook "{webhook}": {cause}'
    return ApiError(500, "InternalError", f"Internal error occurred: {inner}", {"causes": [{"message": inner}]})


def _response_of(review: Any, uid: str) -> dict[str, Any]:
    """The ``response`` of a webhook's answer. Raises :class:`CallFailure` when it is unusable."""
    if not isinstance(review, dict) or review.get("apiVersion") != "admission.k8s.io/v1" \
            or review.get("kind") != "AdmissionReview":
        raise CallFailure('expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview')
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallFailure("webhook response was absent")
    if response.get("uid") != uid:
        raise CallFailure(f"expected response.uid={uid}, got {response.get('uid')}")
    return response


def check_validation_response(review: Any, uid: str, webhook: str) -> None:
    """Check a validating webhook's answer ``review``: nothing when it allows. Raises
    :class:`CallFailure` for an unusable answer (wrong apiVersion/kind/uid, or a patch: "validating
    webhook may not return a patch") and :class:`ApiError` for ``allowed: false`` (:func:`denied_error`)."""
    response = _response_of(review, uid)
    if response.get("patch") or response.get("patchType"):
        raise CallFailure("validating webhook may not return a patch")
    if not response.get("allowed"):
        raise denied_error(webhook, response.get("status"))


def apply_review_response(obj: Obj, review: Any, uid: str, webhook: str) -> Obj:
    """``obj`` after the webhook's answer ``review`` (a parsed AdmissionReview).

    Raises :class:`CallFailure` for an unusable answer (wrong apiVersion/kind/uid, patch type other
    than JSONPatch, undecodable patch), :class:`ApiError` for ``allowed: false`` (see
    :func:`denied_error`) and a 500 when the patch does not apply (both not subject to failurePolicy).
    """
    response = _response_of(review, uid)
    if not response.get("allowed"):
        raise denied_error(webhook, response.get("status"))
    patch_b64 = response.get("patch")
    if not patch_b64:
        return obj
    if response.get("patchType") != "JSONPatch":
        raise CallFailure(f"expected patchType JSONPatch, got {response.get('patchType')!r}")
    try:
        patch = json.loads(base64.b64decode(patch_b64, validate=True))
    except (ValueError, TypeError) as exc:
        raise CallFailure(f"the patch of the webhook response could not be decoded: {exc}") from exc
    try:
        patched = json_patch(obj, patch)
    except PatchError as exc:
        raise ApiError(500, "InternalError", f"Internal error occurred: {exc}",
                       {"causes": [{"message": str(exc)}]}) from exc
    if not isinstance(patched, dict):
        raise ApiError(500, "InternalError", "Internal error occurred: the patched object is not an object")
    return patched


# ---- the shell ----------------------------------------------------------------------------------


def ssl_context(ca_bundle: Any) -> ssl.SSLContext:
    """A verifying client context trusting ``caBundle`` (base64 PEM), or the system roots without one,
    for the API server's calls to admission and conversion webhooks. Raises ``ValueError`` naming why
    the bundle cannot be loaded."""
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(str(ca_bundle), validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as exc:
        raise ValueError(f"unable to load root certificates: {exc}") from exc


def webhook_target(store: Store, client_config: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(url, server_hostname)`` of a webhook's ``clientConfig``: its ``url``, or its ``service``
    resolved through the Service's Endpoints in ``store`` (the first address of the subset port named
    like the Service port ``service.port``, default 443), verified as ``<service>.<namespace>.svc``.
    Raises ``LookupError`` naming why there is no target (no url nor service, no Service, no endpoints)."""
    if client_config.get("url"):
        return str(client_config["url"]), None
    service = client_config.get("service")
    if not isinstance(service, Mapping) or not service.get("name"):
        raise LookupError("the webhook has neither url nor service")
    namespace, name = str(service.get("namespace") or "default"), str(service["name"])
    port = int(service.get("port") or 443)
    path = str(service.get("path") or "")
    host = f"{name}.{namespace}.svc"
    svc_rt = store.registry.lookup("", "v1", "services")
    ep_rt = store.registry.lookup("", "v1", "endpoints")
    assert svc_rt is not None and ep_rt is not None
    try:
        svc = store.get(svc_rt, namespace, name)
        endpoints = store.get(ep_rt, namespace, name)
    except ApiError:
        raise LookupError(f'Post "https://{host}:{port}{path}": service "{name}" not found') from None
    port_name = next((p.get("name") for p in (svc.get("spec") or {}).get("ports") or []
                      if isinstance(p, Mapping) and p.get("port") == port), None)
    for subset in endpoints.get("subsets") or []:
        addresses = [a.get("ip") for a in subset.get("addresses") or [] if isinstance(a, Mapping) and a.get("ip")]
        ports = [p for p in subset.get("ports") or [] if isinstance(p, Mapping)]
        chosen = next((p for p in ports if port_name is not None and p.get("name") == port_name),
                      ports[0] if ports else None)
        if addresses and chosen is not None:
            ip = str(addresses[0])
            ip = f"[{ip}]" if ":" in ip else ip
            return f"https://{ip}:{chosen.get('port')}{path}", host
    raise LookupError(f'Post "https://{host}:{port}{path}": no endpoints available for service "{name}"')


class Admission:
    """Calls the matching mutating and validating webhooks of ``store`` (one instance per served app).

    :meth:`admit` returns the (possibly patched) object or raises :class:`ApiError`; :meth:`validate`
    returns nothing or raises :class:`ApiError`. Both only read the store (briefly, on the calling loop)
    and do the HTTPS calls with aiohttp's client.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def _configurations(self, plural: str = MWC_PLURAL) -> list[Obj]:
        rt = self.store.registry.lookup(MWC_GROUP, MWC_VERSION, plural)
        return list(self.store.list(rt).items) if rt is not None else []

    def validates(self, rt: ResourceType, operation: str, subresource: str = "") -> bool:
        """Whether some validating webhook's rules match ``operation`` on ``rt`` (selectors not looked
        at): a caller builds the old object of a DELETE only then."""
        if (rt.group, rt.plural) in _EXEMPT:
            return False
        return any(isinstance(r, Mapping) and rule_matches(r, rt, operation, subresource)
                   for config in self._configurations(VWC_PLURAL) for hook in config.get("webhooks") or []
                   if isinstance(hook, Mapping) for r in hook.get("rules") or [])

    async def validate(self, rt: ResourceType, namespace: str | None, operation: str, obj: Any,
                       old: Obj | None = None, dry_run: bool = False, subresource: str = "") -> None:
        """Call every matching validating webhook about ``operation`` on ``obj`` (``None`` for a DELETE,
        ``old`` the stored object then). Raises :class:`ApiError` on a refusal (or a failed call under
        ``failurePolicy: Fail``); nothing to do when the body is not an object or its namespace does
        not exist (the store then answers the request's error)."""
        if (obj is not None and not isinstance(obj, dict)) or (rt.group, rt.plural) in _EXEMPT:
            return
        configurations = self._configurations(VWC_PLURAL)
        if not configurations:
            return
        subject = obj if obj is not None else old
        if subject is None:
            return
        ns = ""
        ns_labels: dict[str, str] | None = None
        if rt.namespaced:
            ns = namespace or str((subject.get("metadata") or {}).get("namespace") or "")
            ns_labels = self._namespace_labels(ns) if ns else None
            if ns_labels is None:
                return
        sent: Obj | None = None
        if obj is not None:
            sent = {**copy.deepcopy(obj), "apiVersion": rt.api_version, "kind": rt.kind}
            if rt.namespaced:
                sent["metadata"] = {**(sent.get("metadata") or {}), "namespace": ns}
        for hook in matching_webhooks(configurations, rt, operation, subject, old, ns_labels, subresource):
            await self._call_validating(hook, rt, operation, sent, old, ns, dry_run, subresource)

    async def _call_validating(self, hook: MatchedWebhook, rt: ResourceType, operation: str, obj: Obj | None,
                               old: Obj | None, namespace: str, dry_run: bool, subresource: str) -> None:
        client = hook.webhook.get("clientConfig") or {}
        if dry_run and hook.webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise ApiError(400, "BadRequest", f'admission webhook "{hook.name}" does not support dry run')
        review = review_request(rt, operation, obj, old, namespace, dry_run, subresource=subresource)
        try:
            try:
                url, server_hostname = webhook_target(self.store, client if isinstance(client, Mapping) else {})
            except LookupError as exc:
                raise CallFailure(str(exc)) from None
            answer = await self._post(url, client.get("caBundle"), review, hook.timeout, server_hostname)
            check_validation_response(answer, review["request"]["uid"], hook.name)
        except CallFailure as exc:
            if hook.fail_closed:
                log.warning("event=webhook_failed webhook=%s policy=Fail error=%s", hook.name, exc)
                raise call_failure_error(hook.name, str(exc)) from exc
            log.warning("event=webhook_failed webhook=%s policy=Ignore error=%s", hook.name, exc)
            return
        log.info("event=webhook_called webhook=%s operation=%s resource=%s namespace=%s name=%s validating=true",
                 hook.name, operation, rt.qualified, namespace, review["request"]["name"])

    def _namespace_labels(self, namespace: str) -> dict[str, str] | None:
        ns_rt = self.store.registry.lookup("", "v1", "namespaces")
        if ns_rt is None:
            return None
        try:
            return _labels(self.store.get(ns_rt, None, namespace))
        except ApiError:
            return None

    async def admit(self, rt: ResourceType, namespace: str | None, operation: str, body: Any,
                    old: Obj | None = None, dry_run: bool = False, subresource: str = "") -> Any:
        """``body`` after every matching webhook (unchanged when none matches or the body is not an
        object, or its namespace does not exist: the store then answers the request's error)."""
        if not isinstance(body, dict) or (rt.group, rt.plural) in _EXEMPT:
            return body
        configurations = self._configurations()
        if not configurations:
            return body
        obj: Obj = {**copy.deepcopy(body), "apiVersion": rt.api_version, "kind": rt.kind}
        ns = ""
        ns_labels: dict[str, str] | None = None
        if rt.namespaced:
            ns = namespace or str((obj.get("metadata") or {}).get("namespace") or "")
            ns_labels = self._namespace_labels(ns) if ns else None
            if ns_labels is None:
                return body
            obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
        hooks = matching_webhooks(configurations, rt, operation, obj, old, ns_labels, subresource)
        for hook in hooks:
            obj = await self._call(hook, rt, operation, obj, old, ns, dry_run, subresource)
        return obj

    async def _call(self, hook: MatchedWebhook, rt: ResourceType, operation: str, obj: Obj, old: Obj | None,
                    namespace: str, dry_run: bool, subresource: str) -> Obj:
        client = hook.webhook.get("clientConfig") or {}
        url = client.get("url")
        if not url:
            log.warning("event=webhook_skipped webhook=%s configuration=%s reason=service_reference_unreachable "
                        "service=%s", hook.name, hook.configuration, client.get("service"))
            return obj
        if dry_run and hook.webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise ApiError(400, "BadRequest", f'admission webhook "{hook.name}" does not support dry run')
        review = review_request(rt, operation, obj, old, namespace, dry_run, subresource=subresource)
        uid = review["request"]["uid"]
        try:
            answer = await self._post(str(url), client.get("caBundle"), review, hook.timeout)
            result = apply_review_response(obj, answer, uid, hook.name)
        except CallFailure as exc:
            cause = str(exc)
            if hook.fail_closed:
                log.warning("event=webhook_failed webhook=%s policy=Fail error=%s", hook.name, cause)
                raise call_failure_error(hook.name, cause) from exc
            log.warning("event=webhook_failed webhook=%s policy=Ignore error=%s", hook.name, cause)
            return obj
        log.info("event=webhook_called webhook=%s operation=%s resource=%s namespace=%s name=%s patched=%s",
                 hook.name, operation, rt.qualified, namespace, (obj.get("metadata") or {}).get("name", ""),
                 result is not obj)
        return result

    @staticmethod
    async def _post(url: str, ca_bundle: Any, review: Obj, timeout: float, server_hostname: str | None = None) -> Any:
        if not url.startswith("https://"):
            raise CallFailure(f'webhook URL "{url}" is not https')
        try:
            context = ssl_context(ca_bundle)
        except ValueError as exc:
            raise CallFailure(f"could not get REST client: {exc}") from exc
        post = f'failed to call webhook: Post "{url}"'
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                    session.post(url, json=review, ssl=context, server_hostname=server_hostname,
                                 headers={"Accept": "application/json"}) as resp:
                if resp.status != 200:
                    text = (await resp.text())[:300]
                    raise CallFailure(f"the server responded with the status code {resp.status}: {text}")
                return await resp.json(content_type=None)
        except TimeoutError as exc:
            raise CallFailure(f"{post}: context deadline exceeded") from exc
        except aiohttp.ClientError as exc:
            raise CallFailure(f"{post}: {exc or type(exc).__name__}") from exc
        except ValueError as exc:  # not JSON
            raise CallFailure(f"the response of the webhook is not JSON: {exc}") from exc
