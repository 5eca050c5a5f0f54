"""Certificates for the Snatch webhook: its Service's names, a dev CA and serving certificates.

In a cluster the key pair comes from a Secret that Gardener cert-management (or cert-manager) fills
and kubelet mounts (files ``tls.crt``, ``tls.key``, ``ca.crt``), as KIM Snatch's
``kim-snatch-certificates``. For local runs and tests this module generates the same material with
:mod:`webhooks.certificates` and writes it the way kubelet does
(:func:`webhooks.certificates.write_kubelet_dir`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from webhooks import certificates
from webhooks.certificates import CA_FILE, CERT_FILE, KEY_FILE, KeyPair, write_kubelet_dir

__all__ = ["CA_FILE", "CERT_FILE", "KEY_FILE", "DevCertificates", "KeyPair", "default_dns_names", "ensure_dev_certs",
           "generate_ca", "issue_serving_cert", "rotate_serving_cert", "write_kubelet_dir"]

#: Service and namespace of the deployed webhook (deploy/snatch), as KIM Snatch's names.
SERVICE_NAME = "kim-snatch-webhook-service"
SERVICE_NAMESPACE = "kyma-system"


def default_dns_names(service: str = SERVICE_NAME, namespace: str = SERVICE_NAMESPACE) -> list[str]:
    """SANs of a serving certificate: localhost plus the Service's in-cluster DNS names."""
    return ["localhost", service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local"]


DEFAULT_IPS: tuple[str, ...] = ("127.0.0.1", "::1")


def generate_ca(common_name: str = "reconcilery-snatch-dev-ca", days: int = 365) -> KeyPair:
    """A self-signed dev CA (:func:`webhooks.certificates.generate_ca`) valid for ``days`` days."""
    return certificates.generate_ca(common_name, days)


def issue_serving_cert(ca: KeyPair, common_name: str = SERVICE_NAME, dns_names: Iterable[str] | None = None,
                       ip_addresses: Iterable[str] = DEFAULT_IPS, days: int = 90) -> KeyPair:
    """A serving certificate of the Snatch Service signed by ``ca`` (default SANs: :func:`default_dns_names`).

    Raises ``ValueError`` for an invalid IP address or a CA key that does not load.
    """
    return certificates.issue_serving_cert(ca, common_name, dns_names or default_dns_names(), ip_addresses, days)


@dataclass(frozen=True)
class DevCertificates:
    """Paths of a generated dev CA and the webhook's certificate directory."""

    cert_dir: Path
    ca_dir: Path

    @property
    def ca_path(self) -> Path:
        """The CA certificate clients verify against (``<cert_dir>/ca.crt``)."""
        return self.cert_dir / CA_FILE

    def load_ca(self) -> KeyPair:
        return KeyPair((self.ca_dir / CA_FILE).read_bytes(), (self.ca_dir / "ca.key").read_bytes())


def ensure_dev_certs(state_dir: str | os.PathLike[str], dns_names: Iterable[str] | None = None,
                     ip_addresses: Iterable[str] = DEFAULT_IPS) -> DevCertificates:
    """A dev CA under ``<state_dir>/snatch/ca`` (created once, reused) and a fresh serving certificate
    in the kubelet-style dir ``<state_dir>/snatch/certs`` (``tls.crt``, ``tls.key``, ``ca.crt``)."""
    base = Path(state_dir) / "snatch"
    ca_dir, cert_dir = base / "ca", base / "certs"
    ca_dir.mkdir(parents=True, exist_ok=True)
    dev = DevCertificates(cert_dir, ca_dir)
    if (ca_dir / CA_FILE).exists() and (ca_dir / "ca.key").exists():
        ca = dev.load_ca()
    else:
        ca = generate_ca()
        (ca_dir / "ca.key").write_bytes(ca.key_pem)
        os.chmod(ca_dir / "ca.key", 0o600)
        (ca_dir / CA_FILE).write_bytes(ca.cert_pem)
    rotate_serving_cert(cert_dir, ca, dns_names, ip_addresses)
    return dev


def rotate_serving_cert(cert_dir: str | os.PathLike[str], ca: KeyPair, dns_names: Iterable[str] | None = None,
                        ip_addresses: Iterable[str] = DEFAULT_IPS) -> KeyPair:
    """Issue a new serving certificate from ``ca`` and swap it into ``cert_dir`` kubelet-style."""
    serving = issue_serving_cert(ca, dns_names=dns_names, ip_addresses=ip_addresses)
    write_kubelet_dir(cert_dir, {CERT_FILE: serving.cert_pem, KEY_FILE: serving.key_pem, CA_FILE: ca.cert_pem})
    return serving
