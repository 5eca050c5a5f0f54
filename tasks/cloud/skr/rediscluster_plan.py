"""The SKR Redis cluster plan (AwsRedisCluster, AzureRedisCluster, GcpRedisCluster): one turn's decision
over what was read (pure).

As cloud-manager's ``pkg/skr/{aws,azure,gcp}rediscluster`` (the three share one flow; the provider changes
the tier mapping of :mod:`tasks.cloud.skr.rediscluster_tiers`, the network reference and the KCP kind).
The flow is the Redis instances' (:mod:`tasks.cloud.skr.redisinstance_plan`, whose extraData templates,
bounds and status projection it imports), all in one turn where the original re-reads between steps:

0. ownership before action (:mod:`tasks.cloud.ownership`): an id that is not a UUID is an Error
   ``InvalidId``; a KCP mirror of that name without this SKR's kyma label and this object's remote
   name/namespace labels is an Error ``NotOwned``; an auth Secret of the wanted name not labelled with
   this cluster's id (``cloud-resources.kyma-project.io/redisClusterStatusId``) is never updated or
   deleted (Error ``Error`` naming the Secret; the original adopts it); ``authSecret.extraData`` beyond its
   bounds is an Error ``InvalidExtraData`` (:func:`~.redisinstance_plan.extra_data_invalid`; the original
   has none); the quota of a new cluster (no KCP mirror yet; default 5 per kind and SKR,
   :mod:`tasks.cloud.kinds.rediscluster`; older wins): ``QuotaExceeded`` (the original has none);
1. the network it lives on, owned before use: AWS / Azure the IpRange (``spec.ipRange.name``, else the
   default IpRange, created when missing: :mod:`tasks.cloud.skr.defaultiprange_plan`); GCP the GcpSubnet
   (``spec.subnet.name``, else the GcpSubnet ``default`` with CIDR ``10.251.0.0/22``, created when
   missing, as ``pkg/skr/common/defaultgcpsubnet``: :func:`subnet_use`); a named one missing is an Error
   (``IpRangeNotFound`` / ``SubnetNotFound`` ``Specified GcpSubnet <name> does not exist``); one that is not
   Ready is waited for; its id must name its own KCP mirror, else Error ``NotOwned``;
2. ``updateId``: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id``;
3. the finalizer; 4. the KCP mirror ``kcp-system/<status.id>`` (AWS / Azure: a ``RedisCluster`` with
   scope, remoteRef, ipRange = the SKR IpRange's id, ``instance.<provider>``; GCP: a ``GcpRedisCluster``
   with scope, remoteRef, subnet = the SKR GcpSubnet's id, nodeType, shardCount, replicasPerShard,
   redisConfigs), state ``Creating``; an unknown tier -> Error with the original's words;
5. wait until the KCP object has conditions; 6. its status projected back (``Updating`` / ``Error`` /
   ``Ready``, as the instances);
7. only when Ready: the SKR spec's mutable fields copied to the mirror (:data:`MUTABLE`; Azure: state
   ``Updating`` and the Ready condition removed, so the KCP's next Ready is projected again; the original's
   AWS and GCP modify before Ready too: here a change waits for Ready, so one change at a time reaches the
   provider), and the auth Secret created or brought up to date (:func:`auth_secret_data`: the original's
   cluster keys per provider);
8. deleting: the auth Secret (its finalizer released, deleted, waited for; condition ``Deleting``
   ``DeletingAuthSecret``), then the KCP mirror (``DeletingInstance``, state ``Deleting``), waited for,
   then the finalizer released. The IpRange / GcpSubnet refuses to go while a cluster uses it
   (``DeleteWhileUsed``: the IpRange through the kind's ``iprange_consumer``, the GcpSubnet by its own
   read of the GcpRedisClusters).

Steps 0, 4-6, 7's auth Secret and 8 are :mod:`tasks.cloud.skr.redis_common_plan`'s, shared with the Redis
instances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import kube.toolkit.conditions as cond
from kube.resources import Resource
from kube.toolkit.outcome import Outcome, deleting
from tasks.cloud import names
from tasks.cloud.ownership import foreign, identity, invalid_id, owner_labels
from tasks.cloud.redisconfigs import REASON_INVALID_REDIS_CONFIGS, cluster_configs_invalid
from tasks.cloud.skr import redis_common_plan as common
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, blocked
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_REDIS_CLUSTER
from tasks.cloud.skr.redis_common_plan import (
    COND_DELETING,
    REASON_DELETING_AUTH_SECRET,
    REASON_DELETING_INSTANCE,
    REASON_INVALID_EXTRA_DATA,
    STATE_UPDATING,
    secret_name,
)
from tasks.cloud.skr.rediscluster_tiers import UNKNOWN_TIER_MESSAGES, desired_for
from tasks.cloud.skr.redisinstance_plan import extra_data_invalid, render_extra_data
from tasks.cloud.step import StepBuilder

__all__ = ["COND_DELETING", "DEFAULT_SUBNET_CIDR", "GCP_KINDS", "KCP_KINDS", "KINDS", "LABEL_NAMESPACE",
           "LABEL_STATUS_ID", "MUTABLE", "REASON_DELETING_AUTH_SECRET", "REASON_DELETING_INSTANCE",
           "REASON_SUBNET_NOT_FOUND", "SKR_AWS_REDIS_CLUSTER", "SKR_AZURE_REDIS_CLUSTER", "SKR_GCP_REDIS_CLUSTER",
           "STATE_UPDATING", "Seen", "auth_secret", "auth_secret_data", "default_subnet", "identity", "mirror",
           "plan", "secret_name", "subnet_use"]

SKR_AWS_REDIS_CLUSTER = Resource(names.SKR_GROUP, names.VERSION, "awsredisclusters", "AwsRedisCluster", True)
SKR_AZURE_REDIS_CLUSTER = Resource(names.SKR_GROUP, names.VERSION, "azureredisclusters", "AzureRedisCluster", True)
#: The SKR kinds mirrored into the KCP ``RedisCluster`` (IpRange consumers).
KINDS: Mapping[str, Resource] = {"aws": SKR_AWS_REDIS_CLUSTER, "azure": SKR_AZURE_REDIS_CLUSTER}
#: The SKR kind mirrored into the KCP ``GcpRedisCluster`` (a GcpSubnet consumer).
GCP_KINDS: Mapping[str, Resource] = {"gcp": SKR_GCP_REDIS_CLUSTER}
#: The KCP mirror's kind per provider.
KCP_KINDS: Mapping[str, Resource] = {"aws": names.REDIS_CLUSTER, "azure": names.REDIS_CLUSTER,
                                     "gcp": names.GCP_REDIS_CLUSTER}

#: Fields that follow the SKR spec after creation (the original's ``modifyKcp*``): AWS / Azure within
#: ``spec.instance.<provider>``, GCP in the GcpRedisCluster's ``spec``. Azure's ``replicasPerPrimary`` and
#: ``redisConfiguration`` are fixed at creation (the CRD makes them immutable).
MUTABLE: Mapping[str, tuple[str, ...]] = {
    "aws": ("cacheNodeType", "engineVersion", "autoMinorVersionUpgrade", "authEnabled", "preferredMaintenanceWindow",
            "parameters", "shardCount", "replicasPerShard"),
    "azure": ("sku", "shardCount", "redisVersion"),
    "gcp": ("nodeType", "shardCount", "replicasPerShard", "redisConfigs"),
}

REASON_SUBNET_NOT_FOUND = "SubnetNotFound"
LABEL_STATUS_ID = f"{names.SKR_GROUP}/redisClusterStatusId"
LABEL_NAMESPACE = f"{names.SKR_GROUP}/redisClusterNamespace"
#: The default GcpSubnet (``createDefaultSkrGcpSubnet``): its name, CIDR and labels.
DEFAULT_SUBNET = "default"
DEFAULT_SUBNET_CIDR = "10.251.0.0/22"
DEFAULT_SUBNET_LABELS = {"app.kubernetes.io/name": "default-gcpsubnet", "app.kubernetes.io/instance": "default",
                         "app.kubernetes.io/version": "1.0.0", "app.kubernetes.io/component": "cloud-manager",
                         "app.kubernetes.io/part-of": "kyma", "app.kubernetes.io/managed-by": "cloud-manager"}


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the SKR Redis cluster.
        provider, kyma, kcp_namespace: the runtime.
        network: the use of the SKR IpRange (AWS, Azure: :func:`tasks.cloud.skr.defaultiprange.resolve`) or
            GcpSubnet (GCP: :func:`subnet_use`) it lives on, in the IpRange's shape.
        kcp: the KCP mirror named by its id (``None``: none, no id yet, or an id that is not a UUID).
        secret: the SKR Secret named by :func:`secret_name` in the object's namespace, ``None`` when missing.
        overrides: ``redisClusterTierMachineTypes`` (AWS tier -> cache node type).
        everyone: the clusters of this kind in the SKR (the quota); quota: clusters allowed (``None``:
            unlimited).
    """

    obj: Mapping[str, Any]
    provider: str
    kyma: str
    kcp_namespace: str
    network: IpRangeUse
    kcp: Mapping[str, Any] | None = None
    secret: Mapping[str, Any] | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    everyone: Sequence[Mapping[str, Any]] = ()
    quota: int | None = None


