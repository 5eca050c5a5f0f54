"""Applying manifests through the ``kube`` layer (``reconcilery up --apply``).

Applying is ``kubectl apply`` reduced to what a local run needs: create, or merge-patch an existing
object; a ``status`` in the manifest is written through the status subresource afterwards (Nodes in
the examples carry their addresses there, as a kubelet would have reported them).
"""

from __future__ import annotations

from typing import Any

from kube import Kube, Resource
from kube.errors import NotFound
from kube.manifests import ManifestError


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
