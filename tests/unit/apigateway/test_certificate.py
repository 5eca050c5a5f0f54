"""The webhook certificate (notes §7): what is generated, when it is renewed (13 vs 15 days left), which
Secrets are invalid, and the caBundle written into the APIRule CRD."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tasks.apigateway import certificate
from tasks.apigateway.certificate import CertificateError, KeyPair, ca_bundle_update, generate, verify

NOW = datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def pair_expiring_in(days: float) -> KeyPair:
    """A pair whose serving certificate expires ``days`` from now (validity 90 days from issue - 1 h)."""
    issued = NOW - certificate.MAX_AGE + certificate.CLOCK_SKEW + datetime.timedelta(days=days)
    return generate(now=issued, key_size=2048)


def test_generated_pair_is_the_originals() -> None:
    pair = generate(now=NOW)  # 4096 bits, as the original
    leaf, ca = x509.load_pem_x509_certificates(pair.cert_pem)
    host = "api-gateway-webhook-service.kyma-system.svc"
    unix = int(NOW.timestamp())
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"{host}@{unix}"
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"{host}-ca@{unix}"
    assert leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == [host]
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH])
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    for cert in (leaf, ca):
        assert cert.not_valid_before_utc == NOW - datetime.timedelta(hours=1)
        assert cert.not_valid_after_utc == NOW - datetime.timedelta(hours=1) + datetime.timedelta(days=90)
        key = cert.public_key()
        assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 4096
    assert pair.key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    verify(pair.cert_pem, pair.key_pem)


@pytest.mark.parametrize(("days_left", "renew"), [(13, True), (15, False), (13.99, True), (14.01, False),
                                                  (-1, True), (89, False)])
def test_renewal_within_14_days_of_expiry(days_left: float, renew: bool) -> None:
    pair = pair_expiring_in(days_left)
    if renew:
        with pytest.raises(CertificateError, match="certificate verification failed"):
            verify(pair.cert_pem, pair.key_pem, now=NOW)
    else:
        verify(pair.cert_pem, pair.key_pem, now=NOW)


def _pkcs8(pair: KeyPair) -> bytes:
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


GOOD = generate(key_size=2048)
OTHER = generate(key_size=2048)


@pytest.mark.parametrize(("cert_pem", "key_pem", "message"), [
    (None, GOOD.key_pem, "secret does not have required keys: tls.crt, tls.key"),
    (GOOD.cert_pem, None, "secret does not have required keys"),
    (b"garbage", GOOD.key_pem, "failed to parse certificate data"),
    (GOOD.cert_pem, b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
     "failed to parse key data"),
    (GOOD.cert_pem, _pkcs8(GOOD), "failed to parse key data"),
    (GOOD.cert_pem, OTHER.key_pem, "key verification failed"),
    (GOOD.cert_pem.split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
     + OTHER.cert_pem.split(b"-----END CERTIFICATE-----\n")[1], GOOD.key_pem, "signed by unknown authority"),
])
def test_invalid_pairs(cert_pem: bytes | None, key_pem: bytes | None, message: str) -> None:
    with pytest.raises(CertificateError, match=message):
        verify(cert_pem, key_pem)


def test_secret_data_round_trip() -> None:
    secret = {"data": GOOD.secret_data()}
    assert certificate.decode_secret_data(secret) == (GOOD.cert_pem, GOOD.key_pem)
    assert certificate.decode_secret_data({"data": {"tls.crt": "%%%", "tls.key": 5}}) == (None, None)
    assert certificate.decode_secret_data(None) == (None, None)


def crd(conversion: Any) -> dict[str, Any]:
    return {"metadata": {"name": "apirules.gateway.kyma-project.io"}, "spec": {"conversion": conversion}}


def test_ca_bundle_written_into_the_crd() -> None:
    webhook = {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s"}}}}
    updated = ca_bundle_update(crd(webhook), GOOD.cert_pem)
    assert updated is not None
    assert base64.b64decode(updated["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]) == GOOD.cert_pem
    assert ca_bundle_update(updated, GOOD.cert_pem) is None  # up to date: no write
    assert "caBundle" not in webhook["webhook"]["clientConfig"]  # the input is not modified


@pytest.mark.parametrize(("conversion", "reason"), [
    (None, "conversion not found in APIRule CRD"),
    ({"strategy": "Webhook"}, "conversion webhook not found in APIRule CRD"),
    ({"strategy": "Webhook", "webhook": {}}, "client config for conversion webhook not found in APIRule CRD"),
])
def test_ca_bundle_needs_a_conversion_client_config(conversion: Any, reason: str) -> None:
    with pytest.raises(CertificateError, match=f"can not add certificate into CRD: {reason}"):
        ca_bundle_update(crd(conversion), GOOD.cert_pem)