def skr_kind(provider: str) -> Resource:
    """The SKR resource of ``provider``'s Redis cluster kind. Raises ``KeyError`` for another provider."""
    return {**KINDS, **GCP_KINDS}[provider]


def subnet_reference(obj: Mapping[str, Any]) -> str:
    """The GcpRedisCluster's ``spec.subnet.name`` (``""``: none, the default is used)."""
    return str(((obj.get("spec") or {}).get("subnet") or {}).get("name") or "")


def default_subnet() -> dict[str, Any]:
    """The default SKR GcpSubnet as the original creates it: name ``default``, CIDR ``10.251.0.0/22``."""
    return {"apiVersion": f"{names.SKR_GROUP}/{names.VERSION}", "kind": "GcpSubnet",
            "metadata": {"name": DEFAULT_SUBNET, "labels": dict(DEFAULT_SUBNET_LABELS)},
            "spec": {"cidr": DEFAULT_SUBNET_CIDR}}


def subnet_use(obj: Mapping[str, Any], found: Mapping[str, Any] | None, kcp_subnet: Mapping[str, Any] | None,
               kyma: str) -> IpRangeUse:
    """The GcpSubnet use of a GcpRedisCluster ``obj`` (``pkg/skr/common/defaultgcpsubnet``), in
    :class:`~.defaultiprange_plan.IpRangeUse`'s shape: ``found`` is the SKR GcpSubnet named by its reference
    (else ``default``) as read, ``kcp_subnet`` the KCP GcpSubnet its ``status.id`` names (``None``: none, or
    never read for an id that is not a UUID). A named one missing: ``missing`` (the Error
    ``SubnetNotFound``); no reference and no default: ``create`` the default, then wait; not Ready: wait;
    its id naming no KCP GcpSubnet of this GcpSubnet (another tenant's, missing, no UUID): ``not_owned``.
    While the cluster is being deleted nothing is created, waited for or refused."""
    going = deleting(obj)
    ref = subnet_reference(obj)
    if found is None:
        if going:
            return IpRangeUse(None)
        if ref:
            return IpRangeUse(None, missing=f"Specified GcpSubnet {ref} does not exist")
        return IpRangeUse(None, create=default_subnet(), wait=True)
    if going:
        return IpRangeUse(found)
    ready = cond.is_true([dict(c) for c in (found.get("status") or {}).get("conditions") or []], names.COND_READY)
    use = IpRangeUse(found, wait=not ready)
    if not use.kcp_name:
        return use
    valid = invalid_id(use.kcp_name) is None
    if valid and kcp_subnet is not None and foreign(kcp_subnet, kyma, use.name, "") is None:
        return use
    if use.wait and valid and kcp_subnet is None:
        return use  # its own turn creates the mirror
    return replace(use, not_owned=f"GcpSubnet {use.name} id names no KCP GcpSubnet of this GcpSubnet")


