"""Building an official ``kubernetes.client.ApiClient`` for a cluster (I/O: reads files and env).

Order for the local cluster: ``$RECONCILERY_KUBECONFIG`` (a path), else the in-cluster service
account, else the default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

log = logging.getLogger(__name__)

ENV_KUBECONFIG = "RECONCILERY_KUBECONFIG"
#: Every watch holds one pooled connection; urllib3's default (5 x CPUs) is too small for a
#: watcher process with many registrations plus the calls of its map functions.
POOL_MAXSIZE = 64


def _tune(configuration: Any) -> None:
    configuration.connection_pool_maxsize = max(POOL_MAXSIZE, configuration.connection_pool_maxsize or 0)


def from_kubeconfig(path: str | None = None, context: str | None = None) -> k8s_client.ApiClient:
    """An ApiClient from the kubeconfig at ``path`` (default: ``$KUBECONFIG`` / ``~/.kube/config``).

    Raises ``kubernetes.config.ConfigException`` when the file is missing or invalid.
    """
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                persist_config=False)
    _tune(configuration)
    return k8s_client.ApiClient(configuration)


def from_kubeconfig_dict(config: dict[str, Any], context: str | None = None) -> k8s_client.ApiClient:
    """An ApiClient from a kubeconfig already parsed into a dict (e.g. an SKR's kubeconfig Secret)."""
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(config, context=context, client_configuration=configuration,
                                          persist_config=False)
    _tune(configuration)
    return k8s_client.ApiClient(configuration)


def local_api_client() -> k8s_client.ApiClient:
    """The ApiClient of the local cluster: ``$RECONCILERY_KUBECONFIG``, in-cluster, or default kubeconfig.

    Raises ``kubernetes.config.ConfigException`` when none of them is usable.
    """
    path = os.environ.get(ENV_KUBECONFIG)
    if path:
        log.info("kube client source=%s path=%s", ENV_KUBECONFIG, path)
        return from_kubeconfig(path)
    try:
        configuration = k8s_client.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException:
        log.info("kube client source=kubeconfig")
        return from_kubeconfig()
    log.info("kube client source=in-cluster")
    _tune(configuration)
    return k8s_client.ApiClient(configuration)
