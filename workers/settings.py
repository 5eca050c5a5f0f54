"""Process settings of the engine (workers, watchers, beat), read from the environment with local defaults.

Every field maps to ``RECONCILERY_<FIELD NAME IN UPPER CASE>``; e.g. ``redis_url`` is
``RECONCILERY_REDIS_URL``. Values are read by :func:`load` (any mapping) or, once per process, by
:func:`current`; see :mod:`config` for blank values, seconds and flags.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from config import Flag, Port, Seconds, SettingsError, cached
from config import Settings as _Base


class EngineSettings(_Base):
    """Reconcilery's process settings (``RECONCILERY_*``)."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_")

    redis_url: str = Field("redis://127.0.0.1:6379/0",
                           description="Redis for the workqueue, the Celery broker and RedBeat.")
    redis_shard_urls: str = Field("", description=(
        "Comma-separated Redis URLs the workqueue's keys are spread over (each key on crc32(key) mod N, "
        ":mod:`workers.sharded`; list ``redis_url`` first). Empty: the workqueue on ``redis_url`` alone. The "
        "Celery broker, RedBeat and the SKR rotation stay on ``redis_url``; change the count only with the "
        "queues drained."))
    redis_password: str = Field("", repr=False, description=(
        "Redis password when the URL carries none (a Kubernetes Secret can hold it while the URL sits in a "
        "ConfigMap)."))
    redis_sentinel_password: str = Field("", repr=False, description="Password of the Redis Sentinels.")
    redis_master_name: str = Field("", description=(
        "Sentinel master name when the URL's ``master_name`` gives none (default ``mymaster``)."))
    visibility_timeout: Seconds = Field(60.0, description=(
        "Seconds after which kombu redelivers an unacknowledged Celery message (resync and beat tasks; "
        "reconciles do not travel as Celery messages). Must exceed ``task_time_limit``."))
    task_time_limit: Seconds = Field(50.0, description="Hard time limit of one Celery task (seconds; resync "
                                                       "tasks, not reconciles).")
    task_soft_time_limit: Seconds = Field(45.0, description="Soft time limit of one Celery task (seconds).")
    reconcile_timeout: Seconds = Field(30.0, description=(
        "Deadline of a reconcile whose controller sets no ``timeout`` (seconds). Enforced cooperatively: "
        "requests through ``kube`` are bounded by what is left; past it the reconcile ends as an error "
        "with backoff."))
    lease_seconds: Seconds = Field(10.0, description="Seconds a key's lease lasts without renewal: a dead "
                                                     "worker's key is recovered after it.")
    idle_wait: Seconds = Field(2.0, description=(
        "Longest block of an idle dispatcher on the wake-up lists (seconds): a lapsed lease or a repaired "
        "ready entry is noticed within about this long."))
    hung_grace: Seconds = Field(120.0, description=(
        "Seconds past its deadline after which a reconcile still running counts as stuck (its worker stops "
        "its heartbeat, so the liveness probe restarts it; its key is never handed on meanwhile)."))
    heartbeat_file: str = Field("/tmp/reconcilery-worker.heartbeat", description=(
        "File a worker touches while healthy (``reconcilery probe worker`` checks its age)."))
    task_events: Flag = Field(True, description="Send Celery task events (Flower needs them; they cost about "
                                                "40% of throughput).")
    metrics_port: Port = Field(0, description=(
        "Port of the Prometheus metrics endpoint of a worker or beat process (0 = off). A worker serves it from "
        "its main process, where its reconciles run whatever ``--pool``; with ``--pool prefork`` the resync tasks' "
        "own counts (``workqueue_adds_total`` of resyncs) stay in the pool's children and are not served."))
    metrics_bind_address: str = Field("0.0.0.0", description=(
        "Address the metrics endpoint of a worker or beat listens on (``reconcilery up``: ``127.0.0.1``)."))
    domains: str = Field("", description=(
        "Comma-separated modules that register controllers (empty: every installed domain's, found through the "
        "entry point group ``reconcilery.domains``, see :mod:`workers.domains`)."))
    watch_modules: str = Field("", description=(
        "Comma-separated modules whose ``registrations()`` ``reconcilery watch`` runs (empty: every domain's)."))
    redbeat_lock_timeout: Seconds = Field(30.0, description=(
        "Seconds RedBeat's lock lives; a standby beat takes over after it when the active one dies."))
    redis_check_interval: Seconds = Field(2.0, description=(
        "Seconds between checks for a Redis that restarted (watchers, dispatchers, beat)."))

    max_lapses: int = Field(3, ge=0, description=(
        "Lease lapses in a row (the key's reconcile took its worker down) after which the key is parked until "
        "a fresh enqueue (a watch event, ``reconcilery enqueue``); 0 never parks."))
    redis_username: str = Field("", description=(
        "Redis ACL user when the URL carries none (each component may have its own, deploy/)."))

    @model_validator(mode="after")
    def _consistent(self) -> EngineSettings:
        if self.task_time_limit >= self.visibility_timeout:
            raise ValueError("RECONCILERY_TASK_TIME_LIMIT must be below RECONCILERY_VISIBILITY_TIMEOUT")
        return self

    @property
    def domain_modules(self) -> tuple[str, ...]:
        """``domains`` as a tuple of module names."""
        return tuple(m.strip() for m in self.domains.split(",") if m.strip())


def load(environ: Mapping[str, str] | None = None) -> EngineSettings:
    """Settings from ``environ`` (default ``os.environ``). Raises :class:`config.SettingsError` (a
    ``ValueError``) naming a bad variable."""
    return EngineSettings.load(environ)


#: This process's settings, read on first use (``current.override(None)`` or ``config.reset()`` forgets them).
current = cached(EngineSettings)

__all__ = ["EngineSettings", "SettingsError", "current", "load"]
