"""End to end with worker processes: dev API server → ``reconcilery watch`` → Redis → ``reconcilery worker``.

- APIGateway: the Kyma Gateway and a generated self-signed Secret appear; a second, younger CR gets
  ``Warning``; deleting the CR is blocked (``Warning``, listed in the logs) while an APIRule exists and
  goes through (Gateway deleted, finalizers released) once it is gone.
- RateLimit: ``Warning`` until the APIGateway is ``Ready``, then the EnvoyFilter; a conflicting RateLimit
  is ``Error``; a deleted RateLimit's EnvoyFilter goes too.
- v1beta1: an APIRule created as v1beta1 (istio handler) gets its VirtualService, policies and Ory Rule,
  and ``Ready``; deleting it removes them.
- Bad input: malformed APIRules stored by an API server without schema end as ``Error`` naming the attribute.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kube import Resource, events, resources
from tasks.apigateway import reads
from tests.fixtures.platform import Platform
from tests.fixtures.processes import wait_for
from tests.integration.apigateway.conftest import AGW, ROOT

pytestmark = pytest.mark.integration

DOMAINS = "tasks.apigateway.controller,tasks.apigateway.operator.controller,tasks.apigateway.ratelimit.controller"
CONTROLLERS = "apirule,apigateway,ratelimit"
FAST = {
    "RECONCILERY_APIRULE_ERROR_RETRY_SECONDS": "1",
    "RECONCILERY_APIRULE_ERROR_RETRY_CAP_SECONDS": "2",
    "RECONCILERY_APIGATEWAY_ERROR_RETRY_CAP_SECONDS": "2",
    "RECONCILERY_RATELIMIT_ERROR_RETRY_CAP_SECONDS": "2",
    "RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS": "0",
    "RECONCILERY_APIRULE_V1BETA1_ACCESS": "allow",
}
EXAMPLES = ROOT / "examples" / "apigateway"
V1BETA1_APIRULE = Resource("gateway.kyma-project.io", "v1beta1", "apirules", "APIRule", True)


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def apigateway(name: str = "default") -> dict[str, Any]:
    return {**copy.deepcopy(docs(EXAMPLES / "20-apigateway.yaml")[0]), "metadata": {"name": name}}


def state_of(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("status") or {}).get("state")


def start(platform: Callable[..., Platform]) -> Platform:
    return platform(domains=DOMAINS, controllers=CONTROLLERS, workers=2, queues="apigateway", **FAST)


def test_apigateway_oldest_wins_and_deletion_is_blocked_by_apirules(agw: AGW,
                                                                    platform: Callable[..., Platform]) -> None:
    plat = start(platform)
    kube = agw.kube
    try:
        kube.create(reads.APIGATEWAY, apigateway("default"))
        wait_for(lambda: state_of(reads.apigateway(kube, "default")) == "Ready", timeout=30,
                 message="APIGateway Ready")
        cr = reads.apigateway(kube, "default")
        assert cr is not None and cr["metadata"]["finalizers"] == [
            "gateways.operator.kyma-project.io/api-gateway-reconciliation",
            "gateways.operator.kyma-project.io/kyma-gateway"]
        assert cr["status"]["conditions"][0]["reason"] == "ReconcileSucceeded"
        gateway = kube.get(reads.GATEWAY, "kyma-gateway", "kyma-system")
        assert gateway is not None and gateway["metadata"]["labels"]["kyma-project.io/module"] == "api-gateway"
        secret = kube.get(resources.SECRET, "kyma-gateway-certs", "istio-system")
        assert secret is not None
        cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
        assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName) == ["*.local.kyma.dev", "local.kyma.dev"]
        assert kube.get(reads.VIRTUAL_SERVICE, "istio-healthz", "istio-system") is not None
        assert kube.get(resources.DEPLOYMENT, "ory-oathkeeper", "kyma-system") is not None  # v1beta1 allowed

        # a second, younger CR: Warning, and it never reconciles the module (creationTimestamp has
        # seconds: a CR created in the same second would tie, and a tie goes to the later one, as the original)
        wait_for(lambda: events.now_rfc3339() > cr["metadata"]["creationTimestamp"], timeout=3,  # type: ignore[index]
                 message="next second")
        kube.create(reads.APIGATEWAY, apigateway("second"))
        wait_for(lambda: state_of(reads.apigateway(kube, "second")) == "Warning", timeout=30,
                 message="second CR Warning")
        second = reads.apigateway(kube, "second")
        assert second is not None and second["status"]["description"] == (
            "stopped APIGateway CR reconciliation: only APIGateway CR default reconciles the module")
        assert not second["metadata"].get("finalizers")
        kube.delete(reads.APIGATEWAY, "second")

        # deletion is blocked while an APIRule exists
        agw.create(copy.deepcopy(docs(EXAMPLES / "10-apirules.yaml")[0]))
        wait_for(lambda: state_of(agw.get("httpbin-public")) == "Ready", timeout=30, message="APIRule Ready")
        kube.delete(reads.APIGATEWAY, "default")
        wait_for(lambda: state_of(reads.apigateway(kube, "default")) == "Warning", timeout=30,
                 message="deletion blocked")
        blocked = reads.apigateway(kube, "default")
        assert blocked is not None and blocked["status"]["description"].startswith(
            "There are APIRule(s) that block the deletion of API-Gateway CR.")
        assert blocked["status"]["conditions"][0]["message"] == (
            "API Gateway deletion blocked because of the existing custom resources: shop/httpbin-public")
        wait_for(lambda: "shop/httpbin-public" in plat.logs() and "resource blocks the deletion" in plat.logs(),
                 timeout=10, message="blocking APIRule logged")
        assert kube.get(reads.GATEWAY, "kyma-gateway", "kyma-system") is not None

        # the APIRule goes: the CR goes, with the Kyma Gateway and Oathkeeper
        kube.delete(reads.APIRULE, "httpbin-public", "shop")
        wait_for(lambda: reads.apigateway(kube, "default") is None, timeout=40, message="APIGateway deleted")
        assert kube.get(reads.GATEWAY, "kyma-gateway", "kyma-system") is None
        assert kube.get(resources.DEPLOYMENT, "ory-oathkeeper", "kyma-system") is None
    except Exception:
        print(plat.logs())
        raise


def test_ratelimit_waits_for_the_apigateway_then_writes_its_envoy_filter(agw: AGW,
                                                                         platform: Callable[..., Platform]) -> None:
    plat = start(platform)
    kube = agw.kube
    pod, ratelimit = docs(EXAMPLES / "40-ratelimit.yaml")
    try:
        kube.create(resources.POD, pod)
        kube.create(reads.RATELIMIT, ratelimit)
        wait_for(lambda: state_of(reads.ratelimit(kube, "shop", "httpbin")) == "Warning", timeout=30,
                 message="RateLimit Warning without APIGateway")
        kube.create(reads.APIGATEWAY, apigateway())
        wait_for(lambda: state_of(reads.ratelimit(kube, "shop", "httpbin")) == "Ready", timeout=40,
                 message="RateLimit Ready")
        ef = kube.get(reads.ENVOY_FILTER, "httpbin", "shop")
        assert ef is not None and ef["spec"]["workloadSelector"] == {"labels": {"app": "httpbin"}}
        assert ef["metadata"]["ownerReferences"][0]["kind"] == "RateLimit"
        assert [p["applyTo"] for p in ef["spec"]["configPatches"]] == ["HTTP_FILTER", "HTTP_ROUTE"]

        conflicting = copy.deepcopy(ratelimit)
        conflicting["metadata"]["name"] = "second"
        kube.create(reads.RATELIMIT, conflicting)
        wait_for(lambda: state_of(reads.ratelimit(kube, "shop", "second")) == "Error", timeout=30,
                 message="conflicting RateLimit Error")
        assert reads.ratelimit(kube, "shop", "second")["status"]["description"] == (  # type: ignore[index]
            "failed to validate RateLimit: conflicting with the following RateLimit CRs: httpbin")

        kube.delete(reads.RATELIMIT, "httpbin", "shop")
        wait_for(lambda: kube.get(reads.ENVOY_FILTER, "httpbin", "shop") is None, timeout=30,
                 message="EnvoyFilter of the deleted RateLimit removed")
        wait_for(lambda: state_of(reads.ratelimit(kube, "shop", "second")) == "Ready", timeout=30,
                 message="second RateLimit no longer conflicts")
    except Exception:
        print(plat.logs())
        raise


def test_v1beta1_apirule_through_the_istio_handler(agw: AGW, platform: Callable[..., Platform]) -> None:
    plat = start(platform)
    kube = agw.kube
    legacy = docs(EXAMPLES / "30-v1beta1.yaml")[0]
    legacy["spec"]["rules"].append({"path": "/introspect", "methods": ["GET"], "accessStrategies": [
        {"handler": "oauth2_introspection", "config": {"required_scope": ["read"]}}]})
    try:
        kube.create(V1BETA1_APIRULE, legacy)
        wait_for(lambda: state_of(agw.get("legacy")) == "Ready", timeout=30, message="v1beta1 APIRule Ready")
        rule = agw.get("legacy")
        assert rule is not None and rule["status"]["description"].startswith("Version v1beta1 of APIRule is deprecated")
        assert rule["metadata"]["finalizers"] == ["gateway.kyma-project.io/subresources"]
        owned = agw.owned("legacy")
        (vs,) = owned["VirtualService"]
        assert vs["spec"]["hosts"] == ["legacy.local.kyma.dev"]
        assert len(owned["AuthorizationPolicy"]) == 3 and len(owned["RequestAuthentication"]) == 1
        selector = "apirule.gateway.kyma-project.io/name=legacy"
        (ory,) = kube.list(reads.ORY_RULE, label_selector=selector)
        assert ory["spec"]["match"]["url"] == "<http|https>://legacy.local.kyma.dev</introspect>"

        kube.delete(V1BETA1_APIRULE, "legacy", "shop")
        wait_for(lambda: agw.get("legacy") is None, timeout=30, message="v1beta1 APIRule deleted")
        assert not kube.list(reads.ORY_RULE, label_selector=selector)
        assert all(not objs for objs in agw.owned("legacy").values())
    except Exception:
        print(plat.logs())
        raise


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("rules-number", {"rules": 3.5}, "Attribute '.spec.rules': must be of type array, got number"),
    ("methods-string", {"rules": [{"path": "/a", "methods": "GET", "noAuth": True}]},
     "Attribute '.spec.rules[0].methods': must be of type array, got string"),
    ("service-string", {"service": "httpbin"}, "Attribute '.spec.service': must be of type object, got string"),
]


def test_malformed_apirules_end_as_error_naming_the_attribute(agw: AGW, platform: Callable[..., Platform]) -> None:
    """The issue: stored without a schema, these were dropped by the watcher's map function and never got
    a status. (Once the dev API server enforces the CRD schema it refuses them with 422 instead.)"""
    plat = start(platform)
    base = copy.deepcopy(docs(EXAMPLES / "10-apirules.yaml")[0])
    try:
        for name, spec, _ in MALFORMED:
            obj = copy.deepcopy(base)
            obj["metadata"]["name"] = name
            obj["spec"].update(spec)
            try:
                agw.create(obj)
            except Exception as exc:  # a schema-enforcing API server refuses it: that is an answer too
                assert "422" in str(getattr(exc, "status", "")) or "Invalid" in str(exc), exc
        for name, _, message in MALFORMED:
            if agw.get(name) is None:
                continue
            wait_for(lambda n=name: state_of(agw.get(n)) == "Error", timeout=30, message=f"{name} Error")
            assert agw.get(name)["status"]["description"] == f"Validation errors: {message}"  # type: ignore[index]
    except Exception:
        print(plat.logs())
        raise
