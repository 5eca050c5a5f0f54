"""Translator (pure): Services and Nodes -> the servers each NGINX Plus upstream should hold.

As nginx-k8s-edge-controller's Translator: a Service port whose name starts with the prefix (``nkl-``)
names an upstream (the port name without the prefix); its kind is ``http`` unless the Service
annotation ``nginxinc.io/<full port name>`` says ``stream``; its servers are ``<node ip>:<nodePort>``
for every InternalIP of every node that is not a control-plane node (a node with two InternalIPs
gives two servers, as the original's §2.1 node listing does). Ports without the prefix are
ignored. Differences from the original: IPv6 node addresses are bracketed (``[fd00::1]:30080``),
both control-plane labels are honoured, and problems (unknown annotation value, a prefixed port
without a nodePort) are reported as data instead of silently producing an odd upstream.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.nginx.settings import NLK_ANNOTATION, EdgeNames

#: Labels marking control-plane nodes; their addresses never go into upstreams.
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
PROTOCOLS = ("http", "stream")


@dataclass(frozen=True, order=True)
class UpstreamRef:
    """One upstream on an NGINX Plus host: ``protocol`` (``http``|``stream``) and ``name``.

    HTTP and stream upstreams are separate namespaces in NGINX Plus, so both parts identify it.
    ``str()`` gives ``protocol:name``, the form used in workqueue keys and logs.
    """

    protocol: str
    name: str

    def __str__(self) -> str:
        return f"{self.protocol}:{self.name}"

    @classmethod
    def parse(cls, raw: str) -> UpstreamRef:
        """Inverse of ``str()``. Raises ``ValueError`` unless ``raw`` is ``http:NAME`` or ``stream:NAME``."""
        protocol, sep, name = raw.partition(":")
        if not sep or protocol not in PROTOCOLS or not name:
            raise ValueError(f"expected http:UPSTREAM or stream:UPSTREAM, got {raw!r}")
        return cls(protocol, name)


@dataclass(frozen=True)
class PortUpstream:
    """One prefixed port of one Service: the upstream it names and its nodePort (``None`` if unset)."""

    upstream: UpstreamRef
    port_name: str
    node_port: int | None


@dataclass
class Translation:
    """Desired servers per upstream (addresses, sorted) plus the problems found, as human text;
    ``owners``: the ``namespace/name`` of the one Service each upstream's servers come from (the
    ``nlk`` mode)."""

    upstreams: dict[UpstreamRef, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    owners: dict[UpstreamRef, str] = field(default_factory=dict)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def is_control_plane(node: Mapping[str, Any]) -> bool:
    """``True`` when the node carries ``node-role.kubernetes.io/control-plane`` or ``.../master``."""
    labels = _meta(node).get("labels") or {}
    return any(label in labels for label in CONTROL_PLANE_LABELS)


def node_addresses(node: Mapping[str, Any]) -> list[str]:
    """Every ``InternalIP`` address of the node, in API order (``[]`` when it has none).

    The original (nginx-loadbalancer-kubernetes, E1/E2 ``NodeIps``) takes every address of type
    ``InternalIP``: dual-stack nodes and nodes with several interfaces have more than one.
    """
    return [str(a["address"]) for a in (node.get("status") or {}).get("addresses") or []
            if isinstance(a, Mapping) and a.get("type") == "InternalIP" and a.get("address")]


def node_ips(nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every InternalIP address of the non-control-plane nodes, unique and sorted (so the desired
    server list, and with it the diff against NGINX Plus, does not depend on list order)."""
    ips = {ip for node in nodes if not is_control_plane(node) for ip in node_addresses(node)}
    return sorted(ips)


def host_part(ip: str) -> str:
    """The host part of a server address: IPv6 addresses bracketed as NGINX requires."""
    if ":" not in ip:
        return ip
    try:
        if isinstance(ipaddress.ip_address(ip), ipaddress.IPv6Address):
            return f"[{ip}]"
    except ValueError:
        pass
    return ip


