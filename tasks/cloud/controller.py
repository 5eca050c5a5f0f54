"""The Cloud Resources controller registrations (imported by the worker, watcher and beat processes).

KCP loop, queue ``cloud-kcp`` (keys: ``local/<namespace>/<name>`` of the KCP object):

========================  ===================================================================
``cloud-kyma``            SKR activation from the Kyma CR and the Scope (:mod:`tasks.cloud.kcp.kyma`)
``cloud-scope``           Scope from the Garden, the kyma Network, exposed data (:mod:`.kcp.scope`)
``cloud-<kind>``          every declared kind's KCP controller (:mod:`tasks.cloud.kcp.kind`), e.g.
                          ``cloud-iprange`` (KCP IpRanges into cloud subnets), ``cloud-network``
``cloud-nuke``            a gone runtime's KCP objects deleted (:mod:`tasks.cloud.kcp.nuke`)
========================  ===================================================================

SKR loop, queue ``cloud-skr``:

========================  ===================================================================
``cloud-skr-sweep``       one key (``local//sweep``): a look at the rotation each tick; beat's
                          resync (re)starts it, it requeues itself every ``sweep_tick`` seconds
``cloud-skr-connect``     one key per SKR (``local/kcp-system/<kyma>``): one connect
                          (:mod:`tasks.cloud.skr.connect`); the workqueue's exclusivity per key is
                          the per-SKR gate
``cloud-skr-object``      one key per SKR object of a timed kind (``local/<kyma>/<kind>/<ns>/<name>``),
                          requeued at the time its turn asks for (:mod:`tasks.cloud.skr.timed`)
========================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from kube import Resource, ResourceMissing, client_for
from tasks.cloud import names, registry, settings, sweep
from tasks.cloud.kcp import kind, kyma, nuke, scope
from tasks.cloud.skr import connect, timed
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key
from workers.controller import registry as controllers

KCP_QUEUE = "cloud-kcp"
SKR_QUEUE = "cloud-skr"

KYMA = "cloud-kyma"
SCOPE = "cloud-scope"
NETWORK = "cloud-network"  # the Network kind's controller
IPRANGE = "cloud-iprange"  # the IpRange kind's controller (its consumers wake it)
NUKE = "cloud-nuke"
SWEEP = sweep.SWEEP
CONNECT = sweep.CONNECT
OBJECT = timed.OBJECT

#: The sweep's only key.
SWEEP_KEY = Key(LOCAL_CLUSTER, "", "sweep")


def _keys_of(*kinds: Resource) -> list[Key]:
    kube = client_for(LOCAL_CLUSTER)
    found: set[Key] = set()
    for res in kinds:
        try:
            objects = kube.list(res, settings.current().kcp_namespace)
        except ResourceMissing:
            continue
        for obj in objects:
            meta = obj.get("metadata") or {}
            found.add(Key(LOCAL_CLUSTER, str(meta.get("namespace") or ""), str(meta.get("name"))))
    return sorted(found)


def kyma_keys() -> Iterable[Key]:
    """Every Kyma CR (resync of activation: idempotent, so it can never strand an SKR)."""
    return _keys_of(names.KYMA)


def scope_keys() -> Iterable[Key]:
    """Every GardenerCluster and Scope."""
    return _keys_of(names.GARDENER_CLUSTER, names.SCOPE)


_KCP_BACKOFF = Backoff(base=1.0, cap=300.0, jitter=0.1)


def _kind_controller(declared: registry.Kind) -> Controller:
    """The KCP controller of a declared kind (:mod:`tasks.cloud.kcp.kind`)."""
    assert declared.kcp is not None
    res = declared.kcp.resource
    return Controller(declared.controller, KCP_QUEUE, partial(kind.reconcile, kind=declared), backoff=_KCP_BACKOFF,
                      resync_interval=declared.kcp.resync, list_keys=partial(_keys_of, res),
                      timeout=declared.kcp.timeout)


controllers.register(Controller(KYMA, KCP_QUEUE, kyma.reconcile, backoff=_KCP_BACKOFF, resync_interval=600.0,
                                list_keys=kyma_keys))
controllers.register(Controller(SCOPE, KCP_QUEUE, scope.reconcile, backoff=_KCP_BACKOFF, resync_interval=1800.0,
                                list_keys=scope_keys, timeout=120.0))
controllers.register(Controller(NUKE, KCP_QUEUE, nuke.reconcile, backoff=_KCP_BACKOFF))

for _declared in registry.kinds():  # every declared kind's controller (``cloud-<kind>``)
    if _declared.controller:
        controllers.register(partial(_kind_controller, _declared))

controllers.register(lambda: Controller(SWEEP, SKR_QUEUE, sweep.reconcile, backoff=Backoff(base=0.5, cap=10.0),
                                     resync_interval=settings.current().sweep_resync, list_keys=lambda: [SWEEP_KEY]))
#: Failures never reach the workqueue's backoff (a failed connect is a terminal error: the rotation
#: retries it with its own backoff); the timeout is the original's workerTimeout. Both registrations
#: are built on the registry's first use (their numbers are settings; nothing is read at import).
controllers.register(lambda: Controller(CONNECT, SKR_QUEUE, connect.reconcile, backoff=Backoff(base=1.0, cap=300.0),
                                     timeout=settings.current().worker_timeout))
controllers.register(lambda: Controller(OBJECT, SKR_QUEUE, timed.reconcile, backoff=Backoff(base=1.0, cap=300.0),
                                     timeout=settings.current().worker_timeout))

__all__ = ["CONNECT", "IPRANGE", "KCP_QUEUE", "KYMA", "NETWORK", "NUKE", "OBJECT", "SCOPE",
           "SKR_QUEUE",
           "SWEEP", "SWEEP_KEY", "settings"]
