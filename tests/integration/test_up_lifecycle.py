"""``reconcilery up`` stopped by SIGTERM, SIGHUP or SIGKILL leaves no process behind; an NGINX Plus
host whose port is taken is left to its own server; every process it runs serves its metrics."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from reconcilery import monitoring
from tests.fixtures import prometheus
from tests.fixtures.processes import free_port, stop_process, wait_for
from tests.fixtures.scrape import scrape_all, scrape_typed
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration

#: What each process of ``up`` is recognised by on its /metrics (family names, as the parser names them).
CHARACTERISTIC = {
    "watch": {"reconcilery_watch_events", "reconcilery_watch_store_objects"},
    "worker": {"workqueue_depth", "workqueue_adds", "controller_runtime_reconcile_time_seconds"},
    "beat": {"reconcilery_beat_active", "reconcilery_beat_sent", "reconcilery_beat_last_tick_timestamp_seconds"},
    "flower": {"flower_events", "flower_worker_online"},
    "up": {"snatch_admission_requests"},  # the in-process Snatch webhook
}


#: Families the dashboards or alerts use that no process of `up` exports (as exposed), and why.
NOT_UNDER_UP: dict[str, str] = {
    "reconcilery_cloud_skr_listener_refused_total": "the skr-listener runs only in a deployment",
    "reconcilery_cloud_skr_notifications_total": "the skr-listener runs only in a deployment",
}


def check_monitoring(metrics: dict[str, str], workdir: Path) -> int:
    """Every family the dashboards and alerts use is exported by a process of the run (``metrics``:
    endpoints.json's), and, with Debian's prometheus at hand, every panel, variable and alert query is
    accepted by a Prometheus that scraped them all, and no alert's condition holds on this healthy run;
    returns how many queries answered with data."""
    exported = set().union(*(monitoring.exported_names(t) for t in scrape_typed(metrics).values()))
    used = monitoring.names_used(monitoring.DASHBOARDS, monitoring.RULES_FILE)
    missing = {name: sorted(where) for name, where in used.items() if name not in exported | set(NOT_UNDER_UP)}
    assert not missing, f"used by dashboards or alerts, exported by no process of up: {missing}"
    if prometheus.binary() is None:
        return -1  # a developer machine without the package; CI installs it (scripts/_bootstrap.sh)
    refused: dict[str, str] = {}
    firing: list[str] = []
    answered = 0
    with prometheus.running(metrics, workdir) as url:
        for where, promql in monitoring.queries(monitoring.DASHBOARDS, monitoring.RULES_FILE):
            try:
                result = prometheus.query(url, promql)
            except ValueError as exc:
                refused[where] = str(exc)
                continue
            answered += bool(result)
            if ": alert " in where and result:
                firing.append(where)
    assert not refused, refused
    assert not firing, f"alerts whose condition holds on a healthy run: {firing}"
    return answered


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_up_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals) -> None:
    with socket.socket() as taken:  # "a real NGINX Plus" already listens on this one
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port, free = taken.getsockname()[1], free_port()
        edge = tmp_path / "edge.yaml"
        edge.write_text(f"""apiVersion: v1
kind: Namespace
metadata: {{name: nkl}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: nkl-config, namespace: nkl}}
data:
  nginx-hosts: "http://127.0.0.1:{taken_port}/api,http://127.0.0.1:{free}/api"
