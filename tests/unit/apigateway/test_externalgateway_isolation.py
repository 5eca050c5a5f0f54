"""Issue 27: an ExternalGateway uses a CA Secret of another namespace only where that Namespace allows
it, learns nothing about other Secrets, and cannot claim a host of another Gateway or the Kyma domain.

Attacker: admin in ``shop`` only, writes ExternalGateways naming Secrets of other namespaces (to learn
whether they exist and their keys, or to copy one into ``istio-system``) and external domains that
other Gateways serve (to take their SNI traffic over on the shared ingress gateway).
"""

from __future__ import annotations

from typing import Any

import pytest

from informers.store import Stores
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway import watches
from tasks.apigateway.externalgateway.plan import ca_secret_readable, hosts_overlap, plan
from tasks.apigateway.namespaces import ALLOW_EXTERNALGATEWAYS
from watchers.engine import WatchEvent
from workers.controller import Key

from .test_externalgateway import CA, NOW, SHOOT, cluster, conditions, egw, secret

FOREIGN = {"name": "signing", "namespace": "bank"}
UNAVAILABLE = ("CA secret bank/signing referenced by spec.caSecretRef cannot be used: a Secret of another "
               "namespace must exist with the CA under its only key or 'ca.crt', and its Namespace must list "
               f'"shop" in the annotation {ALLOW_EXTERNALGATEWAYS}')


def namespace(name: str, allow: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if allow is not None:
        meta["annotations"] = {ALLOW_EXTERNALGATEWAYS: allow}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def gateway(hosts: list[str], name: str = "web", ns: str = "team-b", labels: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": ns, **({"labels": labels} if labels else {})},
            "spec": {"servers": [{"port": {"number": 443, "name": "https", "protocol": "HTTPS"}, "hosts": hosts}]}}


# --- caSecretRef ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "ns"), [
    (secret(name="signing", namespace="bank"), None),  # exists, one key, Namespace not found
    (secret(name="signing", namespace="bank"), namespace("bank")),  # exists, not allowed
    (secret({"tls.key": "K", "tls.crt": "C"}, name="signing", namespace="bank"), namespace("bank", "other")),
    ({"metadata": {"name": "signing", "namespace": "bank"}, "data": {}}, namespace("bank")),  # empty
    (None, namespace("bank")),  # missing
    (None, namespace("bank", "shop")),  # allowed, missing
    (secret({"tls.key": "K", "tls.crt": "C"}, name="signing", namespace="bank"), namespace("bank", "*")),  # keys
])
def test_a_foreign_ca_secret_gives_one_answer_whatever_it_is_and_is_never_copied(
        source: dict[str, Any] | None, ns: dict[str, Any] | None) -> None:
    p = plan(egw(caSecretRef=FOREIGN), cluster(ca_secret=source, ca_namespace=ns), NOW)
    assert p.state == "Error"
    assert p.description == f"failed to reconcile CA Secret: {UNAVAILABLE}"
    assert conditions(p)["GatewayConfigured"] == ("False", "CASecretUnavailable", UNAVAILABLE)
    assert conditions(p)["Ready"] == ("False", "CASecretUnavailable", p.description)
    assert p.outcome.writes == () and p.desired == ()  # nothing in istio-system, no Gateway
    assert p.outcome.event is not None and p.outcome.event.message == p.description


@pytest.mark.parametrize("allow", ["shop", "*", "team-a, shop"])
def test_a_namespace_that_allows_it_lends_its_ca(allow: str) -> None:
    source = secret(name="signing", namespace="bank")
    p = plan(egw(caSecretRef=FOREIGN), cluster(ca_secret=source, ca_namespace=namespace("bank", allow)), NOW)
    assert p.state == "Ready", p.description
    (copied,) = [o for o in p.desired if o["kind"] == "Secret"]
    assert copied["metadata"]["namespace"] == "istio-system" and copied["data"] == {"ca.crt": CA}


def test_a_withdrawn_permission_deletes_the_copied_ca_and_writes_no_gateway() -> None:
    source = secret(name="signing", namespace="bank")
    ready = plan(egw(caSecretRef=FOREIGN), cluster(ca_secret=source, ca_namespace=namespace("bank", "shop")), NOW)
    existing = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o for o in ready.desired}
    p = plan(egw(caSecretRef=FOREIGN), cluster(ca_secret=None, ca_namespace=namespace("bank"), existing=existing),
             NOW)
    assert p.state == "Error" and p.description == f"failed to reconcile CA Secret: {UNAVAILABLE}"
    assert [w.describe() for w in p.outcome.writes] == ["delete Secret istio-system/partner-tls-cacert"]
    # allowed but gone (or broken): the same answer, and the copy stays (as for a Secret of its own namespace)
    kept = plan(egw(caSecretRef=FOREIGN), cluster(ca_secret=None, ca_namespace=namespace("bank", "shop"),
                                                  existing=existing), NOW)
    assert kept.description == p.description and kept.outcome.writes == ()


def test_the_controller_reads_a_foreign_secret_only_where_it_is_allowed() -> None:
    eg = m.ExternalGateway.of(egw(caSecretRef=FOREIGN))
    assert not ca_secret_readable(eg, None)
    assert not ca_secret_readable(eg, namespace("bank"))
    assert not ca_secret_readable(eg, namespace("elsewhere", "*"))  # another Namespace's word
    assert ca_secret_readable(eg, namespace("bank", "shop"))
    assert ca_secret_readable(m.ExternalGateway.of(egw()), None)  # its own namespace


