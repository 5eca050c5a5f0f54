"""deploy/'s Redis ACL users, applied to a real Redis exactly as deploy/base/redis.yaml writes them: the
SKR listener does its work (rotation decision + enqueue of a connect) as user ``listener`` and nothing
else; Flower shows a real worker (its config through Flower's HTTP API, with no password in it) as
user ``flower``, which can neither write the workqueue nor read what it does not show."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from reconcilery.localredis import LocalRedis
from tests.fixtures.deploy import by_kind, render
from tests.fixtures.processes import free_port, stop_process, wait_for
from tests.fixtures.workers import ROOT, WorkerPool

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

ADMIN_PW, LISTENER_PW, FLOWER_PW = "admin-s3cret", "listener-s3cret", "flower-s3cret"


def acl_rules() -> dict[str, list[str]]:
    """``user -> ACL SETUSER arguments`` from the rendered Redis StatefulSet of deploy/base."""
    (redis_container,) = by_kind(render("base"), "StatefulSet")["reconcilery-redis"]["spec"]["template"]["spec"][
        "containers"]
    command = redis_container["command"]
    rules = [command[i + 1] for i, arg in enumerate(command) if arg == "--user"]
    out = {}
    for rule in rules:
        rule = rule.replace("$(REDIS_LISTENER_PASSWORD)", LISTENER_PW).replace("$(REDIS_FLOWER_PASSWORD)", FLOWER_PW)
        name, *args = rule.split()
        out[name] = args
    return out


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[tuple[str, redis.Redis]]:
    server = LocalRedis(free_port(), workdir=str(tmp_path)).start()
    admin = redis.Redis.from_url(server.url)
    for name, args in acl_rules().items():
        admin.execute_command("ACL", "SETUSER", name, "reset", *args)
    admin.config_set("requirepass", ADMIN_PW)
    admin = redis.Redis.from_url(server.url, password=ADMIN_PW)
    try:
        yield server.url, admin
    finally:
        server.stop()


def _as(url: str, user: str, password: str) -> str:
    return url.replace("redis://", f"redis://{user}:{password}@", 1)


def test_the_listener_does_its_work_and_nothing_else(acl_redis: tuple[str, redis.Redis]) -> None:
    url, admin = acl_redis
    from tasks.cloud.settings import CloudSettings
    from tasks.cloud.sweep import Rotation

    Rotation(admin, CloudSettings()).activate("kyma-1")
    env = {**os.environ, "RECONCILERY_REDIS_URL": _as(url, "listener", LISTENER_PW), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", "import tasks.cloud.controller\n"
                          "from tasks.cloud.skr.listener import notify_connect\nprint(notify_connect('kyma-1'))"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "accepted", run.stdout + run.stderr
    assert admin.zcard("rq:ctl:cloud-skr-connect:waiting") == 1  # the connect was enqueued
    listener = redis.Redis.from_url(_as(url, "listener", LISTENER_PW))
    admin.set("redbeat::lock", "x")
    for forbidden in (lambda: listener.get("redbeat::lock"), lambda: listener.flushall(),
                      lambda: listener.config_get("requirepass"), lambda: listener.keys("*"),
                      lambda: listener.set("_kombu.binding.x", "y"), lambda: listener.script_flush(),
                      lambda: listener.acl_list()):
        with pytest.raises(redis.exceptions.NoPermissionError):
            forbidden()


def test_the_listener_cannot_write_another_controllers_queue(acl_redis: tuple[str, redis.Redis]) -> None:
    """issue 27: its user could write every controller's queue (``~rq:*``): now only the connect
    controller's keys and the cloud-skr queue's."""
    url, _ = acl_redis
    with redis.Redis.from_url(_as(url, "listener", LISTENER_PW)) as listener:
        _only_its_own_keys(listener)


def _only_its_own_keys(listener: redis.Redis) -> None:
    for forbidden in (lambda: listener.rpush("rq:nginx:ready", "nginx-upstreams local/x/y"),
                      lambda: listener.zadd("rq:ctl:apirule:waiting", {"local/ns/evil": 1}),
                      lambda: listener.rpush("rq:cloud-kcp:ready", "cloud-kcp-iprange local/x/y"),
                      lambda: listener.set("rq:fence", "0"),
                      lambda: listener.delete("rq:epoch")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            forbidden()
    listener.zadd("rq:ctl:cloud-skr-connect:waiting", {"local/kcp-system/kyma-x": 1})  # what it needs still works


@pytest.mark.timeout(240)
def test_flower_shows_a_worker_without_its_password_and_writes_no_queue(
        acl_redis: tuple[str, redis.Redis], tmp_path: Path) -> None:
    url, admin = acl_redis
    pool = WorkerPool(_as(url, "", ADMIN_PW), "tests.integration.workqueue.probe", tmp_path)
    port = free_port()
    flower = None
    try:
        pool.start(1, RECONCILERY_TASK_EVENTS="1")
        env = {**os.environ, "RECONCILERY_REDIS_URL": url, "RECONCILERY_REDIS_USERNAME": "flower",
               "RECONCILERY_REDIS_PASSWORD": FLOWER_PW, "FLOWER_UNAUTHENTICATED_API": "true",
               "RECONCILERY_DOMAINS": "tests.integration.workqueue.probe", "PYTHONPATH": str(ROOT)}
        log = open(tmp_path / "flower.log", "wb")  # noqa: SIM115 - closed with the process
        flower = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "flower", f"--port={port}",
                                   "--address=127.0.0.1"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)

        def workers() -> dict | None:
            answer = requests.get(f"http://127.0.0.1:{port}/api/workers?refresh=1", timeout=10)
            body = answer.json() if answer.ok else {}
            return body if any((w or {}).get("conf") for w in body.values()) else None

        shown = wait_for(workers, timeout=90, interval=1.0,
                         message="Flower shows the worker's conf: " + (tmp_path / "flower.log").read_text()[-2000:])
        text = repr(shown)
        assert ADMIN_PW not in text and FLOWER_PW not in text, text
        assert "redbeat_redis_url" in text and "********" in text
        assert requests.get(f"http://127.0.0.1:{port}/api/queues/length", timeout=10).ok
        as_flower = redis.Redis.from_url(_as(url, "flower", FLOWER_PW))
        for forbidden in (lambda: as_flower.zadd("rq:ctl:probe:waiting", {"x": 1}),
                          lambda: as_flower.rpush("rq:apigateway:ready", "probe x"),
                          lambda: as_flower.flushall(), lambda: as_flower.config_get("*"),
                          lambda: as_flower.get("redbeat::lock"), lambda: as_flower.hgetall("rq:ctl:probe:failures")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                forbidden()
        mine = {"rq:ctl:probe:waiting", "rq:apigateway:ready", "flushall", "config", "config|get", "redbeat::lock",
                "rq:ctl:probe:failures"}
        # `client`: redis-py's CLIENT SETINFO on connect, a subcommand Redis 7.0 lacks (7.2+ files it
        # under @connection); redis-py ignores its failure
        denied = {(e["reason"], e["object"]) for e in admin.acl_log(count=1000)
                  if e["username"] == "flower" and e["object"] not in mine and e["object"] != "client"}
        assert not denied, denied  # nothing Flower did itself was refused
    finally:
        if flower is not None:
            stop_process(flower)
        pool.stop()
