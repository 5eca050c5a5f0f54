"""The ``externalgateway`` controller against the dev API server (the APIRule fixtures: CRDs and
``examples/apigateway/00-cluster.yaml``): create, update, drift, the long-name rule, an error, deletion,
and an APIRule routed through the ExternalGateway before and after it is gone."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import ApiError, resources
from tasks.apigateway import controller as apirule_controller
from tasks.apigateway import install, reads
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway.controller import EXTERNAL_GATEWAY, KINDS, reconcile
from tests.fixtures.processes import wait_for
from tests.integration.apigateway.conftest import AGW, ROOT
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

EXAMPLE = ROOT / "examples/apigateway/50-externalgateway.yaml"
MANAGED = ("Secret", "EnvoyFilter", "EnvoyFilter", "Gateway")


def example_docs(path: Path = EXAMPLE) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(path.read_text()) if d}


def setup(agw: AGW) -> dict[str, dict[str, Any]]:
    docs = example_docs()
    agw.kube.create(resources.CONFIGMAP, docs["ConfigMap"])
    agw.kube.create(resources.SECRET, docs["Secret"])
    return docs


def get(agw: AGW, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return agw.kube.get(KINDS[kind], name, namespace)


def generated(agw: AGW, name: str, namespace: str = "shop") -> dict[str, dict[str, Any] | None]:
    n = m.Names.of(name)
    return {"ca": get(agw, "Secret", "istio-system", n.ca_secret),
            "xfcc": get(agw, "EnvoyFilter", "istio-system", n.xfcc_filter),
            "cv": get(agw, "EnvoyFilter", "istio-system", n.cert_validation_filter),
            "gateway": get(agw, "Gateway", namespace, n.gateway)}


def eg(agw: AGW, name: str = "partner") -> dict[str, Any]:
    found = agw.kube.get(EXTERNAL_GATEWAY, name, "shop")
    assert found is not None
    return found


def test_create_update_drift_delete_and_the_apirule_using_it(agw: AGW) -> None:
    docs = setup(agw)
    agw.kube.create(EXTERNAL_GATEWAY, docs["ExternalGateway"])
    result = reconcile(Key("local", "shop", "partner"))
    assert result.outcome is ResultKind.REQUEUE_AFTER and result.requeue_after == 3600

    obj = eg(agw)
    assert obj["metadata"]["finalizers"] == [m.FINALIZER]
    status = obj["status"]
    assert (status["state"], status["description"], status["observedGeneration"]) == (
        "Ready", "All resources reconciled successfully", 1)
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == {
        "Ready": ("True", "Ready"), "DNSEntryReady": ("False", "GardenerCRDUnavailable"),
        "CertificateReady": ("False", "GardenerCRDUnavailable"), "GatewayConfigured": ("True", "Ready")}
    objs = generated(agw, "partner")
    assert all(o is not None for o in objs.values())
    ca_secret, gateway = objs["ca"], objs["gateway"]
    assert ca_secret is not None and gateway is not None
    pem = base64.b64decode(ca_secret["data"]["ca.crt"]).decode()
    assert pem == docs["Secret"]["stringData"]["ca.crt"]
    assert gateway["spec"]["servers"][0]["hosts"] == ["api.partner.example", "external-partner.local.kyma.dev"]
    assert gateway["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]

    # a second reconcile writes nothing (no status write either)
    version = eg(agw)["metadata"]["resourceVersion"]
    reconcile(Key("local", "shop", "partner"))
    assert eg(agw)["metadata"]["resourceVersion"] == version

    # the APIRule routed through it
    agw.create(docs["APIRule"])
    def ready() -> bool:
        apirule_controller.reconcile(Key("local", "shop", "httpbin-partner"))
        return (agw.get("httpbin-partner") or {}).get("status", {}).get("state") == "Ready"
    wait_for(ready, timeout=20, interval=0.2, message="APIRule through the ExternalGateway not Ready")
    vs = agw.owned("httpbin-partner")["VirtualService"]
    assert [v["spec"]["gateways"] for v in vs] == [["shop/partner-gw"]]
    assert vs[0]["spec"]["hosts"] == ["api.partner.example"]

    # update: another region and the client certificate forwarded
    agw.kube.patch(EXTERNAL_GATEWAY, "partner", {"spec": {"region": "us10", "includeExtGatewayClientCert": True}},
                   "shop")
    reconcile(Key("local", "shop", "partner"))
    objs = generated(agw, "partner")
    xfcc, cv = objs["xfcc"], objs["cv"]
    assert xfcc is not None and cv is not None
    assert xfcc["spec"]["configPatches"][0]["patch"]["value"]["typed_config"][
        "forward_client_cert_details"] == "APPEND_FORWARD"
    lua = cv["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["defaultSourceCode"]["inlineString"]
    assert '"CN=partner-us10,L=us10,OU=Clients,O=Example Partner,C=US"' in lua
    assert eg(agw)["status"]["observedGeneration"] == 2

    # drift: a deleted filter comes back
    agw.kube.delete(KINDS["EnvoyFilter"], "partner-cv", "istio-system")
    reconcile(Key("local", "shop", "partner"))
    assert generated(agw, "partner")["cv"] is not None

    # deletion: everything it generated goes, then the finalizer; the APIRule then reports it missing
    agw.kube.delete(EXTERNAL_GATEWAY, "partner", "shop")
    assert eg(agw)["metadata"].get("deletionTimestamp")
    assert reconcile(Key("local", "shop", "partner")).outcome is ResultKind.SUCCESS
    assert agw.kube.get(EXTERNAL_GATEWAY, "partner", "shop") is None
    assert all(o is None for o in generated(agw, "partner").values())
    assert get(agw, "Secret", "shop", "partner-ca") is not None  # the user's CA Secret stays

    def missing() -> bool:
        apirule_controller.reconcile(Key("local", "shop", "httpbin-partner"))
        return (agw.get("httpbin-partner") or {}).get("status", {}).get("description") == (
            "Validation errors: Attribute 'spec.externalGateway': Could not get specified ExternalGateway")
    try:
        wait_for(missing, timeout=20, interval=0.2, message="APIRule does not report the missing ExternalGateway")
    except TimeoutError:
        raise AssertionError(str((agw.get("httpbin-partner") or {}).get("status"))) from None


def test_long_name_and_an_error_without_a_gateway(agw: AGW) -> None:
    docs = setup(agw)
    name = "partner-gateway-for-the-european-union-region-eu10"
    long_named = copy.deepcopy(docs["ExternalGateway"])
    long_named["metadata"]["name"] = name
    long_named["spec"]["externalDomain"] = "long.partner.example"
    agw.kube.create(EXTERNAL_GATEWAY, long_named)
    reconcile(Key("local", "shop", name))
    base = m.base_name(name)
    assert len(base) == 45 and base != name
    assert generated(agw, name)["gateway"] is not None
    assert get(agw, "Gateway", "shop", f"{base}-gw") is not None

    wrong_region = copy.deepcopy(docs["ExternalGateway"])
    wrong_region["spec"]["region"] = "ap21"
    agw.kube.create(EXTERNAL_GATEWAY, wrong_region)
    result = reconcile(Key("local", "shop", "partner"))
    assert result.outcome is ResultKind.ERROR
    status = eg(agw)["status"]
    assert status["state"] == "Error"
    assert status["description"] == ('failed to resolve certificate subjects: region "ap21" not defined in '
                                     "ConfigMap shop/external-gateway-regions")
    assert generated(agw, "partner")["gateway"] is None  # no Gateway without the region check
    assert generated(agw, "partner")["ca"] is not None
    events = [e for e in agw.kube.list(resources.EVENT, namespace="shop")
              if e["involvedObject"].get("name") == "partner" and e["reason"] == "RegionNotFound"]
    assert events and events[0]["type"] == "Warning"


def test_the_crd_schema_rejects_and_defaults(agw: AGW) -> None:
    docs = example_docs()
    bad = copy.deepcopy(docs["ExternalGateway"])
    del bad["spec"]["region"]
    with pytest.raises(ApiError) as rejected:
        agw.kube.create(EXTERNAL_GATEWAY, bad)
    assert rejected.value.status == 422
    defaulted = copy.deepcopy(docs["ExternalGateway"])
    defaulted["spec"]["internalDomain"] = {}
    assert agw.kube.create(EXTERNAL_GATEWAY, defaulted)["spec"]["internalDomain"]["kymaSubdomain"] == "external"


def test_the_gardener_path_dns_entry_certificate_tls_secret_processing_ready_and_deletion(agw: AGW) -> None:
    """With Gardener's CRDs (the stand-ins): the DNSEntry and Certificate are written, ``Processing`` until
    Gardener reports both Ready (this test plays Gardener: their status, and the TLS Secret its
    cert-controller writes with the Certificate's ``secretLabels``), then ``Ready``; deletion removes them
    and the TLS Secret too."""
    install.install_crds(agw.kube, gardener=True)
    agw.kube.wait_served((reads.DNS_ENTRY, reads.CERTIFICATE), 30, interval=0.1)
    docs = setup(agw)
    agw.kube.create(resources.CONFIGMAP, {"metadata": {"name": "shoot-info", "namespace": "kube-system"},
                                          "data": {"domain": "c-1.kyma.ondemand.com"}})
    agw.kube.create(resources.SERVICE, {"metadata": {"name": "istio-ingressgateway", "namespace": "istio-system"},
                                        "spec": {"type": "LoadBalancer", "ports": [{"name": "https", "port": 443}]}})
    agw.kube.patch_status(resources.SERVICE, "istio-ingressgateway",
                          {"loadBalancer": {"ingress": [{"ip": "198.51.100.7"}]}}, "istio-system")
    agw.kube.create(EXTERNAL_GATEWAY, docs["ExternalGateway"])
    key = Key("local", "shop", "partner")

    result = reconcile(key)
    assert result.outcome is ResultKind.REQUEUE_AFTER and result.requeue_after == 5
    domain = "external-partner.c-1.kyma.ondemand.com"
    dns, cert = get(agw, "DNSEntry", "istio-system", "partner-dns"), get(agw, "Certificate", "istio-system",
                                                                          "partner-cert")
    assert dns is not None and cert is not None
    assert dns["spec"] == {"dnsName": domain, "ttl": 600, "targets": ["198.51.100.7"]}
    assert dns["metadata"]["annotations"] == {"dns.gardener.cloud/class": "garden"}
    assert cert["spec"]["commonName"] == domain and cert["spec"]["secretName"] == "partner-tls"
    assert cert["spec"]["issuerRef"] == {"name": "garden"}
    status = eg(agw)["status"]
    assert status["state"] == "Processing" and "observedGeneration" not in status
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == {
        "Ready": ("Unknown", "Reconciling"), "DNSEntryReady": ("False", "DNSEntryPending"),
        "CertificateReady": ("False", "CertificatePending"), "GatewayConfigured": ("True", "Ready")}
    gateway = generated(agw, "partner")["gateway"]
    assert gateway is not None and gateway["spec"]["servers"][0]["hosts"] == ["api.partner.example", domain]
    assert gateway["spec"]["servers"][0]["tls"]["credentialName"] == "partner-tls"

    # Gardener: the DNS record is live, the certificate issued into the TLS Secret
    agw.kube.patch_status(reads.DNS_ENTRY, "partner-dns", {"state": "Ready"}, "istio-system")
    agw.kube.patch_status(reads.CERTIFICATE, "partner-cert", {"state": "Ready"}, "istio-system")
    agw.kube.create(resources.SECRET, {"metadata": {"name": "partner-tls", "namespace": "istio-system",
                                                    "labels": cert["spec"]["secretLabels"]},
                                       "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})
    result = reconcile(key)
    assert result.outcome is ResultKind.REQUEUE_AFTER and result.requeue_after == 3600
    status = eg(agw)["status"]
    assert (status["state"], status["observedGeneration"]) == ("Ready", 1)
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == {
        "Ready": ("True", "Ready"), "DNSEntryReady": ("True", "Ready"), "CertificateReady": ("True", "Ready"),
        "GatewayConfigured": ("True", "Ready")}

    agw.kube.delete(EXTERNAL_GATEWAY, "partner", "shop")
    assert reconcile(key).outcome is ResultKind.SUCCESS
    assert agw.kube.get(EXTERNAL_GATEWAY, "partner", "shop") is None
    assert all(o is None for o in generated(agw, "partner").values())
    assert get(agw, "DNSEntry", "istio-system", "partner-dns") is None
    assert get(agw, "Certificate", "istio-system", "partner-cert") is None
    assert get(agw, "Secret", "istio-system", "partner-tls") is None
