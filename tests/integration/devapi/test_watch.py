# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""Watch semantics through the official client: events, resume from resourceVersion, 410, bookmarks, timeout."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable

import pytest
from kubernetes import client, watch

from kubedev import DevAPIServer
from tests.integration.devapi.conftest import Collector, Crd

pytestmark = pytest.mark.integration


def needs_devapi(devapi: DevAPIServer | None) -> DevAPIServer:
    if devapi is None:
        pytest.skip("needs the dev API server (controls compaction / bookmark interval)")
    return devapi


def test_watch_sees_added_modified_deleted(crd: Crd, unique_ns: str, collect: Callable[..., Collector]) -> None:
    g, p = crd.group, crd.plural
    crd.api.create_namespaced_custom_object(g, "v1", unique_ns, p, crd.body("before"))
    events = collect(crd.api.list_namespaced_custom_object, g, "v1", unique_ns, p, timeout_seconds=10)
    events.wait_for(lambda c: c.types_for("before") == ["ADDED"])  # synthetic ADDED for existing objects
    crd.api.create_namespaced_custom_object(g, "v1", unique_ns, p, crd.body(
        "w", metadata={"finalizers": ["kubedev.example.com/x"]}, spec={"a": 1}))
    crd.api.patch_namespaced_custom_object(g, "v1", unique_ns, p, "w", {"spec": {"a": 2}})
    crd.api.delete_namespaced_custom_object(g, "v1", unique_ns, p, "w")
    crd.api.patch_namespaced_custom_object(g, "v1", unique_ns, p, "w", {"metadata": {"finalizers": None}})
    events.wait_for(lambda c: c.types_for("w")[-1:] == ["DELETED"])
    mine = [(t, rv, obj) for t, n, rv, obj in events.events if n == "w"]
    assert [t for t, _, _ in mine] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert mine[2][2]["metadata"].get("deletionTimestamp")  # the delete mark is a MODIFIED
    rvs = [int(rv) for _, rv, _ in mine]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


def test_watch_resumes_from_resource_version(core: client.CoreV1Api, unique_ns: str,
                                             collect: Callable[..., Collector]) -> None:
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "a"}})
    rv = core.list_namespaced_config_map(unique_ns).metadata.resource_version
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "b"}})
    core.patch_namespaced_config_map("a", unique_ns, {"data": {"x": "1"}})
    core.delete_namespaced_config_map("b", unique_ns)
    events = collect(core.list_namespaced_config_map, unique_ns, resource_version=rv, timeout_seconds=5)
    events.wait_for(lambda c: len(c.events) >= 3)
    assert [(t, n) for t, n, _, _ in events.events] == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]


def test_watch_with_selector_sees_objects_leave_the_selection(core: client.CoreV1Api, unique_ns: str,
                                                              collect: Callable[..., Collector]) -> None:
    events = collect(core.list_namespaced_config_map, unique_ns, label_selector="app=x", timeout_seconds=10)
    time.sleep(0.3)
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "a", "labels": {"app": "x"}}})
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "other", "labels": {"app": "y"}}})
    core.patch_namespaced_config_map("a", unique_ns, {"metadata": {"labels": {"app": "z"}}})
    core.patch_namespaced_config_map("other", unique_ns, {"metadata": {"labels": {"app": "x"}}})
    events.wait_for(lambda c: len(c.events) >= 3)
    assert [(t, n) for t, n, _, _ in events.events] == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "other")]


def test_watch_all_namespaces_with_field_selector(core: client.CoreV1Api, unique_ns: str,
                                                  collect: Callable[..., Collector]) -> None:
    events = collect(core.list_config_map_for_all_namespaces, field_selector=f"metadata.namespace={unique_ns}",
                     timeout_seconds=10)
    time.sleep(0.3)
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "seen"}})
    events.wait_for(lambda c: "seen" in [n for _, n, _, _ in c.events])


def test_watch_ends_after_timeout_seconds(core: client.CoreV1Api, unique_ns: str) -> None:
    started = time.monotonic()
    list(watch.Watch().stream(core.list_namespaced_config_map, unique_ns, timeout_seconds=1,
                              resource_version=core.list_namespaced_config_map(unique_ns).metadata.resource_version))
    assert time.monotonic() - started < 5


def test_watch_from_compacted_resource_version_is_410(devapi_clean: DevAPIServer | None, core: client.CoreV1Api,
                                                      unique_ns: str) -> None:
    server = needs_devapi(devapi_clean)
    rv = core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "a"}}).metadata.resource_version
    core.patch_namespaced_config_map("a", unique_ns, {"data": {"x": "1"}})
    server.compact()
    raw = core.list_namespaced_config_map(unique_ns, watch=True, resource_version=rv, timeout_seconds=2,
                                          _preload_content=False)
    first = json.loads(raw.readline() if hasattr(raw, "readline") else next(raw.stream()).split(b"\n")[0])
    assert first["type"] == "ERROR"
    assert first["object"]["code"] == 410 and first["object"]["reason"] == "Expired"
    assert first["object"]["message"].startswith("too old resource version")
    with pytest.raises(client.ApiException) as exc:
        list(watch.Watch().stream(core.list_namespaced_config_map, unique_ns, resource_version=rv, timeout_seconds=2))
    assert exc.value.status == 410


def test_bookmarks_carry_the_current_resource_version(devapi_clean: DevAPIServer | None, core: client.CoreV1Api,
                                                      unique_ns: str) -> None:
    needs_devapi(devapi_clean)  # the session server sends a bookmark every second
    rv = core.list_namespaced_config_map(unique_ns).metadata.resource_version
    raw = core.list_namespaced_config_map(unique_ns, watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                          timeout_seconds=3, _preload_content=False)
    lines = [json.loads(line) for line in b"".join(raw.stream()).splitlines() if line.strip()]
    bookmarks = [e for e in lines if e["type"] == "BOOKMARK"]
    assert bookmarks and int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv)
    assert bookmarks[0]["object"]["kind"] == "ConfigMap"


def test_stopping_the_server_ends_watches(devapi: DevAPIServer | None) -> None:
    needs_devapi(devapi)
    server = DevAPIServer(port=0).start()
    try:
        cfg = client.Configuration()
        cfg.host = server.url
        api = client.ApiClient(cfg)
        ended = threading.Event()

        def run() -> None:
            # a clean end or a connection error both count as ended
            with contextlib.suppress(Exception):
                list(watch.Watch().stream(client.CoreV1Api(api).list_namespaced_config_map, "default",
                                          timeout_seconds=60))
            ended.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        time.sleep(0.3)
        started = time.monotonic()
        server.stop()
        assert ended.wait(10) and time.monotonic() - started < 5
        api.close()
    finally:
        server.stop()
