"""deploy/components/monitoring: the PromQL name extraction (reconcilery.monitoring), the alerts (one
source, a runbook each, a firing and a quiet promtool test each), the dashboards (Grafana's conventions,
only exported metrics) and the compose `monitoring` profile that loads the same files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconcilery import monitoring
from reconcilery.monitoring import DASHBOARDS, PROMETHEUS_RULE_FILE, RULES_FILE, metric_names, names_used, queries

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "deploy" / "components" / "monitoring"
ALERT_TESTS = COMPONENT / "tests" / "alerts.test.yaml"
COMPOSE_MONITORING = ROOT / "deploy" / "compose" / "monitoring"
OPERATIONS = ROOT / "docs" / "operations.md"
RULES: dict[str, Any] = yaml.safe_load(RULES_FILE.read_text())
ALERTS = {r["alert"]: r for g in RULES["groups"] for r in g["rules"] if "alert" in r}

#: docs/metrics.md: the generated table of every metric the code defines (tests/unit/config checks it is
#: current), so a name documented there is one some process exports.
METRICS_DOC = ROOT / "docs" / "metrics.md"


def documented() -> set[str]:
    """The exposed names of docs/metrics.md's table (first column)."""
    return set(re.findall(r"^\| `([a-zA-Z_:][\w:]*)` \|", METRICS_DOC.read_text(), re.M))


# ---- PromQL names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "names"), [
    ("workqueue_depth", {"workqueue_depth"}),
    ('max by (name) (workqueue_depth{name=~"cloud-skr.*", pod!="x"}) > 100', {"workqueue_depth"}),
    ("histogram_quantile(0.95, sum by (controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket"
     "[$__rate_interval])))", {"controller_runtime_reconcile_time_seconds_bucket"}),
    ("sum(rate(a_total[5m] offset 1h)) / ignoring (code) group_left (host) sum without (pod) (b)", {"a_total", "b"}),
    ("sum(x) by (le) and on (kind) y unless z or vector(0)", {"x", "y", "z"}),
    ("time() - max by (registration) (w_seconds) > 1800 and absent(v) == 1e3", {"w_seconds", "v"}),
    ('count_values("code", c) + topk(5, d) + rate(e[1h30m:1m])', {"c", "d", "e"}),
    ("label_values(workqueue_depth{job=\"$job\"}, name)", {"workqueue_depth"}),
    ("${datasource} $__interval [[old]] 'sum' \"max\" Inf NaN 0x1F bool", set()),
    ("ns:recorded:rate5m > 1.25 * max(target)", {"ns:recorded:rate5m", "target"}),
])
def test_metric_names_are_the_selectors_not_functions_keywords_labels_or_durations(query: str,
                                                                                   names: set[str]) -> None:
    assert metric_names(query) == names


def test_family_strips_histogram_suffixes_and_keeps_total() -> None:
    assert [monitoring.family(n) for n in ("a_bucket", "a_sum", "a_count", "a_total", "a")] == [
        "a", "a", "a", "a_total", "a"]
    assert monitoring.exported_names({"a": "counter", "h": "histogram", "g": "gauge"}) == {"a_total", "h", "g"}


def test_names_used_says_where_each_family_is_used(tmp_path: Path) -> None:
    ds = {"type": "prometheus", "uid": "${datasource}"}
    (tmp_path / "d.json").write_text(json.dumps({
        "panels": [{"type": "row", "title": "r", "panels": [
            {"title": "Latency", "targets": [{"expr": "histogram_quantile(0.5, sum by (le) (rate(h_bucket[5m])))",
                                              "datasource": ds}]}]},
                   {"title": "Depth", "targets": [{"expr": "max(q) / sum(h_count)"}, {"refId": "B"}]}],
        "templating": {"list": [{"type": "datasource", "name": "datasource", "query": "prometheus"},
                                {"type": "query", "name": "ctl", "query": {"query": "label_values(r_total, c)"}}]}}))
    rules = tmp_path / "r.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
        {"alert": "A", "expr": "q > 1"}, {"record": "rec:q", "expr": "sum(q)"}]}]}))
    assert names_used(tmp_path, rules) == {
        "h": {"d.json: panel Latency", "d.json: panel Depth"},
        "q": {"d.json: panel Depth", "r.yaml: alert A", "r.yaml: record rec:q"},
        "r_total": {"d.json: variable ctl"},
    }


def test_every_dashboard_and_alert_query_names_a_documented_metric() -> None:
    """Every family a panel, variable or alert selects is in docs/metrics.md (generated from the code);
    that each is really exported by a process of `reconcilery up` is checked in
    tests/integration/test_up_lifecycle.py."""
    names = documented()
    assert len(names) > 60  # the table was parsed at all
    used = names_used(DASHBOARDS, RULES_FILE)
    unknown = {name: sorted(where) for name, where in used.items() if name not in names}
    assert not unknown, f"not a metric of docs/metrics.md: {unknown}"
    assert len(used) > 30  # the extraction found the queries at all


