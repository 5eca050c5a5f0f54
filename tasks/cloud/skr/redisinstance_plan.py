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
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import foreign, id_label, identity, owner_labels, refusal
from tasks.cloud.redisconfigs import REASON_INVALID_REDIS_CONFIGS, instance_configs_invalid
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, blocked
from tasks.cloud.skr.redisinstance_tiers import UNKNOWN_TIER_MESSAGES, instance_for
from tasks.cloud.step import StepBuilder

__all__ = ["EXTRA_DATA_MAX_KEYS", "EXTRA_DATA_MAX_LENGTH", "KINDS", "MUTABLE", "REASON_INVALID_EXTRA_DATA", "Seen",
           "auth_secret", "auth_secret_data", "extra_data_invalid", "identity", "mirror", "plan", "render_extra_data",
           "render_template"]

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

COND_UPDATING = "Updating"
COND_DELETING = "Deleting"
REASON_DELETING_INSTANCE = "DeletingInstance"
REASON_DELETING_AUTH_SECRET = "DeletingAuthSecret"
STATE_UPDATING = "Updating"
LABEL_STATUS_ID = f"{names.SKR_GROUP}/redisInstanceStatusId"
LABEL_NAMESPACE = f"{names.SKR_GROUP}/redisInstanceNamespace"
LABEL_MANAGED = f"{names.SKR_GROUP}/managed"
#: ``util.NewLabelBuilder().WithCloudManagerDefaults()``.
DEFAULT_LABELS = {"app.kubernetes.io/managed-by": "cloud-manager", "app.kubernetes.io/part-of": "kyma",
                  "app.kubernetes.io/component": "cloud-manager"}


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
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", KINDS[seen.provider], name, namespace, body={names.LABEL_SKR_ID: label_id}))
    if create is not None:
        writes.append(Action.on("create", names.REDIS_INSTANCE, create, cluster="kcp"))
    if patch is not None:
        kcp_name, body = patch
        writes.append(Action.named("patch", names.REDIS_INSTANCE, kcp_name, seen.kcp_namespace, body=body,
                                   cluster="kcp"))
    if delete is not None:
        writes.append(Action.named("delete", names.REDIS_INSTANCE, delete, seen.kcp_namespace, cluster="kcp"))
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


def secret_name(obj: Mapping[str, Any]) -> str:
    """The auth Secret's name: ``spec.authSecret.name``, else the object's name."""
    return str(((obj.get("spec") or {}).get("authSecret") or {}).get("name") or "") or str(obj["metadata"]["name"])


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
REASON_INVALID_EXTRA_DATA = "InvalidExtraData"
#: Bound of the auth Secret's ``data`` (base64 characters; Kubernetes refuses a Secret over 1 MiB).
SECRET_DATA_MAX = 768 * 1024


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
    spec = (obj.get("spec") or {}).get("authSecret") or {}
    namespace = str(obj["metadata"].get("namespace") or "")
    labels = {**{str(k): str(v) for k, v in (spec.get("labels") or {}).items()},
              LABEL_STATUS_ID: ident, LABEL_NAMESPACE: namespace, LABEL_MANAGED: "true", **DEFAULT_LABELS}
    data = auth_secret_data(kcp_status, spec.get("extraData"))
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


