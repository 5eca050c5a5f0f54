"""Desired vs owned actual objects → create / update / delete actions (api-gateway's ``getObjectChanges``).

- VirtualService: the first owned one is updated (spec and labels from desired), else one is created;
  further owned VirtualServices are deleted.
- AuthorizationPolicy: keyed ``hash:index`` from the labels; owned policies without both labels,
  duplicates and keys no longer desired are deleted.
- RequestAuthentication: keyed by selector, issuers and namespace, same rules.
- Ory Rules: keyed by match URL for v1beta1 APIRules; owned by a v2 APIRule, always deleted.

Actions share the desired manifests the plan built and the actual objects as read (nothing mutates
them: informer caches hand out the same objects).

Differences from the original, on purpose: an update whose result equals the actual object is left
out (the original writes every owned object on every reconcile), and surplus owned VirtualServices are
deleted (the issue: owned objects no longer desired are deleted). Within a kind, creates come before
updates and deletes, so new permissions exist before old ones go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kube.toolkit.actions import Action, Write
from tasks.apigateway import model
from tasks.apigateway.requestauthentication import request_authentication_key

#: the toolkit's Action and Write (api-gateway's ``applyChanges`` input), re-exported for the planners
__all__ = ["Action", "Write", "delete_all", "diff_access_rules", "diff_authorization_policies",
           "diff_request_authentications", "diff_virtual_service"]


def _merged(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    # new top-level and metadata dicts; the rest is shared, never mutated (actions are values, and a
    # deep copy of every object cost a third of a plan's CPU)
    obj = dict(actual)
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = dict((desired.get("metadata") or {}).get("labels") or {})
    obj["metadata"] = meta
    obj["spec"] = desired.get("spec")
    obj["apiVersion"] = desired.get("apiVersion", obj.get("apiVersion"))
    obj["kind"] = desired.get("kind", obj.get("kind"))
    return obj


def _changed(actual: Mapping[str, Any], merged: Mapping[str, Any]) -> bool:
    return bool(
        actual.get("spec") != merged.get("spec")
        or (actual.get("metadata") or {}).get("labels") != (merged.get("metadata") or {}).get("labels")
    )


def _keyed(
    kind: str,
    desired: Iterable[dict[str, Any]],
    owned: Iterable[dict[str, Any]],
    key_of: Callable[[Mapping[str, Any]], str | None],
) -> list[Action]:
    wanted: dict[str, dict[str, Any]] = {}
    for obj in desired:
        key = key_of(obj)
        if key is not None:
            wanted.setdefault(key, obj)
    found: dict[str, dict[str, Any]] = {}
    creates, updates, deletes = [], [], []
    for obj in owned:
        key = key_of(obj)
        if key is None or key not in wanted or key in found:
            deletes.append(Action("delete", kind, obj, actual=obj))
            continue
        found[key] = obj
        merged = _merged(obj, wanted[key])
        if _changed(obj, merged):
            updates.append(Action("update", kind, merged, actual=obj))
    for key, obj in wanted.items():
        if key not in found:
            creates.append(Action("create", kind, obj))
    return creates + updates + deletes


def _policy_key(obj: Mapping[str, Any]) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if model.HASH_LABEL not in labels or model.INDEX_LABEL not in labels:
        return None
    return f"{labels[model.HASH_LABEL]}:{labels[model.INDEX_LABEL]}"


def diff_virtual_service(desired: dict[str, Any] | None, owned: list[dict[str, Any]]) -> list[Action]:
    """Actions for the one VirtualService: update the first owned (or create), delete the others."""
    kind = model.VIRTUAL_SERVICE.kind
    actions: list[Action] = []
    rest = owned
    if desired is not None:
        if owned:
            merged = _merged(owned[0], desired)
            if _changed(owned[0], merged):
                actions.append(Action("update", kind, merged, actual=owned[0]))
            rest = owned[1:]
        else:
            actions.append(Action("create", kind, desired))
    return actions + [Action("delete", kind, obj, actual=obj) for obj in rest]


def diff_authorization_policies(desired: list[dict[str, Any]], owned: list[dict[str, Any]]) -> list[Action]:
    """Actions for AuthorizationPolicies keyed by ``hash:index`` labels."""
    return _keyed(model.AUTHORIZATION_POLICY.kind, desired, owned, _policy_key)


def diff_request_authentications(desired: list[dict[str, Any]], owned: list[dict[str, Any]]) -> list[Action]:
    """Actions for RequestAuthentications keyed by selector, issuers and namespace."""
    return _keyed(model.REQUEST_AUTHENTICATION.kind, desired, owned, request_authentication_key)


def diff_access_rules(desired: list[dict[str, Any]], owned: list[dict[str, Any]],
                      key_of: Callable[[Mapping[str, Any]], str | None]) -> list[Action]:
    """Actions for Oathkeeper Rules (v1beta1) keyed by match URL (and methods when paths repeat)."""
    return _keyed(model.ORY_RULE.kind, desired, owned, key_of)


def delete_all(kind: str, owned: Iterable[dict[str, Any]]) -> list[Action]:
    """A delete action for every owned object of ``kind`` (deletion, orphaned Ory Rules)."""
    return [Action("delete", kind, obj, actual=obj) for obj in owned]
