"""What the SKR Redis instance and Redis cluster plans share (pure): the flow of cloud-manager's
``pkg/skr/{aws,gcp,azure}redisinstance`` and ``pkg/skr/{aws,gcp,azure}rediscluster`` around the parts that
differ (the network, the tier mapping, the KCP mirror's shape, the auth Secret's keys).

:class:`Kinds` names the SKR kind, its KCP mirror's kind and the auth Secret's labels of one turn;
:func:`outcome` orders a turn's writes; :func:`admit` is step 0's ownership and the deletion (step 8,
:func:`delete`);
:func:`create` step 4 (the mirror), :func:`follow` steps 5-6 (its conditions waited for, its status
projected by :func:`project`); :func:`with_secret` the auth Secret of step 7 (:func:`auth_secret`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.resources import Resource
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import foreign, id_label, identity, refusal
from tasks.cloud.step import StepBuilder

__all__ = ["COND_DELETING", "COND_UPDATING", "DEFAULT_LABELS", "LABEL_MANAGED", "REASON_DELETING_AUTH_SECRET",
           "REASON_DELETING_INSTANCE", "REASON_INVALID_EXTRA_DATA", "SECRET_DATA_MAX", "STATE_UPDATING", "Kinds",
           "admit", "assign", "auth_secret", "create", "delete", "follow", "mutable_changes", "outcome", "project",
           "secret_differs", "secret_name", "unknown_tier", "with_secret"]

Stop = Callable[..., Outcome]

COND_UPDATING = "Updating"
COND_DELETING = "Deleting"
REASON_DELETING_INSTANCE = "DeletingInstance"
REASON_DELETING_AUTH_SECRET = "DeletingAuthSecret"
REASON_INVALID_EXTRA_DATA = "InvalidExtraData"
STATE_UPDATING = "Updating"
LABEL_MANAGED = f"{names.SKR_GROUP}/managed"
#: ``util.NewLabelBuilder().WithCloudManagerDefaults()``.
DEFAULT_LABELS = {"app.kubernetes.io/managed-by": "cloud-manager", "app.kubernetes.io/part-of": "kyma",
                  "app.kubernetes.io/component": "cloud-manager"}
#: Bound of the auth Secret's ``data`` (base64 characters; Kubernetes refuses a Secret over 1 MiB).
SECRET_DATA_MAX = 768 * 1024


@dataclass(frozen=True)
class Kinds:
    """The kinds of one turn and the auth Secret's labels.

    Attributes:
        skr: the SKR kind (its id label is written on it).
        kcp: the KCP mirror's kind (created, patched, deleted in ``kcp_namespace``).
        status_label, namespace_label: the auth Secret's labels naming the object's id and namespace.
        noun: ``instance`` / ``cluster``, in the words of a foreign Secret's Error.
    """

    skr: Resource
    kcp: Resource
    status_label: str
    namespace_label: str
    noun: str


def secret_name(obj: Mapping[str, Any]) -> str:
    """The auth Secret's name: ``spec.authSecret.name``, else the object's name."""
    return str(((obj.get("spec") or {}).get("authSecret") or {}).get("name") or "") or str(obj["metadata"]["name"])


def outcome(step: Outcome, obj: Mapping[str, Any], found_secret: Mapping[str, Any] | None, kcp_namespace: str,
            kinds: Kinds, *, label_id: str | None = None, create: dict[str, Any] | None = None,
            patch: tuple[str, dict[str, Any]] | None = None, delete: str | None = None,
            secret_create: dict[str, Any] | None = None, secret_update: dict[str, Any] | None = None,
            secret_release: Mapping[str, Any] | None = None, secret_delete: str | None = None) -> Outcome:
    """``step`` with the turn's writes in the original's order: the id label, the KCP mirror (``create`` /
    ``patch`` its name, the id the plan validated, and a merge patch / ``delete`` its name), the auth
    Secret (``secret_release`` its finalizer, ``secret_delete``, ``secret_create``, ``secret_update``:
    labels, annotations and data replaced on ``found_secret``, the Secret as read)."""
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", kinds.skr, name, namespace, body={names.LABEL_SKR_ID: label_id}))
    if create is not None:
        writes.append(Action.on("create", kinds.kcp, create, cluster="kcp"))
    if patch is not None:
        kcp_name, body = patch
        writes.append(Action.named("patch", kinds.kcp, kcp_name, kcp_namespace, body=body, cluster="kcp"))
    if delete is not None:
        writes.append(Action.named("delete", kinds.kcp, delete, kcp_namespace, cluster="kcp"))
    if secret_release is not None:
        writes.append(Action.finalizer(False, resources.SECRET, secret_release, names.FINALIZER))
    if secret_delete is not None:
        writes.append(Action.named("delete", resources.SECRET, secret_delete, namespace))
    if secret_create is not None:
        writes.append(Action.on("create", resources.SECRET, secret_create))
    if secret_update is not None and found_secret is not None:
        updated = {**found_secret, "metadata": {**(found_secret.get("metadata") or {}),
                                                "labels": secret_update["metadata"]["labels"],
                                                "annotations": secret_update["metadata"].get("annotations") or {}},
                   "data": secret_update["data"]}
        writes.append(Action.on("update", resources.SECRET, updated))
    return step.also(*writes)


def auth_secret(obj: Mapping[str, Any], ident: str, data: Mapping[str, str], status_label: str,
                namespace_label: str) -> dict[str, Any]:
    """The SKR auth Secret of the object with ``data`` (plain strings): its name, labels (the user's, then
    ``status_label`` = ``ident``, ``namespace_label`` = its namespace, managed, the defaults), annotations,
    finalizer, base64 ``data``."""
    spec = (obj.get("spec") or {}).get("authSecret") or {}
    namespace = str(obj["metadata"].get("namespace") or "")
    labels = {**{str(k): str(v) for k, v in (spec.get("labels") or {}).items()},
              status_label: ident, namespace_label: namespace, LABEL_MANAGED: "true", **DEFAULT_LABELS}
    meta: dict[str, Any] = {"name": secret_name(obj), "namespace": namespace, "labels": labels,
                            "finalizers": [names.FINALIZER]}
    if spec.get("annotations"):
        meta["annotations"] = {str(k): str(v) for k, v in spec["annotations"].items()}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta,
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(data.items())}}


def secret_differs(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the Secret as read differs from :func:`auth_secret`'s in data, labels or annotations."""
    meta, want = current.get("metadata") or {}, desired["metadata"]
    return ((current.get("data") or {}) != desired["data"] or (meta.get("labels") or {}) != want["labels"]
            or (meta.get("annotations") or {}) != (want.get("annotations") or {}))


