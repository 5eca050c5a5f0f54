"""Clients of clusters: one shared :class:`~kube.client.Kube` per registered name, and short-lived ones.

``"local"`` is built on first use by :func:`kube.kubeconfig.local_api_client`; other long-lived
clusters are added by :func:`register`. Remote clusters reached through a kubeconfig Secret in the
local cluster (an SKR's ``kcp-system/kubeconfig-<kyma>``, the Garden's ``gardener-credentials``) get a
short-lived client from :func:`remote`, closed when the ``with`` block ends, as the original SKR
looper builds a manager per connect and throws it away.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes.client import ApiClient

from kube import audit, resources
from kube.client import Kube
from kube.kubeconfig import KubeconfigError, from_kubeconfig_dict, local_api_client, parse_kubeconfig, secret_value

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


class RemoteKube(Kube):
    """A :class:`Kube` of another cluster (from a kubeconfig Secret): its calls are recorded by
    :mod:`kube.audit` as made to that cluster, so the RBAC check of deploy/ leaves them out (they are
    governed by the other cluster's RBAC for the kubeconfig's user)."""

    def open(self, *args: Any, **kwargs: Any) -> Any:
        with audit.on_cluster(self.cluster):
            return super().open(*args, **kwargs)


def client_from_secret(local: Kube, namespace: str, name: str, key: str = "config", cluster: str = "",
                       timeout: float = 30.0) -> tuple[Kube, dict]:
    """A new :class:`Kube` for the cluster whose kubeconfig is in Secret ``namespace/name`` (key
    ``key``) of ``local``, and the parsed kubeconfig. The caller closes it (see :func:`remote`).

    Raises :class:`~kube.kubeconfig.KubeconfigError` when the Secret, the key or a usable kubeconfig is
    missing, :class:`~kube.errors.ApiError` when the Secret cannot be read.
    """
    secret = local.get(resources.SECRET, name, namespace)
    if secret is None:
        raise KubeconfigError(f"Secret {namespace}/{name} not found")
    config = parse_kubeconfig(secret_value(secret, key))
    meta = secret.get("metadata") or {}
    version = (meta.get("uid"), meta.get("resourceVersion"), key) if meta.get("resourceVersion") else None
    return RemoteKube(from_kubeconfig_dict(config, cache_key=version), cluster=cluster or name, timeout=timeout), config


@contextmanager
def remote(local: Kube, namespace: str, name: str, key: str = "config", cluster: str = "",
           timeout: float = 30.0) -> Iterator[Kube]:
    """A short-lived client of the cluster whose kubeconfig is in Secret ``namespace/name``.

    ``with remote(kcp, "kcp-system", f"kubeconfig-{kyma}", cluster=kyma, timeout=10) as skr: ...``
    builds the client, yields it and closes its connection pool when the block ends, whatever happens.
    ``timeout`` bounds connect and each read of a request (seconds). Raises as :func:`client_from_secret`.
    """
    kube, _ = client_from_secret(local, namespace, name, key, cluster, timeout)
    try:
        yield kube
    finally:
        kube.close()
