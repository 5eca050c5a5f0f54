"""``reconcilery render iprange``: the examples give the controllers' decisions offline."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import typer
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tasks.cloud import registry
from tasks.cloud.cli import render_command as kind_render_command
from tasks.cloud.iprange_render import render_ipranges, shape_errors
from tasks.cloud.vpcpeering_render import render_peerings

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
    app.command()(render_iprange())
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
        "KCP VpcPeering b7c41e09-5a2f-4d83-9e6b-0f1a3c5d7e92 (created by the IpRange): VNet peerings cm--c-8e3f1b7 "
        "(in shoot--kyma--c-8e3f1b7) and kyma--c-8e3f1b7 (in shoot--kyma--c-8e3f1b7--cm)",
        "security group shoot--kyma--c-8e3f1b7--cm; subnet shoot--kyma--c-8e3f1b7--cm: 10.251.0.0/22",
        "private DNS zone privatelink.redis.cache.windows.net; virtual network link "
        "0b6e1c4e-0000-4000-8000-000000000001 to shoot--kyma--c-8e3f1b7"]
    assert rows["overlapping"].outcome == "CidrOverlap: CIDR overlaps with nfs-range"  # same SKR validation


def test_cli_table_shows_the_plan_of_the_scopes_provider() -> None:
    app = typer.Typer()
    app.command()(render_iprange())
    result = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope-gcp.yaml"), "-f",
                                      str(EXAMPLES / "cloud-ipranges.yaml")], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "PLAN (GCP)" in result.stdout and "global address cm-<id>: 10.251.0.0/22" in result.stdout
    rows = json.loads(CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope-azure.yaml"), "-f",
                                               str(EXAMPLES / "cloud-ipranges.yaml"), "-o", "json"]).stdout)
    assert rows[0]["provider"] == "azure" and rows[0]["plan"][0].startswith("resource group and VNet ")


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                     st.text(max_size=8)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=6)


def _field_paths(value: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _field_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _field_paths(item, (*prefix, index))
    return out


def _replaced(doc: dict, path: tuple[str | int, ...], value: object) -> dict:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


@settings(max_examples=300, deadline=None)
@given(data=st.data(), value=json_values)
def test_malformed_fields_are_a_clear_error_never_a_traceback(data: st.DataObject, value: object) -> None:
    scope, ipranges = load("cloud-scope.yaml")[0], load("cloud-ipranges.yaml")
    docs = [scope, *ipranges]
    which = data.draw(st.integers(0, len(docs) - 1))
    path = data.draw(st.sampled_from([p for p in _field_paths(docs[which]) if p and p[0] in ("spec", "metadata",
                                                                                             "status")]))
    docs[which] = _replaced(docs[which], path, value)
    problems = shape_errors(docs[0], docs[1:])
    if not problems:
        render_ipranges(docs[0], docs[1:])  # must not raise
    else:
        assert all(": must be of type " in p for p in problems)


def test_cli_names_the_malformed_field(tmp_path: Path) -> None:
    scope = load("cloud-scope.yaml")[0]
    scope["spec"]["scope"] = 7
    (tmp_path / "scope.yaml").write_text(yaml.safe_dump(scope))
    (tmp_path / "ipranges.yaml").write_text(yaml.safe_dump_all(
        [{"apiVersion": "cloud-resources.kyma-project.io/v1beta1", "kind": "IpRange", "metadata": {"name": "a"},
          "spec": {"cidr": 12}}]))
    app = typer.Typer()
    app.command()(render_iprange())
    result = CliRunner().invoke(app, ["--scope", str(tmp_path / "scope.yaml"), "-f", str(tmp_path / "ipranges.yaml")])
    assert result.exit_code == 2, result.output
    assert "Scope: spec.scope: must be of type object, got integer" in result.output
    assert "IpRange a: spec.cidr: must be of type string, got integer" in result.output


def render_iprange() -> Any:
    """``reconcilery render iprange``: the command the registry's declaration gives."""
    spec = registry.get("iprange").render
    assert spec is not None
    return kind_render_command(spec)


def render_vpcpeering() -> Any:
    """``reconcilery render vpcpeering``: the command the registry's declaration gives."""
    spec = registry.get("vpcpeering").render
    assert spec is not None
    return kind_render_command(spec)


