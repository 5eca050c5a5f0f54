"""Process settings, read from the environment with local defaults.

Every field maps to ``RECONCILERY_<FIELD NAME IN UPPER CASE>``; e.g. ``redis_url`` is
``RECONCILERY_REDIS_URL``. Values are parsed once per process by :func:`load`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

#: One Celery queue per domain, so each worker pool scales on its own.
QUEUES: tuple[str, ...] = ("apigateway", "cloud-skr", "cloud-kcp", "nginx", "snatch")


@dataclass(frozen=True)
class Settings:
    """Reconcilery's process settings."""

    #: Redis for the workqueue, the Celery broker and RedBeat.
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: kubeconfig of the local cluster; empty means in-cluster config, else ``~/.kube/config``.
    kubeconfig: str = ""
    #: Seconds after which kombu redelivers an unacknowledged Celery message (resync and beat
    #: tasks; reconciles do not travel as Celery messages). Must exceed ``task_time_limit``.
    visibility_timeout: float = 60.0
    #: Hard time limit of one Celery task (seconds; resync tasks, not reconciles).
    task_time_limit: float = 50.0
    #: Soft time limit of one Celery task (seconds).
    task_soft_time_limit: float = 45.0
    #: Deadline of a reconcile whose controller sets no ``timeout`` (seconds). Enforced
    #: cooperatively: requests through ``kube`` are bounded by what is left; past it the reconcile
    #: ends as an error with backoff.
    reconcile_timeout: float = 30.0
    #: Seconds a key's lease lasts without renewal: a dead worker's key is recovered after it.
    lease_seconds: float = 10.0
    #: Longest block of an idle dispatcher on the wake-up lists (seconds): a lapsed lease or a
    #: repaired ready entry is noticed within about this long.
    idle_wait: float = 2.0
    #: Seconds past its deadline after which a reconcile still running counts as stuck (its worker
    #: stops its heartbeat, so the liveness probe restarts it; its key is never handed on meanwhile).
    hung_grace: float = 120.0
    #: File a worker touches while healthy (``reconcilery probe worker`` checks its age).
    heartbeat_file: str = "/tmp/reconcilery-worker.heartbeat"
    #: Send Celery task events (Flower needs them; they cost about 40% of throughput).
    task_events: bool = True
    #: Port of the Prometheus metrics endpoint of a worker or watcher process (0 = off).
    metrics_port: int = 0
    #: Comma-separated modules that register controllers (empty: every installed domain's, found
    #: through the entry point group ``reconcilery.domains``, see :mod:`workers.domains`).
    domains: str = ""
    #: Comma-separated modules whose ``REGISTRATIONS`` ``reconcilery watch`` runs (empty: every
    #: domain's).
    watch_modules: str = ""
    #: Seconds RedBeat's lock lives; a standby beat takes over after it when the active one dies.
    redbeat_lock_timeout: float = 30.0
    #: Seconds between checks for a Redis that restarted (watchers, dispatchers, beat).
    redis_check_interval: float = 2.0
    #: Lease lapses in a row (the key's reconcile took its worker down) after which the key is
    #: parked until a fresh enqueue (a watch event, ``reconcilery enqueue``); 0 never parks.
    max_lapses: int = 3
    #: Objects per list page asked of a remote (untrusted) cluster such as an SKR.
    remote_list_page_size: int = 500
    #: Objects per list (all pages) read from a remote cluster; past it the read fails.
    remote_list_max_objects: int = 10_000
    #: Bytes per list (all pages) and per answer read from a remote cluster; past it the read fails.
    remote_list_max_bytes: int = 64 * 2**20

    @property
    def domain_modules(self) -> tuple[str, ...]:
        """``domains`` as a tuple of module names."""
        return tuple(m.strip() for m in self.domains.split(",") if m.strip())


def _coerce(raw: str, kind: type) -> object:
    if kind is bool:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return kind(raw)


def load(environ: dict[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default ``os.environ``). Raises ``ValueError`` naming a bad variable."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(Settings):
        name = f"RECONCILERY_{f.name.upper()}"
        if name in env:
            kind = {"str": str, "float": float, "int": int, "bool": bool}[str(f.type)]
            try:
                values[f.name] = _coerce(env[name], kind)
            except ValueError as exc:
                raise ValueError(f"{name}={env[name]!r}: expected {kind.__name__}") from exc
    settings = Settings(**values)  # type: ignore[arg-type]
    if settings.task_time_limit >= settings.visibility_timeout:
        raise ValueError("RECONCILERY_TASK_TIME_LIMIT must be below RECONCILERY_VISIBILITY_TIMEOUT")
    return settings
