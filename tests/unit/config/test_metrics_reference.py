"""docs/metrics.md is generated from the modules that define metrics (config/metrics_reference.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.metrics_reference import PROCESSES, collect, discover, markdown, processes_of

ROOT = Path(__file__).resolve().parents[3]


def test_the_metrics_reference_is_generated_from_the_metric_modules() -> None:
    assert (ROOT / "docs" / "metrics.md").read_text() == markdown(collect(discover())), (
        "docs/metrics.md is stale: python -m config.metrics_reference > docs/metrics.md")


def test_every_metric_of_the_contract_that_exists_today_is_documented_with_its_labels() -> None:
    docs = {d.name: d for d in collect(discover())}
    for name, labels, processes in [
        ("workqueue_depth", ("name",), ("worker",)),
        ("workqueue_adds_total", ("name",), ("worker", "watch")),
        ("controller_runtime_reconcile_total", ("controller", "result"), ("worker",)),
        ("controller_runtime_reconcile_time_seconds", ("controller",), ("worker",)),
        ("reconcilery_workqueue_parked_keys", ("controller",), ("worker",)),
        ("reconcilery_watch_events_total", ("registration", "type"), ("watch", "worker")),
        ("reconcilery_cloud_skr_connects_total", ("result", "kind"), ("worker",)),
        ("snatch_admission_requests_total", ("result", "reason"), ("webhook",)),
        ("kim_snatch_shoots_default_total", (), ("webhook",)),
        ("reconcilery_beat_sent_total", ("entry",), ("beat",)),
    ]:
        assert (docs[name].labels, docs[name].processes) == (labels, processes), name
    assert docs["controller_runtime_reconcile_time_seconds"].type == "histogram"
    assert docs["workqueue_depth"].module == "workers.metrics"


def test_discovery_finds_a_new_metric_module_by_its_source(tmp_path: Path) -> None:
    pkg = tmp_path / "tasks" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "metrics.py").write_text('from kube.toolkit.metrics import counter\nX = counter(\n    "demo_x", "X.")\n')
    (pkg / "plain.py").write_text("from collections import Counter\nC = Counter()\n")
    (tmp_path / "kube" / "toolkit").mkdir(parents=True)
    (tmp_path / "kube" / "toolkit" / "metrics.py").write_text('def counter(name): return Counter(name, "")\n')
    assert discover(tmp_path, ("tasks", "kube")) == ["tasks.demo.metrics"]


@pytest.mark.parametrize(("module", "metric", "expected"), [
    ("workers.metrics", "workqueue_depth", ("worker",)),
    ("workers.metrics", "workqueue_adds_total", ("worker", "watch")),
    ("watchers.engine", "", ("watch",)),
    ("tasks.cloud.skr.listener", "", ("skr-listener",)),
    ("tasks.apigateway.webhook", "", ("webhook",)),
    ("tasks.apigateway.conversion", "", ("webhook",)),
    ("tasks.cloud.provider_metrics", "", ("worker",)),
])
def test_processes_follow_the_table_then_the_rule(module: str, metric: str, expected: tuple[str, ...]) -> None:
    assert processes_of(module, PROCESSES, metric) == expected


def test_one_name_defined_differently_in_two_modules_is_an_error(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:

    for name, labels in (("one", '["a"]'), ("two", '["b"]')):
        (tmp_path / f"demo_metrics_{name}.py").write_text(
            "from prometheus_client import CollectorRegistry, Counter\n"
            f"X = Counter('demo_clash', 'X.', {labels}, registry=CollectorRegistry())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="demo_clash_total defined in demo_metrics_one and demo_metrics_two"):
        collect(["demo_metrics_one", "demo_metrics_two"])
