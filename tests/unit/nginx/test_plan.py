"""The plan over both modes: per-host union, which hosts get the API key, the ownership record's keys."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tasks.nginx.plan import (
    ClusterState,
    ServiceIndexes,
    Translations,
    parse_config,
    parse_owned,
    parse_owners,
    plan_host,
    plan_upstream,
    record_key,
    record_value,
    recorded_owner,
)
from tasks.nginx.settings import EdgeNames
from tasks.nginx.translate import UpstreamRef
from tests.unit.nginx.test_translate import node, service
from tests.unit.nginx.test_translate_nlk import READY, eps, svc

BOTH = EdgeNames(modes=("nkl", "nlk"))
SHARED, NKL_ONLY, NLK_ONLY = "http://10.0.0.1:9000/api", "http://10.0.0.2:9000/api", "http://10.0.0.3:9000/api"
WEB = UpstreamRef("http", "web")


def state() -> ClusterState:
    return ClusterState(
        config={"nginx-hosts": f"{SHARED},{NKL_ONLY}"},
        services=[service("ing", [("nkl-web", 30080)])],
        nodes=[node("w0", "10.0.1.11")],
        nlk_config={"nginx-hosts": [SHARED, NLK_ONLY], "tls-mode": "no-tls"},
        nlk_services=[svc("pods", "ClusterIP", [{"name": "http-web", "port": 80}],
                          creationTimestamp="2025-01-01T00:00:00Z"),
                      svc("ext", "ExternalName", [{"name": "http-web", "port": 80}],
                          creationTimestamp="2026-01-01T00:00:00Z")],
        slices=[eps("pods", "pods-1", [("http-web", 8080)], [(["10.244.0.5"], READY)])])


def test_a_host_of_both_modes_holds_the_union() -> None:
    s = state()
    config = parse_config(s, BOTH)
    assert config.hosts == [SHARED, NKL_ONLY, NLK_ONLY]
    assert plan_upstream(s, config, BOTH, SHARED, WEB).desired == ["10.0.1.11:30080", "10.244.0.5:8080"]
    nkl = plan_upstream(s, config, BOTH, NKL_ONLY, WEB)
    assert nkl.desired == ["10.0.1.11:30080"] and nkl.service_problems == []
    nlk = plan_upstream(s, config, BOTH, NLK_ONLY, WEB)
    assert nlk.desired == ["10.244.0.5:8080"] and nlk.owner == "apps/pods"
    assert [(p.name, p.reason) for p in nlk.service_problems] == [("ext", "UpstreamClaimed")]
    assert not plan_upstream(s, config, BOTH, NLK_ONLY, UpstreamRef("http", "gone")).named


def test_a_host_plan_is_every_upstream_plan_from_one_translation() -> None:
    s = ClusterState(**{**state().__dict__, "services": [
        service("ing", [("nkl-web", 30080), ("nkl-api", 30081)]), service("other", [("nkl-db", 30090)],
                                                                          {"nginxinc.io/nkl-db": "stream"})]})
    config = parse_config(s, BOTH)
    gone = UpstreamRef("http", "gone")
    for host in (SHARED, NKL_ONLY, NLK_ONLY):
        plan = plan_host(s, config, BOTH, host, also=[gone])
        for ref, upstream in plan.upstreams.items():
            alone = plan_upstream(s, config, BOTH, host, ref)
            assert (upstream.desired, upstream.named, upstream.owner, upstream.adopts) == (
                alone.desired, alone.named, alone.owner, alone.adopts), (host, ref)
        assert gone in plan.upstreams and not plan.upstreams[gone].named  # recorded, named by none: emptied
    assert set(plan_host(s, config, BOTH, NKL_ONLY).upstreams) == {
        UpstreamRef("http", "web"), UpstreamRef("http", "api"), UpstreamRef("stream", "db")}
    assert set(plan_host(s, config, BOTH, NLK_ONLY).upstreams) == {WEB}
    assert [p.reason for p in plan_host(s, config, BOTH, NLK_ONLY).service_problems] == ["UpstreamClaimed"]
    assert plan_host(s, config, BOTH, "http://elsewhere/api").upstreams == {}


def test_only_nlk_hosts_get_the_api_key_and_tls_comes_from_the_first_mode() -> None:
    config = parse_config(state(), BOTH)
    assert [config.api_key_for(h) for h in (SHARED, NKL_ONLY, NLK_ONLY)] == [True, False, True]
    assert config.settings_for(SHARED) is config.nkl and config.settings_for(NLK_ONLY) is config.nlk
    assert config.settings_for("http://elsewhere/api") is None


def test_modes_not_running_are_not_read() -> None:
    config = parse_config(state(), EdgeNames())
    assert config.nlk is None and config.hosts == [SHARED, NKL_ONLY]


@given(st.text(min_size=1, max_size=300), st.sampled_from(["http", "stream"]),
       st.text(min_size=1, max_size=300).filter(lambda n: ":" not in n))
def test_record_keys_are_valid_configmap_keys_and_round_trip(host: str, protocol: str, name: str) -> None:
    ref = UpstreamRef(protocol, name)
    key = record_key(host, ref)
    assert len(key) <= 253 and all(c.isascii() and (c.isalnum() or c in "-._") for c in key)
    assert parse_owned({key: record_value(host, ref)}) == {(host, ref)}


def test_hand_edited_records_are_skipped() -> None:
    good = record_key(SHARED, WEB)
    assert parse_owned({good: record_value(SHARED, WEB), "junk": "{", "moved": record_value(NLK_ONLY, WEB)}) == {
        (SHARED, WEB)}


def test_the_record_keeps_each_upstreams_owner() -> None:
    data = {record_key(SHARED, WEB): record_value(SHARED, WEB, "apps/pods"),
            record_key(NKL_ONLY, WEB): record_value(NKL_ONLY, WEB),
            record_key(SHARED, UpstreamRef("stream", "db")): record_value(SHARED, UpstreamRef("stream", "db"))}
    assert recorded_owner(data, SHARED, WEB) == "apps/pods" and recorded_owner(data, NKL_ONLY, WEB) == ""
    assert recorded_owner(data, NLK_ONLY, WEB) is None and recorded_owner({"x": "not json"}, SHARED, WEB) is None
    assert parse_owners(data) == {WEB: "apps/pods"}
    assert parse_owned(data) == {(SHARED, WEB), (NKL_ONLY, WEB), (SHARED, UpstreamRef("stream", "db"))}
    owned = ClusterState(**{**state().__dict__, "owners": {WEB: "apps/ext"}})
    config = parse_config(owned, BOTH)  # the recorded owner keeps the upstream while it names it
    assert plan_upstream(owned, config, BOTH, NLK_ONLY, WEB).owner == "apps/ext"


def test_the_service_index_is_built_once_per_set_of_service_objects_and_bounded() -> None:
    services = [{"metadata": {"name": f"s{i}", "namespace": "nginx-ingress"},
                 "spec": {"ports": [{"name": f"nkl-u{i % 3}", "nodePort": 30000 + i}]}} for i in range(9)]
    indexes = ServiceIndexes(size=2)
    first = indexes.index(services, "nkl-")
    assert [s["metadata"]["name"] for s in first["u1"]] == ["s1", "s4", "s7"]
    assert indexes.index(list(services), "nkl-") is first and indexes.built == 1  # same objects, new list
    changed = [*services[:8], {**services[8], "spec": {"ports": [{"name": "nkl-u0", "nodePort": 1}]}}]
    assert [s["metadata"]["name"] for s in indexes.index(changed, "nkl-")["u0"]] == ["s0", "s3", "s6", "s8"]
    indexes.index(services, "other-")
    assert indexes.built == 3 and len(indexes._kept) == 2
    assert indexes.index(services, "nkl-") is not first and indexes.built == 4  # the oldest was dropped


def test_a_translation_is_kept_while_the_objects_are_the_same_ones() -> None:
    s = state()
    config = parse_config(s, BOTH)
    kept = Translations()
    first = kept.get(s, config, BOTH)
    assert kept.get(ClusterState(**{**s.__dict__, "services": list(s.services)}), config, BOTH) is first
    assert kept.built == 1  # a new list of the same (informer) objects: the same translation
    joined = ClusterState(**{**s.__dict__, "nodes": [*s.nodes, node("w1", "10.0.1.12")]})
    assert kept.get(joined, config, BOTH)[0].upstreams[WEB] == ["10.0.1.11:30080", "10.0.1.12:30080"]
    claimed = ClusterState(**{**s.__dict__, "owners": {WEB: "apps/ext"}})  # recorded owners are compared
    assert kept.get(claimed, config, BOTH) is not first and kept.built == 3


def test_a_shard_plans_only_its_upstreams() -> None:
    s = ClusterState(**{**state().__dict__, "services": [service("ing", [("nkl-web", 30080), ("nkl-api", 30081)])]})
    config = parse_config(s, BOTH)
    plan = plan_host(s, config, BOTH, NKL_ONLY, select=lambda ref: ref.name == "api")
    assert list(plan.upstreams) == [UpstreamRef("http", "api")]
