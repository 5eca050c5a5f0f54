"""Generated Secret content of the APIGateway controller (``cryptography``; not pure: keys are random).

- ``istio-system/kyma-gateway-certs``: a self-signed certificate for ``*.<domain>`` (and the domain) for
  clusters without Gardener. The original ships one fixed certificate and key in its image for
  ``*.local.kyma.dev``; a key every installation shares is no secret, so each cluster gets its own.
- ``kyma-system/ory-oathkeeper-jwks-secret``: ``jwks.json`` with one RSA signing key for Oathkeeper's
  ``id_token`` mutator (the original generates one the same way).

Generated only when the Secret is created; existing data is never replaced.
"""

from __future__ import annotations

import base64
import datetime
import json
import uuid
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tasks.apigateway.operator import resources as res


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64url_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def self_signed_tls(domain: str, days: int = 3650) -> dict[str, str]:
    """``data`` of a ``kubernetes.io/tls`` Secret: a self-signed certificate for ``*.<domain>`` and
    ``<domain>`` (RSA 2048), valid from now - 1 h for ``days``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "reconcilery"),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"*.{domain}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"*.{domain}"), x509.DNSName(domain)]),
                       critical=False)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, content_commitment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return {"tls.crt": _b64(cert.public_bytes(serialization.Encoding.PEM)), "tls.key": _b64(key_pem)}


def jwks() -> dict[str, str]:
    """``data`` of the Oathkeeper JWKS Secret: ``jwks.json`` with one RS256 private key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_numbers()
    public = private.public_numbers
    jwk = {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": str(uuid.uuid4()),
           "n": _b64url_uint(public.n), "e": _b64url_uint(public.e), "d": _b64url_uint(private.d),
           "p": _b64url_uint(private.p), "q": _b64url_uint(private.q), "dp": _b64url_uint(private.dmp1),
           "dq": _b64url_uint(private.dmq1), "qi": _b64url_uint(private.iqmp)}
    return {"jwks.json": _b64(json.dumps({"keys": [jwk]}).encode())}


def generate(obj: dict[str, Any], domain: str) -> dict[str, Any]:
    """``obj`` (a Secret with ``data: None``) with its generated ``data``. Raises ``ValueError`` for a
    Secret this module does not know."""
    name = (obj.get("metadata") or {}).get("name")
    if name == res.CERT_SECRET[1]:
        return {**obj, "data": self_signed_tls(domain)}
    if name == res.OATHKEEPER_JWKS:
        return {**obj, "data": jwks()}
    raise ValueError(f"no generator for Secret {name}")
