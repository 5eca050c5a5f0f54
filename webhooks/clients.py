"""The Kubernetes client factory of the webhook processes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kube import Kube, client_for
from kube.kubeconfig import from_kubeconfig


def kube_factory(kubeconfig: str | None, timeout: float = 5.0) -> Callable[[], Any]:
    """A factory of :class:`kube.Kube` clients for a webhook's reads (lazy: nothing connects until called).

    ``kubeconfig`` names a kubeconfig file (cluster ``local``, ``timeout`` seconds per request);
    ``None`` or ``""``: the local cluster as :func:`kube.client_for` resolves it (in-cluster, else
    ``~/.kube/config``, else the embedded dev API server).
    """
    def build() -> Any:
        if kubeconfig:
            return Kube(from_kubeconfig(kubeconfig), cluster="local", timeout=timeout)
        return client_for("local")

    return build
