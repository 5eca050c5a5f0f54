"""The nlk mode's reconcile against the dev API server and NGINX Plus stand-ins that require an API key:
ClusterIP through EndpointSlices, LoadBalancer, ExternalName, the API key present/absent/wrong, and the
ownership record that empties upstreams of Services deleted while nothing watched (after a restart)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient
from structlog.testing import capture_logs

import config
from kube import Kube, resources
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx import controller, watches
from tasks.nginx.controller import desired_keys, key_for, reconcile
from tasks.nginx.plan import parse_owned
from tasks.nginx.reads import ENDPOINTSLICE
from tasks.nginx.settings import EdgeNames
from tasks.nginx.translate import UpstreamRef
from watchers.engine import WatchManager
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

NAMES = EdgeNames(modes=("nlk",))
KEY = "nlk-test-key"
PODS, LB, EXT = UpstreamRef("http", "pods"), UpstreamRef("http", "lb-edge"), UpstreamRef("stream", "ext")


@pytest.fixture
def kube(kube_client: ApiClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kube]:
    monkeypatch.setenv("NGINXAAS_DATAPLANE_API_KEY", KEY)
    config.reset()
    controller._unauthorized_hosts.clear()
    controller._unverified_hosts.clear()
    k = Kube(kube_client)
    for ns in ("nlk", "apps"):
        k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
    yield k
    monkeypatch.delenv("NGINXAAS_DATAPLANE_API_KEY")
    config.reset()


@pytest.fixture
def plus(plus_factory: Callable[..., NginxPlusStandIn]) -> NginxPlusStandIn:
    return plus_factory(http_upstreams=["pods", "lb-edge"], stream_upstreams=["ext"], api_key=KEY)


def configure(kube: Kube, *hosts: NginxPlusStandIn) -> None:
    text = "nginx-hosts:\n" + "".join(f"  - {h.url}\n" for h in hosts) + "tls-mode: no-tls\n"
    kube.create(resources.CONFIGMAP, {"metadata": {"name": "nlk-config", "namespace": "nlk"},
                                      "data": {"config.yaml": text}})


def service(kube: Kube, name: str, kind: str, ports: list[dict[str, Any]], annotated: bool = True) -> dict[str, Any]:
    annotations = {"nginx.com/nginxaas": "nginxaas"} if annotated else {}
    spec: dict[str, Any] = {"type": kind, "ports": ports}
    if kind == "ExternalName":
        spec["externalName"] = "db.example.com"
    return kube.create(resources.SERVICE, {"metadata": {"name": name, "namespace": "apps",
                                                        "annotations": annotations}, "spec": spec})


def endpoint_slice(kube: Kube, service_name: str, name: str, port: int, ips: list[str]) -> None:
    kube.create(ENDPOINTSLICE, {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "apps", "labels": {"kubernetes.io/service-name": service_name}},
        "addressType": "IPv4", "ports": [{"name": "http-pods", "port": port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]})


def sync(kube: Kube, plus: NginxPlusStandIn, *refs: UpstreamRef) -> dict[str, ResultKind]:
    keys = set(desired_keys(kube, NAMES)) | {key_for(plus.url, r) for r in refs}
    return {k.name: reconcile(k, NAMES, kube).outcome for k in sorted(keys)}


def owned(kube: Kube) -> set[tuple[str, UpstreamRef]]:
    cm = kube.get(resources.CONFIGMAP, "nginx-edge-upstreams", "nlk")
    return parse_owned((cm or {}).get("data"))


def test_cluster_ip_load_balancer_and_external_name(kube: Kube, plus: NginxPlusStandIn) -> None:
    configure(kube, plus)
    service(kube, "pods", "ClusterIP", [{"name": "http-pods", "port": 80, "targetPort": 8080}])
    endpoint_slice(kube, "pods", "pods-a", 8080, ["10.244.1.5", "10.244.1.6"])
    endpoint_slice(kube, "pods", "pods-b", 8080, ["10.244.2.7"])
    service(kube, "lb", "LoadBalancer", [{"name": "http-lb-edge", "port": 443}])
    kube.patch_status(resources.SERVICE, "lb", {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}, "apps")
    service(kube, "ext", "ExternalName", [{"name": "stream-ext", "port": 5432}])
    service(kube, "plain", "ClusterIP", [{"name": "http-pods", "port": 80}], annotated=False)  # not selected

    assert set(sync(kube, plus).values()) == {ResultKind.SUCCESS}
    assert plus.addresses("http", "pods") == ["10.244.1.5:8080", "10.244.1.6:8080", "10.244.2.7:8080"]
    assert plus.addresses("http", "lb-edge") == ["192.0.2.10:443"]
    assert plus.addresses("stream", "ext") == []
    events = [e for e in kube.list(resources.EVENT, "apps") if e["involvedObject"]["name"] == "ext"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "UnsupportedServiceType")]
    assert "ExternalName" in events[0]["message"]
    # every request carried the key and the version header
    sent = plus.header_log
    assert sent and all(h["Authorization"] == "ApiKey bmxrLXRlc3Qta2V5" and "X-NLK-Version" in h for _, _, h in sent)

    # a slice goes away, the LoadBalancer gets a second IP
    kube.delete(ENDPOINTSLICE, "pods-a", "apps")
    kube.patch_status(resources.SERVICE, "lb", {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"},
                                                                             {"ip": "192.0.2.11"}]}}, "apps")
    sync(kube, plus)
    assert plus.addresses("http", "pods") == ["10.244.2.7:8080"]
    assert plus.addresses("http", "lb-edge") == ["192.0.2.10:443", "192.0.2.11:443"]

    # the annotation removed: the Service leaves, its upstream is emptied (the watcher maps the old object)
    kube.patch(resources.SERVICE, "pods", {"metadata": {"annotations": {"nginx.com/nginxaas": None}}}, "apps")
    sync(kube, plus, PODS)
    assert plus.addresses("http", "pods") == []


def test_api_key_absent_or_wrong_is_reported_once_then_retried_with_backoff(
        kube: Kube, plus: NginxPlusStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(kube, plus)
    service(kube, "lb", "LoadBalancer", [{"name": "http-lb-edge", "port": 443}])
    kube.patch_status(resources.SERVICE, "lb", {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}, "apps")
    key = key_for(plus.url, LB)
    for wrong in ("", "not-the-key"):
        controller._unauthorized_hosts.clear()
        monkeypatch.setenv("NGINXAAS_DATAPLANE_API_KEY", wrong)
        config.reset()
        plus.reset_requests()
        with capture_logs() as logs:
            results = [reconcile(key, NAMES, kube) for _ in range(3)]
        assert {r.outcome for r in results} == {ResultKind.ERROR}  # retried with the controller's backoff
        assert plus.rejected == 3 and plus.addresses("http", "lb-edge") == []
        assert [e["event"] for e in logs if e["log_level"] == "error"] == ["NGINX Plus host rejected the API key"]
    events = [e for e in kube.list(resources.EVENT, "nlk") if e["reason"] == "NginxPlusUnauthorized"]
    assert {e["involvedObject"]["name"] for e in events} == {"nlk-config"} and len(events) == 2
    assert {e["count"] for e in events} == {1}
    assert any("is missing" in e["message"] for e in events) and any("was rejected" in e["message"] for e in events)
    assert KEY not in str(events) and "not-the-key" not in str(events)

    monkeypatch.setenv("NGINXAAS_DATAPLANE_API_KEY", KEY)
    config.reset()
    controller._unverified_hosts.clear()
    with capture_logs() as logs:
        assert reconcile(key, NAMES, kube).outcome is ResultKind.SUCCESS
        reconcile(key, NAMES, kube)
    assert plus.addresses("http", "lb-edge") == ["192.0.2.10:443"]
    assert plus.url not in controller._unauthorized_hosts
    # tls-mode no-tls: the key goes to a host whose certificate nobody checked, said once per host
    unverified = [e for e in logs if e["event"].startswith("the NGINXaaS API key is sent without TLS verification")]
    assert [(e["log_level"], e["host"], e["plain_http"]) for e in unverified] == [("warning", plus.url, True)]


def test_a_service_deleted_while_nothing_watched_is_emptied_by_the_resync(kube: Kube, plus: NginxPlusStandIn) -> None:
    configure(kube, plus)
    service(kube, "pods", "ClusterIP", [{"name": "http-pods", "port": 80}])
    endpoint_slice(kube, "pods", "pods-a", 8080, ["10.244.1.5"])
    plus.state.declare("http", "untouched", servers=[{"server": "10.9.9.9:80"}])
    sync(kube, plus)
    assert plus.addresses("http", "pods") == ["10.244.1.5:8080"]
    assert owned(kube) == {(plus.url, PODS)}

    # "the controller is down": the Service and its slice go, no watcher maps the old object
    kube.delete(resources.SERVICE, "pods", "apps")
    kube.delete(ENDPOINTSLICE, "pods-a", "apps")
    controller.STATE_READS.__init__()  # a new process: nothing in memory, only what the cluster holds
    keys = desired_keys(kube, NAMES)  # the resync's key list
    assert keys == [key_for(plus.url, PODS)]
    assert reconcile(keys[0], NAMES, kube).outcome is ResultKind.SUCCESS
    assert plus.addresses("http", "pods") == []
    assert owned(kube) == set() and desired_keys(kube, NAMES) == []
    assert plus.addresses("http", "untouched") == ["10.9.9.9:80"]  # never named: never touched


def test_nkl_mode_records_ownership_too(kube_client: ApiClient, plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    """The docs' former "Limitation": a Service of the nkl mode deleted while no watcher ran."""
    from tests.integration.nginx.test_reconcile import WEB, configmap, node
    from tests.integration.nginx.test_reconcile import service as nkl_service

    k = Kube(kube_client)
    for ns in ("nkl", "nginx-ingress"):
        k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
    host = plus_factory()
    configmap(k, [host])
    node(k, "w0", "10.0.1.11")
    nkl_service(k, [("nkl-nginx-lb-http", 30080)])
    for key in desired_keys(k):
        assert reconcile(key, kube=k).outcome is ResultKind.SUCCESS
    record = k.get(resources.CONFIGMAP, "nginx-edge-upstreams", "nkl")
    assert record is not None and parse_owned(record["data"]) == {(host.url, WEB)}
    assert record["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "reconcilery"

    k.delete(resources.SERVICE, "nginx-ingress", "nginx-ingress")
    controller.STATE_READS.__init__()
    assert desired_keys(k) == [key_for(host.url, WEB)]
    assert reconcile(key_for(host.url, WEB), kube=k).outcome is ResultKind.SUCCESS
    assert host.addresses("http", "nginx-lb-http") == [] and desired_keys(k) == []


def test_a_change_of_the_config_file_enqueues_every_nlk_upstream(
        kube: Kube, plus_factory: Callable[..., NginxPlusStandIn], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The file form has no watch: the watcher's Services registration polls it, and a host added there
    gets every upstream at once, as with the ConfigMap form (not at the next resync)."""
    first, second = (plus_factory(http_upstreams=["lb-edge"], stream_upstreams=[], api_key=KEY) for _ in range(2))
    path = tmp_path / "config.yaml"
    path.write_text(f"nginx-hosts:\n  - {first.url}\n")
    names = EdgeNames(modes=("nlk",), nlk_config_file=str(path))
    monkeypatch.setattr(watches, "edge_names", lambda: names)
    monkeypatch.setattr(watches, "NLK_FILE_POLL_SECONDS", 0.1)
    service(kube, "lb", "LoadBalancer", [{"name": "http-lb-edge", "port": 443}])
    kube.patch_status(resources.SERVICE, "lb", {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}, "apps")
    enqueued: list[Key] = []
    with WatchManager(watches.registrations(), lambda _controller, key: enqueued.append(key), kube=kube) as manager:
        assert manager.wait_ready(10)
        assert enqueued == [key_for(first.url, LB)]  # the initial list, with the file as it was
        path.write_text(f"nginx-hosts:\n  - {first.url}\n  - {second.url}\n")
        deadline = time.monotonic() + 5
        while key_for(second.url, LB) not in enqueued and time.monotonic() < deadline:
            time.sleep(0.05)
    assert set(enqueued[1:]) == {key_for(first.url, LB), key_for(second.url, LB)}
    assert reconcile(key_for(second.url, LB), names, kube).outcome is ResultKind.SUCCESS
    assert second.addresses("http", "lb-edge") == ["192.0.2.10:443"]


def test_an_upstream_has_one_owner_and_one_configured_by_hand_is_left_alone(
        kube: Kube, plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    """Issue 27: a Service of another namespace naming an upstream by its port name added its endpoints
    to it, and took over an upstream configured by hand on the NGINX host."""
    plus = plus_factory(http_upstreams=["pods", "manual"], api_key=KEY)
    plus.state.declare("http", "manual", servers=[{"server": "10.9.9.9:80"}])  # configured in nginx.conf
    configure(kube, plus)
    service(kube, "pods", "ClusterIP", [{"name": "http-pods", "port": 80, "targetPort": 8080}])
    endpoint_slice(kube, "pods", "pods-a", 8080, ["10.244.1.5"])
    time.sleep(1.1)  # creationTimestamp has seconds: the attacker's Service is younger
    kube.create(resources.NAMESPACE, {"metadata": {"name": "evil"}})
    kube.create(resources.SERVICE, {"metadata": {"name": "x", "namespace": "evil",
                                                 "annotations": {"nginx.com/nginxaas": "nginxaas"}},
                                    "spec": {"type": "LoadBalancer", "ports": [{"name": "http-pods", "port": 80},
                                                                               {"name": "http-manual", "port": 81}]}})
    kube.patch_status(resources.SERVICE, "x", {"loadBalancer": {"ingress": [{"ip": "203.0.113.66"}]}}, "evil")

    sync(kube, plus, UpstreamRef("http", "manual"))
    assert plus.addresses("http", "pods") == ["10.244.1.5:8080"]  # evil's endpoint is not in shop's upstream
    assert plus.addresses("http", "manual") == ["10.9.9.9:80"]  # neither emptied nor taken over
    record = (kube.get(resources.CONFIGMAP, "nginx-edge-upstreams", "nlk") or {}).get("data") or {}
    assert [json.loads(v) for v in record.values()] == [
        {"host": plus.url, "upstream": "http:pods", "owner": "apps/pods"}]
    events = [(e["reason"], e["message"]) for e in kube.list(resources.EVENT, "evil")]
    assert [r for r, _ in events] == ["UpstreamClaimed"]
    assert "http:pods" in events[0][1] and "apps" not in events[0][1]  # names no other tenant's Service


def test_a_sync_from_a_state_older_than_the_slice_write_takes_the_slices_from_the_api_server(
        kube: Kube, plus: NginxPlusStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher enqueues the key on a slice write; the worker's informer may see the write later (a
    loaded machine, a large slice): the sync lists the Service's slices itself instead of syncing the
    servers of before the write."""
    configure(kube, plus)
    service(kube, "pods", "ClusterIP", [{"name": "http-pods", "port": 80}])
    endpoint_slice(kube, "pods", "pods-a", 8080, ["10.244.1.5"])
    assert sync(kube, plus)[str(PODS)] is ResultKind.SUCCESS
    lagging = controller.STATE_READS.get(kube, NAMES, time.monotonic())
    kube.patch(ENDPOINTSLICE, "pods-a", {"endpoints": [{"addresses": [ip], "conditions": {"ready": True}}
                                                       for ip in ("10.244.1.5", "10.244.1.6")]}, namespace="apps")
    monkeypatch.setattr(controller.STATE_READS, "get", lambda *_, **__: lagging)
    assert reconcile(key_for(plus.url, PODS), NAMES, kube).outcome is ResultKind.SUCCESS
    assert plus.addresses("http", "pods") == ["10.244.1.5:8080", "10.244.1.6:8080"]
