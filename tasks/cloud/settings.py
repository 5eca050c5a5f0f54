"""Settings of the Cloud Resources domain, read from the environment once per process through :mod:`config`.

Each field maps to ``RECONCILERY_CLOUD_<FIELD IN UPPER CASE>`` (e.g. ``cyclic_min_interval`` is
``RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL``); the AWS fields read the variables the original reads
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ROLE_NAME``, ``AWS_PARTITION``) plus
``RECONCILERY_AWS_ENDPOINT_URL`` (moto's server locally); the GCP and Azure clients' variables are the
original's too (``GCP_SA_JSON_KEY_PATH``, ``GCP_RETRY_WAIT_DURATION``, ``AZURE_TENANT_ID``,
``AZURE_CLIENT_ID``, ``AZURE_CLIENT_SECRET``) plus ``RECONCILERY_GCP_ENDPOINT_URL`` and
``RECONCILERY_AZURE_ENDPOINT_URL``. Defaults are the original's
(``pkg/skr/runtime/config``, ``pkg/util/timing.go``, ``pkg/kcp/scope``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AliasChoices, BeforeValidator, Field
from pydantic_settings import SettingsConfigDict

import config
from config import Flag, Json, Seconds
from tasks.cloud import names

_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")


def go_duration(value: Any) -> float:
    """A Go duration (``5s``, ``500ms``, ``1h30m``: ``time.ParseDuration``'s units) or plain seconds as
    seconds >= 0. Raises ``ValueError``."""
    if isinstance(value, str):
        raw = value.strip()
        try:
            value = float(raw)
        except ValueError:
            parts = _GO_PART.findall(raw)
            if not parts or "".join(n + u for n, u in parts) != raw:
                raise ValueError("expected a duration such as 5s or 500ms, or seconds") from None
            value = sum(float(n) * _GO_UNITS[u] for n, u in parts)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ValueError("expected a duration such as 5s or 500ms, or seconds (>= 0)")
    return float(value)


#: Seconds written as a Go duration (``GCP_RETRY_WAIT_DURATION``).
GoDuration = Annotated[float, BeforeValidator(go_duration)]


def _env(field: str, *aliases: str) -> AliasChoices:
    """``RECONCILERY_CLOUD_<FIELD>``, then the original's variables."""
    return AliasChoices(f"RECONCILERY_CLOUD_{field.upper()}", *aliases)


class CloudSettings(config.Settings):
    """The domain's settings (seconds unless said otherwise)."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_CLOUD_")

    time_scale: float = Field(1.0, ge=0, description=(
        "Divides every timing constant (the original's ``SetSpeedyTimingForTests`` divides by 100)."))
    cyclic_min_interval: Seconds = Field(60.0, description=(
        "An SKR below the fleet-size threshold is revisited at least this far apart (``cyclicMinInterval``)."))
    cyclic_workers: int = Field(1, description=(
        "Connect threads assumed by the threshold ``max(1, workers * min_interval / reconcile_timeout)`` "
        "(``cyclicConcurrency``; set it to the ``cloud-skr`` pool's total concurrency)."))
    reconcile_timeout: Seconds = Field(10.0, description=(
        "The window one connect runs the SKR reconcilers in (``reconcileTimeout``, 10 s)."))
    notif_min_interval: Seconds = Field(10.0, description=(
        "A notification for an SKR is dropped while its last notification-driven connect ended less than this "
        "ago (``notifMinInterval``; 0 disables the limit)."))
    listener_cert_file: str = Field("", description=(
        "PEM server certificate (chain) the skr-listener serves TLS 1.3 with (``tls.crt`` of a cert-manager "
        "Secret). Empty: the listener serves its probes over plain HTTP only and answers every event 401."))
    listener_key_file: str = Field("", description="PEM private key of ``listener_cert_file`` (``tls.key``).")
    listener_client_ca_file: str = Field("", description=(
        "PEM CA bundle the SKRs' client certificates are verified against (KLM's runtime-watcher CA); the SKR's "
        "kyma name is the verified certificate's subject CN. Required with ``listener_cert_file``."))
    listener_trust_xfcc: Flag = Field(False, description=(
        "Take the SKR's certificate from ``X-Forwarded-Client-Cert`` (set by a trusted proxy such as Istio that "
        "verified it); the proxy itself must present a client certificate verified against "
        "``listener_client_ca_file``. Off: the header is ignored."))
    listener_proxy_names: str = Field("", description=(
        "With ``listener_trust_xfcc``: comma-separated names of the trusted proxy, one of which its verified client "
        "certificate must carry as subject CN or DNS SAN (production: ``istio-ingressgateway.istio-system``, the "
        "gateway's Certificate). Any other certificate of the CA is not the proxy; empty: every event is 401."))
    listener_max_connections: int = Field(32, ge=1, description=(
        "Connections the skr-listener serves at once; past it a connection is answered 503 (or closed)."))
    listener_request_timeout: Seconds = Field(10.0, description=(
        "Seconds one connection of the skr-listener gets in all: TLS handshake, headers and body (408/closed)."))
    worker_timeout: Seconds = Field(600.0, description=(
        "Deadline of one connect (``workerTimeout``, 10 min): the connect controller's ``timeout``."))
    sweep_tick: Seconds = Field(1.0, description=(
        "Seconds between two looks of the sweep at the rotation (its key requeues itself this often)."))
    sweep_resync: Seconds = Field(30.0, description=(
        "Seconds between beat's (re)starts of the sweep (a no-op while it runs: its key is deduplicated)."))
    stranded_after: Seconds = Field(900.0, description=(
        "An SKR dispatched this long ago whose connect never reported back is dispatched again."))
    skr_request_timeout: Seconds = Field(10.0, description=(
        "Per-request timeout (connect and read) of the short-lived SKR client."))
    connect_backoff_base: Seconds = Field(5.0, description=(
        "First backoff of an SKR whose connect failed: ``min(cap, base * 2**(failures-1))``, on top of the "
        "rotation (the SKR stays in it)."))
    connect_backoff_cap: Seconds = Field(300.0, description="Longest backoff of an SKR whose connect failed.")
    connect_delay: Seconds = Field(0.0, description=(
        "Injected delay of every connect (benchmarks: the real world's 10-20 s connect)."))
    metrics_subscription_label: Flag = Field(False, description=(
        "Fill the ``subscription`` label of ``cloud_manager_cloud_provider_api_call_total`` with the AWS account, "
        "GCP project or Azure subscription of each call (one series per tenant: cardinality grows with the "
        "fleet). Off: the label is empty."))
    revisit_target: Seconds = Field(300.0, description=(
        "The SKR fleet's target revisit interval (exported as ``reconcilery_cloud_skr_revisit_target_seconds``, "
        "the line the revisit-interval alert compares against; changes no behaviour)."))
    kcp_namespace: str = Field(names.KCP_NAMESPACE, description="KCP namespace of Scopes, mirrors and kubeconfig "
                                                                "Secrets.")
    gardener_namespace: str = Field(names.DEFAULT_GARDENER_NAMESPACE, validation_alias=_env(
        "gardener_namespace", "GARDENER_NAMESPACE"), description=(
        "Gardener project namespace when the Garden kubeconfig's context names none (``GARDENER_NAMESPACE``)."))
    landscape: str = Field("dev", validation_alias=_env("landscape", "LANDSCAPE"), description=(
        "Landscape (dev/stage/prod), for logs and SkrStatus (``LANDSCAPE``)."))
    expose_data: Flag = Field(True, description=(
        "Feature flag ``exposeData``: read NAT gateway IPs into the Scope and the SKR's ``kyma-info``."))
    nuke: Flag = Field(True, description="Nuke the KCP objects of a runtime whose GardenerCluster is gone.")
    quota_defaults: Json[Mapping[str, int]] = Field(default_factory=dict, description=(
        "SKR quota defaults (``resourceQuota.skr.defaults``) as JSON: ``<lower(kind)>.<group>/totalCount`` -> n; "
        "a key not given keeps its kind's declared default (IpRange 1; Aws/GcpNfsVolume, each Redis instance and "
        "VPC peering kind 5)."))
    quota_overrides: Json[Mapping[str, Mapping[str, int]]] = Field(default_factory=dict, description=(
        "Per-kyma overrides (``resourceQuota.skr.overrides``) as JSON: kyma -> {key: n}."))
    redis_instance_tier_machine_types: Json[Mapping[str, str]] = Field(default_factory=dict, description=(
        "``redisInstanceTierMachineTypes`` as JSON: AwsRedisInstance tier -> ElastiCache cache node type, over "
        "the built-in table per tier (e.g. ``{\"S1\": \"cache.t3.micro\"}``)."))
    redis_cluster_tier_machine_types: Json[Mapping[str, str]] = Field(default_factory=dict, description=(
        "``redisClusterTierMachineTypes`` as JSON: AwsRedisCluster tier -> ElastiCache cache node type, over "
        "the built-in table per tier (e.g. ``{\"C1\": \"cache.t3.micro\"}``)."))
    aws_endpoint_url: str = Field("", validation_alias=_env("aws_endpoint_url", "RECONCILERY_AWS_ENDPOINT_URL"),
                                  description="AWS endpoint (moto's server locally; empty = AWS).")
    aws_access_key_id: str = Field("testing", validation_alias=_env("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
                                   description="AWS static credentials: access key id.")
    aws_secret_access_key: str = Field("testing", validation_alias=_env("aws_secret_access_key",
                                                                        "AWS_SECRET_ACCESS_KEY"),
                                       description="AWS static credentials: secret access key.", repr=False)
    aws_role_name: str = Field("", validation_alias=_env("aws_role_name", "AWS_ROLE_NAME"),
                               description="AWS role to assume in the customer's account.")
    aws_partition: str = Field("aws", validation_alias=_env("aws_partition", "AWS_PARTITION"),
                               description="AWS partition of role ARNs.")
    aws_peering_role_name: str = Field("CloudManagerPeeringRole", validation_alias=_env(
        "aws_peering_role_name", "AWS_PEERING_ROLE_NAME"), description=(
        "AWS role assumed for VPC peering, in the Scope's account and in the customer's (remote) account "
        "(``AWS_PEERING_ROLE_NAME``; the customer creates it, see docs/cloud.md)."))
    aws_peering_access_key_id: str = Field("", validation_alias=_env(
        "aws_peering_access_key_id", "AWS_PEERING_ACCESS_KEY_ID"), description=(
        "Static key the peering role is assumed with (``AWS_PEERING_ACCESS_KEY_ID``; empty: ``AWS_ACCESS_KEY_ID``)."))
    aws_peering_secret_access_key: str = Field("", validation_alias=_env(
        "aws_peering_secret_access_key", "AWS_PEERING_SECRET_ACCESS_KEY"), repr=False, description=(
        "Secret of ``aws_peering_access_key_id`` (``AWS_PEERING_SECRET_ACCESS_KEY``; empty: "
        "``AWS_SECRET_ACCESS_KEY``)."))
    peering_network_tag: str = Field("", validation_alias=_env("peering_network_tag", "PEERING_NETWORK_TAG"),
                                     description=(
        "Tag key a customer's remote network may carry instead of the shoot name to allow an AWS or Azure VPC "
        "peering (``PEERING_NETWORK_TAG``; empty: only the shoot name). Not on GCP: there the key must be the "
        "shoot name (one landscape-wide key would open a network to every tenant)."))
    efs_capacity_check_interval: GoDuration = Field(3600.0, validation_alias=_env(
        "efs_capacity_check_interval", "AWS_EFS_CAPACITY_CHECK_INTERVAL"), description=(
        "How often a Ready AWS NfsInstance re-reads its file system's size into ``status.capacity`` "
        "(``EfsCapacityCheckInterval``; Go durations such as ``1h`` accepted)."))
    gcp_endpoint_url: str = Field("", validation_alias="RECONCILERY_GCP_ENDPOINT_URL", description=(
        "GCP Compute endpoint (the stand-in locally; empty = Google's)."))
    gcp_sa_json_key_path: str = Field("", validation_alias="GCP_SA_JSON_KEY_PATH", description=(
        "Service account key file of the GCP client (empty: application default credentials)."))
    gcp_retry_wait: GoDuration = Field(5.0, validation_alias="GCP_RETRY_WAIT_DURATION", description=(
        "``GcpRetryWaitTime``: how long to wait for a running GCP operation (Go duration such as ``5s`` / "
        "``500ms``, or seconds)."))
    azure_endpoint_url: str = Field("", validation_alias="RECONCILERY_AZURE_ENDPOINT_URL", description=(
        "Azure Resource Manager endpoint (the stand-in locally; empty = Azure's)."))
    azure_tenant_id: str = Field("", validation_alias="AZURE_TENANT_ID", description=(
        "Azure tenant of the client credentials (empty: the Scope's)."))
    azure_client_id: str = Field("", validation_alias="AZURE_CLIENT_ID", description="Azure client id.")
    azure_client_secret: str = Field("", validation_alias="AZURE_CLIENT_SECRET", description="Azure client secret.",
                                     repr=False)
    azure_peering_client_id: str = Field("", validation_alias="AZURE_PEERING_CLIENT_ID", description=(
        "Azure client id of VPC peerings (a service principal in both tenants; empty: ``AZURE_CLIENT_ID``)."))
    azure_peering_client_secret: str = Field("", validation_alias="AZURE_PEERING_CLIENT_SECRET", description=(
        "Azure client secret of VPC peerings (empty: ``AZURE_CLIENT_SECRET``)."), repr=False)

    def t(self, seconds: float) -> float:
        """A timing constant scaled by :attr:`time_scale` (floor 1 ms, as the original's)."""
        return max(0.001, seconds / self.time_scale) if self.time_scale else seconds

    def quota(self, kyma: str, key: str, declared: int | None = None) -> int | None:
        """The SKR quota of ``key`` for ``kyma``: the override, else the configured default, else
        ``declared`` (the kind's, :func:`tasks.cloud.registry.quota_default`); ``None`` = unlimited."""
        override = (self.quota_overrides.get(kyma) or {}).get(key)
        if override is not None:
            return int(override)
        value = self.quota_defaults.get(key, declared)
        return None if value is None else int(value)


def load(environ: Mapping[str, str] | None = None) -> CloudSettings:
    """Settings from ``environ`` (default ``os.environ``). Raises :class:`config.SettingsError` (a
    ``ValueError``) naming a bad variable."""
    return CloudSettings.load(environ)


_current = config.cached(CloudSettings)


def current() -> CloudSettings:
    """This process's settings (read on first use)."""
    return _current()


def override(settings: CloudSettings | None) -> None:
    """Replace this process's settings (tests, benchmarks); ``None`` re-reads the environment on next use."""
    _current.override(settings)
