"""``reconcilery render rediscluster``: what SKR Redis clusters would create, offline (pure).

For each ``AwsRedisCluster`` / ``AzureRedisCluster`` / ``GcpRedisCluster`` with a KCP Scope: the tier mapping
of :mod:`tasks.cloud.skr.rediscluster_tiers` (an unknown tier, a kind of another provider than the Scope's,
or ``authSecret.extraData`` beyond its bounds is an Error with the SKR plan's words), the KCP mirror the SKR
loop would create (:func:`tasks.cloud.skr.rediscluster_plan.mirror`: a ``RedisCluster``, or for GCP a
``GcpRedisCluster``, named ``<id>`` until the object has a ``status.id``), the cluster's shape in one line
and the auth Secret's keys (the original's per provider).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.redis_common_render import defaulted, refusal, scope_facts, secret_line, where
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr.defaultiprange_plan import wanted
from tasks.cloud.skr.rediscluster_plan import (
    DEFAULT_SUBNET,
    GCP_KINDS,
    KCP_KINDS,
    KINDS,
    mirror,
    subnet_reference,
)
from tasks.cloud.skr.rediscluster_tiers import UNKNOWN_TIER_MESSAGES, desired_for

__all__ = ["SECRET_KEYS", "RenderedRedisCluster", "cluster_plan", "render_clusters"]

#: The auth Secret's keys per provider (``getAuthSecretBaseData``; ``authString`` when auth is on).
SECRET_KEYS: Mapping[str, str] = {
    "aws": "discoveryEndpoint host port authString",
    "azure": "primaryEndpoint host port readEndpoint readHost readPort authString",
    "gcp": "discoveryEndpoint host port authString CaCert.pem",
}


@dataclass(frozen=True)
class RenderedRedisCluster(Rendered):
    """One SKR Redis cluster's outcome: ``state`` (``Ready`` when it would be provisioned, else ``Error``),
    the KCP mirror (``kcp``) and what would be made (``plan``, one per line)."""

    provider: str = ""
    kcp: dict[str, Any] = field(default_factory=dict)
    plan: list[str] = field(default_factory=list)


def cluster_plan(provider: str, kcp: Mapping[str, Any]) -> list[str]:
    """The cluster the KCP mirror ``kcp`` asks ``provider`` for, in one line."""
    spec = kcp.get("spec") or {}
    if provider == "gcp":
        return [f"Memorystore for Redis Cluster: {spec.get('nodeType')}, {spec.get('shardCount')} shard(s), "
                f"{spec.get('replicasPerShard')} replica(s) per shard, on GcpSubnet {spec['subnet']['name']}"]
    inst = (spec.get("instance") or {}).get(provider) or {}
    if provider == "aws":
        return [f"ElastiCache replication group in cluster mode: {inst.get('cacheNodeType')}, engine "
                f"{inst.get('engineVersion')}, {inst.get('shardCount')} shard(s), {inst.get('replicasPerShard')} "
                f"replica(s) per shard, auth {'on' if inst.get('authEnabled') else 'off'}, on the IpRange's subnets"]
    return [f"Azure Cache for Redis Premium P{(inst.get('sku') or {}).get('capacity')}: {inst.get('shardCount')} "
            f"shard(s), {inst.get('replicasPerPrimary')} replica(s) per primary, private endpoint and DNS zone group"]


def render_clusters(scope: Mapping[str, Any], objects: Sequence[Mapping[str, Any]],
                    overrides: Mapping[str, str] | None = None) -> list[RenderedRedisCluster]:
    """The outcome of every SKR Redis cluster in ``objects`` with ``scope`` (``overrides``: the AWS
    ``redisClusterTierMachineTypes``)."""
    provider, kyma, namespace = scope_facts(scope)
    kinds = {res.kind: p for p, res in {**KINDS, **GCP_KINDS}.items()}
    out: list[RenderedRedisCluster] = []
    for obj in objects:
        ref, kind = where(obj)
        desired = desired_for(provider, obj.get("spec") or {}, overrides) if kinds.get(kind) == provider else None
        refused = refusal(obj, provider, kinds, desired, UNKNOWN_TIER_MESSAGES)
        if refused is not None or desired is None:
            out.append(RenderedRedisCluster(ref, kind, names.STATE_ERROR, refused or "", provider))
            continue
        ident, body = defaulted(obj)
        network = (f"<id of GcpSubnet {subnet_reference(obj) or DEFAULT_SUBNET}>" if provider == "gcp"
                   else f"<id of IpRange {wanted(obj)}>")
        kcp = mirror(body, provider, ident, kyma, namespace, network, desired)
        plan = [*cluster_plan(provider, kcp), secret_line(obj, SECRET_KEYS[provider])]
        out.append(RenderedRedisCluster(ref, kind, names.STATE_READY,
                                        f"valid; {KCP_KINDS[provider].kind} {ident} in {namespace}", provider, kcp,
                                        plan))
    return out
