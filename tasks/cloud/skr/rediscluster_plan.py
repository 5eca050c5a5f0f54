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
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.resources import Resource
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import foreign, id_label, identity, invalid_id, owner_labels, refusal
from tasks.cloud.redisconfigs import REASON_INVALID_REDIS_CONFIGS, cluster_configs_invalid
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, blocked
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_REDIS_CLUSTER
from tasks.cloud.skr.rediscluster_tiers import UNKNOWN_TIER_MESSAGES, desired_for
from tasks.cloud.skr.redisinstance_plan import (
    DEFAULT_LABELS,
    LABEL_MANAGED,
    REASON_INVALID_EXTRA_DATA,
    SECRET_DATA_MAX,
    extra_data_invalid,
    render_extra_data,
    secret_name,
)
from tasks.cloud.skr.redisinstance_plan import _project as project
from tasks.cloud.step import StepBuilder

__all__ = ["DEFAULT_SUBNET_CIDR", "GCP_KINDS", "KCP_KINDS", "KINDS", "LABEL_NAMESPACE", "LABEL_STATUS_ID", "MUTABLE",
           "REASON_SUBNET_NOT_FOUND", "SKR_AWS_REDIS_CLUSTER", "SKR_AZURE_REDIS_CLUSTER", "SKR_GCP_REDIS_CLUSTER",
           "Seen", "auth_secret", "auth_secret_data", "default_subnet", "identity", "mirror", "plan", "secret_name",
           "subnet_use"]

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

COND_DELETING = "Deleting"
REASON_DELETING_INSTANCE = "DeletingInstance"
REASON_DELETING_AUTH_SECRET = "DeletingAuthSecret"
REASON_SUBNET_NOT_FOUND = "SubnetNotFound"
STATE_UPDATING = "Updating"
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


def _outcome(step: Outcome, seen: Seen, *, label_id: str | None = None, create: dict[str, Any] | None = None,
             patch: tuple[str, dict[str, Any]] | None = None, delete: str | None = None,
             secret_create: dict[str, Any] | None = None, secret_update: dict[str, Any] | None = None,
             secret_release: Mapping[str, Any] | None = None, secret_delete: str | None = None) -> Outcome:
    """``step`` with the turn's writes in the original's order: the id label, the KCP mirror (``create`` /
    ``patch`` its name, the id the plan validated, and a merge patch / ``delete`` its name), the auth
    Secret (``secret_release`` its finalizer, ``secret_delete``, ``secret_create``, ``secret_update``:
    labels, annotations and data replaced on the Secret as read)."""
    meta = seen.obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    kcp_res = KCP_KINDS[seen.provider]
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", skr_kind(seen.provider), name, namespace,
                                   body={names.LABEL_SKR_ID: label_id}))
    if create is not None:
        writes.append(Action.on("create", kcp_res, create, cluster="kcp"))
    if patch is not None:
        kcp_name, body = patch
        writes.append(Action.named("patch", kcp_res, kcp_name, seen.kcp_namespace, body=body, cluster="kcp"))
    if delete is not None:
        writes.append(Action.named("delete", kcp_res, delete, seen.kcp_namespace, cluster="kcp"))
    if secret_release is not None:
        writes.append(Action.finalizer(False, resources.SECRET, secret_release, names.FINALIZER))
    if secret_delete is not None:
        writes.append(Action.named("delete", resources.SECRET, secret_delete, namespace))
    if secret_create is not None:
        writes.append(Action.on("create", resources.SECRET, secret_create))
    if secret_update is not None and seen.secret is not None:
        found = seen.secret
        updated = {**found, "metadata": {**(found.get("metadata") or {}), "labels": secret_update["metadata"]["labels"],
                                         "annotations": secret_update["metadata"].get("annotations") or {}},
                   "data": secret_update["data"]}
        writes.append(Action.on("update", resources.SECRET, updated))
    return step.also(*writes)


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
    spec = (obj.get("spec") or {}).get("authSecret") or {}
    namespace = str(obj["metadata"].get("namespace") or "")
    labels = {**{str(k): str(v) for k, v in (spec.get("labels") or {}).items()},
              LABEL_STATUS_ID: ident, LABEL_NAMESPACE: namespace, LABEL_MANAGED: "true", **DEFAULT_LABELS}
    data = auth_secret_data(provider, kcp_status, spec.get("extraData"))
    meta: dict[str, Any] = {"name": secret_name(obj), "namespace": namespace, "labels": labels,
                            "finalizers": [names.FINALIZER]}
    if spec.get("annotations"):
        meta["annotations"] = {str(k): str(v) for k, v in spec["annotations"].items()}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta,
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(data.items())}}


