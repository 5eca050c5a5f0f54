"""Upstreams missing on NGINX Plus hosts: the state behind ``reconcilery_nginx_upstream_missing`` (thread-safe).

An upstream a Service port names but the host does not declare (``404 UpstreamNotFound``) fails its
sync, which is retried with backoff (at most 60 s apart), in whichever worker process takes the key.
So the gauge is read at scrape time from a per-process map (:class:`MissingUpstreams`, a custom
collector: :class:`MissingCollector`) whose entries expire :data:`EXPIRE` seconds after the last
failure this process saw, as ``reconcilery_nginx_host_in_sync`` does (:mod:`tasks.nginx.insync`): a
process that no longer syncs the upstream (its key moved to another process, the Service or the
host was removed) stops reporting it within that time, instead of reporting it for ever. A sync
that finds the upstream drops it at once. Only missing upstreams have a series (value 1); the others
have none (``absent`` or ``or on() vector(0)`` in queries), so the series follow the failures, not
the number of upstreams. Prometheus' ``max by (host, upstream)`` over the processes is the fleet's answer.

Bounded cardinality: the ``upstream`` label comes from Service port names (customer input). At most
:data:`MAX_HOSTS` hosts (the operator's configuration) and :data:`MAX_LABELLED` upstreams per host
have a series of their own, each name cut to :data:`MAX_NAME` characters; the missing upstreams past
that are one series per host, ``upstream="_other"``, whose value is their number. The map holds at most
:data:`MAX_MISSING` upstreams per host (the rest are counted again by their retries once there is
room). :func:`bounded_label` does the same for the counter ``..._errors_total``: the first
:data:`MAX_LABELLED` upstreams a process counts per host keep their name, later ones count as ``_other``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

#: Seconds a missing upstream is reported after the last failure this process saw (three of the
#: workqueue's longest retry intervals: a still-missing upstream is marked again by then).
EXPIRE = 180.0
#: Hosts reported at most (the operator's ``nginx-hosts``).
MAX_HOSTS = 256
#: Upstreams per host with a series of their own; the rest are counted in ``upstream="_other"``.
MAX_LABELLED = 50
#: Missing upstreams remembered per host at most.
MAX_MISSING = 10_000
#: Characters of an upstream name in a label (Kubernetes caps port names at 15; a dev server may not).
MAX_NAME = 63
OTHER = "_other"
HELP = ("1 while the upstream (protocol:name) a Service port names is not declared (with a zone) on the "
        "NGINX Plus host, as the last sync this process made of it saw within 180 s; no series otherwise. "
        f"At most {MAX_LABELLED} upstreams per host by name, the others' number in upstream=\"{OTHER}\".")


def _name(upstream: str) -> str:
    return upstream[:MAX_NAME]


class MissingUpstreams:
    """Per-process map host -> upstream -> when its last sync here found it missing."""

    def __init__(self, expire: float = EXPIRE, max_hosts: int = MAX_HOSTS, max_missing: int = MAX_MISSING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._missing: dict[str, dict[str, float]] = {}
        self.expire, self.max_hosts, self.max_missing, self._clock = expire, max_hosts, max_missing, clock

    def missing(self, host: str, upstream: str) -> None:
        """A sync of ``upstream`` (``protocol:name``) to ``host`` found it undeclared."""
        with self._lock:
            upstreams = self._missing.get(host)
            if upstreams is None:
                if len(self._missing) >= self.max_hosts:
                    return
                upstreams = self._missing[host] = {}
            if upstream in upstreams or len(upstreams) < self.max_missing:
                upstreams[upstream] = self._clock()

    def found(self, host: str, upstream: str) -> None:
        """A sync of ``upstream`` to ``host`` got past it (it is declared)."""
        with self._lock:
            upstreams = self._missing.get(host)
            if upstreams is not None and upstreams.pop(upstream, None) is not None and not upstreams:
                del self._missing[host]

    def current(self) -> dict[str, list[str]]:
        """``{host: sorted missing upstreams}`` without the expired ones (which are dropped)."""
        horizon = self._clock() - self.expire
        out: dict[str, list[str]] = {}
        with self._lock:
            for host in list(self._missing):
                upstreams = self._missing[host]
                for upstream in [u for u, at in upstreams.items() if at < horizon]:
                    del upstreams[upstream]
                if upstreams:
                    out[host] = sorted(upstreams)
                else:
                    del self._missing[host]
        return out

    def samples(self, max_labelled: int = MAX_LABELLED) -> list[tuple[str, str, float]]:
        """``(host, upstream label, value)`` of the gauge: 1 per missing upstream, the first
        ``max_labelled`` per host by name, then one ``_other`` with the number of the rest."""
        out: list[tuple[str, str, float]] = []
        for host, upstreams in self.current().items():
            out += [(host, _name(u), 1.0) for u in upstreams[:max_labelled]]
            if len(upstreams) > max_labelled:
                out.append((host, OTHER, float(len(upstreams) - max_labelled)))
        return out


class MissingCollector(Collector):
    """``reconcilery_nginx_upstream_missing`` from a :class:`MissingUpstreams` at scrape time."""

    def __init__(self, state: MissingUpstreams) -> None:
        self.state = state

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield self._family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        for host, upstream, value in self.state.samples():
            family.add_metric([host, upstream], value)
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("reconcilery_nginx_upstream_missing", HELP, labels=["host", "upstream"])


class LabelBudget:
    """The ``upstream`` label of a counter, bounded: the first ``size`` names a process counts per host
    keep their (cut) name, later ones count as ``_other`` (a counter's series cannot expire)."""

    def __init__(self, size: int = MAX_LABELLED, max_hosts: int = MAX_HOSTS) -> None:
        self._lock = threading.Lock()
        self._named: dict[str, set[str]] = {}
        self.size, self.max_hosts = size, max_hosts

    def label(self, host: str, upstream: str) -> str:
        """The label value to count ``upstream`` of ``host`` under."""
        name = _name(upstream)
        with self._lock:
            named = self._named.get(host)
            if named is None:
                if len(self._named) >= self.max_hosts:
                    return OTHER
                named = self._named[host] = set()
            if name in named:
                return name
            if len(named) < self.size:
                named.add(name)
                return name
        return OTHER


#: The process's missing upstreams and its collector (registered once on the default registry).
MISSING = MissingUpstreams()
COLLECTOR = MissingCollector(MISSING)
with contextlib.suppress(ValueError):  # registered already (the module imported twice)
    REGISTRY.register(COLLECTOR)
#: The ``upstream`` label of ``reconcilery_nginx_upstream_missing_errors_total``.
ERROR_LABELS = LabelBudget()
