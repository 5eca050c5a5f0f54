# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""The DevAPIServer runner itself: endpoints, restart on the same port, state carry-over, ``python -m kubedev``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import yaml
from kubernetes import client, watch

from kubedev import DevAPIServer
from tests.fixtures.processes import free_port, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def own_server(devapi: DevAPIServer | None) -> Iterator[Callable[..., DevAPIServer]]:
    """Factory for extra servers (stopped at teardown); skipped against a real cluster."""
    if devapi is None:
        pytest.skip("needs the dev API server")
    started: list[DevAPIServer] = []

    def make(**kwargs: object) -> DevAPIServer:
        server = DevAPIServer(**kwargs).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def core_for(server: DevAPIServer) -> client.CoreV1Api:
    cfg = client.Configuration()
    cfg.host = server.url
    return client.CoreV1Api(client.ApiClient(cfg))


def test_health_version_and_discovery(own_server: Callable[..., DevAPIServer]) -> None:
    server = own_server()
    for path in ("/healthz", "/readyz", "/livez"):
        assert requests.get(server.url + path, timeout=5).text == "ok"
    for path in ("/version", "/version/"):
        assert requests.get(server.url + path, timeout=5).json()["major"] == "1"
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    groups = requests.get(server.url + "/apis", headers={"Accept": aggregated}, timeout=5).json()
    assert groups["kind"] == "APIGroupList" and "apps" in {g["name"] for g in groups["groups"]}
    assert requests.get(server.url + "/api", timeout=5).json()["versions"] == ["v1"]
    core = requests.get(server.url + "/api/v1", timeout=5).json()
    assert {"pods", "pods/status", "namespaces", "configmaps"} <= {r["name"] for r in core["resources"]}
    assert client.VersionApi(client.ApiClient(core_for(server).api_client.configuration)).get_code().major == "1"


def test_restart_on_the_same_port_with_kept_state(own_server: Callable[..., DevAPIServer]) -> None:
    first = own_server()
    core = core_for(first)
    core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    port, store = first.port, first.store
    first.stop()
    with pytest.raises(Exception):  # noqa: B017 - the outage: connection refused
        core.list_namespaced_config_map("default", _request_timeout=2)
    second = own_server(port=port, store=store)
    assert second.port == port
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["kept"]
    core.patch_namespaced_config_map("kept", "default", {"data": {"a": "1"}})
    events = list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv,
                                       timeout_seconds=1))
    assert [e["type"] for e in events] == ["MODIFIED"]
    second.compact()
    with pytest.raises(client.ApiException) as exc:
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1))
    assert exc.value.status == 410


def test_restart_without_state_is_empty(own_server: Callable[..., DevAPIServer]) -> None:
    first = own_server()
    core_for(first).create_namespaced_config_map("default", {"metadata": {"name": "lost"}})
    port = first.port
    first.stop()
    second = own_server(port=port)
    assert core_for(second).list_namespaced_config_map("default").items == []


def test_kubeconfig_file(own_server: Callable[..., DevAPIServer], tmp_path: Path) -> None:
    server = own_server()
    path = server.write_kubeconfig(tmp_path / "sub" / "kubeconfig")
    cfg = yaml.safe_load(path.read_text())
    assert cfg["clusters"][0]["cluster"]["server"] == server.url
    assert cfg["users"][0]["user"]["token"] == "dev"


def test_python_dash_m_kubedev(devapi: DevAPIServer | None, spawn: Callable[..., subprocess.Popen[bytes]],
                               tmp_path: Path) -> None:
    if devapi is None:
        pytest.skip("needs the dev API server")
    port = free_port()
    kubeconfig = tmp_path / "out" / "kubeconfig"
    spawn([sys.executable, "-m", "kubedev", "--port", str(port), "--kubeconfig", str(kubeconfig)],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).ok, timeout=20,
             message="python -m kubedev to listen")
    wait_for(kubeconfig.exists, timeout=5)
    assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{port}"
