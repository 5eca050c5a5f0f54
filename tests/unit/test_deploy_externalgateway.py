"""deploy/components/externalgateway: with base it grants the apigateway worker every call the
externalgateway controller makes (and base alone does not: the widening stays opt-in)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.fixtures.admission import admission_create, admission_denials, admission_request, apigateway_creates
from tests.fixtures.deploy import Rbac, by_kind, components, render, render_with

#: The mesh CA's Secrets in istio-system (as tests/unit/test_deploy.py).
MESH_CA_SECRETS = ("istio-ca-secret", "cacerts", "istio-ca-root-cert")

pytestmark = pytest.mark.kubectl

SA = "reconcilery-apigateway"


def call(verb: str, group: str, resource: str, namespace: str = "", subresource: str = "") -> dict[str, Any]:
    return {"verb": verb, "group": group, "resource": resource, "subresource": subresource,
            "namespaced": bool(namespace), "namespace": namespace, "name": "partner-x"}


#: Every call of tasks/apigateway/externalgateway/controller.py (an ExternalGateway in ``shop``).
CALLS = [
    call("get", "gateway.kyma-project.io", "externalgateways", "shop"),
    call("list", "gateway.kyma-project.io", "externalgateways"),
    call("patch", "gateway.kyma-project.io", "externalgateways", "shop"),
    call("patch", "gateway.kyma-project.io", "externalgateways", "shop", "status"),
    call("get", "apiextensions.k8s.io", "customresourcedefinitions"),
    call("get", "", "configmaps", "kube-system") | {"name": "shoot-info"},
    call("get", "", "configmaps", "shop"),
    call("get", "", "namespaces") | {"name": "certs"},
    call("get", "", "secrets", "certs"),
    call("list", "networking.istio.io", "gateways"),
    call("get", "", "services", "istio-system"),
    *(call(v, "networking.istio.io", "gateways", "shop") for v in ("get", "create", "update", "delete")),
    *(call(v, "networking.istio.io", "envoyfilters", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "", "secrets", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "cert.gardener.cloud", "certificates", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "dns.gardener.cloud", "dnsentries", "istio-system") for v in ("get", "create", "update", "delete")),
    call("create", "", "events", "shop"),
]


def test_the_component_grants_every_call_and_base_alone_does_not() -> None:
    with_component = Rbac(render_with("externalgateway"))
    missing = [c for c in CALLS if not with_component.allows(SA, c, exact_namespace=True)]
    assert missing == []
    base = Rbac(render("base"))
    assert not all(base.allows(SA, c, exact_namespace=True) for c in CALLS)


def test_its_admission_policy_admits_the_ca_secrets_and_still_not_the_mesh_ca() -> None:
    from tasks.apigateway.externalgateway.model import ISTIO_SYSTEM, OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL
    from tasks.apigateway.externalgateway.plan import plan
    from tests.unit.apigateway.test_externalgateway import GARDENER, INGRESS, NOW, cluster, egw

    objs = render_with("externalgateway")
    # the CA Secret as the controller creates it: named <base>-tls-cacert, labelled as the ExternalGateway's
    (created,) = [a.object for a in plan(egw(), cluster(crds=GARDENER, ingress_service=INGRESS), NOW).outcome.writes
                  if a.kind == "Secret" and a.verb == "create"]
    ca_secret, labels = created["metadata"]["name"], created["metadata"]["labels"]
    assert admission_create(render("base"), "Secret", ISTIO_SYSTEM, ca_secret, labels=labels)  # base: not its name
    assert admission_create(objs, "Secret", ISTIO_SYSTEM, ca_secret, labels=labels) == []
    assert admission_create(objs, "Secret", ISTIO_SYSTEM, ca_secret)  # unlabelled: it would own nothing
    for label in (OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL):  # an owner label empty or missing
        assert admission_create(objs, "Secret", ISTIO_SYSTEM, ca_secret, labels={**labels, label: ""}), label
        assert admission_create(objs, "Secret", ISTIO_SYSTEM, ca_secret,
                                labels={k: v for k, v in labels.items() if k != label}), label
    for kind, namespace, name in apigateway_creates():
        assert admission_create(objs, kind, namespace, name) == [], (kind, namespace, name)
    for name in MESH_CA_SECRETS:
        assert admission_create(objs, "Secret", ISTIO_SYSTEM, name, labels=labels), name
    assert admission_create(objs, "Secret", "kyma-system", ca_secret, labels=labels)


def _secret_write(objs: tuple[dict[str, Any], ...], operation: str, old: dict[str, Any],
                  new: dict[str, Any] | None = None, username: str | None = None) -> list[str]:
    username = username or f"system:serviceaccount:reconcilery:{components(objs)['worker-apigateway']}"
    namespace = old["metadata"].get("namespace", "istio-system")
    return admission_denials(objs, admission_request(operation, "", "v1", "secrets", username, new, old,
                                                     namespace=namespace))


def test_its_admission_policy_lets_the_controller_update_and_delete_only_secrets_it_labelled() -> None:
    from tasks.apigateway.externalgateway import model as m
    from tasks.apigateway.externalgateway.plan import plan
    from tests.unit.apigateway.test_externalgateway import (
        CA,
        GARDENER,
        INGRESS,
        LATER,
        NOW,
        cluster,
        deleting,
        egw,
        existing_from,
        secret,
    )

    objs = render_with("externalgateway")
    policy = by_kind(objs, "ValidatingAdmissionPolicy")["reconcilery-apigateway-externalgateway-secrets"]
    assert policy["spec"]["failurePolicy"] == "Fail"
    # the owner labels the policy names are the controller's
    expressions = " ".join(v["expression"] for v in policy["spec"]["validations"])
    assert f"'{m.OWNER_NAME_LABEL}'" in expressions and f"'{m.OWNER_NAMESPACE_LABEL}'" in expressions
    # what the controller writes: the CA Secret updated when the partner's CA changes ...
    first = plan(egw(), cluster(crds=GARDENER, ingress_service=INGRESS), NOW)
    existing = existing_from(first)
    rotated = secret(data={"ca.crt": CA[::-1]})
    update = next(a for a in plan(egw(), cluster(crds=GARDENER, ingress_service=INGRESS, ca_secret=rotated,
                                                 existing=existing), LATER).outcome.writes if a.kind == "Secret")
    assert update.verb == "update" and update.actual is not None
    assert _secret_write(objs, "UPDATE", update.actual, update.object) == []
    # ... and, on deletion, the CA Secret and the TLS Secret Gardener labelled with the Certificate's secretLabels
    existing[("Secret", "istio-system", "partner-tls")] = {
        "metadata": {"name": "partner-tls", "namespace": "istio-system",
                     "labels": first.desired[1]["spec"]["secretLabels"]}}
    deletes = [a for a in plan(deleting(egw()), cluster(crds=GARDENER, existing=existing), NOW).outcome.writes
               if a.kind == "Secret"]
    assert len(deletes) == 2
    for action in deletes:
        assert action.actual is not None and _secret_write(objs, "DELETE", action.actual) == []
    # base's kyma-gateway-certs stays the operator's to write
    certs = {"metadata": {"name": "kyma-gateway-certs", "namespace": "istio-system"}, "data": {"tls.crt": "eA=="}}
    assert _secret_write(objs, "UPDATE", certs, {**certs, "data": {"tls.crt": "eQ=="}}) == []
    # unlabelled Secrets (the mesh CA above all) are neither updated nor deleted, nor labelled into ownership
    for name in (*MESH_CA_SECRETS, "partner-tls-cacert"):
        unlabelled = {"metadata": {"name": name, "namespace": "istio-system"}, "data": {"ca-cert.pem": "eA=="}}
        adopted = copy.deepcopy(update.object)
        adopted["metadata"]["name"] = name
        assert _secret_write(objs, "UPDATE", unlabelled, adopted), name
        assert _secret_write(objs, "DELETE", unlabelled), name
    # an update keeps the owner labels: neither removed nor handed to another ExternalGateway
    for label in (m.OWNER_NAME_LABEL, m.OWNER_NAMESPACE_LABEL):
        stripped = copy.deepcopy(update.object)
        del stripped["metadata"]["labels"][label]
        assert _secret_write(objs, "UPDATE", update.actual, stripped), label
        moved = copy.deepcopy(update.object)
        moved["metadata"]["labels"][label] = "other"
        assert _secret_write(objs, "UPDATE", update.actual, moved), label
    empty = copy.deepcopy(update.actual)
    empty["metadata"]["labels"][m.OWNER_NAME_LABEL] = ""
    assert _secret_write(objs, "DELETE", empty)
    # other namespaces and other accounts are RBAC's business
    elsewhere = {"metadata": {"name": "ory-oathkeeper-jwks-secret", "namespace": "kyma-system"}}
    assert _secret_write(objs, "DELETE", elsewhere) == []
    istiod = "system:serviceaccount:istio-system:istiod"
    assert _secret_write(objs, "DELETE", {"metadata": {"name": "cacerts", "namespace": "istio-system"}},
                         username=istiod) == []
    # base alone has no such policy (nor grants those writes)
    assert "reconcilery-apigateway-externalgateway-secrets" not in by_kind(render("base"), "ValidatingAdmissionPolicy")
