"""The bounds of the Redis configuration maps (:mod:`tasks.cloud.redisconfigs`): the checks themselves, their
conditions through the SKR Redis cluster and instance plans, the CRDs' matching ``maxProperties`` /
``maxLength``, and a property: any input validates or yields a message, never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.cloud import install
from tasks.cloud.redisconfigs import (
    GCP_CLUSTER_KEYS,
    MAX_ENTRIES,
    MAX_VALUE,
    REASON_INVALID_REDIS_CONFIGS,
    cluster_configs_invalid,
    configs_invalid,
    instance_configs_invalid,
)
from tasks.cloud.skr import redisinstance_plan
from tests.unit.cloud import test_skr_rediscluster_plan as clusters
from tests.unit.cloud import test_skr_redisinstance_plan as instances


def test_valid_maps_pass() -> None:
    assert cluster_configs_invalid("gcp", {"redisConfigs": {"maxmemory-policy": "allkeys-lru",
                                                            "notify-keyspace-events": "KEA"}}) is None
    assert cluster_configs_invalid("aws", {"parameters": {"activedefrag": "yes", "maxmemory-policy": "allkeys-lru"}}) \
        is None
    assert cluster_configs_invalid("azure", {"redisConfiguration": {"maxclients": "100"}}) is None
    assert instance_configs_invalid("gcp", {"redisConfigs": {"activedefrag": "yes", "lfu-decay-time": "2"}}) is None
    for provider in ("aws", "azure", "gcp"):  # none, empty, another provider
        assert cluster_configs_invalid(provider, {}) is None
        assert instance_configs_invalid(provider, {"redisConfigs": {}, "parameters": {}}) is None
    assert cluster_configs_invalid("openstack", {"redisConfigs": {"X": 1}}) is None
    assert configs_invalid("redisConfigs", {f"k{i}": "v" for i in range(MAX_ENTRIES)}) is None


@pytest.mark.parametrize(("provider", "spec", "words"), [
    ("gcp", {"redisConfigs": {"activedefrag": "yes"}},
     "redisConfigs key 'activedefrag' is not supported by Memorystore for Redis Cluster; supported: maxclients, "
     "maxmemory, maxmemory-clients, maxmemory-policy, notify-keyspace-events, slowlog-log-slower-than"),
    ("azure", {"redisConfiguration": {"databases": "4"}}, "redisConfiguration key 'databases' is not supported by "
     "Azure Cache for Redis; supported: maxclients, maxfragmentationmemory-reserved, maxmemory-delta, "
     "maxmemory-policy, maxmemory-reserved, notify-keyspace-events"),
    ("aws", {"parameters": {f"p{i}": "1" for i in range(MAX_ENTRIES + 1)}},
     f"parameters has {MAX_ENTRIES + 1} entries, at most {MAX_ENTRIES} are allowed"),
    ("aws", {"parameters": {"x" * 65: "1"}}, "parameters key 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is "
                                             "longer than 64 characters"),
    ("aws", {"parameters": {"Max Memory": "1"}}, "parameters key 'Max Memory' must be lower case letters, digits "
                                                 "and '-'"),
    ("aws", {"parameters": {"maxmemory-policy": "x" * (MAX_VALUE + 1)}},
     f"parameters[maxmemory-policy] is longer than {MAX_VALUE} characters"),
    ("gcp", {"redisConfigs": {"maxclients": 100}}, "redisConfigs[maxclients] must be a string"),
    ("gcp", {"redisConfigs": ["maxclients"]}, "redisConfigs must be an object of strings"),
    ("aws", {"parameters": {"": "1"}}, "parameters keys must be non-empty strings"),
])
def test_beyond_the_bounds_is_a_clear_message(provider: str, spec: dict[str, Any], words: str) -> None:
    assert cluster_configs_invalid(provider, spec) == words


def test_the_instance_takes_other_memorystore_keys_but_the_same_bounds() -> None:
    assert instance_configs_invalid("gcp", {"redisConfigs": {"activedefrag": "yes"}}) is None
    assert instance_configs_invalid("gcp", {"redisConfigs": {"Bad_Key": "1"}}) is not None
    assert instance_configs_invalid("azure", {"redisConfiguration": {"databases": "4"}}) is not None


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_the_cluster_plan_refuses_before_anything_is_made(provider: str) -> None:
    field = {"aws": "parameters", "azure": "redisConfiguration", "gcp": "redisConfigs"}[provider]
    obj = clusters.skr(provider, spec={**clusters.SPECS[provider], field: {"Not A Key": "1"}}, finalizer=False)
    out = clusters.plan(clusters.seen(obj, provider))
    status = clusters.st(out)
    assert status["state"] == "Error" and out.create is None and out.label_id is None
    ready = [c for c in status["conditions"] if c["type"] == "Ready"] or status["conditions"]
    assert any(c["reason"] == REASON_INVALID_REDIS_CONFIGS and "'Not A Key'" in c["message"]
               for c in status["conditions"]), ready
    # a valid map goes on to the mirror, with the map in it
    good = {"aws": {"maxmemory-policy": "allkeys-lru"}, "azure": {"maxclients": "10"},
            "gcp": {"maxmemory-policy": "allkeys-lru"}}[provider]
    obj = clusters.skr(provider, spec={**clusters.SPECS[provider], field: good}, finalizer=False)
    assert clusters.plan(clusters.seen(obj, provider)).create is not None


def test_a_cluster_with_bad_configs_can_still_be_deleted() -> None:
    obj = clusters.skr("gcp", spec={**clusters.SPECS["gcp"], "redisConfigs": {"activedefrag": "yes"}},
                       status={"id": clusters.ID}, deleting=True)
    out = clusters.plan(clusters.seen(obj, "gcp", kcp=clusters.kcp("gcp", clusters.READY)))
    assert out.delete == clusters.ID  # the KCP mirror goes: deletion is not held by the bounds


def test_the_instance_plan_refuses_too() -> None:
    obj = instances.skr(spec={"redisTier": "S1", "redisConfigs": {"x" * 100: "1"}}, finalizer=False)
    out = redisinstance_plan.plan(instances.seen(obj, "gcp"), instances.NEW, lambda s: s, instances.NOW)
    status = dict(out.status or {})
    assert status.get("state") == "Error" and not out.writes and out.add_finalizer is None
    assert any(c["reason"] == REASON_INVALID_REDIS_CONFIGS and "longer than 64" in c["message"]
               for c in status["conditions"])


def _schema(kind: str, provider: str) -> Any:
    from kubedev.schema import Schema

    crd = next(c for c in install.load_crds("skr", provider=provider) if c["spec"]["names"]["kind"] == kind)
    return Schema.compile(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize(("kind", "provider", "field", "most"), [
    ("AwsRedisCluster", "aws", "parameters", 64), ("AwsRedisInstance", "aws", "parameters", 64),
    ("GcpRedisCluster", "gcp", "redisConfigs", len(GCP_CLUSTER_KEYS)), ("GcpRedisInstance", "gcp", "redisConfigs", 64)])
def test_the_crds_bound_the_maps(kind: str, provider: str, field: str, most: int) -> None:
    schema = _schema(kind, provider)

    def reasons(value: dict[str, str]) -> list[str]:
        return [f"{e.reason}:{e.field}" for e in schema.validate({"spec": {field: value}}, None)
                if e.field.startswith(f"spec.{field}")]

    assert reasons({f"k{i}": "v" for i in range(most)}) == []
    assert reasons({f"k{i}": "v" for i in range(most + 1)}) == [f"FieldValueTooMany:spec.{field}"]
    assert [r.split(":")[0] for r in reasons({"k": "v" * (MAX_VALUE + 1)})] == ["FieldValueTooLong"]


@pytest.mark.parametrize("kind", ["AzureRedisCluster", "AzureRedisInstance"])
def test_the_azure_crds_bound_the_values(kind: str) -> None:
    errors = _schema(kind, "azure").validate({"spec": {"redisConfiguration": {"maxclients": "1" * (MAX_VALUE + 1)}}},
                                             None)
    assert "FieldValueTooLong" in [e.reason for e in errors if e.field.startswith("spec.redisConfiguration")]


_ANY = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=80),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=70), inner,
                                                                                 max_size=4), max_leaves=12)
_MAPS = st.builds(lambda n, key, value: {**{f"k{i}": "v" for i in range(n)}, key: value},
                  st.integers(0, MAX_ENTRIES + 1), st.sampled_from(sorted(GCP_CLUSTER_KEYS)) | st.text(max_size=70),
                  st.text(max_size=8) | st.just("v" * (MAX_VALUE + 1)) | st.integers() | st.none())


@settings(max_examples=100, deadline=None)
@given(provider=st.sampled_from(["aws", "azure", "gcp", "other"]), value=_ANY | _MAPS, cluster=st.booleans())
def test_any_input_validates_or_says_why_and_never_raises(provider: str, value: Any, cluster: bool) -> None:
    spec = {"parameters": value, "redisConfigs": value, "redisConfiguration": value}
    check = cluster_configs_invalid if cluster else instance_configs_invalid
    message = check(provider, spec)
    assert message is None or (isinstance(message, str) and 0 < len(message) < 400)
    if message is None and provider != "other" and isinstance(value, dict):
        # what passes is within every bound
        assert len(value) <= MAX_ENTRIES
        assert all(isinstance(k, str) and 0 < len(k) <= 64 and isinstance(v, str) and len(v) <= MAX_VALUE
                   for k, v in value.items())
        if provider == "gcp" and cluster:
            assert set(value) <= GCP_CLUSTER_KEYS
