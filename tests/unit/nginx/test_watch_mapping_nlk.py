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
    NlkFilePoll,
    map_nlk_config,
    map_nlk_file,
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
        assert all(r.poll is None for r in by_name.values())
        watches.edge_names = lambda: EdgeNames(modes=("nlk",), nlk_config_file="/etc/x.yaml")  # type: ignore
        by_name = {r.name: r for r in registrations()}
        assert set(by_name) == {NODES, NLK_SERVICES, NLK_SLICES}
        # no ConfigMap watch for the file form: the Services registration polls the file instead
        poll = by_name[NLK_SERVICES].poll
        assert poll is not None and isinstance(poll.check, NlkFilePoll) and poll.check.path == "/etc/x.yaml"
        assert poll.seconds == watches.NLK_FILE_POLL_SECONDS
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


def test_node_join_syncs_the_nkl_hosts_and_the_nlk_hosts_of_node_port_services() -> None:
    s = stores(PODS, NODEPORT, LB)
    joined = WatchEvent("ADDED", node("w9", "10.0.1.99"), None, "local")
    assert keys(map_node(joined, s, BOTH)) == {(h, f"*{i}/8") for h in (H0, H1, N0, N1) for i in range(8)}
    # no NodePort Service among the nlk ones: a Node changes none of their upstreams
    assert keys(map_node(joined, stores(PODS, LB), BOTH)) == {(h, f"*{i}/8") for h in (H0, H1) for i in range(8)}


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


# --- the file form: a changed file maps as a changed ConfigMap does (audit item 3) ----------------------------

FILE = NLK_CM["data"]["config.yaml"]


def test_a_changed_file_maps_like_the_configmap() -> None:
    s = stores(PODS, NODEPORT, LB, cm=None)
    grown = FILE.replace(f"  - {N1}\n", f"  - {N1}\n  - http://127.0.0.1:9102/api\n")
    assert keys(map_nlk_file(FILE, grown, s)) == on("http:pods", "stream:np", "http:lb") | {
        ("http://127.0.0.1:9102/api", u) for u in ("http:pods", "stream:np", "http:lb")}
    # the same mapping as the ConfigMap form for the same content
    as_configmap = {"metadata": NLK_CM["metadata"], "data": {"config.yaml": grown}}
    assert keys(map_nlk_file(FILE, grown, s)) == keys(map_nlk_config(
        WatchEvent("MODIFIED", as_configmap, NLK_CM, "local"), stores(PODS, NODEPORT, LB, cm=as_configmap), BOTH))
    # a file that appears (was missing or unreadable) maps too
    assert keys(map_nlk_file(None, FILE, s)) == on("http:pods", "stream:np", "http:lb")


def test_a_changed_match_in_the_file_also_syncs_the_services_that_leave() -> None:
    moved = svc("moved", "NodePort", [{"name": "http-moved", "port": 80, "nodePort": 30001}], match="other")
    renamed = FILE.replace("match: edge", "match: other")
    assert keys(map_nlk_file(FILE, renamed, stores(PODS, moved, cm=None))) == on("http:moved", "http:pods")
    # an unparsable previous content: only the current selection
    assert keys(map_nlk_file("nginx-hosts: [", renamed, stores(PODS, moved, cm=None))) == on("http:moved")


def test_an_unchanged_missing_or_invalid_file_maps_to_nothing() -> None:
    s = stores(PODS, NODEPORT, cm=None)
    assert map_nlk_file(FILE, FILE, s) == []
    assert map_nlk_file(FILE, None, s) == []  # gone: the reconciles report it; its return maps
    assert map_nlk_file(FILE, FILE + "tls-mode: bogus\n", s) == []
    assert map_nlk_file(None, None, s) == []


def test_the_poll_remembers_the_content_read_when_built(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(FILE)
    poll = NlkFilePoll(str(path))
    s = stores(PODS, cm=None)
    assert poll(s) == []  # the initial list enqueued everything with this content
    path.write_text(FILE.replace(f"  - {N1}\n", ""))
    assert keys(poll(s)) == {(N0, "http:pods")}
    assert poll(s) == []  # seen once
    path.unlink()
    assert poll(s) == []
    path.write_text(FILE)  # back, with both hosts again
    assert keys(poll(s)) == on("http:pods")
    # a change made between building the poll (before the watches list) and its first check is not lost
    late = NlkFilePoll(str(path))
    path.write_text(FILE.replace("match: edge", "match: other"))
    assert keys(late(stores(PODS, cm=None))) == on("http:pods")
