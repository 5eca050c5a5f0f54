"""caBundle sync: keep every ``clientConfig.caBundle`` of the webhook's MutatingWebhookConfiguration
equal to the CA that signed the serving certificate.

As KIM Snatch's certwatcher callback (``cmd/main.go``, notes §4.3): read ``ca.crt``, GET the
configuration, set the caBundle of each webhook that differs, write only if something changed, retry
quickly on conflicts. Here it is a controller on the ``snatch`` queue: the webhook enqueues the key
after each certificate (re)load, and the periodic resync (beat) repairs a configuration that was
re-applied without its caBundle. Failures back off and retry instead of the original's exit 1.
:func:`ca_sync_enqueuer` is the webhook's side: it enqueues the key.

The key is ``Key(cluster, "", <configuration name>)``. The CA comes from, in this order:
``$RECONCILERY_SNATCH_CERT_DIR/ca.crt`` when that variable is set (local runs, where the worker sees
the webhook's certificate directory), else key ``ca.crt`` of the Secret
``$RECONCILERY_SNATCH_CA_SECRET`` (``namespace/name``, default ``kyma-system/kim-snatch-certificates``,
the Secret the webhook mounts).
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509

from kube import Kube, client_for, resources
from kube.toolkit import update_on_conflict
from tasks.snatch import settings
from tasks.snatch.settings import DEFAULT_CA_SECRET, WEBHOOK_CONFIG_NAME  # noqa: F401  (re-exported)
from webhooks.certificates import with_ca_bundle as with_ca_bundle  # pure; the unit tests call it here
from workers import workqueue
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = logging.getLogger("reconcilery.snatch.cabundle")

CONTROLLER_NAME = "snatch-cabundle"
QUEUE = "snatch"
ENV_CERT_DIR = "RECONCILERY_SNATCH_CERT_DIR"
ENV_CA_SECRET = "RECONCILERY_SNATCH_CA_SECRET"
#: Seconds between resyncs (the original polls its certificate files every 10 s; a caBundle
#: wiped by a re-apply is repaired within this interval).
RESYNC_SECONDS = 60.0


class CAError(Exception):
    """The CA certificate is missing or is not PEM-encoded X.509."""


def webhook_config_name() -> str:
    """The configuration this process maintains: ``$RECONCILERY_SNATCH_WEBHOOK_CONFIG`` or the default."""
    return settings.current().webhook_config


def webhook_config_key(name: str | None = None, cluster: str = LOCAL_CLUSTER) -> Key:
    """The workqueue key of the caBundle sync of configuration ``name``."""
    return Key(cluster, "", name or webhook_config_name())


def validate_ca(pem: bytes) -> bytes:
    """``pem`` if it holds at least one PEM X.509 certificate; raises :class:`CAError` otherwise."""
    try:
        if not x509.load_pem_x509_certificates(pem):
            raise ValueError("no certificate")
    except ValueError as exc:
        raise CAError(f"CA is not a PEM certificate: {exc}") from None
    return pem


def read_ca(kube: Kube) -> bytes:
    """The CA PEM from the certificate directory or the Secret (see the module doc).

    Raises :class:`CAError` when it is missing or invalid; API errors of the Secret read propagate.
    """
    env = settings.current()
    cert_dir = env.cert_dir
    if cert_dir:
        path = Path(cert_dir) / "ca.crt"
        try:
            return validate_ca(path.read_bytes())
        except OSError as exc:
            raise CAError(f"unable to read certificate {path}: {exc}") from None
    ref = env.ca_secret
    namespace, _, name = ref.rpartition("/")
    secret = kube.get(resources.SECRET, name, namespace=namespace or "kyma-system")
    if secret is None:
        raise CAError(f"Secret {ref} not found")
    raw = (secret.get("data") or {}).get("ca.crt")
    if not raw:
        raise CAError(f"Secret {ref} has no ca.crt")
    try:
        return validate_ca(base64.b64decode(raw))
    except (binascii.Error, ValueError) as exc:
        raise CAError(f"Secret {ref} ca.crt is not base64: {exc}") from None


def sync_ca_bundle(kube: Kube, name: str, ca_pem: bytes) -> list[str]:
    """Write ``ca_pem`` into configuration ``name`` (GET, pure update, PUT with resourceVersion,
    again on 409 up to :data:`kube.toolkit.update.CONFLICT_ATTEMPTS` times:
    :func:`kube.toolkit.update_on_conflict`). Returns the changed webhook names (``[]`` when up to
    date or when the configuration does not exist). Raises ``kube.Conflict`` after the last attempt
    and any other ``kube.ApiError``.
    """
    changed: list[str] = []

    def update(config: dict[str, Any] | None) -> dict[str, Any] | None:
        if config is None:
            log.info("mutating webhook configuration not found, nothing to sync name=%s", name)
            return None
        updated, changed[:] = with_ca_bundle(config, ca_pem)
        if updated is None:
            log.debug("mutating webhook configuration up to date name=%s", name)
        return updated

    if update_on_conflict(kube, resources.MUTATING_WEBHOOK_CONFIGURATION, name, update) is None:
        return []
    log.info("patched caBundle of mutating webhook configuration name=%s webhooks=%s", name, ",".join(changed))
    return changed


def reconcile(key: Key) -> Result:
    """Reconcile the caBundle of configuration ``key.name`` in cluster ``key.cluster``."""
    kube = client_for(key.cluster)
    try:
        ca_pem = read_ca(kube)
    except CAError as exc:
        log.error("unable to read CA for caBundle sync name=%s error=%s", key.name, exc)
        return Result.error(str(exc))
    sync_ca_bundle(kube, key.name, ca_pem)
    return Result.done()


def list_keys() -> list[Key]:
    """The one key the resync enqueues: the configured webhook configuration of the local cluster."""
    return [webhook_config_key()]


def ca_sync_enqueuer(webhook_config_name: str) -> Callable[[], None]:
    """A callback that enqueues the caBundle sync of ``webhook_config_name`` on the ``snatch`` queue of
    this process's workqueue (``$RECONCILERY_REDIS_URL``): the webhook calls it after each certificate
    (re)load.

    Best effort (a failure is logged): beat's periodic resync of the controller catches up.
    The enqueue runs in a short-lived thread so the webhook's event loop is never blocked on Redis.
    """
    def enqueue() -> None:
        try:
            workqueue.current().add(CONTROLLER_NAME, webhook_config_key(webhook_config_name))
            log.info("caBundle sync enqueued webhook_config=%s", webhook_config_name)
        except Exception as exc:
            log.warning("caBundle sync not enqueued (beat resync will catch up) webhook_config=%s error=%r",
                        webhook_config_name, exc)

    def callback() -> None:
        threading.Thread(target=enqueue, name="snatch-ca-enqueue", daemon=True).start()

    return callback


_BACKOFF = Backoff(base=0.5, cap=60.0, jitter=0.1)
CONTROLLER = registry.register(Controller(CONTROLLER_NAME, QUEUE, reconcile, _BACKOFF, RESYNC_SECONDS, list_keys))
