"""Parsing RECONCILERY_REDIS_URL and the Celery / RedBeat settings built from it (pure)."""

from __future__ import annotations

import pytest

from workers.redis_client import celery_broker_settings, parse_redis_url, redbeat_settings

NO_ENV: dict[str, str] = {}
PW = {"RECONCILERY_REDIS_PASSWORD": "s3cr/t"}


@pytest.mark.parametrize(("url", "env", "password", "db"), [
    ("redis://127.0.0.1:6379/0", NO_ENV, None, 0),
    ("redis://127.0.0.1:6379", NO_ENV, None, 0),
    ("redis://:inurl@redis:6379/3", PW, "inurl", 3),  # the URL's password wins
    ("redis://redis:6379/2", PW, "s3cr/t", 2),
    ("rediss://redis:6380/1", PW, "s3cr/t", 1),
    ("unix:///run/redis.sock", NO_ENV, None, 0),
    ("unix:///run/redis.sock?db=4", NO_ENV, None, 4),
])
def test_plain_urls(url: str, env: dict[str, str], password: str | None, db: int) -> None:
    target = parse_redis_url(url, env)
    assert not target.is_sentinel and target.password == password and target.db == db


def test_sentinel_list_with_master_name_from_the_url_or_the_setting() -> None:
    url = "sentinel://s0:26379/1?master_name=reconcilery;sentinel://s1:26380;sentinel://s2"
    target = parse_redis_url(url, PW)
    assert target.sentinels == (("s0", 26379), ("s1", 26380), ("s2", 26379))
    assert (target.master_name, target.db, target.password) == ("reconcilery", 1, "s3cr/t")
    assert parse_redis_url("sentinel://s0:26379", {"RECONCILERY_REDIS_MASTER_NAME": "m"}).master_name == "m"
    assert parse_redis_url("sentinel://s0:26379", NO_ENV).master_name == "mymaster"


@pytest.mark.parametrize(("url", "message"), [
    ("redis://a:1/0;redis://b:1/0", "only sentinel:// URLs"),
    ("sentinel://a:1;redis://b:1", "expected sentinel://HOST:PORT"),
    ("redis://a:1/zero", "must be a number"),
    ("", "empty"),
])
def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_redis_url(url, NO_ENV)


def test_celery_settings_of_a_plain_url_carry_the_password_from_the_setting() -> None:
    out = celery_broker_settings("redis://redis:6379/0", {"visibility_timeout": 30}, PW)
    assert out == {"broker_url": "redis://:s3cr%2Ft@redis:6379/0",
                   "broker_transport_options": {"visibility_timeout": 30}}
    assert celery_broker_settings("redis://redis:6379/0", None, NO_ENV)["broker_url"] == "redis://redis:6379/0"


def test_celery_settings_of_sentinels() -> None:
    env = {**PW, "RECONCILERY_REDIS_SENTINEL_PASSWORD": "sp"}
    out = celery_broker_settings("sentinel://s0:26379/2?master_name=rq;sentinel://s1:26379", {"a": 1}, env)
    assert out["broker_url"] == "sentinel://:s3cr%2Ft@s0:26379/2;sentinel://s1:26379/2"
    assert out["broker_transport_options"] == {"a": 1, "master_name": "rq", "sentinel_kwargs": {"password": "sp"}}
    # a client built from the broker URL (as the Celery app's workqueue is) finds the same master
    assert parse_redis_url(out["broker_url"], NO_ENV).master_name == "rq"


def test_redbeat_settings() -> None:
    # the password travels as an option (masked by Celery), never in the URL (shown as it is)
    assert redbeat_settings("redis://redis:6379/0", PW) == {"redbeat_redis_url": "redis://redis:6379/0",
                                                            "redbeat_redis_options": {"password": "s3cr/t"}}
    assert redbeat_settings("redis://u:p%40ss@redis:6379/0", NO_ENV) == {
        "redbeat_redis_url": "redis://redis:6379/0", "redbeat_redis_options": {"password": "p@ss", "username": "u"}}
    out = redbeat_settings("sentinel://s0:26379/1;sentinel://s1:26380", {**PW, "RECONCILERY_REDIS_MASTER_NAME": "m"})
    assert out["redbeat_redis_url"] == "redis-sentinel://s0:26379/1"
    assert out["redbeat_redis_options"] == {"sentinels": [("s0", 26379), ("s1", 26380)], "service_name": "m",
                                            "db": 1, "socket_timeout": 5.0, "retry_period": 60, "password": "s3cr/t"}


@pytest.mark.parametrize("url", ["redis://redis:6379/0", "redis://:s3cr%2Ft@redis:6379/0",
                                 "sentinel://s0:26379/1;sentinel://s1:26380"])
def test_no_password_in_what_celery_and_flower_show(url: str) -> None:
    """Celery's censored config (what ``inspect conf`` answers and Flower's worker config page shows)
    carries no password, the Sentinels' included."""
    from celery import Celery

    from workers.app import configure
    from workers.settings import EngineSettings

    env = {**PW, "RECONCILERY_REDIS_SENTINEL_PASSWORD": "s3ntinel-pw"}
    app = Celery("censored")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        configure(app, EngineSettings(redis_url=url))
    from types import SimpleNamespace

    from celery.worker import control

    # the worker's answer to `inspect conf`: what Flower's /api/workers and worker page show as "conf"
    flower = repr(control.conf(SimpleNamespace(app=app), with_defaults=False))
    shown = app.conf.humanize(with_defaults=False, censored=True) + flower
    for secret in ("s3cr/t", "s3cr%2Ft", "s3cr%2ft", "s3ntinel-pw"):
        assert secret not in shown, shown
    assert "redbeat_redis_url" in shown
