"""Cloud Resources watch registrations on the KCP (the SKRs are never watched: the sweep visits them).

All of them watch the KCP namespace (``kcp-system``, ``RECONCILERY_CLOUD_KCP_NAMESPACE``), where Kyma's
control plane keeps Kyma CRs and GardenerClusters and the controllers keep the KCP objects, so the
watcher needs a namespaced Role only.

- Kyma CRs -> ``cloud-kyma`` (activation);
- GardenerClusters -> ``cloud-scope``; Scopes -> ``cloud-scope`` and ``cloud-kyma`` (a new Scope
  activates its SKR);
- Networks -> ``cloud-network``;
- every declared kind with a KCP controller (:mod:`tasks.cloud.registry`; the IpRange among them) ->
  ``cloud-<kind>``; a deleted one also -> its IpRange (a consumer), the Networks it names and its
  scope's Nuke (a nuked kind), which wait for it; a Network whose status changed -> the objects that
  name it (the declaration's ``networks``: they wait for it);
- Nukes -> ``cloud-nuke``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from informers.store import Stores
from tasks.cloud import names, registry, settings
from tasks.cloud.controller import IPRANGE, KYMA, NETWORK, NUKE, SCOPE
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

KYMAS = "cloud-kymas"
GARDENER_CLUSTERS = "cloud-gardenerclusters"
SCOPES = "cloud-scopes"
NETWORKS = "cloud-networks"
NUKES = "cloud-nukes"


def _key(event: WatchEvent, name: str | None = None) -> Key:
    meta = event.object.get("metadata") or {}
    return Key(event.cluster, str(meta.get("namespace") or ""), name or str(meta.get("name")))


def _scope_of(obj: dict) -> str:
    return str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "")


def map_kyma(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    return [(KYMA, _key(event))]


def map_gardener_cluster(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    return [(SCOPE, _key(event))]


def map_scope(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    return [(SCOPE, _key(event)), (KYMA, _key(event))]


def map_network(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    out = [(NETWORK, _key(event))]
    if event.old is None or (event.old.get("status") != event.object.get("status")):
        namespace = (event.object.get("metadata") or {}).get("namespace")
        name = str((event.object.get("metadata") or {}).get("name") or "")
        for declared in registry.kinds():
            if declared.kcp is None or declared.kcp.networks is None or not declared.controller:
                continue
            try:
                users = stores.list(store_of(declared))
            except KeyError:  # the kind is not watched in this process (``watch --controllers``)
                users = []
            for obj in users:
                meta = obj.get("metadata") or {}
                if meta.get("namespace") == namespace and name in declared.kcp.networks(obj):
                    out.append((declared.controller, Key(event.cluster, str(namespace), str(meta.get("name")))))
    return out


def store_of(declared: registry.Kind) -> str:
    """The watch registration (and informer store) of a declared kind's KCP objects: ``cloud-<kind>s``."""
    return f"cloud-{declared.name}s"


def kind_mapper(declared: registry.Kind) -> Callable[[WatchEvent, Stores], Iterable[tuple[str, Key]]]:
    """The watch map of a declared kind: its own controller's key; a deleted one also wakes its IpRange
    (a consumer: the IpRange's deletion waits for it), the Networks it names (``networks``: their deletion
    waits for it), its scope's Nuke (a nuked kind) and what the declaration's ``wakes`` names."""
    assert declared.kcp is not None
    own, wakes, networks = declared.controller, declared.kcp.wakes, declared.kcp.networks

    def mapper(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
        out = [(own, _key(event))] if own else []
        if event.type == "DELETED":
            spec = event.object.get("spec") or {}
            if declared.iprange_consumer is not None and ((spec.get("ipRange") or {}).get("name")):
                out.append((IPRANGE, _key(event, str(spec["ipRange"]["name"]))))
            if networks is not None:
                out += [(NETWORK, _key(event, network)) for network in networks(event.object)]
            if declared.nuke is not None:
                out.append((NUKE, _key(event, _scope_of(event.object))))
        if wakes is not None:
            out += [(controller, _key(event, name)) for controller, name in wakes(event.type, event.object)]
        return out

    return mapper


def map_nuke(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    return [(NUKE, _key(event))]


def registrations() -> list[WatchRegistration]:
    """The KCP watches, in the namespace this process's settings name."""
    ns = settings.current().kcp_namespace
    return [
        WatchRegistration(KYMAS, names.KYMA, ns, None, map_kyma, (KYMA,)),
        WatchRegistration(GARDENER_CLUSTERS, names.GARDENER_CLUSTER, ns, None, map_gardener_cluster, (SCOPE,)),
        WatchRegistration(SCOPES, names.SCOPE, ns, None, map_scope, (SCOPE, KYMA)),
        WatchRegistration(NETWORKS, names.NETWORK, ns, None, map_network, (NETWORK, *(
            k.controller for k in registry.kinds() if k.kcp is not None and k.kcp.networks is not None
            and k.controller))),
        WatchRegistration(NUKES, names.NUKE, ns, None, map_nuke, (NUKE,)),
        *(WatchRegistration(store_of(k), k.kcp.resource, ns, None, kind_mapper(k),
                            tuple(dict.fromkeys(c for c in (k.controller, IPRANGE if k.iprange_consumer is not None
                                                            else "", NETWORK if k.kcp.networks is not None else "",
                                                            NUKE if k.nuke is not None else "") if c)))
          for k in registry.kinds() if k.kcp is not None and k.controller
          and store_of(k) != NETWORKS),  # the Networks' own watch above wakes their users too
    ]
