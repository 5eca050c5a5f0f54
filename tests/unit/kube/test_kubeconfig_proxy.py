"""An SKR client's proxy is the official client's choice (the kubeconfig's ``proxy-url``, else the
environment's proxy for the host's scheme, ``no_proxy`` from the environment), with the environment
read once per process instead of twice per client built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from kube import kubeconfig


def _config(server: str, proxy_url: str | None = None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if proxy_url is not None:
        cluster["proxy-url"] = proxy_url
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": cluster}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "t"}}]}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    kubeconfig._environment_proxies.cache_clear()
    yield monkeypatch
    kubeconfig._environment_proxies.cache_clear()


@pytest.mark.parametrize(("server", "env", "proxy_url"), [
    ("https://api.skr.example:443", {}, None),
    ("https://api.skr.example:443", {"HTTPS_PROXY": "http://squid:3128", "NO_PROXY": "10.0.0.0/8"}, None),
    ("http://api.skr.example", {"HTTPS_PROXY": "http://squid:3128", "HTTP_PROXY": "http://plain:80"}, None),
    ("https://api.skr.example", {"ALL_PROXY": "http://all:1"}, None),
    ("https://api.skr.example", {"HTTPS_PROXY": "http://squid:3128"}, "http://from-kubeconfig:8080"),
    ("https://api.skr.example", {"HTTPS_PROXY": "http://squid:3128"}, ""),  # an empty proxy-url: none
])
def test_the_proxy_is_the_official_clients_choice(environment: pytest.MonkeyPatch, server: str,
                                                  env: dict[str, str], proxy_url: str | None) -> None:
    for name, value in env.items():
        environment.setenv(name, value)
    ours = kubeconfig.configuration_from_dict(_config(server, proxy_url))
    official = k8s.Configuration()  # the official loader into a Configuration that reads the environment
    kubeconfig.k8s_config.load_kube_config_from_dict(_config(server, proxy_url), client_configuration=official,
                                                     persist_config=False)
    assert (ours.host, ours.proxy, ours.no_proxy) == (official.host, official.proxy, official.no_proxy)
    assert k8s.ApiClient(ours).rest_client.pool_manager.__class__ is \
        k8s.ApiClient(official).rest_client.pool_manager.__class__  # a ProxyManager exactly when proxied


def test_the_environment_is_read_once_per_process(environment: pytest.MonkeyPatch) -> None:
    """Building SKR clients does not walk the environment again (the official Configuration would, twice each)."""
    import kubernetes.client.configuration as official

    calls: list[int] = []
    real = official.getproxies

    def counted() -> dict[str, str]:
        calls.append(1)
        return real()

    environment.setattr(official, "getproxies", counted)
    environment.setattr(kubeconfig.urllib.request, "getproxies", counted)
    for n in range(3):
        kubeconfig.configuration_from_dict(_config(f"https://api.skr-{n}.example"))
    assert len(calls) == 1
