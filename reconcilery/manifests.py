"""Reading manifest files and applying them through the ``kube`` layer (``reconcilery up --apply``).

Applying is ``kubectl apply`` reduced to what a local run needs: create, or merge-patch an existing
object; a ``status`` in the manifest is written through the status subresource afterwards (Nodes in
the examples carry their addresses there, as a kubelet would have reported them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from kube import Kube, Resource
from kube.errors import NotFound


class ManifestError(ValueError):
    """A file that cannot be read as Kubernetes manifests; the message names the file."""


def manifest_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files to apply, in order: each path as given; a folder's ``*.yaml|*.yml|*.json`` files
    recursively, sorted by path (so ``00-cluster.yaml`` comes before ``10-apirules.yaml``)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise ManifestError(f"{path}: no such file or folder")
    return files


def read_documents(path: Path) -> Iterator[dict[str, Any]]:
    """The objects in one YAML/JSON file (``List`` kinds are flattened; empty documents skipped)."""
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise ManifestError(f"{path}: every document needs apiVersion and kind")
        if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
            yield from doc["items"]
        else:
            yield doc


class Discovery:
    """``(apiVersion, kind) -> Resource`` from the API server's discovery, cached per group version."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._cache: dict[str, dict[str, Resource]] = {}

    def resource(self, api_version: str, kind: str, refresh: bool = False) -> Resource:
        """Raises ``ManifestError`` when the server does not serve the kind (e.g. its CRD is missing)."""
        if refresh or api_version not in self._cache:
            group, _, version = api_version.rpartition("/")
            path = f"/apis/{api_version}" if group else f"/api/{version}"
            try:
                listing = self.kube.request("GET", path)
            except NotFound:
                listing = {"resources": []}
            self._cache[api_version] = {
                r["kind"]: Resource(group, version, r["name"], r["kind"], bool(r.get("namespaced")))
                for r in listing.get("resources", []) if "/" not in r["name"]
            }
        found = self._cache[api_version].get(kind)
        if found is None:
            if not refresh:
                return self.resource(api_version, kind, refresh=True)
            raise ManifestError(f"the server does not serve {kind} in {api_version} (is its CRD applied?)")
        return found


def apply(kube: Kube, discovery: Discovery, doc: dict[str, Any], default_namespace: str = "default") -> dict[str, Any]:
    """Create ``doc`` or merge-patch the existing object; returns the object as stored."""
    res = discovery.resource(doc["apiVersion"], doc["kind"])
    meta = doc.setdefault("metadata", {})
    if res.namespaced:
        meta.setdefault("namespace", default_namespace)
    else:
        meta.pop("namespace", None)
    namespace = meta.get("namespace")
    status = doc.get("status")
    current = kube.get(res, meta["name"], namespace)
    if current is None:
        stored = kube.create(res, {k: v for k, v in doc.items() if k != "status"})
    else:
        stored = kube.patch(res, meta["name"], {k: v for k, v in doc.items() if k != "status"}, namespace)
    if status:
        stored = kube.patch_status(res, meta["name"], status, namespace)
    return stored