def _blocked(seen: Seen, run: StepBuilder, t: Callable[[float], float]) -> Outcome | None:
    """The network's block (:func:`~.defaultiprange_plan.blocked`), with GCP's reason for a missing subnet."""
    use = seen.network
    if seen.provider == "gcp" and use.missing is not None:
        return run.fail(REASON_SUBNET_NOT_FOUND, use.missing)
    return blocked(use, run, t)


def _kinds(provider: str) -> common.Kinds:
    return common.Kinds(skr_kind(provider), KCP_KINDS[provider], LABEL_STATUS_ID, LABEL_NAMESPACE, "cluster")


def mirror(obj: Mapping[str, Any], provider: str, kcp_name: str, kyma: str, kcp_namespace: str, network_id: str,
           desired: Mapping[str, Any]) -> dict[str, Any]:
    """The KCP mirror projected from the SKR object (name = its id): a ``RedisCluster`` (AWS, Azure: ipRange
    = ``network_id``, ``instance`` = ``desired``) or a ``GcpRedisCluster`` (subnet = ``network_id``, the
    ``desired`` tier fields in its spec). The kyma/remote names are labels (the ownership rule reads them)
    and, as the original writes them, annotations."""
    meta = obj["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "")
    owner = owner_labels(kyma, name, namespace)
    spec: dict[str, Any] = {"remoteRef": {"namespace": namespace, "name": name}, "scope": {"name": kyma}}
    if provider == "gcp":
        spec |= {"subnet": {"name": network_id}, **desired}
    else:
        spec |= {"ipRange": {"name": network_id}, "instance": dict(desired)}
    return {"apiVersion": f"{names.KCP_GROUP}/{names.VERSION}", "kind": KCP_KINDS[provider].kind,
            "metadata": {"name": kcp_name, "namespace": kcp_namespace,
                         "labels": {**owner, names.LABEL_MODULE: names.MODULE_LABEL_VALUE},
                         "annotations": dict(owner)},
            "spec": spec}


def _split(endpoint: str, keys: tuple[str, str, str]) -> dict[str, str]:
    """``{endpoint: "h:p", host: "h", port: "p"}`` (host and port only when the endpoint has a ``:``)."""
    out = {keys[0]: endpoint}
    parts = endpoint.split(":")
    if len(parts) >= 2:
        out[keys[1]], out[keys[2]] = parts[0], parts[1]
    return out


def auth_secret_data(provider: str, kcp_status: Mapping[str, Any], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The Secret's keys (the original's ``getAuthSecretBaseData`` per provider), then the rendered ``extra``
    templates (the base keys win on a clash). Plain strings.

    From the KCP ``status.discoveryEndpoint`` (``host:port``): AWS and GCP ``discoveryEndpoint``/``host``/
    ``port``; Azure ``primaryEndpoint``/``host``/``port`` and ``readEndpoint``/``readHost``/``readPort`` (both
    the discovery endpoint); then ``authString`` when set, and on GCP ``CaCert.pem`` (``status.caCert``)."""
    base: dict[str, str] = {}
    endpoint = str(kcp_status.get("discoveryEndpoint") or "")
    if endpoint:
        if provider == "azure":
            base |= _split(endpoint, ("primaryEndpoint", "host", "port"))
            base |= _split(endpoint, ("readEndpoint", "readHost", "readPort"))
        else:
            base |= _split(endpoint, ("discoveryEndpoint", "host", "port"))
    if kcp_status.get("authString"):
        base["authString"] = str(kcp_status["authString"])
    if provider == "gcp" and kcp_status.get("caCert"):
        base["CaCert.pem"] = str(kcp_status["caCert"])
    return {**render_extra_data(extra or {}, base), **base}


def auth_secret(obj: Mapping[str, Any], provider: str, ident: str, kcp_status: Mapping[str, Any]) -> dict[str, Any]:
    """The SKR auth Secret of the object (name, labels, annotations, finalizer, base64 ``data``)."""
    extra = ((obj.get("spec") or {}).get("authSecret") or {}).get("extraData")
    return common.auth_secret(obj, ident, auth_secret_data(provider, kcp_status, extra), LABEL_STATUS_ID,
                              LABEL_NAMESPACE)


_EMPTY: tuple[Any, ...] = (None, "", {})


def _empty(value: Any) -> bool:
    return value in _EMPTY


def _changes(provider: str, current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The mutable fields of ``desired`` that differ from ``current``, as a merge patch's values (maps with
    removed keys as null)."""
    return common.mutable_changes(MUTABLE.get(provider, ()), current, desired, _empty)


def _patch(provider: str, kcp: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """Merge patch of the KCP mirror's mutable fields that differ (``None``: none)."""
    spec = kcp.get("spec") or {}
    if provider == "gcp":
        changes = _changes(provider, spec, desired)
        return {"spec": changes} if changes else None
    current = (spec.get("instance") or {}).get(provider) or {}
    changes = _changes(provider, current, desired[provider])
    return {"spec": {"instance": {provider: changes}}} if changes else None


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the SKR Redis cluster (see the module doc). ``new_id``: the UUID to assign when the object
    has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    kinds = _kinds(seen.provider)
    out = partial(common.outcome, obj=obj, found_secret=seen.secret, kcp_namespace=seen.kcp_namespace, kinds=kinds)
    admitted = common.admit(run, seen.kcp, seen.kyma, seen.secret, new_id, out, t, kinds)  # 0, 8
    if isinstance(admitted, Outcome):
        return admitted
    invalid = extra_data_invalid((run.spec.get("authSecret") or {}).get("extraData"))
    if invalid is not None:
        return run.fail(REASON_INVALID_EXTRA_DATA, invalid)
    invalid = cluster_configs_invalid(seen.provider, run.spec)  # tasks.cloud.redisconfigs
    if invalid is not None:
        return run.fail(REASON_INVALID_REDIS_CONFIGS, invalid)
    if seen.kcp is None:  # the quota of a new cluster (older wins)
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return over
    waiting = _blocked(seen, run, t)  # 1
    if waiting is not None:
        return waiting
    network_id = seen.network.kcp_name

    ident, label_id, add = common.assign(run, admitted)  # 2, 3
    stop = partial(out, label_id=label_id)
    desired = desired_for(seen.provider, run.spec, seen.overrides)
    unknown = UNKNOWN_TIER_MESSAGES.get(seen.provider, "unknown redisTier")
    if seen.kcp is None:  # 4
        return common.create(run, None if desired is None else mirror(
            obj, seen.provider, ident, seen.kyma, seen.kcp_namespace, network_id, desired), unknown, add, stop, t)
    waiting = common.follow(run, seen.kcp, add, stop, t)  # 5, 6
    if waiting is not None:
        return waiting

    writes: dict[str, Any] = {}  # 7
    if desired is None:
        return stop(common.unknown_tier(run, unknown))
    patch = _patch(seen.provider, seen.kcp, desired)
    if patch is not None:
        writes["patch"] = (ident, patch)  # the id checked above (ownership before action), never re-read
        if seen.provider == "azure":  # Ready goes (as the original's): the KCP's Ready brings it back
            run.without(names.COND_READY).set(state=STATE_UPDATING)
    wanted = auth_secret(obj, seen.provider, ident, seen.kcp.get("status") or {})
    requeue = t(5) if patch is not None else None
    return common.with_secret(run, wanted, seen.secret, writes, add, requeue, stop)
