"""Keys, results, backoff and settings: the pure parts of the engine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.controller import Backoff, Controller, Key, Registry, Result, ResultKind
from workers.settings import load


@given(st.text(), st.text(), st.text())
def test_key_encoding_round_trips_any_strings(cluster: str, namespace: str, name: str) -> None:
    key = Key(cluster, namespace, name)
    assert Key.decode(key.encode()) == key


def test_key_encoding_quotes_urls_so_nginx_hosts_can_be_keys() -> None:
    key = Key("local", "http://127.0.0.1:9000/api", "http:backend")
    assert key.encode().count("/") == 2
    assert Key.decode(key.encode()) == key


@pytest.mark.parametrize(("ref", "expected"), [
    ("default/httpbin", Key("local", "default", "httpbin")),
    ("node-1", Key("local", "", "node-1")),
])
def test_key_parse_of_user_references(ref: str, expected: Key) -> None:
    assert Key.parse(ref) == expected
    assert expected.ref == ref


@pytest.mark.parametrize("raw", ["a/b", "a/b/c/d", ""])
def test_key_decode_rejects_malformed(raw: str) -> None:
    with pytest.raises(ValueError, match="cluster/namespace/name"):
        Key.decode(raw)


@pytest.mark.parametrize(("backoff", "failures", "expected"), [
    (Backoff(base=0.005, cap=1000), 1, 0.005),
    (Backoff(base=0.005, cap=1000), 2, 0.01),
    (Backoff(base=0.005, cap=1000), 11, 5.12),
    (Backoff(base=0.005, cap=1000), 40, 1000),
    (Backoff(base=2, cap=60), 1, 2),  # nginx edge: 2 s doubling to 60 s
    (Backoff(base=2, cap=60), 5, 32),
    (Backoff(base=2, cap=60), 6, 60),
    (Backoff(base=60, cap=60), 3, 60),  # api-gateway: retry after one minute
    (Backoff(base=1, cap=10), 10_000, 10),
])
def test_backoff_grows_exponentially_up_to_the_cap(backoff: Backoff, failures: int, expected: float) -> None:
    assert backoff.delay(failures) == pytest.approx(expected)


def test_backoff_jitter_only_shortens_within_its_fraction() -> None:
    b = Backoff(base=1, cap=100, jitter=0.25)
    assert b.delay(3, rand=lambda: 0.0) == 4
    assert b.delay(3, rand=lambda: 1.0) == 3


def test_result_constructors() -> None:
    assert Result.done().outcome is ResultKind.SUCCESS
    assert Result.requeue(30).requeue_after == 30
    assert Result.error("x").outcome is ResultKind.ERROR
    assert Result.terminal("x").outcome is ResultKind.TERMINAL
    with pytest.raises(ValueError):
        Result.requeue(-1)


def test_registry_names_unknown_controllers() -> None:
    reg = Registry()
    reg.register(Controller("a", "nginx", lambda k: None))
    assert "a" in reg and reg.names() == ["a"]
    with pytest.raises(KeyError, match="registered: a"):
        reg.get("b")


def test_resync_needs_list_keys() -> None:
    with pytest.raises(ValueError, match="list_keys"):
        Controller("a", "nginx", lambda k: None, resync_interval=10)


def test_settings_from_environment() -> None:
    s = load({"RECONCILERY_REDIS_URL": "redis://r:1/2", "RECONCILERY_TASK_EVENTS": "false",
              "RECONCILERY_METRICS_PORT": "9100", "RECONCILERY_LEASE_SECONDS": "2.5"})
    assert (s.redis_url, s.task_events, s.metrics_port, s.lease_seconds) == ("redis://r:1/2", False, 9100, 2.5)
    assert load({}).visibility_timeout < 3600  # crash recovery within seconds, not kombu's hour


@pytest.mark.parametrize(("env", "message"), [
    ({"RECONCILERY_METRICS_PORT": "x"}, "RECONCILERY_METRICS_PORT"),
    ({"RECONCILERY_TASK_TIME_LIMIT": "60", "RECONCILERY_VISIBILITY_TIMEOUT": "30"}, "below"),
])
def test_settings_errors_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load(env)
