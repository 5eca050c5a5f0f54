"""``reconcilery up``: every component of Reconcilery on one machine.

Starts, in order: the dev Kubernetes API server (unless a kubeconfig is given) and a local Redis
(unless a URL is given); the CRDs the controllers need (dev server only); the local stand-ins the
examples talk to (NGINX Plus hosts named in ``nkl-config`` that live on loopback, the Snatch webhook);
then the processes of a deployment: the watchers, one worker per queue that has controllers, beat
and Flower. Manifests given with ``--apply`` are applied once everything is ready.

Lifecycle (:mod:`reconcilery.supervisor`): Ctrl-C, SIGTERM and SIGHUP stop every child and server
the same way; children also die with ``up`` when it is SIGKILLed (parent-death signal). A taken
default port (Flower's 5555) is replaced by a free one, and an NGINX Plus stand-in is only started
where nothing listens yet; both are said in one line naming the port and its holder.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import config
from kube.manifests import ManifestError, load_objects
from reconcilery.localredis import LocalRedis
from reconcilery.manifests import Discovery, apply
from reconcilery.supervisor import (
    StopRequested,
    Supervisor,
    choose_port,
    listening,
    port_holder,
    signals_deferred,
    stop_signals,
)

ROOT = Path(__file__).resolve().parents[1]
SETTLED_STATES = ("Ready", "OK", "Error", "Warning")
#: Applied kinds whose ``status.state`` the summary shows (and ``--once`` waits for).
STATUS_KINDS = ("APIRule", "APIGateway", "RateLimit")
SNATCH_POOL = "cpu-worker-0"  # the Kyma worker pool of the local run (examples/snatch)
POOL_LABEL = "worker.gardener.cloud/pool"

console = Console()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class UpOptions:
    """Options of ``reconcilery up`` (see the CLI for their meaning)."""

    kubeconfig: str | None = None
    redis_url: str | None = None
    apply: list[str] = field(default_factory=list)
    state_dir: Path = Path(".reconcilery")
    once: bool = False
    timeout: float = 180.0
    api_port: int = 0
    #: ``None``: :data:`DEFAULT_FLOWER_PORT`, or a free port when that one is taken.
    flower_port: int | None = None
    concurrency: int = 4


DEFAULT_FLOWER_PORT = 5555
#: Said when ``up`` needs the embedded default (distribution reconcilery-embedded) and it is missing.
EMBEDDED_MISSING = ("{what} is not installed: pip install 'reconcilery[embedded]' for the embedded default, "
                    "or pass --kubeconfig to use a real cluster")


class LocalRuntime:
    """The running components; :meth:`stop` stops every process and server it started."""

    def __init__(self, options: UpOptions) -> None:
        self.o = options
        self.state_dir = options.state_dir.resolve()
        self.logs = self.state_dir / "logs"
        self.endpoints: dict[str, Any] = {}
        self.supervisor = Supervisor(self.logs, cwd=ROOT)
        self._stops: list[Callable[[], None]] = []
        self.applied: list[dict[str, Any]] = []
        self.documents: list[dict[str, Any]] = []
        self.kubeconfig = ""
        self.env: dict[str, str] = {}
        self.devapi: Any = None  # the dev API server (None with --kubeconfig)
        self.cloud: Any = None  # reconcilery.cloudlocal.CloudLocal when Cloud Resources are applied

    # -- start ---------------------------------------------------------------------------------------

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.documents = load_objects(self.o.apply, recursive=True, required=("apiVersion", "kind"))
        self._start_kubernetes()
        self._start_redis()
        os.environ.update(self.env)  # this process talks to the same cluster and Redis as its children
        config.reset()  # settings read before are of the environment before
        dev = self.o.kubeconfig is None
        if dev:  # a real cluster brings its own CRDs (and Istio's)
            self._apply_crds()
            # the dev cluster allows v1beta1 APIRules, and has no kubelet to start Oathkeeper's Pods
            for name, value in (("RECONCILERY_APIRULE_V1BETA1_ACCESS", "allow"),
                                ("RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS", "0")):
                self.env[name] = os.environ.setdefault(name, value)
            config.reset()
            self._start_conversion_webhook()
            self._start_cloud()
        self._start_nginx_standins()
        self._start_webhook()
        self._start_processes()
        self._write_endpoints()

    def _start_kubernetes(self) -> None:
        if self.o.kubeconfig:
            self.kubeconfig = str(Path(self.o.kubeconfig).resolve())
            import yaml

            cfg = yaml.safe_load(Path(self.kubeconfig).read_text())
            self.endpoints["kubernetes"] = cfg["clusters"][0]["cluster"]["server"]
        else:
            try:
                from kubedev import DevAPIServer
            except ImportError:
                raise RuntimeError(EMBEDDED_MISSING.format(what="the dev Kubernetes API server")) from None

            server = DevAPIServer(port=self.o.api_port).start()
            self._stops.append(server.stop)
            self.devapi = server
            self.kubeconfig = str(self.state_dir / "kubeconfig")
            server.write_kubeconfig(self.kubeconfig)
            self.endpoints["kubernetes"] = server.url
            console.print(f"[green]✓[/green] dev Kubernetes API server at {server.url}")
        self.env["RECONCILERY_KUBECONFIG"] = self.kubeconfig

    def _start_redis(self) -> None:
        if self.o.redis_url:
            url = self.o.redis_url
        else:
            redis_dir = self.state_dir / "redis"
            server = LocalRedis(_free_port(), workdir=str(redis_dir), die_with_parent=True).start()
            self._stops.append(server.stop)
            url = server.url
            console.print(f"[green]✓[/green] Redis at {url}")
        self.endpoints["redis"] = url
        self.env["RECONCILERY_REDIS_URL"] = url

    def _kube(self) -> Any:
        from kube import client_for
        from kube.clusters import reset

        reset()  # RECONCILERY_KUBECONFIG was just set
        return client_for("local")

    def _apply_crds(self) -> None:
        from tasks.apigateway.install import install_crds

        install_crds(self._kube(), istio=True, conversion=True)

    def _start_conversion_webhook(self) -> None:
        """The APIRule conversion webhook in this process, as the dev API server reaches it: the
        certificate Secret and caBundle first (the original's init step; the ``apigateway-certificate``
        controller renews them later), then the listener, then the Service
        ``kyma-system/api-gateway-webhook-service`` with Endpoints on loopback."""
        from kube import resources
        from tasks.apigateway import certificate
        from tasks.apigateway.certificate_controller import ensure_certificate
        from tasks.apigateway.webhook import ConversionWebhook
        from webhooks import ThreadedListener

        kube = self._kube()
        # the applied Namespaces first, with their labels (the Snatch webhook's namespace cache sees them
        # from its start), then kyma-system for the certificate Secret if none of them is it
        discovery = Discovery(kube)
        for doc in self.documents:
            if doc.get("apiVersion") == "v1" and doc.get("kind") == "Namespace":
                apply(kube, discovery, json.loads(json.dumps(doc)))
        if kube.get(resources.NAMESPACE, "kyma-system") is None:
            kube.create(resources.NAMESPACE, {"metadata": {"name": "kyma-system"}})
        ensure_certificate(kube)
        namespace, name = certificate.SECRET
        listener = ThreadedListener(ConversionWebhook(lambda: kube.get(resources.SECRET, name, namespace=namespace),
                                                      host="127.0.0.1", port=0, poll_interval=2.0)).start()
        self._stops.append(listener.stop)
        webhook = listener.listener
        meta = {"name": certificate.SERVICE_NAME, "namespace": "kyma-system"}
        kube.create(resources.SERVICE, {"metadata": meta, "spec": {
            "ports": [{"name": "https-convert", "port": 9443, "targetPort": webhook.port}]}})
        kube.create(resources.ENDPOINTS, {"metadata": meta, "subsets": [{
            "addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https-convert", "port": webhook.port}]}]})
        deadline = time.monotonic() + 30
        while not webhook.ready and time.monotonic() < deadline:
            time.sleep(0.1)
        self.endpoints["conversion_webhook"] = webhook.url
        console.print(f"[green]✓[/green] APIRule conversion webhook at {webhook.url} "
                      f"(Service kyma-system/{certificate.SERVICE_NAME}; v1beta1, v2alpha1 and v2 served)")

    def _start_cloud(self) -> None:
        """Cloud Resources locally (:mod:`reconcilery.cloudlocal`): moto's server for AWS, the GCP and Azure
        stand-ins, the Garden and an SKR per Kyma CR as dev API server clusters, the runtime-watcher listener.
        Only when the applied documents hold Cloud Resources objects."""
        from reconcilery.cloudlocal import CloudLocal

        if self.devapi is None or not CloudLocal.wanted(self.documents):
            return
        self.cloud = CloudLocal(self.devapi, self._kube(), self.state_dir, log=console.print)
        self._stops.append(self.cloud.stop)
        env = self.cloud.start()
        if "RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL" not in os.environ:
            env["RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL"] = "10"  # a small local fleet revisits every 10 s, not 60
        self.env.update(env)
        os.environ.update(env)
        config.reset()
        self.documents = self.cloud.split(self.documents)
        port = _free_port()
        self._spawn("skr-listener", [sys.executable, "-m", "reconcilery.cli", "skr-listener", "--host", "127.0.0.1",
                                     "--port", str(port)])
        self.endpoints["skr_listener"] = f"http://127.0.0.1:{port}/v2/cloud-manager/event"
        console.print(f"[green]✓[/green] Cloud Resources: moto (AWS) at {self.cloud.endpoint}, GCP stand-in at "
                      f"{self.cloud.gcp.url}, Azure stand-in at {self.cloud.azure.url}, Garden cluster, "
                      f"runtime-watcher listener on :{port}")

    def _apply_cloud(self, apply_one: Callable[[Any, dict[str, Any]], dict[str, Any]], before: bool) -> int:
        """The Garden and SKR documents (``before``/after the KCP ones); after: endpoints and the sweep."""
        if self.cloud is None:
            return 0
        if before:
            return int(self.cloud.apply_before(apply_one))
        failed = int(self.cloud.apply_after(apply_one))
        self.endpoints.update(self.cloud.endpoints())
        self._write_endpoints()
        from tasks.cloud.controller import SWEEP, SWEEP_KEY
        from workers.app import workqueue

        workqueue().add(SWEEP, SWEEP_KEY)  # beat (re)starts it too, after its first interval
        return failed

    def _start_nginx_standins(self) -> None:
        """One NGINX Plus stand-in per loopback host of the ``nkl-config`` ConfigMap being applied,
        declaring the upstreams the applied Services name."""
        hosts = [h.strip() for d in self.documents if d.get("kind") == "ConfigMap"
                 and d.get("metadata", {}).get("name") == "nkl-config"
                 for h in str((d.get("data") or {}).get("nginx-hosts", "")).split(",") if h.strip()]
        if not hosts:
            return
        try:
            from standins.nginxplus import NginxPlusStandIn
        except ImportError:
            console.print(f"[yellow]![/yellow] NGINX Plus hosts {', '.join(hosts)} left to their own servers: "
                          "the stand-ins are not installed (pip install 'reconcilery\\[embedded]')", soft_wrap=True)
            return
        from tasks.nginx.settings import EdgeNames
        from tasks.nginx.translate import service_ports

        names = EdgeNames()
        ports = [p for d in self.documents if d.get("kind") == "Service" for p in service_ports(d, names)]
        http = sorted({str(p.upstream.name) for p in ports if p.upstream.protocol == "http"})
        stream = sorted({str(p.upstream.name) for p in ports if p.upstream.protocol == "stream"})
        self.endpoints["nginx_plus"] = []
        for host in hosts:
            url = urlsplit(host)
            if url.hostname not in ("127.0.0.1", "localhost") or not url.port:
                continue
            if listening(url.hostname, url.port):  # a real NGINX Plus, or another tool: leave it be
                console.print(f"[yellow]![/yellow] {host}: port {url.port} is taken by {port_holder(url.port)}; "
                              "no NGINX Plus stand-in started, this host is left to its own server", soft_wrap=True)
                self.endpoints.setdefault("nginx_plus_external", []).append(host)
                continue
            standin = NginxPlusStandIn(port=url.port, http_upstreams=http, stream_upstreams=stream,
                                       prefix=url.path or "/api").start()
            self._stops.append(standin.stop)
            self.endpoints["nginx_plus"].append(standin.url)
            console.print(f"[green]✓[/green] NGINX Plus stand-in at {standin.url}")

    def _start_webhook(self) -> None:
        """Run the Snatch webhook in this process; on the dev API server also register it (a
        MutatingWebhookConfiguration with the dev CA as caBundle) so Pods are mutated as in a cluster."""
        import base64

        from tasks.snatch.webhook import dev_webhook_configuration, start_dev_webhook

        url, ca_path, stop = start_dev_webhook(self.state_dir, self.kubeconfig, SNATCH_POOL)
        self._stops.append(stop)
        self.endpoints.update(webhook=url, webhook_ca=ca_path)
        self.env["RECONCILERY_SNATCH_CERT_DIR"] = str(Path(ca_path).parent)
        console.print(f"[green]✓[/green] Snatch webhook at {url}")
        if self.o.kubeconfig is None:  # never register a loopback webhook on a real cluster
            from kube import resources

            config = dev_webhook_configuration(url)
            for hook in config["webhooks"]:
                hook["clientConfig"]["caBundle"] = base64.b64encode(Path(ca_path).read_bytes()).decode()
            self._kube().create(resources.MUTATING_WEBHOOK_CONFIGURATION, config)
            console.print(f"[green]✓[/green] MutatingWebhookConfiguration {config['metadata']['name']} "
                          "(the dev API server calls it)")

    def _spawn(self, name: str, args: list[str], extra_env: dict[str, str] | None = None) -> None:
        self.supervisor.spawn(name, args, {**os.environ, **self.env, **(extra_env or {})})

    def _start_processes(self) -> None:
        from workers.app import load_domains
        from workers.controller import registry

        load_domains()
        cli = [sys.executable, "-m", "reconcilery.cli"]
        health = _free_port()
        self._spawn("watch", [*cli, "watch", "--health-port", str(health), "--health-host", "127.0.0.1"])
        queues = sorted({c.queue for c in registry})
        for q in queues:
            self._spawn(f"worker-{q}", [*cli, "worker", "-Q", q, "-c", str(self.o.concurrency), "-n", f"{q}@%h"])
        self._spawn("beat", [*cli, "beat"])
        flower = choose_port("Flower", self.o.flower_port or DEFAULT_FLOWER_PORT, self.o.flower_port is not None)
        if flower.note:
            console.print(f"[yellow]![/yellow] {flower.note}", soft_wrap=True)
        self._spawn("flower", [sys.executable, "-m", "celery", "-A", "workers.app", "flower",
                               f"--port={flower.port}", "--address=127.0.0.1"],
                    {"FLOWER_UNAUTHENTICATED_API": "true"})
        self.endpoints["flower"] = f"http://127.0.0.1:{flower.port}"
        self.endpoints["watch_health"] = f"http://127.0.0.1:{health}"
        self._wait_ready(len(queues), health)
        console.print(f"[green]✓[/green] watchers, {len(queues)} worker pools ({', '.join(queues)}), beat, Flower")

    def _wait_ready(self, workers: int, health_port: int) -> None:
        import redis

        from workers.app import WORKERS_READY

        r = redis.Redis.from_url(self.endpoints["redis"])
        r.delete(WORKERS_READY)  # stale pids of an earlier run on an external Redis
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self._check_children()
            with contextlib.suppress(requests.RequestException):
                if (r.scard(WORKERS_READY) >= workers
                        and requests.get(f"http://127.0.0.1:{health_port}/readyz", timeout=1).ok):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"components not ready after 60 s; see {self.logs}")

    def _check_children(self) -> None:
        self.supervisor.check()

    def _write_endpoints(self) -> None:
        (self.state_dir / "endpoints.json").write_text(json.dumps(self.endpoints, indent=2) + "\n")

    # -- apply and settle ----------------------------------------------------------------------------

    def apply_manifests(self) -> int:
        """Apply ``--apply`` documents in order; returns how many failed (each failure is printed)."""
        kube = self._kube()
        discovery = Discovery(kube)
        discoveries: dict[int, Discovery] = {}

        def apply_one(target: Any, doc: dict[str, Any]) -> dict[str, Any]:
            return apply(target, discoveries.setdefault(id(target), Discovery(target)), doc)

        failed = self._apply_cloud(apply_one, before=True)
        for doc in self.documents:
            ref = f"{doc['kind']} {doc.get('metadata', {}).get('namespace', '')}/{doc['metadata'].get('name')}"
            try:
                self.applied.append(apply(kube, discovery, json.loads(json.dumps(doc))))
            except Exception as exc:
                failed += 1
                console.print(f"[red]✗[/red] {ref}: {exc}")
        failed += self._apply_cloud(apply_one, before=False)
        console.print(f"[green]✓[/green] applied {len(self.applied)} objects"
                      + (f", [red]{failed} failed[/red]" if failed else ""))
        return failed

    def settled(self) -> bool:
        """Every applied APIRule has a final state and no controller has work due within 2 s."""
        from reconcilery.cloudlocal import CloudLocal
        from workers.app import workqueue
        from workers.controller import registry

        wq = workqueue()
        for c in registry:
            if c.name in CloudLocal.ALWAYS_BUSY:
                continue
            s = wq.status(c.name)
            due = wq.next_due(c.name)
            if s.waiting or s.in_progress or (due is not None and due < 2):
                return False
        if self.cloud is not None and not self.cloud.settled():
            return False
        return all(row[2] in SETTLED_STATES for row in self.summary_rows() if row[0] in STATUS_KINDS)

    def wait_settled(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        stable = 0
        while time.monotonic() < deadline:
            self._check_children()
            stable = stable + 1 if self.settled() else 0
            if stable >= 3:
                return True
            time.sleep(0.5)
        return False

    def summary_rows(self) -> list[tuple[str, str, str, str]]:
        """(kind, namespace/name, state, detail) for APIRules, Pods (Snatch) and NGINX upstreams."""
        from kube import Resource

        kube = self._kube()
        rows: list[tuple[str, str, str, str]] = []
        for obj in self.applied:
            if obj.get("kind") not in STATUS_KINDS:
                continue
            group, _, version = obj["apiVersion"].rpartition("/")
            if obj["kind"] == "APIRule":
                version = "v2alpha1"  # the hub: its status has a state whatever version was applied
            namespaced = obj["kind"] != "APIGateway"
            res = Resource(group, version, f"{obj['kind'].lower()}s", obj["kind"], namespaced)
            meta = obj["metadata"]
            current = kube.get(res, meta["name"], meta.get("namespace") if namespaced else None) or {}
            status = current.get("status") or {}
            detail = str(status.get("description", "")).splitlines()
            state = str(status.get("state", "Pending"))
            if obj["kind"] == "APIRule" and status.get("observedGeneration") != (current.get("metadata") or {}).get(
                    "generation"):
                state = f"{state} (reconciling)" if status else "Pending"
            ref = f"{meta['namespace']}/{meta['name']}" if namespaced else meta["name"]
            rows.append((obj["kind"], ref, state, detail[0] if detail else ""))
        rows.extend(self._pod_rows(kube))
        if self.cloud is not None:
            rows.extend(self.cloud.rows())
        for base in self.endpoints.get("nginx_plus", []):
            with contextlib.suppress(requests.RequestException, ValueError):
                for kind in ("http", "stream"):
                    version = max(requests.get(f"{base}/", timeout=2).json())
                    ups = requests.get(f"{base}/{version}/{kind}/upstreams", timeout=2).json()
                    for name, up in sorted(ups.items()):
                        servers = sorted(s["server"] for s in up.get("peers", []))
                        rows.append((f"NGINX {kind} upstream", f"{base} {name}", f"{len(servers)} servers",
                                     ", ".join(servers)))
        return rows

    def _pod_rows(self, kube: Any) -> list[tuple[str, str, str, str]]:
        """One row per applied Pod: ``mutated`` when it carries Snatch's preferred pool term, else
        ``unchanged`` with the reason Snatch would give for the applied manifest now."""
        from kube import resources
        from tasks.snatch.mutate import ClusterContext, admission_review, decide, parse_review

        pods = [o for o in self.applied if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        if not pods:
            return []
        pool_present = bool(kube.list(resources.NODE, label_selector=f"{POOL_LABEL}={SNATCH_POOL}"))
        rows: list[tuple[str, str, str, str]] = []
        for obj in pods:
            meta = obj["metadata"]
            current = kube.get(resources.POD, meta["name"], meta["namespace"]) or {}
            terms = (((current.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution") or []
            if any(e.get("key") == POOL_LABEL for t in terms if isinstance(t, dict)
                   for e in (t.get("preference") or {}).get("matchExpressions") or [] if isinstance(e, dict)):
                rows.append(("Pod", f"{meta['namespace']}/{meta['name']}", "mutated",
                             f"preferred node affinity {POOL_LABEL} In [{SNATCH_POOL}]"))
                continue
            original = next((d for d in self.documents if d.get("kind") == "Pod"
                             and (d.get("metadata") or {}).get("name") == meta["name"]
                             and (d.get("metadata") or {}).get("namespace", "default") == meta["namespace"]), obj)
            namespace = kube.get(resources.NAMESPACE, meta["namespace"]) or {}
            labels = (namespace.get("metadata") or {}).get("labels") or {}
            review = admission_review({**original, "metadata": {**original.get("metadata", {}),
                                                                 "namespace": meta["namespace"]}})
            decision = decide(parse_review(review, None), ClusterContext(SNATCH_POOL, pool_present, labels))
            detail = decision.message if not decision.mutated else "not mutated at admission (webhook not called)"
            rows.append(("Pod", f"{meta['namespace']}/{meta['name']}", "unchanged", detail))
        return rows

    def print_summary(self) -> None:
        table = Table("kind", "object", "state", "detail", title="Reconcilery", show_lines=False)
        for row in self.summary_rows():
            color = {"Ready": "green", "Error": "red", "Warning": "yellow"}.get(row[2], "")
            table.add_row(row[0], row[1], f"[{color}]{row[2]}[/{color}]" if color else row[2], row[3][:100])
        console.print(table)
        ep = Table("endpoint", "value", title="endpoints.json")
        for k, v in self.endpoints.items():
            ep.add_row(k, ", ".join(v) if isinstance(v, list) else str(v))
        console.print(ep)
        console.print(f"kubectl --kubeconfig {self.kubeconfig} get apirules,virtualservices -A")

    # -- stop ----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every child process (SIGTERM, then SIGKILL after 10 s in total) and every server, in
        reverse. Ctrl-C, SIGTERM and SIGHUP arriving meanwhile are ignored: the stop always ends."""
        with signals_deferred():
            self.supervisor.stop()
            for stop in reversed(self._stops):
                with contextlib.suppress(Exception):
                    stop()


def run_up(options: UpOptions) -> int:
    """Run until Ctrl-C, SIGTERM or SIGHUP (or, with ``--once``, until settled); returns the exit code:
    0 when stopped by a signal while running, ``128 + signal`` when one interrupts ``--once``."""
    runtime = LocalRuntime(options)
    with stop_signals():
        return _run(runtime, options)


def _run(runtime: LocalRuntime, options: UpOptions) -> int:
    try:
        runtime.start()
        failed = runtime.apply_manifests() if runtime.documents else 0
        if options.once:
            ok = runtime.wait_settled(options.timeout)
            runtime.print_summary()
            if not ok:
                console.print(f"[red]not settled within {options.timeout:.0f} s[/red]; logs in {runtime.logs}")
                return 1
            return 1 if failed else 0
        runtime.print_summary()
        console.print("running; Ctrl-C (or SIGTERM, SIGHUP) stops every process")
        while True:
            runtime._check_children()
            time.sleep(1)
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, StopRequested) else 2
        console.print(f"stopping ({'Ctrl-C' if signum == 2 else signal.Signals(signum).name})")
        return 128 + signum if options.once else 0
    except (ManifestError, RuntimeError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 2
    finally:
        runtime.stop()
