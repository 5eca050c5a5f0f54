"""Issue 27: an APIRule writes into another namespace only where that Namespace allows it.

Attacker: admin in ``shop`` only, writes an APIRule whose Service is in ``istio-system`` (or any
other namespace) to get ALLOW AuthorizationPolicies and RequestAuthentications written there.
"""

from __future__ import annotations

from typing import Any

import pytest

from tasks.apigateway.namespaces import ALLOW_APIRULES, allowed_sources, allows
from tasks.apigateway.plan import RulePolicy, plan
from tasks.apigateway.state import reads_for

from .builders import ISSUER, JWKS, apirule, jwt, namespace, rule, service, state

VICTIM = "istio-system"
REFUSED = (f'Namespace "{VICTIM}" does not allow APIRules of namespace "shop": its annotation '
           f'{ALLOW_APIRULES} must list "shop" or "*"')


def attack(**spec: Any) -> dict[str, Any]:
    """An APIRule of ``shop`` whose JWT rule routes to ``istio-system/istiod``."""
    return apirule(rule("/*", jwt=jwt(issuer=ISSUER, jwksUri=JWKS)),
                   service={"name": "istiod", "namespace": VICTIM, "port": 15012}, **spec)


def written_namespaces(p: Any) -> set[str]:
    return {w.namespace for w in p.outcome.writes}


@pytest.mark.parametrize("victim_namespace", [
    None,  # not found (or not readable): the same answer
    namespace(VICTIM),
    namespace(VICTIM, allow_apirules_from="other"),
    namespace(VICTIM, allow_apirules_from="shop-2, shopping"),
    namespace(VICTIM, allow_apirules_from=""),
    namespace(VICTIM, **{"gateway.kyma-project.io/allow-externalgateways-from": "*"}),  # the other permission
])
def test_a_service_of_a_namespace_that_does_not_allow_it_is_an_error_and_nothing_is_written_there(
        victim_namespace: dict[str, Any] | None) -> None:
    extra = [service("istiod", VICTIM)] + ([victim_namespace] if victim_namespace else [])
    p = plan(attack(), state(*extra))
    assert p.status is not None and p.status.state == "Error"
    assert p.status.description == f"Validation errors: Attribute '.spec.service.namespace': {REFUSED}"
    assert p.desired == () and p.actions == ()
    assert VICTIM not in written_namespaces(p) and p.outcome.writes == ()
    assert p.outcome.error == p.status.description  # retried with backoff, never Ready


def test_the_answer_says_nothing_about_the_other_namespace() -> None:
    """Missing Service, Pods without sidecars there: the same single failure as when all is fine."""
    bare = plan(attack(), state(namespace(VICTIM)))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "istiod-1", "namespace": VICTIM,
                                                           "labels": {"app": "istiod"}}, "spec": {"containers": []}}
    rich = plan(attack(), state(namespace(VICTIM), service("istiod", VICTIM), pod))
    assert bare.status == rich.status and len(bare.failures) == 1


def test_a_rule_level_service_is_checked_too() -> None:
    obj = apirule(rule("/a"), rule("/b", service={"name": "istiod", "namespace": VICTIM, "port": 1}))
    p = plan(obj, state(service("istiod", VICTIM)))
    assert p.status is not None and p.status.state == "Error"
    assert p.status.description == f"Validation errors: Attribute '.spec.rules[1].service.namespace': {REFUSED}"
    assert p.outcome.writes == ()


@pytest.mark.parametrize("allowed", ["shop", "*", "team-a, shop ,team-b", " * "])
def test_a_namespace_that_allows_the_apirules_namespace_gets_its_policies(allowed: str) -> None:
    p = plan(attack(), state(service("istiod", VICTIM), namespace(VICTIM, allow_apirules_from=allowed)))
    assert p.status is not None and p.status.state == "Ready", p.status
    policies = [o for o in p.desired if o["kind"] in ("AuthorizationPolicy", "RequestAuthentication")]
    assert policies and {o["metadata"]["namespace"] for o in policies} == {VICTIM}


