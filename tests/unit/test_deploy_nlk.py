"""deploy/components/nginx-nlk: with base it switches the NGINX edge to the ``nlk`` mode and grants the
watcher and the nginx workers every call that mode makes (base alone does not: the widening stays
opt-in), within the deployment's security rules, and every overlay renders and validates with it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.deploy import OVERLAYS, Rbac, by_kind, components, kubectl, render, render_with

pytestmark = pytest.mark.kubectl

SA = {"watcher": "reconcilery-watcher", "worker-nginx": "reconcilery-nginx"}


def call(component: str, verb: str, group: str, resource: str, namespace: str = "", name: str = "") -> dict[str, Any]:
    return {"component": component, "verb": verb, "group": group, "resource": resource, "subresource": "",
            "namespaced": bool(namespace), "namespace": namespace, "name": name}


#: Every call of the nlk mode, as kube.audit recorded them (RECONCILERY_KUBE_AUDIT_DIR) from a real
#: ``reconcilery watch`` and ``reconcilery worker -Q nginx`` with RECONCILERY_NGINX_MODES=nlk against the dev
#: API server and an NGINXaaS stand-in: ClusterIP (EndpointSlices), LoadBalancer, NodePort and ExternalName
#: Services in ``apps``, a wrong API key, then the right one, informers off and on, a Node added, a Service
#: deleted (its ownership record dropped). Events of a Service land in its namespace (``apps`` here).
CALLS = [
    # the watcher: the nlk registrations of tasks/nginx/watches.py (and the Nodes, base's)
    *(call("watcher", v, "", "services") for v in ("list", "watch")),
    *(call("watcher", v, "discovery.k8s.io", "endpointslices") for v in ("list", "watch")),
    *(call("watcher", v, "", "nodes") for v in ("list", "watch")),
    *(call("watcher", v, "", "configmaps", "nlk", "nlk-config") for v in ("list", "watch")),
    # the workers: informers (a cluster-wide one per kind, one for the ConfigMaps of nlk) or direct reads
    *(call("worker-nginx", v, "", "services") for v in ("list", "watch")),
    *(call("worker-nginx", v, "discovery.k8s.io", "endpointslices") for v in ("list", "watch")),
    *(call("worker-nginx", v, "", "nodes") for v in ("list", "watch")),
    *(call("worker-nginx", v, "", "configmaps", "nlk") for v in ("list", "watch")),
    call("worker-nginx", "get", "", "configmaps", "nlk", "nlk-config"),
    call("worker-nginx", "get", "", "configmaps", "nlk", "nginx-edge-upstreams"),
    # the ownership record (only the nlk mode runs: it lives in nlk)
    call("worker-nginx", "create", "", "configmaps", "nlk"),
    call("worker-nginx", "patch", "", "configmaps", "nlk", "nginx-edge-upstreams"),
    # UnsupportedServiceType on the ExternalName Service (repeated by another worker: get + update),
    # NginxPlusUnauthorized on nlk-config
    call("worker-nginx", "create", "", "events", "apps"),
    call("worker-nginx", "get", "", "events", "apps", "ext.3acb16fd85a2c302"),
    call("worker-nginx", "update", "", "events", "apps", "ext.3acb16fd85a2c302"),
    call("worker-nginx", "create", "", "events", "nlk"),
]


def _denied(objects: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    rbac = Rbac(objects)
    return [c for c in CALLS if not rbac.allows(SA[c["component"]], c, exact_namespace=True)]


def test_the_component_grants_every_call_and_base_alone_does_not() -> None:
    assert _denied(render_with("nginx-nlk")) == []
    missing = {(c["component"], c["verb"], c["resource"], c["namespace"]) for c in _denied(render("base"))}
    # what base lacks: EndpointSlices, Events, nlk's ConfigMaps (the workers' Services too: base has nginx-ingress's)
    assert {("watcher", "list", "endpointslices", ""), ("worker-nginx", "list", "services", ""),
            ("worker-nginx", "create", "events", "apps"), ("worker-nginx", "patch", "configmaps", "nlk"),
            ("watcher", "watch", "configmaps", "nlk")} <= missing


def test_the_pinned_calls_cover_the_watchers_registrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nlk registrations come from the code, so a new watch fails here until it is pinned (and granted)."""
    import config
    from tasks.nginx import watches

    data = by_kind(render_with("nginx-nlk"), "ConfigMap")["reconcilery-config"]["data"]
    for key, value in data.items():
        if key.startswith("RECONCILERY_NGINX_"):
            monkeypatch.setenv(key, value)
    config.reset()
    try:
        registrations = watches.registrations()
    finally:
        monkeypatch.undo()
        config.reset()
    assert {r.name for r in registrations} >= {watches.NLK_SERVICES, watches.NLK_SLICES, watches.NLK_CONFIG}
    for reg in registrations:
        selector = reg.field_selector or ""
        name = selector.split("=", 1)[1] if selector.startswith("metadata.name=") else ""
        for verb in ("list", "watch"):
            expected = call("watcher", verb, reg.resource.group, reg.resource.plural, reg.namespace or "", name)
            assert expected in CALLS, reg.name


