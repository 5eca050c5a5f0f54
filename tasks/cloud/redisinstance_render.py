"""``reconcilery render redisinstance``: what SKR Redis instances would create, offline (pure).

For each ``AwsRedisInstance`` / ``GcpRedisInstance`` / ``AzureRedisInstance`` with a KCP Scope: the tier
mapping of :mod:`tasks.cloud.skr.redisinstance_tiers` (an unknown tier, or a kind of another provider than the
Scope's, is an Error with the SKR's words), the KCP ``RedisInstance`` the SKR loop would create
(:func:`tasks.cloud.skr.redisinstance_plan.mirror`, named ``<id>`` until the object has a ``status.id``),
and the provider's pieces, one line each, as :mod:`tasks.cloud.aws.redisinstance_plan`,
:mod:`tasks.cloud.gcp.redisinstance_plan` and :mod:`tasks.cloud.azure.redisinstance_plan` name and shape
them, then the connection Secret.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.aws.redisinstance_plan import family, resource_names
from tasks.cloud.azure.redisinstance_plan import DNS_ZONE, sku, targets
from tasks.cloud.gcp.redisinstance_plan import instance_name
from tasks.cloud.redis_common_render import defaulted, refusal, scope_facts, secret_line, where
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr.defaultiprange_plan import wanted
from tasks.cloud.skr.redisinstance_plan import KINDS, mirror
from tasks.cloud.skr.redisinstance_tiers import UNKNOWN_TIER_MESSAGES, instance_for

__all__ = ["RenderedRedis", "redis_plan", "render_redis"]

SECRET_KEYS = "primaryEndpoint host port readEndpoint readHost readPort authString"


@dataclass(frozen=True)
class RenderedRedis(Rendered):
    """One SKR Redis instance's outcome: ``state`` (``Ready`` when it would be provisioned, else
    ``Error``), the KCP RedisInstance (``kcp``) and the provider's pieces (``plan``, one per line)."""

    provider: str = ""
    kcp: dict[str, Any] = field(default_factory=dict)
    plan: list[str] = field(default_factory=list)


def redis_plan(scope: Mapping[str, Any], kcp: Mapping[str, Any]) -> list[str]:
    """The provider's pieces of the KCP RedisInstance ``kcp`` with ``scope``, one line each."""
    provider = str((scope.get("spec") or {}).get("provider") or "")
    name = str(kcp["metadata"]["name"])
    spec = ((kcp.get("spec") or {}).get("instance") or {}).get(provider) or {}
    if provider == "aws":
        n = resource_names(name)
        replicas = int(spec.get("readReplicas") or 0)
        params = ", ".join(f"{k}={v}" for k, v in sorted((spec.get("parameters") or {}).items())) or "the defaults"
        lines = [f"subnet group {n['subnet_group']} from the IpRange's subnets",
                 f"parameter group {n['parameter_group']} (family {family(str(spec.get('engineVersion')))}; "
                 f"{params})"]
        if spec.get("authEnabled"):
            lines.append(f"auth token {n['secret']} in Secrets Manager")
        lines += [f"security group {n['security_group']}: tcp 6379 from the pods and VPC CIDRs",
                  f"replication group {n['group']}: {spec.get('cacheNodeType')}, engine {spec.get('engineVersion')}, "
                  f"{replicas} replica(s), automatic failover {'on' if replicas else 'off'}, TLS, 1 shard"]
        return lines
    if provider == "gcp":
        _, full = instance_name(scope, name)
        vpc = (((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}).get("vpcNetwork")
        return [f"Memorystore {full}: {spec.get('tier')} {spec.get('memorySizeGb')} GB, "
                f"{spec.get('replicaCount') or 0} replica(s), {spec.get('redisVersion')}, auth "
                f"{'on' if spec.get('authEnabled') else 'off'}",
                f"PRIVATE_SERVICE_ACCESS on {vpc} with the IpRange's reserved range, SERVER_AUTHENTICATION"]
    if provider == "azure":
        n = targets(scope, name)
        wanted = sku(str((spec.get("sku") or {}).get("family") or "P"), int((spec.get("sku") or {}).get("capacity")
                                                                             or 1))
        return [f"cache {name} in {n['group']}: {wanted['name']} {wanted['family']}{wanted['capacity']}, "
                "non-SSL port off",
                f"private endpoint {name} into subnet {n['subnet']} (redisCache)",
                f"DNS zone group {name} on {DNS_ZONE}"]
    return []


def render_redis(scope: Mapping[str, Any], objects: Sequence[Mapping[str, Any]],
                 overrides: Mapping[str, str] | None = None) -> list[RenderedRedis]:
    """The outcome of every SKR Redis instance in ``objects`` with ``scope`` (``overrides``: the AWS
    ``redisInstanceTierMachineTypes``)."""
    provider, kyma, namespace = scope_facts(scope)
    kinds = {res.kind: p for p, res in KINDS.items()}
    out: list[RenderedRedis] = []
    for obj in objects:
        ref, kind = where(obj)
        instance = instance_for(provider, obj.get("spec") or {}, overrides) if kinds.get(kind) == provider else None
        refused = refusal(obj, provider, kinds, instance, UNKNOWN_TIER_MESSAGES)
        if refused is not None or instance is None:
            out.append(RenderedRedis(ref, kind, names.STATE_ERROR, refused or "", provider))
            continue
        ident, body = defaulted(obj)
        kcp = mirror(body, ident, kyma, namespace, f"<id of IpRange {wanted(obj)}>", instance)
        plan = [*redis_plan(scope, kcp), secret_line(obj, SECRET_KEYS)]
        out.append(RenderedRedis(ref, kind, names.STATE_READY, f"valid; RedisInstance {ident} in {namespace}",
                                 provider, kcp, plan))
    return out
