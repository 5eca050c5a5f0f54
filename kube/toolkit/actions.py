"""The writes a plan asks for (pure data; :func:`kube.toolkit.execute.execute` makes them).

- :class:`Action`: one Kubernetes write (create, update, patch, delete, label, add or remove a
  finalizer) in the reconciled object's cluster or in another one the executor was given;
- :class:`Call`: one provider call, ``<client>.<method>(*args, **kwargs)`` on a client the executor was
  given (an EC2 client, a Filestore client, an NGINX Plus host).

A plan's :class:`~kube.toolkit.outcome.Outcome` lists them in the order they are made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from kube.resources import Resource

__all__ = ["Action", "Call", "Verb", "Write"]

Verb = Literal["create", "update", "patch", "delete", "label", "add_finalizer", "remove_finalizer"]


@dataclass(frozen=True)
class Action:
    """One Kubernetes write: ``verb`` on ``object`` of ``kind``.

    ``kind`` names the kind (logs, metrics); ``resource`` is its :class:`~kube.resources.Resource`, or
    ``None``: the executor maps ``kind`` through its ``resources``. ``cluster`` names the client it goes
    to (``""``: the reconciled object's cluster; else a key of the executor's ``clusters``, e.g. ``"kcp"``).

    - ``create``: ``object`` is the desired manifest (``metadata.name`` or ``generateName``).
    - ``update``: the desired manifest carrying the read ``resourceVersion``: a replace (PUT) that fails
      on a stale one.
    - ``patch``: ``body`` is a JSON merge patch of the object ``object`` names; a patch of the reconciled
      object whose body names a ``metadata.resourceVersion`` is made under the object's as last written
      by the same execution (a precondition that this execution's own writes do not break).
    - ``label``: ``body`` are labels merged into ``metadata.labels`` (a merge patch).
    - ``delete``: only ``metadata.namespace``/``name`` of ``object`` matter; a missing one is done.
    - ``add_finalizer`` / ``remove_finalizer``: ``object`` is the object as read (the write carries its
      ``resourceVersion``), ``body`` is ``{"finalizer": name}`` (and ``"legacy"``: older names removed with
      it); nothing is sent when there is nothing to change.

    ``actual`` is the object as found, for updates and deletes (for logs and dry runs).
    """

    verb: Verb
    kind: str
    object: dict[str, Any]
    actual: dict[str, Any] | None = None
    body: Mapping[str, Any] | None = None
    cluster: str = ""
    resource: Resource | None = None

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
        where = f"{self.cluster}:" if self.cluster else ""
        return f"{self.verb} {self.kind} {where}{self.namespace}/{name}"

    @classmethod
    def on(cls, verb: Verb, res: Resource, obj: Mapping[str, Any], *, body: Mapping[str, Any] | None = None,
           cluster: str = "", actual: dict[str, Any] | None = None) -> Action:
        """``verb`` on ``obj`` (a manifest, or only its ``metadata.name``/``namespace``) of ``res``."""
        return cls(verb, res.kind, dict(obj), actual=actual, body=body, cluster=cluster, resource=res)

    @classmethod
    def named(cls, verb: Verb, res: Resource, name: str, namespace: str = "", *,
              body: Mapping[str, Any] | None = None, cluster: str = "", actual: dict[str, Any] | None = None) -> Action:
        """``verb`` (``patch``, ``label``, ``delete``) on the object ``namespace/name`` of ``res``."""
        meta: dict[str, Any] = {"name": name}
        if namespace:
            meta["namespace"] = namespace
        return cls.on(verb, res, {"metadata": meta}, body=body, cluster=cluster, actual=actual)

    @classmethod
    def finalizer(cls, add: bool, res: Resource, obj: Mapping[str, Any], finalizer: str, *,
                  cluster: str = "", legacy: tuple[str, ...] = ()) -> Action:
        """Add (``add``) or remove ``finalizer`` (with its ``legacy`` names) on ``obj`` as read (under its
        ``resourceVersion``)."""
        body: dict[str, Any] = {"finalizer": finalizer}
        if legacy:
            body["legacy"] = list(legacy)
        return cls.on("add_finalizer" if add else "remove_finalizer", res, obj, body=body, cluster=cluster)


@dataclass(frozen=True)
class Call:
    """One provider call: ``<client>.<method>(*args, **kwargs)``.

    Attributes:
        method: the client method.
        args, kwargs: its arguments.
        client: which of the turn's clients (``""``: the only one; AWS peering: ``"remote"``).
        kind: what the plan calls this write (``create``, ``accept``, ``route``): how its
            :attr:`~kube.toolkit.outcome.Outcome.refused` tells the calls apart, and the logs.
    """

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    client: str = ""
    kind: str = ""

    def describe(self) -> str:
        """``remote.accept_peering`` (the client and method)."""
        return f"{self.client + '.' if self.client else ''}{self.method}"


#: One write of an :class:`~kube.toolkit.outcome.Outcome`.
Write = Union[Action, Call]  # noqa: UP007 (a runtime alias the pure modules import)
