"""deploy/, rendered by ``kubectl kustomize``: what each overlay must contain for Reconcilery to run
in a cluster (scripts/test also validates every overlay with kubernetes-validate --strict)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from informers.reader import Reads
from tasks.apigateway import reads as apigateway_reads
from tasks.nginx import reads as nginx_reads
from tests.fixtures.admission import admission_create, admission_denials, admission_request, apigateway_creates
from tests.fixtures.deploy import DEPLOY, OVERLAYS, ROOT, Rbac, by_kind, components, render, render_with
from workers import domains

pytestmark = pytest.mark.kubectl

#: Every installed domain's worker queue (read from the entry points, not a cached registry a test replaced).
QUEUES = tuple(dict.fromkeys(q for d in domains.discover() for q in d.queues))


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["spec"]["template"]["spec"]["containers"])


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def test_the_crd_copies_equal_the_package_data() -> None:
    packaged = {p.name: p.read_bytes() for p in ROOT.glob("tasks/*/crds/*.yaml")}
    copies = {p.name: p.read_bytes() for p in (DEPLOY / "base" / "crds").glob("*.yaml")
              if p.name != "kustomization.yaml"}
    assert copies == packaged, "deploy/base/crds differs from tasks/*/crds: run scripts/sync-crds"
    listed = yaml.safe_load((DEPLOY / "base" / "crds" / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(packaged)


def test_the_overlays() -> None:
    assert OVERLAYS == ["dev", "production", "production-sentinel", "production-tls"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_queue_has_a_worker_with_meaningful_probes_and_a_pdb(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    deployments, pdbs = by_kind(objs, "Deployment"), by_kind(objs, "PodDisruptionBudget")
    for queue in QUEUES:
        name = f"reconcilery-worker-{queue}"
        (worker,) = _containers(deployments[name])
        assert worker["args"][:3] == ["worker", "--queues", queue]
        assert worker["livenessProbe"]["exec"]["command"][:3] == ["reconcilery", "probe", "worker"]
        assert "--ping" in worker["readinessProbe"]["exec"]["command"]
        assert pdbs[name]["spec"]["selector"]["matchLabels"] == deployments[name]["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_skr_pool_runs_greenlets_with_a_read_budget_sized_for_them(overlay: str) -> None:
    """The cloud-skr pool is the fleet's gevent pool (docs/cloud.md): each connect's read budget is the
    pod's memory shared by as many connects as the process runs, and the rotation's width is whole processes of it."""
    deployment = by_kind(render(f"overlays/{overlay}"), "Deployment")["reconcilery-worker-cloud-skr"]
    (worker,) = _containers(deployment)
    args = worker["args"]
    assert args[args.index("--pool") + 1] == "gevent"
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["RECONCILERY_REMOTE_CONNECTS"] == args[args.index("--concurrency") + 1]
    # replicas are the autoscaler's in the overlays: the rotation's width counts whole processes
    assert int(env["RECONCILERY_CLOUD_CYCLIC_WORKERS"]) % int(env["RECONCILERY_REMOTE_CONNECTS"]) == 0


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_non_root_read_only_and_bounded(overlay: str) -> None:
    for kind in ("Deployment", "StatefulSet"):
        for name, obj in by_kind(render(f"overlays/{overlay}"), kind).items():
            pod = obj["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True, name
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
            assert obj["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "reconcilery"
            for c in pod["containers"]:
                sc = c["securityContext"]
                assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, name
                assert sc["capabilities"] == {"drop": ["ALL"]}, name
                assert c["resources"]["requests"] and c["resources"]["limits"]["memory"], name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_process_finds_redis_with_its_password(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    config = by_kind(objs, "ConfigMap")["reconcilery-config"]["data"]
    url = config["RECONCILERY_REDIS_URL"]
    services = by_kind(objs, "Service")
    hosts = [part.split("://", 1)[1].split("/", 1)[0].split(":")[0] for part in url.split(";")]
    for host in hosts:  # <service>.reconcilery.svc, or <pod>.<headless service>.reconcilery.svc
        service = host.removesuffix(".reconcilery.svc").split(".")[-1]
        assert service in services, f"{url}: no Service {service}"
    for name, dep in by_kind(objs, "Deployment").items():
        for c in _containers(dep):
            if c["image"].endswith("redis") or "redis" in c["image"].split("/")[-1].split(":")[0]:
                continue
            assert {"configMapRef": {"name": "reconcilery-config"}} in c.get("envFrom", []), name
            # the listener and Flower log in as ACL users of their own (test_redis_acl_users...)
            user = _env(c).get("RECONCILERY_REDIS_USERNAME")
            key = f"{user}-password" if user else "password"
            assert _env(c)["RECONCILERY_REDIS_PASSWORD"] == {"secretKeyRef": {"name": "reconcilery-redis",
                                                                              "key": key}}, name


def test_redis_persists_with_aof_behind_a_password_and_a_network_policy() -> None:
    objs = render("base")
    conf = by_kind(objs, "ConfigMap")["reconcilery-redis"]["data"]["redis.conf"].splitlines()
    assert "appendonly yes" in conf and "appendfsync everysec" in conf and "maxmemory-policy noeviction" in conf
    (maxmemory,) = [line for line in conf if line.startswith("maxmemory ")]
    assert maxmemory.split()[1].endswith("mb") and int(maxmemory.split()[1][:-2]) < 1024  # below the 1Gi limit
    sts = by_kind(objs, "StatefulSet")["reconcilery-redis"]
    (redis,) = _containers(sts)
    assert "--requirepass" in redis["command"] and sts["spec"]["volumeClaimTemplates"]
    policy = by_kind(objs, "NetworkPolicy")["reconcilery-redis"]
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": "reconcilery"}}}]


def test_the_watcher_is_leader_elected_with_two_replicas() -> None:
    objs = render("base")
    dep = by_kind(objs, "Deployment")["reconcilery-watcher"]
    (c,) = _containers(dep)
    assert dep["spec"]["replicas"] == 2 and "--leader-elect" in c["args"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/livez"
    rbac = Rbac(objs)
    for verb in ("create", "get", "update"):
        assert rbac.allows("reconcilery-watcher", {"verb": verb, "group": "coordination.k8s.io", "resource": "leases",
                                                   "namespaced": True, "namespace": "reconcilery",
                                                   "name": "reconcilery-watch"}, exact_namespace=True)


def test_the_watcher_may_list_and_watch_every_registration() -> None:
    from reconcilery.cli import load_registrations

    rbac = Rbac(render("base"))
    for reg in load_registrations():
        selector = reg.field_selector or ""
        name = selector.split("=", 1)[1] if selector.startswith("metadata.name=") and "," not in selector else ""
        for verb in ("list", "watch"):
            call = {"verb": verb, "group": reg.resource.group, "resource": reg.resource.plural,
                    "namespaced": reg.namespace is not None, "namespace": reg.namespace or "", "name": name}
            assert rbac.allows("reconcilery-watcher", call, exact_namespace=True), (reg.name, verb)


#: Where the base deployment's workers run the informers of their domain's per-namespace cached kinds
#: that register no objects (the nginx edge's nkl mode: its settings namespace and watched namespace;
#: the nlk mode's cluster-wide Services and EndpointSlices are the nginx-nlk component's, test_deploy_nlk.py).
_INFORMER_NAMESPACES = {"reconcilery-nginx": {"configmaps": ("nkl",), "services": ("nginx-ingress",)}}


@pytest.mark.parametrize(("account", "reads"), [("reconcilery-apigateway", apigateway_reads.READS),
                                                ("reconcilery-nginx", nginx_reads.READS)])
def test_workers_may_list_and_watch_every_kind_their_domain_reads_from_informers(account: str, reads: Reads) -> None:
    """An informer lists and watches: every kind a domain registers as cached (``READS``,
    :mod:`informers.reader`) is granted to its workers where the informer runs: the namespaces of its
    registered objects, the namespaces the domain reads it in, or cluster-wide."""
    namespaces = _INFORMER_NAMESPACES.get(account, {})
    rbac = Rbac(render("base"))
    skipped = {"endpointslices"} if account == "reconcilery-nginx" else set()  # nlk only
    for rule in reads.cached:
        res = rule.resource
        if res.plural in skipped:
            continue
        if rule.objects is not None:
            where: tuple[str | None, ...] = tuple(sorted({ns for ns, _ in rule.objects}))
        elif rule.per_namespace and res.plural in namespaces:
            where = namespaces[res.plural]
        else:
            where = (None,)  # one cluster-wide informer (or one per namespace of any namespace)
        for namespace in where:
            for verb in ("list", "watch"):
                call = {"verb": verb, "group": res.group, "resource": res.plural, "namespaced": namespace is not None,
                        "namespace": namespace or "", "name": ""}
                assert rbac.allows(account, call, exact_namespace=True), (res.plural, namespace, verb)


@pytest.mark.parametrize("modes", ["nkl", "nlk", "nkl,nlk"])
def test_the_watcher_reads_configmaps_and_secrets_only_by_name(modes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ConfigMaps and Secrets are watched one object at a time (a namespace and the field selector
    ``metadata.name=<name>``), so deploy/ grants them by ``resourceNames`` in that namespace only, and
    nothing grants the watcher a list or watch of them without a name (a whole-run audit once recorded
    one: the settings that name them must be Kubernetes names, tests/unit/nginx/test_settings.py)."""
    import config
    from reconcilery.cli import load_registrations

    monkeypatch.setenv("RECONCILERY_NGINX_MODES", modes)
    config.reset()
    try:
        registrations = [r for r in load_registrations() if r.resource.plural in ("configmaps", "secrets")]
    finally:
        monkeypatch.undo()
        config.reset()
    assert registrations
    rbac = Rbac(render("base"))
    for reg in registrations:
        assert reg.namespace, reg.name
        selector = reg.field_selector or ""
        assert selector.startswith("metadata.name=") and "," not in selector, reg.name
        name = selector.split("=", 1)[1]
        assert name, reg.name
        for verb in ("list", "watch"):
            call = {"verb": verb, "group": "", "resource": reg.resource.plural, "namespaced": True,
                    "namespace": reg.namespace, "name": name}
            if reg.namespace != "nlk":  # the nlk ConfigMap's grant is the nginx-nlk component's (test_deploy_nlk.py)
                assert rbac.allows("reconcilery-watcher", call, exact_namespace=True), (reg.name, verb)
            assert not rbac.allows("reconcilery-watcher", {**call, "name": ""}), (reg.name, verb)
            assert not rbac.allows("reconcilery-watcher", {**call, "name": "other"}), (reg.name, verb)


