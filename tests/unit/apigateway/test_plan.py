"""plan(): pipeline selection, deletion, finalizer, gateway discovery, dependencies, diff and status."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit.outcome import Event
from tasks.apigateway import status as st
from tasks.apigateway.diff import diff_authorization_policies, diff_request_authentications, diff_virtual_service
from tasks.apigateway.plan import RulePolicy, plan
from tasks.apigateway.state import ClusterState

from .builders import apirule, cluster, config_map, jwt, rule, state

OWNER = {"apirule.gateway.kyma-project.io/name": "orders", "apirule.gateway.kyma-project.io/namespace": "shop"}


def actual(obj: dict[str, Any], name: str, rv: str = "1") -> dict[str, Any]:
    """``obj`` as the API server returns it after a create."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    meta.pop("generateName", None)
    meta.update(name=name, resourceVersion=rv, annotations={"kept": "yes"})
    return out


def owned(kind: str, name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    group = "networking.istio.io" if kind == "VirtualService" else "security.istio.io"
    return {
        "apiVersion": f"{group}/v1beta1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "labels": OWNER if labels is None else labels},
        "spec": spec,
    }


def verbs(actions: Any) -> list[str]:
    return [a.describe() for a in actions]


# --- status texts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "description"),
    [
        (1, "Validation errors: Attribute 'p0': m0"),
        (3, "Validation errors: Attribute 'p0': m0\nAttribute 'p1': m1\nAttribute 'p2': m2"),
        (4, "Validation errors: Attribute 'p0': m0\nAttribute 'p1': m1\nAttribute 'p2': m2\n1 more error(s)..."),
        (7, "Validation errors: Attribute 'p0': m0\nAttribute 'p1': m1\nAttribute 'p2': m2\n4 more error(s)..."),
    ],
)
def test_validation_status_three_lines_then_more(count: int, description: str) -> None:
    from tasks.apigateway.validate import ValidationFailure

    status = st.validation_failed([ValidationFailure(f"p{i}", f"m{i}") for i in range(count)])
    assert status == st.Status("Error", description)


def test_status_shapes() -> None:
    assert st.ready().to_dict() == {"state": "Ready", "description": "Reconciled successfully"}
    assert st.apply_failed(
        {"VirtualService": ["a", "b"], "AuthorizationPolicy": [], "RequestAuthentication": ["c"]}
    ) == (st.Status("Error", "VirtualServiceErrors: a, b\nRequestAuthenticationErrors: c"))


# --- plan --------------------------------------------------------------------------------------


def test_ready_plan_creates_everything_and_requeues() -> None:
    result = plan(apirule(rule("/a", jwt=jwt())), state(), RulePolicy(reconciliation_interval=99))
    assert result.status == st.ready()
    assert result.requeue_after == 99 and not result.failed and not result.add_finalizer
    assert verbs(result.actions) == [
        "create VirtualService shop/orders-",
        "create AuthorizationPolicy shop/orders-",
        "create RequestAuthentication shop/orders-",
    ]


NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def test_the_outcome_writes_the_status_only_when_state_description_or_generation_change() -> None:
    obj = apirule(rule("/a", jwt=jwt()))
    first = plan(obj, state(), RulePolicy(reconciliation_interval=99), NOW).outcome
    assert first.status == {"state": "Ready", "description": "Reconciled successfully", "observedGeneration": 1,
                            "lastProcessedTime": "2026-01-01T00:00:00Z"}
    assert first.event == Event("Normal", "Reconciled", "Reconciled successfully") and first.requeue_after == 99
    assert [w.describe() for w in first.writes] == verbs(plan(obj, state()).actions)
    written = {**obj, "status": {**(first.status or {}), "lastProcessedTime": "2020-01-01T00:00:00Z"}}
    again = plan(written, state(), None, NOW).outcome
    assert again.status is None and again.event is None  # lastProcessedTime alone is no change
    bumped = {**written, "metadata": {**written["metadata"], "generation": 2}}
    moved = plan(bumped, state(), None, NOW).outcome
    assert moved.status == {"observedGeneration": 2, "lastProcessedTime": "2026-01-01T00:00:00Z"}
    assert moved.event is None  # state and description as before: no Event
    failing = plan({**written, "spec": {**written["spec"], "gateway": "nope"}}, state(), None, NOW).outcome
    assert failing.status is not None and failing.status["state"] == "Error" and failing.writes == ()
    assert failing.event is not None and failing.event.reason == "ValidationFailed"
    assert failing.error == failing.status["description"] and failing.requeue_after is None


