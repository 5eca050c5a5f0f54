"""The API Gateway webhook certificate: generation, verification and the CRD caBundle (pure).

As api-gateway's ``internal/controller/certificate`` (notes §7): the Secret
``kyma-system/api-gateway-webhook-certificate`` holds ``tls.crt`` (the serving certificate followed by
the CA that signed it) and ``tls.key`` (the serving key, PKCS#1 ``RSA PRIVATE KEY`` PEM). The CA is
self-signed (RSA 4096, CN ``<host>-ca@<unix>``, CA, key usages cert-sign, digital signature, key
encipherment, SHA-256 subject key id of the PKCS#1 public key); the serving certificate (RSA 4096, CN
``<host>@<unix>``, server auth, SAN DNS = host) is for host
``api-gateway-webhook-service.kyma-system.svc``; both are valid from one hour ago for 90 days. A
pair is renewed when it is missing, does not parse, the key does not match, or the chain does not
verify *14 days from now* (:func:`verify`). The caBundle written into the APIRule CRD's conversion
webhook is the whole ``tls.crt``, as the original writes it.
"""

from __future__ import annotations

import base64
import copy
import datetime
import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhooks import certificates as certs
from webhooks.certificates import CERT_FILE, KEY_FILE, CertificateError, KeyPair, decode_secret_data

__all__ = [
    "CERT_KEY",
    "KEY_KEY",
    "SECRET",
    "SERVICE_HOST",
    "CertificateError",
    "KeyPair",
    "ca_bundle_update",
    "decode_secret_data",
    "generate",
    "verify",
]

SECRET = ("kyma-system", "api-gateway-webhook-certificate")
SERVICE_NAME = "api-gateway-webhook-service"
SERVICE_HOST = f"{SERVICE_NAME}.{SECRET[0]}.svc"
CERT_KEY = CERT_FILE
KEY_KEY = KEY_FILE
APIRULE_CRD = "apirules.gateway.kyma-project.io"
MUTATING_WEBHOOK_CONFIGURATION = "api-gateway-mutating-webhook-configuration"
VALIDATING_WEBHOOK_CONFIGURATION = "api-gateway-validating-webhook-configuration"
MODULE_LABEL = {"kyma-project.io/module": "api-gateway"}
#: The Deployment the original makes the Secret's owner (when it exists).
MANAGER_DEPLOYMENT = ("kyma-system", "api-gateway-controller-manager")
KEY_SIZE = 4096
MAX_AGE = datetime.timedelta(days=90)
UNTIL_RENEWAL = datetime.timedelta(days=14)
CLOCK_SKEW = datetime.timedelta(hours=1)


def _subject_key_id(public_key: rsa.RSAPublicKey) -> bytes:
    # sha256 of the ASN.1 (N, E) sequence: the PKCS#1 encoding of the public key
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    return hashlib.sha256(der).digest()


def generate(host: str = SERVICE_HOST, now: datetime.datetime | None = None, key_size: int = KEY_SIZE,
             max_age: datetime.timedelta = MAX_AGE) -> KeyPair:
    """A new CA and serving certificate for ``host`` (``GenerateSelfSignedCertificate``).

    ``now`` is the issue time (default: the current time; validity starts an hour earlier).
    """
    now = now or datetime.datetime.now(datetime.UTC)
    valid_from = now - CLOCK_SKEW
    unix = int(now.timestamp())
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{unix}")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from).not_valid_after(valid_from + max_age)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(key_cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier(_subject_key_id(ca_key.public_key())), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{unix}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from).not_valid_after(valid_from + max_age)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(key_cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
            ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(certs.cert_pem(cert) + certs.cert_pem(ca_cert), certs.key_pem(key, pkcs1=True))


def _key_usage(key_cert_sign: bool) -> x509.KeyUsage:
    """Digital signature and key encipherment, and certificate signing for the CA."""
    return x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=key_cert_sign,
                         content_commitment=False, data_encipherment=False, key_agreement=False,
                         crl_sign=False, encipher_only=False, decipher_only=False)


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    public = issuer.public_key()
    if not isinstance(public, rsa.RSAPublicKey) or cert.signature_hash_algorithm is None:
        return False
    try:
        public.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    except InvalidSignature:
        return False
    return cert.issuer == issuer.subject