def test_beat_is_single_and_flower_is_internal_behind_basic_auth() -> None:
    objs = render("base")
    deps = by_kind(objs, "Deployment")
    assert deps["reconcilery-beat"]["spec"]["replicas"] == 1
    assert by_kind(objs, "Service")["reconcilery-flower"]["spec"]["type"] == "ClusterIP"
    env = _env(_containers(deps["reconcilery-flower"])[0])
    assert env["FLOWER_BASIC_AUTH"] == "$(FLOWER_USERNAME):$(FLOWER_PASSWORD)"
    assert env["FLOWER_PASSWORD"] == {"secretKeyRef": {"name": "reconcilery-flower", "key": "password"}}


def test_the_webhook_has_two_replicas_a_pdb_and_its_configuration() -> None:
    from tasks.snatch.controller import WEBHOOK_CONFIG_NAME
    from tasks.snatch.mutate import MANAGED_BY_LABEL
    from tasks.snatch.webhook import MUTATE_PATH

    objs = render("base")
    dep = by_kind(objs, "Deployment")["reconcilery-webhook"]
    assert dep["spec"]["replicas"] == 2 and "reconcilery-webhook" in by_kind(objs, "PodDisruptionBudget")
    (hook,) = by_kind(objs, "MutatingWebhookConfiguration")[WEBHOOK_CONFIG_NAME]["webhooks"]
    assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None" and hook["timeoutSeconds"] <= 5
    assert hook["namespaceSelector"]["matchLabels"] == {MANAGED_BY_LABEL: "kyma"}
    ref = hook["clientConfig"]["service"]
    assert ref["path"] == MUTATE_PATH and ref["namespace"] == "reconcilery"
    service = by_kind(objs, "Service")[ref["name"]]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (expr,) = hook["objectSelector"]["matchExpressions"]
    assert pod_labels[expr["key"]] in expr["values"] and expr["operator"] == "NotIn"
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    ca_secret = by_kind(objs, "ConfigMap")["reconcilery-config"]["data"]["RECONCILERY_SNATCH_CA_SECRET"]
    assert volumes["certificates"]["secret"]["secretName"] == ca_secret.split("/")[1]


def test_production_scales_workers_on_their_ready_lists_with_keda() -> None:
    for overlay, trigger in (("production", "redis"), ("production-sentinel", "redis-sentinel")):
        objs = render(f"overlays/{overlay}")
        scaled = by_kind(objs, "ScaledObject")
        auth = by_kind(objs, "TriggerAuthentication")["reconcilery-redis"]
        assert auth["spec"]["secretTargetRef"][0] == {"parameter": "password", "name": "reconcilery-redis",
                                                      "key": "password"}
        for queue in QUEUES:
            so = scaled[f"reconcilery-worker-{queue}"]
            assert so["spec"]["scaleTargetRef"]["name"] == f"reconcilery-worker-{queue}"
            assert so["spec"]["minReplicaCount"] >= 2  # the PDB keeps one while a node drains
            lists = {t["metadata"]["listName"] for t in so["spec"]["triggers"]}
            assert lists == {f"rq:{queue}:ready", f"rq:{queue}:ready-resync"}
            assert all(t["type"] == trigger and t["authenticationRef"]["name"] == "reconcilery-redis"
                       for t in so["spec"]["triggers"])
        assert not by_kind(objs, "HorizontalPodAutoscaler")


def test_dev_scales_workers_on_cpu_without_keda() -> None:
    objs = render("overlays/dev")
    hpas = by_kind(objs, "HorizontalPodAutoscaler")
    assert {h["spec"]["scaleTargetRef"]["name"] for h in hpas.values()} == {
        f"reconcilery-worker-{q}" for q in QUEUES}
    assert not by_kind(objs, "ScaledObject")


