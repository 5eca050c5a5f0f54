"""The SKR Redis instance plan (AwsRedisInstance, GcpRedisInstance, AzureRedisInstance): one turn's
decision over what was read (pure).

As cloud-manager's ``pkg/skr/{aws,gcp,azure}redisinstance`` (the three share one flow; the provider
only changes the tier mapping of :mod:`tasks.cloud.skr.redisinstance_tiers` and which KCP fields follow the
SKR spec). In the original's order, all in one turn where the original re-reads between steps:

0. ownership before action (:mod:`tasks.cloud.ownership`): an id that is not a UUID is an Error
   ``InvalidId``; a KCP RedisInstance of that name without this SKR's kyma label and this object's
   remote name/namespace labels is an Error ``NotOwned``; an auth Secret of the wanted name not
   labelled with this instance's id is never updated or deleted (Error ``Error`` naming the Secret;
   the original adopts and later deletes any Secret of that name); ``authSecret.extraData`` beyond
   its bounds (:func:`extra_data_invalid`: 64 keys, 4096 characters a template, as the CRDs) is an
   Error ``InvalidExtraData`` (the original has no bounds; so is an auth Secret whose rendered data would
   exceed :data:`SECRET_DATA_MAX`, which Kubernetes would refuse); the quota of a new instance (no KCP mirror
   yet; default 5 per kind and SKR, :mod:`tasks.cloud.kinds.redisinstance`; older wins):
   ``QuotaExceeded`` ``Maximum number of <n> resources exceeded`` (the original has none);
1. the IpRange (``pkg/skr/common/defaultiprange``, shared with the other consumers:
   :mod:`tasks.cloud.skr.defaultiprange_plan`): ``spec.ipRange.name`` missing -> Error
   ``IpRangeNotFound`` ``Specified IpRange <name> does not exist``; no name: the IpRange ``default``,
   created when missing (no CIDR, the default labels; by the read); wait until it is Ready; its id
   must name its own KCP mirror, else Error ``NotOwned`` (:func:`~.defaultiprange_plan.owned`, issue 27);
2. ``updateId``: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id``;
3. the finalizer; 4. the KCP mirror ``kcp-system/<status.id>`` (scope, remoteRef, ipRange = the SKR
   IpRange's id, ``instance.<provider>`` from the tier), state ``Creating``; an unknown tier -> Error
   (``failed to map redisTier to cacheNodeType`` on AWS);
5. wait until the KCP object has conditions; 6. the KCP status projected back (``Updating`` ->
   state and condition ``Updating``; ``Error`` -> Error with the KCP message; ``Ready`` -> Ready);
7. only when Ready: the SKR spec's mutable fields copied to the mirror (AWS: node type, engine
   version, auth, auto minor upgrade, maintenance window, parameters; GCP: memory, version, auth,
   configs, maintenance policy; Azure: the SKU capacity, state ``Updating``), and the auth Secret
   created or brought up to date (:func:`auth_secret`);
8. deleting: the auth Secret (its finalizer released, deleted, waited for; condition ``Deleting``
   ``DeletingAuthSecret``), then the KCP mirror (``DeletingInstance``, state ``Deleting``), waited
   for, then the finalizer released.

Steps 0, 4-6, 7's auth Secret and 8 are :mod:`tasks.cloud.skr.redis_common_plan`'s, shared with the Redis
clusters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.ownership import identity, owner_labels
from tasks.cloud.redisconfigs import REASON_INVALID_REDIS_CONFIGS, instance_configs_invalid
from tasks.cloud.skr import redis_common_plan as common
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, blocked
from tasks.cloud.skr.redis_common_plan import (
    COND_DELETING,
    COND_UPDATING,
    DEFAULT_LABELS,
    LABEL_MANAGED,
    REASON_DELETING_AUTH_SECRET,
    REASON_DELETING_INSTANCE,
    REASON_INVALID_EXTRA_DATA,
    SECRET_DATA_MAX,
    STATE_UPDATING,
    secret_name,
)
from tasks.cloud.skr.redisinstance_tiers import UNKNOWN_TIER_MESSAGES, instance_for
from tasks.cloud.step import StepBuilder

__all__ = ["COND_DELETING", "COND_UPDATING", "DEFAULT_LABELS", "EXTRA_DATA_MAX_KEYS", "EXTRA_DATA_MAX_LENGTH", "KINDS",
           "LABEL_MANAGED", "MUTABLE", "REASON_DELETING_AUTH_SECRET", "REASON_DELETING_INSTANCE",
           "REASON_INVALID_EXTRA_DATA", "SECRET_DATA_MAX", "STATE_UPDATING", "Seen", "auth_secret", "auth_secret_data",
           "extra_data_invalid", "identity", "mirror", "plan", "render_extra_data", "render_template", "secret_name"]

KINDS = {"aws": names.SKR_AWS_REDIS_INSTANCE, "gcp": names.SKR_GCP_REDIS_INSTANCE,
         "azure": names.SKR_AZURE_REDIS_INSTANCE}

#: Fields of ``spec.instance.<provider>`` that follow the SKR spec after creation (the original's
#: ``modifyKcpRedisInstance``); the others (AWS ``readReplicas``, GCP ``tier``/``replicaCount``, Azure
#: version and configuration) are fixed at creation (the CRDs make them immutable).
MUTABLE: Mapping[str, tuple[str, ...]] = {
    "aws": ("cacheNodeType", "engineVersion", "autoMinorVersionUpgrade", "authEnabled",
            "preferredMaintenanceWindow", "parameters"),
    "gcp": ("memorySizeGb", "redisVersion", "authEnabled", "redisConfigs", "maintenancePolicy"),
    "azure": ("sku",),
}

LABEL_STATUS_ID = f"{names.SKR_GROUP}/redisInstanceStatusId"
LABEL_NAMESPACE = f"{names.SKR_GROUP}/redisInstanceNamespace"


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the SKR Redis instance.
        provider, kyma, kcp_namespace: the runtime.
        iprange: the use of the SKR IpRange it uses (:func:`tasks.cloud.skr.defaultiprange.resolve`).
        kcp: the KCP RedisInstance named by its id (``None``: none, no id yet, or an id that is not a UUID).
        secret: the SKR Secret named by :func:`secret_name` in the object's namespace, ``None`` when missing.
        overrides: ``redisInstanceTierMachineTypes`` (AWS tier -> cache node type).
        everyone: the instances of this kind in the SKR (the quota); quota: instances allowed (``None``:
            unlimited).
    """

    obj: Mapping[str, Any]
    provider: str
    kyma: str
    kcp_namespace: str
    iprange: IpRangeUse
    kcp: Mapping[str, Any] | None = None
    secret: Mapping[str, Any] | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    everyone: Sequence[Mapping[str, Any]] = ()
    quota: int | None = None


