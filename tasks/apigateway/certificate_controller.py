"""The ``apigateway-certificate`` controller: the conversion webhook's serving certificate and caBundle.

As api-gateway's Certificate controller (``internal/controller/certificate``, notes §7; seed: "verifies
whether the Certificate is currently valid and will not expire within the next 14 days ... it is
renewed"), one key, the Secret ``kyma-system/api-gateway-webhook-certificate``, on the ``apigateway``
queue, every hour:

1. read the Secret; when its pair does not verify 14 days from now (:func:`certificate.verify`),
   generate a new CA and serving certificate and write them (create the Secret when missing);
2. make the APIRule CRD's ``spec.conversion.webhook.clientConfig.caBundle`` the Secret's ``tls.crt``
   (and every webhook's caBundle of ``api-gateway-mutating-webhook-configuration`` and
   ``api-gateway-validating-webhook-configuration`` when they exist);
3. requeue after one hour. Failures back off (rate limiter as the original's: 5 ms doubling, capped).

Differences from the original, deliberately: the Secret is created by the reconcile when it is missing
(the original's init container does it before the manager starts, and the reconcile fails without
it; ``reconcilery up`` runs :func:`ensure_certificate` at start-up the same way); the caBundle is
compared and repaired on every reconcile, not only after a renewal (a CRD re-applied without its
caBundle breaks every v1beta1/v2 read until the next renewal in the original); missing webhook
configurations are skipped instead of failing; and a cluster whose APIRule CRD has no conversion
webhook (``strategy: None``) needs no certificate: the reconcile does nothing there.

Environment: ``RECONCILERY_APIGATEWAY_CERT_KEY_BITS`` (4096) is the RSA key size.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kube import client_for, resources
from kube.toolkit import update_on_conflict
from tasks.apigateway import certificate
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.certificate import CertificateError
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = logging.getLogger("reconcilery.apigateway.certificate")

CONTROLLER_NAME = "apigateway-certificate"
QUEUE = "apigateway"
#: Seconds between two reconciles of a valid certificate (the original's 1 h).
RECONCILIATION_SECONDS = 3600.0


def secret_key(cluster: str = LOCAL_CLUSTER) -> Key:
    """The one key of the controller."""
    return Key(cluster, *certificate.SECRET)


def key_size() -> int:
    """RSA key size of new certificates (``RECONCILERY_APIGATEWAY_CERT_KEY_BITS``, default 4096)."""
    return domain_settings.current().cert_key_bits


def _conversion_webhook(crd: dict[str, Any] | None) -> bool:
    conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
    return isinstance(conversion, dict) and conversion.get("strategy") == "Webhook"


@dataclass(frozen=True)
class Ensured:
    """What :func:`ensure_certificate` did: ``skipped`` (no conversion webhook), ``renewed`` (with the
    ``reason`` the old pair failed), ``written``: the objects whose caBundle was updated."""

    skipped: bool = False
    renewed: bool = False
    reason: str = ""
    written: tuple[str, ...] = ()


def ensure_certificate(kube: Any, bits: int | None = None) -> Ensured:
    """One reconcile's work (also ``reconcilery up``'s start-up step); ``bits``: RSA key size of a new
    pair (default :func:`key_size`). Raises :class:`CertificateError` (a CRD without conversion client
    config) and ``kube.ApiError``."""
    crd = kube.get(resources.CRD, certificate.APIRULE_CRD)
    if not _conversion_webhook(crd):
        log.info("APIRule CRD has no conversion webhook; no certificate needed crd=%s", certificate.APIRULE_CRD)
        return Ensured(skipped=True)
    namespace, name = certificate.SECRET
    secret = kube.get(resources.SECRET, name, namespace=namespace)
    cert_pem, key_pem = certificate.decode_secret_data(secret)
    renewed, reason = False, ""
    try:
        certificate.verify(cert_pem, key_pem)
        log.info("certificate is still valid and does not need to be updated secret=%s/%s", namespace, name)
    except CertificateError as exc:
        reason = str(exc)
        log.info("certificate verification did not succeed, renewing secret=%s/%s error=%s", namespace, name, reason)
        pair = certificate.generate(key_size=bits or key_size())
        _write_secret(kube, secret, pair)
        cert_pem, renewed = pair.cert_pem, True
        log.info("certificate renewed secret=%s/%s not_after=%s", namespace, name,
                 certificate.not_after(pair.cert_pem).isoformat())
    assert cert_pem is not None
    written = _sync_ca_bundles(kube, cert_pem)
    return Ensured(renewed=renewed, reason=reason, written=written)


def _write_secret(kube: Any, secret: dict[str, Any] | None, pair: certificate.KeyPair) -> None:
    namespace, name = certificate.SECRET
    if secret is None:
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(certificate.MODULE_LABEL)}
        manager = kube.get(resources.DEPLOYMENT, certificate.MANAGER_DEPLOYMENT[1],
                           namespace=certificate.MANAGER_DEPLOYMENT[0])
        if manager is not None:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": certificate.MANAGER_DEPLOYMENT[1],
                                        "uid": manager["metadata"]["uid"]}]
        if kube.get(resources.NAMESPACE, namespace) is None:
            kube.create(resources.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        kube.create(resources.SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                                       "data": pair.secret_data()})
        return
    kube.patch(resources.SECRET, name, {"metadata": {"resourceVersion": secret["metadata"]["resourceVersion"]},
                                        "data": pair.secret_data()}, namespace=namespace)


def _sync_ca_bundles(kube: Any, bundle: bytes) -> tuple[str, ...]:
    written: list[str] = []
    if update_on_conflict(kube, resources.CRD, certificate.APIRULE_CRD,
                          lambda crd: certificate.ca_bundle_update(crd or {}, bundle)) is not None:
        written.append(f"CustomResourceDefinition {certificate.APIRULE_CRD}")
        log.info("caBundle written crd=%s", certificate.APIRULE_CRD)
    for res, name in ((resources.MUTATING_WEBHOOK_CONFIGURATION, certificate.MUTATING_WEBHOOK_CONFIGURATION),
                      (resources.VALIDATING_WEBHOOK_CONFIGURATION, certificate.VALIDATING_WEBHOOK_CONFIGURATION)):
        # a missing configuration is skipped; a conflict fails the reconcile (it backs off and retries)
        if update_on_conflict(kube, res, name, lambda config: certificate.webhooks_ca_bundle_update(config, bundle)
                              if config is not None else None, attempts=1) is not None:
            written.append(f"{res.kind} {name}")
    return tuple(written)


def reconcile(key: Key) -> Result:
    """Reconcile the webhook certificate of ``key.cluster`` (other keys: nothing to do)."""
    if (key.namespace, key.name) != certificate.SECRET:
        return Result.done()
    try:
        outcome = ensure_certificate(client_for(key.cluster))
    except CertificateError as exc:
        log.error("failed to update certificate into CRD: %s", exc)
        return Result.error(f"failed to update certificate into CRD: {exc}")
    if outcome.skipped:
        return Result.done()
    return Result.requeue(RECONCILIATION_SECONDS)


def list_keys() -> list[Key]:
    """The key the resync enqueues."""
    return [secret_key()]


_BACKOFF = Backoff(base=0.005, cap=300.0, jitter=0.1)
CONTROLLER = registry.register(Controller(CONTROLLER_NAME, QUEUE, reconcile, _BACKOFF, RECONCILIATION_SECONDS,
                                          list_keys, timeout=60.0))