def server_address(ip: str, port: int) -> str:
    """``ip:port``, with IPv6 addresses bracketed as NGINX requires (``[fd00::1]:30080``)."""
    return f"{host_part(ip)}:{port}"


def service_ports(service: Mapping[str, Any], names: EdgeNames,
                  problems: list[str] | None = None) -> list[PortUpstream]:
    """The prefixed ports of ``service`` as :class:`PortUpstream` (in spec order).

    The kind comes from the annotation ``<annotation_prefix>/<full port name>`` (``http`` default,
    ``stream``); another value keeps ``http`` and adds a problem. A port named exactly the prefix is
    skipped with a problem. ``problems`` (if given) receives the messages.
    """
    meta = _meta(service)
    annotations = meta.get("annotations") or {}
    ref = f"{meta.get('namespace', '')}/{meta.get('name', '?')}"
    out: list[PortUpstream] = []
    for port in (service.get("spec") or {}).get("ports") or []:
        port_name = str(port.get("name") or "")
        if not port_name.startswith(names.port_prefix):
            continue
        upstream = port_name[len(names.port_prefix):]
        if not upstream:
            if problems is not None:
                problems.append(f"Service {ref}: port {port_name!r} names no upstream")
            continue
        raw = str(annotations.get(f"{names.annotation_prefix}/{port_name}", "") or "").strip().lower()
        protocol = raw or "http"
        if protocol not in PROTOCOLS:
            if problems is not None:
                problems.append(f"Service {ref}: port {port_name!r}: annotation "
                                f"{names.annotation_prefix}/{port_name}={raw!r} is neither http nor stream; using http")
            protocol = "http"
        node_port = port.get("nodePort")
        if node_port is None and problems is not None:
            problems.append(f"Service {ref}: port {port_name!r} has no nodePort (Service type "
                            f"{(service.get('spec') or {}).get('type', 'ClusterIP')}); upstream gets no servers")
        out.append(PortUpstream(UpstreamRef(protocol, upstream), port_name,
                                int(node_port) if node_port is not None else None))
    return out


def service_upstreams(service: Mapping[str, Any] | None, names: EdgeNames) -> set[UpstreamRef]:
    """The upstreams a Service names (empty for ``None``); used to map watch events to keys."""
    if not service:
        return set()
    return {p.upstream for p in service_ports(service, names)}


def services_by_port_name(services: Iterable[Mapping[str, Any]], prefix: str) -> dict[str, list[Mapping[str, Any]]]:
    """``{upstream name: [Service, ...]}``: the Services having a port named ``prefix + name`` (each Service
    once per name, in input order). No other check: :func:`translate` of ``only`` over the Services of
    ``only.name`` gives exactly what it gives over all of them (servers and problems), at a fraction
    of the cost (a Node change syncs every upstream, each from the same Services)."""
    index: dict[str, list[Mapping[str, Any]]] = {}
    for service in services:
        seen: set[str] = set()
        for port in (service.get("spec") or {}).get("ports") or []:
            port_name = str(port.get("name") or "")
            if port_name.startswith(prefix) and port_name not in seen:
                seen.add(port_name)
                index.setdefault(port_name[len(prefix):], []).append(service)
    return index


