"""The one settings loader: every variable's parse and its error message, table-driven."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from pydantic_settings import SettingsConfigDict

import config
from config import SettingsError

#: Modules whose import declares the settings classes of every layer and domain.
SETTINGS_MODULES = ("workers.settings", "kube.settings", "informers.settings", "watchers.settings",
                    "tasks.apigateway.settings", "tasks.nginx.settings", "tasks.snatch.settings",
                    "tasks.cloud.settings", "reconcilery.settings")


def _classes() -> list[type[config.Settings]]:
    for module in SETTINGS_MODULES:
        importlib.import_module(module)
    return config.settings_classes()


def _by_variable() -> dict[str, tuple[type[config.Settings], str]]:
    found: dict[str, tuple[type[config.Settings], str]] = {}
    for cls in _classes():
        for field in cls.model_fields:
            for name in cls.env_choices(field):
                found.setdefault(name, (cls, field))
    return found


# (variable, raw value, field value) — one good value per variable, as users write it today.
GOOD: list[tuple[str, str, Any]] = [
    ("RECONCILERY_REDIS_URL", "redis://r:1/2", "redis://r:1/2"),
    ("RECONCILERY_REDIS_SHARD_URLS", "redis://a:1/0,redis://b:1/0", "redis://a:1/0,redis://b:1/0"),
    ("RECONCILERY_REDIS_PASSWORD", "s3cret", "s3cret"),
    ("RECONCILERY_REDIS_SENTINEL_PASSWORD", "s3cret", "s3cret"),
    ("RECONCILERY_REDIS_MASTER_NAME", "main", "main"),
    ("RECONCILERY_REDIS_USERNAME", "flower", "flower"),
    ("RECONCILERY_MAX_LAPSES", "0", 0),
    ("RECONCILERY_REMOTE_LIST_PAGE_SIZE", "100", 100),
    ("RECONCILERY_REMOTE_LIST_MAX_OBJECTS", "2000", 2000),
    ("RECONCILERY_REMOTE_LIST_MAX_BYTES", "1048576", 1048576),
    ("RECONCILERY_REMOTE_CONNECT_BUDGET_BYTES", "8388608", 8388608),
    ("RECONCILERY_REMOTE_MEMORY_BYTES", "1073741824", 1073741824),
    ("RECONCILERY_REMOTE_MEMORY_SHARE", "0.25", 0.25),
    ("RECONCILERY_REMOTE_CONNECTS", "4", 4),
    ("RECONCILERY_KUBECONFIG", "/k/config", "/k/config"),
    ("RECONCILERY_VISIBILITY_TIMEOUT", "120", 120.0),
    ("RECONCILERY_TASK_TIME_LIMIT", "40", 40.0),
    ("RECONCILERY_TASK_SOFT_TIME_LIMIT", "35.5", 35.5),
    ("RECONCILERY_RECONCILE_TIMEOUT", "0", 0.0),
    ("RECONCILERY_LEASE_SECONDS", "2.5", 2.5),
    ("RECONCILERY_IDLE_WAIT", "1", 1.0),
    ("RECONCILERY_HUNG_GRACE", "60", 60.0),
    ("RECONCILERY_HEARTBEAT_FILE", "/tmp/hb", "/tmp/hb"),
    ("RECONCILERY_TASK_EVENTS", "OFF", False),
    ("RECONCILERY_METRICS_PORT", "9100", 9100),
    ("RECONCILERY_METRICS_BIND_ADDRESS", "127.0.0.1", "127.0.0.1"),
    ("RECONCILERY_DOMAINS", "tasks.nginx.controller", "tasks.nginx.controller"),
    ("RECONCILERY_WATCH_MODULES", "watchers.nginx", "watchers.nginx"),
    ("RECONCILERY_REDBEAT_LOCK_TIMEOUT", "5", 5.0),
    ("RECONCILERY_REDIS_CHECK_INTERVAL", "0.5", 0.5),
    ("RECONCILERY_KUBE_REFRESH_SECONDS", "0", 0.0),
    ("RECONCILERY_KUBE_AUDIT_DIR", "/tmp/audit", "/tmp/audit"),
    ("RECONCILERY_KUBE_AUDIT_COMPONENTS", "nginx-nlk", "nginx-nlk"),
    ("RECONCILERY_COMPONENT", "watcher", "watcher"),
    ("RECONCILERY_INFORMERS", "no", False),
    ("RECONCILERY_INFORMER_SYNC_SECONDS", "2", 2.0),
    ("RECONCILERY_LEADER_ELECT", "true", True),
    ("POD_NAMESPACE", "kyma-system", "kyma-system"),
    ("RECONCILERY_APIRULE_ERROR_RETRY_SECONDS", "1", 1.0),
    ("RECONCILERY_APIRULE_ERROR_RETRY_CAP_SECONDS", "900", 900.0),
    ("RECONCILERY_APIRULE_RECONCILIATION_SECONDS", "5", 5.0),
    ("RECONCILERY_APIRULE_RESYNC_SECONDS", "600", 600.0),
    ("RECONCILERY_APIRULE_MIGRATION_SECONDS", "2", 2.0),
    ("RECONCILERY_APIRULE_V1BETA1_ACCESS", "Allow", True),
    ("RECONCILERY_APIRULE_VS_CACHE", "0", False),
    ("RECONCILERY_APIRULE_ALLOW_CROSS_NAMESPACE_SERVICES", "true", True),
    ("RECONCILERY_APIGATEWAY_ERROR_RETRY_SECONDS", "2", 2.0),
    ("RECONCILERY_APIGATEWAY_ERROR_RETRY_CAP_SECONDS", "20", 20.0),
    ("RECONCILERY_APIGATEWAY_RECONCILIATION_SECONDS", "60", 60.0),
    ("RECONCILERY_APIGATEWAY_RESYNC_SECONDS", "0", 0.0),
    ("RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS", "0", 0.0),
    ("RECONCILERY_APIGATEWAY_WEBHOOK_HOST", "127.0.0.1", "127.0.0.1"),
    ("RECONCILERY_APIGATEWAY_WEBHOOK_PORT", "-1", -1),
    ("RECONCILERY_APIGATEWAY_CERT_POLL_SECONDS", "1", 1.0),
    ("RECONCILERY_APIGATEWAY_CERT_KEY_BITS", "2048", 2048),
    ("RECONCILERY_RATELIMIT_ERROR_RETRY_SECONDS", "3", 3.0),
    ("RECONCILERY_RATELIMIT_ERROR_RETRY_CAP_SECONDS", "30", 30.0),
    ("RECONCILERY_RATELIMIT_RECONCILIATION_SECONDS", "300", 300.0),
    ("RECONCILERY_RATELIMIT_RESYNC_SECONDS", "300", 300.0),
    ("RECONCILERY_OATHKEEPER_IMAGE", "oathkeeper:1", "oathkeeper:1"),
    ("RECONCILERY_OATHKEEPER_MAESTER_IMAGE", "maester:1", "maester:1"),
    ("RECONCILERY_BUSYBOX_IMAGE", "busybox:2", "busybox:2"),
    ("RECONCILERY_NGINX_NAMESPACE", "nlk", "nlk"),
    ("RECONCILERY_NGINX_CONFIGMAP", "nlk-config", "nlk-config"),
    ("RECONCILERY_NGINX_WATCHED_NAMESPACE", "edge", "edge"),
    ("RECONCILERY_NGINX_PORT_PREFIX", "nlk-", "nlk-"),
    ("RECONCILERY_NGINX_ANNOTATION_PREFIX", "example.com", "example.com"),
    ("RECONCILERY_NGINX_RESYNC_SECONDS", "3600", 3600.0),
    ("RECONCILERY_NGINX_MODES", "nkl,nlk", "nkl,nlk"),
    ("RECONCILERY_NGINX_NLK_NAMESPACE", "nginxaas", "nginxaas"),
    ("RECONCILERY_NGINX_NLK_CONFIGMAP", "nlk-config", "nlk-config"),
    ("RECONCILERY_NGINX_NLK_ALLOWED_NAMESPACES", "shop,storefront", "shop,storefront"),
    ("RECONCILERY_NGINX_NLK_CONFIG_FILE", "/etc/nginxaas-loadbalancer-kubernetes/config.yaml",
     "/etc/nginxaas-loadbalancer-kubernetes/config.yaml"),
    ("RECONCILERY_NGINX_OWNED_CONFIGMAP", "edge-owned", "edge-owned"),
    ("NGINXAAS_DATAPLANE_API_KEY", "k3y", "k3y"),
    ("RECONCILERY_SNATCH_WEBHOOK_CONFIG", "snatch", "snatch"),
    ("RECONCILERY_SNATCH_CERT_DIR", "/certs", "/certs"),
    ("RECONCILERY_SNATCH_CA_SECRET", "kyma-system/ca", "kyma-system/ca"),
    ("RECONCILERY_CLOUD_TIME_SCALE", "100", 100.0),
    ("RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL", "10", 10.0),
    ("RECONCILERY_CLOUD_CYCLIC_WORKERS", "8", 8),
    ("RECONCILERY_CLOUD_RECONCILE_TIMEOUT", "5", 5.0),
    ("RECONCILERY_CLOUD_NOTIF_MIN_INTERVAL", "0", 0.0),
    ("RECONCILERY_CLOUD_LISTENER_CERT_FILE", "/etc/listener/tls.crt", "/etc/listener/tls.crt"),
    ("RECONCILERY_CLOUD_LISTENER_KEY_FILE", "/etc/listener/tls.key", "/etc/listener/tls.key"),
    ("RECONCILERY_CLOUD_LISTENER_CLIENT_CA_FILE", "/etc/watcher-ca/ca.crt", "/etc/watcher-ca/ca.crt"),
    ("RECONCILERY_CLOUD_LISTENER_TRUST_XFCC", "true", True),
    ("RECONCILERY_CLOUD_LISTENER_MAX_CONNECTIONS", "8", 8),
    ("RECONCILERY_CLOUD_LISTENER_REQUEST_TIMEOUT", "5", 5.0),
    ("RECONCILERY_CLOUD_LISTENER_PROXY_NAMES", "gw.istio-system", "gw.istio-system"),
    ("RECONCILERY_CLOUD_WORKER_TIMEOUT", "60", 60.0),
    ("RECONCILERY_CLOUD_SWEEP_TICK", "0.2", 0.2),
    ("RECONCILERY_CLOUD_SWEEP_RESYNC", "5", 5.0),
    ("RECONCILERY_CLOUD_STRANDED_AFTER", "30", 30.0),
    ("RECONCILERY_CLOUD_SKR_REQUEST_TIMEOUT", "3", 3.0),
    ("RECONCILERY_CLOUD_CONNECT_BACKOFF_BASE", "1", 1.0),
    ("RECONCILERY_CLOUD_CONNECT_BACKOFF_CAP", "10", 10.0),
    ("RECONCILERY_CLOUD_CONNECT_DELAY", "0.5", 0.5),
    ("RECONCILERY_CLOUD_KCP_NAMESPACE", "kcp", "kcp"),
    ("RECONCILERY_CLOUD_GARDENER_NAMESPACE", "garden-x", "garden-x"),
    ("GARDENER_NAMESPACE", "garden-y", "garden-y"),
    ("RECONCILERY_CLOUD_LANDSCAPE", "stage", "stage"),
    ("LANDSCAPE", "prod", "prod"),
    ("RECONCILERY_CLOUD_EXPOSE_DATA", "false", False),
    ("RECONCILERY_CLOUD_METRICS_SUBSCRIPTION_LABEL", "true", True),
    ("RECONCILERY_CLOUD_REVISIT_TARGET", "600", 600.0),
    ("RECONCILERY_CLOUD_NUKE", "no", False),
    ("RECONCILERY_CLOUD_QUOTA_DEFAULTS", '{"a/totalCount": 3}', {"a/totalCount": 3}),
    ("RECONCILERY_CLOUD_QUOTA_OVERRIDES", '{"kyma-1": {"a/totalCount": 2}}', {"kyma-1": {"a/totalCount": 2}}),
    ("RECONCILERY_CLOUD_REDIS_INSTANCE_TIER_MACHINE_TYPES", '{"S1": "cache.t3.micro"}', {"S1": "cache.t3.micro"}),
    ("RECONCILERY_CLOUD_REDIS_CLUSTER_TIER_MACHINE_TYPES", '{"C1": "cache.t3.micro"}', {"C1": "cache.t3.micro"}),
    ("RECONCILERY_CLOUD_AWS_ENDPOINT_URL", "http://moto", "http://moto"),
    ("RECONCILERY_AWS_ENDPOINT_URL", "http://moto:5000", "http://moto:5000"),
    ("RECONCILERY_CLOUD_AWS_ACCESS_KEY_ID", "AK", "AK"),
    ("AWS_ACCESS_KEY_ID", "AK2", "AK2"),
    ("RECONCILERY_CLOUD_AWS_SECRET_ACCESS_KEY", "SK", "SK"),
    ("AWS_SECRET_ACCESS_KEY", "SK2", "SK2"),
    ("RECONCILERY_CLOUD_AWS_ROLE_NAME", "role", "role"),
    ("AWS_ROLE_NAME", "role2", "role2"),
    ("RECONCILERY_CLOUD_AWS_PARTITION", "aws-cn", "aws-cn"),
    ("AWS_PARTITION", "aws-us-gov", "aws-us-gov"),
    ("RECONCILERY_CLOUD_AWS_PEERING_ROLE_NAME", "peer", "peer"),
    ("AWS_PEERING_ROLE_NAME", "peer2", "peer2"),
    ("RECONCILERY_CLOUD_AWS_PEERING_ACCESS_KEY_ID", "PAK", "PAK"),
    ("AWS_PEERING_ACCESS_KEY_ID", "PAK2", "PAK2"),
    ("RECONCILERY_CLOUD_AWS_PEERING_SECRET_ACCESS_KEY", "PSK", "PSK"),
    ("AWS_PEERING_SECRET_ACCESS_KEY", "PSK2", "PSK2"),
    ("RECONCILERY_CLOUD_PEERING_NETWORK_TAG", "e2e", "e2e"),
    ("PEERING_NETWORK_TAG", "e2e2", "e2e2"),
    ("RECONCILERY_GCP_ENDPOINT_URL", "http://gcp", "http://gcp"),
    ("GCP_SA_JSON_KEY_PATH", "/k.json", "/k.json"),
    ("GCP_RETRY_WAIT_DURATION", "500ms", 0.5),
    ("RECONCILERY_CLOUD_EFS_CAPACITY_CHECK_INTERVAL", "30m", 1800.0),
    ("AWS_EFS_CAPACITY_CHECK_INTERVAL", "2h", 7200.0),
    ("RECONCILERY_AZURE_ENDPOINT_URL", "http://azure", "http://azure"),
    ("AZURE_TENANT_ID", "t", "t"),
    ("AZURE_CLIENT_ID", "c", "c"),
    ("AZURE_CLIENT_SECRET", "s", "s"),
    ("AZURE_PEERING_CLIENT_ID", "p", "p"),
    ("AZURE_PEERING_CLIENT_SECRET", "ps", "ps"),
    ("RECONCILERY_REDIS_SERVER", "/usr/bin/redis-server", "/usr/bin/redis-server"),
]

# (variable, raw value, the error's words after ``NAME='raw': ``).
BAD: list[tuple[str, str, str]] = [
    ("RECONCILERY_LEASE_SECONDS", "soon", "expected seconds (a number >= 0)"),
    ("RECONCILERY_LEASE_SECONDS", "-1", "expected seconds (a number >= 0), got a negative value"),
    ("RECONCILERY_LEASE_SECONDS", "nan", "expected seconds (a number >= 0)"),
    ("RECONCILERY_KUBE_REFRESH_SECONDS", "-5", "expected seconds (a number >= 0), got a negative value"),
    ("RECONCILERY_MAX_LAPSES", "-1", "expected a number >= 0"),
    ("RECONCILERY_REMOTE_LIST_MAX_OBJECTS", "0", "expected a number >= 1"),
    ("RECONCILERY_REMOTE_MEMORY_SHARE", "2", "expected a number <= 1"),
    ("RECONCILERY_INFORMER_SYNC_SECONDS", "soon", "expected seconds (a number >= 0)"),
    ("RECONCILERY_APIRULE_RESYNC_SECONDS", "soon", "expected seconds (a number >= 0)"),
    ("RECONCILERY_APIGATEWAY_ERROR_RETRY_SECONDS", "-1", "expected seconds (a number >= 0), got a negative value"),
    ("RECONCILERY_RATELIMIT_RESYNC_SECONDS", "1m", "expected seconds (a number >= 0)"),
    ("RECONCILERY_NGINX_RESYNC_SECONDS", "-300", "expected seconds (a number >= 0), got a negative value"),
    ("RECONCILERY_NGINX_MODES", "e3", "expected a comma-separated subset of nkl, nlk"),
    ("RECONCILERY_CLOUD_SWEEP_TICK", "fast", "expected seconds (a number >= 0)"),
    ("RECONCILERY_TASK_EVENTS", "maybe", "expected one of 1/true/yes/on or 0/false/no/off"),
    ("RECONCILERY_INFORMERS", "enabled", "expected one of 1/true/yes/on or 0/false/no/off"),
    ("RECONCILERY_LEADER_ELECT", "y", "expected one of 1/true/yes/on or 0/false/no/off"),
    ("RECONCILERY_APIRULE_V1BETA1_ACCESS", "maybe", "expected one of allow/1/true/yes/on or deny/0/false/no/off"),
    ("RECONCILERY_APIRULE_VS_CACHE", "2", "expected one of 1/true/yes/on or 0/false/no/off"),
    ("RECONCILERY_CLOUD_NUKE", "sometimes", "expected one of 1/true/yes/on or 0/false/no/off"),
    ("RECONCILERY_METRICS_PORT", "x", "expected an integer"),
    ("RECONCILERY_METRICS_PORT", "70000", "expected a port number 0-65535"),
    ("RECONCILERY_APIGATEWAY_WEBHOOK_PORT", "https", "expected an integer"),
    ("RECONCILERY_APIGATEWAY_CERT_KEY_BITS", "512", "expected a number >= 1024"),
    ("RECONCILERY_CLOUD_CYCLIC_WORKERS", "many", "expected an integer"),
    ("RECONCILERY_CLOUD_TIME_SCALE", "-1", "expected a number >= 0"),
    ("RECONCILERY_CLOUD_QUOTA_DEFAULTS", "{", "expected JSON"),
    ("RECONCILERY_CLOUD_QUOTA_OVERRIDES", '{"k": {"a": "x"}}', "expected an integer"),
    ("RECONCILERY_CLOUD_REDIS_INSTANCE_TIER_MACHINE_TYPES", '["S1"]', "Input should be a valid dictionary"),
    ("RECONCILERY_CLOUD_REDIS_CLUSTER_TIER_MACHINE_TYPES", '["C1"]', "Input should be a valid dictionary"),
    ("GCP_RETRY_WAIT_DURATION", "soon", "expected a duration such as 5s or 500ms, or seconds"),
    ("AWS_EFS_CAPACITY_CHECK_INTERVAL", "hourly", "expected a duration such as 5s or 500ms, or seconds"),
    ("RECONCILERY_AWS_ENDPOINT_URL", "", None),  # type: ignore[list-item]  # blank is unset, never an error
]


def test_every_variable_has_a_good_row_and_every_field_a_description() -> None:
    declared = _by_variable()
    assert set(declared) == {name for name, _, _ in GOOD}
    for cls in _classes():
        for field, info in cls.model_fields.items():
            assert (info.description or "").strip(), f"{cls.__name__}.{field} has no description"


@pytest.mark.parametrize(("name", "raw", "expected"), GOOD, ids=[f"{n}={r}" for n, r, _ in GOOD])
def test_each_variable_parses(name: str, raw: str, expected: Any) -> None:
    cls, field = _by_variable()[name]
    assert getattr(cls.load({name: raw}), field) == expected
    assert getattr(cls.load({name: ""}), field) == getattr(cls.load({}), field) == getattr(cls(), field)


@pytest.mark.parametrize(("name", "raw", "message"), BAD, ids=[f"{n}={r}" for n, r, _ in BAD])
def test_each_bad_value_is_one_error_naming_the_variable(name: str, raw: str, message: str | None) -> None:
    cls, _ = _by_variable()[name]
    if message is None:
        cls.load({name: raw})
        return
    with pytest.raises(SettingsError) as caught:
        cls.load({name: raw})
    assert caught.value.problems == [f"{name}={raw!r}: {message}"]
    assert str(caught.value) == f"{name}={raw!r}: {message}"


def test_every_seconds_variable_rejects_negatives_the_same_way() -> None:
    seconds = [(cls, field) for cls in _classes() for field, info in cls.model_fields.items()
               if any(getattr(m, "func", None) is config.loader._seconds for m in info.metadata)]
    assert len(seconds) > 30
    for cls, field in seconds:
        name = cls.env_name(field)
        with pytest.raises(SettingsError, match=f"^{name}='-1': expected seconds"):
            cls.load({name: "-1"})


@pytest.mark.parametrize(("words", "value"), [
    (("1", "true", "TRUE", "yes", "on", " On "), True), (("0", "false", "False", "no", "off"), False)])
def test_flags_accept_the_words_they_accepted(words: tuple[str, ...], value: bool) -> None:
    from workers.settings import load

    for word in words:
        assert load({"RECONCILERY_TASK_EVENTS": word}).task_events is value


def test_an_error_names_every_bad_variable_and_checks_across_fields() -> None:
    from workers.settings import load

    with pytest.raises(SettingsError) as caught:
        load({"RECONCILERY_LEASE_SECONDS": "soon", "RECONCILERY_TASK_EVENTS": "maybe"})
    assert [p.split("=")[0] for p in caught.value.problems] == ["RECONCILERY_LEASE_SECONDS",
                                                                "RECONCILERY_TASK_EVENTS"]
    with pytest.raises(SettingsError, match=r"^RECONCILERY_TASK_TIME_LIMIT must be below"):
        load({"RECONCILERY_TASK_TIME_LIMIT": "60", "RECONCILERY_VISIBILITY_TIMEOUT": "30"})
    assert load({"RECONCILERY_DOMAINS": " , "}).domain_modules == ()  # none named: every installed domain


def test_an_alias_error_names_the_variable_the_user_set() -> None:
    from tasks.cloud.settings import load

    assert load({"RECONCILERY_AWS_ENDPOINT_URL": "http://a"}).aws_endpoint_url == "http://a"
    assert load({"RECONCILERY_CLOUD_AWS_ENDPOINT_URL": "http://b", "RECONCILERY_AWS_ENDPOINT_URL": "http://a"}
                ).aws_endpoint_url == "http://b"


def test_current_is_read_once_and_reset_reads_again(monkeypatch: pytest.MonkeyPatch) -> None:
    class Probe(config.Settings):
        model_config = SettingsConfigDict(env_prefix="PROBE_SETTINGS_")
        value: config.Seconds = 1.0

    current = config.cached(Probe)
    monkeypatch.setenv("PROBE_SETTINGS_VALUE", "2")
    first = current()
    assert first.value == 2.0
    import os

    os.environ["PROBE_SETTINGS_VALUE"] = "3"  # not through monkeypatch: the cache keeps the first read
    try:
        assert current() is first
        current.override(Probe(value=7))
        assert current().value == 7.0
        config.reset()
        assert current().value == 3.0
    finally:
        monkeypatch.delenv("PROBE_SETTINGS_VALUE")
        config.loader._caches.remove(current)  # the probe is no setting of the house


def test_constructing_settings_in_code_reads_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from workers.settings import EngineSettings

    monkeypatch.setenv("RECONCILERY_LEASE_SECONDS", "-1")
    assert EngineSettings().lease_seconds == 10.0 and EngineSettings(lease_seconds=3).lease_seconds == 3.0


def test_validate_joins_the_problems_of_every_declared_class(monkeypatch: pytest.MonkeyPatch) -> None:
    _classes()
    monkeypatch.setenv("RECONCILERY_LEASE_SECONDS", "-1")
    monkeypatch.setenv("RECONCILERY_NGINX_RESYNC_SECONDS", "soon")
    monkeypatch.setenv("RECONCILERY_INFORMERS", "perhaps")
    with pytest.raises(SettingsError) as caught:
        config.validate()
    assert sorted(p.split("=")[0] for p in caught.value.problems) == [
        "RECONCILERY_INFORMERS", "RECONCILERY_LEASE_SECONDS", "RECONCILERY_NGINX_RESYNC_SECONDS"]


def test_the_settings_reference_is_generated_from_the_classes() -> None:
    from pathlib import Path

    from config.reference import classes_of, markdown

    docs = Path(__file__).resolve().parents[3] / "docs" / "settings.md"
    assert docs.read_text() == markdown(classes_of(SETTINGS_MODULES)), (
        "docs/settings.md is stale: python -m config.reference " + " ".join(SETTINGS_MODULES) + " > docs/settings.md")
