"""One sync's writes as an Outcome of NGINX Plus calls, carried out by the one executor; the client's
errors classified through kube.refusal.Failure."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from kube.refusal import Failure
from kube.toolkit import Call, execute
from tasks.nginx.diff import diff
from tasks.nginx.plan import stops, sync_failure, sync_outcome
from tasks.nginx.plus_client import PlusAPIError, PlusError, PlusUnauthorized, PlusUnreachable, UpstreamMissing
from tasks.nginx.translate import UpstreamRef

HOST = "http://10.0.0.1:9000/api"
WEB = UpstreamRef("http", "web")


def answer(status: int, code: str = "", headers: dict[str, str] | None = None) -> requests.Response:
    """An NGINX Plus error answer, as the API writes it."""
    response = requests.Response()
    response.status_code = status
    response.headers.update(headers or {})
    response._content = json.dumps({"error": {"status": status, "text": f"text of {code}", "code": code},
                                    "request_id": "r" * 32, "href": "https://nginx.org/"}).encode()
    return response


def api_error(status: int, code: str, **headers: str) -> PlusAPIError:
    return PlusAPIError.answered("POST", HOST + "/9/http/upstreams/web/servers/", 201, answer(status, code, headers))


class Host:
    """A PlusClient stand-in: ``refuse`` maps (method, server address or id) to the error it raises."""

    def __init__(self, refuse: dict[tuple[str, Any], Exception] | None = None) -> None:
        self.refuse = refuse or {}
        self.calls: list[tuple[str, Any]] = []

    def _call(self, method: str, target: Any) -> Any:
        self.calls.append((method, target))
        if (method, target) in self.refuse:
            raise self.refuse[(method, target)]
        return {}

    def add_server(self, protocol: str, upstream: str, server: dict[str, Any]) -> Any:
        return self._call("add_server", server["server"])

    def delete_server(self, protocol: str, upstream: str, server_id: int, remaining: bool = True) -> Any:
        return self._call("delete_server", server_id)

    def update_server(self, protocol: str, upstream: str, server_id: int, fields: dict[str, Any]) -> Any:
        return self._call("update_server", server_id)


def srv(id_: int, address: str, **params: Any) -> dict[str, Any]:
    return {"id": id_, "server": address, "weight": 1, "max_conns": 0, "max_fails": 1, "fail_timeout": "10s",
            "slow_start": "0s", "route": "", "backup": False, "down": False, **params}


def test_the_changes_are_calls_on_the_plus_client_in_order() -> None:
    # a backup is replaced, never moved (an unwanted server moves to a missing address: one PATCH)
    changes = diff("http", [srv(0, "a:1", backup=True), srv(1, "c:1", weight=5), srv(2, "d:1")],
                   ["b:1", "c:1", "e:1"])
    outcome = sync_outcome(HOST, WEB, changes)
    assert [(w.method, w.kind) for w in outcome.writes if isinstance(w, Call)] == [
        ("add_server", "add"), ("delete_server", "delete"), ("update_server", "update"),
        ("update_server", "update")]
    assert outcome.writes[0].args[:2] == ("http", "web") and outcome.writes[1].args == ("http", "web", 0)
    assert outcome.status is None and outcome.event is None and outcome.error is None
    assert not sync_outcome(HOST, WEB, diff("http", [srv(0, "a:1")], ["a:1"])).writes


def test_a_failed_change_does_not_stop_the_others_and_a_gone_server_is_deleted() -> None:
    changes = diff("http", [srv(0, "x:1", backup=True), srv(1, "y:1", backup=True)], ["a:1", "b:1"])
    bad = api_error(400, "UpstreamBadAddress")
    host = Host({("add_server", "a:1"): bad, ("delete_server", 0): api_error(404, "UpstreamServerNotFound")})
    done = execute(sync_outcome(HOST, WEB, changes), clients={"": host})
    assert host.calls == [("add_server", "a:1"), ("add_server", "b:1"), ("delete_server", 0), ("delete_server", 1)]
    assert done.outcome.error == f"add a:1: {bad}"
    assert done.refused is not None and not stops(done.refused[1])


def test_every_change_is_tried_however_many_fail() -> None:
    addresses = [f"10.0.{i // 250}.{i % 250}:80" for i in range(300)]
    host = Host({("add_server", a): api_error(400, "UpstreamBadAddress") for a in addresses})
    done = execute(sync_outcome(HOST, WEB, diff("http", [], addresses)), clients={"": host})
    assert len(host.calls) == len(addresses) and done.outcome.error is not None
    assert done.outcome.error.count("add 10.0.") == len(addresses)


@pytest.mark.parametrize(("error", "reason", "message"), [
    (api_error(404, "UpstreamNotFound"), "upstream_missing", f"upstream http:web missing on {HOST}"),
    (PlusUnreachable("POST x: ConnectionError: refused"), "unreachable", "POST x: ConnectionError: refused"),
    (PlusError("POST x: answer is not JSON"), "api", "POST x: answer is not JSON"),
])
def test_a_missing_upstream_or_no_api_answer_stops_the_sync(error: PlusError, reason: str, message: str) -> None:
    host = Host({("add_server", "a:1"): error})
    done = execute(sync_outcome(HOST, WEB, diff("http", [srv(0, "x:1", backup=True)], ["a:1", "b:1"])),
                   clients={"": host})
    assert host.calls == [("add_server", "a:1")]
    assert done.refused is not None and stops(done.refused[1])
    assert sync_failure(HOST, WEB, done.refused[1]) == (reason, message) and done.outcome.error == message


def test_the_plus_client_errors_are_classified() -> None:
    missing = api_error(404, "UpstreamNotFound")
    assert isinstance(missing, UpstreamMissing) and missing.failure.kind == "not_found"
    assert missing.failure.code == "UpstreamNotFound" and missing.failure.text == str(missing)
    unauthorized = api_error(401, "Unauthorized")
    assert isinstance(unauthorized, PlusUnauthorized) and unauthorized.failure.kind == "refused"
    assert sync_failure(HOST, WEB, unauthorized.failure) == ("unauthorized", f"{HOST}: API key rejected (401)")
    assert api_error(429, "TooManyRequests", **{"Retry-After": "3"}).failure == Failure(
        "throttled", 429, "TooManyRequests", "text of TooManyRequests",
        str(api_error(429, "TooManyRequests")), 3.0)
    assert api_error(502, "").failure.kind == "retry" and api_error(400, "UpstreamBadWeight").failure.kind == "refused"
    assert PlusUnreachable("down").failure == Failure("retry", 0, message="down", text="down")
    assert PlusError("odd").failure.kind == "refused"
