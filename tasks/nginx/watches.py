"""NGINX edge watch registrations: Services, EndpointSlices, Nodes and the settings -> (host, upstream) keys.

Every event is mapped to the keys of the ``nginx-upstream`` controller that it may change, on every
NGINX Plus host of the mode concerned (hosts from the cached settings):

``nkl`` mode:

- a Service of the watched namespace -> the upstreams its prefixed ports name, before *and* after
  the change (so a removed port, a renamed port or a deleted Service empties its upstream);
- the ``nkl-config`` ConfigMap -> every upstream on every host, as one host key each (a newly added
  host gets the full state; a changed TLS mode or Secret name applies at once).

``nlk`` mode (nginx/nginx-loadbalancer-kubernetes v1.2's watcher, keyed by upstream instead of Service):

- a Service of any namespace -> the upstreams its ``http-``/``stream-`` ports name while it is
  selected (annotation ``nginx.com/nginxaas`` equal to ``service-annotation-match``), before *and*
  after: the annotation added moves it in, removed moves it out (its upstreams are emptied);
- an EndpointSlice (label ``kubernetes.io/service-name``) added, changed in its endpoints or ports,
  or deleted -> the upstreams of the selected Service it belongs to (the original enqueued a
  *delete* of the whole Service on a slice delete, emptying its upstreams until the next event);
- the ``nlk`` ConfigMap -> every ``nlk`` upstream on every ``nlk`` host; with the file form
  (``RECONCILERY_NGINX_NLK_CONFIG_FILE``, no watch API) the same when the file's content changes,
  polled every :data:`NLK_FILE_POLL_SECONDS` by the Services registration (:class:`NlkFilePoll`).

Both: a Node that joins, leaves, changes its InternalIP or its control-plane label -> the host key
(every upstream on the host in one reconcile) of every ``nkl`` host, and of every ``nlk`` host where a
selected ``NodePort`` Service names an upstream (the original: every Service, one by one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from informers.store import Stores
from kube import resources
from tasks.nginx.controller import CONTROLLER_NAME, edge_names, keys_for, read_nlk_file
from tasks.nginx.controller import host_keys as shard_keys
from tasks.nginx.reads import ENDPOINTSLICE
from tasks.nginx.settings import (
    NLK_CONFIG_KEY,
    ConfigError,
    EdgeNames,
    ModeConfig,
    nlk_document,
    parse_hosts,
    parse_nlk_settings,
)
from tasks.nginx.translate import (
    SERVICE_NAME_LABEL,
    UpstreamRef,
    is_control_plane,
    nlk_service_upstreams,
    node_addresses,
    service_upstreams,
)
from watchers.engine import Poll, WatchEvent, WatchRegistration
from workers.controller import Key

log = structlog.get_logger("tasks.nginx.watches")

SERVICES = "nginx-services"
NODES = "nginx-nodes"
CONFIG = "nginx-config"
NLK_SERVICES = "nginx-nlk-services"
NLK_SLICES = "nginx-nlk-endpointslices"
NLK_CONFIG = "nginx-nlk-config"

#: Seconds between two reads of the ``nlk`` configuration file by the watcher (a kubelet updates a
#: mounted ConfigMap within about a minute; a few seconds more do not matter, a read costs nothing).
NLK_FILE_POLL_SECONDS = 5.0


def hosts_from(stores: Stores, names: EdgeNames | None = None) -> list[str]:
    """The ``nkl`` mode's NGINX Plus hosts from the cached ConfigMap (invalid entries skipped: the
    reconcile reports them); ``[]`` when that mode does not run."""
    names = names or edge_names()
    if not names.nkl or CONFIG not in stores.names():
        return []
    for configmap in stores.list(CONFIG):
        meta = configmap.get("metadata") or {}
        if meta.get("name") == names.configmap and meta.get("namespace") == names.namespace:
            return parse_hosts(str((configmap.get("data") or {}).get("nginx-hosts") or ""))[0]
    return []


def nlk_settings(stores: Stores, names: EdgeNames | None = None) -> ModeConfig | None:
    """The ``nlk`` mode's settings (cached ConfigMap, or the configuration file); ``None`` when the
    mode does not run or its configuration is missing or invalid (the reconcile reports that)."""
    names = names or edge_names()
    if not names.nlk:
        return None
    try:
        if names.nlk_config_file:
            return parse_nlk_settings(read_nlk_file(names.nlk_config_file))
        if NLK_CONFIG not in stores.names():
            return None
        configmap = stores.get(NLK_CONFIG, names.nlk_namespace, names.nlk_configmap)
        return None if configmap is None else parse_nlk_settings(nlk_document(configmap.get("data")))
    except ConfigError as exc:
        log.debug("nlk configuration invalid; its events map to no host", error=str(exc))
        return None


def nlk_upstreams(stores: Stores, settings: ModeConfig, node_port_only: bool = False) -> set[UpstreamRef]:
    """Every upstream named by a cached selected Service (``node_port_only``: of NodePort Services)."""
    refs: set[UpstreamRef] = set()
    for service in stores.list(NLK_SERVICES):
        if node_port_only and (service.get("spec") or {}).get("type") != "NodePort":
            continue
        refs |= nlk_service_upstreams(service, settings.annotation_match)
    return refs


def all_upstreams(stores: Stores, names: EdgeNames | None = None) -> set[UpstreamRef]:
    """Every upstream named by a cached Service of the watched namespace (``nkl`` mode)."""
    names = names or edge_names()
    refs: set[UpstreamRef] = set()
    if not names.nkl or SERVICES not in stores.names():
        return refs
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


def host_keys(hosts: Iterable[str]) -> list[tuple[str, Key]]:
    """The shard keys of each host that together sync every upstream on it
    (:func:`tasks.nginx.controller.host_keys`)."""
    return [(CONTROLLER_NAME, key) for host in dict.fromkeys(hosts) for key in shard_keys(host)]


def map_node(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """A Node joining, leaving or changing address/role -> the host key (every upstream on the host,
    one reconcile: :func:`tasks.nginx.controller.sync_host`) of every ``nkl`` host naming an upstream,
    and of every ``nlk`` host where a selected NodePort Service names one. One key per host instead
    of one per (host, upstream): a Node change concerns every upstream, and 1,000 Services on 4 hosts
    would be 4,000 keys, each reading and translating the whole cluster state. A host's key is
    :data:`~tasks.nginx.controller.HOST_SHARDS` shard keys, each with its own jitter, so the syncs
    spread over the jitter window and the worker threads."""
    if not node_relevant(event):
        return []
    names = names or edge_names()
    hosts = hosts_from(stores, names) if all_upstreams(stores, names) else []
    settings = nlk_settings(stores, names)
    if settings is not None and nlk_upstreams(stores, settings, node_port_only=True):
        hosts += settings.hosts
    return host_keys(hosts)


def map_nlk_service(event: WatchEvent, stores: Stores, names: EdgeNames | None = None
                    ) -> Iterable[tuple[str, Key]]:
    """An ``nlk`` Service change -> the upstreams it names while selected, before and after (the
    annotation added or removed moves it in or out) on every ``nlk`` host."""
    settings = nlk_settings(stores, names)
    if settings is None:
        return []
    refs = (nlk_service_upstreams(event.object, settings.annotation_match)
            | nlk_service_upstreams(event.old, settings.annotation_match))
    return keys_for(settings.hosts, refs) if refs else []


def _slice_view(endpoint_slice: dict[str, Any] | None) -> Any:
    if not endpoint_slice:
        return None
    return (endpoint_slice.get("addressType"), endpoint_slice.get("ports"), endpoint_slice.get("endpoints"),
            ((endpoint_slice.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL))


def map_slice(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """An EndpointSlice added, deleted or changed in its endpoints or ports -> the upstreams of the
    selected Service it belongs to (label ``kubernetes.io/service-name``, same namespace), on every
    ``nlk`` host. A change of its metadata only maps to nothing."""
    if event.type == "MODIFIED" and event.old is not None and _slice_view(event.object) == _slice_view(event.old):
        return []
    settings = nlk_settings(stores, names)
    if settings is None:
        return []
    refs: set[UpstreamRef] = set()
    for endpoint_slice in (event.object, event.old):
        meta = (endpoint_slice or {}).get("metadata") or {}
        owner = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if owner:
            refs |= nlk_service_upstreams(stores.get(NLK_SERVICES, meta.get("namespace"), owner),
                                          settings.annotation_match)
    return keys_for(settings.hosts, refs) if refs else []


def map_nlk_config(event: WatchEvent, stores: Stores, names: EdgeNames | None = None
                   ) -> Iterable[tuple[str, Key]]:
    """The ``nlk`` ConfigMap changed -> every ``nlk`` upstream on every (current) ``nlk`` host; with a
    changed ``service-annotation-match``, also the upstreams the Services selected by the old value name
    (they leave and are emptied)."""
    names = names or edge_names()
    if (event.object.get("metadata") or {}).get("name") != names.nlk_configmap:
        return []
    settings = nlk_settings(stores, names)
    if settings is None:
        return []
    refs = nlk_upstreams(stores, settings)
    if event.old is not None:
        try:
            old_match = parse_nlk_settings(nlk_document(event.old.get("data"))).annotation_match
        except ConfigError:
            old_match = settings.annotation_match
        if old_match != settings.annotation_match:
            refs |= nlk_upstreams(stores, ModeConfig(annotation_match=old_match))
    return keys_for(settings.hosts, refs)


def map_nlk_file(previous: str | None, current: str | None, stores: Stores) -> list[tuple[str, Key]]:
    """The ``nlk`` configuration file's content went from ``previous`` to ``current`` (``None``:
    missing or unreadable) -> what :func:`map_nlk_config` maps a ConfigMap change to: every ``nlk``
    upstream on every host of ``current``, plus the upstreams the Services selected by the previous
    ``service-annotation-match`` name (they leave and are emptied). Nothing when the content is
    unchanged, or when ``current`` is missing or invalid (the reconciles report that; when it is
    fixed, that change maps)."""
    if current == previous or current is None:
        return []
    try:
        settings = parse_nlk_settings(nlk_document({NLK_CONFIG_KEY: current}))
    except ConfigError:
        return []
    refs = nlk_upstreams(stores, settings)
    if previous is not None:
        try:
            old_match = parse_nlk_settings(nlk_document({NLK_CONFIG_KEY: previous})).annotation_match
        except ConfigError:
            old_match = settings.annotation_match
        if old_match != settings.annotation_match:
            refs |= nlk_upstreams(stores, ModeConfig(annotation_match=old_match))
    return list(keys_for(settings.hosts, refs))


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


class NlkFilePoll:
    """The watcher's poll of the ``nlk`` configuration file (the thin shell of :func:`map_nlk_file`):
    remembers the content it last saw and maps a change. The first content is read when the poll is
    built, before the watches list (their initial list enqueues every key with the file as it is
    then), so a change between the two is not lost; a change seen twice only enqueues twice.

    The content is compared, not the modification time: a kubelet swaps a mounted ConfigMap's
    symlink (new mtime, maybe same size), and an edit within the mtime granularity still counts."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.last = _read_text(path)

    def __call__(self, stores: Stores) -> list[tuple[str, Key]]:
        current = _read_text(self.path)
        previous, self.last = self.last, current
        keys = map_nlk_file(previous, current, stores)
        if keys:
            log.info("nlk configuration file changed; enqueueing every nlk upstream", path=self.path,
                     keys=len(keys))
        return keys


