"""The NGINX Plus client against the stand-in: every route, the error bodies, version negotiation, TLS."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import requests

from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.plus_client import (
    PlusAPIError,
    PlusClient,
    PlusUnauthorized,
    PlusUnreachable,
    PlusUnsupportedVersion,
)

pytestmark = pytest.mark.integration

DEFAULTS = {"weight": 1, "max_conns": 0, "max_fails": 1, "fail_timeout": "10s", "slow_start": "0s",
            "backup": False, "down": False}


def test_version_negotiation_picks_the_highest_common_version(plus: NginxPlusStandIn) -> None:
    client = PlusClient(plus.url)
    assert client.versions() == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert client.api_version() == 9
    assert requests.get(plus.url + "/").json() == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_negotiation_happens_once_per_host(plus: NginxPlusStandIn) -> None:
    PlusClient(plus.url).list_servers("http", "web")
    plus.reset_requests()
    PlusClient(plus.url).list_servers("http", "web")
    assert plus.request_log == [("GET", "/api/9/http/upstreams/web/servers")]


def test_an_older_nginx_plus_gets_its_highest_version(plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    plus = plus_factory(versions=range(1, 8))
    client = PlusClient(plus.url)
    assert client.api_version() == 7
    client.add_server("http", "web", {"server": "10.0.0.1:80"})
    assert ("POST", "/api/7/http/upstreams/web/servers/") in plus.request_log


def test_no_common_version_is_a_clear_error(plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    plus = plus_factory(versions=[1, 2, 3])
    with pytest.raises(PlusUnsupportedVersion, match=r"speaks API versions \[1, 2, 3\]; this client needs one of 4..9"):
        PlusClient(plus.url).api_version()


def test_unknown_version_in_the_path(plus: NginxPlusStandIn) -> None:
    answer = requests.get(plus.url + "/10/http/upstreams")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "UnknownVersion"
    assert requests.get(plus.url + "/9/").json()[:3] == ["nginx", "processes", "connections"]


@pytest.mark.parametrize("protocol", ["http", "stream"])
def test_server_lifecycle(plus: NginxPlusStandIn, protocol: str) -> None:
    client = PlusClient(plus.url)
    upstream = "web" if protocol == "http" else "db"
    assert client.list_servers(protocol, upstream) == []
    first = client.add_server(protocol, upstream, {"server": "10.0.0.1:30080"})
    second = client.add_server(protocol, upstream, {"server": "10.0.0.2:30080", "weight": 3, "down": True})
    assert (first["id"], second["id"]) == (0, 1)
    expected_first = {"id": 0, "server": "10.0.0.1:30080", **DEFAULTS}
    if protocol == "http":
        expected_first["route"] = ""
    assert first == expected_first
    assert client.get_server(protocol, upstream, 1)["weight"] == 3
    updated = client.update_server(protocol, upstream, 1, {"server": "10.0.0.2:30080", "weight": 1, "down": False})
    assert (updated["weight"], updated["down"]) == (1, False)
    assert [s["server"] for s in client.delete_server(protocol, upstream, 0)] == ["10.0.0.2:30080"]
    # ids are never reused
    assert client.add_server(protocol, upstream, {"server": "10.0.0.1:30080"})["id"] == 2
    assert client.delete_server(protocol, upstream, 2, remaining=False) == []  # a sync's: the list not parsed
    assert [s["id"] for s in client.list_servers(protocol, upstream)] == [1]
    assert client.add_server(protocol, upstream, {"server": "10.0.0.1:30080"})["id"] == 3
    assert plus.addresses(protocol, upstream) == ["10.0.0.1:30080", "10.0.0.2:30080"]
    assert set(client.list_upstreams(protocol)) == ({"web", "nginx-lb-http", "nginx-lb-https"} if protocol == "http"
                                                    else {"db", "nginx-lb-tcp"})


def test_paths_the_go_client_uses(plus: NginxPlusStandIn) -> None:
    client = PlusClient(plus.url)
    client.add_server("http", "web", {"server": "10.0.0.1:80"})
    client.update_server("http", "web", 0, {"server": "10.0.0.1:80", "weight": 2})
    client.delete_server("http", "web", 0)
    assert plus.request_log[1:] == [("POST", "/api/9/http/upstreams/web/servers/"),
                                    ("PATCH", "/api/9/http/upstreams/web/servers/0/"),
                                    ("DELETE", "/api/9/http/upstreams/web/servers/0/")]


@pytest.mark.parametrize(("call", "status", "code"), [
    (lambda c: c.list_servers("http", "nope"), 404, "UpstreamNotFound"),
    (lambda c: c.list_servers("stream", "web"), 404, "UpstreamNotFound"),  # http and stream are separate
    (lambda c: c.get_server("http", "web", 42), 404, "UpstreamServerNotFound"),
    (lambda c: c.delete_server("http", "web", 42), 404, "UpstreamServerNotFound"),
    (lambda c: c.update_server("http", "web", 42, {"weight": 2}), 404, "UpstreamServerNotFound"),
    (lambda c: c.add_server("http", "web", {"weight": 2}), 400, "UpstreamConfFormatError"),
    (lambda c: c.add_server("http", "web", {"server": "10.0.0.1", "color": "red"}), 400, "UpstreamConfFormatError"),
    (lambda c: c.add_server("http", "web", {"server": "10.0.0.1", "weight": 0}), 400, "UpstreamBadWeight"),
    (lambda c: c.add_server("http", "web", {"server": "10.0.0.1", "max_fails": -1}), 400, "UpstreamBadMaxFails"),
    (lambda c: c.add_server("http", "web", {"server": "10.0.0.1", "fail_timeout": "soon"}), 400,
     "UpstreamBadFailTimeout"),
    (lambda c: c.add_server("http", "web", {"server": "10.0.0.1:99999"}), 400, "UpstreamBadAddress"),
    (lambda c: c.add_server("stream", "db", {"server": "10.0.0.1"}), 400, "UpstreamBadAddress"),
    (lambda c: c.add_server("stream", "db", {"server": "10.0.0.1:5432", "route": "x"}), 400,
     "UpstreamConfFormatError"),
    (lambda c: c.add_server("http", "web", {"server": "backend.example:80"}), 400, "UpstreamConfNoResolver"),
])
def test_error_answers(plus: NginxPlusStandIn, call: Callable[[PlusClient], object], status: int, code: str) -> None:
    with pytest.raises(PlusAPIError) as caught:
        call(PlusClient(plus.url))
    err = caught.value
    assert (err.status, err.http_status, err.code) == (status, status, code)
    assert len(err.request_id) == 32 and err.href == "https://nginx.org/en/docs/http/ngx_http_api_module.html"
    assert f"error.status={status}; error.text={err.text}; error.code={code}; request_id=" in str(err)


def test_error_body_shape_and_bad_ids(plus: NginxPlusStandIn) -> None:
    answer = requests.get(plus.url + "/9/http/upstreams/web/servers/abc")
    assert answer.status_code == 400
    body = answer.json()
    assert set(body) == {"error", "request_id", "href"} and set(body["error"]) == {"status", "text", "code"}
    assert body["error"]["code"] == "UpstreamBadServerId"
    assert requests.post(plus.url + "/9/http/upstreams/web/servers/", data=b"{").json()["error"]["code"] == "JsonError"
    assert requests.put(plus.url + "/9/http/upstreams/web/servers/").status_code == 405


def test_http_servers_default_to_port_80_and_ipv6_needs_brackets(plus: NginxPlusStandIn) -> None:
    client = PlusClient(plus.url)
    assert client.add_server("http", "web", {"server": "10.0.0.1"})["server"] == "10.0.0.1:80"
    assert client.add_server("http", "web", {"server": "[fd00::1]:30080"})["server"] == "[fd00::1]:30080"
    with pytest.raises(PlusAPIError, match="UpstreamBadAddress"):
        client.add_server("http", "web", {"server": "fd00::1:30080"})


def test_static_upstream_and_read_only_api(plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    plus = plus_factory(static_upstreams=[("http", "static")], write=False)
    client = PlusClient(plus.url)
    with pytest.raises(PlusAPIError, match="UpstreamStatic"):
        client.list_servers("http", "static")
    with pytest.raises(PlusAPIError) as caught:
        client.add_server("http", "web", {"server": "10.0.0.1:80"})
    assert (caught.value.status, caught.value.code) == (405, "MethodDisabled")


def test_duplicates_are_accepted_unless_asked(plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    lenient, strict = plus_factory(), plus_factory(unique_servers=True)
    for plus in (lenient, strict):
        PlusClient(plus.url).add_server("http", "web", {"server": "10.0.0.1:80"})
    PlusClient(lenient.url).add_server("http", "web", {"server": "10.0.0.1:80"})
    with pytest.raises(PlusAPIError, match="EntryExists"):
        PlusClient(strict.url).add_server("http", "web", {"server": "10.0.0.1:80"})


def test_a_host_that_is_down_is_unreachable_then_back_with_its_state(plus: NginxPlusStandIn) -> None:
    client = PlusClient(plus.url)
    client.add_server("http", "web", {"server": "10.0.0.1:80"})
    plus.stop()
    with pytest.raises(PlusUnreachable, match="ConnectionError"):
        client.list_servers("http", "web")
    plus.start()
    assert [s["server"] for s in client.list_servers("http", "web")] == ["10.0.0.1:80"]


def test_api_key_required_by_the_standin_and_sent_by_the_client(
        plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    """NGINXaaS: ``Authorization: ApiKey <base64(key)>`` on every request, else 401 in the API's error form."""
    plus = plus_factory(api_key="s3cret")
    servers = plus.url + "/9/http/upstreams/web/servers"
    for headers in ({}, {"Authorization": "ApiKey " + "wrong"}, {"Authorization": "ApiKey s3cret"},
                    {"Authorization": "Bearer czNjcmV0"}):
        answer = requests.get(servers, headers=headers, timeout=5)
        assert answer.status_code == 401, headers
        body = answer.json()
        assert body["error"] == {"status": 401, "text": "missing or invalid API key", "code": "Unauthorized"}
        assert len(body["request_id"]) == 32
    assert requests.get(servers, headers={"Authorization": "ApiKey czNjcmV0"}, timeout=5).json() == []
    assert plus.rejected == 4 and plus.request_count == 1  # rejected requests change nothing

    with pytest.raises(PlusUnauthorized) as caught:
        PlusClient(plus.url, api_version=9).list_servers("http", "web")
    assert caught.value.http_status == 401 and caught.value.code == "Unauthorized"
    with pytest.raises(PlusUnauthorized):
        PlusClient(plus.url, api_version=9, api_key="other").list_servers("http", "web")
    plus.reset_requests()
    client = PlusClient(plus.url, api_key="s3cret", nlk_version="1.2.3")
    client.add_server("http", "web", {"server": "10.0.0.1:80"})
    assert client.list_servers("http", "web")[0]["server"] == "10.0.0.1:80"
    assert {tuple(sorted(h.items())) for _, _, h in plus.header_log} == {
        (("Authorization", "ApiKey czNjcmV0"), ("X-NLK-Version", "1.2.3"))}
    assert "s3cret" not in repr(client)


def test_without_a_required_key_nothing_is_checked(plus: NginxPlusStandIn) -> None:
    PlusClient(plus.url, api_version=9).list_servers("http", "web")
    assert plus.header_log == [("GET", "/api/9/http/upstreams/web/servers", {})]
