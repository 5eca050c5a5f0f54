"""One APIRule reconcile as a pure function: ``plan(apirule, state, settings) -> Plan``.

The worker builds a :class:`~tasks.apigateway.state.ClusterState` through the ``kube`` layer, calls
:func:`plan`, then applies ``Plan.actions`` in order, (un)sets the finalizer and writes ``Plan.status``;
``render`` calls the same function on a snapshot made of manifests. Steps follow api-gateway's APIRule
controller (``internal/controller/gateway``):

1. deletion (``deletionTimestamp``): delete every owned object, then release the finalizer;
2. pipeline selection by the ``original-version`` annotation (``v1beta1`` → the v1beta1 branch,
   :mod:`tasks.apigateway.v1beta1`; without the annotation, a v1beta1 object or spec);
3. finalizer (reported as ``add_finalizer``; the worker adds it before applying anything);
4. gateway discovery, required CRDs, the ``api-gateway-config`` JWT handler;
5. validation → ``Error`` with the failures;
6. desired VirtualService, AuthorizationPolicies, RequestAuthentications, and their diff against the
   owned objects (owned Ory Rules are deleted) → ``Ready``;
7. or, while v1beta1 APIRules are allowed and the APIRule still owns Ory Rules, one step of the
   zero-downtime migration (:func:`migration_step`), and the ``migration-step`` annotation to write after
   it succeeded (``Plan.annotations``); the next reconcile after ``migration_interval`` while the
   annotation is present.

What the reconcile writes is ``Plan.outcome``, one :class:`~kube.toolkit.outcome.Outcome` that
:func:`kube.toolkit.execute` carries out: the finalizer first; the actions in order (api-gateway's
``applyChanges``: a refused one stops the writes and becomes the ``Error`` of :meth:`Plan.with_apply_errors`,
a create's 409 fails the reconcile without a status); the ``migration-step`` annotations as a merge patch
under the APIRule's resourceVersion; the status merge patch (by
:func:`~kube.toolkit.outcome.status_patch`: ``state``, ``description``, ``observedGeneration``;
``lastProcessedTime`` moves only with them) with an Event when state or description changed; the requeue
or the error. A deletion's Outcome deletes the owned objects, releases the finalizer and then records the
``Deleted`` Event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import kube.refusal as refusal
from kube.clock import now_rfc3339
from kube.toolkit.outcome import Event, Outcome, has_finalizer, status_changed, status_patch
from tasks.apigateway import model
from tasks.apigateway import status as st
from tasks.apigateway.authorizationpolicy import desired_authorization_policies
from tasks.apigateway.config import parse_config
from tasks.apigateway.diff import (
    Action,
    Write,
    delete_all,
    diff_authorization_policies,
    diff_request_authentications,
    diff_virtual_service,
)
from tasks.apigateway.model import APIRule
from tasks.apigateway.namespaces import ALLOW_APIRULES, allows, service_namespace_failures
from tasks.apigateway.parsing import as_dict, opt_int
from tasks.apigateway.requestauthentication import desired_request_authentications
from tasks.apigateway.state import ClusterState, external_gateway_gateway_name
from tasks.apigateway.v1beta1 import V1beta1Status, looks_v1beta1
from tasks.apigateway.v1beta1.plan import plan_v1beta1
from tasks.apigateway.validate import ValidationFailure, validate, workload_lookup
from tasks.apigateway.virtualservice import HostError, desired_virtual_service, resolve_hosts

_GATEWAY_REF = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?/([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)$")

PIPELINE_V2 = "v2"
PIPELINE_V1BETA1 = "v1beta1"
PIPELINE_DELETION = "deletion"


@dataclass(frozen=True)
class RulePolicy:
    """Controller settings the plan needs.

    Attributes:
        reconciliation_interval: seconds until the next reconcile after success (seed: 30 minutes).
        error_retry_interval: first retry delay after a failure in seconds (seed: 1 minute); the
            worker's backoff base, carried here so both come from one place.
        finalizer_requeue: seconds until the reconcile after the deletion step released the finalizer
            (the original's 5 s).
        v1beta1_access: whether v1beta1 APIRules are reconciled (the original's signed
            ``kyma-system/apirule-access`` ConfigMap, here a setting: notes §5.6); default no. It also
            turns the zero-downtime migration on (the original's ``migrationAllowed``).
        migration_interval: seconds to the next reconcile while the ``migration-step`` annotation is
            present (the original's ``--migration-interval``, 1 minute).
        allow_cross_namespace_services: a Service of any namespace may be named (the original); off:
            only of the APIRule's own namespace or of one whose Namespace allows it
            (:func:`~tasks.apigateway.namespaces.service_namespace_failures`, issue 27).
    """

    reconciliation_interval: float = 1800.0
    error_retry_interval: float = 60.0
    finalizer_requeue: float = 5.0
    v1beta1_access: bool = False
    migration_interval: float = 60.0
    allow_cross_namespace_services: bool = False


@dataclass(frozen=True)
class Plan:
    """What one reconcile does.

    Attributes:
        pipeline: ``v2``, ``v1beta1`` (not reconciled yet) or ``deletion``.
        desired: desired manifests in processor order (VirtualService, AuthorizationPolicies,
            RequestAuthentications); empty when validation failed.
        actions: writes in order; apply them one by one and stop at the first failure.
        status: the status to write, or ``None`` (deletion writes none).
        add_finalizer: the finalizer is missing; add it before applying ``actions``.
        remove_finalizer: release the finalizer after the deletes succeeded.
        failures: the validation failures behind an ``Error`` status.
        requeue_after: seconds until the next reconcile when the plan succeeds; ``None`` when the
            status is ``Error`` (retry with backoff) or nothing is left to do.
        v1beta1: the per-component v1beta1 status behind ``status`` (v1beta1 pipeline only).
        migration_step: the migration step this reconcile runs (``apply-istio-authorization``,
            ``vs-switch-to-service``, ``remove-ory-rule``), ``None`` outside a migration.
        annotations: annotations to merge-patch onto the APIRule once every action succeeded
            (``None`` removes one): the next ``migration-step``, or its removal.
        outcome: what the reconcile writes, carried out by :func:`kube.toolkit.execute` (module doc).
    """

    pipeline: str
    desired: tuple[dict[str, Any], ...] = ()
    actions: tuple[Action, ...] = ()
    status: st.Status | None = None
    add_finalizer: bool = False
    remove_finalizer: bool = False
    failures: tuple[ValidationFailure, ...] = ()
    requeue_after: float | None = None
    v1beta1: V1beta1Status | None = None
    migration_step: str | None = None
    annotations: Mapping[str, str | None] = field(default_factory=dict)
    outcome: Outcome = field(default_factory=Outcome)

    @property
    def failed(self) -> bool:
        """The status is ``Error``: the worker reports a failure so the key backs off and retries."""
        return self.status is not None and self.status.state == st.ERROR

    def with_status(self, status: st.Status) -> Plan:
        """A copy with another status (the worker's apply errors, see :func:`status.apply_failed`)."""
        failed = status.state == st.ERROR
        # a failed migration step does not advance the annotation (api-gateway: ``!s.HasError()``)
        return replace(self, status=status, requeue_after=None if failed else self.requeue_after,
                       annotations={} if failed else self.annotations)

    def with_apply_errors(self, errors: Mapping[str, list[str]]) -> Plan:
        """A copy whose status reports the writes the API server refused (``{kind: [messages]}``): v2
        ``<Kind>Errors: ...`` lines; v1beta1 the failing component ``ERROR`` (``GetStatusForErrorMap``)."""
        if self.v1beta1 is not None:
            components = self.v1beta1.with_errors(errors)
            return replace(self.with_status(components.written()), v1beta1=components)
        return self.with_status(st.apply_failed(errors))


@dataclass(frozen=True)
class _Owned:
    virtual_services: list[dict[str, Any]] = field(default_factory=list)
    authorization_policies: list[dict[str, Any]] = field(default_factory=list)
    request_authentications: list[dict[str, Any]] = field(default_factory=list)
    ory_rules: list[dict[str, Any]] = field(default_factory=list)


def _owned(rule: APIRule, state: ClusterState) -> _Owned:
    return _Owned(
        model.owned_objects(state.virtual_services, rule.name, rule.namespace),
        model.owned_objects(state.authorization_policies, rule.name, rule.namespace),
        model.owned_objects(state.request_authentications, rule.name, rule.namespace),
        model.owned_objects(state.ory_rules, rule.name, rule.namespace),
    )


def select_pipeline(rule: APIRule) -> str:
    """``v1beta1`` when the ``original-version`` annotation says so; without the annotation, when the
    object is a v1beta1 one (its ``apiVersion``, or a v1beta1 spec read through v2 from an API server
    that does not convert: :func:`~tasks.apigateway.v1beta1.looks_v1beta1`). Else the v2 pipeline."""
    version = rule.original_version
    if version is None:
        return PIPELINE_V1BETA1 if looks_v1beta1(rule.raw) else PIPELINE_V2
    return PIPELINE_V1BETA1 if version == "v1beta1" else PIPELINE_V2


def _discover_gateway(rule: APIRule, state: ClusterState) -> tuple[str | None, st.Status | None]:
    """``(namespace/name of the Istio Gateway, None)`` or ``(None, Error status)``."""
    if bool(rule.gateway) == bool(rule.external_gateway):
        return None, st.attribute_error("spec", "Either gateway or externalGateway must be specified")
    if rule.gateway:
        if not _GATEWAY_REF.fullmatch(rule.gateway):
            return None, st.attribute_error("spec.gateway", "Gateway must be in the namespace/name format")
        namespace, _, name = rule.gateway.partition("/")
        if (namespace, name) not in state.gateways:
            return None, st.attribute_error("spec.gateway", "Could not get specified Gateway")
        return rule.gateway, None
    ref = rule.external_gateway or ""
    if not _GATEWAY_REF.fullmatch(ref):
        return None, st.attribute_error("spec.externalGateway", "ExternalGateway must be in the namespace/name format")
    namespace, _, name = ref.partition("/")
    if (namespace, name) not in state.external_gateways:
        return None, st.attribute_error("spec.externalGateway", "Could not get specified ExternalGateway")
    generated = external_gateway_gateway_name(name)
    if (namespace, generated) not in state.gateways:
        return None, st.attribute_error(
            "spec.externalGateway",
            f"Could not find generated Gateway for ExternalGateway (expected: {namespace}/{generated})",
        )
    return f"{namespace}/{generated}", None


MIGRATION_STEPS = (model.MIGRATION_APPLY_ISTIO_AUTHORIZATION, model.MIGRATION_VS_SWITCH_TO_SERVICE,
                   model.MIGRATION_REMOVE_ORY_RULE)


def migration_step(annotation: str | None) -> str:
    """The step to run given the ``migration-step`` annotation (the step completed last): none →
    ``apply-istio-authorization``, that → ``vs-switch-to-service``, that → ``remove-ory-rule``. An
    unknown value starts over, as the original (``nextMigrationStep``): the annotation gets corrected."""
    if annotation == model.MIGRATION_APPLY_ISTIO_AUTHORIZATION:
        return model.MIGRATION_VS_SWITCH_TO_SERVICE
    if annotation == model.MIGRATION_VS_SWITCH_TO_SERVICE:
        return model.MIGRATION_REMOVE_ORY_RULE
    return model.MIGRATION_APPLY_ISTIO_AUTHORIZATION


def needs_migration(owned_ory_rules: list[dict[str, Any]], settings: RulePolicy) -> bool:
    """The v2 APIRule migrates from Ory to Istio: v1beta1 APIRules are allowed and it still owns Ory Rules
    (api-gateway's ``apiRuleNeedsMigration``; a cluster without the Rule CRD has none)."""
    return settings.v1beta1_access and bool(owned_ory_rules)


#: The ``Action.kind`` of writes to the APIRule itself (its finalizer, its annotations).
APIRULE_KIND = model.APIRULE.kind
#: The Event a deletion records once the finalizer is released.
DELETED = Event("Normal", "Deleted", "Owned objects deleted, finalizer released")


def plan(apirule: Mapping[str, Any] | APIRule, state: ClusterState, settings: RulePolicy | None = None,
         now: datetime | None = None) -> Plan:
    """The reconcile of ``apirule`` (a manifest of any served version, or the rule parsed from one:
    the worker parses once per reconcile) against ``state``. ``now`` (aware) spaces the migration's
    steps and is the status's ``lastProcessedTime``; ``None`` (render) does neither. Pure; never raises
    for bad input: every problem the user can fix is an ``Error`` or ``Warning`` status."""
    rule = APIRule.of(apirule)
    decided = _decide(rule, state, settings or RulePolicy(), now)
    return replace(decided, outcome=_outcome(decided, rule, now))


def _status_outcome(status: st.Status | None, rule: APIRule, requeue_after: float | None,
                    now: datetime | None) -> Outcome:
    """The APIRule's status becoming ``status``: the merge patch (none when it says so for this
    generation already: ``lastProcessedTime`` alone is no change), an Event when state or description
    changed, and the error (``Error``) or the requeue."""
    if status is None:
        return Outcome(requeue_after=requeue_after)
    current = rule.raw.get("status") if isinstance(rule.raw.get("status"), dict) else None
    said = {"state": status.state, "description": status.description}
    generation = opt_int(as_dict(rule.raw.get("metadata")).get("generation"))
    patch = status_patch(current, {**said, "observedGeneration": generation} if generation is not None else said)
    if patch is not None and now is not None:
        patch["lastProcessedTime"] = now_rfc3339(now)
    event = Event(*st.event_for(status), status.description) if status_changed(current, said) else None
    if status.state == st.ERROR:
        return Outcome(status=patch, event=event, error=status.description)
    return Outcome(status=patch, event=event, requeue_after=requeue_after)


def _outcome(p: Plan, rule: APIRule, now: datetime | None) -> Outcome:
    """What the reconcile decided in ``p`` writes (module doc)."""
    if p.pipeline == PIPELINE_DELETION:
        if not p.remove_finalizer:
            return Outcome()
        release = Action("remove_finalizer", APIRULE_KIND, rule.raw, body={"finalizer": model.FINALIZER})

        def stuck(write: Write, failure: refusal.Failure, _answers: Sequence[Any]) -> Outcome:
            if write is release:
                return Outcome(error=str(failure))
            return Outcome(error=f"deleting owned objects: {write.describe()}: {failure.message}")

        def released(answers: Sequence[Any]) -> Outcome:  # the APIRule gone already: no Event
            return Outcome(event=DELETED) if answers and answers[-1] is not None else Outcome()

        return Outcome(writes=(*p.actions, release), refused=stuck, then=released)
    outcome = _status_outcome(p.status, rule, p.requeue_after, now)
    if p.add_finalizer:
        outcome = replace(outcome, add_finalizer=model.FINALIZER)
    if p.failed:  # only the revocation of a namespace's permission writes (deletes) on Error
        return replace(outcome, writes=p.actions, refused=lambda *_: outcome) if p.actions else outcome
    writes: list[Write] = list(p.actions)
    if p.annotations and not all(rule.annotations.get(k) == v for k, v in p.annotations.items()):
        version = as_dict(rule.raw.get("metadata")).get("resourceVersion")
        writes.append(Action("patch", APIRULE_KIND, rule.raw, body={
            "metadata": {"annotations": dict(p.annotations), "resourceVersion": version}}))
    if not writes:
        return outcome

    def refused(write: Write, failure: refusal.Failure, _answers: Sequence[Any]) -> Outcome:
        if not isinstance(write, Action) or write.kind not in model.OWNED_KINDS or failure.conflict:
            return Outcome(error=str(failure))  # the APIRule's own patch, or a stale create: again
        failed = p.with_apply_errors({write.kind: [f"{write.describe()}: {failure.message}"]})
        return _status_outcome(failed.status, rule, failed.requeue_after, now)

    return replace(outcome, writes=tuple(writes), refused=refused)


def _decide(rule: APIRule, state: ClusterState, settings: RulePolicy, now: datetime | None) -> Plan:
    """:func:`plan` without its Outcome."""
    owned = _owned(rule, state)

    if rule.deleting:
        if not has_finalizer(rule.raw, model.FINALIZER):
            return Plan(PIPELINE_DELETION)
        actions = (
            delete_all(model.AUTHORIZATION_POLICY.kind, owned.authorization_policies)
            + delete_all(model.REQUEST_AUTHENTICATION.kind, owned.request_authentications)
            + delete_all(model.VIRTUAL_SERVICE.kind, owned.virtual_services)
            + delete_all(model.ORY_RULE.kind, owned.ory_rules)
        )
        return Plan(PIPELINE_DELETION, actions=tuple(actions), remove_finalizer=True)

    pipeline = select_pipeline(rule)
    refused = [] if settings.allow_cross_namespace_services else service_namespace_failures(rule, state.namespaces)
    if pipeline == PIPELINE_V1BETA1:
        if refused and settings.v1beta1_access:
            return _refused_namespaces(rule, pipeline, owned, refused, state)
        v1 = plan_v1beta1(rule.v1beta1, state, settings.v1beta1_access)
        return Plan(PIPELINE_V1BETA1, desired=v1.desired, actions=v1.actions, status=v1.status,
                    add_finalizer=v1.components is not None and not has_finalizer(rule.raw, model.FINALIZER),
                    failures=v1.failures,
                    requeue_after=None if v1.status.state == st.ERROR else settings.reconciliation_interval,
                    v1beta1=v1.components)

    add_finalizer = not has_finalizer(rule.raw, model.FINALIZER)
    annotation = rule.annotations.get(model.MIGRATION_STEP_ANNOTATION)
    migrating = needs_migration(owned.ory_rules, settings)
    # while the annotation is present the APIRule is reconciled every migration_interval (also when a
    # step fails validation or misses a CRD: the original checks the annotation before the error)
    interval = settings.migration_interval if annotation is not None else settings.reconciliation_interval

    if rule.type_failures:  # fields of the wrong type: nothing else can be trusted
        failures = list(rule.type_failures)
        return Plan(PIPELINE_V2, status=st.validation_failed(failures), add_finalizer=add_finalizer,
                    failures=tuple(failures))

    def result(status: st.Status, **kwargs: Any) -> Plan:
        requeue = None if status.state == st.ERROR else interval
        return Plan(PIPELINE_V2, status=status, add_finalizer=add_finalizer, requeue_after=requeue, **kwargs)

    if rule.spec_empty:  # checked first so the user sees the original's troubleshooting hint
        failures = validate(rule, state)
        return result(st.validation_failed(failures), failures=tuple(failures))

    if refused:  # before anything reads the other namespace's Services and Pods
        return _refused_namespaces(rule, pipeline, owned, refused, state)

    gateway_ref, error = _discover_gateway(rule, state)
    if error is not None or gateway_ref is None:
        return result(error or st.attribute_error("spec", "Either gateway or externalGateway must be specified"))

    if state.crds is not None:
        for crd in model.REQUIRED_CRDS:
            if crd not in state.crds:
                return result(st.missing_dependency(crd))

    config = parse_config(state.config_maps.get(model.CONFIG_MAP))
    if not config.valid:
        return result(st.attribute_error("", f"Unsupported JWT Handler: {config.jwt_handler}"))

    failures = validate(rule, state, gateway_ref)
    if failures:
        return result(st.validation_failed(failures), failures=tuple(failures))

    gateway_ns, _, gateway_name = gateway_ref.partition("/")
    try:
        hosts = resolve_hosts(rule, state.gateways.get((gateway_ns, gateway_name)))
    except HostError as exc:
        return result(st.Status(st.ERROR, f"ApiRuleErrors: {exc}"))
    selectors = [workload_lookup(rule, r, state)[1] for r in rule.rules]

    virtual_service = desired_virtual_service(rule, hosts, gateway_ref)
    authentications = desired_request_authentications(rule, selectors)
    if migrating:
        return _migration_plan(rule, owned, annotation, hosts, selectors, virtual_service, authentications,
                               add_finalizer, settings, now)
    policies = desired_authorization_policies(rule, hosts, selectors)
    actions = (
        diff_virtual_service(virtual_service, owned.virtual_services)
        + diff_authorization_policies(policies, owned.authorization_policies)
        + diff_request_authentications(authentications, owned.request_authentications)
        + delete_all(model.ORY_RULE.kind, owned.ory_rules)
    )
    # An annotation left without Ory Rules to migrate (they went while the last step's annotation write
    # failed, or v1beta1 access was revoked) is removed: the original keeps it, and the APIRule is then
    # reconciled every minute forever.
    stale = {model.MIGRATION_STEP_ANNOTATION: None, model.MIGRATION_STEP_AT_ANNOTATION: None} \
        if annotation is not None else {}
    return Plan(PIPELINE_V2, desired=(virtual_service, *policies, *authentications), actions=tuple(actions),
                status=st.ready(), add_finalizer=add_finalizer, requeue_after=settings.reconciliation_interval,
                annotations=stale)


def _refused_namespaces(rule: APIRule, pipeline: str, owned: _Owned, failures: list[ValidationFailure],
                        state: ClusterState) -> Plan:
    """The APIRule names a Service in a namespace that does not allow it: ``Error`` with ``failures``,
    nothing written there, and the owned AuthorizationPolicies and RequestAuthentications already in a
    namespace other than its own that does not allow it are deleted (written before the rule, or
    before the namespace withdrew its permission). Checked before everything that reads that
    namespace's Services and Pods, so no message says anything about them."""
    def outside(obj: Mapping[str, Any]) -> bool:
        namespace = str(as_dict(obj.get("metadata")).get("namespace") or "")
        return not allows(namespace, rule.namespace, state.namespaces.get(namespace), ALLOW_APIRULES)

    actions = (delete_all(model.AUTHORIZATION_POLICY.kind, filter(outside, owned.authorization_policies))
               + delete_all(model.REQUEST_AUTHENTICATION.kind, filter(outside, owned.request_authentications)))
    return Plan(pipeline, actions=tuple(actions), status=st.validation_failed(failures),
                add_finalizer=not has_finalizer(rule.raw, model.FINALIZER), failures=tuple(failures))


def _since_last_step(rule: APIRule, now: datetime | None) -> float | None:
    """Seconds since the last step completed (its ``migration-step-at``), ``None`` when unknown."""
    text = rule.annotations.get(model.MIGRATION_STEP_AT_ANNOTATION)
    if now is None or not text:
        return None
    try:
        return (now - datetime.fromisoformat(text.replace("Z", "+00:00"))).total_seconds()
    except (TypeError, ValueError):
        return None


def _migration_plan(rule: APIRule, owned: _Owned, annotation: str | None, hosts: list[str],
                    selectors: list[dict[str, str] | None], virtual_service: dict[str, Any],
                    authentications: list[dict[str, Any]], add_finalizer: bool, settings: RulePolicy,
                    now: datetime | None) -> Plan:
    """One step of the zero-downtime migration (api-gateway's ``NewMigrationProcessors``), processors in
    the original's order:

    1. ``apply-istio-authorization``: AuthorizationPolicies admitting Oathkeeper too, RequestAuthentications
       (the VirtualService still routes to Oathkeeper, which forwards to the Service);
    2. ``vs-switch-to-service``: the VirtualService now routes to the Service; policies as in 1;
    3. ``remove-ory-rule``: the Ory Rules are deleted, the VirtualService and RequestAuthentications
       kept, the policies lose the Oathkeeper passthrough; the annotation is removed.

    After the step succeeds the annotation records it (step 3 removes it), and ``migration-step-at`` when.
    A step comes at least ``migration_interval`` after the previous one (Istio's proxies need the time to
    take the last change up); an earlier reconcile (an event) re-applies the completed step instead."""
    step = migration_step(annotation)
    since = _since_last_step(rule, now)
    if annotation in MIGRATION_STEPS[:2] and since is not None and 0 <= since < settings.migration_interval:
        held = _migration_objects(rule, owned, str(annotation), hosts, selectors, virtual_service, authentications)
        return Plan(PIPELINE_V2, desired=held[0], actions=held[1], status=st.ready(), add_finalizer=add_finalizer,
                    requeue_after=max(1.0, settings.migration_interval - since), migration_step=annotation)
    desired, actions = _migration_objects(rule, owned, step, hosts, selectors, virtual_service, authentications)
    done = step == model.MIGRATION_REMOVE_ORY_RULE
    annotations: dict[str, str | None] = {model.MIGRATION_STEP_ANNOTATION: None if done else step}
    if done or now is not None:
        annotations[model.MIGRATION_STEP_AT_ANNOTATION] = None if done else now_rfc3339(now)
    return Plan(PIPELINE_V2, desired=desired, actions=actions, status=st.ready(), add_finalizer=add_finalizer,
                requeue_after=settings.reconciliation_interval if done else settings.migration_interval,
                migration_step=step, annotations=annotations)


def _migration_objects(rule: APIRule, owned: _Owned, step: str, hosts: list[str],
                       selectors: list[dict[str, str] | None], virtual_service: dict[str, Any],
                       authentications: list[dict[str, Any]]) -> tuple[tuple[dict[str, Any], ...],
                                                                        tuple[Action, ...]]:
    """``(desired, actions)`` of migration ``step``."""
    passthrough = step != model.MIGRATION_REMOVE_ORY_RULE
    policies = desired_authorization_policies(rule, hosts, selectors, ory_passthrough=passthrough)
    actions: list[Action] = []
    desired: list[dict[str, Any]] = []
    if step == model.MIGRATION_REMOVE_ORY_RULE:
        actions += delete_all(model.ORY_RULE.kind, owned.ory_rules)
    if step != model.MIGRATION_APPLY_ISTIO_AUTHORIZATION:
        actions += diff_virtual_service(virtual_service, owned.virtual_services)
        desired.append(virtual_service)
    actions += diff_authorization_policies(policies, owned.authorization_policies)
    actions += diff_request_authentications(authentications, owned.request_authentications)
    return (*desired, *policies, *authentications), tuple(actions)
