"""NGINX edge watch registrations: Services, Nodes and the settings ConfigMap -> (host, upstream) keys.

Every event is mapped to the keys of the ``nginx-upstream`` controller that it may change, on every
NGINX Plus host of the cached settings ConfigMap:

- a Service of the watched namespace -> the upstreams its prefixed ports name, before *and* after
  the change (so a removed port, a renamed port or a deleted Service empties its upstream);
- a Node that joins, leaves, changes its InternalIP or its control-plane label -> every upstream
  named by any cached Service (the original only re-synced when a Service changed);
- the settings ConfigMap -> every upstream on every host (a newly added host gets the full state;
  a changed TLS mode or Secret name applies at once).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from informers.store import Stores
from kube import resources
from tasks.nginx.controller import CONTROLLER_NAME, edge_names, keys_for
from tasks.nginx.settings import EdgeNames, parse_hosts
from tasks.nginx.translate import UpstreamRef, is_control_plane, node_addresses, service_upstreams
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

SERVICES = "nginx-services"
NODES = "nginx-nodes"
CONFIG = "nginx-config"


def hosts_from(stores: Stores, names: EdgeNames | None = None) -> list[str]:
    """The NGINX Plus hosts of the cached ConfigMap (invalid entries skipped: the reconcile reports them)."""
    names = names or edge_names()
    for configmap in stores.list(CONFIG):
        meta = configmap.get("metadata") or {}
        if meta.get("name") == names.configmap and meta.get("namespace") == names.namespace:
            return parse_hosts(str((configmap.get("data") or {}).get("nginx-hosts") or ""))[0]
    return []


def all_upstreams(stores: Stores, names: EdgeNames | None = None) -> set[UpstreamRef]:
    """Every upstream named by a cached Service of the watched namespace."""
    names = names or edge_names()
    refs: set[UpstreamRef] = set()
    for service in stores.list(SERVICES):
        refs |= service_upstreams(service, names)
    return refs


def map_service(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """A Service change -> its upstreams (old and new ports) on every host."""
    names = names or edge_names()
    refs = service_upstreams(event.object, names) | service_upstreams(event.old, names)
    return keys_for(hosts_from(stores, names), refs) if refs else []


def node_relevant(event: WatchEvent) -> bool:
    """Whether a Node event can change upstream servers: it joined or left, or its InternalIPs or
    control-plane role changed (status heartbeats do not)."""
    if event.type != "MODIFIED" or event.old is None:
        return True

    def view(node: dict[str, Any]) -> tuple[list[str], bool]:
        return node_addresses(node), is_control_plane(node)

    return view(event.object) != view(event.old)


def map_node(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """A Node joining, leaving or changing address/role -> every upstream on every host."""
    if not node_relevant(event):
        return []
    names = names or edge_names()
    return keys_for(hosts_from(stores, names), all_upstreams(stores, names))


def map_config(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """The settings ConfigMap changed -> every upstream on every (current) host."""
    names = names or edge_names()
    meta = event.object.get("metadata") or {}
    if meta.get("name") != names.configmap:
        return []
    return keys_for(hosts_from(stores, names), all_upstreams(stores, names))


def registrations() -> list[WatchRegistration]:
    """The edge's watches, in the namespaces this process's settings name."""
    names = edge_names()
    return [
        WatchRegistration(name=SERVICES, resource=resources.SERVICE, namespace=names.watched_namespace,
                          label_selector=None, map_event=map_service, controllers=(CONTROLLER_NAME,)),
        WatchRegistration(name=NODES, resource=resources.NODE, namespace=None, label_selector=None,
                          map_event=map_node, controllers=(CONTROLLER_NAME,)),
        WatchRegistration(name=CONFIG, resource=resources.CONFIGMAP, namespace=names.namespace,
                          label_selector=None, map_event=map_config, controllers=(CONTROLLER_NAME,),
                          field_selector=f"metadata.name={names.configmap}"),
    ]


def __getattr__(name: str) -> Any:
    """``REGISTRATIONS`` is built on use, not at import: its namespaces are settings."""
    if name == "REGISTRATIONS":
        return registrations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