def test_own_namespace_keeps_the_originals_detailed_messages() -> None:
    p = plan(egw(), cluster(ca_secret=secret({"tls.key": "K", "tls.crt": "C"})), NOW)
    assert conditions(p)["GatewayConfigured"][1] == "CASecretKeyAmbiguous"


# --- externalDomain -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("domain", "hosts"), [
    ("api.partner.example", ["api.partner.example"]),
    ("api.partner.example", ["team-b/api.partner.example"]),  # Istio's namespace/host form
    ("api.partner.example", ["*.partner.example"]),  # under another Gateway's wildcard
    ("*.partner.example", ["shop.partner.example"]),  # a wildcard over another Gateway's host
    ("API.partner.example", ["api.partner.example."]),
])
def test_a_host_of_another_gateway_is_refused(domain: str, hosts: list[str]) -> None:
    p = plan(egw(externalDomain=domain), cluster(gateways=(gateway(hosts),)), NOW)
    assert p.state == "Error" and p.outcome.writes == ()
    assert p.description == f'externalDomain "{domain}" is a host of another Gateway'  # names no Gateway
    assert conditions(p)["Ready"] == ("False", "ExternalDomainConflict", p.description)


@pytest.mark.parametrize("hosts", [["*"], ["team-b/*"], ["other.example"], ["partner.example"], []])
def test_gateways_that_claim_no_such_host_leave_it_free(hosts: list[str]) -> None:
    assert plan(egw(), cluster(gateways=(gateway(hosts),)), NOW).state == "Ready"


def test_its_own_gateway_and_other_external_gateways_gateways_are_judged_by_age_not_here() -> None:
    own = gateway(["api.partner.example"], "partner-gw", "shop",
                  {m.OWNER_NAME_LABEL: "partner", m.OWNER_NAMESPACE_LABEL: "shop"})
    assert plan(egw(), cluster(gateways=(own,)), NOW).state == "Ready"
    older = egw("first", "team-a", created="2025-01-01T00:00:00Z", externalDomain="*.partner.example")
    theirs = gateway(["*.partner.example"], "first-gw", "team-a",
                     {m.OWNER_NAME_LABEL: "first", m.OWNER_NAMESPACE_LABEL: "team-a"})
    p = plan(egw(), cluster(gateways=(own, theirs), external_gateways=(older, egw())), NOW)
    # overlap; another namespace's ExternalGateway is not named
    assert p.state == "Error" and p.description.endswith("is also used by an ExternalGateway of another namespace")
    assert "team-a" not in p.description


@pytest.mark.parametrize(("domain", "shoot", "kyma"), [
    ("orders.local.kyma.dev", None, "local.kyma.dev"),
    ("local.kyma.dev", None, "local.kyma.dev"),
    ("*.kyma.dev", None, "local.kyma.dev"),
    ("ext.c-1.kyma.ondemand.com", SHOOT, "c-1.kyma.ondemand.com"),
    ("*.c-1.kyma.ondemand.com", SHOOT, "c-1.kyma.ondemand.com"),
])
def test_the_kyma_domain_is_refused(domain: str, shoot: dict[str, Any] | None, kyma: str) -> None:
    p = plan(egw(externalDomain=domain), cluster(shoot_info=shoot), NOW)
    assert p.state == "Error" and p.outcome.writes == ()
    assert p.description == f'externalDomain "{domain}" is within the Kyma domain "{kyma}"'
    assert conditions(p)["Ready"][1] == "ExternalDomainConflict"


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("a.example", "a.example", True), ("*.example", "a.example", True), ("*.example", "*.b.example", True),
    ("*.example", "example", False), ("a.example", "b.example", False), ("*", "a.example", False),
    ("ns/a.example", "A.EXAMPLE", True), ("", "", False), ("*.a.example", "b.example", False),
])
def test_hosts_overlap(a: str, b: str, expected: bool) -> None:
    assert hosts_overlap(a, b) is expected and hosts_overlap(b, a) is expected


def test_a_namespace_granting_or_withdrawing_enqueues_the_external_gateways_using_its_secrets() -> None:
    stores = Stores()
    store = stores.add(watches.EXTERNAL_GATEWAYS)
    for obj in (egw(caSecretRef=FOREIGN), egw("own", "bank", caSecretRef=FOREIGN), egw("other")):
        store.apply("ADDED", obj)
    bare, granted = namespace("bank"), namespace("bank", "shop")

    def keys(type_: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> list[Any]:
        return list(watches.map_namespace(WatchEvent(type_, new, old, "local"), stores))

    expected = [("externalgateway", Key("local", "shop", "partner"))]
    assert keys("MODIFIED", granted, bare) == expected
    assert keys("MODIFIED", bare, granted) == expected
    assert keys("ADDED", bare) == expected
    relabelled = {**granted, "metadata": {**granted["metadata"], "labels": {"x": "y"}}}
    assert keys("MODIFIED", relabelled, granted) == []
    assert list(watches.map_namespace(WatchEvent("ADDED", bare, None, "local"), Stores())) == []