def mutable_changes(fields: Sequence[str], current: Mapping[str, Any], desired: Mapping[str, Any],
                    empty: Callable[[Any], bool]) -> dict[str, Any]:
    """The ``fields`` of ``desired`` that differ from ``current`` (both ``empty``: no change), as a merge
    patch's values (maps with removed keys as null)."""
    changes: dict[str, Any] = {}
    for key in fields:
        have, want = current.get(key), desired.get(key)
        if have == want or (empty(have) and empty(want)):
            continue
        if isinstance(have, Mapping) and isinstance(want, Mapping):  # a merge patch: removed keys as null
            changes[key] = {k: want.get(k) for k in sorted({*have, *want})}
        else:
            changes[key] = want
    return changes


def project(run: StepBuilder, kcp_conditions: list[dict[str, Any]]) -> Outcome | None:
    """The KCP status projected (``updateStatus``): an Outcome when the SKR status changes, else ``None``."""
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


def delete(run: StepBuilder, kcp: Mapping[str, Any] | None, secret: Mapping[str, Any] | None, stop: Stop,
           t: Callable[[float], float], kinds: Kinds) -> Outcome:
    """Step 8: the auth Secret (its finalizer released, deleted, waited for; condition ``Deleting``
    ``DeletingAuthSecret``), then the KCP mirror (``DeletingInstance`` ``Deleting <kind> <name>``, state
    ``Deleting``), waited for, then the finalizer released. ``stop``: :func:`outcome` of the turn."""
    name = str(run.obj["metadata"]["name"])
    if secret is not None:
        smeta = secret.get("metadata") or {}
        release = secret if has_finalizer(secret, names.FINALIZER) else None
        remove = None if smeta.get("deletionTimestamp") else str(smeta["name"])
        if remove is not None:
            run.exclusive(COND_DELETING, True, REASON_DELETING_AUTH_SECRET, f"Deleting Auth Secret {remove}")
        return stop(run.step(requeue_after=t(0.2)), secret_release=release, secret_delete=remove)
    if kcp is not None:
        if deleting(kcp):
            return run.step(requeue_after=t(2))
        conditions = cond.set_condition(run.conditions, cond.condition(
            COND_DELETING, True, REASON_DELETING_INSTANCE, f"Deleting {kinds.kcp.kind} {name}", run.now))
        run.set(conditions=conditions, state=names.STATE_DELETING)
        return stop(run.step(requeue_after=t(2)), delete=str(kcp["metadata"]["name"]))
    return run.step(remove_finalizer=names.FINALIZER)