def test_queries_are_what_prometheus_takes() -> None:
    found = dict(queries(DASHBOARDS, RULES_FILE, interval="2m"))
    assert len(found) >= len(names_used(DASHBOARDS, RULES_FILE))
    assert not any("$" in q for q in found.values()), [q for q in found.values() if "$" in q]
    assert any("[2m]" in q for q in found.values())
    alerts = [w for w in found if ": alert " in w]
    assert len(alerts) == len(ALERTS)


# ---- alerts ---------------------------------------------------------------------------------------------


def test_the_prometheusrule_is_generated_from_the_rules_file() -> None:
    assert PROMETHEUS_RULE_FILE.read_text() == monitoring.render_prometheus_rule(RULES_FILE.read_text()), (
        "deploy/components/monitoring/prometheusrule.yaml is stale: run python -m reconcilery.monitoring")
    rule = yaml.safe_load(PROMETHEUS_RULE_FILE.read_text())
    assert rule["kind"] == "PrometheusRule" and rule["spec"]["groups"] == RULES["groups"]
    assert monitoring.main(["--check"]) == 0


def test_the_issues_alerts_are_there() -> None:
    assert set(ALERTS) == {
        # the production overlay's
        "ReconcileryQueueGrowing", "ReconcileryReconcilesFailing", "ReconcileryLeasesLost", "ReconcileryWatchSilent",
        "ReconcileryNoWatcherLeader",
        # issue 30's (a workqueue growing for 15 minutes: ReconcileryQueueGrowing)
        "ReconcileryFleetSweepBehind", "ReconcileryKeyParked", "ReconcileryProviderErrors",
        "ReconcilerySkrUnreachable", "ReconcileryWebhookFailing", "ReconcileryNginxHostOutOfSync"}


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", markdown, re.M)}


def test_every_alert_has_a_severity_and_a_runbook_section() -> None:
    anchors = _anchors(OPERATIONS.read_text())
    for name, rule in ALERTS.items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        path, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert path == "docs/operations.md" and anchor == name.lower() and anchor in anchors, name


def test_every_alert_has_a_test_that_fires_it_and_one_that_keeps_it_quiet() -> None:
    tests = yaml.safe_load(ALERT_TESTS.read_text())
    assert tests["rule_files"] == ["../rules/reconcilery.rules.yaml"]
    fired: set[str] = set()
    quiet: set[str] = set()
    for test in tests["tests"]:
        assert test["input_series"], test["name"]
        for case in test["alert_rule_test"]:
            if case["exp_alerts"]:
                assert test["name"].startswith(f"{case['alertname']} fires"), test["name"]
                fired.add(case["alertname"])
            else:
                assert test["name"] == f"{case['alertname']} quiet", test["name"]
                quiet.add(case["alertname"])
    assert fired == quiet == set(ALERTS)


def _promtool() -> str:
    if os.environ.get("RECONCILERY_TEST_PROMTOOL") == "script":
        pytest.skip("scripts/test runs promtool in its static checks")
    found = shutil.which("promtool")
    if not found:
        pytest.skip("no promtool (Debian's prometheus package; scripts/_bootstrap.sh installs it as root)")
    return found


def _run(*args: str) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_checks_the_rules_and_their_tests_pass() -> None:
    promtool = _promtool()
    _run(promtool, "check", "rules", str(RULES_FILE))
    _run(promtool, "test", "rules", str(ALERT_TESTS))


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    promtool = _promtool()
    rules = monitoring.dashboard_rules(DASHBOARDS)
    queries = [q for d in _dashboards().values() for _, q in monitoring.dashboard_queries(d)]
    recorded = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    assert len(recorded) == len(queries) and not any("$" in q for q in recorded)
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump(rules))
    _run(promtool, "check", "rules", str(tmp_path / "queries.yaml"))


def test_promtool_checks_the_compose_prometheus_config_with_the_rules(tmp_path: Path) -> None:
    """The whole config, rule files included, with the container's paths pointed at the tree's files."""
    promtool = _promtool()
    secret = tmp_path / "flower-password"
    secret.write_text("check")
    config = (COMPOSE_MONITORING / "prometheus.yml").read_text()
    assert "/etc/prometheus/rules/" in config and "/run/secrets/flower-password" in config
    config = config.replace("/etc/prometheus/rules/", f"{RULES_FILE.parent}/").replace(
        "/run/secrets/flower-password", str(secret))
    (tmp_path / "prometheus.yml").write_text(config)
    _run(promtool, "check", "config", str(tmp_path / "prometheus.yml"))


