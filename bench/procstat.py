"""CPU time and resident memory of processes from /proc (Linux), for benchmarks that measure worker
processes apart from the API server in their own process.

``cpu_seconds(pids)``: utime + stime of the processes and their live descendants (fields 14 and 15 of
``/proc/<pid>/stat``, in clock ticks); ``rss_bytes(pids)``: the sum of their ``VmRSS``;
:class:`RssSampler` samples that sum every ``interval`` seconds in a thread and keeps the peak.
A process that is gone counts 0.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

__all__ = ["RssSampler", "cpu_seconds", "descendants", "rss_bytes"]

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()  # fields from 3 (state) on: the name may hold spaces


def descendants(pids: Iterable[int]) -> set[int]:
    """``pids`` and every live process below them."""
    found = set(pids)
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append(int(entry))
    todo = list(found)
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cpu_seconds(pids: Iterable[int]) -> float:
    """CPU seconds (user + system) used so far by ``pids`` and their descendants."""
    total = 0
    for pid in descendants(pids):
        fields = _stat(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / _TICKS


def rss_bytes(pids: Iterable[int], tree: set[int] | None = None) -> int:
    """Resident memory (``VmRSS``) of ``pids`` and their descendants, in bytes (``tree``: that set of
    processes, already found by :func:`descendants`; a scan of /proc costs ~10 ms with a few hundred)."""
    total = 0
    for pid in tree if tree is not None else descendants(pids):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


class RssSampler:
    """Samples :func:`rss_bytes` of ``pids`` every ``interval`` s between :meth:`start` and :meth:`stop`;
    ``peak`` is the largest sum seen (bytes), ``samples`` how many were taken. The descendants of ``pids``
    are looked up again every ``refresh`` samples (the scan of /proc cost the bench's process more CPU
    than its share of the API server's work)."""

    def __init__(self, pids: Iterable[int], interval: float = 0.5, refresh: int = 10) -> None:
        self.pids = list(pids)
        self.interval = interval
        self.refresh = refresh
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        tree: set[int] = set()
        while not self._stop.is_set():
            if self.samples % self.refresh == 0:
                tree = descendants(self.pids)
            self.peak = max(self.peak, rss_bytes(self.pids, tree))
            self.samples += 1
            self._stop.wait(self.interval)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop sampling; returns the peak (bytes)."""
        self._stop.set()
        self._thread.join(5)
        return self.peak