def translate(services: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]],
              names: EdgeNames, only: UpstreamRef | None = None) -> Translation:
    """Desired servers of every upstream named by ``services`` (those of ``names.watched_namespace``
    only; Services being deleted, i.e. with a ``deletionTimestamp``, count as gone), or of the
    upstream ``only`` (the others are skipped; problems are still reported for every port).

    Several Services (or ports) naming the same upstream contribute the union of their servers; an
    upstream named but without nodePort gets ``[]``. Addresses are sorted.
    """
    result = Translation()
    hosts = [host_part(ip) for ip in node_ips(nodes)]
    merged: dict[UpstreamRef, set[str]] = {}
    for service in services:
        meta = _meta(service)
        if meta.get("namespace") != names.watched_namespace or meta.get("deletionTimestamp"):
            continue
        found: list[str] = []
        ports = service_ports(service, names, found)
        # A single-upstream translation reports only the problems of that upstream's port.
        result.problems += [p for p in found if only is None or f"'{names.port_prefix}{only.name}'" in p]
        for port in ports:
            if only is not None and port.upstream != only:
                continue
            servers = merged.setdefault(port.upstream, set())
            if port.node_port is not None:
                servers.update(f"{host}:{port.node_port}" for host in hosts)
    result.upstreams = {ref: sorted(servers) for ref, servers in sorted(merged.items())}
    return result


# ---- the "nlk" mode (nginx/nginx-loadbalancer-kubernetes v1.2, NGINXaaS) ---------------------------

#: The EndpointSlice label naming its Service.
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SUPPORTED_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")


@dataclass(frozen=True)
class ServiceProblem:
    """A problem a user fixes on one Service (recorded as a Warning Event on it): ``reason`` is the
    Event reason (``UnsupportedServiceType``), ``message`` says what and how."""

    namespace: str
    name: str
    reason: str
    message: str


def nlk_port_upstream(port_name: str) -> UpstreamRef | None:
    """``http-<upstream>`` / ``stream-<upstream>`` -> the upstream; ``None`` for any other name.

    As the original (``beb7ad4``): split at the *first* ``-``, the left part must be exactly ``http``
    or ``stream``, the rest (which may hold more ``-``) is the upstream name. Unlike the original,
    ``http-`` alone (an empty upstream name) is ignored: NGINX has no upstream without a name.
    """
    context, sep, upstream = port_name.partition("-")
    if not sep or context not in PROTOCOLS or not upstream:
        return None
    return UpstreamRef(context, upstream)


def nlk_selected(service: Mapping[str, Any] | None, match: str) -> bool:
    """Whether the ``nlk`` mode selects ``service``: its ``nginx.com/nginxaas`` annotation equals
    ``match`` (the configured ``service-annotation-match``), exactly as the original compares."""
    if not service:
        return False
    return (_meta(service).get("annotations") or {}).get(NLK_ANNOTATION) == match


def nlk_service_upstreams(service: Mapping[str, Any] | None, match: str) -> set[UpstreamRef]:
    """The upstreams a selected Service names through its ports (empty when not selected); used to
    map watch events to keys. An ExternalName Service names its upstreams too (its reconcile records
    the Event saying why it gets no servers)."""
    if not nlk_selected(service, match):
        return set()
    assert service is not None
    refs = (nlk_port_upstream(str(p.get("name") or "")) for p in (service.get("spec") or {}).get("ports") or [])
    return {ref for ref in refs if ref is not None}


def _endpoint_state(endpoint: Mapping[str, Any]) -> str:
    """``ready``, ``serving`` (terminating but still serving) or ``down``. Unset ``ready`` and
    ``serving`` mean true, as the EndpointSlice API defines; a terminating endpoint is never ready."""
    conditions = endpoint.get("conditions") or {}
    if conditions.get("terminating") is True:
        return "serving" if conditions.get("serving", conditions.get("ready")) is not False else "down"
    return "ready" if conditions.get("ready") is not False else "down"


