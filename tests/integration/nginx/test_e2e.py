"""NGINX edge end to end: dev API server -> watcher process -> Redis -> worker process -> 2 NGINX Plus hosts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes.client import ApiClient

from kube import Kube, resources
from standins.nginxplus import NginxPlusStandIn
from tests.fixtures.platform import Platform
from tests.fixtures.processes import wait_for
from tests.integration.nginx.test_reconcile import TCP, WEB, WEBS, addresses, configmap, node, service

pytestmark = pytest.mark.integration


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
    for ns in ("nkl", "nginx-ingress"):
        kube.create(resources.NAMESPACE, {"metadata": {"name": ns}})
    hosts = [plus_factory(), plus_factory()]
    configmap(kube, hosts[:1])
    node(kube, "cp", "10.0.0.10", control_plane=True)
    node(kube, "w1", "10.0.1.11")
    node(kube, "w2", "10.0.1.12")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432), ("metrics", 30913)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})
    plat = platform(domains="tasks.nginx.controller", controllers="nginx-upstream", workers=1, queues="nginx",
                    RECONCILERY_NGINX_RESYNC_SECONDS="3600")

    # create: the first host gets both upstreams, the control plane is left out
    converge(hosts[:1], WEB, ["10.0.1.11:30080", "10.0.1.12:30080"], plat)
    converge(hosts[:1], TCP, ["10.0.1.11:30432", "10.0.1.12:30432"], plat)

    # a host added to the ConfigMap receives the full state
    configmap(kube, hosts)
    converge(hosts, WEB, ["10.0.1.11:30080", "10.0.1.12:30080"], plat)
    converge(hosts, TCP, ["10.0.1.11:30432", "10.0.1.12:30432"], plat)

    # scale nodes: one joins, one changes its address, one leaves
    node(kube, "w3", "10.0.1.13")
    kube.patch_status(resources.NODE, "w2", {"addresses": [{"type": "InternalIP", "address": "10.0.1.22"}]})
    kube.delete(resources.NODE, "w1")
    converge(hosts, WEB, ["10.0.1.13:30080", "10.0.1.22:30080"], plat)

    # change ports and annotations: a new https port, the tcp port moves to http, the old http port goes
    service(kube, [("nkl-nginx-lb-https", 30443), ("nkl-nginx-lb-tcp", 30433)], {})
    converge(hosts, WEBS, ["10.0.1.13:30443", "10.0.1.22:30443"], plat)
    converge(hosts, WEB, [], plat)
    converge(hosts, TCP, [], plat)  # no longer a stream upstream

    # one host down, changes made meanwhile, then back: it converges
    hosts[1].stop()
    node(kube, "w4", "10.0.1.14")
    converge(hosts[:1], WEBS, ["10.0.1.13:30443", "10.0.1.14:30443", "10.0.1.22:30443"], plat)
    hosts[1].start()
    converge(hosts, WEBS, ["10.0.1.13:30443", "10.0.1.14:30443", "10.0.1.22:30443"], plat, timeout=40)

    # delete the Service: exactly its servers are removed from every host
    kube.delete(resources.SERVICE, "nginx-ingress", "nginx-ingress")
    converge(hosts, WEBS, [], plat)