def test_a_refused_write_is_the_apply_error_and_a_deletion_releases_the_finalizer_then_says_so() -> None:
    outcome = plan(apirule(rule("/a", jwt=jwt())), state(), None, NOW).outcome
    assert outcome.refused is not None
    stopped = outcome.refused(outcome.writes[1], Failure.of_http(422, "denied"), (None,))
    assert stopped.status is not None and stopped.status["state"] == "Error" and stopped.writes == ()
    assert stopped.status["description"] == "AuthorizationPolicyErrors: create AuthorizationPolicy shop/orders-: denied"
    assert stopped.event is not None and stopped.event.reason == "ApplyFailed"
    assert outcome.refused(outcome.writes[0], Failure.of_http(409, "exists", code="AlreadyExists"), ()).status is None
    gone = apirule(rule("/a", jwt=jwt()))
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    vs = owned("VirtualService", "orders-abc")
    deleting = plan(gone, ClusterState(virtual_services=(vs,)), None, NOW).outcome
    assert [w.describe() for w in deleting.writes] == ["delete VirtualService shop/orders-abc",
                                                       "remove_finalizer APIRule shop/orders"]
    assert deleting.then is not None and deleting.refused is not None
    assert deleting.then((None, {"metadata": {}})).event == Event(
        "Normal", "Deleted", "Owned objects deleted, finalizer released")
    assert deleting.then((None, None)).event is None  # gone already
    assert deleting.refused(deleting.writes[0], Failure.of_http(403, "no"), ()).error == (
        "deleting owned objects: delete VirtualService shop/orders-abc: no")


def test_missing_finalizer_is_reported() -> None:
    result = plan(apirule(finalizers=False), state())
    assert result.add_finalizer and result.status == st.ready()


def test_second_round_with_applied_objects_is_a_no_op() -> None:
    obj = apirule(rule("/a", jwt=jwt()))
    first = plan(obj, state())
    applied = [actual(o, f"orders-{i}") for i, o in enumerate(first.desired)]
    second = plan(obj, state(*applied))
    assert second.status == st.ready() and second.actions == ()


def test_changed_rule_updates_vs_and_replaces_policy() -> None:
    first = plan(apirule(rule("/a")), state())
    applied = [actual(o, f"orders-{i}", rv="7") for i, o in enumerate(first.desired)]
    changed = plan(apirule(rule("/b")), state(*applied))
    assert verbs(changed.actions) == [
        "update VirtualService shop/orders-0",
        "create AuthorizationPolicy shop/orders-",
        "delete AuthorizationPolicy shop/orders-1",
    ]
    update = changed.actions[0].object
    assert update["metadata"]["resourceVersion"] == "7" and update["metadata"]["annotations"] == {"kept": "yes"}
    assert update["spec"]["http"][0]["match"][0]["uri"] == {"regex": "^/b$"}


def test_diff_virtual_service_deletes_extra_owned() -> None:
    desired = plan(apirule(), state()).desired[0]
    actions = diff_virtual_service(desired, [owned("VirtualService", "a"), owned("VirtualService", "b")])
    assert verbs(actions) == ["update VirtualService shop/a", "delete VirtualService shop/b"]
    assert verbs(diff_virtual_service(desired, [])) == ["create VirtualService shop/orders-"]


def test_diff_policies_by_hash_and_index() -> None:
    desired = [o for o in plan(apirule(rule("/a", jwt=jwt())), state()).desired if o["kind"] == "AuthorizationPolicy"]
    labels = desired[0]["metadata"]["labels"]
    unlabelled = owned("AuthorizationPolicy", "no-hash")
    stale = owned("AuthorizationPolicy", "stale", {**labels, "gateway.kyma-project.io/index": "5"})
    same = owned("AuthorizationPolicy", "same", dict(labels), **desired[0]["spec"])
    duplicate = owned("AuthorizationPolicy", "dup", dict(labels), **desired[0]["spec"])
    actions = diff_authorization_policies(desired, [unlabelled, same, stale, duplicate])
    assert verbs(actions) == [
        "delete AuthorizationPolicy shop/no-hash",
        "delete AuthorizationPolicy shop/stale",
        "delete AuthorizationPolicy shop/dup",
    ]