def slice_servers(slices: Iterable[Mapping[str, Any]], port_name: str, problems: list[str],
                  ref: str) -> list[str]:
    """The servers of one named port across every EndpointSlice of a Service (deduplicated, sorted).

    Ready endpoints only; when none is ready, the serving-and-terminating ones (as kube-proxy falls
    back to them), so a one-pod rollout does not empty the upstream. Slices of ``addressType`` FQDN
    are skipped with a problem (NGINX would need a resolver). IPv6 addresses are bracketed.
    """
    ready: set[str] = set()
    serving: set[str] = set()
    for endpoint_slice in slices:
        ports = [p for p in endpoint_slice.get("ports") or []
                 if isinstance(p, Mapping) and p.get("name") == port_name and p.get("port") is not None]
        if not ports:
            continue
        if endpoint_slice.get("addressType", "IPv4") not in ("IPv4", "IPv6"):
            problems.append(f"Service {ref}: EndpointSlice {_meta(endpoint_slice).get('name')} has addressType "
                            f"{endpoint_slice.get('addressType')}; only IPv4/IPv6 addresses are synced")
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            state = _endpoint_state(endpoint)
            if state == "down":
                continue
            target = ready if state == "ready" else serving
            target.update(server_address(str(a), int(p["port"])) for a in endpoint.get("addresses") or []
                          for p in ports)
    return sorted(ready or serving)


#: Event reasons of a Service whose upstream claims the ``nlk`` mode refuses.
REASON_UPSTREAM_CLAIMED = "UpstreamClaimed"
REASON_NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"


