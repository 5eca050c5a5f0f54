"""nlk mode watch mapping: annotated Services, EndpointSlices and Nodes -> (host, upstream) keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from informers.store import Stores
from tasks.nginx.settings import EdgeNames
from tasks.nginx.watches import (
    CONFIG,
    NLK_CONFIG,
    NLK_SERVICES,
    NLK_SLICES,
    NODES,
    SERVICES,
    map_nlk_config,
    map_nlk_service,
    map_node,
    map_slice,
    registrations,
)
from tests.unit.nginx.test_translate import node
from tests.unit.nginx.test_translate_nlk import READY, eps, svc
from tests.unit.nginx.test_watch_mapping import WEB, configmap, keys
from watchers.engine import WatchEvent

BOTH = EdgeNames(modes=("nkl", "nlk"))
N0, N1 = "http://127.0.0.1:9100/api", "http://127.0.0.1:9101/api"
H0, H1 = "http://127.0.0.1:9000/api", "http://127.0.0.1:9001/api"
NLK_CM = {"metadata": {"name": "nlk-config", "namespace": "nlk"},
          "data": {"config.yaml": f"nginx-hosts:\n  - {N0}\n  - {N1}\nservice-annotation-match: edge\n"}}

PODS = svc("pods", "ClusterIP", [{"name": "http-pods", "port": 80}], match="edge")
NODEPORT = svc("np", "NodePort", [{"name": "stream-np", "port": 5432, "nodePort": 30432}], match="edge")
LB = svc("lb", "LoadBalancer", [{"name": "http-lb", "port": 80}], match="edge", ingress=[{"ip": "192.0.2.1"}])
SLICE = eps("pods", "pods-abc", [("http-pods", 8080)], [(["10.244.0.1"], READY)])


def stores(*services: dict[str, Any], cm: dict[str, Any] | None = NLK_CM) -> Stores:
    s = Stores()
    s.add(SERVICES).replace([WEB])
    s.add(NODES).replace([])
    s.add(CONFIG).replace([configmap()])
    s.add(NLK_SERVICES).replace(list(services))
    s.add(NLK_SLICES).replace([])
    s.add(NLK_CONFIG).replace([cm] if cm else [])
    return s


def on(*upstreams: str) -> set[tuple[str, str]]:
    return {(h, u) for h in (N0, N1) for u in upstreams}


def test_registrations_follow_the_modes() -> None:
    import tasks.nginx.watches as watches

    original = watches.edge_names
    try:
        watches.edge_names = lambda: BOTH  # type: ignore[assignment]
        by_name = {r.name: r for r in registrations()}
        assert set(by_name) == {SERVICES, CONFIG, NODES, NLK_SERVICES, NLK_SLICES, NLK_CONFIG}
        assert by_name[NLK_SERVICES].namespace is None and by_name[NLK_SLICES].namespace is None
        assert by_name[NLK_SLICES].resource.group == "discovery.k8s.io"
        assert by_name[NLK_SLICES].label_selector == "kubernetes.io/service-name"
        assert by_name[NLK_CONFIG].field_selector == "metadata.name=nlk-config"
        watches.edge_names = lambda: EdgeNames(modes=("nlk",), nlk_config_file="/etc/x.yaml")  # type: ignore
        assert {r.name for r in registrations()} == {NODES, NLK_SERVICES, NLK_SLICES}
    finally:
        watches.edge_names = original  # type: ignore[assignment]


def test_annotation_added_moves_a_service_in_and_removed_moves_it_out() -> None:
    plain = svc("pods", "ClusterIP", [{"name": "http-pods", "port": 80}], match=None)
    added = WatchEvent("MODIFIED", PODS, plain, "local")
    assert keys(map_nlk_service(added, stores(PODS), BOTH)) == on("http:pods")
    removed = WatchEvent("MODIFIED", plain, PODS, "local")
    assert keys(map_nlk_service(removed, stores(plain), BOTH)) == on("http:pods")   # emptied by its reconcile
    other_value = svc("pods", "ClusterIP", [{"name": "http-pods", "port": 80}], match="nginxaas")
    assert list(map_nlk_service(WatchEvent("ADDED", other_value, None, "local"), stores(), BOTH)) == []


def test_a_deleted_or_renamed_port_service_syncs_old_and_new() -> None:
    renamed = svc("pods", "ClusterIP", [{"name": "http-pods-v2", "port": 80}], match="edge")
    assert keys(map_nlk_service(WatchEvent("MODIFIED", renamed, PODS, "local"), stores(renamed), BOTH)) == on(
        "http:pods", "http:pods-v2")
    assert keys(map_nlk_service(WatchEvent("DELETED", PODS, PODS, "local"), stores(), BOTH)) == on("http:pods")


def test_slice_added_changed_deleted_map_to_its_service_upstreams() -> None:
    s = stores(PODS, NODEPORT)
    assert keys(map_slice(WatchEvent("ADDED", SLICE, None, "local"), s, BOTH)) == on("http:pods")
    moved = eps("pods", "pods-abc", [("http-pods", 8080)], [(["10.244.0.2"], READY)])
    assert keys(map_slice(WatchEvent("MODIFIED", moved, SLICE, "local"), s, BOTH)) == on("http:pods")
    assert keys(map_slice(WatchEvent("DELETED", SLICE, SLICE, "local"), s, BOTH)) == on("http:pods")
    relabelled = {**SLICE, "metadata": {**SLICE["metadata"], "annotations": {"x": "y"}}}
    assert list(map_slice(WatchEvent("MODIFIED", relabelled, SLICE, "local"), s, BOTH)) == []


def test_slices_of_unselected_or_unknown_services_map_to_nothing() -> None:
    orphan = eps("nobody", "nobody-1", [("http-x", 80)], [(["10.0.0.1"], READY)])
    assert list(map_slice(WatchEvent("ADDED", orphan, None, "local"), stores(PODS), BOTH)) == []
    other_ns = eps("pods", "pods-1", [("http-pods", 80)], [(["10.0.0.1"], READY)], namespace="elsewhere")
    assert list(map_slice(WatchEvent("ADDED", other_ns, None, "local"), stores(PODS), BOTH)) == []


def test_node_join_syncs_nkl_upstreams_and_nlk_node_port_services_only() -> None:
    s = stores(PODS, NODEPORT, LB)
    expected = {(H0, "http:web"), (H1, "http:web")} | on("stream:np")
    assert keys(map_node(WatchEvent("ADDED", node("w9", "10.0.1.99"), None, "local"), s, BOTH)) == expected


def test_the_nlk_configmap_syncs_every_nlk_upstream_on_its_hosts() -> None:
    s = stores(PODS, NODEPORT, LB)
    assert keys(map_nlk_config(WatchEvent("MODIFIED", NLK_CM, None, "local"), s, BOTH)) == on(
        "http:pods", "stream:np", "http:lb")


def test_no_or_invalid_nlk_config_maps_to_nothing() -> None:
    assert list(map_nlk_service(WatchEvent("ADDED", PODS, None, "local"), stores(PODS, cm=None), BOTH)) == []
    bad = {"metadata": NLK_CM["metadata"], "data": {"tls-mode": "bogus", "nginx-hosts": N0}}
    assert list(map_nlk_service(WatchEvent("ADDED", PODS, None, "local"), stores(PODS, cm=bad), BOTH)) == []


def test_the_config_file_form_gives_the_hosts(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"nginx-hosts: {N0}\nservice-annotation-match: edge\n")
    names = EdgeNames(modes=("nlk",), nlk_config_file=str(path))
    assert keys(map_nlk_service(WatchEvent("ADDED", PODS, None, "local"), stores(PODS, cm=None), names)) == {
        (N0, "http:pods")}


def test_a_changed_annotation_match_also_syncs_the_services_that_leave() -> None:
    renamed = {"metadata": NLK_CM["metadata"],
               "data": {"config.yaml": NLK_CM["data"]["config.yaml"].replace("match: edge", "match: other")}}
    moved = svc("moved", "NodePort", [{"name": "http-moved", "port": 80, "nodePort": 30001}], match="other")
    s = stores(PODS, moved, cm=renamed)
    assert keys(map_nlk_config(WatchEvent("MODIFIED", renamed, NLK_CM, "local"), s, BOTH)) == on(
        "http:moved", "http:pods")
