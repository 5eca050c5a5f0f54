"""Serving certificates of the webhooks: one key-pair type, generation with ``cryptography``, kubelet-style dirs.

A webhook serves ``tls.crt`` (the serving certificate, optionally followed by its CA) and ``tls.key``,
read from a mounted Secret directory (Snatch) or from a Secret through the API (API Gateway). This
module is pure except :func:`write_kubelet_dir` and :meth:`KeyPair.from_dir` (file I/O).

Kubelet updates a Secret volume by writing the files into a timestamped ``..<ts>`` directory and
swapping the ``..data`` symlink to it in one ``rename``; each file name is a symlink
``tls.crt -> ..data/tls.crt``. :func:`write_kubelet_dir` does the same, for local runs and tests.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import ipaddress
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
CA_FILE = "ca.crt"

#: A private key this module generates: EC P-256 (fast; every TLS 1.3 client takes it) or RSA.
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


class CertificateError(Exception):
    """A key pair is missing, unreadable, does not parse, or its key does not belong to its certificate."""


@dataclass(frozen=True)
class KeyPair:
    """PEM bytes of a certificate (chain: the first certificate is the leaf) and its private key."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)  # a repr in a log line or traceback never shows the key

    @property
    def certificate(self) -> x509.Certificate:
        """The first certificate of :attr:`cert_pem`. Raises ``ValueError`` when it does not parse."""
        return x509.load_pem_x509_certificates(self.cert_pem)[0]

    @property
    def chain(self) -> list[x509.Certificate]:
        """Every certificate of :attr:`cert_pem`, leaf first. Raises ``ValueError`` when one does not parse."""
        return x509.load_pem_x509_certificates(self.cert_pem)

    @property
    def not_after(self) -> datetime.datetime:
        """Expiry (UTC) of the leaf certificate."""
        return self.certificate.not_valid_after_utc

    def secret_data(self) -> dict[str, str]:
        """The ``data`` of a ``kubernetes.io/tls``-shaped Secret (base64 of ``tls.crt`` and ``tls.key``)."""
        return {CERT_FILE: base64.b64encode(self.cert_pem).decode(), KEY_FILE: base64.b64encode(self.key_pem).decode()}

    @classmethod
    def from_dir(cls, cert_dir: str | os.PathLike[str]) -> KeyPair:
        """Read ``<cert_dir>/tls.crt`` and ``tls.key``. Raises :class:`CertificateError` when unreadable."""
        root = Path(cert_dir)
        try:
            return cls((root / CERT_FILE).read_bytes(), (root / KEY_FILE).read_bytes())
        except OSError as exc:
            raise CertificateError(f"cannot read key pair in {root}: {exc}") from exc


def decode_secret_value(value: Any) -> bytes | None:
    """The bytes of one base64 ``data`` value of a Secret (``None`` when absent or not valid base64)."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_secret_data(secret: Mapping[str, Any] | None) -> tuple[bytes | None, bytes | None]:
    """``(tls.crt, tls.key)`` bytes of a Secret (``None`` for a missing or undecodable key)."""
    data = (secret or {}).get("data")
    data = data if isinstance(data, Mapping) else {}
    return decode_secret_value(data.get(CERT_FILE)), decode_secret_value(data.get(KEY_FILE))


def with_ca_bundle(config: Mapping[str, Any], ca_pem: bytes) -> tuple[dict[str, Any] | None, list[str]]:
    """``config`` (a Mutating/ValidatingWebhookConfiguration) with every ``webhooks[*].clientConfig.caBundle``
    set to ``ca_pem``.

    Returns ``(updated, changed_webhook_names)``; ``updated`` is ``None`` when every caBundle already
    decodes to ``ca_pem`` (no write needed). ``config`` is not modified.
    """
    updated = copy.deepcopy(dict(config))
    changed: list[str] = []
    encoded = base64.b64encode(ca_pem).decode()
    for i, hook in enumerate(updated.get("webhooks") or []):
        if not isinstance(hook, dict):
            continue
        client_config = hook.setdefault("clientConfig", {})
        if isinstance(client_config, dict) and decode_secret_value(client_config.get("caBundle")) != ca_pem:
            client_config["caBundle"] = encoded
            changed.append(str(hook.get("name") or i))
    return (updated if changed else None), changed


def new_ec_key() -> ec.EllipticCurvePrivateKey:
    """A P-256 key: fast to generate (tests rotate often) and accepted by every TLS 1.3 client."""
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: PrivateKey, pkcs1: bool = False) -> bytes:
    """Unencrypted PEM of ``key``: PKCS#8, or with ``pkcs1`` the traditional ``RSA PRIVATE KEY`` form."""
    fmt = serialization.PrivateFormat.TraditionalOpenSSL if pkcs1 else serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())


def cert_pem(cert: x509.Certificate) -> bytes:
    """PEM of one certificate."""
    return cert.public_bytes(serialization.Encoding.PEM)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def generate_ca(common_name: str, days: int = 365) -> KeyPair:
    """A self-signed EC CA (basicConstraints CA:true, keyCertSign) valid for ``days`` days."""
    key = new_ec_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert_pem(cert), key_pem(key))


def issue_serving_cert(ca: KeyPair, common_name: str, dns_names: Iterable[str],
                       ip_addresses: Iterable[str] = (), days: int = 90) -> KeyPair:
    """A TLS server certificate (EC key) signed by ``ca`` with the given SANs, valid for ``days`` days.

    Raises ``ValueError`` for an invalid IP address or a CA key that is not an EC key.
    """
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an EC key generated by generate_ca")
    key = new_ec_key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert_pem(cert), key_pem(key))


def issue_client_cert(ca: KeyPair, common_name: str, days: int = 90) -> KeyPair:
    """A TLS client certificate (EC key, extended key usage ``clientAuth``) for ``common_name`` signed by
    ``ca`` (as KLM issues the runtime watcher's, whose CN is the kyma name). Raises ``ValueError`` for a CA
    key that is not an EC key."""
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an EC key generated by generate_ca")
    key = new_ec_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)] if common_name else []))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert_pem(cert), key_pem(key))


def write_kubelet_dir(cert_dir: str | os.PathLike[str], files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (name -> bytes) into ``cert_dir`` the way kubelet updates a Secret volume.

    Creates ``..<timestamp>/`` with the files, points a temporary symlink at it and renames it over
    ``..data`` (one atomic swap), makes ``<name> -> ..data/<name>`` symlinks for new names and
    removes the previous timestamp directory. Returns the new timestamp directory.
    """
    root = Path(cert_dir)
    root.mkdir(parents=True, exist_ok=True)
    stamp = root / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.time_ns() % 1_000_000_000:09d}"
    stamp.mkdir()
    for name, data in files.items():
        target = stamp / name
        target.write_bytes(data)
        os.chmod(target, 0o600 if name == KEY_FILE else 0o644)
    data_link = root / "..data"
    old = os.readlink(data_link) if data_link.is_symlink() else None
    tmp_link = root / "..data_tmp"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    os.symlink(stamp.name, tmp_link)
    os.replace(tmp_link, data_link)
    for name in files:
        link = root / name
        if not link.is_symlink():
            if link.exists():
                link.unlink()
            os.symlink(f"..data/{name}", link)
    if old and old != stamp.name:
        shutil.rmtree(root / old, ignore_errors=True)
    return stamp
