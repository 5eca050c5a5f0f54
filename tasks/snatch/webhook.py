"""The Snatch webhook: its admission decision inputs, metrics and route, in the house's webhook shell.

As KIM Snatch (``cmd/main.go``): ``POST /mutate--v1-pod`` on the HTTPS port (9443) answers
``admission.k8s.io/v1`` AdmissionReviews; ``/healthz`` and ``/readyz`` on the health port (8081);
``/metrics`` over plain HTTP on the metrics port (8080). The serving key pair comes from the
certificate directory and is reloaded in place when it changes; on every (re)load the caBundle sync is
enqueued on the ``snatch`` queue (:func:`tasks.snatch.controller.ca_sync_enqueuer`). The listeners, TLS,
hot reload, review handling and the signal-driven process are :mod:`webhooks`' (:mod:`webhooks.serving`);
this module keeps Snatch's decision inputs (the cluster view), its metrics and its route.

Differences from the original: a malformed AdmissionReview is answered with an HTTP 4xx (400; 413 past
:data:`tasks.snatch.mutate.MAX_BODY_BYTES`) and an AdmissionReview with ``allowed: false`` and a failed
``status`` (the original: a 200); the body size, JSON depth, time and concurrency of requests are
bounded (:mod:`webhooks.server`); a failure inside the mutation admits the Pod unchanged (the original denies it
with 403); ``/readyz`` fails until a certificate is loaded and the listener is up.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from tasks.snatch import controller as cabundle
from tasks.snatch import metrics
from tasks.snatch.certs import ensure_dev_certs
from tasks.snatch.clusterview import ClusterView, KubeClusterView
from tasks.snatch.mutate import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    OMITTED_NAMESPACES,
    REVIEW,
    AdmissionRequest,
    ClusterContext,
    Decision,
    Reason,
    admission_request,
    decide,
    decision_response,
)
from webhooks import server as review_server
from webhooks import serving
from webhooks.certificates import CertificateError, KeyPair
from webhooks.clients import kube_factory
from webhooks.review import MalformedReview, Review
from webhooks.serving import RunningWebhook

log = logging.getLogger("reconcilery.snatch.webhook")

#: Path of the Pod mutation endpoint (controller-runtime's path for the core/v1 Pod defaulter).
MUTATE_PATH = "/mutate--v1-pod"
DEFAULT_PORT = 9443
DEFAULT_HEALTH_PORT = 8081
DEFAULT_METRICS_PORT = 8080

# Expected skips are debug; unexpected ones are warnings ("a log line and a metric").
_UNEXPECTED = {Reason.NO_POOL_NODE, Reason.NAMESPACE_UNKNOWN, Reason.MALFORMED_POD, Reason.NOT_A_POD}


class AdmissionHandler:
    """Answers AdmissionReviews with the pool ``pool`` and the cluster knowledge of ``view``."""

    def __init__(self, pool: str, view: ClusterView) -> None:
        self.pool = pool
        self.view = view
        self._endpoint = review_server.review_endpoint(REVIEW, self.decide, on_malformed=self.malformed)

    async def context_for(self, request: AdmissionRequest) -> ClusterContext:
        """The cluster context; the namespace is only looked up when the decision needs it."""
        present = await self.view.pool_node_present_now()
        labels = None
        if request.operation == "CREATE" and present and request.namespace not in OMITTED_NAMESPACES:
            labels = await self.view.namespace_labels(request.namespace)
        return ClusterContext(self.pool, present, labels)

    async def decide(self, review: Review) -> dict[str, Any]:
        """The ``response`` fields for one parsed AdmissionReview (the decision of :mod:`webhooks.review`'s
        skeleton). A failure inside the mutation admits the Pod unchanged: Snatch never blocks a Pod."""
        request = admission_request(review)
        try:
            decision = decide(request, await self.context_for(request))
        except Exception as exc:  # never block a Pod: admit unchanged
            log.exception("mutation failed, admitting unchanged uid=%s pod=%s/%s", request.uid, request.namespace,
                          request.name)
            decision = Decision(Reason.MALFORMED_POD, f"internal error: {exc}")
            metrics.ADMISSION_REQUESTS.labels("unchanged", "internal_error").inc()
        else:
            metrics.ADMISSION_REQUESTS.labels("mutated" if decision.mutated else "unchanged",
                                              decision.reason.value).inc()
        level = (logging.INFO if decision.mutated else
                 logging.WARNING if decision.reason in _UNEXPECTED else logging.DEBUG)
        if log.isEnabledFor(level):
            log.log(level, "admission uid=%s pod=%s/%s reason=%s message=%s", request.uid, request.namespace,
                    request.name, decision.reason.value, decision.message)
        return decision_response(decision)

    @staticmethod
    def malformed(exc: MalformedReview) -> None:
        """Count and log a malformed review (answered by the skeleton)."""
        metrics.ADMISSION_REQUESTS.labels("rejected", "malformed_review").inc()
        log.warning("malformed admission review status=%d error=%s", exc.status, exc.message)

    async def handle(self, http: web.Request) -> web.StreamResponse:
        """The aiohttp handler of :data:`MUTATE_PATH` (timed by the admission duration histogram)."""
        started = time.perf_counter()
        response = await self._endpoint(http)
        metrics.ADMISSION_DURATION.observe(time.perf_counter() - started)
        return response


class SnatchWebhook(serving.WebhookServer):
    """The Snatch webhook process: :data:`MUTATE_PATH` answered by an :class:`AdmissionHandler` over ``view``,
    in :class:`webhooks.serving.WebhookServer`'s shell (HTTPS, health and metrics listeners, hot reload).

    Args:
        cert_dir: directory with ``tls.crt``, ``tls.key`` (and ``ca.crt``).
        pool: Kyma worker pool name.
        view: cluster view (:class:`KubeClusterView` in production), started and stopped with the server.
        host: listen address of all three listeners.
        port, health_port, metrics_port: ports; ``0`` picks a free one (see :attr:`ports`);
            ``metrics_port < 0`` disables metrics.
        on_cert_reload: called after each certificate (re)load (the caBundle sync enqueue).
        cert_poll_interval: seconds between certificate polls besides file events.
    """

    def __init__(self, cert_dir: str | os.PathLike[str], pool: str, view: ClusterView, host: str = "0.0.0.0",
                 port: int = DEFAULT_PORT, health_port: int = DEFAULT_HEALTH_PORT,
                 metrics_port: int = DEFAULT_METRICS_PORT, on_cert_reload: Callable[[], None] | None = None,
                 cert_poll_interval: float = 10.0) -> None:
        self.view = view
        self.handler = AdmissionHandler(pool, view)
        self.enqueue_ca_sync = on_cert_reload
        super().__init__("snatch", cert_dir, REVIEW, {MUTATE_PATH: self.handler.handle}, inputs=view, host=host,
                         port=port, health_port=health_port, metrics_port=metrics_port,
                         on_cert_reload=self._count_reload, on_cert_error=self._count_failure,
                         cert_poll_interval=cert_poll_interval, logger=log)

    def _count_reload(self, pair: KeyPair | None) -> None:
        if pair is not None:
            metrics.CERT_NOT_AFTER.set(pair.not_after.timestamp())
        metrics.CERT_RELOADS.labels("success").inc()
        if self.enqueue_ca_sync is not None:
            self.enqueue_ca_sync()

    @staticmethod
    def _count_failure(_: CertificateError) -> None:
        metrics.CERT_RELOADS.labels("error").inc()


# ---- process wiring ----------------------------------------------------------------------------


def build_server(cert_dir: str, pool: str, port: int, health_port: int, metrics_port: int,
                 kubeconfig: str | None, host: str, *, node_check_interval: float = 10.0,
                 namespace_resync: float = 30.0, webhook_config_name: str | None = None,
                 cert_poll_interval: float = 10.0) -> SnatchWebhook:
    """A :class:`SnatchWebhook` with a :class:`KubeClusterView` over ``kubeconfig`` (``None``: the
    local cluster as :func:`kube.client_for`). With ``webhook_config_name`` every certificate
    (re)load enqueues that MutatingWebhookConfiguration's caBundle sync."""
    view = KubeClusterView(kube_factory(kubeconfig), pool, node_interval=node_check_interval,
                           namespace_interval=namespace_resync)
    on_reload = cabundle.ca_sync_enqueuer(webhook_config_name) if webhook_config_name else None
    return SnatchWebhook(cert_dir, pool, view, host=host, port=port, health_port=health_port,
                         metrics_port=metrics_port, on_cert_reload=on_reload, cert_poll_interval=cert_poll_interval)


