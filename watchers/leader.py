"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` (and so
controller-runtime) does it: only the holder of the Lease runs the watches, so two watcher replicas
never both enqueue, and a standby takes over when the leader dies.

- A candidate tries every ``retry_period`` (2 s) to take the Lease: it creates it, or updates it
  (optimistic concurrency on ``resourceVersion``) when it is free (no holder) or expired. Expiry is
  judged on the local clock, as client-go does: the record must stay unchanged for
  ``lease_duration`` (15 s) since this candidate *observed* it, so clock skew between nodes is harmless.
- The leader renews every ``retry_period``; when no renewal succeeds for ``renew_deadline`` (10 s)
  it has lost the Lease: :meth:`LeaderElector.run` calls ``on_stopped_leading`` and returns ``False``
  (``reconcilery watch`` then exits non-zero and Kubernetes restarts it, as controller-runtime does).
- On a normal stop the leader releases the Lease (empty holder, ``leaseDurationSeconds: 1``), so
  the standby takes over at its next try instead of after ``lease_duration``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kube import ApiError, Conflict, Kube, resources
from watchers import settings

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def micro_time(ts: float | None = None) -> str:
    """A Kubernetes ``MicroTime`` (RFC 3339, microseconds, UTC) of ``ts`` (default: now)."""
    moment = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """``<hostname>_<pid>_<random>``: unique per process (the Pod name is the hostname in a cluster)."""
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def default_namespace(environ: dict[str, str] | None = None) -> str:
    """``POD_NAMESPACE``, else the in-cluster service account's namespace, else ``default``."""
    namespace = (settings.current() if environ is None else settings.WatchSettings.load(environ)).pod_namespace
    if namespace:
        return namespace
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where the Lease lives and the timings (seconds; controller-runtime's defaults)."""

    namespace: str
    name: str = "reconcilery-watch"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("leader election needs lease_duration > renew_deadline > retry_period > 0")


class LeaderElector:
    """Campaigns for one Lease through ``kube`` and runs the callbacks of leadership.

    Args:
        kube: the cluster's client (needs get/create/update on leases in ``config.namespace``).
        config: the Lease and the timings.
        on_started_leading: called (in the calling thread of :meth:`run`) once the Lease is held.
        on_stopped_leading: called once when leadership ends (lost or released).
    """

    def __init__(self, kube: Kube, config: LeaderElectionConfig, on_started_leading: Callable[[], None],
                 on_stopped_leading: Callable[[], None]) -> None:
        self.kube = kube
        self.config = config
        self.identity = config.identity or default_identity()
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.leading = threading.Event()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._observed_rv = ""

    # ---- one attempt -----------------------------------------------------------------------

    def _record(self, lease: dict[str, Any]) -> dict[str, Any]:
        return dict(lease.get("spec") or {})

    def try_acquire_or_renew(self, now: float | None = None) -> bool:
        """One client-go ``tryAcquireOrRenew``: ``True`` when this candidate holds the Lease after it.
        API errors are logged and count as not holding."""
        now = time.monotonic() if now is None else now
        cfg = self.config
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": max(1, round(cfg.lease_duration)),
                "renewTime": micro_time()}
        try:
            lease = self.kube.get(resources.LEASE, cfg.name, cfg.namespace)
            if lease is None:
                spec.update(acquireTime=spec["renewTime"], leaseTransitions=0)
                self.kube.create(resources.LEASE, {"metadata": {"name": cfg.name, "namespace": cfg.namespace},
                                                   "spec": spec})
                self._observe(spec, "", now)
                return True
            record = self._record(lease)
            rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
            if record != self._observed or rv != self._observed_rv:
                self._observe(record, rv, now)
            holder = record.get("holderIdentity") or ""
            duration = float(record.get("leaseDurationSeconds") or cfg.lease_duration)
            if holder and holder != self.identity and self._observed_at + duration > now:
                return False  # held by another candidate, not expired
            if holder == self.identity:
                spec.update(acquireTime=record.get("acquireTime") or spec["renewTime"],
                            leaseTransitions=int(record.get("leaseTransitions") or 0))
            else:
                transitions = int(record.get("leaseTransitions") or 0) + 1
                spec.update(acquireTime=spec["renewTime"], leaseTransitions=transitions)
            updated = self.kube.replace(resources.LEASE, {**lease, "spec": spec})
            self._observe(spec, str((updated.get("metadata") or {}).get("resourceVersion") or ""), now)
            return True
        except Conflict:
            return False  # another candidate wrote first
        except ApiError as exc:
            log.warning("leader election: lease %s/%s: %s", cfg.namespace, cfg.name, exc)
            return False

    def _observe(self, record: dict[str, Any], rv: str, now: float) -> None:
        self._observed, self._observed_rv, self._observed_at = dict(record), rv, now

    def release(self) -> None:
        """Give the Lease up (if still held): empty holder and a 1 s duration, as client-go's
        ``ReleaseOnCancel``."""
        cfg = self.config
        try:
            lease = self.kube.get(resources.LEASE, cfg.name, cfg.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            spec = {**(lease.get("spec") or {}), "holderIdentity": "", "leaseDurationSeconds": 1,
                    "renewTime": micro_time()}
            self.kube.replace(resources.LEASE, {**lease, "spec": spec})
            log.info("leader election: released lease %s/%s identity=%s", cfg.namespace, cfg.name, self.identity)
        except ApiError as exc:
            log.warning("leader election: release of %s/%s failed: %s", cfg.namespace, cfg.name, exc)

    # ---- the loop --------------------------------------------------------------------------

    def run(self, stop: threading.Event, while_leading: Callable[[], None] | None = None) -> bool:
        """Campaign until leader, lead until ``stop`` is set or the Lease is lost. Returns ``True``
        after a normal stop (the Lease released), ``False`` when leadership was lost.
        ``while_leading`` is called after every renewal attempt while leading (every retry period)."""
        cfg = self.config
        log.info("leader election: candidate identity=%s lease=%s/%s", self.identity, cfg.namespace, cfg.name)
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            stop.wait(cfg.retry_period)
        else:
            return True
        log.info("leader election: leading identity=%s lease=%s/%s", self.identity, cfg.namespace, cfg.name)
        self.leading.set()
        last_renew = time.monotonic()
        lost = False
        try:
            self.on_started_leading()
            while not stop.wait(cfg.retry_period):
                if self.try_acquire_or_renew():
                    last_renew = time.monotonic()
                    if while_leading is not None:
                        while_leading()
                elif time.monotonic() - last_renew > cfg.renew_deadline:
                    lost = True
                    log.error("leader election: lost lease %s/%s identity=%s (no renewal for %.0f s)",
                              cfg.namespace, cfg.name, self.identity, cfg.renew_deadline)
                    return False
            return True
        finally:
            self.leading.clear()
            self.on_stopped_leading()
            if not lost:
                self.release()


__all__ = ["LeaderElectionConfig", "LeaderElector", "default_identity", "default_namespace", "micro_time"]
