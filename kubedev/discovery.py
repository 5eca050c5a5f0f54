"""Discovery and OpenAPI documents built from the served resource types (pure functions).

Legacy discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``) is
what kubectl and the official client read; clients asking for aggregated discovery
(``as=APIGroupDiscoveryList``) fall back to it when the answer is plain ``application/json``.
The OpenAPI v3 documents are minimal: they only declare, per kind, a PATCH operation with the
``fieldValidation`` query parameter, so ``kubectl apply`` uses server-side field validation and does not
need schemas.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from kubedev.resources import ResourceType

__all__ = [
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "openapi_v2",
    "openapi_v3_group_version",
    "openapi_v3_root",
    "version_info",
]

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def version_info() -> dict[str, str]:
    """The ``/version`` answer: a Kubernetes 1.32 look-alike."""
    return {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kubedev", "gitCommit": "0" * 40,
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0",
            "compiler": "gc", "platform": "linux/amd64"}


def api_versions(server_address: str) -> dict[str, Any]:
    """``/api``: the core group's versions."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _groups(types: Iterable[ResourceType]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rt in types:
        if not rt.group:
            continue
        versions = groups.setdefault(rt.group, [])
        if rt.version not in versions:
            versions.append(rt.version)
    return groups


def _preferred(versions: list[str]) -> str:
    """Prefer GA over beta over alpha, higher numbers first, as Kubernetes version priority does."""
    def rank(v: str) -> tuple[int, int, int]:
        m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
        if not m:
            return (-1, 0, 0)
        stage = {"alpha": 0, "beta": 1}.get(m.group(2) or "", 2)
        return (stage, int(m.group(1)), int(m.group(3) or 0))
    return max(versions, key=rank)


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    """One ``APIGroup`` (also the body of ``/apis/<group>``)."""
    preferred = _preferred(versions)
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
            "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred}}


def api_group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/apis``: every non-core group with its served versions."""
    groups = []
    for group, versions in _groups(types).items():
        entry = api_group(group, versions)
        del entry["kind"], entry["apiVersion"]
        groups.append(entry)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _hash(text: str) -> str:
    return base_hash(text)[:16]


def base_hash(text: str) -> str:
    """A stable hex digest used for storageVersionHash and OpenAPI document hashes."""
    return hashlib.sha256(text.encode()).hexdigest()


def api_resource_list(group_version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/api/v1`` or ``/apis/<group>/<version>``: resources of one group version, with subresources."""
    resources: list[dict[str, Any]] = []
    for rt in types:
        if rt.group_version != group_version:
            continue
        entry: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                                 "kind": rt.kind, "verbs": list(_VERBS),
                                 "storageVersionHash": _hash(rt.storage_key)}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        if rt.has_status:
            resources.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                              "kind": rt.kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _gv_path(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def openapi_v3_root(types: Iterable[ResourceType], prefix: str = "") -> dict[str, Any]:
    """``/openapi/v3``: one entry per served group version, pointing at its document.

    ``prefix`` is the cluster's URL path prefix (``/clusters/<name>``): the URLs are server-relative.
    """
    paths: dict[str, Any] = {}
    for gv in sorted({rt.group_version for rt in types}):
        path = _gv_path(gv)
        paths[path] = {"serverRelativeURL": f"{prefix}/openapi/v3/{path}?hash={_hash(path).upper()}"}
    return {"paths": paths}


def openapi_v3_group_version(group_version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    """A minimal OpenAPI v3 document for one group version: PATCH operations with ``fieldValidation``."""
    paths: dict[str, Any] = {}
    for rt in types:
        if rt.group_version != group_version:
            continue
        base = f"/{_gv_path(group_version)}"
        url = f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}" if rt.namespaced else \
            f"{base}/{rt.plural}/{{name}}"
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
        operation = {"operationId": f"patch{rt.kind}", "parameters": params,
                     "responses": {"200": {"description": "OK"}},
                     "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk}
        paths[url] = {"patch": operation, "put": {**operation, "operationId": f"replace{rt.kind}",
                                                   "x-kubernetes-action": "put"}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-kubedev"}, "paths": paths,
            "components": {"schemas": {}}}


def openapi_v2(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/openapi/v2``: a minimal Swagger 2.0 document with the same PATCH operations."""
    paths: dict[str, Any] = {}
    for rt in types:
        doc = openapi_v3_group_version(rt.group_version, [rt])
        for url, ops in doc["paths"].items():
            paths[url] = {"patch": {**ops["patch"], "parameters": [
                {"name": p["name"], "in": "query", "type": "string", "uniqueItems": True}
                for p in ops["patch"]["parameters"]]}}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0-kubedev"}, "paths": paths,
            "definitions": {}}
