"""Building an official ``kubernetes.client.ApiClient`` for a cluster (I/O: reads files and env).

Order for the local cluster: ``$RECONCILERY_KUBECONFIG`` (a path), else the in-cluster service
account, else the default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from kube import settings

log = logging.getLogger(__name__)

ENV_KUBECONFIG = "RECONCILERY_KUBECONFIG"
#: Every watch holds one pooled connection; urllib3's default (5 x CPUs) is too small for a
#: watcher process with many registrations plus the calls of its map functions.
POOL_MAXSIZE = 64


def refresh_interval(environ: Mapping[str, str] | None = None) -> float:
    """``RECONCILERY_KUBE_REFRESH_SECONDS`` (5): seconds between two runs of the official loader's
    credential refresh hook (see :func:`_tune`); ``0`` runs it before every request, as the official
    client does. Read from ``environ`` or this process's settings (:mod:`kube.settings`). Raises
    :class:`config.SettingsError` (a ``ValueError``) on a bad value."""
    return (settings.current() if environ is None else settings.KubeSettings.load(environ)).kube_refresh_seconds


def _throttled(hook: Callable[[Any], None], interval: float) -> Callable[[Any], None]:
    """``hook`` run at most once per ``interval`` seconds (thread-safe; the first call runs it)."""
    lock = threading.Lock()
    last = [float("-inf")]
    hook_ref = [hook]

    def refresh(configuration: Any) -> None:
        now = time.monotonic()
        if now - last[0] < interval:
            return
        with lock:
            if now - last[0] < interval:
                return
            last[0] = now
        hook_ref[0](configuration)
        # the loader's hook installs itself again (``_set_config``): keep the throttle in front
        if getattr(configuration, "refresh_api_key_hook", None) is not refresh:
            inner = configuration.refresh_api_key_hook
            if inner is not None:
                hook_ref[0] = inner
            configuration.refresh_api_key_hook = refresh

    refresh.__wrapped__ = hook  # type: ignore[attr-defined]
    return refresh


def _tune(configuration: Any, small: bool = False) -> None:
    """Pool size: :data:`POOL_MAXSIZE` for long-lived clients; a short-lived SKR client (``small``) is
    used by one connect at a time and keeps urllib3's default.

    The official kubeconfig loader installs a ``refresh_api_key_hook`` that runs before *every*
    request: it re-applies the whole kubeconfig to the Configuration (setting ``host`` re-reads the
    proxy environment) and reloads expired credentials, about 0.6 ms of CPU per request. It is
    throttled to once per :func:`refresh_interval` seconds: an expiring token is renewed at most
    that much later."""
    if not small:
        configuration.connection_pool_maxsize = max(POOL_MAXSIZE, configuration.connection_pool_maxsize or 0)
    hook = getattr(configuration, "refresh_api_key_hook", None)
    interval = refresh_interval()
    if hook is not None and interval > 0 and not hasattr(hook, "__wrapped__"):
        configuration.refresh_api_key_hook = _throttled(hook, interval)


def from_kubeconfig(path: str | None = None, context: str | None = None) -> k8s_client.ApiClient:
    """An ApiClient from the kubeconfig at ``path`` (default: ``$KUBECONFIG`` / ``~/.kube/config``).

    Raises ``kubernetes.config.ConfigException`` when the file is missing or invalid.
    """
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                persist_config=False)
    _tune(configuration)
    return k8s_client.ApiClient(configuration)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KubeconfigError(Exception):
    """A kubeconfig that cannot be used: missing, not valid YAML, or without a usable context."""


def parse_kubeconfig(text: str | bytes) -> dict[str, Any]:
    """The kubeconfig document in ``text`` (YAML or JSON). Raises :class:`KubeconfigError`."""
    try:
        doc = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise KubeconfigError("kubeconfig has no clusters")
    return doc


def secret_value(secret: Mapping[str, Any], key: str) -> str:
    """The decoded value of ``key`` in a Secret object (``data`` is base64, ``stringData`` plain).

    Raises :class:`KubeconfigError` when the key is missing or not valid base64/UTF-8.
    """
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise KubeconfigError(f"key {key!r} of the Secret is not valid base64 text") from exc
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key])
    name = (secret.get("metadata") or {}).get("name", "?")
    raise KubeconfigError(f"Secret {name} has no key {key!r}")


def current_namespace(config: Mapping[str, Any]) -> str:
    """The namespace of the kubeconfig's current context (``""`` when it names none)."""
    current = config.get("current-context")
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == current:
            return str((entry.get("context") or {}).get("namespace") or "")
    return ""


