"""TLS modes of the NGINX Plus client against an HTTPS stand-in (self-signed CA, optional mTLS)."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import pytest

from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.plus_client import PlusClient, PlusError, PlusUnreachable
from tasks.nginx.settings import Redacted, TLSMaterial, TLSMode
from tests.integration.nginx.certs import Pair, issue, make_ca

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki() -> dict[str, Pair]:
    ca, ca_key, ca_cert = make_ca()
    other_ca, _, _ = make_ca("another CA")
    return {"ca": ca, "other_ca": other_ca, "server": issue(ca_key, ca_cert, "nginx-plus", server=True),
            "client": issue(ca_key, ca_cert, "nkl", server=False)}


def server_context(pki: dict[str, Pair], tmp_path: Path, require_client: bool) -> ssl.SSLContext:
    chain = tmp_path / "server.pem"
    chain.write_bytes(pki["server"].cert_pem + pki["server"].key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(chain)
    if require_client:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=pki["ca"].cert_pem.decode())
    return context


def material(mode: TLSMode, pki: dict[str, Pair], ca: str = "ca", client: bool = False,
             client_pair: str = "client", source: str = "") -> TLSMaterial:
    return TLSMaterial(
        mode=mode, ca_pem=Redacted(pki[ca].cert_pem) if mode.needs_ca else None,
        client_cert_pem=Redacted(pki[client_pair].cert_pem) if client else None,
        client_key_pem=Redacted(pki[client_pair].key_pem) if client else None, source=source)


@pytest.fixture
def https_plus(plus_factory: Callable[..., NginxPlusStandIn], pki: dict[str, Pair], tmp_path: Path
               ) -> Callable[[bool], NginxPlusStandIn]:
    return lambda mtls: plus_factory(ssl_context=server_context(pki, tmp_path, mtls))


def test_ss_tls_verifies_against_the_secret_ca(https_plus: Callable[[bool], NginxPlusStandIn],
                                               pki: dict[str, Pair]) -> None:
    plus = https_plus(False)
    assert plus.url.startswith("https://")
    assert PlusClient(plus.url, material(TLSMode.SS_TLS, pki)).list_servers("http", "web") == []


def test_ss_tls_with_the_wrong_ca_fails(https_plus: Callable[[bool], NginxPlusStandIn], pki: dict[str, Pair]) -> None:
    with pytest.raises(PlusUnreachable, match="TLS failed"):
        PlusClient(https_plus(False).url, material(TLSMode.SS_TLS, pki, ca="other_ca")).list_servers("http", "web")


def test_ca_tls_uses_public_roots_so_a_private_ca_fails(https_plus: Callable[[bool], NginxPlusStandIn],
                                                        pki: dict[str, Pair]) -> None:
    with pytest.raises(PlusUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        PlusClient(https_plus(False).url, material(TLSMode.CA_TLS, pki)).list_servers("http", "web")


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_no_tls_skips_verification(https_plus: Callable[[bool], NginxPlusStandIn], pki: dict[str, Pair]) -> None:
    assert PlusClient(https_plus(False).url, material(TLSMode.NO_TLS, pki)).list_servers("http", "web") == []


def test_ss_mtls_presents_the_client_certificate(https_plus: Callable[[bool], NginxPlusStandIn],
                                                 pki: dict[str, Pair]) -> None:
    plus = https_plus(True)
    client = PlusClient(plus.url, material(TLSMode.SS_MTLS, pki, client=True))
    client.add_server("http", "web", {"server": "10.0.0.1:80"})
    assert plus.addresses("http", "web") == ["10.0.0.1:80"]


def test_a_changed_client_certificate_is_used_by_the_next_request(
        https_plus: Callable[[bool], NginxPlusStandIn], pki: dict[str, Pair]) -> None:
    """The Secrets are read at every sync: changed material (same Secrets) reaches new connections at once,
    kept-alive ones of the old certificate are not reused."""
    plus = https_plus(True)
    _, other_key, other_cert = make_ca("another client CA")
    pki = {**pki, "stranger": issue(other_key, other_cert, "nkl", server=False)}
    good = material(TLSMode.SS_MTLS, pki, client=True, source="ca,client")
    assert PlusClient(plus.url, good).list_servers("http", "web") == []
    with pytest.raises(PlusUnreachable):  # a client certificate the host does not trust, on a fresh connection
        PlusClient(plus.url, material(TLSMode.SS_MTLS, pki, client=True, client_pair="stranger",
                                      source="ca,client")).list_servers("http", "web")
    assert PlusClient(plus.url, good).list_servers("http", "web") == []


def test_mtls_host_refuses_a_client_without_certificate(https_plus: Callable[[bool], NginxPlusStandIn],
                                                        pki: dict[str, Pair]) -> None:
    with pytest.raises(PlusUnreachable):
        PlusClient(https_plus(True).url, material(TLSMode.SS_TLS, pki)).list_servers("http", "web")


def test_bad_pem_is_a_clear_error_without_the_material(pki: dict[str, Pair]) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"
    bad = TLSMaterial(mode=TLSMode.SS_TLS, ca_pem=Redacted(pem))
    with pytest.raises(PlusError, match="tls-mode ss-tls: cannot load the certificates") as caught:
        PlusClient("https://127.0.0.1:1/api", bad).list_servers("http", "web")
    assert "nope" not in str(caught.value)
