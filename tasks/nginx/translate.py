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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.nginx.settings import EdgeNames

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
    """Desired servers per upstream (addresses, sorted) plus the problems found, as human text."""

    upstreams: dict[UpstreamRef, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


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


def node_address(node: Mapping[str, Any]) -> str | None:
    """The node's first ``InternalIP`` address, or ``None``."""
    addresses = node_addresses(node)
    return addresses[0] if addresses else None


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