def test_production_certificates_caBundle_injection_and_monitoring() -> None:
    objs = render("overlays/production")
    cert = by_kind(objs, "Certificate")["kim-snatch-webhook"]
    assert cert["spec"]["secretName"] == "kim-snatch-certificates"
    assert "kim-snatch-webhook-service.reconcilery.svc" in cert["spec"]["dnsNames"]
    (mwc,) = by_kind(objs, "MutatingWebhookConfiguration").values()
    assert mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "reconcilery/kim-snatch-webhook"
    monitors = by_kind(objs, "ServiceMonitor")
    services = by_kind(objs, "Service")
    for monitor in monitors.values():  # each selects a Service with the named port
        sel = monitor["spec"]["selector"]["matchLabels"]
        matching = [s for s in services.values() if sel.items() <= (s["metadata"].get("labels") or {}).items()]
        assert matching, monitor["metadata"]["name"]
        ports = {p["name"] for s in matching for p in s["spec"]["ports"]}
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports
    alerts = {r["alert"] for g in by_kind(objs, "PrometheusRule")["reconcilery"]["spec"]["groups"]
              for r in g["rules"]}
    assert {"ReconcileryQueueGrowing", "ReconcileryReconcilesFailing", "ReconcileryLeasesLost",
            "ReconcileryWatchSilent"} <= alerts


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_production_overlays_use_the_monitoring_component(overlay: str) -> None:
    """deploy/components/monitoring: the alerts of its plain rules file as the PrometheusRule and every
    dashboard of its dashboards/ in a ConfigMap the Grafana sidecar loads (tests/unit/test_monitoring.py
    checks the files themselves); dev has none of it, and takes the component as a component."""
    component = DEPLOY / "components" / "monitoring"
    overlay_objs = render(f"overlays/{overlay}")
    if not overlay.startswith("production"):
        assert not by_kind(overlay_objs, "PrometheusRule") and "reconcilery-dashboards" not in by_kind(
            overlay_objs, "ConfigMap")
        overlay_objs = render_with("monitoring", target=f"overlays/{overlay}")
    rules = yaml.safe_load((component / "rules" / "reconcilery.rules.yaml").read_text())
    assert by_kind(overlay_objs, "PrometheusRule")["reconcilery"]["spec"]["groups"] == rules["groups"]
    dashboards = by_kind(overlay_objs, "ConfigMap")["reconcilery-dashboards"]
    assert dashboards["metadata"]["namespace"] == "reconcilery"
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
    files = {p.name: json.loads(p.read_text()) for p in (component / "dashboards").glob("*.json")}
    assert {name: json.loads(text) for name, text in dashboards["data"].items()} == files
    assert set(by_kind(overlay_objs, "ServiceMonitor")) == {"reconcilery-workers", "reconcilery-watcher",
                                                            "reconcilery-webhook", "reconcilery-flower"}


def test_every_component_runs_under_its_own_service_account() -> None:
    objs = render("base")
    comps = components(objs)
    assert set(comps) >= {"watcher", "webhook", "beat", *(f"worker-{q}" for q in QUEUES)}
    assert len(set(comps.values())) == len(comps)
    sas = by_kind(objs, "ServiceAccount")
    assert set(comps.values()) <= set(sas)


def test_events_can_be_counted_not_only_created() -> None:
    # the regression of issue 12: a repeated Event is a get + update of the existing one
    rbac = Rbac(render("base"))
    for verb in ("create", "get", "update"):
        assert rbac.allows("reconcilery-apigateway", {"verb": verb, "group": "", "resource": "events",
                                                      "namespaced": True, "namespace": "shop", "name": "x"})
        # a connect refused for passing the read limits records a Warning Event on the SkrStatus
        assert rbac.allows("reconcilery-cloud-skr", {"verb": verb, "group": "", "resource": "events",
                                                     "namespaced": True, "namespace": "kcp-system", "name": "x"},
                           exact_namespace=True)


def test_no_component_reads_every_configmap_or_secret() -> None:
    rbac = Rbac(render("base"))
    for sa in set(components(render("base")).values()):
        for resource in ("configmaps", "secrets"):
            for verb in ("get", "list"):
                call = {"verb": verb, "group": "", "resource": resource, "namespaced": False, "namespace": "",
                        "name": "anything"}
                assert not rbac.allows(sa, call), (sa, verb, resource)


