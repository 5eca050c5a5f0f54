"""The nlk mode's translator (nginx/nginx-loadbalancer-kubernetes v1.2 ``internal/translation``, spec §3.2):
annotated Services of any namespace, ``http-``/``stream-`` ports, NodePort / LoadBalancer / ClusterIP."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.nginx.translate import (
    ServiceProblem,
    UpstreamRef,
    nlk_port_upstream,
    nlk_service_upstreams,
    slice_servers,
    translate_nlk,
)
from tests.unit.nginx.test_translate import node

MATCH = "nginxaas"
NODES = [node("cp", "10.0.0.10", labels={"node-role.kubernetes.io/master": ""}),
         node("w0", "10.0.1.11"), node("w1", "10.0.1.12")]


def svc(name: str, kind: str, ports: list[dict[str, Any]], namespace: str = "apps", match: str | None = MATCH,
        ingress: list[dict[str, str]] | None = None, **meta: Any) -> dict[str, Any]:
    annotations = {} if match is None else {"nginx.com/nginxaas": match}
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace, "annotations": annotations, **meta},
                            "spec": {"type": kind, "ports": ports}}
    if ingress is not None:
        body["status"] = {"loadBalancer": {"ingress": ingress}}
    return body


def eps(service: str, name: str, ports: list[tuple[str, int]], endpoints: list[tuple[list[str], dict[str, bool]]],
        namespace: str = "apps", address_type: str = "IPv4") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"kubernetes.io/service-name": service}},
            "addressType": address_type, "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
            "endpoints": [{"addresses": a, "conditions": c} for a, c in endpoints]}


READY = {"ready": True, "serving": True, "terminating": False}


def run(services: list[dict[str, Any]], slices: list[dict[str, Any]] = (),  # type: ignore[assignment]
        only: UpstreamRef | None = None) -> dict[str, list[str]]:
    translation, _ = translate_nlk(services, slices, NODES, MATCH, only)
    return {str(ref): servers for ref, servers in translation.upstreams.items()}


@pytest.mark.parametrize(("name", "expected"), [
    ("http-web", UpstreamRef("http", "web")),
    ("stream-db", UpstreamRef("stream", "db")),
    ("http-my-app-v2", UpstreamRef("http", "my-app-v2")),   # split at the first '-' only
    ("stream-a-b-c", UpstreamRef("stream", "a-b-c")),
    ("http-", None),                                        # the original accepted "" as an upstream
    ("http", None),                                         # no '-'
    ("tcp-web", None), ("grpc-web", None), ("HTTP-web", None), ("https-web", None),  # unknown contexts
    ("nkl-web", None), ("", None), ("-web", None),
])
def test_port_names(name: str, expected: UpstreamRef | None) -> None:
    assert nlk_port_upstream(name) == expected


@given(st.sampled_from(["http", "stream"]), st.text(alphabet="abc-_.0", min_size=1, max_size=20))
def test_any_name_after_the_context_is_the_upstream(context: str, rest: str) -> None:
    assert nlk_port_upstream(f"{context}-{rest}") == UpstreamRef(context, rest)


def test_node_port_uses_worker_internal_ips_and_the_node_port() -> None:
    service = svc("ing", "NodePort", [{"name": "http-web", "port": 80, "nodePort": 30080},
                                      {"name": "stream-db", "port": 5432, "nodePort": 30432},
                                      {"name": "metrics", "port": 9113, "nodePort": 30913}])
    assert run([service]) == {"http:web": ["10.0.1.11:30080", "10.0.1.12:30080"],
                              "stream:db": ["10.0.1.11:30432", "10.0.1.12:30432"]}


def test_load_balancer_uses_ingress_ips_and_the_service_port() -> None:
    service = svc("lb", "LoadBalancer", [{"name": "http-edge", "port": 8080, "nodePort": 31000}],
                  ingress=[{"ip": "192.0.2.10"}, {"ip": "2001:db8::10"}, {"hostname": "lb.example.com"}])
    translation, _ = translate_nlk([service], [], NODES, MATCH)
    assert translation.upstreams == {UpstreamRef("http", "edge"): ["192.0.2.10:8080", "[2001:db8::10]:8080"]}
    assert any("lb.example.com" in p and "no IP" in p for p in translation.problems)


def test_load_balancer_without_ingress_yet_has_no_servers() -> None:
    assert run([svc("lb", "LoadBalancer", [{"name": "http-edge", "port": 80}])]) == {"http:edge": []}


def test_cluster_ip_aggregates_every_slice_of_the_service() -> None:
    service = svc("web", "ClusterIP", [{"name": "http-web", "port": 80, "targetPort": 8080},
                                       {"name": "stream-grpc", "port": 9000}])
    slices = [
        eps("web", "web-a", [("http-web", 8080), ("stream-grpc", 9090)], [(["10.244.1.5"], READY),
                                                                          (["10.244.1.6"], READY)]),
        eps("web", "web-b", [("http-web", 8080)], [(["10.244.2.7"], READY), (["10.244.1.5"], READY)]),
        eps("web", "web-v6", [("http-web", 8080)], [(["fd00:10:244::7"], READY)], address_type="IPv6"),
        eps("other", "other-a", [("http-web", 8080)], [(["10.244.9.9"], READY)]),       # another Service
        eps("web", "web-x", [("http-web", 8080)], [(["10.244.8.8"], READY)], namespace="elsewhere"),
    ]
    assert run([service], slices) == {
        "http:web": ["10.244.1.5:8080", "10.244.1.6:8080", "10.244.2.7:8080", "[fd00:10:244::7]:8080"],
        "stream:grpc": ["10.244.1.5:9090", "10.244.1.6:9090"]}


def test_readiness_ready_first_then_serving_terminating_never_down() -> None:
    terminating_serving = {"ready": False, "serving": True, "terminating": True}
    not_ready = {"ready": False, "serving": False, "terminating": False}
    unset: dict[str, bool] = {}  # the API says nil means ready
    problems: list[str] = []
    both = [eps("web", "a", [("http-web", 80)], [(["10.0.0.1"], READY), (["10.0.0.2"], terminating_serving),
                                                 (["10.0.0.3"], not_ready), (["10.0.0.4"], unset)])]
    assert slice_servers(both, "http-web", problems, "apps/web") == ["10.0.0.1:80", "10.0.0.4:80"]
    # the last ready pod is gone and the replacement not ready yet: the terminating one keeps serving
    draining = [eps("web", "a", [("http-web", 80)], [(["10.0.0.2"], terminating_serving), (["10.0.0.3"], not_ready)])]
    assert slice_servers(draining, "http-web", problems, "apps/web") == ["10.0.0.2:80"]
    gone = [eps("web", "a", [("http-web", 80)], [(["10.0.0.2"], {"ready": False, "serving": False,
                                                                  "terminating": True})])]
    assert slice_servers(gone, "http-web", problems, "apps/web") == []


def test_fqdn_slices_are_skipped_with_a_problem() -> None:
    problems: list[str] = []
    slices = [eps("web", "a", [("http-web", 80)], [(["web.example.com"], READY)], address_type="FQDN")]
    assert slice_servers(slices, "http-web", problems, "apps/web") == []
    assert problems and "FQDN" in problems[0]


def test_selection_by_annotation_value_in_every_namespace() -> None:
    port = [{"name": "http-web", "port": 80, "nodePort": 30080}]
    services = [svc("a", "NodePort", port, namespace="team-a"),
                svc("b", "NodePort", [{"name": "http-web", "port": 80, "nodePort": 30081}], namespace="team-b"),
                svc("c", "NodePort", [{"name": "http-other", "port": 80, "nodePort": 30082}], match="something-else"),
                svc("d", "NodePort", [{"name": "http-none", "port": 80, "nodePort": 30083}], match=None),
                svc("e", "NodePort", [{"name": "http-gone", "port": 80, "nodePort": 30084}],
                    deletionTimestamp="2026-01-01T00:00:00Z")]
    # one owner per upstream: of two Services naming it, the first (here: by namespace and name) keeps it
    assert run(services) == {"http:web": ["10.0.1.11:30080", "10.0.1.12:30080"]}
    assert nlk_service_upstreams(services[2], MATCH) == set()
    assert nlk_service_upstreams(services[2], "something-else") == {UpstreamRef("http", "other")}


def test_external_name_is_a_service_problem_not_servers() -> None:
    service = svc("ext", "ExternalName", [{"name": "http-ext", "port": 80}])
    translation, problems = translate_nlk([service], [], NODES, MATCH)
    assert translation.upstreams == {UpstreamRef("http", "ext"): []}
    assert problems == [ServiceProblem("apps", "ext", "UnsupportedServiceType", problems[0].message)]
    assert "ExternalName" in problems[0].message and "http:ext" in problems[0].message
    assert nlk_service_upstreams(service, MATCH) == {UpstreamRef("http", "ext")}


def test_only_one_upstream_and_its_problems() -> None:
    services = [svc("ext", "ExternalName", [{"name": "http-ext", "port": 80}]),
                svc("ing", "NodePort", [{"name": "http-web", "port": 80, "nodePort": 30080}])]
    translation, problems = translate_nlk(services, [], NODES, MATCH, UpstreamRef("http", "web"))
    assert translation.upstreams == {UpstreamRef("http", "web"): ["10.0.1.11:30080", "10.0.1.12:30080"]}
    assert problems == []


def test_node_port_excludes_both_control_plane_labels_and_brackets_ipv6() -> None:
    nodes = [node("cp", "10.0.0.9", labels={"node-role.kubernetes.io/control-plane": ""}),
             node("w", "fd00::11")]
    translation, _ = translate_nlk([svc("ing", "NodePort", [{"name": "stream-db", "port": 1, "nodePort": 30001}])],
                                   [], nodes, MATCH)
    assert translation.upstreams == {UpstreamRef("stream", "db"): ["[fd00::11]:30001"]}


def test_an_upstream_takes_the_servers_of_one_service_the_first_to_name_it() -> None:
    """The original merged every Service naming an upstream: any namespace's Service could add its
    endpoints to any upstream (issue 27). Now the oldest claimant keeps it; another gets an Event."""
    shop = svc("web", "ClusterIP", [{"name": "http-shop", "port": 80}], namespace="shop",
               creationTimestamp="2026-01-01T00:00:00Z")
    evil = svc("x", "LoadBalancer", [{"name": "http-shop", "port": 80}, {"name": "http-evil", "port": 81}],
               namespace="evil", ingress=[{"ip": "203.0.113.9"}], creationTimestamp="2026-02-01T00:00:00Z")
    slices = [eps("web", "web-1", [("http-shop", 8080)], [(["10.244.0.1"], READY)], namespace="shop")]
    for services in ([shop, evil], [evil, shop]):
        translation, problems = translate_nlk(services, slices, NODES, MATCH)
        assert translation.upstreams == {UpstreamRef("http", "shop"): ["10.244.0.1:8080"],
                                         UpstreamRef("http", "evil"): ["203.0.113.9:81"]}
        assert translation.owners == {UpstreamRef("http", "shop"): "shop/web", UpstreamRef("http", "evil"): "evil/x"}
        assert [(p.namespace, p.name, p.reason) for p in problems] == [("evil", "x", "UpstreamClaimed")]
        assert "http:shop" in problems[0].message and "shop/web" not in problems[0].message
        assert any(p.startswith("Service evil/x: upstreams http:shop are served by another Service")
                   for p in translation.problems)


def test_the_recorded_owner_keeps_its_upstream_while_it_names_it() -> None:
    older = svc("old", "LoadBalancer", [{"name": "http-web", "port": 80}], ingress=[{"ip": "192.0.2.1"}],
                creationTimestamp="2025-01-01T00:00:00Z")
    kept = svc("kept", "LoadBalancer", [{"name": "http-web", "port": 80}], ingress=[{"ip": "192.0.2.2"}],
               creationTimestamp="2026-01-01T00:00:00Z")
    web = UpstreamRef("http", "web")
    translation, _ = translate_nlk([older, kept], [], NODES, MATCH, owners={web: "apps/kept"})
    assert translation.upstreams == {web: ["192.0.2.2:80"]} and translation.owners == {web: "apps/kept"}
    translation, _ = translate_nlk([older], [], NODES, MATCH, owners={web: "apps/kept"})  # the owner went
    assert translation.owners == {web: "apps/old"}


def test_only_the_allowed_namespaces_name_upstreams() -> None:
    services = [svc("a", "LoadBalancer", [{"name": "http-a", "port": 80}], namespace="team-a",
                    ingress=[{"ip": "192.0.2.1"}]),
                svc("b", "LoadBalancer", [{"name": "http-b", "port": 80}], namespace="team-b",
                    ingress=[{"ip": "192.0.2.2"}])]
    translation, problems = translate_nlk(services, [], NODES, MATCH, namespaces=frozenset({"team-a"}))
    assert translation.upstreams == {UpstreamRef("http", "a"): ["192.0.2.1:80"]}
    assert [(p.namespace, p.reason) for p in problems] == [("team-b", "NamespaceNotAllowed")]


_CONDITIONS = st.fixed_dictionaries({}, optional={"ready": st.booleans(), "serving": st.booleans(),
                                                  "terminating": st.booleans()})
_ENDPOINTS = st.lists(st.tuples(st.integers(1, 40).map(lambda i: f"10.244.0.{i}"), _CONDITIONS), max_size=30)


@given(_ENDPOINTS, st.randoms(use_true_random=False), st.integers(1, 4))
def test_slices_aggregate_the_same_however_endpoints_are_split_or_ordered(
        endpoints: list[tuple[str, dict[str, bool]]], rnd: Any, parts: int) -> None:
    """The EndpointSlice controller may pack endpoints into any number of slices in any order."""
    one = [eps("web", "one", [("http-web", 8080)], [([ip], c) for ip, c in endpoints])]
    shuffled = list(endpoints)
    rnd.shuffle(shuffled)
    split = [eps("web", f"part-{p}", [("http-web", 8080)], [([ip], c) for ip, c in shuffled[p::parts]])
             for p in range(parts)]
    problems: list[str] = []
    together = slice_servers(one, "http-web", problems, "apps/web")
    assert slice_servers(split, "http-web", problems, "apps/web") == together
    ready = {f"{ip}:8080" for ip, c in endpoints if c.get("ready", True) and not c.get("terminating", False)}
    # the ready endpoints when there are any; else only terminating ones that still serve
    if ready:
        assert set(together) == ready
    else:
        assert all(any(i == s.rsplit(":", 1)[0] and c.get("terminating") and c.get("serving", c.get("ready", True))
                       for i, c in endpoints) for s in together)