def admit(run: StepBuilder, kcp: Mapping[str, Any] | None, kyma: str, secret: Mapping[str, Any] | None,
          new_id: str, stop: Stop, t: Callable[[float], float], kinds: Kinds) -> Outcome | str:
    """Step 0's ownership, and the deletion: a deleted object without the finalizer is left, without an id
    its finalizer released; ownership before action (:func:`~tasks.cloud.ownership.refusal` of the claimed
    id and the KCP mirror ``kcp``); an auth Secret not labelled with the id is an Error (left alone while
    deleting); deleting: :func:`delete` (step 8). The spec's bounds and the quota are the plans' own.

    Returns the turn's Outcome, or the id claimed (the object's, else ``new_id``) to go on with."""
    obj = run.obj
    meta = obj.get("metadata") or {}
    ident = str(run.status.get("id") or "")
    if run.deleting and not has_finalizer(obj, names.FINALIZER):
        return Outcome()
    if run.deleting and not ident:
        return Outcome(remove_finalizer=names.FINALIZER)
    claimed = ident or identity(obj, new_id)
    refused = refusal(run, kinds.kcp.kind, claimed, foreign(kcp, kyma, str(meta.get("name") or ""),
                                                             str(meta.get("namespace") or "")))
    if refused is not None:
        return refused
    if secret is not None and ((secret.get("metadata") or {}).get("labels") or {}).get(kinds.status_label) != claimed:
        if not run.deleting:
            return run.fail(names.REASON_ERROR, f"Secret {secret_name(obj)} exists and is not the auth "
                                                f"Secret of this {kinds.noun}")
        secret = None  # a Secret that is not ours is left alone
    if run.deleting:  # 8
        return delete(run, kcp, secret, stop, t, kinds)
    return claimed


def assign(run: StepBuilder, claimed: str) -> tuple[str, str | None, str | None]:
    """Steps 2-3: ``updateId`` (an object without ``status.id`` gets ``claimed`` there and in its id label)
    and the finalizer. Returns ``(id, the id label to write or None, the finalizer to add or None)``."""
    ident = str(run.status.get("id") or "")
    label_id: str | None = None
    if not ident:
        ident = claimed
        label_id = id_label(run.obj, ident)
        run.set(id=ident)
    return ident, label_id, None if has_finalizer(run.obj, names.FINALIZER) else names.FINALIZER


def unknown_tier(run: StepBuilder, message: str) -> Outcome:
    """An unknown tier: Error ``message``, without ``Ready``."""
    run.without(names.COND_READY)
    return run.fail(names.REASON_ERROR, message, exclusive=False)


def create(run: StepBuilder, body: dict[str, Any] | None, unknown: str, add: str | None, stop: Stop,
           t: Callable[[float], float]) -> Outcome:
    """Step 4, no KCP mirror yet: create ``body`` (state ``Creating``; ``None``: an unknown tier, Error
    ``unknown``). ``add``: the finalizer to add."""
    if body is None:
        return stop(unknown_tier(run, unknown))
    run.set(state=names.STATE_CREATING)
    return stop(run.step(add_finalizer=add, requeue_after=t(20)), create=body)


def follow(run: StepBuilder, kcp: Mapping[str, Any], add: str | None, stop: Stop,
           t: Callable[[float], float]) -> Outcome | None:
    """Steps 5-6: wait until the KCP mirror ``kcp`` has conditions; its status projected (:func:`project`);
    not Ready -> back after 60 s. ``add``: the finalizer to add. ``None``: Ready, go on to step 7."""
    kcp_conditions = (kcp.get("status") or {}).get("conditions") or []
    if not kcp_conditions:  # 5
        return stop(run.step(add_finalizer=add, requeue_after=t(20)))
    projected = project(run, kcp_conditions)  # 6
    if projected is not None:
        return stop(replace(projected, add_finalizer=add))
    if run.current("state") != names.STATE_READY:
        return stop(run.step(add_finalizer=add, requeue_after=t(60)))
    return None


def with_secret(run: StepBuilder, wanted: dict[str, Any], secret: Mapping[str, Any] | None,
                writes: dict[str, Any], add: str | None, requeue: float | None, stop: Stop) -> Outcome:
    """Step 7's end: the auth Secret ``wanted`` created or brought up to date with the turn's ``writes``
    (its data over :data:`SECRET_DATA_MAX`: Error ``InvalidExtraData``, only the mirror's patch made)."""
    size = sum(len(v) for v in wanted["data"].values())
    if size > SECRET_DATA_MAX:  # rendered fields can grow a template: refused here, not by the API server
        return stop(run.fail(REASON_INVALID_EXTRA_DATA, f"the auth Secret's data would be {size} bytes "
                                                        f"(base64), at most {SECRET_DATA_MAX} are allowed"),
                    patch=writes.get("patch"))
    if secret is None:
        writes["secret_create"] = wanted
    elif secret_differs(secret, wanted):
        writes["secret_update"] = wanted
    return stop(run.step(add_finalizer=add, requeue_after=requeue), **writes)
