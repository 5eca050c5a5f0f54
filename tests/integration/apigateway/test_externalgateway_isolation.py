"""Issue 27 against the dev API server: an ExternalGateway of ``shop`` naming a CA Secret of ``bank``
gets one answer whatever that Secret is, and nothing is copied into istio-system until ``bank`` allows
``shop``; an ``externalDomain`` another Gateway serves (or the Kyma domain's) is refused."""

from __future__ import annotations

import copy

import pytest

from kube import resources
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway.controller import EXTERNAL_GATEWAY, KINDS, reconcile
from tests.integration.apigateway.conftest import AGW
from tests.integration.apigateway.test_externalgateway import example_docs
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

ALLOW = "gateway.kyma-project.io/allow-externalgateways-from"  # tasks.apigateway.namespaces.ALLOW_EXTERNALGATEWAYS


def status(agw: AGW, name: str) -> dict:
    obj = agw.kube.get(EXTERNAL_GATEWAY, name, "shop")
    assert obj is not None
    return obj["status"]


def copied(agw: AGW, name: str) -> dict | None:
    return agw.kube.get(KINDS["Secret"], m.Names.of(name).ca_secret, "istio-system")


def test_foreign_ca_secrets_and_taken_domains(agw: AGW) -> None:
    docs = example_docs()
    agw.kube.create(resources.CONFIGMAP, docs["ConfigMap"])
    agw.kube.create(resources.NAMESPACE, {"metadata": {"name": "bank"}})
    victim = copy.deepcopy(docs["Secret"])
    victim["metadata"] = {"name": "signing", "namespace": "bank"}
    agw.kube.create(resources.SECRET, victim)
    answers = []
    for name, ref in (("probe-real", "signing"), ("probe-none", "no-such-secret")):
        attack = copy.deepcopy(docs["ExternalGateway"])
        attack["metadata"] = {"name": name, "namespace": "shop"}
        attack["spec"]["externalDomain"] = f"{name}.partner.example"
        attack["spec"]["caSecretRef"] = {"name": ref, "namespace": "bank"}
        agw.kube.create(EXTERNAL_GATEWAY, attack)
        assert reconcile(Key("local", "shop", name)).outcome is ResultKind.ERROR
        answers.append(status(agw, name)["description"].replace(ref, "<ref>"))
        assert copied(agw, name) is None
    assert answers[0] == answers[1] and "cannot be used" in answers[0]  # exists or not: the same answer

    bank = agw.kube.get(resources.NAMESPACE, "bank")
    assert bank is not None
    bank["metadata"]["annotations"] = {ALLOW: "shop"}
    agw.kube.replace(resources.NAMESPACE, bank)
    assert reconcile(Key("local", "shop", "probe-real")).outcome is ResultKind.REQUEUE_AFTER
    ca = copied(agw, "probe-real")
    assert status(agw, "probe-real")["state"] == "Ready" and ca is not None and ca["data"]["ca.crt"]

    # kyma-system/kyma-gateway serves *.local.kyma.dev (examples/apigateway/00-cluster.yaml); another
    # team's Gateway serves www.partner.example
    agw.kube.create(KINDS["Gateway"], {
        "apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
        "metadata": {"name": "www", "namespace": "kyma-system"}, "spec": {"selector": {"istio": "ingressgateway"},
        "servers": [{"port": {"number": 443, "name": "https", "protocol": "HTTPS"}, "hosts": ["www.partner.example"],
                     "tls": {"mode": "SIMPLE", "credentialName": "www"}}]}})
    for name, domain, message in (("hijack", "orders.local.kyma.dev", "is within the Kyma domain"),
                                  ("twin", "www.partner.example", "is a host of another Gateway")):
        attack = copy.deepcopy(docs["ExternalGateway"])
        attack["metadata"] = {"name": name, "namespace": "shop"}
        attack["spec"]["externalDomain"] = domain
        agw.kube.create(EXTERNAL_GATEWAY, attack)
        assert reconcile(Key("local", "shop", name)).outcome is ResultKind.ERROR
        assert message in status(agw, name)["description"]
        assert copied(agw, name) is None
