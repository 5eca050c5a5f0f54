"""The supervisor's parts on real processes and sockets: parent-death signal, stop, port choice."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reconcilery.supervisor import ChildExited, RestartPolicy, Supervisor, choose_port, port_free, port_holder
from tests.fixtures.processes import wait_for


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, awaiting its reaper
    except FileNotFoundError:
        return False


def test_children_die_when_their_parent_is_sigkilled(tmp_path: Path) -> None:
    # A parent that supervises two sleepers, then is SIGKILLed: no chance to clean up.
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from reconcilery.supervisor import Supervisor
        s = Supervisor(Path({str(tmp_path)!r}))
        for i in range(2):
            s.spawn(f"sleeper{{i}}", [sys.executable, "-c", "import time; time.sleep(600)"])
        print(" ".join(map(str, s.pids())), flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[3])
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_for(lambda: not any(_alive(p) for p in pids), timeout=10, message="children gone")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_stop_terms_then_kills_within_one_deadline(tmp_path: Path) -> None:
    sup = Supervisor(tmp_path)
    polite = sup.spawn("polite", [sys.executable, "-c", "import time; time.sleep(600)"])
    stubborn = sup.spawn("stubborn", [sys.executable, "-c",
                                      "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                      "print('ready', flush=True); time.sleep(600)"])
    wait_for(lambda: "ready" in (tmp_path / "stubborn.log").read_text(), timeout=10, message="stubborn ready")
    sup.stop(timeout=1.0)
    assert polite.proc.returncode == -signal.SIGTERM
    assert stubborn.proc.returncode == -signal.SIGKILL


def test_check_reports_an_exited_child_with_its_log(tmp_path: Path) -> None:
    sup = Supervisor(tmp_path, restart=None)
    child = sup.spawn("oops", [sys.executable, "-c", "print('boom'); raise SystemExit(3)"])
    child.proc.wait(10)
    with pytest.raises(ChildExited, match=r"oops exited with 3:\n.*boom"):
        sup.check()


def test_a_taken_default_port_is_replaced_and_its_holder_named() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_free(port)
        assert port_holder(port).startswith(f"pid {os.getpid()} (")
        choice = choose_port("Flower", port, explicit=False)
        assert choice.port != port and port_free(choice.port)
        assert choice.note == (f"port {port} (Flower) is taken by pid {os.getpid()} "
                               f"{port_holder(port)[len(f'pid {os.getpid()} '):]}; Flower uses port "
                               f"{choice.port} instead")
        with pytest.raises(RuntimeError, match=rf"^port {port} \(Flower\) is taken by pid {os.getpid()} "):
            choose_port("Flower", port, explicit=True)
    assert choose_port("Flower", port, explicit=True).port == port  # free again


def test_a_crashed_child_is_restarted_with_backoff_and_announced_in_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    sup = Supervisor(tmp_path, restart=RestartPolicy(base=0.2, cap=1.0), announce=lines.append)
    child = sup.spawn("worker", [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"])
    first = child.proc.pid
    os.kill(first, signal.SIGKILL)
    child.proc.wait(10)
    sup.check()
    assert lines == ["worker exited with -9; restarting it in 0.2 s (exit 1 of 4 allowed within 60 s)"]
    assert child.proc.pid == first  # not yet: after the backoff
    time.sleep(0.25)
    sup.check()
    assert child.proc.pid != first and child.proc.poll() is None and child.restarts == 1
    wait_for(lambda: (tmp_path / "worker.log").read_text().count("up") == 2, timeout=10, message="restarted")
    assert "restarted by reconcilery up" in (tmp_path / "worker.log").read_text()
    sup.stop(timeout=2.0)


def test_a_child_that_keeps_crashing_stops_up(tmp_path: Path) -> None:
    lines: list[str] = []
    sup = Supervisor(tmp_path, restart=RestartPolicy(max_crashes=3, base=0.05, cap=0.1), announce=lines.append)
    sup.spawn("beat", [sys.executable, "-c", "print('cannot start'); raise SystemExit(2)"])
    deadline = time.monotonic() + 20
    with pytest.raises(ChildExited, match=r"beat exited with 2, 3 times within 60 s; giving up:\n.*cannot start"):
        while time.monotonic() < deadline:
            sup.check()
            time.sleep(0.05)
    assert len(lines) == 2
    assert RestartPolicy().delay(1) == 1.0 and RestartPolicy().delay(4) == 8.0 and RestartPolicy().delay(99) == 30.0
