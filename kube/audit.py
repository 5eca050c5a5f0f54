"""A recorder of every Kubernetes API call a process makes, for the RBAC check of the deployment.

Off unless ``RECONCILERY_KUBE_AUDIT_DIR`` is set; then each call of :meth:`kube.Kube.open` appends
one JSON line ``{"component", "cluster", "deploy_components", "verb", "group", "resource",
"subresource", "namespaced", "namespace", "name"}`` to ``<dir>/<component>-<pid>.jsonl``
(``deploy_components``: ``RECONCILERY_KUBE_AUDIT_COMPONENTS`` as a list, the opt-in deploy components
the process's configuration stands for). ``cluster`` is ``""`` for the cluster the
component is deployed to (what deploy/'s RBAC governs) and the cluster's name for a call made inside
:func:`on_cluster` (the clients of other clusters, :class:`kube.clusters.RemoteKube`: an SKR, the
Garden). The *component* is ``RECONCILERY_COMPONENT`` when set (the deployment sets it), else it is
derived from the ``reconcilery`` command line (``watch`` -> ``watcher``, ``worker -Q q`` ->
``worker-q``, ``webhook``, ``beat``), else ``other``.

:func:`parse_call` (pure) turns a method and REST path into the RBAC request attributes, as the API
server's request-info resolver does; discovery and other non-resource paths give ``None``.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kube import settings

ENV_DIR = "RECONCILERY_KUBE_AUDIT_DIR"
ENV_COMPONENT = "RECONCILERY_COMPONENT"

_cluster: contextvars.ContextVar[str] = contextvars.ContextVar("reconcilery_audit_cluster", default="")


@contextmanager
def on_cluster(name: str) -> Iterator[None]:
    """Calls recorded inside the block are marked as made to the other cluster ``name``."""
    token = _cluster.set(name)
    try:
        yield
    finally:
        _cluster.reset(token)


@dataclass(frozen=True)
class ApiCall:
    """The RBAC attributes of one request. ``resource`` is the plural; ``namespaced`` is whether the
    request names a namespace (a cluster-wide list of a namespaced kind is not)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespaced: bool
    namespace: str
    name: str


def parse_call(method: str, path: str, query: Sequence[tuple[str, Any]] = ()) -> ApiCall | None:
    """The :class:`ApiCall` of ``method path?query``, or ``None`` for a non-resource request
    (discovery: ``/api``, ``/apis/g/v``, ``/version``). A list or watch with the field selector
    ``metadata.name=X`` names ``X`` (RBAC's ``resourceNames`` then apply, as on a real API server)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    elif len(rest) in (1, 2) and rest[0] == "namespaces":  # the Namespace objects themselves
        pass
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    watch = any(k == "watch" and str(v).lower() in ("true", "1") for k, v in query)
    verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create", "PUT": "update",
            "PATCH": "patch", "DELETE": "delete" if name else "deletecollection"}.get(method.upper(), method.lower())
    if not name:  # a list/watch of one object by field selector, as the API server's RequestInfo reads it
        for k, v in query:
            if k == "fieldSelector" and str(v).startswith("metadata.name=") and "," not in str(v):
                name = str(v).split("=", 1)[1]
    return ApiCall(verb, group, resource, subresource, bool(namespace), namespace, name)


def component_of(argv: Sequence[str], environ: dict[str, str] | None = None) -> str:
    """The component a process is (see the module doc)."""
    component = (settings.current() if environ is None else settings.KubeSettings.load(environ)).component
    if component:
        return component
    args = list(argv)
    for command, name in (("watch", "watcher"), ("webhook", "webhook"), ("beat", "beat")):
        if command in args:
            return name
    if "worker" in args:
        for flag in ("-Q", "--queues"):
            if flag in args and args.index(flag) + 1 < len(args):
                return "worker-" + args[args.index(flag) + 1].split(",")[0]
        return "worker"
    return "other"


class _Recorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._file: Any = None
        self._pid = 0

    def record(self, method: str, path: str, query: Sequence[tuple[str, Any]] = ()) -> None:
        current = settings.current()
        directory = current.kube_audit_dir
        if not directory:
            return
        call = parse_call(method, path, query)
        if call is None:
            return
        component = component_of(sys.argv)
        deploy_components = [c.strip() for c in current.kube_audit_components.split(",") if c.strip()]
        line = json.dumps({"component": component, "cluster": _cluster.get(), "deploy_components": deploy_components,
                           **asdict(call)}) + "\n"
        with self._lock:
            if self._file is None or self._pid != os.getpid():  # a forked child writes its own file
                Path(directory).mkdir(parents=True, exist_ok=True)
                self._pid = os.getpid()
                self._file = open(Path(directory) / f"{component}-{self._pid}.jsonl", "a", buffering=1)  # noqa: SIM115
            self._file.write(line)


_recorder = _Recorder()


def record(method: str, path: str, query: Sequence[tuple[str, Any]] = ()) -> None:
    """Record one request when ``RECONCILERY_KUBE_AUDIT_DIR`` is set (else a no-op)."""
    _recorder.record(method, path, query)


def read_calls(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every call recorded under ``directory``."""
    return [json.loads(line) for f in sorted(Path(directory).glob("*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


__all__ = ["ENV_COMPONENT", "ENV_DIR", "ApiCall", "component_of", "on_cluster", "parse_call", "read_calls",
           "record"]
