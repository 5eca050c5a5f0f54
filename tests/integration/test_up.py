"""The README's main command: ``reconcilery up --apply examples/... --once`` settles and cleans up."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.fixtures.processes import free_port, port_closed
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration



def test_up_once_applies_the_examples_settles_and_stops_everything(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)
    edge = examples / "nginx" / "00-edge.yaml"  # free ports for the two NGINX Plus stand-ins
    edge.write_text(edge.read_text().replace("127.0.0.1:9000", f"127.0.0.1:{free_port()}")
                    .replace("127.0.0.1:9001", f"127.0.0.1:{free_port()}"))
    nlk = examples / "nginx" / "10-nlk.yaml"  # the nlk mode's NGINXaaS stand-in (requires an API key)
    nlk.write_text(nlk.read_text().replace("127.0.0.1:9002", f"127.0.0.1:{free_port()}"))
    state = tmp_path / "state"
    proc = subprocess.run(
        [sys.executable, "-m", "reconcilery.cli", "up", "--once", "--timeout", "120", "--state-dir", str(state),
         "--flower-port", str(free_port()), "--apply", str(examples / "apigateway"),
         "--apply", str(examples / "nginx"), "--apply", str(examples / "snatch")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out + "".join(p.read_text()[-2000:] for p in (state / "logs").glob("*.log"))

    endpoints = json.loads((state / "endpoints.json").read_text())
    assert {"kubernetes", "redis", "flower", "nginx_plus", "webhook", "webhook_ca", "conversion_webhook"} <= set(
        endpoints)
    assert len(endpoints["nginx_plus"]) == 3 and Path(endpoints["webhook_ca"]).is_file()
    # the run's Redis has a password (issue 27): in endpoints.json, readable by its owner only, never printed
    password = urlsplit(endpoints["redis"]).password
    assert password and password not in out and ":***@127.0.0.1:" in out
    assert (state / "endpoints.json").stat().st_mode & 0o077 == 0
    assert "server:" in (state / "kubeconfig").read_text()

    rows = [line for line in out.splitlines() if "│ APIRule " in line]
    assert sum("Ready" in r for r in rows) == 6 and sum("Error" in r for r in rows) == 1, out  # one is v1beta1
    assert any("shop/httpbin-partner" in r and "Ready" in r for r in rows), out  # through the ExternalGateway
    # the v1beta1 APIRule mid-migration (35-migration.yaml) finished: annotation and Ory Rule gone, the
    # VirtualService routes to the Service, the policies are in place
    migration = [[c.strip() for c in line.split("│")[1:5]] for line in out.splitlines() if "│ Migration " in line]
    assert migration == [["Migration", "shop/catalog-legacy", "Migrated",
                          "0 Ory Rule(s); VirtualService → catalog.shop.svc.cluster.local:9090; "
                          "2 AuthorizationPolicies"]], out
    states = {line.split("│")[2].strip(): line.split("│")[3].strip() for line in out.splitlines()
              if "│ APIGateway " in line or "│ RateLimit " in line or "│ ExternalGateway " in line}
    assert states == {"default": "Ready", "shop/httpbin": "Ready", "shop/partner": "Ready"}, out
    pods = {line.split("│")[2].strip(): line.split("│")[3].strip() for line in out.splitlines() if "│ Pod " in line}
    assert pods == {"kyma-system/telemetry-agent": "mutated", "kyma-system/eventing-publisher": "mutated",
                    "customer-apps/shop-frontend": "unchanged", "shop/httpbin-0": "unchanged"}, out
    assert "10.0.1.11:30080" in out and "10.0.0.10" not in out  # NGINX servers, no control plane node
    # nlk mode, through the API key: ClusterIP = the ready endpoints of both EndpointSlices, LoadBalancer = its IP
    upstreams = {line.split("│")[2].strip().split()[-1]: line.split("│")[4].strip() for line in out.splitlines()
                 if "│ NGINX " in line}
    assert upstreams["storefront-web"] == "10.244.1.5:8080, 10.244.1.6:8080, 10.244.2.7:8080", out
    assert upstreams["storefront-tls"] == "192.0.2.50:443", out

    # every process and server it started is gone
    for url in (endpoints["kubernetes"], endpoints["redis"], endpoints["flower"], *endpoints["nginx_plus"],
                endpoints["webhook"], endpoints["conversion_webhook"]):
        assert port_closed(url), f"{url} still open after up exited"
