"""An untrusted cluster's API server (a tiny local HTTP server playing an attacker's SKR): a remote
client follows no redirect, gives up on a trickling answer at its total deadline, and stops reading
a list past its object, byte or page bound, with a clear :class:`kube.ReadLimitExceeded`."""

from __future__ import annotations

import contextlib
import json
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s

from kube import ApiError, Kube, ReadLimitExceeded
from kube.client import ByteBudget, ReadLimits
from kube.clusters import RemoteKube, connect_budget, pod_memory_bytes
from kube.resources import Resource
from tests.fixtures.processes import served

pytestmark = pytest.mark.integration

IPRANGE = Resource("cloud-resources.kyma-project.io", "v1beta1", "ipranges", "IpRange", namespaced=False)
Handler = Callable[[BaseHTTPRequestHandler], None]


class Evil:
    """A local HTTP server whose every GET is answered by ``handler``; ``paths`` records requests."""

    def __init__(self) -> None:
        self.handler: Handler = lambda h: h.send_error(404)
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        evil = self

        class _H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                evil.paths.append(self.path)
                evil.headers.append({k.lower(): v for k, v in self.headers.items()})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    evil.handler(self)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.server.shutdown()
        self.server.server_close()

    def client(self, timeout: float = 2.0, budget: int = 2**30, **limits: int) -> RemoteKube:
        config = k8s.Configuration()
        config.host = self.url
        return RemoteKube(k8s.ApiClient(config), cluster="attacker", timeout=timeout, limits=ReadLimits(**limits),
                          budget=ByteBudget(budget))


@pytest.fixture
def evil() -> Iterator[Evil]:
    yield from served(Evil())


def _json(h: BaseHTTPRequestHandler, body: object, status: int = 200) -> None:
    raw = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(raw)))
    h.end_headers()
    h.wfile.write(raw)


def _page(n: int, start: int = 0, cont: str = "", pad: int = 0) -> dict:
    items = [{"metadata": {"name": f"r{start + i}", "annotations": {"x": "a" * pad}}} for i in range(n)]
    return {"kind": "IpRangeList", "metadata": {"resourceVersion": "7", "continue": cont}, "items": items}


def test_a_redirect_is_not_followed(evil: Evil) -> None:
    def redirect(h: BaseHTTPRequestHandler) -> None:
        if h.path.startswith("/internal"):
            _json(h, {"kind": "Secret", "data": {"token": "stolen"}})
            return
        h.send_response(307)
        h.send_header("Location", f"{evil.url}/internal/metadata")
        h.send_header("Content-Length", "0")
        h.end_headers()

    evil.handler = redirect
    with pytest.raises(ApiError) as caught:
        evil.client().get(IPRANGE, "a")
    assert caught.value.status == 307
    assert not [p for p in evil.paths if p.startswith("/internal")]


def test_the_kept_pool_and_urllib3_send_the_same_paths(evil: Evil) -> None:
    """Plain paths go to the client's kept pool, others through urllib3's URL encoding as before."""
    evil.handler = lambda h: _json(h, {"metadata": {"name": "x"}})
    kube = evil.client()
    for name in ("a", "b c", "caf\u00e9", "a"):
        assert kube.get(IPRANGE, name) == {"metadata": {"name": "x"}}
    assert evil.paths == [f"/apis/cloud-resources.kyma-project.io/v1beta1/ipranges/{n}"
                          for n in ("a", "b%20c", "caf%C3%A9", "a")]
    kube.close()
    assert kube.get(IPRANGE, "a") == {"metadata": {"name": "x"}}, "a closed pool is not reused"


