"""Patch semantics of the Kubernetes API: JSON merge, JSON patch, strategic merge, apply.

Pure functions: they never mutate their inputs and return new objects.

- :func:`merge_patch`: RFC 7386 (``application/merge-patch+json``).
- :func:`json_patch`: RFC 6902 through the ``jsonpatch`` library (``application/json-patch+json``).
- :func:`strategic_merge_patch`: the subset of ``k8s.io/apimachinery/pkg/util/strategicpatch`` that
  controllers use: lists of known fields merge by their merge key (containers by ``name``, container
  ports by ``containerPort``, service ports by ``port``, ...), primitive lists with merge strategy
  (``finalizers``) are unions, ``$patch: replace|delete|merge``, ``$retainKeys``,
  ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` directives. Unknown lists are
  replaced, as with a merge patch.
- :func:`apply_merge`: what server-side apply does for our purposes: a strategic merge where
  ``null`` values are ignored rather than deleting.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from kubedev import errors

__all__ = ["PatchError", "apply_merge", "apply_patch", "json_patch", "merge_patch", "strategic_merge_patch"]


class PatchError(ValueError):
    """A patch that cannot be applied (bad document, failing ``test`` op, missing path)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge recursively, ``null`` deletes, rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations); raises :class:`PatchError`."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    try:
        return jsonpatch.JsonPatch(operations).apply(target, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise PatchError(str(exc)) from exc


# Fields whose lists merge by key, from the Go struct tags (patchStrategy:"merge" patchMergeKey:...).
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "conditions": "type",
    "secrets": "name",
    "addresses": "type",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of primitives with patchStrategy "merge": set union.
_PRIMITIVE_MERGE = {"finalizers"}


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        # container ports merge by containerPort, service ports by port.
        if any(isinstance(i, dict) and "containerPort" in i for i in items):
            return "containerPort"
        return "port"
    return _MERGE_KEYS.get(field)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch (see the module docstring for the supported subset)."""
    return _smp(target, patch, delete_nulls=True)


def apply_merge(target: Any, patch: Any) -> Any:
    """Merge an applied configuration over the live object (server-side apply, simplified)."""
    return _smp(target, patch, delete_nulls=False)


def _smp(target: Any, patch: Any, delete_nulls: bool) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    deferred_deletes: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            deferred_deletes[key.split("/", 1)[1]] = value if isinstance(value, list) else []
            continue
        if value is None:
            if delete_nulls:
                result.pop(key, None)
            continue
        if isinstance(value, dict):
            merged = _smp(result.get(key), value, delete_nulls)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value, delete_nulls)
        else:
            result[key] = copy.deepcopy(value)
    for key, removed in deferred_deletes.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in removed]
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, current: Any, patch: list[Any], delete_nulls: bool) -> list[Any]:
    if not isinstance(current, list):
        current = []
    if field in _PRIMITIVE_MERGE:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return copy.deepcopy(out)
    key = _merge_key(field, patch + current)
    if key is None or not all(isinstance(i, dict) for i in patch):
        # A list patch of only `$patch: replace` markers etc. is handled like a plain replacement.
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch"))]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch"))]
    out = [copy.deepcopy(i) for i in current]
    for item in patch:
        ident = item.get(key)
        index = next((n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == ident), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
            continue
        if index is None:
            out.append(_smp({}, item, delete_nulls))
        else:
            out[index] = _smp(out[index], item, delete_nulls)
    return out


def apply_patch(current: dict[str, Any], patch_type: str, patch: Any, *, strategic: bool = True) -> dict[str, Any]:
    """``current`` with a PATCH request's body applied, as the API server's patch handler does.

    ``patch_type`` is ``merge``, ``json``, ``strategic`` (only when ``strategic``: custom resources
    have no strategic merge) or ``apply``. Raises :class:`kubedev.errors.ApiError`: 415 for a patch
    type the resource does not take, 422 ``Invalid`` for a patch that cannot be applied, 400 when the
    result is not an object."""
    try:
        if patch_type == "merge":
            patched = merge_patch(current, patch)
        elif patch_type == "json":
            patched = json_patch(current, patch)
        elif patch_type == "strategic" and strategic:
            patched = strategic_merge_patch(current, patch)
        elif patch_type == "apply":
            patched = apply_merge(current, patch)
        else:
            raise errors.unsupported_media_type(patch_type)
    except PatchError as exc:
        raise errors.ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                              f"request: {exc}") from exc
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object must be a JSON object")
    return patched