def test_render_vpcpeering_examples_and_cli() -> None:
    scope = load("cloud-scope.yaml")[0]
    ok, wrong = render_peerings(scope, load("cloud-vpcpeerings.yaml"))
    assert (ok.state, wrong.state) == ("Ready", "Error")
    assert wrong.outcome == "GcpVpcPeering is not served in an SKR of provider aws"
    network, peering = ok.kcp
    assert network["metadata"]["name"] == peering["metadata"]["name"] == "<id>"
    assert network["spec"]["network"]["reference"]["aws"]["vpcId"] == "vpc-0a1b2c3d4e5f67890"
    assert peering["spec"]["details"]["remoteRouteTableUpdateStrategy"] == "MATCHED"
    assert peering["spec"]["details"]["localNetwork"]["name"] == "5d3c9a1e-7b24-4f0e-9c11-2a6f0d8e4b71--kyma"
    assert any("route tables tagged c-4f8e2a1" in line and "10.250.0.0/16" in line for line in ok.plan)
    assert any(line.startswith("VPC peering connection <id> from VPC shoot--kyma--c-4f8e2a1") for line in ok.plan)
    app = typer.Typer()
    app.command()(render_vpcpeering())
    result = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope.yaml"), "-f",
                                      str(EXAMPLES / "cloud-vpcpeerings.yaml"), "-o", "json"])
    assert result.exit_code == 1
    assert [r["state"] for r in json.loads(result.stdout)] == ["Ready", "Error"]


def test_render_vpcpeering_gcp_azure_and_an_invalid_vnet() -> None:
    gcp = render_peerings(load("cloud-scope-gcp.yaml")[0], [
        {"kind": "GcpVpcPeering", "metadata": {"name": "g"}, "spec": {
            "remotePeeringName": "to-kyma", "remoteProject": "customer-1", "remoteVpc": "net",
            "importCustomRoutes": True}}])
    assert gcp[0].state == "Ready" and any("importCustomRoutes true" in line for line in gcp[0].plan)
    azure_scope = load("cloud-scope-azure.yaml")[0]
    vnet = "/subscriptions/s-1/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/customer"
    ok, bad = render_peerings(azure_scope, [
        {"kind": "AzureVpcPeering", "metadata": {"name": "a"}, "spec": {"remotePeeringName": "to-kyma",
                                                                        "remoteVnet": vnet}},
        {"kind": "AzureVpcPeering", "metadata": {"name": "b"}, "spec": {"remotePeeringName": "x", "remoteVnet": "v"}}])
    assert ok.state == "Ready" and any(vnet in line for line in ok.plan)
    assert bad.state == "Error" and bad.outcome.startswith("InvalidRemoteVnet: RemoteVnet 'v' is not a virtual network")


def test_render_vpcpeering_an_unknown_route_table_strategy_is_the_crds_error() -> None:
    (bad,) = render_peerings(load("cloud-scope.yaml")[0], [
        {"kind": "AwsVpcPeering", "metadata": {"name": "w"}, "spec": {
            "remoteAccountId": "444455556666", "remoteRegion": "eu-central-1", "remoteVpcId": "vpc-1",
            "remoteRouteTableUpdateStrategy": "WEIRD"}}])
    assert bad.state == "Error" and bad.kcp == [] and bad.plan == []
    assert bad.outcome == ('spec.remoteRouteTableUpdateStrategy: Unsupported value: "WEIRD": supported values: '
                           '"AUTO", "NONE", "MATCHED", "UNMATCHED"')


def test_render_vpcpeering_refuses_a_spec_that_is_no_object(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: cloud-resources.kyma-project.io/v1beta1\nkind: AwsVpcPeering\n"
                   "metadata: {name: x}\nspec: [1, 2]\n")
    app = typer.Typer()
    app.command()(render_vpcpeering())
    result = CliRunner().invoke(app, ["--scope", str(EXAMPLES / "cloud-scope.yaml"), "-f", str(bad)])
    assert result.exit_code == 2 and "AwsVpcPeering x: spec must be an object" in result.output


def test_a_declared_kinds_render_names_a_metadata_that_is_no_object(tmp_path: Path) -> None:
    """A manifest whose ``metadata`` is no object is a clear error (exit 2), never a traceback."""
    spec = registry.get("gcpsubnet").render
    assert spec is not None
    (tmp_path / "scope.yaml").write_text(yaml.safe_dump(load("cloud-scope.yaml")[0]))
    (tmp_path / "subnets.yaml").write_text(yaml.safe_dump_all([{"kind": "GcpSubnet", "metadata": 7}]))
    app = typer.Typer()
    app.command()(kind_render_command(spec))
    result = CliRunner().invoke(app, ["--scope", str(tmp_path / "scope.yaml"), "-f", str(tmp_path / "subnets.yaml")])
    assert result.exit_code == 2, result.output
    assert "GcpSubnet ?: metadata must be an object" in result.output
