"""``render apirules -o yaml`` on the examples, through typer's CliRunner (the code path the workers run)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml
from typer.testing import CliRunner

from tasks.apigateway.cli import render

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "apigateway"
FILES = [str(EXAMPLES / "00-cluster.yaml"), str(EXAMPLES / "10-apirules.yaml")]


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``render apirules ARGS -o yaml`` (the table is the default; these tests read the documents)."""
    app = typer.Typer()
    app.command()(render)
    result = CliRunner().invoke(app, [*args, "-o", "yaml"], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def flags(files: list[str]) -> list[str]:
    return [arg for f in files for arg in ("-f", f)]


def test_render_examples() -> None:
    code, out, _ = run(*flags(FILES))
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    apirules = [d for d in docs if d["kind"] == "APIRule"]
    assert [(a["metadata"]["name"], a["status"]["state"]) for a in apirules] == [
        ("httpbin-public", "Ready"),
        ("orders", "Ready"),
        ("catalog", "Ready"),
        ("broken", "Error"),
    ]
    assert apirules[-1]["status"]["description"].endswith("\n1 more error(s)...")
    assert all(a["metadata"]["finalizers"] == ["gateway.kyma-project.io/subresources"] for a in apirules)
    kinds = [d["kind"] for d in docs]
    # processor order per APIRule, the APIRule last
    assert kinds[:3] == ["VirtualService", "AuthorizationPolicy", "APIRule"]
    assert all("name" not in d["metadata"] and d["metadata"]["generateName"] for d in docs if d["kind"] != "APIRule")
    httpbin_vs = docs[0]
    assert httpbin_vs["spec"]["hosts"] == ["httpbin.local.kyma.dev"]
    orders_ras = [
        d for d in docs if d["kind"] == "RequestAuthentication" and d["metadata"]["generateName"] == "orders-"
    ]
    assert len(orders_ras) == 1  # two JWT rules, one issuer: deduplicated


def test_render_is_deterministic_and_reads_stdin_and_json() -> None:
    _, first, _ = run(*flags(FILES))
    docs = [d for f in FILES for d in yaml.safe_load_all(Path(f).read_text()) if d]
    code, second, _ = run("-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    assert code == 0 and first == second


def test_render_diff_against_owned_objects() -> None:
    _, out, _ = run(*flags(FILES))
    created = [d for d in yaml.safe_load_all(out) if d["kind"] != "APIRule"]
    for i, obj in enumerate(created):
        obj["metadata"]["name"] = f"{obj['metadata'].pop('generateName')}{i}"
    created[0]["spec"]["http"][0]["timeout"] = "1s"  # drift on httpbin-public's VirtualService
    state = Path(FILES[0]).read_text() + "\n---\n" + yaml.safe_dump_all(created)
    code, out, _ = run("-f", "-", "-f", FILES[1], "--diff", stdin=state)
    assert code == 0
    plans = list(yaml.safe_load_all(out))
    assert [p["apirule"] for p in plans] == ["shop/httpbin-public", "shop/orders", "shop/catalog", "shop/broken"]
    first = plans[0]["actions"]
    assert [(a["verb"], a["kind"], a["name"]) for a in first] == [("update", "VirtualService", "httpbin-public-0")]
    assert first[0]["patch"] == [{"op": "replace", "path": "/spec/http/0/timeout", "value": "180s"}]
    assert plans[1]["actions"] == [] and plans[2]["actions"] == []
    assert plans[3]["status"]["state"] == "Error"


def test_unreadable_input_exits_2() -> None:
    code, _, err = run("-f", "/nonexistent/apirules.yaml")
    assert code == 2 and "cannot read /nonexistent/apirules.yaml" in err
    code, _, err = run("-f", "-", stdin="kind: [unclosed")
    assert code == 2 and "not valid YAML or JSON" in err
    code, _, err = run("-f", "-", stdin="- just\n- a list\n")
    assert code == 2 and "not a Kubernetes object" in err


def test_error_status_is_a_result() -> None:
    rule = {
        "apiVersion": "gateway.kyma-project.io/v2",
        "kind": "APIRule",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"hosts": ["x.example.com"], "rules": []},
    }
    code, out, _ = run("-f", "-", stdin=json.dumps(rule))
    assert code == 0
    (doc,) = yaml.safe_load_all(out)
    assert doc["status"]["state"] == "Error"
