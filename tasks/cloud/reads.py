"""The KCP as the SKR loop reads it: the KCP objects a connect reads by name come from the process's
informers (:mod:`informers.reader`), as cloud-manager's SKR reconcilers read the KCP through the
manager's cached client (``kcpCluster.K8sClient()``).

A steady connect read eight KCP objects from the KCP API server (its Scope, kubeconfig Secret, each SKR
object's KCP mirror and the Network of a peering, its SkrStatus): eight of its 22 requests. Six of them
now come from the informers: for 20,000 SKRs revisited every 300 s some 400 fewer requests per second on
the KCP API server (issue 31). From the informers they are memory reads; the worker's own writes of them
are in its stores at once (write-through), the KCP loop's arrive by the watch. Kinds read: ``Scope``,
``Network`` and the KCP resource of every declared kind with an SKR side (:mod:`.registry`), each in
packed stores (many objects, of which a connect reads a few) without a label index (read by name only:
the index of their owner labels, unique per object, was ~600 of ~1,000 bytes per object), one informer
per namespace read (the KCP namespace: a namespaced Role suffices, as for the watches of
:mod:`.watches`). In a steady fleet they rarely change, so their watches are quiet.

Not cached: the SkrStatus (every connect writes it, so every worker process would decode and pack a
watch event of every connect, ~0.1 ms each: more than the GET it saves once there are two processes),
the kubeconfig Secrets (a Secret informer would hold every Secret of the KCP namespace, credentials
included, in every SKR worker, and need list and watch on Secrets) and lists by label selector (a packed
store is not indexed by label: such a list goes to the API server).
"""

from __future__ import annotations

import functools

from informers.reader import Cached, DelegatingReader, Reads
from kube import Kube, Resource
from tasks.cloud import names, registry

__all__ = ["kcp_reader", "kcp_reads", "kcp_resources"]


def kcp_resources() -> tuple[Resource, ...]:
    """The KCP kinds the SKR loop reads from informers: Scope, Network and the KCP resource of every
    declared kind with an SKR side (each once)."""
    found = {res.full_name: res for res in (names.SCOPE, names.NETWORK)}
    for declared in registry.kinds():
        if declared.kcp is not None and declared.skr is not None:  # a KCP mirror of SKR objects
            found.setdefault(declared.kcp.resource.full_name, declared.kcp.resource)
    return tuple(found.values())


@functools.cache
def kcp_reads() -> Reads:
    """The SKR loop's read registration of the KCP (built once the kinds are declared)."""
    return Reads(tuple(Cached(res, per_namespace=True, packed=True, label_index=False) for res in kcp_resources()))


def kcp_reader(kcp: Kube) -> DelegatingReader:
    """A reader of ``kcp``: gets of :func:`kcp_resources` from the process's informers, other reads from
    the API server (:class:`informers.reader.DelegatingReader`)."""
    return kcp_reads().reader(kcp)
