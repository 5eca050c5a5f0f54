"""The ownership record of the NGINX edge (I/O): which (NGINX Plus host, upstream) pairs it has written to.

A ConfigMap (``RECONCILERY_NGINX_OWNED_CONFIGMAP``, default ``nginx-edge-upstreams``, in
:attr:`~tasks.nginx.settings.EdgeNames.owned_namespace`) holds one data key per pair
(:func:`tasks.nginx.plan.record_key`). A sync records its pair *before* its first write and forgets
it once no Service names the upstream and it has been emptied; the resync enqueues every recorded
pair, so an upstream whose Service was deleted while nothing watched is still emptied after a
restart (the original recorded nothing and left such servers for good).

Each write is a JSON merge patch of one data key, so reconciles of different pairs, in any process,
never conflict; a pair is only written by the reconcile holding its key's lease.
"""

from __future__ import annotations

import threading
from typing import Any

from kube import Conflict, Kube, NotFound, resources
from tasks.nginx.plan import parse_owned, record_key, record_value, recorded_owner
from tasks.nginx.reads import READS
from tasks.nginx.settings import EdgeNames
from tasks.nginx.translate import UpstreamRef

#: Labels of the ownership ConfigMap (so people and tools see what it is).
LABELS = {"app.kubernetes.io/managed-by": "reconcilery", "reconcilery.io/record": "nginx-edge-upstreams"}


def data(kube: Kube, names: EdgeNames) -> dict[str, Any]:
    """The ownership ConfigMap's ``data`` (``{}`` when there is none), read through the domain's reader."""
    configmap = READS.reader(kube).get(resources.CONFIGMAP, names.owned_configmap, names.owned_namespace)
    return dict((configmap or {}).get("data") or {})


_data = data


_parsed_lock = threading.Lock()
_parsed: dict[str, tuple[object, set[UpstreamRef]]] = {}


def owned_on(kube: Kube, names: EdgeNames, host: str) -> set[UpstreamRef]:
    """The upstreams recorded on ``host``; parsed once per state of the record the reader returns (the
    informer's object: a Node change's 8 shard keys per host parse it once, not 8 times, per process)."""
    raw = (READS.reader(kube).get(resources.CONFIGMAP, names.owned_configmap, names.owned_namespace) or {}).get("data")
    with _parsed_lock:
        kept = _parsed.get(host)
        if kept is not None and kept[0] is raw and raw is not None:
            return kept[1]
    found = {ref for h, ref in parse_owned(raw, host) if h == host}
    with _parsed_lock:
        if len(_parsed) > 256:  # hosts come from the operator's settings; never grows past them
            _parsed.clear()
        _parsed[host] = (raw, found)  # keeps ``raw`` referenced: its identity stays its own
    return found


def owned(kube: Kube, names: EdgeNames) -> set[tuple[str, UpstreamRef]]:
    """Every recorded ``(host, upstream)``."""
    return parse_owned(_data(kube, names))


def recorded(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef) -> str | None:
    """The owner recorded for ``upstream`` on ``host`` (``""``: none), ``None`` when not recorded."""
    return recorded_owner(_data(kube, names), host, upstream)



def _patch(kube: Kube, names: EdgeNames, data: dict[str, Any]) -> None:
    try:
        kube.patch(resources.CONFIGMAP, names.owned_configmap, {"data": data}, namespace=names.owned_namespace)
        return
    except NotFound:
        if all(v is None for v in data.values()):
            return
    body = {"metadata": {"name": names.owned_configmap, "namespace": names.owned_namespace, "labels": LABELS,
                         "annotations": {"reconcilery.io/description": (
                             "NGINX Plus upstreams the NGINX edge has written to, one key per (host, upstream); "
                             "the resync empties those no Service names any more")}},
            "data": {k: v for k, v in data.items() if v is not None}}
    try:
        kube.create(resources.CONFIGMAP, body)
    except Conflict:  # created meanwhile by another reconcile
        kube.patch(resources.CONFIGMAP, names.owned_configmap, {"data": data}, namespace=names.owned_namespace)


def record(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, owner: str = "") -> None:
    """Record ``upstream`` on ``host`` with its owning Service ``owner`` (creating the ConfigMap when
    needed). Raises ``kube.ApiError`` (e.g. :class:`kube.NotFound` when the namespace does not exist):
    nothing is written to the host unless it is recorded first."""
    _patch(kube, names, {record_key(host, upstream): record_value(host, upstream, owner)})


def forget(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef) -> None:
    """Drop the record of ``upstream`` on ``host`` (nothing when there is none)."""
    _patch(kube, names, {record_key(host, upstream): None})