def _instance_patch(provider: str, current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """Merge patch of ``spec.instance.<provider>`` for the mutable fields that differ (``None``: none)."""
    changes: dict[str, Any] = {}
    for key in MUTABLE.get(provider, ()):
        have, want = current.get(key), desired.get(key)
        if have == want or (not have and not want):
            continue
        if isinstance(have, Mapping) and isinstance(want, Mapping):  # a merge patch: removed keys as null
            changes[key] = {k: want.get(k) for k in sorted({*have, *want})}
        else:
            changes[key] = want
    return {"spec": {"instance": {provider: changes}}} if changes else None


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the SKR Redis instance (see the module doc). ``new_id``: the UUID to assign when
    the object has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
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
    refused = refusal(run, "RedisInstance", claimed, foreign(seen.kcp, seen.kyma, name, namespace))  # 0
    if refused is not None:
        return refused
    secret = seen.secret
    if secret is not None and not _ours(secret, claimed):
        if run.deleting:  # a Secret that is not ours is left alone
            secret = None
        else:
            return run.fail(names.REASON_ERROR, f"Secret {secret_name(obj)} exists and is not the auth "
                                                   "Secret of this instance")
    if run.deleting:  # 8
        return _delete(run, seen, secret, t)
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

    label_id: str | None = None
    if not ident:  # 2
        ident = claimed
        label_id = id_label(obj, ident)
        run.set(id=ident)
    add = None if finalized else names.FINALIZER  # 3

    def stop(step: Outcome, **writes: Any) -> Outcome:
        return _outcome(step, seen, label_id=label_id, **writes)

    desired = instance_for(seen.provider, run.spec, seen.overrides)
    if seen.kcp is None:  # 4
        if desired is None:
            run.without(names.COND_READY)
            return stop(run.fail(names.REASON_ERROR, UNKNOWN_TIER_MESSAGES.get(seen.provider, "unknown redisTier"),
                                 exclusive=False))
        run.set(state=names.STATE_CREATING)
        return stop(run.step(add_finalizer=add, requeue_after=t(20)),
                    create=mirror(obj, ident, seen.kyma, seen.kcp_namespace, iprange_id, desired))
    kcp_status = seen.kcp.get("status") or {}
    kcp_conditions = kcp_status.get("conditions") or []
    if not kcp_conditions:  # 5
        return stop(run.step(add_finalizer=add, requeue_after=t(20)))
    projected = _project(run, kcp_conditions)  # 6
    if projected is not None:
        return stop(replace(projected, add_finalizer=add))
    if run.current("state") != names.STATE_READY:
        return stop(run.step(add_finalizer=add, requeue_after=t(60)))

    writes: dict[str, Any] = {}  # 7
    if desired is None:
        run.without(names.COND_READY)
        return stop(run.fail(names.REASON_ERROR, UNKNOWN_TIER_MESSAGES.get(seen.provider, "unknown redisTier"),
                             exclusive=False))
    current = ((seen.kcp.get("spec") or {}).get("instance") or {}).get(seen.provider) or {}
    patch = _instance_patch(seen.provider, current, desired[seen.provider])
    if patch is not None:
        writes["patch"] = (ident, patch)  # the id checked above (ownership before action), never re-read
        if seen.provider == "azure":
            run.set(state=STATE_UPDATING)
    wanted = auth_secret(obj, ident, kcp_status)
    size = sum(len(v) for v in wanted["data"].values())
    if size > SECRET_DATA_MAX:  # rendered fields can grow a template: refused here, not by the API server
        return stop(run.fail(REASON_INVALID_EXTRA_DATA, f"the auth Secret's data would be {size} bytes "
                                                        f"(base64), at most {SECRET_DATA_MAX} are allowed"),
                    patch=writes.get("patch"))
    if secret is None:
        writes["secret_create"] = wanted
    elif _secret_differs(secret, wanted):
        writes["secret_update"] = wanted
    requeue = t(5) if patch is not None and seen.provider != "aws" else None
    return stop(run.step(add_finalizer=add, requeue_after=requeue), **writes)


def _project(run: StepBuilder, kcp_conditions: list[dict[str, Any]]) -> Outcome | None:
    """The KCP status projected (``updateStatus``): a Outcome when the SKR status changes, else ``None``."""
    conditions = run.conditions
    kcp_error = cond.find(kcp_conditions, names.COND_ERROR)
    kcp_ready = cond.find(kcp_conditions, names.COND_READY)
    kcp_updating = cond.find(kcp_conditions, COND_UPDATING)
    skr_error = cond.find(conditions, names.COND_ERROR)
    if kcp_updating is not None and skr_error is None and cond.find(conditions, COND_UPDATING) is None:
        new = [c for c in conditions if c.get("type") != names.COND_READY]
        new = cond.set_condition(new, cond.condition(COND_UPDATING, True, COND_UPDATING,
                                                     str(kcp_updating.get("message") or ""), run.now))
        run.set(conditions=new, state=STATE_UPDATING)
        return run.step(requeue_after=1.0)
    if kcp_error is not None and skr_error is None:
        new = [c for c in conditions if c.get("type") not in (names.COND_READY, COND_UPDATING)]
        new = cond.set_condition(new, cond.condition(names.COND_ERROR, True, names.REASON_ERROR,
                                                     str(kcp_error.get("message") or ""), run.now))
        run.set(conditions=new, state=names.STATE_ERROR)
        return run.step()
    if kcp_ready is not None and cond.find(conditions, names.COND_READY) is None:
        new = [c for c in conditions if c.get("type") not in (names.COND_ERROR, COND_UPDATING)]
        new = cond.set_condition(new, cond.condition(names.COND_READY, True, names.REASON_READY,
                                                     str(kcp_ready.get("message") or ""), run.now))
        run.set(conditions=new, state=names.STATE_READY)
    return None


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
            COND_DELETING, True, REASON_DELETING_INSTANCE, f"Deleting RedisInstance {name}", run.now))
        run.set(conditions=conditions, state=names.STATE_DELETING)
        return _outcome(run.step(requeue_after=t(2)), seen, delete=str(seen.kcp["metadata"]["name"]))
    return run.step(remove_finalizer=names.FINALIZER)
