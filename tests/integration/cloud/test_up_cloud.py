"""``reconcilery up --once --apply examples/cloud``: moto, the Garden and two SKRs locally; both AWS
IpRanges end Ready with subnets in moto; every process and server is stopped afterwards."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.fixtures.processes import free_port
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration


def _closed(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((parts.hostname or "127.0.0.1", parts.port or 80)) != 0


def test_up_once_brings_both_aws_ipranges_to_ready(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = subprocess.run(
        [sys.executable, "-m", "reconcilery.cli", "up", "--once", "--timeout", "240", "--state-dir", str(state),
         "--flower-port", str(free_port()), "--apply", str(ROOT / "examples" / "cloud")],
        cwd=ROOT, capture_output=True, text=True, timeout=420, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out + "".join(p.read_text()[-3000:] for p in (state / "logs").glob("*.log"))
    rows = [line for line in out.splitlines() if "SKR IpRange" in line]
    assert len(rows) == 2 and all("Ready" in r for r in rows), out
    assert "10.251.0.0/22" in out and "10.181.0.0/22" in out, out  # explicit, and allocated after 10.180.0.0/16

    endpoints = json.loads((state / "endpoints.json").read_text())
    assert {"aws", "garden", "skrs", "skr_listener"} <= set(endpoints)
    assert set(endpoints["skrs"]) == {"5d3c9a1e-7b24-4f0e-9c11-2a6f0d8e4b71", "9e81b6f0-3c5d-4a27-8f1e-6d2c4b7a9e03"}
    for path in (endpoints["garden"], *endpoints["skrs"].values()):
        config = yaml.safe_load(Path(path).read_text())
        assert "/clusters/" in config["clusters"][0]["cluster"]["server"]
    for url in (endpoints["kubernetes"], endpoints["redis"], endpoints["aws"], endpoints["skr_listener"]):
        assert _closed(url), f"{url} still open after up exited"