def test_diff_request_authentications_by_key() -> None:
    desired = [o for o in plan(apirule(rule("/a", jwt=jwt())), state()).desired if o["kind"] == "RequestAuthentication"]
    other_issuer = owned("RequestAuthentication", "old", **{**desired[0]["spec"], "jwtRules": [{"issuer": "x"}]})
    same_key = owned(
        "RequestAuthentication",
        "same",
        **{**desired[0]["spec"], "jwtRules": [{**desired[0]["spec"]["jwtRules"][0], "forwardOriginalToken": False}]},
    )
    actions = diff_request_authentications(desired, [other_issuer, same_key])
    assert verbs(actions) == ["update RequestAuthentication shop/same", "delete RequestAuthentication shop/old"]


def test_owned_objects_found_by_legacy_label_and_ory_rules_deleted() -> None:
    legacy = owned("AuthorizationPolicy", "legacy", {"apirule.gateway.kyma-project.io/v1beta1": "orders.shop"})
    foreign = owned(
        "AuthorizationPolicy",
        "foreign",
        {"apirule.gateway.kyma-project.io/name": "other", "apirule.gateway.kyma-project.io/namespace": "shop"},
    )
    ory = {
        "apiVersion": "oathkeeper.ory.sh/v1alpha1",
        "kind": "Rule",
        "metadata": {"name": "r", "namespace": "shop", "labels": OWNER},
    }
    result = plan(apirule(), state(legacy, foreign, ory))
    assert verbs(result.actions)[-2:] == ["delete AuthorizationPolicy shop/legacy", "delete Rule shop/r"]


def test_deletion_deletes_owned_then_releases_finalizer() -> None:
    obj = apirule()
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objs = [actual(o, f"orders-{i}") for i, o in enumerate(plan(apirule(rule("/a", jwt=jwt())), state()).desired)]
    result = plan(obj, state(*objs))
    assert result.pipeline == "deletion" and result.remove_finalizer and result.status is None
    assert verbs(result.actions) == [
        "delete AuthorizationPolicy shop/orders-1",
        "delete RequestAuthentication shop/orders-2",
        "delete VirtualService shop/orders-0",
    ]
    del obj["metadata"]["finalizers"]
    assert plan(obj, state(*objs)).actions == ()


@pytest.mark.parametrize(
    ("annotations", "version", "pipeline"),
    [
        (None, "v2", "v2"),
        ({"gateway.kyma-project.io/original-version": "v2alpha1"}, "v2alpha1", "v2"),
        ({"gateway.kyma-project.io/original-version": "v2"}, "v2alpha1", "v2"),
        ({"gateway.kyma-project.io/original-version": "v1beta1"}, "v2alpha1", "v1beta1"),
        (None, "v1beta1", "v1beta1"),
    ],
)
def test_pipeline_selection(annotations: dict[str, str] | None, version: str, pipeline: str) -> None:
    result = plan(apirule(annotations=annotations, version=version), state())
    assert result.pipeline == pipeline
    if pipeline == "v1beta1":  # v1beta1 access is not allowed by default: the original's gate
        assert result.status == st.Status("Error", "Version v1beta1 of APIRule is no longer supported and this "
                                                   "APIRule is not reconciled. Make sure to migrate to version v2.")
        assert result.actions == () and not result.add_finalizer