def test_a_host_with_a_path_prefix_and_a_query_reach_the_server_as_the_official_client_sends_them(evil: Evil) -> None:
    """A Configuration host with a path (a proxying front such as Rancher's ``/k8s/clusters/<id>``) keeps its
    prefix on the kept pool; the query is encoded by the official client's ``parameters_to_url_query``;
    the local (trusted) client takes the same path and sends its bearer token."""
    evil.handler = lambda h: _json(h, {"kind": "IpRangeList", "metadata": {}, "items": []})
    config = k8s.Configuration()
    config.host = f"{evil.url}/k8s/clusters/c-1"
    config.api_key = {"BearerToken": "sekret"}
    config.api_key_prefix = {"BearerToken": "Bearer"}
    local = Kube(k8s.ApiClient(config), timeout=2.0)
    assert local.list(IPRANGE, label_selector="a=b,c in (d e)") == []
    assert local.request("GET", IPRANGE.path(None, "x"), query=[("dryRun", True), ("limit", 5)]) is not None
    assert evil.paths == [
        "/k8s/clusters/c-1/apis/cloud-resources.kyma-project.io/v1beta1/ipranges?labelSelector=a%3Db%2Cc%20in%20%28d%20e%29"
        "&limit=500",
        "/k8s/clusters/c-1/apis/cloud-resources.kyma-project.io/v1beta1/ipranges/x?dryRun=true&limit=5",
    ]
    assert evil.headers[-1]["authorization"] == "Bearer sekret"
    assert evil.headers[-1]["user-agent"].startswith("OpenAPI-Generator/"), "the official client's default headers"
    local.close()


def test_list_metadata_asks_for_the_metadata_and_keeps_only_it_from_a_server_that_sends_more(evil: Evil) -> None:
    """A server that ignores the PartialObjectMetadataList Accept sends whole objects: only their metadata
    is kept, and the bytes are given back to the connect's budget."""
    evil.handler = lambda h: _json(h, {"kind": "IpRangeList", "metadata": {"resourceVersion": "7"}, "items": [
        {"metadata": {"name": f"r{n}", "labels": {"a": "b"}}, "spec": {"cidr": "x" * 3000}, "status": {}}
        for n in range(2)]})
    kube = evil.client(budget=64 * 1024)
    assert kube.list_metadata(IPRANGE) == [
        {"apiVersion": IPRANGE.api_version, "kind": "IpRange", "metadata": {"name": f"r{n}", "labels": {"a": "b"}}}
        for n in range(2)]
    assert evil.headers[-1]["accept"].startswith("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,")
    assert kube.budget is not None and kube.budget.left == kube.budget.total


@pytest.mark.parametrize("answer", [
    {"items": ["x"]}, {"items": "x"}, {"items": [{"metadata": "x"}]}, [1, 2], "a string",
])
def test_a_list_answer_of_another_shape_is_a_bad_response_not_a_crash(evil: Evil, answer: object) -> None:
    """An untrusted cluster's list answer that is JSON but not a list of objects (with object metadata,
    for :meth:`Kube.list_metadata`) is an :class:`ApiError` ``BadResponse`` naming the request."""
    evil.handler = lambda h: _json(h, answer)
    kube = evil.client()
    with pytest.raises(ApiError) as caught:
        kube.list_metadata(IPRANGE)
    assert caught.value.reason == "BadResponse" and "iprange" in str(caught.value).lower()
    if answer != {"items": [{"metadata": "x"}]}:  # an object's own metadata is list_metadata's to check
        with pytest.raises(ApiError) as caught:
            kube.list(IPRANGE)
        assert caught.value.reason == "BadResponse"


def _drip(h: BaseHTTPRequestHandler, byte: bytes, count: int, pause: float) -> None:
    """Write ``byte`` ``count`` times, ``pause`` seconds apart: every read succeeds, nothing ends."""
    for _ in range(count):
        h.wfile.write(byte)
        h.wfile.flush()
        time.sleep(pause)


def _get_within_the_deadline(evil: Evil, handler: Callable[[BaseHTTPRequestHandler], None],
                             error: type[ApiError]) -> ApiError:
    """GET through a client with a 1 s total deadline from ``handler``; the ``error`` it raised."""
    evil.handler = handler
    t0 = time.monotonic()
    with pytest.raises(error) as caught:
        evil.client(timeout=1.0).get(IPRANGE, "a")
    assert time.monotonic() - t0 < 3.0
    return caught.value


def test_a_trickling_answer_ends_at_the_total_deadline(evil: Evil) -> None:
    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        _drip(h, b" ", 200, 0.1)  # a byte every 0.1 s: the answer never ends

    assert _get_within_the_deadline(evil, trickle, ReadLimitExceeded).reason == "DeadlineExceeded"


