"""One :class:`~kube.client.Kube` per cluster name, built once and shared by the process.

``"local"`` is built on first use by :func:`kube.kubeconfig.local_api_client`; other clusters
(SKRs) are added by :func:`register` when the SKR loop has their kubeconfig.
"""

from __future__ import annotations

import threading

from kubernetes.client import ApiClient

from kube.client import Kube
from kube.kubeconfig import local_api_client

LOCAL = "local"

_lock = threading.Lock()
_clients: dict[str, Kube] = {}


def register(name: str, api_client: ApiClient) -> Kube:
    """Make ``api_client`` the client of cluster ``name`` (replacing and closing an older one)."""
    kube = Kube(api_client, cluster=name)
    with _lock:
        old = _clients.get(name)
        _clients[name] = kube
    if old is not None and old.api_client is not api_client:
        old.close()
    return kube


def unregister(name: str) -> None:
    """Forget cluster ``name`` and close its client (no-op if unknown)."""
    with _lock:
        old = _clients.pop(name, None)
    if old is not None:
        old.close()


def registered(name: str) -> bool:
    """Whether a client for ``name`` exists (``local`` counts once built)."""
    with _lock:
        return name in _clients


def client_for(cluster: str = LOCAL) -> Kube:
    """The :class:`Kube` of ``cluster``. ``"local"`` is built on first use from
    ``$RECONCILERY_KUBECONFIG`` / in-cluster / default kubeconfig. Raises ``KeyError`` for a cluster
    never registered, ``kubernetes.config.ConfigException`` when no local config is usable."""
    with _lock:
        kube = _clients.get(cluster)
        if kube is not None:
            return kube
        if cluster != LOCAL:
            raise KeyError(f"no client for cluster {cluster!r}: register it with kube.clusters.register")
        kube = _clients[cluster] = Kube(local_api_client(), cluster=LOCAL)
        return kube


def reset() -> None:
    """Close and forget every client (tests; a process whose kubeconfig changed)."""
    with _lock:
        old = list(_clients.values())
        _clients.clear()
    for kube in old:
        kube.close()
