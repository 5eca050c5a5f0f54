"""The NGINX edge's part of ``reconcilery up`` (:class:`workers.domains.Local`): an NGINX Plus stand-in per
loopback host of the ``nkl-config`` and ``nlk-config`` ConfigMaps being applied (the ``nlk`` ones require
an API key, as NGINXaaS does), the modes and key for the processes, the LoadBalancer status a cloud
would write, and a summary row per upstream of each stand-in."""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests

from kube import resources
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx import settings as edge_settings
from tasks.nginx.settings import ConfigError, EdgeNames, nlk_document, parse_nlk_settings
from tasks.nginx.translate import nlk_service_upstreams, service_ports
from workers.domains import Apply, Local, Row


def _nlk_hosts(document: Mapping[str, Any]) -> tuple[list[str], str]:
    """``(hosts, service-annotation-match)`` of an ``nlk-config`` ConfigMap (``[]`` when it does not parse:
    the workers report it)."""
    try:
        settings = parse_nlk_settings(nlk_document(document.get("data")))
    except ConfigError:
        return [], ""
    return list(settings.hosts), settings.annotation_match


class NginxLocal(Local):
    """NGINX Plus stand-ins where the applied ConfigMaps name free loopback ports."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.api_key = ""
        self.keyed: set[str] = set()

    def start(self) -> None:
        """One NGINX Plus stand-in per loopback host of the ``nkl-config`` / ``nlk-config`` ConfigMaps being
        applied, declaring the upstreams the applied Services name; a taken port is left to its own server.
        An ``nlk-config`` turns the ``nlk`` mode on for every process (``RECONCILERY_NGINX_MODES``) and its
        stand-ins require ``NGINXAAS_DATAPLANE_API_KEY`` (this environment's, else a random one)."""
        run = self.run
        names = EdgeNames()
        configmaps = [d for d in run.documents if d.get("kind") == "ConfigMap"]
        nkl_hosts = [h.strip() for d in configmaps if d.get("metadata", {}).get("name") == names.configmap
                     for h in str((d.get("data") or {}).get("nginx-hosts", "")).split(",") if h.strip()]
        nlk_docs = [d for d in configmaps if d.get("metadata", {}).get("name") == names.nlk_configmap
                    and d.get("metadata", {}).get("namespace") == names.nlk_namespace]
        nlk_hosts: list[str] = []
        match = ""
        for doc in nlk_docs:
            hosts, match = _nlk_hosts(doc)
            nlk_hosts += hosts
        if nlk_docs:
            run.env["RECONCILERY_NGINX_MODES"] = "nkl,nlk" if nkl_hosts else "nlk"
            self.api_key = edge_settings.current().api_key or secrets.token_urlsafe(18)
            run.env["NGINXAAS_DATAPLANE_API_KEY"] = self.api_key
        if not nkl_hosts and not nlk_hosts:
            return
        services = [d for d in run.documents if d.get("kind") == "Service"]
        nkl_refs = {p.upstream for d in services for p in service_ports(d, names)}
        nlk_refs = {ref for d in services for ref in nlk_service_upstreams(d, match)} if match else set()
        run.endpoints["nginx_plus"] = []
        for host in dict.fromkeys(nkl_hosts + nlk_hosts):
            url = urlsplit(host)
            if url.hostname not in ("127.0.0.1", "localhost") or not url.port:
                continue
            holder = run.port_taken(url.hostname, url.port)
            if holder is not None:  # a real NGINX Plus, or another tool: leave it be
                run.log(f"[yellow]![/yellow] {host}: port {url.port} is taken by {holder}; "
                        "no NGINX Plus stand-in started, this host is left to its own server")
                run.endpoints.setdefault("nginx_plus_external", []).append(host)
                continue
            refs = (nkl_refs if host in nkl_hosts else set()) | (nlk_refs if host in nlk_hosts else set())
            key = self.api_key if host in nlk_hosts else None
            standin = NginxPlusStandIn(port=url.port, prefix=url.path or "/api", api_key=key,
                                       http_upstreams=sorted(r.name for r in refs if r.protocol == "http"),
                                       stream_upstreams=sorted(r.name for r in refs if r.protocol == "stream")).start()
            run.on_stop(standin.stop)
            run.endpoints["nginx_plus"].append(standin.url)
            if key:
                self.keyed.add(standin.url)
            run.log(f"[green]✓[/green] NGINX Plus stand-in at {standin.url}"
                    + (" (NGINXaaS: requires the API key)" if key else ""))

    def apply_after(self, apply: Apply) -> int:
        """Play the cloud's load balancer controller: write ``status.loadBalancer`` of every applied
        LoadBalancer Service whose manifest carries one (the API server drops status on create)."""
        failed = 0
        for doc in self.run.documents:
            status = (doc.get("status") or {}).get("loadBalancer")
            if doc.get("kind") != "Service" or (doc.get("spec") or {}).get("type") != "LoadBalancer" or not status:
                continue
            meta = doc.get("metadata") or {}
            try:
                self.run.kube().patch_status(resources.SERVICE, meta["name"], {"loadBalancer": status},
                                             meta.get("namespace") or "default")
            except Exception as exc:
                failed += 1
                self.run.log(f"[red]✗[/red] Service {meta.get('namespace')}/{meta.get('name')} status: {exc}")
        return failed

    def rows(self) -> list[Row]:
        """(``NGINX http|stream upstream``, stand-in and upstream, server count, servers) per upstream."""
        rows: list[Row] = []
        for base in self.run.endpoints.get("nginx_plus", []):
            headers = ({"Authorization": "ApiKey " + base64.b64encode(self.api_key.encode()).decode()}
                       if base in self.keyed else {})
            with contextlib.suppress(requests.RequestException, ValueError):
                for kind in ("http", "stream"):
                    version = max(requests.get(f"{base}/", timeout=2, headers=headers).json())
                    ups = requests.get(f"{base}/{version}/{kind}/upstreams", timeout=2, headers=headers).json()
                    for name, up in sorted(ups.items()):
                        servers = sorted(s["server"] for s in up.get("peers", []))
                        rows.append((f"NGINX {kind} upstream", f"{base} {name}", f"{len(servers)} servers",
                                     ", ".join(servers)))
        return rows