def serve(cert_dir: str, pool: str, port: int, health_port: int, metrics_port: int, kubeconfig: str | None,
          host: str, *, node_check_interval: float = 10.0, namespace_resync: float = 30.0,
          webhook_config_name: str | None = None) -> None:
    """Run the webhook until SIGTERM or SIGINT (blocking; must run in the main thread).

    Raises :class:`webhooks.certificates.CertificateError` when the key pair cannot be loaded at start,
    ``OSError`` when a port cannot be bound.
    """
    server = build_server(cert_dir, pool, port, health_port, metrics_port, kubeconfig, host,
                          node_check_interval=node_check_interval, namespace_resync=namespace_resync,
                          webhook_config_name=webhook_config_name)
    serving.serve(server, host=host, kubeconfig=kubeconfig)


def start_dev_webhook(state_dir: str | os.PathLike[str], kubeconfig: str | None, pool: str = "cpu-worker-0",
                      *, host: str = "127.0.0.1", port: int = 0, health_port: int = 0, metrics_port: int = 0,
                      webhook_config_name: str | None = None) -> tuple[str, str, Callable[[], None]]:
    """Generate a dev CA + serving certificate under ``<state_dir>/snatch`` and run the webhook in a
    background thread of this process (``reconcilery up``).

    Returns ``(url, ca_path, stop)``: the Pod mutation URL, the CA certificate clients verify
    against, and a callable that stops the server. Ports ``0`` pick free ones. With
    ``webhook_config_name`` each certificate (re)load enqueues its caBundle sync on this process's
    workqueue; the snatch worker then needs ``RECONCILERY_SNATCH_CERT_DIR=<dirname of ca_path>``.
    """
    dev = ensure_dev_certs(state_dir)
    server = build_server(str(dev.cert_dir), pool, port, health_port, metrics_port, kubeconfig, host,
                          webhook_config_name=webhook_config_name)
    running = RunningWebhook(server).start()
    return running.url, str(Path(dev.ca_path).absolute()), running.stop


def dev_webhook_configuration(url: str, name: str | None = None) -> dict[str, Any]:
    """The MutatingWebhookConfiguration of deploy/snatch with ``clientConfig.url`` = ``url`` instead of the
    in-cluster Service (for a dev API server: ``reconcilery up`` may create it so the caBundle sync has
    a target). ``caBundle`` is left to the ``snatch-cabundle`` controller."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name or cabundle.webhook_config_name(),
                     "labels": {"app.kubernetes.io/component": "kim-snatch"}},
        "webhooks": [{
            "name": "mpod-v1.kb.io",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": url},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"],
                       "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE}},
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "matchPolicy": "Exact",
            "reinvocationPolicy": "Never",
            "timeoutSeconds": 2,
        }],
    }
