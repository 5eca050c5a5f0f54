"""The runtime-watcher listener's answers (contract v2: the runtime id is the client certificate's CN)."""

from __future__ import annotations

import datetime
import json
import urllib.parse

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tasks.cloud.skr.listener import SIZE_LIMIT, Identity, parse_event
from webhooks.exchange import content_length

BODY = json.dumps({"owner": {"name": "k", "namespace": "kcp-system"}, "watched": {"name": "w", "namespace": "n"},
                   "watchedGvk": {"group": "g", "version": "v", "kind": "K"}}).encode()


def xfcc(cn: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] if cn else [])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(hours=1))
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    return f'By=spiffe://x;Hash=0;Cert="{urllib.parse.quote(pem)}";Subject="CN={cn}";URI='


@pytest.mark.parametrize(("method", "path", "headers", "body", "status"), [
    ("GET", "/v2/cloud-manager/event", {}, b"", 405),
    ("POST", "/v2/other/event", {}, BODY, 404),
    ("POST", "/v2/cloud-manager/event", {}, BODY, 401),
    ("POST", "/v2/cloud-manager/event", {"X-Forwarded-Client-Cert": "Hash=1"}, BODY, 401),
    ("POST", "/v2/cloud-manager/event", {"X-Forwarded-Client-Cert": 'Cert="garbage"'}, BODY, 401),
    ("POST", "/v2/cloud-manager/event", {}, b"not json", 500),
    ("POST", "/v2/cloud-manager/event", {}, b"x" * (SIZE_LIMIT + 1), 413),
    ("POST", "/v/cloud-manager/event", {}, BODY, 400),
])
def test_rejections(method: str, path: str, headers: dict, body: bytes, status: int) -> None:
    parsed = parse_event(method, path, headers, body)
    assert parsed.status == status and not parsed.kyma


#: A trusted proxy (Istio) that presented a verified client certificate of its own.
PROXY = Identity("istio-ingressgateway", trust_xfcc=True, proxy=True)


def test_runtime_id_is_the_certificate_common_name() -> None:
    parsed = parse_event("POST", "/v2/cloud-manager/event", {"x-forwarded-client-cert": xfcc("kyma-1")}, BODY,
                         identity=PROXY)
    assert (parsed.status, parsed.kyma) == (200, "kyma-1")
    empty = parse_event("POST", "/v2/cloud-manager/event", {"X-Forwarded-Client-Cert": xfcc("")}, BODY,
                        identity=PROXY)
    assert (empty.status, empty.message) == (400, "client certificate common name is empty")
    direct = parse_event("POST", "/v2/cloud-manager/event", {}, BODY, identity=Identity("kyma-2"))
    assert (direct.status, direct.kyma) == (200, "kyma-2")
    empty = parse_event("POST", "/v2/cloud-manager/event", {}, BODY, identity=Identity(""))
    assert (empty.status, empty.message) == (400, "client certificate common name is empty")


@pytest.mark.parametrize("identity", [Identity(), Identity(None, trust_xfcc=True), Identity("kyma-a"),
                                      Identity("kyma-a", trust_xfcc=True)])
def test_the_header_alone_never_names_an_skr(identity: Identity) -> None:
    """Without a verified peer, or with a peer that is not a trusted proxy, the header is not believed."""
    parsed = parse_event("POST", "/v2/cloud-manager/event", {"X-Forwarded-Client-Cert": xfcc("victim")}, BODY,
                         identity=identity)
    assert parsed.kyma != "victim"


@pytest.mark.parametrize(("method", "headers", "expected"), [
    ("POST", {"Content-Length": "12"}, 12),
    ("GET", {}, 0),
    ("POST", {}, 411),
    ("POST", {"Transfer-Encoding": "chunked", "Content-Length": "3"}, 411),
    ("POST", {"Content-Length": "-1"}, 400),
    ("POST", {"Content-Length": "+1"}, 400),
    ("POST", {"Content-Length": "٣"}, 400),
    ("POST", {"content-length": str(SIZE_LIMIT + 1)}, 413),
])
def test_content_length(method: str, headers: dict, expected: int) -> None:
    got = content_length(method, headers, SIZE_LIMIT)
    assert (got if isinstance(got, int) else got.status) == expected


def test_behind_a_proxy_a_peer_that_is_not_the_pinned_proxy_is_refused() -> None:
    """issue 27: with the header trusted, any certificate of the proxy's issuer (an SKR's own) was the proxy."""
    parsed = parse_event("POST", "/v2/cloud-manager/event", {"X-Forwarded-Client-Cert": xfcc("victim")}, BODY,
                         identity=Identity("kyma-attacker", trust_xfcc=True, proxy=False))
    assert (parsed.status, parsed.kyma) == (401, "")
    assert "not the trusted proxy's" in parsed.message
