"""``reconcilery render iprange``: the examples give the controllers' decisions offline."""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml
from typer.testing import CliRunner

from tasks.cloud.cli import render as render_command
from tasks.cloud.render import render_ipranges

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "render"


def load(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def test_examples() -> None:
    rows = {r.name: r for r in render_ipranges(load("cloud-scope.yaml")[0], load("cloud-ipranges.yaml"))}
    assert rows["nfs-range"].state == "Ready" and rows["nfs-range"].ranges == [
        ("eu-central-1a", "10.251.0.0/24"), ("eu-central-1b", "10.251.1.0/24"), ("eu-central-1c", "10.251.2.0/24")]
    assert rows["too-small"].outcome == "InvalidCidr: CIDR 10.252.0.0/31 block size must not be greater than 30"
    assert rows["overlapping"].outcome == "CidrOverlap: CIDR overlaps with nfs-range"
    assert rows["second"].outcome == "QuotaExceeded: Maximum number of 1 resources exceeded"
    kcp = rows["0b6e1c4e-0000-4000-8000-000000000001"]
    assert (kcp.kind, kcp.cidr, kcp.allocated, kcp.state) == ("KCP", "10.251.0.0/22", True, "Ready")


def test_unknown_nodes_and_split_failures() -> None:
    scope = load("cloud-scope.yaml")[0]
    scope["spec"]["scope"]["aws"]["network"]["nodes"] = ""
    kcp = {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "IpRange", "metadata": {"name": "x"},
           "spec": {}}
    assert render_ipranges(scope, [kcp])[0].outcome == "CidrAllocationFailed: Error due to unknown SKR nodes range"
    tiny = {**kcp, "spec": {"cidr": "10.0.0.0/31"}}
    assert render_ipranges(scope, [tiny])[0].outcome == "CidrCanNotSplit: Can not split CIDR to 4 subnets"


def test_cli_json_and_exit_code() -> None:
    app = typer.Typer()
    app.command()(render_command)
    result = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope.yaml"), "-f",
                                      str(EXAMPLES / "cloud-ipranges.yaml"), "-o", "json"])
    assert result.exit_code == 1  # some IpRanges of the example fail on purpose
    assert [r["state"] for r in json.loads(result.stdout)] == ["Ready", "Error", "Error", "Error", "Ready"]
    bad = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-ipranges.yaml"), "-f",
                                   str(EXAMPLES / "cloud-ipranges.yaml")])
    assert bad.exit_code == 2