# ---- dashboards -----------------------------------------------------------------------------------------

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
#: Grafana 12's dashboard schema version (what it writes on save).
SCHEMA_VERSION = 41
#: What issue 30 asks each dashboard to show, as the metric families its panels must use.
SHOWS = {
    "engine.json": {"workqueue_depth", "workqueue_adds_total", "controller_runtime_reconcile_time_seconds",
                    "reconcilery_workqueue_recovered_total", "workqueue_leases_lost_total",
                    "reconcilery_workqueue_parked_keys"},
    "skr-fleet.json": {"reconcilery_cloud_skr_revisit_interval_seconds", "reconcilery_cloud_skr_revisit_target_seconds",
                       "reconcilery_cloud_skr_connect_seconds", "reconcilery_cloud_skrs",
                       "reconcilery_cloud_skr_connects_in_flight"},
    "cloud.json": {"reconcilery_cloud_objects", "reconcilery_cloud_time_to_ready_seconds",
                   "cloud_manager_cloud_provider_api_call_total"},
    "apigateway.json": {"reconcilery_apigateway_apirules", "controller_runtime_reconcile_errors_total",
                        "api_gateway_api_rule_object_modified_errors_total", "reconcilery_webhook_requests_total"},
    "nginx.json": {"reconcilery_nginx_sync_seconds", "reconcilery_nginx_plus_errors_total",
                   "reconcilery_nginx_host_in_sync"},
}


def _dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}


def _uids(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [str(v) for k, v in node.items() if k == "uid"] + [u for v in node.values() for u in _uids(v)]
    if isinstance(node, list):
        return [u for v in node for u in _uids(v)]
    return []


def test_each_dashboard_shows_what_the_issue_asks() -> None:
    assert set(_dashboards()) == set(SHOWS)
    for name, dashboard in _dashboards().items():
        used = {monitoring.family(n) for _, q in monitoring.dashboard_queries(dashboard) for n in metric_names(q)}
        assert SHOWS[name] <= used, (name, SHOWS[name] - used)


def test_dashboards_follow_grafanas_conventions_with_a_datasource_variable() -> None:
    dashboards = _dashboards()
    assert len({d["uid"] for d in dashboards.values()}) == len(dashboards)
    for name, d in dashboards.items():
        assert d["schemaVersion"] == SCHEMA_VERSION and d["id"] is None and "reconcilery" in d["tags"], name
        (variable,) = [v for v in d["templating"]["list"] if v["name"] == "datasource"]
        assert variable["type"] == "datasource" and variable["query"] == "prometheus", name
        # no data source uid of some Grafana: only the variable (the built-in annotation is Grafana's own)
        assert set(_uids(d["panels"])) == {"${datasource}"}, name
        ids: list[int] = []
        for panel in d["panels"]:
            pos = panel["gridPos"]
            assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24 and pos["h"] > 0, (name, panel["title"])
            ids.append(panel["id"])
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == DATASOURCE and panel["targets"], (name, panel["title"])
            for target in panel["targets"]:
                assert target["datasource"] == DATASOURCE and target["expr"], (name, panel["title"])
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"]), (name, panel["title"])
        assert len(set(ids)) == len(ids), name


def test_the_component_ships_every_dashboard_with_the_sidecar_label() -> None:
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    assert set(kustomization["resources"]) == {"servicemonitors.yaml", "prometheusrule.yaml"}
    (generator,) = kustomization["configMapGenerator"]
    assert sorted(generator["files"]) == sorted(f"dashboards/{n}" for n in _dashboards())
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}


# ---- the compose monitoring profile ---------------------------------------------------------------------

COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _mounts(service: str) -> dict[str, str]:
    """``{container path: host path relative to the repository}`` of a compose service's bind mounts."""
    out = {}
    for volume in COMPOSE["services"][service].get("volumes") or []:
        host, container = volume.split(":")[:2]
        if host.startswith("./"):
            out[container] = host[2:]
    return out


def test_the_monitoring_profile_loads_the_components_rules_and_dashboards() -> None:
    prometheus, grafana = COMPOSE["services"]["prometheus"], COMPOSE["services"]["grafana"]
    assert prometheus["profiles"] == grafana["profiles"] == ["monitoring"]
    config = yaml.safe_load((COMPOSE_MONITORING / "prometheus.yml").read_text())
    mounts = _mounts("prometheus")
    assert mounts["/etc/prometheus/prometheus.yml"] == "deploy/compose/monitoring/prometheus.yml"
    for rule_file in config["rule_files"]:
        directory, _, file = rule_file.rpartition("/")
        assert ROOT / mounts[directory] / file == RULES_FILE
    mounts = _mounts("grafana")
    provisioning = ROOT / mounts["/etc/grafana/provisioning"]
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "reconcilery.yaml").read_text())["providers"]
    assert ROOT / mounts[provider["options"]["path"]] == DASHBOARDS
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090" and source["isDefault"]
    for service in (prometheus, grafana):  # loopback only
        assert all(p.startswith("127.0.0.1:") for p in service["ports"])