def configuration_from_dict(config: dict[str, Any], context: str | None = None) -> k8s_client.Configuration:
    """The client Configuration of a kubeconfig dict. Raises :class:`KubeconfigError` when not usable."""
    proxies = _environment_proxies()
    # the proxy settings given (the kubeconfig's proxy-url may still set one): the official Configuration
    # would read the process's environment once when built and again each time its host is set
    configuration = k8s_client.Configuration(proxy=_UNSET_PROXY, no_proxy=proxies.get("no") or "")
    try:
        k8s_config.load_kube_config_from_dict(config, context=context, client_configuration=configuration,
                                              persist_config=False)
    except (k8s_config.ConfigException, KeyError, TypeError, ValueError) as exc:
        raise KubeconfigError(f"kubeconfig not usable: {exc}") from exc
    if configuration.proxy == _UNSET_PROXY:  # as the official Configuration picks the environment's proxy
        configuration.proxy = proxies.get(urlsplit(configuration.host).scheme) or proxies.get("all")
    configuration.no_proxy = proxies.get("no")
    _tune(configuration, small=True)
    return configuration


#: What :func:`configuration_from_dict` builds a Configuration with until it knows the proxy (not ``""``:
#: a kubeconfig's empty ``proxy-url`` means no proxy, as for the official loader).
_UNSET_PROXY = "reconcilery:proxy-not-set"


@functools.cache
def _environment_proxies() -> dict[str, str]:
    """``urllib.request.getproxies()`` of this process, read once: it walks the whole environment, and
    the official Configuration does so twice per SKR client built (issue 31: a fleet connect builds
    one). A worker's environment is fixed when it starts."""
    return dict(urllib.request.getproxies())


def from_kubeconfig_dict(config: dict[str, Any], context: str | None = None,
                         cache_key: Hashable | None = None) -> k8s_client.ApiClient:
    """A new ApiClient (its own connection pool) from a kubeconfig already parsed into a dict (e.g. an
    SKR's kubeconfig Secret).

    ``cache_key`` (e.g. the Secret's uid and resourceVersion) lets the parsed Configuration be reused by
    later clients of the same kubeconfig: building one costs milliseconds (the official loader), which a
    fleet of short-lived SKR clients would pay on every connect. The client itself is always new.
    Raises :class:`KubeconfigError` when the kubeconfig is not usable.
    """
    if cache_key is None:
        return k8s_client.ApiClient(configuration_from_dict(config, context))
    with _cache_lock:
        configuration = _configurations.get(cache_key)
        if configuration is not None:
            _configurations.move_to_end(cache_key)
    if configuration is None:
        configuration = configuration_from_dict(config, context)
        with _cache_lock:
            _configurations[cache_key] = configuration
            while len(_configurations) > CONFIGURATION_CACHE_SIZE:
                _configurations.popitem(last=False)
    return k8s_client.ApiClient(configuration)


def cached_api_client(cache_key: Hashable) -> k8s_client.ApiClient | None:
    """A new ApiClient of the Configuration :func:`from_kubeconfig_dict` keeps under ``cache_key``, or
    ``None`` when none is kept (then the kubeconfig has to be parsed)."""
    with _cache_lock:
        configuration = _configurations.get(cache_key)
        if configuration is None:
            return None
        _configurations.move_to_end(cache_key)
    return k8s_client.ApiClient(configuration)


#: How many parsed kubeconfigs :func:`from_kubeconfig_dict` keeps (least recently used dropped).
CONFIGURATION_CACHE_SIZE = 8192
_configurations: OrderedDict[Hashable, k8s_client.Configuration] = OrderedDict()
_cache_lock = threading.Lock()


def local_api_client() -> k8s_client.ApiClient:
    """The ApiClient of the local cluster: ``$RECONCILERY_KUBECONFIG``, in-cluster, or default kubeconfig.

    Raises ``kubernetes.config.ConfigException`` when none of them is usable.
    """
    path = settings.current().kubeconfig
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