def test_a_list_past_its_object_bound_fails(evil: Evil) -> None:
    def pages(h: BaseHTTPRequestHandler) -> None:
        start = int(h.path.split("continue=")[1]) if "continue=" in h.path else 0
        assert "limit=3" in h.path  # the page size asked is the bound's
        _json(h, _page(3, start, cont=str(start + 3)))

    evil.handler = pages
    with pytest.raises(ReadLimitExceeded) as caught:
        evil.client(page_size=3, max_objects=10).list(IPRANGE)
    assert caught.value.reason == "TooManyObjects" and "more than 10 objects" in str(caught.value)


def test_a_server_that_ignores_the_page_size_is_still_bounded(evil: Evil) -> None:
    evil.handler = lambda h: _json(h, _page(50))
    with pytest.raises(ReadLimitExceeded, match="TooManyObjects"):
        evil.client(page_size=5, max_objects=20).list(IPRANGE)


def test_a_list_past_its_byte_bound_fails_before_it_is_read_whole(evil: Evil) -> None:
    evil.handler = lambda h: _json(h, _page(4, pad=100_000))
    with pytest.raises(ReadLimitExceeded) as caught:
        evil.client(max_bytes=150_000).list(IPRANGE)
    assert caught.value.reason == "TooLarge"


def test_bytes_are_counted_over_all_pages(evil: Evil) -> None:
    def pages(h: BaseHTTPRequestHandler) -> None:
        start = int(h.path.split("continue=")[1]) if "continue=" in h.path else 0
        _json(h, _page(1, start, cont=str(start + 1) if start < 9 else "", pad=20_000))

    evil.handler = pages
    assert len(evil.client(max_bytes=1_000_000).list(IPRANGE)) == 10
    with pytest.raises(ReadLimitExceeded, match="TooLarge"):
        evil.client(max_bytes=100_000).list(IPRANGE)


def test_a_server_that_pages_forever_is_stopped(evil: Evil) -> None:
    evil.handler = lambda h: _json(h, _page(0, cont="again"))
    with pytest.raises(ReadLimitExceeded, match="TooManyPages"):
        evil.client(page_size=10, max_objects=100).list(IPRANGE)
    assert len(evil.paths) <= 12


