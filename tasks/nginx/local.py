"""The NGINX edge's part of ``reconcilery up`` (:class:`workers.domains.Local`): an NGINX Plus stand-in per
loopback host of the ``nkl-config`` being applied, and a summary row per upstream of each stand-in."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

import requests

from workers.domains import Local, Row


class NginxLocal(Local):
    """NGINX Plus stand-ins where the applied ``nkl-config`` names free loopback ports."""

    def start(self) -> None:
        """One NGINX Plus stand-in per loopback host of the ``nkl-config`` ConfigMap being applied,
        declaring the upstreams the applied Services name; a taken port is left to its own server."""
        run = self.run
        hosts = [h.strip() for d in run.documents if d.get("kind") == "ConfigMap"
                 and d.get("metadata", {}).get("name") == "nkl-config"
                 for h in str((d.get("data") or {}).get("nginx-hosts", "")).split(",") if h.strip()]
        if not hosts:
            return
        try:
            from standins.nginxplus import NginxPlusStandIn
        except ImportError:
            run.log(f"[yellow]![/yellow] NGINX Plus hosts {', '.join(hosts)} left to their own servers: "
                    "the stand-ins are not installed (pip install 'reconcilery\\[embedded]')")
            return
        from tasks.nginx.settings import EdgeNames
        from tasks.nginx.translate import service_ports

        names = EdgeNames()
        ports = [p for d in run.documents if d.get("kind") == "Service" for p in service_ports(d, names)]
        http = sorted({str(p.upstream.name) for p in ports if p.upstream.protocol == "http"})
        stream = sorted({str(p.upstream.name) for p in ports if p.upstream.protocol == "stream"})
        run.endpoints["nginx_plus"] = []
        for host in hosts:
            url = urlsplit(host)
            if url.hostname not in ("127.0.0.1", "localhost") or not url.port:
                continue
            holder = run.port_taken(url.hostname, url.port)
            if holder is not None:  # a real NGINX Plus, or another tool: leave it be
                run.log(f"[yellow]![/yellow] {host}: port {url.port} is taken by {holder}; "
                        "no NGINX Plus stand-in started, this host is left to its own server")
                run.endpoints.setdefault("nginx_plus_external", []).append(host)
                continue
            standin = NginxPlusStandIn(port=url.port, http_upstreams=http, stream_upstreams=stream,
                                       prefix=url.path or "/api").start()
            run.on_stop(standin.stop)
            run.endpoints["nginx_plus"].append(standin.url)
            run.log(f"[green]✓[/green] NGINX Plus stand-in at {standin.url}")

    def rows(self) -> list[Row]:
        """(``NGINX http|stream upstream``, stand-in and upstream, server count, servers) per upstream."""
        rows: list[Row] = []
        for base in self.run.endpoints.get("nginx_plus", []):
            with contextlib.suppress(requests.RequestException, ValueError):
                for kind in ("http", "stream"):
                    version = max(requests.get(f"{base}/", timeout=2).json())
                    ups = requests.get(f"{base}/{version}/{kind}/upstreams", timeout=2).json()
                    for name, up in sorted(ups.items()):
                        servers = sorted(s["server"] for s in up.get("peers", []))
                        rows.append((f"NGINX {kind} upstream", f"{base} {name}", f"{len(servers)} servers",
                                     ", ".join(servers)))
        return rows
