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


def test_aws_plan_is_the_vpc_block_and_a_subnet_per_zone() -> None:
    rows = {r.name: r for r in render_ipranges(load("cloud-scope.yaml")[0], load("cloud-ipranges.yaml"))}
    assert rows["nfs-range"].provider == "aws"
    assert rows["nfs-range"].plan == [
        "VPC shoot--kyma--c-4f8e2a1: associate CIDR block 10.251.0.0/22",
        "subnet <id>-0 in eu-central-1a: 10.251.0.0/24", "subnet <id>-1 in eu-central-1b: 10.251.1.0/24",
        "subnet <id>-2 in eu-central-1c: 10.251.2.0/24"]
    kcp = rows["0b6e1c4e-0000-4000-8000-000000000001"]
    assert kcp.plan[1] == "subnet 0b6e1c4e-0000-4000-8000-000000000001-0 in eu-central-1a: 10.251.0.0/24"
    assert rows["too-small"].plan == []  # no plan for an IpRange that ends in Error


def test_gcp_plan_is_one_global_address_reserved_for_psa() -> None:
    rows = {r.name: r for r in render_ipranges(load("cloud-scope-gcp.yaml")[0], load("cloud-ipranges.yaml"))}
    nfs = rows["nfs-range"]
    assert (nfs.provider, nfs.ranges, nfs.outcome) == ("gcp", [("global", "10.251.0.0/22")],
                                                       "valid; CIDR given; 1 global address")
    kcp = rows["0b6e1c4e-0000-4000-8000-000000000001"]
    assert kcp.cidr == "10.241.0.0/22"  # allocated after the nodes 10.240.0.0/16
    assert kcp.plan == [
        "global address cm-0b6e1c4e-0000-4000-8000-000000000001: 10.241.0.0/22 (INTERNAL, VPC_PEERING) on "
        "projects/sap-kyma-example-42/global/networks/shoot--kyma--c-2d9a6e4",
        "PSA connection servicenetworking-googleapis-com of shoot--kyma--c-2d9a6e4: reserved ranges include "
        "cm-0b6e1c4e-0000-4000-8000-000000000001"]
    with_id = {**load("cloud-ipranges.yaml")[0], "status": {"id": "9f1e"}}
    assert render_ipranges(load("cloud-scope-gcp.yaml")[0], [with_id])[0].plan[0].startswith("global address cm-9f1e:")


def test_azure_plan_is_the_cm_vnet_with_one_subnet() -> None:
    rows = {r.name: r for r in render_ipranges(load("cloud-scope-azure.yaml")[0], load("cloud-ipranges.yaml"))}
    kcp = rows["0b6e1c4e-0000-4000-8000-000000000001"]
    assert (kcp.provider, kcp.cidr, kcp.ranges) == ("azure", "10.251.0.0/22", [("northeurope", "10.251.0.0/22")])
    assert kcp.plan == [
        "resource group and VNet shoot--kyma--c-8e3f1b7--cm: 10.251.0.0/22 in northeurope",
        "VNet peerings cm--c-8e3f1b7 (in shoot--kyma--c-8e3f1b7) and kyma--c-8e3f1b7 (in shoot--kyma--c-8e3f1b7--cm)",
        "security group shoot--kyma--c-8e3f1b7--cm; subnet shoot--kyma--c-8e3f1b7--cm: 10.251.0.0/22",
        "private DNS zone privatelink.redis.cache.windows.net; virtual network link "
        "0b6e1c4e-0000-4000-8000-000000000001 to shoot--kyma--c-8e3f1b7"]
    assert rows["overlapping"].outcome == "CidrOverlap: CIDR overlaps with nfs-range"  # same SKR validation


def test_cli_table_shows_the_plan_of_the_scopes_provider() -> None:
    app = typer.Typer()
    app.command()(render_command)
    result = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope-gcp.yaml"), "-f",
                                      str(EXAMPLES / "cloud-ipranges.yaml")], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "plan (gcp)" in result.stdout and "global address cm-<id>: 10.251.0.0/22" in result.stdout
    rows = json.loads(CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope-azure.yaml"), "-f",
                                               str(EXAMPLES / "cloud-ipranges.yaml"), "-o", "json"]).stdout)
    assert rows[0]["provider"] == "azure" and rows[0]["plan"][0].startswith("resource group and VNet ")
