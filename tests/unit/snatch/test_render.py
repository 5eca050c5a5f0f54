"""``reconcilery render snatch``: Pods with Namespaces and Nodes as context."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml
from typer.testing import CliRunner

from tasks.snatch.cli import render as render_command
from tasks.snatch.mutate import POOL_LABEL, Reason, affinity_term
from tasks.snatch.render import render

EXAMPLE = Path(__file__).parents[3] / "examples" / "snatch" / "00-pool.yaml"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def _objects() -> list[dict]:
    return [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]


def test_example_pool() -> None:
    out = {r.ref: r for r in render(_objects(), "cpu-worker-0")}
    agent = out["kyma-system/telemetry-agent"]
    assert agent.decision.reason is Reason.MUTATED
    assert agent.pod["spec"]["affinity"]["nodeAffinity"][PREF] == [affinity_term("cpu-worker-0")]
    publisher = out["kyma-system/eventing-publisher"].pod["spec"]["affinity"]["nodeAffinity"][PREF]
    assert [t["weight"] for t in publisher] == [50, 10]
    assert out["customer-apps/shop-frontend"].decision.reason is Reason.NAMESPACE_NOT_MANAGED
    assert "affinity" not in out["customer-apps/shop-frontend"].pod["spec"]


def test_no_node_of_the_pool() -> None:
    objects = [o for o in _objects() if o["kind"] != "Node" or o["metadata"]["labels"][POOL_LABEL] != "cpu-worker-0"]
    assert {r.decision.reason for r in render(objects, "cpu-worker-0")} == {Reason.NO_POOL_NODE}
    # another pool name finds the customer node and mutates towards it
    assert render(_objects(), "customer-gpu")[0].decision.reason is Reason.MUTATED


def test_list_kind_and_default_namespace() -> None:
    objects = [{"kind": "List", "items": _objects()},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lonely"}, "spec": {"containers": []}}]
    out = {r.ref: r for r in render(objects, "cpu-worker-0")}
    assert out["default/lonely"].decision.reason is Reason.NAMESPACE_UNKNOWN


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(render_command)
    return app


def test_cli_prints_yaml_stream() -> None:
    result = CliRunner().invoke(_app(), ["-f", str(EXAMPLE), "--kyma-worker-pool-name", "cpu-worker-0", "-o", "yaml"])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [d["metadata"]["name"] for d in docs] == ["telemetry-agent", "eventing-publisher", "shop-frontend"]
    assert "# kyma-system/telemetry-agent: mutated" in result.stdout


def test_cli_unreadable_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    for args in (["-f", str(tmp_path / "missing.yaml")], ["-f", str(bad)]):
        result = CliRunner().invoke(_app(), args)
        assert result.exit_code == 2
        assert "error:" in result.output
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just a string\n")
    result = CliRunner().invoke(_app(), ["-f", str(scalar)])
    assert result.exit_code == 2 and "not a Kubernetes object" in result.output


def test_edge_case_examples() -> None:
    edge_cases = EXAMPLE.parents[1] / "render" / "snatch-edge-cases.yaml"
    objects = [d for d in yaml.safe_load_all(edge_cases.read_text()) if d]
    reasons = {r.ref: r.decision.reason for r in render(objects, "cpu-worker-0")}
    assert reasons == {
        "kyma-integration/bound-pod": Reason.ALREADY_SCHEDULED,
        "kyma-integration/already-preferring": Reason.TERM_PRESENT,
        "kyma-integration/with-required-affinity": Reason.MUTATED,
        "kube-system/coredns-abc12": Reason.FORBIDDEN_NAMESPACE,
        "somewhere-else/stray": Reason.NAMESPACE_UNKNOWN,
    }
    out = {r.ref: r.pod for r in render(objects, "cpu-worker-0")}
    affinity = out["kyma-integration/with-required-affinity"]["spec"]["affinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in affinity["nodeAffinity"]
    assert affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 100