@pytest.mark.parametrize(
    ("spec", "extra", "description"),
    [
        (
            {"gateway": None},
            [],
            "Validation errors: Attribute 'spec': Either gateway or externalGateway must be specified",
        ),
        (
            {"externalGateway": "shop/ext"},
            [],
            "Validation errors: Attribute 'spec': Either gateway or externalGateway must be specified",
        ),
        (
            {"gateway": "kyma-system/missing"},
            [],
            "Validation errors: Attribute 'spec.gateway': Could not get specified Gateway",
        ),
        (
            {"gateway": "Bad_Name"},
            [],
            "Validation errors: Attribute 'spec.gateway': Gateway must be in the namespace/name format",
        ),
        (
            {"gateway": None, "externalGateway": "shop/ext"},
            [],
            "Validation errors: Attribute 'spec.externalGateway': Could not get specified ExternalGateway",
        ),
        (
            {"gateway": None, "externalGateway": "shop/ext"},
            [
                {
                    "apiVersion": "gateway.kyma-project.io/v1alpha1",
                    "kind": "ExternalGateway",
                    "metadata": {"name": "ext", "namespace": "shop"},
                }
            ],
            "Validation errors: Attribute 'spec.externalGateway': Could not find generated Gateway for ExternalGateway "
            "(expected: shop/ext-gw)",
        ),
    ],
)
def test_gateway_discovery_errors(spec: dict[str, Any], extra: list[dict[str, Any]], description: str) -> None:
    result = plan(apirule(**spec), state(*extra))
    assert result.status == st.Status("Error", description)
    assert result.failed and result.requeue_after is None and result.actions == ()


def test_missing_crd_is_a_warning() -> None:
    crds = [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "virtualservices.networking.istio.io"},
        }
    ]
    result = plan(apirule(), state(*crds))
    assert result.status == st.Status(
        "Warning",
        "CRD authorizationpolicies.security.istio.io is not present. Make sure to install required dependencies "
        "for the component",
    )


@pytest.mark.parametrize(
    ("config", "handler_error"),
    [
        (None, None),  # absent → ory, accepted
        ("jwtHandler: istio", None),
        ("jwtHandler: ory", None),
        ("jwtHandler: keycloak", "keycloak"),
    ],
)
def test_jwt_handler(config: str | None, handler_error: str | None) -> None:
    manifests = [m for m in cluster() if m["metadata"]["name"] != "api-gateway-config"]
    if config is not None:
        manifests.append(config_map("api-gateway-config", "kyma-system", {"api-gateway-config": config}))
    result = plan(apirule(), ClusterState.from_manifests(manifests))
    if handler_error is None:
        assert result.status == st.ready()
    else:
        assert result.status == st.Status(
            "Error", f"Validation errors: Attribute '': Unsupported JWT Handler: {handler_error}"
        )


def test_validation_error_has_no_actions() -> None:
    result = plan(apirule(rule("/a"), rule("/a")), state())
    assert result.failed and result.desired == () and result.actions == ()
    assert [str(f) for f in result.failures] == [
        "Attribute '.spec.rules': Path /a with method GET conflicts with at least one of the previous rule paths"
    ]


def test_external_gateway_is_used_for_hosts_and_gateways() -> None:
    ext = {
        "apiVersion": "gateway.kyma-project.io/v1alpha1",
        "kind": "ExternalGateway",
        "metadata": {"name": "ext", "namespace": "shop"},
    }
    from .builders import gateway

    result = plan(
        apirule(hosts=["orders"], gateway=None, externalGateway="shop/ext"),
        state(ext, gateway("ext-gw", "shop", ["*.ext.example.com"])),
    )
    assert result.status == st.ready()
    assert result.desired[0]["spec"]["gateways"] == ["shop/ext-gw"]
    assert result.desired[0]["spec"]["hosts"] == ["orders.ext.example.com"]


def test_prefix_then_double_asterisk_is_accepted_and_ordered_by_not_paths() -> None:
    """The issue's example: ``/abc`` GET then ``/abc/{**}`` GET is valid; the second policy excludes the first."""
    result = plan(apirule(rule("/abc"), rule("/abc/{**}")), state())
    assert result.status == st.ready()
    policies = [d for d in result.desired if d["kind"] == "AuthorizationPolicy"]
    operations = [p["spec"]["rules"][0]["to"][0]["operation"] for p in policies]
    assert [o["paths"] for o in operations] == [["/abc"], ["/abc/{**}"]]
    assert "notPaths" not in operations[0] and operations[1]["notPaths"] == ["/abc"]


def test_shadowed_rule_is_rejected() -> None:
    result = plan(apirule(rule("/abc/{**}"), rule("/abc/def")), state())
    assert result.status == st.Status(
        "Error", "Validation errors: Attribute '.spec.rules': Path /abc/def with method GET conflicts with at "
        "least one of the previous rule paths")
