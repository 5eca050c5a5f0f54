"""Settings of the Cloud Resources domain, read from the environment once per process.

Each field maps to ``RECONCILERY_CLOUD_<FIELD IN UPPER CASE>`` (e.g. ``cyclic_min_interval`` is
``RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL``); the AWS fields read the variables the original reads
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ROLE_NAME``, ``AWS_PARTITION``) plus
``RECONCILERY_AWS_ENDPOINT_URL`` (moto's server locally). Defaults are the original's
(``pkg/skr/runtime/config``, ``pkg/util/timing.go``, ``pkg/kcp/scope``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from tasks.cloud import names


@dataclass(frozen=True)
class CloudSettings:
    """The domain's settings (seconds unless said otherwise)."""

    #: Divides every timing constant (the original's ``SetSpeedyTimingForTests`` divides by 100).
    time_scale: float = 1.0
    #: An SKR below the fleet-size threshold is revisited at least this far apart (``cyclicMinInterval``).
    cyclic_min_interval: float = 60.0
    #: Connect threads assumed by the threshold ``max(1, workers * min_interval / reconcile_timeout)``
    #: (``cyclicConcurrency``; set it to the ``cloud-skr`` pool's total concurrency).
    cyclic_workers: int = 1
    #: The window one connect runs the SKR reconcilers in (``reconcileTimeout``, 10 s).
    reconcile_timeout: float = 10.0
    #: A notification for an SKR is dropped while its last notification-driven connect ended less than
    #: this ago (``notifMinInterval``; 0 disables the limit).
    notif_min_interval: float = 10.0
    #: Deadline of one connect (``workerTimeout``, 10 min): the connect controller's ``timeout``.
    worker_timeout: float = 600.0
    #: Seconds between two looks of the sweep at the rotation (its key requeues itself this often).
    sweep_tick: float = 1.0
    #: Seconds between beat's (re)starts of the sweep (a no-op while it runs: its key is deduplicated).
    sweep_resync: float = 30.0
    #: An SKR dispatched this long ago whose connect never reported back is dispatched again.
    stranded_after: float = 900.0
    #: Per-request timeout (connect and read) of the short-lived SKR client.
    skr_request_timeout: float = 10.0
    #: Backoff of an SKR whose connect failed: ``min(cap, base * 2**(failures-1))``, on top of the
    #: rotation (the SKR stays in it).
    connect_backoff_base: float = 5.0
    connect_backoff_cap: float = 300.0
    #: Injected delay of every connect (benchmarks: the real world's 10-20 s connect).
    connect_delay: float = 0.0
    #: KCP namespace of Scopes, mirrors and kubeconfig Secrets.
    kcp_namespace: str = names.KCP_NAMESPACE
    #: Gardener project namespace when the Garden kubeconfig's context names none (``GARDENER_NAMESPACE``).
    gardener_namespace: str = names.DEFAULT_GARDENER_NAMESPACE
    #: Landscape (dev/stage/prod), for logs and SkrStatus (``LANDSCAPE``).
    landscape: str = "dev"
    #: Feature flag ``exposeData``: read NAT gateway IPs into the Scope and the SKR's ``kyma-info``.
    expose_data: bool = True
    #: Nuke the KCP objects of a runtime whose GardenerCluster is gone.
    nuke: bool = True
    #: SKR quota defaults (``resourceQuota.skr.defaults``): ``<lower(kind)>.<group>/totalCount`` -> n.
    quota_defaults: Mapping[str, int] = field(default_factory=lambda: {names.IPRANGE_QUOTA_KEY: 1})
    #: Per-kyma overrides (``resourceQuota.skr.overrides``): kyma -> {key: n}; JSON in the environment.
    quota_overrides: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: AWS: endpoint (moto locally; empty = AWS), static credentials, role to assume in the account.
    aws_endpoint_url: str = ""
    aws_access_key_id: str = "testing"
    aws_secret_access_key: str = "testing"
    aws_role_name: str = ""
    aws_partition: str = "aws"

    def t(self, seconds: float) -> float:
        """A timing constant scaled by :attr:`time_scale` (floor 1 ms, as the original's)."""
        return max(0.001, seconds / self.time_scale) if self.time_scale else seconds

    def quota(self, kyma: str, key: str) -> int | None:
        """The SKR quota of ``key`` for ``kyma`` (override, else default); ``None`` = unlimited."""
        override = (self.quota_overrides.get(kyma) or {}).get(key)
        if override is not None:
            return int(override)
        value = self.quota_defaults.get(key)
        return None if value is None else int(value)


_ENV_ALIASES = {
    "aws_endpoint_url": ("RECONCILERY_AWS_ENDPOINT_URL",),
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_role_name": ("AWS_ROLE_NAME",),
    "aws_partition": ("AWS_PARTITION",),
    "gardener_namespace": ("GARDENER_NAMESPACE",),
    "landscape": ("LANDSCAPE",),
}


def _parse(raw: str, kind: Any, name: str) -> Any:
    try:
        if kind in (bool, "bool"):
            return raw.strip().lower() in ("1", "true", "yes", "on")
        if kind in (int, "int"):
            return int(raw)
        if kind in (float, "float"):
            return float(raw)
        if kind in (str, "str"):
            return raw
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: {exc}") from exc


def load(environ: Mapping[str, str] | None = None) -> CloudSettings:
    """Settings from ``environ`` (default ``os.environ``). Raises ``ValueError`` naming a bad variable."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for f in fields(CloudSettings):
        for name in (f"RECONCILERY_CLOUD_{f.name.upper()}", *_ENV_ALIASES.get(f.name, ())):
            if name in env and env[name] != "":
                values[f.name] = _parse(env[name], f.type, name)
                break
    return CloudSettings(**values)


_current: list[CloudSettings] = []


def current() -> CloudSettings:
    """This process's settings (read on first use)."""
    if not _current:
        _current.append(load())
    return _current[0]


def override(settings: CloudSettings | None) -> None:
    """Replace this process's settings (tests, benchmarks); ``None`` re-reads the environment on next use."""
    _current.clear()
    if settings is not None:
        _current.append(settings)