def test_the_skr_listener_runs_with_probes_a_service_a_pdb_and_no_api_access() -> None:
    objs = render("base")
    dep = by_kind(objs, "Deployment")["reconcilery-skr-listener"]
    (c,) = _containers(dep)
    assert c["args"][0] == "skr-listener" and c["args"][c["args"].index("--port") + 1] == "8083"
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"name": "http", "containerPort": 8083} in c["ports"] and dep["spec"]["replicas"] >= 2
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    service = by_kind(objs, "Service")["reconcilery-skr-listener"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [{"name": "http", "port": 8083, "targetPort": "http"}]
    pdb = by_kind(objs, "PodDisruptionBudget")["reconcilery-skr-listener"]
    assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    # least privilege: it only talks to Redis, so no rules and no token
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "reconcilery-skr-listener" and pod["automountServiceAccountToken"] is False
    assert Rbac(objs).rules("reconcilery-skr-listener") == []


def test_the_listener_answers_its_probe_paths() -> None:
    """The probe paths of deploy/ are served by the listener (no Redis needed for them)."""
    import urllib.request

    from tasks.cloud.skr.listener import Listener
    from tests.fixtures.processes import free_port
    from webhooks import ThreadedListener

    port = free_port()
    listener = ThreadedListener(Listener(lambda kyma: "accepted", "127.0.0.1", port)).start()
    try:
        for path in ("/healthz", "/readyz"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                assert answer.status == 200
    finally:
        listener.stop()


def _listener_path(objs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The objects of the production event path to the skr-listener, by role."""
    certificates = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs if o["kind"] == "Certificate"}
    (rule,) = [o for o in objs if o["kind"] == "DestinationRule"]
    (watcher,) = [o for o in objs if o["kind"] == "Watcher"]
    dep = by_kind(objs, "Deployment")["reconcilery-skr-listener"]
    return {"serving": certificates[("reconcilery", "reconcilery-skr-listener")],
            "gateway": certificates[("istio-system", "reconcilery-skr-listener-gateway")],
            "ca": certificates[("cert-manager", "reconcilery-skr-listener-ca")],
            "rule": rule, "watcher": watcher, "deployment": dep,
            "service": by_kind(objs, "Service")[dep["metadata"]["name"]],
            "issuers": by_kind(objs, "ClusterIssuer")}


def test_the_production_listener_serves_mtls_with_cert_managers_certificate() -> None:
    objs = render("overlays/production")
    path = _listener_path(objs)
    dep = path["deployment"]
    (c,) = _containers(dep)
    env = _env(c)
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    certificate = path["serving"]
    assert volumes["listener-tls"]["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert env["RECONCILERY_CLOUD_LISTENER_CERT_FILE"] == f"{mounts['listener-tls']}/tls.crt"
    assert env["RECONCILERY_CLOUD_LISTENER_KEY_FILE"] == f"{mounts['listener-tls']}/tls.key"
    # client certificates are verified against the CA that issued the listener's own (and the gateway's)
    assert env["RECONCILERY_CLOUD_LISTENER_CLIENT_CA_FILE"] == f"{mounts['listener-tls']}/ca.crt"
    assert env["RECONCILERY_CLOUD_LISTENER_TRUST_XFCC"] == "true"  # behind the KCP's Istio gateway
    # the key is readable by the listener's user only through its group
    assert dep["spec"]["template"]["spec"]["securityContext"]["fsGroup"] == 65532
    assert volumes["listener-tls"]["secret"]["defaultMode"] == 0o440
    assert "reconcilery-skr-listener.reconcilery.svc" in certificate["spec"]["dnsNames"]
    # no sidecar: the gateway's mutual TLS must end in the listener, not in a proxy in front of it
    assert dep["spec"]["template"]["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"


def test_the_production_event_path_from_the_kcp_gateway_to_the_listener() -> None:
    """KLM's Watcher routes /v2/cloud-manager/event to the listener's Service; the gateway re-originates
    mutual TLS to it with a client certificate of the CA the listener verifies against."""
    from tasks.cloud.skr.listener import COMPONENT

    objs = render("overlays/production")
    path = _listener_path(objs)
    service, watcher, rule = path["service"], path["watcher"]["spec"], path["rule"]
    # the Watcher: the original's (cloud-manager's config/watcher/watcher.yaml), pointed at our Service
    assert path["watcher"]["apiVersion"] == "operator.kyma-project.io/v1beta2"
    assert path["watcher"]["metadata"] == {"name": "cloud-manager", "namespace": "kcp-system",
                                           "labels": {"operator.kyma-project.io/managed-by": "cloud-manager"}}
    assert watcher["manager"] == COMPONENT  # KLM routes /v2/<manager>/event: the path the listener serves
    assert watcher["resourceToWatch"] == {"group": "cloud-resources.kyma-project.io", "version": "*", "resource": "*"}
    assert watcher["field"] == "spec"
    assert watcher["gateway"]["selector"]["matchLabels"] == {"operator.kyma-project.io/watcher-gateway": "default"}
    info = watcher["serviceInfo"]
    assert (info["name"], info["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    assert info["port"] in {p["port"] for p in service["spec"]["ports"]}
    # the DestinationRule covers the host and port of the route KLM makes (internal/istio/httproute.go)
    destination = f"{info['name']}.{info['namespace']}.svc.cluster.local"
    assert rule["apiVersion"].startswith("networking.istio.io/")
    assert rule["spec"]["host"] == destination
    assert rule["metadata"]["namespace"] == "istio-system" and rule["spec"]["exportTo"] == ["."]
    (port,) = rule["spec"]["trafficPolicy"]["portLevelSettings"]
    assert port["port"] == {"number": info["port"]}
    tls = port["tls"]
    assert tls["mode"] == "MUTUAL"
    # the gateway's client certificate: in the gateway's namespace, client usage, the listener's CA
    gateway, serving, ca = path["gateway"], path["serving"], path["ca"]
    assert tls["credentialName"] == gateway["spec"]["secretName"]
    assert gateway["metadata"]["namespace"] == rule["metadata"]["namespace"]
    assert "client auth" in gateway["spec"]["usages"] and "server auth" not in gateway["spec"]["usages"]
    assert "client auth" not in serving["spec"]["usages"]  # the listener's own pair is no client certificate
    assert gateway["spec"]["issuerRef"] == serving["spec"]["issuerRef"] == {
        "name": "reconcilery-skr-listener-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    issuer = path["issuers"]["reconcilery-skr-listener-ca"]
    assert issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"] and ca["spec"]["isCA"] is True
    assert ca["spec"]["privateKey"]["rotationPolicy"] == "Never"  # a renewed CA still verifies older leaves
    # the gateway checks the listener's name
    assert tls["sni"] in serving["spec"]["dnsNames"] and set(tls["subjectAltNames"]) <= set(serving["spec"]["dnsNames"])
    # and the gateway may reach the listener's port
    policy = by_kind(objs, "NetworkPolicy")["reconcilery-skr-listener-from-gateway"]
    (admit,) = policy["spec"]["ingress"]
    assert admit["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}}}]
    assert admit["ports"] == [{"protocol": "TCP", "port": info["port"]}]


def test_the_production_listener_accepts_what_the_gateway_sends_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listener as the production Deployment configures it, fed the certificates cert-manager issues
    for the rendered Certificates, over real TLS: the gateway's connection (its client certificate, the
    DestinationRule's SNI and name check) with the SKR's certificate in X-Forwarded-Client-Cert connects that
    SKR; the SKR directly (KLM's CA), the listener's own pair and no certificate do not."""
    import socket
    import ssl

    from tasks.cloud import settings
    from tasks.cloud.skr.listener import Listener, ListenerTLS
    from tests.unit.cloud.test_notify import xfcc
    from webhooks import ThreadedListener
    from webhooks.certificates import generate_ca, issue_client_cert, issue_serving_cert

    objs = render("overlays/production")
    path = _listener_path(objs)
    (c,) = _containers(path["deployment"])
    rule_tls = path["rule"]["spec"]["trafficPolicy"]["portLevelSettings"][0]["tls"]
    ca = generate_ca(path["ca"]["spec"]["commonName"])
    serving = issue_serving_cert(ca, path["serving"]["spec"]["commonName"], path["serving"]["spec"]["dnsNames"])
    gateway = issue_client_cert(ca, path["gateway"]["spec"]["commonName"])
    # the Secrets as cert-manager writes them (tls.crt, tls.key, ca.crt), where the Deployment mounts them
    mount = next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == "listener-tls")
    secret_dir = tmp_path / "listener-tls"
    secret_dir.mkdir()
    for name, data in {"tls.crt": serving.cert_pem, "tls.key": serving.key_pem, "ca.crt": ca.cert_pem}.items():
        (secret_dir / name).write_bytes(data)
    for name, value in _env(c).items():
        if name.startswith("RECONCILERY_CLOUD_LISTENER_"):
            monkeypatch.setenv(name, str(value).replace(mount, str(secret_dir)))
    s = settings.CloudSettings.load()
    tls = ListenerTLS.from_settings(s)
    kymas: list[str] = []
    served = Listener(lambda kyma: kymas.append(kyma) or "accepted", "127.0.0.1", 0, tls=tls)
    listener = ThreadedListener(served).start()
    port = int(served.url.rsplit(":", 1)[1])
    event = f"/v2/{path['watcher']['spec']['manager']}/event"
    body = b'{"watched": {"name": "w", "namespace": "n"}, "watchedGvk": {"group": "g", "version": "v", "kind": "K"}}'

    def post(client: Any | None, header: str | None) -> int | None:
        ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())  # the gateway Secret's ca.crt
        if client is not None:
            (tmp_path / "client.crt").write_bytes(client.cert_pem)
            (tmp_path / "client.key").write_bytes(client.key_pem)
            ctx.load_cert_chain(tmp_path / "client.crt", tmp_path / "client.key")
        request = (f"POST {event} HTTP/1.1\r\nHost: {rule_tls['sni']}\r\nContent-Length: {len(body)}\r\n"
                   + (f"X-Forwarded-Client-Cert: {header}\r\n" if header else "") + "\r\n").encode() + body
        try:
            with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                 server_hostname=rule_tls["sni"]) as sock:
                sock.sendall(request)
                head = sock.recv(4096)
        except (OSError, ssl.SSLError):
            return None
        return int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None

    try:
        assert post(gateway, xfcc("kyma-1")) == 200
        assert kymas == ["kyma-1"]
        assert post(gateway, None) == 401  # the gateway did not say which SKR
        klm = generate_ca("klm-watcher-selfsigned-ca")
        assert post(issue_client_cert(klm, "kyma-2"), xfcc("kyma-2")) is None  # the SKR, past the gateway
        assert post(serving, xfcc("kyma-3")) is None  # the listener's own pair is no client certificate
        assert post(None, xfcc("kyma-4")) == 401
        other = issue_client_cert(ca, "kyma-5")  # another certificate of the ClusterIssuer is not the gateway
        assert post(other, xfcc("kyma-6")) == 401
        assert kymas == ["kyma-1"]
    finally:
        listener.stop()