""")
        out = tmp_path / "up.out"
        with open(out, "wb") as log:
            up = subprocess.Popen(
                [sys.executable, "-m", "reconcilery.cli", "up", "--state-dir", str(tmp_path / "state"),
                 "--flower-port", str(free_port()), "--apply", str(edge)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        descendants: list[int] = []
        try:
            wait_for(lambda: "running;" in out.read_text() or up.poll() is not None, timeout=180, interval=0.5,
                     message="up running")
            text = out.read_text()
            assert up.poll() is None, text
            assert (f"port {taken_port} is taken by pid " in text and "left to its own server" in text), text
            assert f"NGINX Plus stand-in at http://127.0.0.1:{free}/api" in text, text
            descendants[:] = [p.pid for p in psutil.Process(up.pid).children(recursive=True)]
            # Redis, watchers, a worker per queue, beat, Flower
            assert len(descendants) >= 5, descendants
            up.send_signal(sig)
            code = up.wait(60)
            if sig != signal.SIGKILL:
                assert code == 0, out.read_text()
                assert f"stopping ({sig.name})" in out.read_text()
            wait_for(lambda: not [p for p in descendants if _alive(p)], timeout=30, interval=0.2,
                     message="every child of up gone")
        finally:
            stop_process(up)
            for pid in descendants:  # on failure: never leave the orphans running
                with contextlib.suppress(psutil.Error):
                    psutil.Process(pid).kill()


@pytest.mark.timeout(420)
def test_up_restarts_a_sigkilled_worker_and_keeps_working(tmp_path: Path) -> None:
    """SIGKILL of the apigateway worker under ``up`` (the issue's user report): ``up`` says so in one
    line, restarts it after its backoff, and an APIRule created afterwards is reconciled. Before that:
    every process's metrics URL of endpoints.json answers Prometheus text with its own series, and the
    endpoints table lists them and Flower's task list."""
    from kubernetes import config as k8s_config

    from kube import Kube
    from tasks.apigateway.reads import APIRULE

    out = tmp_path / "up.out"
    state = tmp_path / "state"
    with open(out, "wb") as log:
        up = subprocess.Popen(
            [sys.executable, "-m", "reconcilery.cli", "up", "--state-dir", str(state),
             "--flower-port", str(free_port()), "--apply", str(ROOT / "examples" / "apigateway")],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    def worker() -> psutil.Process | None:
        for p in psutil.Process(up.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "apigateway" in p.cmdline() and "worker" in p.cmdline() and p.status() != psutil.STATUS_ZOMBIE:
                    return p
        return None

    descendants: list[int] = []
    try:
        wait_for(lambda: "running;" in out.read_text() or up.poll() is not None, timeout=180, interval=0.5,
                 message="up running")
        assert up.poll() is None, out.read_text()
        descendants[:] = [p.pid for p in psutil.Process(up.pid).children(recursive=True)]
        metrics = json.loads((state / "endpoints.json").read_text())["metrics"]
        workers = [name for name in metrics if name.startswith("worker-")]
        assert set(metrics) == {"watch", "beat", "flower", "up", *workers} and "worker-apigateway" in workers
        assert all(url.startswith("http://127.0.0.1:") and url.endswith("/metrics") for url in metrics.values())
        text = out.read_text()
        assert all(f"metrics {name}" in text and url in text for name, url in metrics.items()), text
        assert "flower tasks" in text and json.loads((state / "endpoints.json").read_text())["flower"] in text
        scraped: dict[str, set[str]] = {}

        def every_process_answers() -> bool:  # Flower's server is not awaited by up: it may take a moment
            scraped.update(scrape_all(metrics))  # raises naming the endpoint: wait_for's timeout reports it
            return True

        # 60 s: under CI's three test workers and the static checks on two cores, a process's first
        # answer once took more than 30 s
        wait_for(every_process_answers, timeout=60, interval=0.5, message="every metrics URL answers")
        for name, found in scraped.items():
            wanted = CHARACTERISTIC[name.split("-", 1)[0]] | {"process_cpu_seconds"}
            assert wanted <= found, (name, wanted - found)
        answered = check_monitoring(metrics, tmp_path / "prometheus")  # 20 of 72 queries have data here
        assert answered != 0  # some panel shows data
        victim = worker()
        assert victim is not None
        victim.kill()
        wait_for(lambda: "worker-apigateway exited with -9; restarting it in 1 s" in out.read_text(), timeout=30,
                 message="the restart announced")
        wait_for(lambda: (w := worker()) is not None and w.pid != victim.pid, timeout=30, message="a new worker")
        assert up.poll() is None and "error:" not in out.read_text(), out.read_text()
        kube = Kube(k8s_config.new_client_from_config(config_file=str(state / "kubeconfig")))
        rule = kube.get(APIRULE, "httpbin-public", "shop")
        assert rule is not None
        spec = {**rule["spec"], "hosts": ["after-restart.local.kyma.dev"]}  # its own host: no conflict
        kube.create(APIRULE, {"metadata": {"name": "after-restart", "namespace": "shop"}, "spec": spec})
        wait_for(lambda: ((kube.get(APIRULE, "after-restart", "shop") or {}).get("status") or {}).get("state"),
                 timeout=90, interval=0.5, message="an APIRule reconciled by the restarted worker")
        status = (kube.get(APIRULE, "after-restart", "shop") or {})["status"]
        assert status["state"] == "Ready", status
        up.send_signal(signal.SIGTERM)
        assert up.wait(60) == 0, out.read_text()
    finally:
        stop_process(up)
        for pid in descendants:  # on failure: never leave the orphans running
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