def _created(service: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = _meta(service)  # one without a creationTimestamp (a manifest not yet applied) comes last
    return str(meta.get("creationTimestamp") or "~"), str(meta.get("namespace", "")), str(meta.get("name", ""))


def nlk_owners(claims: Mapping[UpstreamRef, Sequence[Mapping[str, Any]]],
               recorded: Mapping[UpstreamRef, str] | None = None) -> dict[UpstreamRef, str]:
    """The one Service (``namespace/name``) each upstream's servers come from, among the Services
    claiming it: the recorded owner while it still claims it, else the first claimant (the oldest
    ``creationTimestamp``, then namespace and name), who keeps it."""
    out: dict[UpstreamRef, str] = {}
    for upstream, services in claims.items():
        refs = {f"{ns}/{name}": (created, ns, name) for created, ns, name in map(_created, services)}
        kept = (recorded or {}).get(upstream)
        out[upstream] = kept if kept in refs else min(refs, key=lambda r: refs[r])
    return out


def translate_nlk(services: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]],
                  nodes: Iterable[Mapping[str, Any]], match: str, only: UpstreamRef | None = None,
                  owners: Mapping[UpstreamRef, str] | None = None,
                  namespaces: frozenset[str] | None = None) -> tuple[Translation, list[ServiceProblem]]:
    """Desired servers of every upstream named by a selected Service of any namespace (the ``nlk``
    mode; nginx/nginx-loadbalancer-kubernetes ``internal/translation``), or of ``only``.

    By ``spec.type``, for each port named ``http-<u>`` / ``stream-<u>`` (:func:`nlk_port_upstream`):

    - ``NodePort``: ``<node InternalIP>:<nodePort>`` of every non-control-plane node (the original
      excluded only the ``master`` label);
    - ``LoadBalancer``: ``<ingress ip>:<port>`` of every ``status.loadBalancer.ingress[*].ip`` (the
      service port; hostname-only entries are skipped with a problem, the original sent ``:port``);
    - ``ClusterIP`` (headless too): the endpoints of the Service's EndpointSlices (label
      ``kubernetes.io/service-name``, same namespace) for the slice port of the same name, aggregated
      across slices (:func:`slice_servers` for readiness);
    - anything else (``ExternalName``): no servers and a :class:`ServiceProblem` (the original
      failed and retried the Service forever).

    Services being deleted count as gone. An upstream has one owner (:func:`nlk_owners`; ``owners``: the
    recorded ones): only the owning Service's servers go into it; another Service naming it (of any
    namespace) adds nothing and gets a Warning Event ``UpstreamClaimed`` that names no other Service
    (the original merged them: a Service of any namespace could add its endpoints to any upstream).
    ``namespaces``: the only namespaces whose Services may name upstreams (``None``: every one); a
    Service of another gets ``NamespaceNotAllowed``. Returns the translation (problems as text) and
    the problems to record on Services.
    """
    result = Translation()
    events: list[ServiceProblem] = []
    slices_by_service: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for endpoint_slice in slices:
        meta = _meta(endpoint_slice)
        owner = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if owner:
            slices_by_service.setdefault((str(meta.get("namespace", "")), str(owner)), []).append(endpoint_slice)
    nodes = list(nodes)
    node_hosts = [host_part(ip) for ip in node_ips(nodes)]
    merged: dict[UpstreamRef, set[str]] = {}
    selected: list[tuple[Mapping[str, Any], list[tuple[Mapping[str, Any], UpstreamRef]]]] = []
    claims: dict[UpstreamRef, list[Mapping[str, Any]]] = {}
    for service in services:
        if not nlk_selected(service, match) or _meta(service).get("deletionTimestamp"):
            continue
        meta, spec = _meta(service), service.get("spec") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        ports = [(p, nlk_port_upstream(str(p.get("name") or ""))) for p in spec.get("ports") or []]
        named = [(p, up) for p, up in ports if up is not None and (only is None or up == only)]
        if not named:
            continue
        if namespaces is not None and namespace not in namespaces:
            message = (f"namespace {namespace} may not name NGINX upstreams "
                       f"(RECONCILERY_NGINX_NLK_ALLOWED_NAMESPACES); upstreams "
                       f"{', '.join(sorted(str(u) for _, u in named))} get no servers from this Service")
            events.append(ServiceProblem(namespace, name, REASON_NAMESPACE_NOT_ALLOWED, message))
            result.problems.append(f"Service {namespace}/{name}: {message}")
            continue
        selected.append((service, named))
        for _, up in named:
            claims.setdefault(up, []).append(service)
    result.owners = nlk_owners(claims, owners)
    for service, named in selected:
        meta, spec = _meta(service), service.get("spec") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        ref = f"{namespace}/{name}"
        kind = str(spec.get("type") or "ClusterIP")
        refused = sorted({str(up) for _, up in named if result.owners.get(up) != ref})
        if refused:
            message = (f"upstreams {', '.join(refused)} are served by another Service (the first to name them "
                       "keeps them): this Service adds no servers to them; rename its ports")
            events.append(ServiceProblem(namespace, name, REASON_UPSTREAM_CLAIMED, message))
            result.problems.append(f"Service {ref}: {message}")
            named = [(p, up) for p, up in named if result.owners.get(up) == ref]
            if not named:
                continue
        if kind not in SUPPORTED_TYPES:
            message = (f"Service type {kind} is not supported by the NGINX edge: use ClusterIP, NodePort or "
                       f"LoadBalancer; upstreams {', '.join(sorted(str(u) for _, u in named))} get no servers "
                       "from this Service")
            events.append(ServiceProblem(namespace, name, "UnsupportedServiceType", message))
            result.problems.append(f"Service {ref}: {message}")
        for port, upstream in named:
            servers = merged.setdefault(upstream, set())
            if kind == "NodePort":
                if port.get("nodePort") is None:
                    result.problems.append(f"Service {ref}: port {port.get('name')!r} has no nodePort yet")
                    continue
                servers.update(f"{h}:{int(port['nodePort'])}" for h in node_hosts)
            elif kind == "LoadBalancer":
                ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
                for entry in ingress:
                    if entry.get("ip"):
                        servers.add(server_address(str(entry["ip"]), int(port.get("port") or 0)))
                    else:
                        result.problems.append(f"Service {ref}: load balancer ingress {entry.get('hostname')!r} "
                                               "has no IP; skipped")
            elif kind == "ClusterIP":
                servers.update(slice_servers(slices_by_service.get((namespace, name), []), str(port.get("name")),
                                             result.problems, ref))
    result.upstreams = {r: sorted(servers) for r, servers in sorted(merged.items())}
    return result, events