def test_the_originals_behaviour_is_one_setting_away() -> None:
    p = plan(attack(), state(service("istiod", VICTIM)), RulePolicy(allow_cross_namespace_services=True))
    assert p.status is not None and p.status.state == "Ready"
    assert VICTIM in written_namespaces(p)


def test_the_own_namespace_needs_no_permission() -> None:
    p = plan(apirule(service={"name": "orders", "namespace": "shop", "port": 8080}), state())
    assert p.status is not None and p.status.state == "Ready"


def test_withdrawn_permission_deletes_the_policies_written_there_and_only_them() -> None:
    allowed = state(service("istiod", VICTIM), namespace(VICTIM, allow_apirules_from="shop"))
    written = [{**o, "metadata": {**o["metadata"], "name": f"{o['kind'].lower()}-1"}}
               for o in plan(attack(), allowed).desired]
    withdrawn = state(service("istiod", VICTIM), namespace(VICTIM), *written)
    p = plan(attack(), withdrawn)
    assert p.status is not None and p.status.state == "Error"
    deletes = [(w.verb, w.kind, w.namespace) for w in p.outcome.writes]
    assert deletes == [("delete", "AuthorizationPolicy", VICTIM), ("delete", "RequestAuthentication", VICTIM)]
    assert p.outcome.status is not None and p.outcome.status["state"] == "Error"
    # nothing in the APIRule's own namespace is touched (its VirtualService stays, as for any Error)
    assert all(w.namespace == VICTIM for w in p.outcome.writes)


def test_v1beta1_apirules_are_held_to_the_same_rule() -> None:
    obj = {"apiVersion": "gateway.kyma-project.io/v1beta1", "kind": "APIRule",
           "metadata": {"name": "legacy", "namespace": "shop", "generation": 1,
                        "finalizers": ["gateway.kyma-project.io/subresources"]},
           "spec": {"host": "legacy", "gateway": "kyma-system/kyma-gateway",
                    "service": {"name": "istiod", "namespace": VICTIM, "port": 15012},
                    "rules": [{"path": "/.*", "methods": ["GET"], "accessStrategies": [{"handler": "no_auth"}]}]}}
    p = plan(obj, state(service("istiod", VICTIM)), RulePolicy(v1beta1_access=True))
    assert p.status is not None and p.status.state == "Error" and REFUSED in p.status.description
    assert p.outcome.writes == ()
    allowed = plan(obj, state(service("istiod", VICTIM), namespace(VICTIM, allow_apirules_from="shop")),
                   RulePolicy(v1beta1_access=True))
    assert allowed.status is not None and allowed.status.state != "Error", allowed.status
    assert VICTIM in {o["metadata"]["namespace"] for o in allowed.desired if o["kind"] == "AuthorizationPolicy"}


def test_the_worker_reads_the_namespaces_of_foreign_services_only() -> None:
    assert reads_for(attack()).namespaces == (VICTIM,)
    assert reads_for(apirule()).namespaces == ()


@pytest.mark.parametrize(("value", "source", "expected"), [
    ("shop", "shop", True), ("*", "anything", True), ("a,b", "b", True), ("a, b", "c", False),
    ("shopping", "shop", False), ("", "shop", False), (",,", "shop", False),
])
def test_annotation_values(value: str, source: str, expected: bool) -> None:
    ns = namespace("target", allow_apirules_from=value)
    assert allows("target", source, ns, ALLOW_APIRULES) is expected
    assert allows("target", "target", None, ALLOW_APIRULES)  # its own namespace always


def test_a_namespace_manifest_of_another_name_or_odd_shape_allows_nothing() -> None:
    assert not allows("target", "shop", namespace("elsewhere", allow_apirules_from="*"), ALLOW_APIRULES)
    assert not allows("target", "shop", {"metadata": ["x"]}, ALLOW_APIRULES)
    odd = {"metadata": {"name": "target", "annotations": {ALLOW_APIRULES: ["*"]}}}
    assert allowed_sources(odd, ALLOW_APIRULES) == frozenset()
