"""One reader for every reconcile: a kind is read from the process's informers or from the API server
as its domain registered it, as controller-runtime's client with a cache (and ``DisableFor``).

A reconcile reads through a :class:`Reader`: ``get(res, name, namespace)`` and
``list(res, namespace, label_selector)``. :class:`kube.Kube` is one (every read a request to the API
server); :class:`DelegatingReader` is the other: it routes each read by the domain's registration
(:class:`Reads`, one per domain): kinds registered as :class:`Cached` are served by
:mod:`informers.informer` (no request once synced; the worker's own writes through the same client
are seen at once; the API server until the initial list is in, while informers are off, or inside
:func:`informers.informer.direct_reads`), every other kind by the API server.

Answers are the same either way: a missing object is ``None``, a kind that is not served raises
:class:`kube.ResourceMissing`, other failures of an API read raise :class:`kube.ApiError`. Objects read
from an informer are the stored dicts (callers must not change them), or, for a kind registered
``packed``, decoded anew on every read.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from informers import informer
from kube import Kube, Resource

#: ``(namespace or "", name)`` of one object.
ObjectRef = tuple[str, str]


class Reader(Protocol):
    """What a reconcile reads through (:class:`kube.Kube`, :class:`DelegatingReader`)."""

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None`` if it does not exist. Raises :class:`kube.ResourceMissing` when the
        kind is not served, :class:`kube.ApiError` on other failures."""
        ...

    def list(self, res: Resource, namespace: str | None = None,
             label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every matching object (all namespaces when ``namespace`` is ``None``). Raises
        :class:`kube.ResourceMissing` when the kind is not served, :class:`kube.ApiError` otherwise."""
        ...


@dataclass(frozen=True)
class Cached:
    """A kind a domain's reconciles read from the process's informers.

    Attributes:
        resource: the kind.
        per_namespace: one informer per namespace a read names (only the namespaces read are
            listed and watched); a read across namespaces uses one cluster-wide informer. ``False``:
            one cluster-wide informer serves every read.
        objects: only these objects (``(namespace, name)``) are read from the informer; other gets,
            and every list, go to the API server. ``None``: every read of the kind.
        packed: the kind's informers keep packed stores (:func:`informers.informer.pack`): for kinds
            with many objects of which a reconcile reads a few (owned objects of a primary), not for
            kinds a reconcile lists whole.
        label_index: ``False``: the kind's informers keep no label index
            (:func:`informers.informer.unindex`): for kinds read by name only (a list by label selector
            decodes every object of the store).
    """

    resource: Resource
    per_namespace: bool = False
    objects: frozenset[ObjectRef] | None = None
    packed: bool = False
    label_index: bool = True

    def serves_get(self, name: str, namespace: str | None) -> bool:
        """Whether a get of ``namespace/name`` is read from the informer."""
        return self.objects is None or (namespace or "", name) in self.objects

    def serves_list(self) -> bool:
        """Whether lists of the kind are read from the informer."""
        return self.objects is None

    def scope(self, namespace: str | None) -> str | None:
        """The namespace of the informer that serves a read of ``namespace`` (``None``: cluster-wide)."""
        return namespace if self.per_namespace and namespace else None


@dataclass(frozen=True)
class Reads:
    """One domain's read registration: the kinds its reconciles read from informers (the rest: the
    API server). Its ``packed`` kinds are packed in every informer of the process from then on
    (:func:`informers.informer.pack`), and its kinds without ``label_index`` keep none
    (:func:`informers.informer.unindex`). Raises ``ValueError`` when a kind is registered twice."""

    cached: tuple[Cached, ...] = ()
    _by_kind: Mapping[str, Cached] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_kind: dict[str, Cached] = {}
        for rule in self.cached:
            if rule.resource.full_name in by_kind:
                raise ValueError(f"{rule.resource} is registered twice")
            by_kind[rule.resource.full_name] = rule
        object.__setattr__(self, "_by_kind", by_kind)
        informer.pack(*(rule.resource for rule in self.cached if rule.packed))  # the process's informers
        informer.unindex(*(rule.resource for rule in self.cached if not rule.label_index))

    def rule(self, res: Resource) -> Cached | None:
        """How ``res`` is cached; ``None``: read from the API server."""
        return self._by_kind.get(res.full_name)

    def reader(self, kube: Kube) -> DelegatingReader:
        """The reader of ``kube``'s cluster under this registration."""
        return DelegatingReader(kube, self)


#: The registration of a domain whose reconciles read every kind from the API server.
API = Reads()


class DelegatingReader:
    """A :class:`Reader` over ``kube`` that serves the kinds ``reads`` caches from the process's
    informers (:func:`informers.informer.get` / :func:`~informers.informer.list_objects`) and every
    other read from the API server (``kube``)."""

    def __init__(self, kube: Kube, reads: Reads) -> None:
        self.kube = kube
        self.reads = reads

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        rule = self.reads.rule(res)
        if rule is None or not rule.serves_get(name, namespace):
            return self.kube.get(res, name, namespace)
        return informer.get(self.kube, res, name, namespace, watch_namespace=rule.scope(namespace))

    def list(self, res: Resource, namespace: str | None = None,
             label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        rule = self.reads.rule(res)
        if rule is None or not rule.serves_list():
            return self.kube.list(res, namespace=namespace, label_selector=label_selector)
        return informer.list_objects(self.kube, res, namespace, label_selector, watch_namespace=rule.scope(namespace))


__all__ = ["API", "Cached", "DelegatingReader", "ObjectRef", "Reader", "Reads"]