def test_the_tls_overlay_puts_redis_behind_tls_and_every_client_on_rediss() -> None:
    from workers.redis_client import celery_broker_settings, redbeat_settings, redis_client

    objs = render("overlays/production-tls")
    url = by_kind(objs, "ConfigMap")["reconcilery-config"]["data"]["RECONCILERY_REDIS_URL"]
    assert url.startswith("rediss://") and "ssl_cert_reqs=required" in url
    ca_file = url.split("ssl_ca_certs=")[1]
    certificate = by_kind(objs, "Certificate")["reconcilery-redis"]
    assert "reconcilery-redis.reconcilery.svc" in certificate["spec"]["dnsNames"]
    redis = by_kind(objs, "StatefulSet")["reconcilery-redis"]
    (server,) = _containers(redis)
    args = server["command"]
    assert args[args.index("--port") + 1] == "0" and args[args.index("--tls-port") + 1] == "6379"
    assert args[args.index("--tls-cert-file") + 1] == "/etc/redis-tls/tls.crt"
    assert {"name": "tls", "mountPath": "/etc/redis-tls", "readOnly": True} in server["volumeMounts"]
    tls_volume = {v["name"]: v for v in redis["spec"]["template"]["spec"]["volumes"]}["tls"]
    assert tls_volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert "--tls" in server["readinessProbe"]["exec"]["command"][2]
    for name, dep in by_kind(objs, "Deployment").items():
        (c, *_rest) = _containers(dep)
        mount = next(m for m in c["volumeMounts"] if m["name"] == "redis-ca")
        assert ca_file.startswith(mount["mountPath"]), name
        volume = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}["redis-ca"]
        # only the CA: no client pod sees Redis' key
        assert volume["secret"] == {"secretName": certificate["spec"]["secretName"],
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}]}, name
    for obj in by_kind(objs, "ScaledObject").values():
        assert all(t["metadata"]["enableTLS"] == "true" for t in obj["spec"]["triggers"])
    # the clients take the URL as it is: redis-py, kombu and RedBeat all verify against the CA
    client = redis_client(url, environ={})
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs["ssl_cert_reqs"], kwargs["ssl_ca_certs"]) == ("required", ca_file)
    assert celery_broker_settings(url, environ={})["broker_url"].startswith("rediss://")
    assert "ssl_ca_certs" in redbeat_settings(url, environ={})["redbeat_redis_url"]


#: Verbs that let an account grant more than it holds.
ESCALATING_VERBS = {"bind", "escalate", "impersonate"}
#: The mesh CA's key pair in istio-system: readable by no component.
MESH_CA_SECRETS = ("istio-ca-secret", "cacerts", "istio-ca-root-cert")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_rule_grants_escalation_or_wildcard_verbs(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    for obj in [*by_kind(objs, "ClusterRole").values(), *(o for o in objs if o["kind"] == "Role")]:
        for rule in obj.get("rules") or []:
            where = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}: {rule}"
            assert not ESCALATING_VERBS & set(rule["verbs"]), where
            assert "*" not in rule["verbs"] and "*" not in rule.get("resources", []), where
            assert "*" not in rule.get("apiGroups", []), where
            if "rbac.authorization.k8s.io" in rule.get("apiGroups", []):
                # RBAC objects are written only by name (create cannot be limited by name in Kubernetes)
                assert set(rule["verbs"]) == {"create"} or rule.get("resourceNames"), where
            if "admissionregistration.k8s.io" in rule.get("apiGroups", []) and {"update", "patch"} & set(rule["verbs"]):
                assert rule.get("resourceNames"), where


def test_secrets_only_by_name_where_the_name_is_known_and_never_the_mesh_ca() -> None:
    objs = render("base")
    rbac = Rbac(objs)
    for sa in set(components(objs).values()):
        for name in MESH_CA_SECRETS:
            for verb in ("get", "list", "watch", "update", "patch", "delete"):
                call = {"verb": verb, "group": "", "resource": "secrets", "namespaced": True,
                        "namespace": "istio-system", "name": name}
                assert not rbac.allows(sa, call, exact_namespace=True), (sa, verb, name)
    for namespace in ("istio-system", "kyma-system"):
        for role in (o for o in objs if o["kind"] == "Role" and o["metadata"]["namespace"] == namespace):
            for rule in role["rules"]:
                if "secrets" in rule["resources"] and set(rule["verbs"]) - {"create"}:
                    assert rule.get("resourceNames"), (namespace, role["metadata"]["name"], rule)


