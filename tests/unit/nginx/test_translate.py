"""Translator: Service ports + Nodes -> upstream servers, as the seed's Translator (with its bugs fixed)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.nginx.settings import EdgeNames
from tasks.nginx.translate import (
    UpstreamRef,
    is_control_plane,
    node_addresses,
    node_ips,
    server_address,
    service_upstreams,
    services_by_port_name,
    translate,
)

NAMES = EdgeNames()


def node(name: str, ip: str | None, *, labels: dict[str, str] | None = None, extra: list | None = None
         ) -> dict[str, Any]:
    addresses = [{"type": "Hostname", "address": name}, *(extra or [])]
    if ip:
        addresses.append({"type": "InternalIP", "address": ip})
    return {"metadata": {"name": name, "labels": labels or {}}, "status": {"addresses": addresses}}


def service(name: str, ports: list[tuple[str, int | None]], annotations: dict[str, str] | None = None,
            namespace: str = "nginx-ingress", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}, **meta},
        "spec": {"type": "NodePort", "ports": [
            {"name": n, "port": 80, **({"nodePort": p} if p is not None else {})} for n, p in ports]},
    }


WORKERS = [node("w0", "10.0.1.11"), node("w1", "10.0.1.12")]


@pytest.mark.parametrize(("nodes", "ips"), [
    (WORKERS, ["10.0.1.11", "10.0.1.12"]),
    ([*WORKERS, node("cp", "10.0.0.10", labels={"node-role.kubernetes.io/control-plane": ""})],
     ["10.0.1.11", "10.0.1.12"]),
    ([*WORKERS, node("m", "10.0.0.9", labels={"node-role.kubernetes.io/master": ""})], ["10.0.1.11", "10.0.1.12"]),
    ([node("x", None, extra=[{"type": "ExternalIP", "address": "203.0.113.1"}])], []),
    ([node("w0", "10.0.1.11", extra=[{"type": "ExternalIP", "address": "203.0.113.1"}])], ["10.0.1.11"]),
    ([node("b", "10.0.1.2"), node("a", "10.0.1.10"), node("c", "10.0.1.2")], ["10.0.1.10", "10.0.1.2"]),
    # every InternalIP of a node counts (spec §2.1), not only its first: sorted, unique
    ([node("w0", "10.0.1.11", extra=[{"type": "InternalIP", "address": "10.0.2.11"}])], ["10.0.1.11", "10.0.2.11"]),
    ([node("w0", "10.0.2.11", extra=[{"type": "InternalIP", "address": "10.0.1.11"}]),
      node("w1", "10.0.1.11")], ["10.0.1.11", "10.0.2.11"]),
    ([node("w0", "10.0.1.11", extra=[{"type": "InternalIP", "address": "fd00::11"}])], ["10.0.1.11", "fd00::11"]),
    ([node("cp", "10.0.0.10", labels={"node-role.kubernetes.io/control-plane": ""},
           extra=[{"type": "InternalIP", "address": "10.0.0.11"}])], []),
])
def test_node_ips_are_internal_ips_of_workers(nodes: list[dict[str, Any]], ips: list[str]) -> None:
    assert node_ips(nodes) == ips


def test_node_addresses_keep_api_order() -> None:
    n = node("w0", None, extra=[{"type": "InternalIP", "address": "10.0.2.1"},
                                {"type": "ExternalIP", "address": "203.0.113.1"},
                                {"type": "InternalIP", "address": "10.0.1.1"}])
    assert node_addresses(n) == ["10.0.2.1", "10.0.1.1"]
    assert node_addresses({"metadata": {"name": "x"}}) == []


def test_a_node_with_two_internal_ips_gives_two_servers_per_port() -> None:
    dual = node("w0", "10.0.1.11", extra=[{"type": "InternalIP", "address": "fd00::11"}])
    result = translate([service("s", [("nkl-web", 30001)])], [dual, node("w1", "10.0.1.12")], NAMES)
    # sorted, so the order of nodes and addresses never changes the desired list
    assert result.upstreams == {UpstreamRef("http", "web"): ["10.0.1.11:30001", "10.0.1.12:30001",
                                                              "[fd00::11]:30001"]}


def test_control_plane_labels() -> None:
    assert is_control_plane(node("a", "1.1.1.1", labels={"node-role.kubernetes.io/control-plane": "true"}))
    assert not is_control_plane(node("a", "1.1.1.1", labels={"node-role.kubernetes.io/worker": ""}))


@pytest.mark.parametrize(("ip", "port", "address"), [
    ("10.0.0.1", 30080, "10.0.0.1:30080"),
    ("fd00::1", 30080, "[fd00::1]:30080"),  # the original produced fd00::1:30080
])
def test_server_address(ip: str, port: int, address: str) -> None:
    assert server_address(ip, port) == address


SEED = service("nginx-ingress", [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-https", 30443)])


@pytest.mark.parametrize(("services", "expected"), [
    # the seed's example: two prefixed ports name two http upstreams
    ([SEED], {UpstreamRef("http", "nginx-lb-http"): ["10.0.1.11:30080", "10.0.1.12:30080"],
              UpstreamRef("http", "nginx-lb-https"): ["10.0.1.11:30443", "10.0.1.12:30443"]}),
    # ports without the prefix are ignored
    ([service("s", [("http", 30001), ("metrics", 30002)])], {}),
    # the annotation on the full port name makes a stream upstream
    ([service("s", [("nkl-db", 30432)], {"nginxinc.io/nkl-db": "stream"})],
     {UpstreamRef("stream", "db"): ["10.0.1.11:30432", "10.0.1.12:30432"]}),
    ([service("s", [("nkl-web", 30001)], {"nginxinc.io/nkl-web": "http"})],
     {UpstreamRef("http", "web"): ["10.0.1.11:30001", "10.0.1.12:30001"]}),
    # an annotation naming the upstream (not the port) does not count
    ([service("s", [("nkl-db", 30432)], {"nginxinc.io/db": "stream"})],
     {UpstreamRef("http", "db"): ["10.0.1.11:30432", "10.0.1.12:30432"]}),
    # Services of other namespaces, or being deleted, are not synced
    ([service("s", [("nkl-web", 30001)], namespace="default")], {}),
    ([service("s", [("nkl-web", 30001)], deletionTimestamp="2024-01-01T00:00:00Z")], {}),
    # two Services naming one upstream: the union
    ([service("a", [("nkl-web", 30001)]), service("b", [("nkl-web", 30002)])],
     {UpstreamRef("http", "web"): ["10.0.1.11:30001", "10.0.1.11:30002", "10.0.1.12:30001", "10.0.1.12:30002"]}),
    # a prefixed port without nodePort names the upstream but gives no servers
    ([service("s", [("nkl-web", None)])], {UpstreamRef("http", "web"): []}),
])
def test_translate(services: list[dict[str, Any]], expected: dict[UpstreamRef, list[str]]) -> None:
    assert translate(services, WORKERS, NAMES).upstreams == expected


def test_no_nodes_means_empty_upstreams() -> None:
    assert translate([SEED], [], NAMES).upstreams == {UpstreamRef("http", "nginx-lb-http"): [],
                                                     UpstreamRef("http", "nginx-lb-https"): []}


@pytest.mark.parametrize(("svc", "problem"), [
    (service("s", [("nkl-", 30001)]), "names no upstream"),
    (service("s", [("nkl-db", 30001)], {"nginxinc.io/nkl-db": "tcp"}), "neither http nor stream; using http"),
    (service("s", [("nkl-web", None)]), "has no nodePort"),
])
def test_problems_are_reported(svc: dict[str, Any], problem: str) -> None:
    result = translate([svc], WORKERS, NAMES)
    assert any(problem in p for p in result.problems), result.problems


def test_configurable_prefix() -> None:
    names = EdgeNames(port_prefix="nlk-", watched_namespace="edge")
    svc = service("s", [("nlk-web", 30001), ("nkl-old", 30002)], namespace="edge")
    assert translate([svc], WORKERS, names).upstreams == {UpstreamRef("http", "web"): ["10.0.1.11:30001",
                                                                                       "10.0.1.12:30001"]}


def test_service_upstreams_for_event_mapping() -> None:
    assert service_upstreams(SEED, NAMES) == {UpstreamRef("http", "nginx-lb-http"),
                                              UpstreamRef("http", "nginx-lb-https")}
    assert service_upstreams(None, NAMES) == set()


@pytest.mark.parametrize("raw", ["http:web", "stream:db", "http:a:b"])
def test_upstream_ref_round_trip(raw: str) -> None:
    assert str(UpstreamRef.parse(raw)) == raw


@pytest.mark.parametrize("raw", ["web", "tcp:web", "http:"])
def test_upstream_ref_rejects(raw: str) -> None:
    with pytest.raises(ValueError, match="expected http:UPSTREAM"):
        UpstreamRef.parse(raw)


def test_a_load_balancer_service_in_the_nkl_mode_uses_its_node_ports_not_its_ingress() -> None:
    """The nkl era (the seed's Translator) never reads the Service type: a LoadBalancer Service has
    nodePorts too, and the edge sends the workers' InternalIPs with them, ignoring the ingress IPs (the
    nlk mode is the one that uses ``status.loadBalancer.ingress``; test_translate_nlk.py)."""
    lb = service("lb", [("nkl-web", 31080), ("nkl-db", 31432)], {"nginxinc.io/nkl-db": "stream"})
    lb["spec"]["type"] = "LoadBalancer"
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}}
    result = translate([lb], WORKERS, NAMES)
    assert result.upstreams == {UpstreamRef("http", "web"): ["10.0.1.11:31080", "10.0.1.12:31080"],
                                UpstreamRef("stream", "db"): ["10.0.1.11:31432", "10.0.1.12:31432"]}
    assert result.problems == []
    # before the cloud allocates the nodePorts, the upstream is named but has no servers (not the ingress)
    del lb["spec"]["ports"][0]["nodePort"]
    assert translate([lb], WORKERS, NAMES).upstreams[UpstreamRef("http", "web")] == []


def test_translating_one_upstream_from_the_services_indexed_by_its_name_equals_translating_from_all() -> None:
    """A Node change syncs every upstream from one state: the per-name index gives each upstream's
    translation the Services that name it, and nothing else may change (servers nor problems)."""
    services = [
        service("a", [("nkl-web", 30080), ("nkl-db", 30500), ("other", 1)]),
        service("b", [("nkl-web", 30081)]),  # two Services naming one upstream: the union
        service("c", [("nkl-db", 30501)], annotations={"nginxinc.io/nkl-db": "stream"}),
        service("d", [("nkl-db", 30502)], annotations={"nginxinc.io/nkl-db": "grpc"}),  # a problem, as http
        service("e", [("nkl-web", None)]),  # no nodePort: a problem
        service("f", [("nkl-web", 30090)], namespace="elsewhere"),
        service("g", [("nkl-web", 30091)], deletionTimestamp="2026-01-01T00:00:00Z"),
        service("h", [("nkl-", 30092), ("nkl-web", 30093), ("nkl-web", 30094)]),
    ]
    index = services_by_port_name(services, NAMES.port_prefix)
    assert [s["metadata"]["name"] for s in index["web"]] == ["a", "b", "e", "f", "g", "h"]
    assert "" in index and "other" not in index
    for only in (UpstreamRef("http", "web"), UpstreamRef("http", "db"), UpstreamRef("stream", "db"),
                 UpstreamRef("http", "none")):
        assert translate(index.get(only.name, []), WORKERS, NAMES, only) == translate(services, WORKERS, NAMES, only)