def test_prometheus_scrapes_every_compose_service_that_serves_metrics() -> None:
    """Every Reconcilery service but the skr-listener (no /metrics), on its metrics port."""
    config = yaml.safe_load((COMPOSE_MONITORING / "prometheus.yml").read_text())
    scraped: dict[str, int] = {}
    for job in config["scrape_configs"]:
        for sd in job.get("dns_sd_configs") or []:
            scraped.update(dict.fromkeys(sd["names"], sd["port"]))
        for static in job.get("static_configs") or []:
            for target in static["targets"]:
                host, port = target.split(":")
                scraped[host] = int(port)
    services = COMPOSE["services"]
    reconcilery = {name for name, s in services.items() if s.get("image") == "reconcilery:dev"}
    assert set(scraped) == reconcilery - {"skr-listener"}
    metrics_port = int(COMPOSE["x-reconcilery"]["environment"]["RECONCILERY_METRICS_PORT"])
    for name, port in scraped.items():
        command = " ".join(services[name].get("command") or services[name].get("entrypoint"))
        if command.startswith(("worker", "beat")):
            assert port == metrics_port, name
        elif command.startswith("watch"):
            assert f"--health-port {port}" in command, name
        elif command.startswith("webhook"):
            assert "--metrics-port" not in command and port == 8080, name  # its default
        else:
            assert f"--port={port}" in command, name  # Flower


def test_no_watcher_leader_counts_only_the_watchers_caches() -> None:
    """ReconcileryNoWatcherLeader's selector (anchored, as Prometheus matches) leaves out the caches of
    the processes that run without the Lease, workers' informers and the Snatch webhook's cluster view,
    and keeps every watch registration of every domain (only the Lease holder runs those)."""
    from informers.informer import Informer
    from kube import resources
    from tasks.apigateway import watches as apigateway
    from tasks.cloud import watches as cloud
    from tasks.nginx import watches as nginx
    from tasks.snatch import clusterview
    from tasks.snatch import watches as snatch

    excluded = re.search(r'registration!~"([^"]+)"', ALERTS["ReconcileryNoWatcherLeader"]["expr"])
    assert excluded, ALERTS["ReconcileryNoWatcherLeader"]["expr"]
    pattern = re.compile(f"(?:{excluded.group(1)})")
    others = [Informer(resources.SERVICE, None, None, "kcp").name,  # type: ignore[arg-type]  # not run
              Informer(resources.CONFIGMAP, "kyma-system", None, "kcp").name,  # type: ignore[arg-type]
              clusterview.NODES, clusterview.NAMESPACES]
    assert all(pattern.fullmatch(name) for name in others), others
    watches = [r.name for m in (apigateway, cloud, nginx, snatch) for r in m.registrations()]
    assert len(watches) > 20 and not [name for name in watches if pattern.fullmatch(name)]


def test_the_documented_prometheus_config_against_up_loads_the_rules(tmp_path: Path) -> None:
    """docs/operations.md's snippet (run where `up` ran: .reconcilery/endpoints.json, the checkout's
    deploy/) writes a config promtool accepts with every process as a job and the alerts' rules file
    loaded (a relative rule path would be read beside the config, in /tmp, and not be found)."""
    promtool = _promtool()
    snippet = re.search(r"^python - <<'PY' > /tmp/prometheus\.yml\n(.*?)^PY$", OPERATIONS.read_text(), re.M | re.S)
    assert snippet, "the snippet is gone from docs/operations.md"
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    (tmp_path / ".reconcilery").mkdir()
    metrics = {"watch": "http://127.0.0.1:9101/metrics", "worker-apigateway": "http://127.0.0.1:9102/metrics"}
    (tmp_path / ".reconcilery" / "endpoints.json").write_text(json.dumps({"metrics": metrics}))
    done = subprocess.run([sys.executable, "-c", snippet.group(1)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=True)
    config = tmp_path / "elsewhere" / "prometheus.yml"
    config.parent.mkdir()
    config.write_text(done.stdout)
    assert {j["job_name"] for j in yaml.safe_load(done.stdout)["scrape_configs"]} == set(metrics)
    _run(promtool, "check", "config", str(config))
