"""Child processes of ``reconcilery up`` that never outlive it, and the ports they need.

- :class:`Supervisor` starts each child in its own process group (so a terminal's Ctrl-C reaches
  only ``up``, which then stops the children in order) with a parent-death signal (Linux
  ``prctl(PR_SET_PDEATHSIG, SIGKILL)``): when ``up`` dies, even by SIGKILL or the OOM killer, the
  kernel kills every child. :meth:`Supervisor.stop` sends SIGTERM to every group, waits for all of
  them under one deadline, then SIGKILLs what is left. :meth:`Supervisor.check` restarts a child
  that exited, with backoff, as a Pod's ``restartPolicy: Always`` would (:class:`RestartPolicy`), and
  gives up (raises :class:`ChildExited`) only when one keeps crashing.
- :func:`stop_signals` turns SIGTERM and SIGHUP into :class:`StopRequested` (a ``KeyboardInterrupt``),
  so ``timeout``, systemd or an IDE stopping ``up`` takes exactly the Ctrl-C path.
- :func:`port_free`, :func:`listening`, :func:`port_holder` answer "can I bind this port" and "who
  holds it" (psutil when installed, else a plain "another process").

The parent-death signal is tied to the *thread* that started the child: call :meth:`Supervisor.spawn`
from a thread that lives as long as the children (``up`` uses its main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


# Resolved once in the parent: the pre-exec hook only calls a C function (no import, no allocation
# of note) between fork and exec, which keeps it safe in a process with threads.
_PRCTL = _load_prctl()


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the kernel send ``sig`` to the child
    when the thread that started it dies; ``None`` where ``prctl`` does not exist (not Linux).

    Closes the race where the parent dies between ``fork`` and ``prctl``: the child then finds a new
    parent and exits at once."""
    if _PRCTL is None:
        return None
    prctl, parent = _PRCTL, os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class StopRequested(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived; handled like Ctrl-C. ``signum`` is the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While active (main thread only), SIGTERM and SIGHUP raise :class:`StopRequested` in the main
    thread; the previous handlers are restored on exit."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise StopRequested(signum)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """While active, SIGINT, SIGTERM and SIGHUP are recorded (in the yielded list) instead of
    interrupting: the shutdown itself must not be cut short by a second Ctrl-C."""
    seen: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        seen.append(signum)

    sigs = (signal.SIGINT, *STOP_SIGNALS)
    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    try:
        yield seen
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class ChildExited(RuntimeError):
    """A supervised child exited while it should run (and keeps doing so, under a restart policy);
    the message has the tail of its log."""


@dataclass(frozen=True)
class RestartPolicy:
    """Restarts of a child that exited, as Kubernetes' CrashLoopBackOff (scaled to a laptop).

    Attributes:
        max_crashes: exits within ``window`` after which the supervisor gives up.
        window: seconds an exit counts against ``max_crashes``.
        base, cap: the n-th exit within the window waits ``min(cap, base * 2**(n-1))`` seconds
            before the restart.
    """

    max_crashes: int = 5
    window: float = 60.0
    base: float = 1.0
    cap: float = 30.0

    def delay(self, crashes: int) -> float:
        """Seconds before restarting after the ``crashes``-th exit within the window (>= 1)."""
        return min(self.cap, self.base * 2 ** max(0, min(crashes - 1, 32)))


@dataclass
class Child:
    """One supervised process: its name, ``Popen`` and log file; how to start it again, the times
    (monotonic) of its recent exits and when it is due to be restarted (None: running)."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    exits: list[float] = field(default_factory=list)
    restart_at: float | None = None
    restarts: int = 0


class Supervisor:
    """Starts and stops the child processes of one ``up``.

    Args:
        logs: directory receiving ``<name>.log`` (stdout and stderr) of every child.
        cwd: working directory of the children (``None``: this process's).
        restart: how :meth:`check` restarts children that exited (``None``: never; the first exit
            raises :class:`ChildExited`).
        announce: where the one line about an exit and its restart goes (default: stdout).
    """

    def __init__(self, logs: Path, cwd: str | os.PathLike[str] | None = None,
                 restart: RestartPolicy | None = RestartPolicy(),
                 announce: Callable[[str], None] | None = None) -> None:
        self.logs = logs
        self.cwd = cwd
        self.restart = restart
        self.announce = announce or (lambda line: print(line, flush=True))
        self.children: list[Child] = []

    def spawn(self, name: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        """Start ``args`` as child ``name`` in its own session, killed by the kernel if we die."""
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{name}.log"
        child = Child(name, self._popen(path, args, env), path, tuple(args), dict(env) if env is not None else None)
        self.children.append(child)
        return child

    def _popen(self, path: Path, args: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        with open(path, "ab") as log:  # the child keeps its own descriptor
            return subprocess.Popen(list(args), env=dict(env) if env is not None else None, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=self.cwd, preexec_fn=die_with_parent())

    def pids(self) -> list[int]:
        return [c.proc.pid for c in self.children]

    def check(self) -> None:
        """Look after the children (call it about every second, from the thread that spawned them).

        A child that exited is restarted after the policy's backoff, announced in one line; a child
        due is started again (same command, environment and log). Raises :class:`ChildExited` (with
        the last 2,000 characters of its log) when a child exited ``max_crashes`` times within the
        window, or at its first exit without a restart policy.
        """
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    self._start_again(child)
                continue
            code = child.proc.poll()
            if code is None:
                continue
            tail = child.log.read_text(errors="replace")[-2000:] if child.log.exists() else ""
            policy = self.restart
            if policy is None:
                raise ChildExited(f"{child.name} exited with {code}:\n{tail}")
            child.exits = [t for t in child.exits if now - t < policy.window] + [now]
            crashes = len(child.exits)
            if crashes >= policy.max_crashes:
                raise ChildExited(f"{child.name} exited with {code}, {crashes} times within "
                                  f"{policy.window:.0f} s; giving up:\n{tail}")
            delay = policy.delay(crashes)
            child.restart_at = now + delay
            self.announce(f"{child.name} exited with {code}; restarting it in {delay:g} s "
                          f"(exit {crashes} of {policy.max_crashes - 1} allowed within {policy.window:.0f} s)")

    def _start_again(self, child: Child) -> None:
        with open(child.log, "ab") as log:
            log.write(f"--- restarted by reconcilery up (restart {child.restarts + 1})\n".encode())
        child.proc = self._popen(child.log, child.args, child.env)
        child.restart_at = None
        child.restarts += 1

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every child's process group (newest first), wait for all of them up to ``timeout``
        seconds in total, then SIGKILL the groups still alive."""
        for child in reversed(self.children):
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for child in reversed(self.children):
            try:
                child.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait(5)
        # Grandchildren that left the group die with it; a group member still alive is killed too.
        for child in self.children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)


# ---- ports ---------------------------------------------------------------------------------------


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind ``host:port`` now (with ``SO_REUSEADDR``, as Tornado and aiohttp
    bind): ``False`` when another socket listens there or holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def listening(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0


def port_holder(port: int) -> str:
    """Who listens on TCP ``port``: ``"pid 1234 (redis-server *:6379)"``, or ``"another process"``
    when it cannot be told (psutil missing, or the process belongs to another user)."""
    try:
        import psutil
    except ImportError:
        return "another process"
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, OSError):
        return "another process"
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                cmd = " ".join(psutil.Process(conn.pid).cmdline()) or psutil.Process(conn.pid).name()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                cmd = "?"
            return f"pid {conn.pid} ({cmd[:120]})"
    return "another process"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class PortChoice:
    """The port to use and, when it is not the one asked for, the line that says why."""

    port: int
    note: str = ""


def choose_port(what: str, preferred: int, explicit: bool, host: str = "127.0.0.1") -> PortChoice:
    """``preferred`` if free. A taken *default* port is replaced by a free one (the note names the
    port and its holder); a taken port the user asked for raises ``RuntimeError`` with that line."""
    if port_free(preferred, host):
        return PortChoice(preferred)
    line = f"port {preferred} ({what}) is taken by {port_holder(preferred)}"
    if explicit:
        raise RuntimeError(f"{line}; choose another port")
    port = free_port(host)
    return PortChoice(port, f"{line}; {what} uses port {port} instead")


__all__ = ["Child", "ChildExited", "PortChoice", "RestartPolicy", "StopRequested", "Supervisor", "choose_port",
           "die_with_parent", "free_port", "listening", "port_free", "port_holder", "signals_deferred", "stop_signals"]
