"""Render (pure): Services, EndpointSlices, Nodes and the settings -> what every (host, upstream) should hold.

The same plan the controller applies (:mod:`tasks.nginx.plan`), in the same modes, without any
server: one document per host and upstream, ``{host, upstream, protocol, servers}`` with the servers
sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.nginx.plan import ClusterState, desired_upstreams, parse_config
from tasks.nginx.settings import EdgeNames


def flatten(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Objects with ``kind: List`` (``kubectl get -o yaml``) replaced by their items."""
    out: list[Mapping[str, Any]] = []
    for obj in objects:
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            out += flatten(obj["items"])
        else:
            out.append(obj)
    return out


def render(objects: Iterable[Mapping[str, Any]], names: EdgeNames | None = None,
           nlk_config: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """``(documents, problems)`` for the cluster objects among ``objects`` in the running modes.

    ``nkl`` mode: the Services of the watched namespace, the Nodes and the ``nkl-config`` ConfigMap.
    ``nlk`` mode: the Services of every namespace, EndpointSlices and Nodes, with ``nlk_config``
    (the original's ``config.yaml`` as a mapping) or else the ``nlk`` ConfigMap among ``objects``.
    Documents come per host (``nkl`` hosts first, each in configuration order), then per upstream
    (protocol, name), as :func:`tasks.nginx.plan.desired_upstreams` makes them. Objects without a
    namespace are taken as in ``default``, as ``kubectl apply`` without ``-n`` would. Raises
    :class:`~tasks.nginx.settings.ConfigError` when a configuration is invalid.
    """
    names = names or EdgeNames()
    services: list[Mapping[str, Any]] = []
    slices: list[Mapping[str, Any]] = []
    nodes: list[Mapping[str, Any]] = []
    config: Mapping[str, Any] | None = None
    nlk_map: Mapping[str, Any] | None = None
    for obj in flatten(objects):
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        if kind in ("Service", "EndpointSlice"):
            (services if kind == "Service" else slices).append({**obj, "metadata": {**meta, "namespace": namespace}})
        elif kind == "Node":
            nodes.append(obj)
        elif kind == "ConfigMap" and meta.get("name") == names.configmap and namespace == names.namespace:
            config = obj
        elif kind == "ConfigMap" and meta.get("name") == names.nlk_configmap and namespace == names.nlk_namespace:
            nlk_map = obj.get("data") or {}
    watched = [s for s in services if (s.get("metadata") or {}).get("namespace") == names.watched_namespace]
    state = ClusterState((config or {}).get("data"), watched, nodes,
                         nlk_config if nlk_config is not None else nlk_map, services, slices)
    edge = parse_config(state, names)
    desired, problems = desired_upstreams(state, edge, names)
    if names.nkl and config is None:
        problems.append(f"no ConfigMap {names.namespace}/{names.configmap} in the input: no nkl NGINX Plus hosts")
    if names.nlk and nlk_config is None and nlk_map is None:
        problems.append(f"no --config file and no ConfigMap {names.nlk_namespace}/{names.nlk_configmap} in the "
                        "input: no nlk NGINX Plus hosts")
    docs = [{"host": host, "upstream": ref.name, "protocol": ref.protocol, "servers": list(servers)}
            for host, upstreams in desired.items() for ref, servers in upstreams.items()]
    return docs, problems
