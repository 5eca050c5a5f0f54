"""Dev certificates and kubelet-style certificate directories."""

from __future__ import annotations

import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509

from tasks.snatch.certs import (
    CA_FILE,
    CERT_FILE,
    KEY_FILE,
    ensure_dev_certs,
    generate_ca,
    issue_serving_cert,
    rotate_serving_cert,
    write_kubelet_dir,
)


def test_serving_cert_sans_and_chain(tmp_path: Path) -> None:
    ca = generate_ca()
    serving = issue_serving_cert(ca)
    cert = serving.certificate
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = sans.get_values_for_type(x509.DNSName)
    assert {"localhost", "kim-snatch-webhook-service.kyma-system.svc",
            "kim-snatch-webhook-service.kyma-system.svc.cluster.local"} <= set(dns)
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert cert.issuer == ca.certificate.subject
    cert.verify_directly_issued_by(ca.certificate)
    # the pair loads as a TLS server key pair
    (tmp_path / "c").write_bytes(serving.cert_pem)
    (tmp_path / "k").write_bytes(serving.key_pem)
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tmp_path / "c", tmp_path / "k")


def test_kubelet_dir_layout_and_swap(tmp_path: Path) -> None:
    first = write_kubelet_dir(tmp_path, {"a.txt": b"one"})
    assert os.readlink(tmp_path / "a.txt") == "..data/a.txt"
    assert os.readlink(tmp_path / "..data") == first.name
    assert (tmp_path / "a.txt").read_bytes() == b"one"
    second = write_kubelet_dir(tmp_path, {"a.txt": b"two"})
    assert (tmp_path / "a.txt").read_bytes() == b"two"
    assert os.readlink(tmp_path / "..data") == second.name
    assert not first.exists()  # the old generation is removed
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["..data", "a.txt", second.name])


def test_ensure_dev_certs_reuses_ca(tmp_path: Path) -> None:
    dev = ensure_dev_certs(tmp_path)
    for name in (CERT_FILE, KEY_FILE, CA_FILE):
        assert (dev.cert_dir / name).is_symlink()
    ca_pem = dev.ca_path.read_bytes()
    leaf = (dev.cert_dir / CERT_FILE).read_bytes()
    again = ensure_dev_certs(tmp_path)
    assert again.ca_path.read_bytes() == ca_pem
    assert (again.cert_dir / CERT_FILE).read_bytes() != leaf
    rotated = rotate_serving_cert(dev.cert_dir, dev.load_ca())
    assert (dev.cert_dir / CERT_FILE).read_bytes() == rotated.cert_pem
