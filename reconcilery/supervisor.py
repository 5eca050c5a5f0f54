"""Child processes of ``reconcilery up`` that never outlive it, and the ports they need.

- :class:`Supervisor` starts each child in its own process group (so a terminal's Ctrl-C reaches
  only ``up``, which then stops the children in order) with a parent-death signal (Linux
  ``prctl(PR_SET_PDEATHSIG, SIGKILL)``): when ``up`` dies, even by SIGKILL or the OOM killer, the
  kernel kills every child. :meth:`Supervisor.stop` sends SIGTERM to every group, waits for all of
  them under one deadline, then SIGKILLs what is left.
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
from dataclasses import dataclass
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
    """A supervised child exited while it should run; the message has the tail of its log."""


@dataclass
class Child:
    """One supervised process: its name, ``Popen`` and log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class Supervisor:
    """Starts and stops the child processes of one ``up``.

    Args:
        logs: directory receiving ``<name>.log`` (stdout and stderr) of every child.
        cwd: working directory of the children (``None``: this process's).
    """

    def __init__(self, logs: Path, cwd: str | os.PathLike[str] | None = None) -> None:
        self.logs = logs
        self.cwd = cwd
        self.children: list[Child] = []

    def spawn(self, name: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        """Start ``args`` as child ``name`` in its own session, killed by the kernel if we die."""
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{name}.log"
        with open(path, "ab") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(list(args), env=dict(env) if env is not None else None, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=self.cwd, preexec_fn=die_with_parent())
        child = Child(name, proc, path)
        self.children.append(child)
        return child

    def pids(self) -> list[int]:
        return [c.proc.pid for c in self.children]

    def check(self) -> None:
        """Raise :class:`ChildExited` (with the last 2,000 characters of its log) if a child exited."""
        for child in self.children:
            if child.proc.poll() is not None:
                tail = child.log.read_text(errors="replace")[-2000:] if child.log.exists() else ""
                raise ChildExited(f"{child.name} exited with {child.proc.returncode}:\n{tail}")

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


__all__ = ["Child", "ChildExited", "PortChoice", "StopRequested", "Supervisor", "choose_port", "die_with_parent",
           "free_port", "listening", "port_free", "port_holder", "signals_deferred", "stop_signals"]