def map_config(event: WatchEvent, stores: Stores, names: EdgeNames | None = None) -> Iterable[tuple[str, Key]]:
    """The settings ConfigMap changed -> every upstream on every (current) host: each host's key
    (:func:`host_keys`; it syncs the upstreams named and those recorded)."""
    names = names or edge_names()
    meta = event.object.get("metadata") or {}
    if meta.get("name") != names.configmap:
        return []
    return host_keys(hosts_from(stores, names))


def registrations() -> list[WatchRegistration]:
    """The edge's watches for the running modes, in the namespaces this process's settings name."""
    names = edge_names()
    out = [WatchRegistration(name=NODES, resource=resources.NODE, namespace=None, label_selector=None,
                             map_event=map_node, controllers=(CONTROLLER_NAME,))]
    if names.nkl:
        out += [
            WatchRegistration(name=SERVICES, resource=resources.SERVICE, namespace=names.watched_namespace,
                              label_selector=None, map_event=map_service, controllers=(CONTROLLER_NAME,)),
            WatchRegistration(name=CONFIG, resource=resources.CONFIGMAP, namespace=names.namespace,
                              label_selector=None, map_event=map_config, controllers=(CONTROLLER_NAME,),
                              field_selector=f"metadata.name={names.configmap}"),
        ]
    if names.nlk:
        out += [
            WatchRegistration(name=NLK_SERVICES, resource=resources.SERVICE, namespace=None, label_selector=None,
                              map_event=map_nlk_service, controllers=(CONTROLLER_NAME,),
                              poll=(Poll(NlkFilePoll(names.nlk_config_file), NLK_FILE_POLL_SECONDS)
                                    if names.nlk_config_file else None)),
            WatchRegistration(name=NLK_SLICES, resource=ENDPOINTSLICE, namespace=None,
                              label_selector=SERVICE_NAME_LABEL, map_event=map_slice,
                              controllers=(CONTROLLER_NAME,)),
        ]
        if not names.nlk_config_file:
            out.append(WatchRegistration(
                name=NLK_CONFIG, resource=resources.CONFIGMAP, namespace=names.nlk_namespace, label_selector=None,
                map_event=map_nlk_config, controllers=(CONTROLLER_NAME,),
                field_selector=f"metadata.name={names.nlk_configmap}"))
    return out
