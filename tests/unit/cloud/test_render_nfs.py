"""``reconcilery render nfsvolume`` over examples/render (pure), and the command's exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from reconcilery.cli import app
from tasks.cloud.nfsinstance_render import render_volumes

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "render"


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def test_aws_volume_renders_security_group_efs_mount_targets_pv_pvc() -> None:
    docs = load("cloud-nfsvolumes.yaml")
    ipranges = [d for d in docs if d["kind"] == "IpRange"]
    out = {r.kind: r for r in render_volumes(load("cloud-scope.yaml")[0], [d for d in docs if d["kind"] != "IpRange"],
                                             ipranges)}
    aws = out["AwsNfsVolume"]
    assert aws.state == "Ready" and aws.outcome == "valid; IpRange nfs-range (10.251.0.0/22)"
    assert aws.plan[0].endswith("ingress TCP 2049 from 100.64.0.0/12, 10.250.0.0/16")
    assert [line for line in aws.plan if line.startswith("mount target")] == [
        "mount target in the subnet eu-central-1a 10.251.0.0/24", "mount target in the subnet eu-central-1b "
        "10.251.1.0/24", "mount target in the subnet eu-central-1c 10.251.2.0/24"]
    kcp, pv, pvc = aws.objects
    assert kcp["kind"] == "NfsInstance" and kcp["spec"]["instance"] == {
        "aws": {"performanceMode": "generalPurpose", "throughput": "bursting"}}
    assert pv["spec"]["nfs"]["server"] == "<fsId>.efs.eu-central-1.amazonaws.com"
    assert pvc["metadata"]["name"] == "shared-files" and pvc["metadata"]["labels"]["app"] == "uploads"
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] == "<id>"
    assert out["GcpNfsVolume"].state == "Skipped"


def test_gcp_volume_renders_the_filestore_instance_in_the_default_range() -> None:
    docs = [d for d in load("cloud-nfsvolumes.yaml") if d["kind"] == "GcpNfsVolume"]
    [gcp] = render_volumes(load("cloud-scope-gcp.yaml")[0], docs)
    assert gcp.state == "Ready" and gcp.outcome == "valid; IpRange default (10.241.0.0/22)"
    assert "instances/cm-<id>: BASIC_HDD, share vol1 1024 GB" in gcp.plan[0]
    assert gcp.plan[1].endswith("reserved range cm-<default id> (10.241.0.0/22)")
    kcp, pv, _ = gcp.objects
    assert kcp["spec"]["instance"]["gcp"]["location"] == "us-east4-a"
    assert pv["spec"]["nfs"] == {"server": "<ip>", "path": "/vol1"}


def test_no_worker_zones_and_the_commands_exit_codes() -> None:
    scope = load("cloud-scope-gcp.yaml")[0]
    scope["spec"]["scope"]["gcp"]["workers"] = []
    docs = [d for d in load("cloud-nfsvolumes.yaml") if d["kind"] == "GcpNfsVolume"]
    assert render_volumes(scope, docs)[0].outcome == "NoWorkerZones: Could not automatically select a zone"
    runner = CliRunner()
    ok = runner.invoke(app, ["render", "nfsvolume", "-f", str(EXAMPLES / "cloud-nfsvolumes.yaml"), "--scope",
                             str(EXAMPLES / "cloud-scope.yaml")])
    assert ok.exit_code == 0, ok.output
    assert "shared-files" in ok.output and "Skipped" in ok.output
    bad = runner.invoke(app, ["render", "nfsvolume", "-f", str(EXAMPLES / "cloud-nfsvolumes.yaml"), "--scope",
                              str(EXAMPLES / "cloud-nfsvolumes.yaml")])
    assert bad.exit_code == 2


def test_a_volume_whose_pv_or_pvc_name_is_invalid_is_the_reconciles_error() -> None:
    """Offline as in the SKR: a name that is no object name is an Error before anything is planned."""
    scope = load("cloud-scope.yaml")[0]
    bad_pv, bad_pvc = render_volumes(scope, [
        {"kind": "AwsNfsVolume", "metadata": {"name": "n", "namespace": "d"},
         "spec": {"capacity": "1Gi", "volume": {"name": "../x"}}},
        {"kind": "AwsNfsVolume", "metadata": {"name": "m", "namespace": "d"},
         "spec": {"capacity": "1Gi", "volumeClaim": {"name": "A_B"}}}])
    assert bad_pv.state == "Error"
    assert bad_pv.outcome == "PVNameInvalid: Desired PV name '../x' is not a valid object name"
    assert bad_pvc.state == "Error" and bad_pvc.outcome.endswith("Desired PVC name 'A_B' is not a valid object name")