def test_trickled_header_lines_end_at_the_total_deadline(evil: Evil) -> None:
    def trickle_headers(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        _drip(h, b"X", 300, 0.05)  # a header byte every 0.05 s: the headers never end

    assert _get_within_the_deadline(evil, trickle_headers, ApiError).status == 0


def _in_thread(call: Callable[[], object], wait: float) -> tuple[bool, BaseException | None]:
    """Run ``call`` in a daemon thread for at most ``wait`` seconds: ``(finished, what it raised)``
    (an unbounded read would otherwise hold the test for the attacker's whole answer)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # the error is what the test looks at
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(wait)
    return not thread.is_alive(), (raised[0] if raised else None)


def test_a_trickled_error_body_ends_at_the_total_deadline(evil: Evil) -> None:
    # issue 27: a 500 whose body trickles at 32 KiB/s was read for as long as it lasted (61 s with a 10 s timeout)
    def trickle_500(h: BaseHTTPRequestHandler) -> None:
        h.send_response(500)
        h.send_header("Content-Type", "application/json")
        h.end_headers()  # no length (a declared one past 64 KiB is refused before any read)
        _drip(h, b" " * 3277, 640, 0.1)  # 32 KiB/s for 64 s, under the 64 KiB bound for the first 2 s

    evil.handler = trickle_500
    t0 = time.monotonic()
    finished, raised = _in_thread(lambda: evil.client(timeout=1.0).get(IPRANGE, "a"), wait=5.0)
    assert finished, "still reading the error body 5 s after a 1 s timeout"
    assert time.monotonic() - t0 < 3.0
    assert isinstance(raised, ReadLimitExceeded) and raised.reason == "DeadlineExceeded"


def test_an_endless_error_body_is_read_to_64_kib_only(evil: Evil) -> None:
    sent: list[int] = [0]

    def stream_500(h: BaseHTTPRequestHandler) -> None:
        h.send_response(500)
        h.send_header("Content-Type", "application/json")
        h.end_headers()  # no length: the body ends when the server closes
        chunk = b"x" * 65536
        for _ in range(512):  # 32 MiB at full speed, unless the client hangs up
            h.wfile.write(chunk)
            sent[0] += len(chunk)

    evil.handler = stream_500
    finished, raised = _in_thread(lambda: evil.client(timeout=5.0).get(IPRANGE, "a"), wait=5.0)
    assert finished
    assert isinstance(raised, ReadLimitExceeded) and raised.reason == "TooLarge"
    assert "64 KiB" in str(raised) or "65536" in str(raised)
    time.sleep(0.2)
    assert sent[0] < 16 * 2**20  # the client hung up: only socket buffers' worth went out


def test_a_trusted_client_bounds_error_bodies_too(evil: Evil) -> None:
    evil.handler = lambda h: _json(h, {"kind": "Status", "message": "x" * 200_000, "reason": "InternalError"}, 500)
    config = k8s.Configuration()
    config.host = evil.url
    trusted = Kube(k8s.ApiClient(config), cluster="local", timeout=2.0)
    with pytest.raises(ReadLimitExceeded, match="TooLarge"):
        trusted.get(IPRANGE, "a")


def _ten_pages(h: BaseHTTPRequestHandler) -> None:
    start = int(h.path.split("continue=")[1]) if "continue=" in h.path else 0
    _json(h, _page(1, start, cont=str(start + 1) if start < 9 else "", pad=20_000))  # ~20 KB a page


def test_a_list_past_the_connect_budget_fails_and_keeps_nothing_charged(evil: Evil) -> None:
    # issue 27: each list could take its own 64 MiB however many a connect held; now they share one budget
    evil.handler = _ten_pages
    skr = evil.client(budget=100_000)
    with pytest.raises(ReadLimitExceeded) as caught:
        skr.list(IPRANGE)
    assert caught.value.reason == "BudgetExhausted" and "memory budget of 100000 bytes" in str(caught.value)
    assert skr.budget is not None and skr.budget.left == 100_000
    assert len(evil.paths) <= 6  # it stopped reading at the budget


def test_held_lists_share_the_budget_until_given_back(evil: Evil) -> None:
    evil.handler = _ten_pages
    whole = evil.client().list_measured(IPRANGE)[2]
    skr = evil.client(budget=whole + 10_000)  # room for the list, not for one more page
    assert skr.budget is not None
    items, _, size = skr.list_measured(IPRANGE)
    assert len(items) == 10 and size == whole and skr.budget.left == 10_000
    with pytest.raises(ReadLimitExceeded, match="BudgetExhausted"):
        skr.list_measured(IPRANGE)  # a second kind's list while the first is held
    with pytest.raises(ReadLimitExceeded, match="BudgetExhausted"):
        skr.get(IPRANGE, "r0")  # any answer is bounded by what is left
    skr.budget.give(size)
    assert len(skr.list(IPRANGE)) == 10 and skr.budget.left == whole + 10_000  # list() gives back itself


def test_the_budget_is_sized_from_the_cgroup_memory_limit(tmp_path: pathlib.Path) -> None:
    from kube import settings as kube_settings

    v2 = tmp_path / "memory.max"
    v2.write_text("max\n")
    v1 = tmp_path / "memory.limit_in_bytes"
    v1.write_text(f"{256 * 2**20}\n")
    assert pod_memory_bytes((str(v2), str(v1))) == 256 * 2**20  # "max" is no limit: v1's number wins
    v2.write_text(f"{512 * 2**20}\n")
    assert pod_memory_bytes((str(v2), str(v1))) == 512 * 2**20
    assert pod_memory_bytes((str(tmp_path / "absent"),)) == 512 * 2**20  # the setting
    assert connect_budget(512 * 2**20).total == 8 * 2**20  # 512 Mi * 0.5 / (8 connects * 4)
    kube_settings.current.override(kube_settings.KubeSettings(remote_connect_budget_bytes=12345))
    try:
        assert connect_budget(512 * 2**20).total == 12345
    finally:
        kube_settings.current.override(None)