#: Secret reads not limited by name, and why (docs/deploy.md, "Least privilege"): (Role namespace, Role) -> verbs.
#: kubeconfig-<kyma> names are made per runtime at provisioning; nkl-config names the NGINX TLS Secrets at run time.
SECRETS_BY_ANY_NAME = {("kcp-system", "reconcilery-cloud-kcp"): ["get"],
                       ("kcp-system", "reconcilery-cloud-skr"): ["get"],
                       ("nkl", "reconcilery-nginx-settings"): ["get"]}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_by_any_name_only_where_the_names_cannot_be_known(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    unnamed = {}
    for role in (o for o in objs if o["kind"] in ("Role", "ClusterRole")):
        for rule in role.get("rules") or []:
            if "secrets" in rule["resources"] and not rule.get("resourceNames"):
                verbs = [v for v in rule["verbs"] if v != "create"]  # create cannot be limited by name
                if verbs:
                    assert role["kind"] == "Role", role["metadata"]  # never cluster-wide
                    unnamed[(role["metadata"]["namespace"], role["metadata"]["name"])] = verbs
    assert unnamed == SECRETS_BY_ANY_NAME
    rbac = Rbac(objs)
    sa = {"kcp": "reconcilery-cloud-kcp", "skr": "reconcilery-cloud-skr"}

    def may(account: str, verb: str, name: str, namespace: str = "kcp-system") -> bool:
        return rbac.allows(sa[account], {"verb": verb, "group": "", "resource": "secrets", "namespaced": True,
                                         "namespace": namespace, "name": name}, exact_namespace=True)

    for account in sa:
        assert may(account, "get", "kubeconfig-0a1b2c3d")
        # nothing to enumerate the namespace's Secrets with, nothing written, nothing outside kcp-system
        for verb in ("list", "watch", "create", "update", "patch", "delete"):
            assert not may(account, verb, "kubeconfig-0a1b2c3d"), (account, verb)
        for namespace in ("kyma-system", "istio-system", "reconcilery", "garden-kyma"):
            assert not may(account, "get", "kubeconfig-0a1b2c3d", namespace), (account, namespace)
    # the Garden's kubeconfig has a fixed name: granted by it
    assert any(rule.get("resourceNames") == ["gardener-credentials"] and rule["verbs"] == ["get"]
               for ns, rule in rbac.rules(sa["kcp"]) if ns == "kcp-system")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_component_has_network_policies(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    policies = by_kind(objs, "NetworkPolicy")
    deny = policies["reconcilery-default-deny"]
    assert deny["spec"]["podSelector"] == {} and deny["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in deny["spec"] and "egress" not in deny["spec"]

    def admitted(labels: dict[str, str]) -> list[dict[str, Any]]:
        rules = []
        for p in policies.values():
            sel = p["spec"]["podSelector"]
            if sel.get("matchLabels", {}).items() <= labels.items() and all(
                    labels.get(e["key"]) in e["values"] for e in sel.get("matchExpressions", [])):
                rules += p["spec"].get("ingress") or []
        return rules

    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    for kind in ("Deployment", "StatefulSet"):
        for name, obj in by_kind(objs, kind).items():
            labels = obj["spec"]["template"]["metadata"]["labels"]
            rules = admitted(labels)
            ports = {p["containerPort"]: p.get("name") for c in _containers(obj) for p in c.get("ports") or []}
            for rule in rules:
                assert rule["from"], name  # never "from anywhere"
            if name == "reconcilery-webhook":
                (rule,) = [r for r in rules if {p["port"] for p in r["ports"]} & {9443, 9444}]
                (peer,) = rule["from"]
                assert peer["ipBlock"]["cidr"] == "0.0.0.0/0" and peer["ipBlock"]["except"], rule  # no pod
            for metrics in (9100, 8080, 5555):
                if metrics in ports:
                    (rule,) = [r for r in rules if metrics in {p["port"] for p in r["ports"]}]
                    assert rule["from"] == [monitoring], (name, rule)
            if name == "reconcilery-beat":
                assert rules == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_beat_has_probes_that_cannot_restart_a_healthy_standby(overlay: str) -> None:
    from workers.settings import EngineSettings

    dep = by_kind(render(f"overlays/{overlay}"), "Deployment")["reconcilery-beat"]
    (beat,) = _containers(dep)
    for probe in ("livenessProbe", "readinessProbe"):
        # `probe beat` asks whether *a* beat holds RedBeat's lock: a standby passes while the active one lives
        assert beat[probe]["exec"]["command"] == ["reconcilery", "probe", "beat"]
    live = beat["livenessProbe"]
    # the lock of a dead active beat lapses and a standby takes it long before liveness gives up
    assert live["periodSeconds"] * live["failureThreshold"] >= 4 * EngineSettings().redbeat_lock_timeout
    assert live["initialDelaySeconds"] >= EngineSettings().redbeat_lock_timeout


def test_sentinels_require_a_password_every_process_has() -> None:
    objs = render("overlays/production-sentinel")
    scripts = by_kind(objs, "ConfigMap")["reconcilery-redis-ha"]["data"]
    assert "requirepass $SENTINEL_PASSWORD" in scripts["sentinel.sh"]
    assert "sentinel sentinel-pass $SENTINEL_PASSWORD" in scripts["sentinel.sh"]
    assert '-a "$SENTINEL_PASSWORD"' in scripts["common.sh"]
    ref = {"secretKeyRef": {"name": "reconcilery-redis", "key": "sentinel-password"}}
    for name, dep in by_kind(objs, "Deployment").items():
        assert _env(_containers(dep)[0])["RECONCILERY_REDIS_SENTINEL_PASSWORD"] == ref, name
    auth = by_kind(objs, "TriggerAuthentication")["reconcilery-redis"]
    assert {"parameter": "sentinelPassword", "name": "reconcilery-redis", "key": "sentinel-password"} in \
        auth["spec"]["secretTargetRef"]


def _acl_users(command: list[str]) -> dict[str, str]:
    return {rule.split()[0]: rule for rule in (command[i + 1] for i, a in enumerate(command) if a == "--user")}


def test_redis_acl_users_for_the_listener_and_flower_in_both_redis_setups() -> None:
    """The rules themselves are exercised on a real Redis by tests/integration/test_redis_acl.py."""
    objs = render("base")
    (redis,) = _containers(by_kind(objs, "StatefulSet")["reconcilery-redis"])
    users = _acl_users(redis["command"])
    assert set(users) == {"listener", "flower"}
    for user, rule in users.items():
        assert f">$(REDIS_{user.upper()}_PASSWORD)" in rule and "-@all" in rule and "-@dangerous" in rule
        assert "~*" not in rule.split() and "allkeys" not in rule and "+@all" not in rule
        env = _env(redis)[f"REDIS_{user.upper()}_PASSWORD"]
        assert env == {"secretKeyRef": {"name": "reconcilery-redis", "key": f"{user}-password"}}
    deps = by_kind(objs, "Deployment")
    assert _env(_containers(deps["reconcilery-skr-listener"])[0])["RECONCILERY_REDIS_USERNAME"] == "listener"
    assert _env(_containers(deps["reconcilery-flower"])[0])["RECONCILERY_REDIS_USERNAME"] == "flower"
    # the Sentinel setup's Redis pods start with the same users
    script = by_kind(render("overlays/production-sentinel"), "ConfigMap")["reconcilery-redis-ha"]["data"]["redis.sh"]
    for user, rule in users.items():
        shell = rule.replace(f"$(REDIS_{user.upper()}_PASSWORD)", f"$REDIS_{user.upper()}_PASSWORD")
        assert f'--user "{shell}"' in script, user


#: The pod CIDR the policies assume (Gardener's default of the Kyma shoots, 100.64.0.0/12).
POD_CIDR = "100.64.0.0/12"


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector's verdict on ``labels`` (matchLabels, and In / NotIn / Exists / DoesNotExist)."""
    if not (selector.get("matchLabels") or {}).items() <= labels.items():
        return False
    for e in selector.get("matchExpressions") or []:
        value, op = labels.get(e["key"]), e["operator"]
        if (op == "In" and value not in e["values"]) or (op == "NotIn" and value in e["values"]) \
                or (op == "Exists" and value is None) or (op == "DoesNotExist" and value is not None):
            return False
    return True


def _egress_allowed(policies: dict[str, dict[str, Any]], pod: dict[str, str], ip: str, port: int,
                    protocol: str = "TCP", peer: tuple[str, dict[str, str]] | None = None) -> bool:
    """Whether a pod of namespace reconcilery with labels ``pod`` may open ``protocol``/``port`` to ``ip``
    (``peer``: the destination's namespace and labels when it is a pod), as the NetworkPolicy API defines it:
    allowed when no policy selecting the pod restricts egress, else when a rule of one of them admits it."""
    import ipaddress

    selecting = [p for p in policies.values() if _selects(p["spec"]["podSelector"], pod)
                 and "Egress" in p["spec"].get("policyTypes", [])]
    if not selecting:
        return True
    address = ipaddress.ip_address(ip)
    for policy in selecting:
        for rule in policy["spec"].get("egress") or []:
            ports = rule.get("ports")
            if ports and not any(p.get("protocol", "TCP") == protocol and p.get("port") in (None, port)
                                 for p in ports):
                continue
            if "to" not in rule:
                return True
            for to in rule["to"]:
                if "ipBlock" in to:
                    block = to["ipBlock"]
                    if address in ipaddress.ip_network(block["cidr"]) and not any(
                            address in ipaddress.ip_network(e) for e in block.get("except") or []):
                        return True
                elif peer is not None:
                    namespace, labels = peer
                    ns_ok = (_selects(to["namespaceSelector"], {"kubernetes.io/metadata.name": namespace})
                             if "namespaceSelector" in to else namespace == policy["metadata"]["namespace"])
                    if ns_ok and _selects(to.get("podSelector") or {}, labels):
                        return True
    return False


#: Components that call the Kubernetes API (app.kubernetes.io/name).
API_CLIENTS = {"reconcilery-watcher", "reconcilery-webhook", *(f"reconcilery-worker-{q}" for q in QUEUES)}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_egress_is_dns_redis_and_what_each_component_calls(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    policies = by_kind(objs, "NetworkPolicy")
    redis_pod = ("reconcilery", {"app.kubernetes.io/component": "redis", "app.kubernetes.io/name": "reconcilery-redis"})
    other_pod = ("shop", {"app": "shop"})
    coredns = ("kube-system", {"k8s-app": "kube-dns"})
    pods = {name: obj["spec"]["template"]["metadata"]["labels"]
            for kind in ("Deployment", "StatefulSet") for name, obj in by_kind(objs, kind).items()}
    assert set(pods) > API_CLIENTS
    for name, labels in pods.items():
        def may(ip: str, port: int, protocol: str = "TCP", peer: tuple[str, dict[str, str]] | None = None,
                labels: dict[str, str] = labels) -> bool:
            return _egress_allowed(policies, labels, ip, port, protocol, peer)

        # everyone: the cluster's DNS (pods, or a node-local cache) and Redis, Sentinel included
        assert may("100.64.0.10", 53, "UDP", coredns) and may("100.64.0.10", 53, "TCP", coredns), name
        assert may("169.254.20.10", 53, "UDP"), name
        assert may("100.64.3.7", 6379, peer=redis_pod) and may("100.64.3.7", 26379, peer=redis_pod), name
        # no one: another pod, Redis' address without being Redis, the instance metadata, plain HTTP out
        assert not may("100.64.9.9", 443, peer=other_pod) and not may("100.64.9.9", 8080, peer=other_pod), name
        assert not may("100.64.3.7", 6379, peer=other_pod), name
        assert not may("169.254.169.254", 80) and not may("169.254.169.254", 443), name
        # the API server (outside the pod network, 443 or 6443), the clouds and the SKRs (443)
        calls_out = name in API_CLIENTS
        for ip, port in (("10.250.0.1", 443), ("10.250.0.1", 6443), ("52.95.110.1", 443), ("142.250.1.1", 443)):
            assert may(ip, port) is calls_out, (name, ip, port)
        # the NGINX Plus API hosts (nkl-config), on any port outside the pod network: the NGINX worker only
        assert may("10.0.0.5", 9000) is (name == "reconcilery-worker-nginx"), name
        assert may("52.95.110.1", 80) is (name == "reconcilery-worker-nginx"), name
    # the listener, beat, Flower and Redis: DNS and Redis, nothing else
    for name in ("reconcilery-skr-listener", "reconcilery-beat", "reconcilery-flower"):
        assert not _egress_allowed(policies, pods[name], "10.250.0.1", 443), name
    # every ipBlock that reaches out keeps the pod network (and the metadata address) out
    for policy in policies.values():
        for rule in policy["spec"].get("egress") or []:
            for to in rule.get("to") or []:
                if "ipBlock" in to:
                    assert {POD_CIDR, "169.254.169.254/32"} <= set(to["ipBlock"]["except"]), policy["metadata"]


# ---- ValidatingAdmissionPolicies: what RBAC cannot limit (docs/deploy.md, "Least privilege") ----------

CREATES_BY_NAME = "reconcilery-apigateway-creates-by-name"
CABUNDLE_ONLY = "reconcilery-webhook-configurations-cabundle-only"
CRDS = "reconcilery-apigateway-crds"


def _username(objs: tuple[dict[str, Any], ...], component: str) -> str:
    return f"system:serviceaccount:reconcilery:{components(objs)[component]}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_admission_policies_deny_and_bind_the_workers_service_accounts(overlay: str) -> None:
    objs = render(f"overlays/{overlay}")
    policies = by_kind(objs, "ValidatingAdmissionPolicy")
    bindings = by_kind(objs, "ValidatingAdmissionPolicyBinding")
    assert {b["spec"]["policyName"] for b in bindings.values()} == set(policies) \
        == {CREATES_BY_NAME, CABUNDLE_ONLY, CRDS}
    for binding in bindings.values():
        assert binding["spec"]["validationActions"] == ["Deny"]
    for policy in policies.values():
        assert policy["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert policy["spec"]["failurePolicy"] == "Fail"
    # the usernames in matchConditions are the ServiceAccounts the workers run under in this overlay
    conditions = {name: " ".join(c["expression"] for c in p["spec"]["matchConditions"]) for name, p in policies.items()}
    assert f"'{_username(objs, 'worker-apigateway')}'" in conditions[CREATES_BY_NAME]
    assert f"'{_username(objs, 'worker-apigateway')}'" in conditions[CRDS]
    for component in ("worker-apigateway", "worker-snatch"):
        assert f"'{_username(objs, component)}'" in conditions[CABUNDLE_ONLY]
    # and they match those accounts: the mesh CA cannot be planted by the apigateway worker
    assert admission_create(objs, "Secret", "istio-system", "cacerts")


def test_the_apigateway_worker_creates_only_the_names_the_operator_manages() -> None:
    objs = render("base")
    managed = apigateway_creates()
    assert {kind for kind, _, _ in managed} \
        == {"Secret", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    for kind, namespace, name in managed:
        # a name the operator starts managing must be admitted here (and granted by RBAC by name)
        assert admission_create(objs, kind, namespace, name) == [], (kind, namespace, name)
    denied = [("Secret", "istio-system", name) for name in MESH_CA_SECRETS] + [
        ("Secret", "istio-system", "kyma-gateway-certs-2"), ("Secret", "kyma-system", "ory-oathkeeper-jwks"),
        ("Secret", "default", "anything"), ("ClusterRole", "", "oathkeeper-maester-role-2"),
        ("ClusterRole", "", "cluster-admin"), ("ClusterRoleBinding", "", "reconcilery-apigateway-admin"),
        ("CustomResourceDefinition", "", "apirules.gateway.kyma-project.io"),
        ("CustomResourceDefinition", "", "widgets.evil.example.com")]
    for kind, namespace, name in denied:
        assert admission_create(objs, kind, namespace, name), (kind, namespace, name)
    # other accounts are RBAC's business, not these policies'
    istiod = "system:serviceaccount:istio-system:istiod"
    assert admission_create(objs, "Secret", "istio-system", "cacerts", istiod) == []
    assert admission_create(objs, "Secret", "istio-system", "cacerts", _username(objs, "worker-snatch")) == []
    # a create without a name (generateName) cannot be judged: denied, as failurePolicy Fail does
    review = admission_request("CREATE", "", "v1", "secrets", _username(objs, "worker-apigateway"),
                               {"metadata": {"generateName": "x-"}}, namespace="istio-system")
    assert admission_denials(objs, review)


def _webhook_update(objs: tuple[dict[str, Any], ...], old: dict[str, Any], new: dict[str, Any],
                    component: str = "worker-snatch", username: str | None = None) -> list[str]:
    resource = old["kind"].lower() + "s"
    review = admission_request("UPDATE", "admissionregistration.k8s.io", "v1", resource,
                               username or _username(objs, component), new, old)
    return admission_denials(objs, review)


def _sample_configurations(objs: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """Snatch's configuration as deploy/ renders it, and a ValidatingWebhookConfiguration of the same
    webhook with the optional fields an API server defaults (url instead of a Service)."""
    snatch = copy.deepcopy(by_kind(objs, "MutatingWebhookConfiguration")["kim-snatch-mutating-webhook-configuration"])
    snatch["webhooks"][0].update({"failurePolicy": "Fail", "matchPolicy": "Equivalent", "timeoutSeconds": 10,
                                  "reinvocationPolicy": "Never", "sideEffects": "None"})
    validating = copy.deepcopy(snatch)
    validating.update(kind="ValidatingWebhookConfiguration",
                      metadata={"name": "api-gateway-validating-webhook-configuration"})
    hook = validating["webhooks"][0]
    del hook["reinvocationPolicy"]
    hook["clientConfig"] = {"url": "https://api-gateway-webhook-service.kyma-system.svc:9443/v1beta1/validate",
                            "caBundle": "b2xk"}
    hook["matchConditions"] = [{"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"}]
    validating["webhooks"].append({**copy.deepcopy(hook), "name": "second.kb.io"})
    return [snatch, validating]


def test_the_workers_change_only_the_cabundle_of_webhook_configurations() -> None:
    from webhooks.certificates import with_ca_bundle

    objs = render("base")
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    for old in _sample_configurations(objs):
        new, changed = with_ca_bundle(old, pem)  # what both workers' caBundle sync writes
        assert new is not None and changed
        for component in ("worker-snatch", "worker-apigateway"):
            assert _webhook_update(objs, old, new, component) == [], (old["kind"], component)

        def denied(change: Any, old: dict[str, Any] = old, new: dict[str, Any] = new) -> list[str]:
            edited = copy.deepcopy(new)
            change(edited)
            return _webhook_update(objs, old, edited)

        hook_changes = {
            "url": lambda w: w["clientConfig"].update(url="https://evil.example/mutate"),
            "service": lambda w: w["clientConfig"].update(service={"name": "evil", "namespace": "evil", "port": 443}),
            "rules": lambda w: w["rules"][0].update(resources=["*"]),
            "failurePolicy": lambda w: w.update(failurePolicy="Ignore"),
            "matchPolicy": lambda w: w.update(matchPolicy="Exact"),
            "namespaceSelector": lambda w: w.update(namespaceSelector={}),
            "objectSelector": lambda w: w.pop("objectSelector"),
            "sideEffects": lambda w: w.update(sideEffects="Some"),
            "timeoutSeconds": lambda w: w.update(timeoutSeconds=30),
            "admissionReviewVersions": lambda w: w.update(admissionReviewVersions=["v1", "v1beta1"]),
            "matchConditions": lambda w: w.update(matchConditions=[{"name": "all", "expression": "true"}]),
            "reinvocationPolicy": lambda w: w.update(reinvocationPolicy="IfNeeded"),
        }
        if old["kind"] == "ValidatingWebhookConfiguration":  # not a field of a validating webhook
            del hook_changes["reinvocationPolicy"]
        for field, change in hook_changes.items():
            assert denied(lambda c, change=change: change(c["webhooks"][0])), (old["kind"], field)
        assert denied(lambda c: c["webhooks"].append({**copy.deepcopy(c["webhooks"][0]), "name": "extra.kb.io"}))
        assert denied(lambda c: c["webhooks"][0].update(name="renamed.kb.io"))
        assert denied(lambda c: c["webhooks"].pop())
        assert denied(lambda c: c["metadata"].setdefault("labels", {}).update(evil="1"))
        assert denied(lambda c: c["metadata"].update(annotations={"cert-manager.io/inject-ca-from": "x/y"}))
        # an owner that does not exist makes the garbage collector delete the configuration
        assert denied(lambda c: c["metadata"].update(ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap",
                                                                       "name": "gone", "uid": "0"}]))
        assert denied(lambda c: c["metadata"].update(finalizers=["evil.example/block"]))
        # anyone else's update is RBAC's business
        edited = copy.deepcopy(new)
        edited["webhooks"][0]["failurePolicy"] = "Ignore"
        assert _webhook_update(objs, old, edited, username="system:admin") == []



def _crd_update(objs: tuple[dict[str, Any], ...], old: dict[str, Any], new: dict[str, Any],
                username: str | None = None) -> list[str]:
    review = admission_request("UPDATE", "apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               username or _username(objs, "worker-apigateway"), new, old)
    return admission_denials(objs, review)


def _served_apirule_crd(ca_bundle: str | None) -> dict[str, Any]:
    """The APIRule CRD as an API server holds it (the packaged manifest, defaulted fields and metadata)."""
    crd = yaml.safe_load((ROOT / "tasks/apigateway/crds/apirules.gateway.kyma-project.io.yaml").read_text())
    crd["metadata"].update(resourceVersion="42", uid="uid-crd", generation=3,
                           annotations={"controller-gen.kubebuilder.io/version": "v0.16.5"})
    if ca_bundle is not None:
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = ca_bundle
    return crd


def test_the_apigateway_worker_changes_only_the_conversion_cabundle_of_the_apirule_crd() -> None:
    from tasks.apigateway import certificate
    from tasks.apigateway.operator import resources as res

    objs = render("base")
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    for old in (_served_apirule_crd(None), _served_apirule_crd("b2xk")):
        new = certificate.ca_bundle_update(old, pem)  # what the certificate controller writes
        assert new is not None and new["metadata"]["name"] == certificate.APIRULE_CRD
        assert _crd_update(objs, old, new) == []

        def denied(change: Any, old: dict[str, Any] = old, new: dict[str, Any] = new) -> list[str]:
            edited = copy.deepcopy(new)
            change(edited)
            denials = _crd_update(objs, old, edited)
            assert not any("expression failed" in d for d in denials), denials  # denied by what it checks
            return denials

        def schema(c: dict[str, Any]) -> None:
            c["spec"]["versions"][-1]["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"] = True

        changes = {
            "versions": lambda c: c["spec"]["versions"].append({**c["spec"]["versions"][-1], "name": "v3"}),
            "served": lambda c: c["spec"]["versions"][0].update(served=not c["spec"]["versions"][0]["served"]),
            "storage": lambda c: [v.update(storage=v["name"] == "v2") for v in c["spec"]["versions"]],
            "schema": schema,
            "group": lambda c: c["spec"].update(group="evil.example.com"),
            "names": lambda c: c["spec"]["names"].update(shortNames=["ar"]),
            "scope": lambda c: c["spec"].update(scope="Cluster"),
            "preserveUnknownFields": lambda c: c["spec"].update(preserveUnknownFields=True),
            "strategy": lambda c: c["spec"].update(conversion={"strategy": "None"}),
            "conversionReviewVersions": lambda c: c["spec"]["conversion"]["webhook"].update(
                conversionReviewVersions=["v1"]),
            "service": lambda c: c["spec"]["conversion"]["webhook"]["clientConfig"]["service"].update(
                namespace="evil"),
            "url": lambda c: c["spec"]["conversion"]["webhook"]["clientConfig"].update(
                url="https://evil.example/convert"),
            "labels": lambda c: c["metadata"]["labels"].update(evil="1"),
            "annotations": lambda c: c["metadata"].pop("annotations"),
            "ownerReferences": lambda c: c["metadata"].update(ownerReferences=[
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0"}]),
            "finalizers": lambda c: c["metadata"].update(finalizers=["evil.example/block"]),
        }
        for field, change in changes.items():
            assert denied(change), field
        # anyone else's update is RBAC's business
        edited = copy.deepcopy(new)
        edited["spec"]["scope"] = "Cluster"
        assert _crd_update(objs, old, edited, username="system:admin") == []
    # the operator's Oathkeeper Rule CRD: created and updated whole, but never with a conversion webhook
    rule_crd = next(o for o in res.oathkeeper(res.Images(), 1) if o["kind"] == "CustomResourceDefinition")
    served = copy.deepcopy(rule_crd) | {"metadata": {**rule_crd["metadata"], "resourceVersion": "5"}}
    served["spec"]["conversion"] = {"strategy": "None"}  # the API server's default
    review = admission_request("CREATE", "apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               _username(objs, "worker-apigateway"), rule_crd)
    assert admission_denials(objs, review) == []
    changed = copy.deepcopy(served)
    changed["spec"]["versions"][0]["served"] = not changed["spec"]["versions"][0]["served"]
    assert _crd_update(objs, served, changed) == []
    hooked = copy.deepcopy(served)
    hooked["spec"]["conversion"] = copy.deepcopy(_served_apirule_crd("b2xk")["spec"]["conversion"])
    assert _crd_update(objs, served, hooked)
    # no other CRD, not even one of the module's
    other = _served_apirule_crd("b2xk")
    other["metadata"]["name"] = "apigateways.operator.kyma-project.io"
    changed = copy.deepcopy(other)
    changed["metadata"]["labels"]["x"] = "y"
    assert _crd_update(objs, other, changed)
