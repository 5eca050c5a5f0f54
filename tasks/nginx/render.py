"""Render (pure): Services, Nodes and the settings ConfigMap -> what every (host, upstream) should hold.

The same translation the controller applies, without any server: one document per host and upstream,
``{host, upstream, protocol, servers}`` with the servers sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.nginx.settings import EdgeNames, parse_settings
from tasks.nginx.translate import translate


def flatten(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Objects with ``kind: List`` (``kubectl get -o yaml``) replaced by their items."""
    out: list[Mapping[str, Any]] = []
    for obj in objects:
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            out += flatten(obj["items"])
        else:
            out.append(obj)
    return out


def render(objects: Iterable[Mapping[str, Any]], names: EdgeNames | None = None
           ) -> tuple[list[dict[str, Any]], list[str]]:
    """``(documents, problems)`` for the Services, Nodes and settings ConfigMap among ``objects``.

    Documents come per host (ConfigMap order), then per upstream (protocol, name). Objects without a
    namespace are taken as in ``default``, as ``kubectl apply`` without ``-n`` would. Raises
    :class:`~tasks.nginx.settings.SettingsError` when the ConfigMap is invalid.
    """
    names = names or EdgeNames()
    services: list[Mapping[str, Any]] = []
    nodes: list[Mapping[str, Any]] = []
    config: Mapping[str, Any] | None = None
    for obj in flatten(objects):
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        if kind == "Service":
            services.append({**obj, "metadata": {**meta, "namespace": namespace}})
        elif kind == "Node":
            nodes.append(obj)
        elif kind == "ConfigMap" and meta.get("name") == names.configmap and namespace == names.namespace:
            config = obj
    settings = parse_settings((config or {}).get("data"))
    translation = translate(services, nodes, names)
    problems = list(translation.problems)
    if config is None:
        problems.append(f"no ConfigMap {names.namespace}/{names.configmap} in the input: no NGINX Plus hosts")
    docs = [{"host": host, "upstream": ref.name, "protocol": ref.protocol, "servers": list(servers)}
            for host in settings.hosts for ref, servers in translation.upstreams.items()]
    return docs, problems