def _secret_differs(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    meta, want = current.get("metadata") or {}, desired["metadata"]
    return ((current.get("data") or {}) != desired["data"] or (meta.get("labels") or {}) != want["labels"]
            or (meta.get("annotations") or {}) != (want.get("annotations") or {}))


def _ours(secret: Mapping[str, Any], ident: str) -> bool:
    return ((secret.get("metadata") or {}).get("labels") or {}).get(LABEL_STATUS_ID) == ident


_EMPTY: tuple[Any, ...] = (None, "", {})


def _changes(provider: str, current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The mutable fields of ``desired`` that differ from ``current``, as a merge patch's values (maps with
    removed keys as null)."""
    changes: dict[str, Any] = {}
    for key in MUTABLE.get(provider, ()):
        have, want = current.get(key), desired.get(key)
        if have == want or (have in _EMPTY and want in _EMPTY):
            continue
        if isinstance(have, Mapping) and isinstance(want, Mapping):
            changes[key] = {k: want.get(k) for k in sorted({*have, *want})}
        else:
            changes[key] = want
    return changes


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
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    finalized = has_finalizer(obj, names.FINALIZER)
    ident = str(run.status.get("id") or "")
    if run.deleting and not finalized:
        return Outcome()
    if run.deleting and not ident:
        return Outcome(remove_finalizer=names.FINALIZER)
    claimed = ident or identity(obj, new_id)
    kcp_kind = KCP_KINDS[seen.provider].kind
    refused = refusal(run, kcp_kind, claimed, foreign(seen.kcp, seen.kyma, name, namespace))  # 0
    if refused is not None:
        return refused
    secret = seen.secret
    if secret is not None and not _ours(secret, claimed):
        if run.deleting:  # a Secret that is not ours is left alone
            secret = None
        else:
            return run.fail(names.REASON_ERROR, f"Secret {secret_name(obj)} exists and is not the auth "
                                                   "Secret of this cluster")
    if run.deleting:  # 8
        return _delete(run, seen, secret, t)
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

    label_id: str | None = None
    if not ident:  # 2
        ident = claimed
        label_id = id_label(obj, ident)
        run.set(id=ident)
    add = None if finalized else names.FINALIZER  # 3

    def stop(step: Outcome, **writes: Any) -> Outcome:
        return _outcome(step, seen, label_id=label_id, **writes)

    desired = desired_for(seen.provider, run.spec, seen.overrides)
    unknown = UNKNOWN_TIER_MESSAGES.get(seen.provider, "unknown redisTier")
    if seen.kcp is None:  # 4
        if desired is None:
            run.without(names.COND_READY)
            return stop(run.fail(names.REASON_ERROR, unknown, exclusive=False))
        run.set(state=names.STATE_CREATING)
        return stop(run.step(add_finalizer=add, requeue_after=t(20)),
                    create=mirror(obj, seen.provider, ident, seen.kyma, seen.kcp_namespace, network_id, desired))
    kcp_status = seen.kcp.get("status") or {}
    kcp_conditions = kcp_status.get("conditions") or []
    if not kcp_conditions:  # 5
        return stop(run.step(add_finalizer=add, requeue_after=t(20)))
    projected = project(run, kcp_conditions)  # 6
    if projected is not None:
        return stop(replace(projected, add_finalizer=add))
    if run.current("state") != names.STATE_READY:
        return stop(run.step(add_finalizer=add, requeue_after=t(60)))

    writes: dict[str, Any] = {}  # 7
    if desired is None:
        run.without(names.COND_READY)
        return stop(run.fail(names.REASON_ERROR, unknown, exclusive=False))
    patch = _patch(seen.provider, seen.kcp, desired)
    if patch is not None:
        writes["patch"] = (ident, patch)  # the id checked above (ownership before action), never re-read
        if seen.provider == "azure":  # Ready goes (as the original's): the KCP's Ready brings it back
            run.without(names.COND_READY).set(state=STATE_UPDATING)
    wanted = auth_secret(obj, seen.provider, ident, kcp_status)
    size = sum(len(v) for v in wanted["data"].values())
    if size > SECRET_DATA_MAX:
        return stop(run.fail(REASON_INVALID_EXTRA_DATA, f"the auth Secret's data would be {size} bytes "
                                                        f"(base64), at most {SECRET_DATA_MAX} are allowed"),
                    patch=writes.get("patch"))
    if secret is None:
        writes["secret_create"] = wanted
    elif _secret_differs(secret, wanted):
        writes["secret_update"] = wanted
    requeue = t(5) if patch is not None else None
    return stop(run.step(add_finalizer=add, requeue_after=requeue), **writes)


def _delete(run: StepBuilder, seen: Seen, secret: Mapping[str, Any] | None, t: Callable[[float], float]) -> Outcome:
    name = str(run.obj["metadata"]["name"])
    if secret is not None:
        smeta = secret.get("metadata") or {}
        release = secret if has_finalizer(secret, names.FINALIZER) else None
        remove = None if smeta.get("deletionTimestamp") else str(smeta["name"])
        if remove is not None:
            run.exclusive(COND_DELETING, True, REASON_DELETING_AUTH_SECRET, f"Deleting Auth Secret {remove}")
        return _outcome(run.step(requeue_after=t(0.2)), seen, secret_release=release, secret_delete=remove)
    if seen.kcp is not None:
        if deleting(seen.kcp):
            return run.step(requeue_after=t(2))
        conditions = cond.set_condition(run.conditions, cond.condition(
            COND_DELETING, True, REASON_DELETING_INSTANCE,
            f"Deleting {KCP_KINDS[seen.provider].kind} {name}", run.now))
        run.set(conditions=conditions, state=names.STATE_DELETING)
        return _outcome(run.step(requeue_after=t(2)), seen, delete=str(seen.kcp["metadata"]["name"]))
    return run.step(remove_finalizer=names.FINALIZER)