def test_the_component_switches_watcher_and_workers_to_nlk_with_the_api_key_from_a_secret() -> None:
    from tasks.nginx.settings import EdgeSettings

    objs = render_with("nginx-nlk")
    data = by_kind(objs, "ConfigMap")["reconcilery-config"]["data"]
    names = EdgeSettings.load({k: v for k, v in data.items() if k.startswith("RECONCILERY_NGINX_")}).names
    assert names.modes == ("nlk",) and names.owned_namespace == names.nlk_namespace
    # the namespace the settings name is the one the Roles are bound in (and the component creates it)
    assert names.nlk_namespace in by_kind(objs, "Namespace")
    nlk_bindings = {(o["metadata"]["name"], o["metadata"]["namespace"]) for o in objs
                    if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] == names.nlk_namespace}
    assert nlk_bindings == {("reconcilery-watcher-config", "nlk"), ("reconcilery-nginx-settings", "nlk")}
    key_ref = {"secretKeyRef": {"name": "reconcilery-nginxaas-api-key", "key": "nginxaasApiKey"}}
    for name, dep in by_kind(objs, "Deployment").items():
        (container, *_) = dep["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("valueFrom", e.get("value")) for e in container.get("env") or []}
        # the key goes to the nginx workers only (the original's chart: env from its Secret's nginxaasApiKey)
        assert env.get("NGINXAAS_DATAPLANE_API_KEY") == (key_ref if name == "reconcilery-worker-nginx" else None)
        if name in ("reconcilery-watcher", "reconcilery-worker-nginx"):
            assert {"configMapRef": {"name": "reconcilery-config"}} in container["envFrom"], name
    assert by_kind(render("base"), "ConfigMap")["reconcilery-config"]["data"].get("RECONCILERY_NGINX_MODES") is None


def test_the_component_keeps_the_deployments_security_rules() -> None:
    from tests.unit.test_deploy import ESCALATING_VERBS, MESH_CA_SECRETS, SECRETS_BY_ANY_NAME

    base = render("base")
    objs = render_with("nginx-nlk")
    added = [o for o in objs if o not in base and o["kind"] in ("Role", "ClusterRole")]
    assert added
    for role in added:
        for rule in role["rules"]:
            assert not ESCALATING_VERBS & set(rule["verbs"]) and "*" not in rule["verbs"], rule
            assert "*" not in rule["resources"] and "*" not in rule["apiGroups"], rule
            assert "secrets" not in rule["resources"], rule  # the API key comes by env, never read via the API
            if role["kind"] == "ClusterRole":  # cluster-wide: reads, and Events
                assert set(rule["verbs"]) <= {"list", "watch"} or rule["resources"] == ["events"], rule
                assert "configmaps" not in rule["resources"], rule
    rbac = Rbac(objs)
    for sa in set(components(objs).values()):
        for resource in ("configmaps", "secrets"):
            for verb in ("get", "list"):
                assert not rbac.allows(sa, {"verb": verb, "group": "", "resource": resource, "namespaced": False,
                                            "namespace": "", "name": "anything"}), (sa, verb, resource)
        for name in MESH_CA_SECRETS:
            assert not rbac.allows(sa, {"verb": "get", "group": "", "resource": "secrets", "namespaced": True,
                                        "namespace": "istio-system", "name": name}, exact_namespace=True)
    # in nlk: ConfigMaps only, written only by name (create cannot be limited by name)
    nginx_nlk = [rule for ns, rule in rbac.rules(SA["worker-nginx"]) if ns == "nlk"]
    assert all(rule["resources"] == ["configmaps"] for rule in nginx_nlk)
    assert all(rule.get("resourceNames") or set(rule["verbs"]) <= {"list", "watch", "create"} for rule in nginx_nlk)
    unnamed = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in objs if r["kind"] == "Role"
               for rule in r["rules"] if "secrets" in rule["resources"] and not rule.get("resourceNames")
               and set(rule["verbs"]) - {"create"}}
    assert unnamed == set(SECRETS_BY_ANY_NAME)


def test_no_network_policy_is_needed() -> None:
    """The nlk mode's workers talk to the API server and the NGINXaaS dataplane API (HTTPS outside the
    pod network): base's policies admit both; the component adds none."""
    from tests.unit.test_deploy import _egress_allowed

    objs = render_with("nginx-nlk")
    assert by_kind(objs, "NetworkPolicy") == by_kind(render("base"), "NetworkPolicy")
    labels = by_kind(objs, "Deployment")["reconcilery-worker-nginx"]["spec"]["template"]["metadata"]["labels"]
    policies = by_kind(objs, "NetworkPolicy")
    assert _egress_allowed(policies, labels, "20.61.0.10", 443)  # an NGINXaaS deployment's dataplane API
    assert _egress_allowed(policies, labels, "10.250.0.1", 6443)  # the API server


def test_every_overlay_renders_with_both_components_and_what_they_change_validates() -> None:
    """Each overlay with externalgateway and nginx-nlk renders; the objects the components add or patch
    pass ``kubernetes-validate --strict`` (the overlays themselves are validated by scripts/test)."""
    validate = Path(kubectl()).with_name("kubernetes-validate")
    if not validate.exists():
        pytest.skip("kubernetes-validate not installed (dev extra)")
    changed: list[dict[str, Any]] = []
    for overlay in OVERLAYS:
        objs = render_with("externalgateway", "nginx-nlk", target=f"overlays/{overlay}")
        roles = by_kind(objs, "ClusterRole")
        assert {"reconcilery-nginx-nlk", "reconcilery-apigateway-externalgateway"} <= roles.keys(), overlay
        plain = render_with(target=f"overlays/{overlay}")
        changed += [o for o in objs if o not in plain and o not in changed]
    assert {o["kind"] for o in changed} >= {"ConfigMap", "Deployment", "Namespace", "Role", "ClusterRole"}
    proc = subprocess.run([str(validate), "--strict", "--quiet", "--no-warn", "-k", "1.37.0", "-"],
                          input=yaml.safe_dump_all(changed), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