def verify(cert_pem: bytes | None, key_pem: bytes | None, now: datetime.datetime | None = None,
           until_renewal: datetime.timedelta = UNTIL_RENEWAL) -> None:
    """Raise :class:`CertificateError` unless the pair is usable ``until_renewal`` from ``now``.

    As ``verifySecret``: both keys exist; the first certificate of ``tls.crt`` verifies against the
    certificates of ``tls.crt`` as roots at ``now + 14 days`` (so one expiring sooner is renewed); the
    key is a PKCS#1 RSA key (and, beyond the original, belongs to the certificate).
    """
    if not cert_pem or not key_pem:
        raise CertificateError(f"secret does not have required keys: {CERT_KEY}, {KEY_KEY}")
    try:
        chain = x509.load_pem_x509_certificates(cert_pem)
    except ValueError as exc:
        raise CertificateError(f"failed to parse certificate data: {exc}") from None
    leaf = chain[0]
    at = (now or datetime.datetime.now(datetime.UTC)) + until_renewal
    roots = [c for c in chain if _is_ca(c)]
    issuer = next((c for c in roots if _signed_by(leaf, c)), None)
    if issuer is None:
        raise CertificateError("certificate verification failed: x509: certificate signed by unknown authority")
    for c in (leaf, issuer):
        if not c.not_valid_before_utc <= at <= c.not_valid_after_utc:
            raise CertificateError(f"certificate verification failed: x509: certificate has expired or is not yet "
                                   f"valid: current time {at:%Y-%m-%dT%H:%M:%SZ} is after "
                                   f"{c.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}")
    if b"RSA PRIVATE KEY" not in key_pem:
        raise CertificateError("failed to parse key data: x509: failed to parse private key (use ParsePKCS8PrivateKey "
                               "instead for this key format)")
    try:
        # matching the certificate's public key below is the check that matters (and is fast; OpenSSL's
        # full RSA key validation takes a second and more for 4096 bits)
        key = serialization.load_pem_private_key(key_pem, password=None, unsafe_skip_rsa_key_validation=True)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"failed to parse key data: {exc}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CertificateError("failed to parse key data: not an RSA key")
    leaf_key = leaf.public_key()
    if not isinstance(leaf_key, rsa.RSAPublicKey) or leaf_key.public_numbers() != key.public_key().public_numbers():
        raise CertificateError("key verification failed: the key does not belong to the certificate")


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def not_after(cert_pem: bytes) -> datetime.datetime:
    """Expiry of the serving certificate (the first of ``tls.crt``)."""
    return x509.load_pem_x509_certificates(cert_pem)[0].not_valid_after_utc


def ca_bundle_update(crd: Mapping[str, Any], bundle: bytes) -> dict[str, Any] | None:
    """``crd`` with ``spec.conversion.webhook.clientConfig.caBundle`` = ``bundle``, or ``None`` when it
    already is. Raises :class:`CertificateError` (the original's "can not add certificate into CRD: ...")
    when the CRD has no conversion webhook client config."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), Mapping) else {}
    conversion = (spec or {}).get("conversion")
    if not isinstance(conversion, Mapping):
        raise CertificateError("can not add certificate into CRD: conversion not found in APIRule CRD")
    webhook = conversion.get("webhook")
    if not isinstance(webhook, Mapping):
        raise CertificateError("can not add certificate into CRD: conversion webhook not found in APIRule CRD")
    client_config = webhook.get("clientConfig")
    if not isinstance(client_config, Mapping):
        raise CertificateError("can not add certificate into CRD: client config for conversion webhook not found in "
                               "APIRule CRD")
    encoded = base64.b64encode(bundle).decode()
    if client_config.get("caBundle") == encoded:
        return None
    updated = copy.deepcopy(dict(crd))
    updated["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = encoded
    return updated


def webhooks_ca_bundle_update(config: Mapping[str, Any], bundle: bytes) -> dict[str, Any] | None:
    """A Mutating/ValidatingWebhookConfiguration with every webhook's caBundle = ``bundle`` (``None``
    when nothing changes)."""
    return certs.with_ca_bundle(config, bundle)[0]
