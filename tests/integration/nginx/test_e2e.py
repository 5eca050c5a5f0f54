"""NGINX edge end to end: dev API server -> watcher process -> Redis -> worker process -> 2 NGINX Plus hosts
(nkl mode) and an NGINXaaS stand-in requiring the API key (nlk mode, in the same processes), then the
ownership record after a restart (beat's resync empties an upstream whose Service went while nothing ran)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient

from kube import Kube, resources
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.plan import parse_owned
from tasks.nginx.reads import ENDPOINTSLICE
from tasks.nginx.translate import UpstreamRef
from tests.fixtures.platform import Platform
from tests.fixtures.processes import wait_for
from tests.integration.nginx.test_reconcile import TCP, WEB, WEBS, addresses, configmap, node, service

pytestmark = pytest.mark.integration

KEY = "e2e-nlk-key"
PODS, NP = UpstreamRef("http", "pods"), UpstreamRef("stream", "np")
#: deploy/components/nginx-nlk is what a cluster running the nlk mode deploys: test_rbac holds these
#: processes' calls to base with it
NLK_ENV = {"RECONCILERY_NGINX_MODES": "nkl,nlk", "NGINXAAS_DATAPLANE_API_KEY": KEY,
           "RECONCILERY_KUBE_AUDIT_COMPONENTS": "nginx-nlk"}


def nlk_service(kube: Kube, name: str, kind: str, ports: list[dict[str, Any]], annotated: bool) -> None:
    kube.create(resources.SERVICE, {"metadata": {"name": name, "namespace": "apps", "annotations": (
        {"nginx.com/nginxaas": "nginxaas"} if annotated else {})}, "spec": {"type": kind, "ports": ports}})


def annotate(kube: Kube, name: str, value: str | None) -> None:
    kube.patch(resources.SERVICE, name, {"metadata": {"annotations": {"nginx.com/nginxaas": value}}}, "apps")


def pod_slice(kube: Kube, name: str, endpoints: list[tuple[str, bool]]) -> None:
    """EndpointSlice ``apps/name`` of Service ``pods`` (port ``http-pods`` 8080), created or replaced."""
    body: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "apps", "labels": {"kubernetes.io/service-name": "pods"}},
        "addressType": "IPv4", "ports": [{"name": "http-pods", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": [ip], "conditions": {"ready": ready, "serving": ready}} for ip, ready in endpoints]}
    current = kube.get(ENDPOINTSLICE, name, "apps")
    if current is None:
        kube.create(ENDPOINTSLICE, body)
    else:
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        kube.replace(ENDPOINTSLICE, body)


def owned(kube: Kube) -> set[tuple[str, UpstreamRef]]:
    """The ownership record (namespace ``nkl``: both modes run)."""
    return parse_owned((kube.get(resources.CONFIGMAP, "nginx-edge-upstreams", "nkl") or {}).get("data"))


def converge(hosts: list[NginxPlusStandIn], ref: object, expected: list[str], plat: Platform,
             timeout: float = 20) -> None:
    try:
        wait_for(lambda: addresses(hosts, ref) == [expected] * len(hosts), timeout=timeout,  # type: ignore[arg-type]
                 message=f"{ref} == {expected} on every host")
    except TimeoutError:
        raise AssertionError(f"{addresses(hosts, ref)} != {expected}\n{plat.logs()}") from None  # type: ignore[arg-type]


def test_services_and_nodes_reach_every_host(kube_client: ApiClient, plus_factory: Callable[..., NginxPlusStandIn],
                                             platform: Callable[..., Platform]) -> None:
    kube = Kube(kube_client)
    for ns in ("nkl", "nginx-ingress", "nlk", "apps"):
        kube.create(resources.NAMESPACE, {"metadata": {"name": ns}})
    hosts = [plus_factory(), plus_factory()]
    aas = plus_factory(http_upstreams=["pods"], stream_upstreams=["np"], api_key=KEY)  # answers 401 without the key
    configmap(kube, hosts[:1])
    kube.create(resources.CONFIGMAP, {"metadata": {"name": "nlk-config", "namespace": "nlk"},
                                      "data": {"config.yaml": f"nginx-hosts:\n  - {aas.url}\ntls-mode: no-tls\n"}})
    node(kube, "cp", "10.0.0.10", control_plane=True)
    node(kube, "w1", "10.0.1.11")
    node(kube, "w2", "10.0.1.12")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432), ("metrics", 30913)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})
    # nlk: a ClusterIP Service not selected yet (no annotation) with its pods' slice; an annotated NodePort one
    nlk_service(kube, "pods", "ClusterIP", [{"name": "http-pods", "port": 80, "targetPort": 8080}], annotated=False)
    pod_slice(kube, "pods-a", [("10.244.1.5", True), ("10.244.1.6", True)])
    nlk_service(kube, "np", "NodePort", [{"name": "stream-np", "port": 5432, "nodePort": 30432}], annotated=True)
    plat = platform(domains="tasks.nginx.controller", controllers="nginx-upstream", workers=1, queues="nginx",
                    RECONCILERY_NGINX_RESYNC_SECONDS="3600", **NLK_ENV)

    # create: the first host gets both upstreams, the control plane is left out
    converge(hosts[:1], WEB, ["10.0.1.11:30080", "10.0.1.12:30080"], plat)
    converge(hosts[:1], TCP, ["10.0.1.11:30432", "10.0.1.12:30432"], plat)
    converge([aas], NP, ["10.0.1.11:30432", "10.0.1.12:30432"], plat)
    assert aas.addresses("http", "pods") == [] and owned(kube) >= {(aas.url, NP)}

    # a host added to the ConfigMap receives the full state; nlk: the annotation moves "pods" in
    configmap(kube, hosts)
    annotate(kube, "pods", "nginxaas")
    converge(hosts, WEB, ["10.0.1.11:30080", "10.0.1.12:30080"], plat)
    converge(hosts, TCP, ["10.0.1.11:30432", "10.0.1.12:30432"], plat)
    converge([aas], PODS, ["10.244.1.5:8080", "10.244.1.6:8080"], plat)

    # scale nodes: one joins, one changes its address, one leaves (the nlk NodePort upstream follows);
    # nlk slice churn: a second slice, the first loses a pod and gains one not ready yet
    node(kube, "w3", "10.0.1.13")
    kube.patch_status(resources.NODE, "w2", {"addresses": [{"type": "InternalIP", "address": "10.0.1.22"}]})
    kube.delete(resources.NODE, "w1")
    pod_slice(kube, "pods-b", [("10.244.2.7", True)])
    pod_slice(kube, "pods-a", [("10.244.1.5", True), ("10.244.1.8", False)])
    converge(hosts, WEB, ["10.0.1.13:30080", "10.0.1.22:30080"], plat)
    converge([aas], NP, ["10.0.1.13:30432", "10.0.1.22:30432"], plat)
    converge([aas], PODS, ["10.244.1.5:8080", "10.244.2.7:8080"], plat)

    # change ports and annotations: a new https port, the tcp port moves to http, the old http port goes;
    # nlk: the annotation removed moves "pods" out, its upstream is emptied
    service(kube, [("nkl-nginx-lb-https", 30443), ("nkl-nginx-lb-tcp", 30433)], {})
    annotate(kube, "pods", None)
    converge(hosts, WEBS, ["10.0.1.13:30443", "10.0.1.22:30443"], plat)
    converge(hosts, WEB, [], plat)
    converge(hosts, TCP, [], plat)  # no longer a stream upstream
    converge([aas], PODS, [], plat)

    # one host down, changes made meanwhile, then back: it converges; nlk: "pods" annotated again
    hosts[1].stop()
    node(kube, "w4", "10.0.1.14")
    annotate(kube, "pods", "nginxaas")
    converge(hosts[:1], WEBS, ["10.0.1.13:30443", "10.0.1.14:30443", "10.0.1.22:30443"], plat)
    hosts[1].start()
    converge(hosts, WEBS, ["10.0.1.13:30443", "10.0.1.14:30443", "10.0.1.22:30443"], plat, timeout=40)
    converge([aas], PODS, ["10.244.1.5:8080", "10.244.2.7:8080"], plat)

    # delete the Service: exactly its servers are removed from every host
    kube.delete(resources.SERVICE, "nginx-ingress", "nginx-ingress")
    converge(hosts, WEBS, [], plat)
    assert aas.rejected == 0  # every request to the NGINXaaS stand-in carried the key

    # ownership after a restart: every process stops, "pods" and its slices go while nothing watches, the
    # processes start again (beat with a 1 s resync): the resync, not an event, empties the upstream
    assert (aas.url, PODS) in owned(kube)
    plat.stop()
    kube.delete(resources.SERVICE, "pods", "apps")
    for name in ("pods-a", "pods-b"):
        kube.delete(ENDPOINTSLICE, name, "apps")
    again = platform(domains="tasks.nginx.controller", controllers="nginx-upstream", workers=1, queues="nginx",
                     beat=True, RECONCILERY_NGINX_RESYNC_SECONDS="1", **NLK_ENV)
    converge([aas], PODS, [], again)
    try:
        wait_for(lambda: (aas.url, PODS) not in owned(kube), timeout=10, message="the record drops (aas, http:pods)")
    except TimeoutError:
        raise AssertionError(f"{owned(kube)}\n{again.logs()}") from None
    assert (aas.url, NP) in owned(kube)  # still named by "np": kept, and its servers too
    assert aas.addresses("stream", "np") == ["10.0.1.13:30432", "10.0.1.14:30432", "10.0.1.22:30432"]
