"""The writes a plan asks for: :class:`Action` (pure data; :func:`kube.toolkit.apply.apply_actions`
writes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Action", "Verb"]

Verb = Literal["create", "update", "delete"]


@dataclass(frozen=True)
class Action:
    """One write: ``verb`` on ``object`` (a full manifest) of ``kind`` (a name the caller maps to a
    :class:`~kube.resource.Resource`).

    ``create``: the desired manifest (``metadata.name`` or ``generateName``).
    ``update``: the desired manifest carrying the read ``resourceVersion``, for a replace (PUT) that
    fails on a stale one. ``delete``: only ``metadata.namespace``/``name`` of ``object`` matter.
    ``actual`` is the object as found, for updates and deletes (for logs and dry runs).
    """

    verb: Verb
    kind: str
    object: dict[str, Any]
    actual: dict[str, Any] | None = None

    @property
    def namespace(self) -> str:
        """The object's namespace (``""`` for cluster-scoped objects)."""
        return str((self.object.get("metadata") or {}).get("namespace") or "")

    @property
    def name(self) -> str:
        """The object's name (``""`` for a create by ``generateName``)."""
        return str((self.object.get("metadata") or {}).get("name") or "")

    def describe(self) -> str:
        """``create VirtualService shop/orders-`` (generateName shown for creates)."""
        meta = self.object.get("metadata") or {}
        name = meta.get("name") or meta.get("generateName") or ""
        return f"{self.verb} {self.kind} {self.namespace}/{name}"