def _kinds(provider: str) -> common.Kinds:
    return common.Kinds(KINDS[provider], names.REDIS_INSTANCE, LABEL_STATUS_ID, LABEL_NAMESPACE, "instance")


def mirror(obj: Mapping[str, Any], kcp_name: str, kyma: str, kcp_namespace: str, iprange_id: str,
           instance: Mapping[str, Any]) -> dict[str, Any]:
    """The KCP RedisInstance projected from the SKR object (name = its id). The kyma/remote names are
    labels (the ownership rule reads them) and, as the original writes them, annotations."""
    meta = obj["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "")
    owner = owner_labels(kyma, name, namespace)
    return {"apiVersion": f"{names.KCP_GROUP}/{names.VERSION}", "kind": "RedisInstance",
            "metadata": {"name": kcp_name, "namespace": kcp_namespace,
                         "labels": {**owner, names.LABEL_MODULE: names.MODULE_LABEL_VALUE},
                         "annotations": dict(owner)},
            "spec": {"remoteRef": {"namespace": namespace, "name": name}, "scope": {"name": kyma},
                     "ipRange": {"name": iprange_id}, "instance": dict(instance)}}


_FIELD = re.compile(r"\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
#: Bounds of ``spec.authSecret.extraData`` (also the CRDs' ``maxProperties`` / ``maxLength``; issue 27):
#: keys, and characters per template.
EXTRA_DATA_MAX_KEYS = 64
EXTRA_DATA_MAX_LENGTH = 4096


def extra_data_invalid(templates: Mapping[str, Any] | None) -> str | None:
    """Why ``spec.authSecret.extraData`` is refused (the user's words), or ``None``: more than
    :data:`EXTRA_DATA_MAX_KEYS` keys, or a template longer than :data:`EXTRA_DATA_MAX_LENGTH` characters
    (the CRD refuses both; this holds for objects stored before it did)."""
    if not templates:
        return None
    if len(templates) > EXTRA_DATA_MAX_KEYS:
        return f"authSecret.extraData has {len(templates)} keys, at most {EXTRA_DATA_MAX_KEYS} are allowed"
    for key in sorted(templates, key=str):
        if len(str(templates[key])) > EXTRA_DATA_MAX_LENGTH:
            return (f"authSecret.extraData.{str(key)[:63]} is longer than {EXTRA_DATA_MAX_LENGTH} characters")
    return None


def render_template(text: str, data: Mapping[str, str]) -> str | None:
    r"""``text`` with its field actions (``{{.key}}``, ``{{ .key }}``, ``{{- .key -}}``) replaced by
    ``data``'s values (a missing key: ``<no value>``), or ``None`` when it holds any other action.

    One scan, time linear in ``len(text)``: each action is the text from a ``{{`` to the first ``}}``
    after it (what ``re.findall(r"\{\{.*?\}\}", re.S)`` finds, without its quadratic retries on an
    unclosed ``{{{{...``: 80 KB took 33 s); a ``{{`` never closed is text."""
    out: list[str] = []
    at = 0
    while True:
        start = text.find("{{", at)
        end = text.find("}}", start + 2) if start >= 0 else -1
        if end < 0:
            out.append(text[at:])
            return "".join(out)
        field = _FIELD.fullmatch(text, start, end + 2)
        if field is None:
            return None
        out.append(text[at:start])
        out.append(data.get(field.group(1), "<no value>"))
        at = end + 2


def render_extra_data(templates: Mapping[str, str], data: Mapping[str, str]) -> dict[str, str]:
    """``extraData`` templates rendered over the Secret's keys (``{{.host}}:{{.port}}``), as the
    original's ``ParseTemplatesMapToBytesMap`` with Go's ``text/template``: a missing key renders
    ``<no value>``. Only field actions (``{{.key}}``) are supported; a template with any other
    action is kept verbatim (the original keeps a template verbatim when it fails). Linear in the
    templates' size (:func:`render_template`); their bounds are :func:`extra_data_invalid`'s."""
    out: dict[str, str] = {}
    for key, template in templates.items():
        text = str(template)
        rendered = render_template(text, data)
        out[str(key)] = text if rendered is None else rendered
    return out


def auth_secret_data(kcp_status: Mapping[str, Any], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The Secret's keys (``getAuthSecretBaseData``): ``primaryEndpoint``/``host``/``port``,
    ``readEndpoint``/``readHost``/``readPort``, ``authString`` (each when the KCP status has it), then
    the rendered ``extra`` templates (the base keys win on a clash). Plain strings."""
    base: dict[str, str] = {}
    for endpoint, host, port in (("primaryEndpoint", "host", "port"), ("readEndpoint", "readHost", "readPort")):
        value = str(kcp_status.get(endpoint) or "")
        if value:
            base[endpoint] = value
            parts = value.split(":")
            if len(parts) >= 2:
                base[host], base[port] = parts[0], parts[1]
    if kcp_status.get("authString"):
        base["authString"] = str(kcp_status["authString"])
    return {**render_extra_data(extra or {}, base), **base}


def auth_secret(obj: Mapping[str, Any], ident: str, kcp_status: Mapping[str, Any]) -> dict[str, Any]:
    """The SKR auth Secret of the object (name, labels, annotations, finalizer, base64 ``data``)."""
    extra = ((obj.get("spec") or {}).get("authSecret") or {}).get("extraData")
    return common.auth_secret(obj, ident, auth_secret_data(kcp_status, extra), LABEL_STATUS_ID, LABEL_NAMESPACE)


def _empty(value: Any) -> bool:
    return not value


def _instance_patch(provider: str, current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """Merge patch of ``spec.instance.<provider>`` for the mutable fields that differ (``None``: none)."""
    changes = common.mutable_changes(MUTABLE.get(provider, ()), current, desired, _empty)
    return {"spec": {"instance": {provider: changes}}} if changes else None


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the SKR Redis instance (see the module doc). ``new_id``: the UUID to assign when
    the object has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    kinds = _kinds(seen.provider)
    out = partial(common.outcome, obj=obj, found_secret=seen.secret, kcp_namespace=seen.kcp_namespace, kinds=kinds)
    admitted = common.admit(run, seen.kcp, seen.kyma, seen.secret, new_id, out, t, kinds)  # 0, 8
    if isinstance(admitted, Outcome):
        return admitted
    invalid = extra_data_invalid((run.spec.get("authSecret") or {}).get("extraData"))
    if invalid is not None:  # bounded before anything is made (issue 27)
        return run.fail(REASON_INVALID_EXTRA_DATA, invalid)
    invalid = instance_configs_invalid(seen.provider, run.spec)  # tasks.cloud.redisconfigs
    if invalid is not None:
        return run.fail(REASON_INVALID_REDIS_CONFIGS, invalid)

    if seen.kcp is None:  # the quota of a new instance (older wins)
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return over
    use = seen.iprange  # 1
    waiting = blocked(use, run, t)
    if waiting is not None:
        return waiting
    iprange_id = use.kcp_name

    ident, label_id, add = common.assign(run, admitted)  # 2, 3
    stop = partial(out, label_id=label_id)
    desired = instance_for(seen.provider, run.spec, seen.overrides)
    unknown = UNKNOWN_TIER_MESSAGES.get(seen.provider, "unknown redisTier")
    if seen.kcp is None:  # 4
        return common.create(run, None if desired is None else mirror(
            obj, ident, seen.kyma, seen.kcp_namespace, iprange_id, desired), unknown, add, stop, t)
    waiting = common.follow(run, seen.kcp, add, stop, t)  # 5, 6
    if waiting is not None:
        return waiting

    writes: dict[str, Any] = {}  # 7
    if desired is None:
        return stop(common.unknown_tier(run, unknown))
    current = ((seen.kcp.get("spec") or {}).get("instance") or {}).get(seen.provider) or {}
    patch = _instance_patch(seen.provider, current, desired[seen.provider])
    if patch is not None:
        writes["patch"] = (ident, patch)  # the id checked above (ownership before action), never re-read
        if seen.provider == "azure":
            run.set(state=STATE_UPDATING)
    wanted = auth_secret(obj, ident, seen.kcp.get("status") or {})
    requeue = t(5) if patch is not None and seen.provider != "aws" else None
    return common.with_secret(run, wanted, seen.secret, writes, add, requeue, stop)
