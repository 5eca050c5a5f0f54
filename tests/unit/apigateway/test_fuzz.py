"""Bad input, found by fuzzing: any JSON value in any field of the spec → parse → validate → plan never
raises, and a value of the wrong type ends as an ``Error`` status naming the attribute.

Covered kinds: APIRule v2 and v2alpha1 here; v1beta1, RateLimit and APIGateway in their own modules'
tests reuse :mod:`tests.unit.apigateway.fuzz`. The ``render`` command gets 300 malformed APIRules.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube.printers import Output, format_listing
from tasks.apigateway.cli import render_documents
from tasks.apigateway.plan import plan
from tasks.apigateway.state import ClusterState

from .builders import apirule, cluster, jwt, rule, service
from .fuzz import attribute, get_at, json_values, mutate, paths_of, set_at, wrong_type

ROOT = Path(__file__).resolve().parents[3]


def rich_v2(version: str = "v2") -> dict[str, Any]:
    """A valid APIRule that uses every field of the v2 spec."""
    return apirule(
        rule("/health", ["GET", "HEAD"], timeout=10, request={"headers": {"X-Shop": "1"}, "cookies": {"c": "v"}}),
        rule("/orders/{*}", ["GET"], jwt=jwt(["orders:read"], ["shop"], fromHeaders=[{"name": "X-T", "prefix": "T "}]),
             service={"name": "orders", "namespace": "shop", "port": 8080}),
        rule("/admin/{**}", ["POST"], extAuth={"authorizers": ["oauth2-proxy"], "restrictions": jwt(["admin"])}),
        rule("/params", ["GET"], jwt={"authentications": [{"issuer": "https://p.example.com",
                                                           "jwksUri": "https://p.example.com/jwks",
                                                           "fromParams": ["token"]}],
                                      "authorizations": [{"audiences": ["p"]}]}),
        timeout=60,
        corsPolicy={"allowOrigins": [{"exact": "https://shop.example.com"}], "allowMethods": ["GET"],
                    "allowHeaders": ["Authorization"], "exposeHeaders": ["X-Id"], "allowCredentials": True,
                    "maxAge": 300},
        version=version,
    )


STATE = ClusterState.from_manifests(cluster(service("orders", selector={"app": "orders", "tier": "backend"})))
BASES = {"v2": rich_v2("v2"), "v2alpha1": rich_v2("v2alpha1")}


def test_the_rich_bases_are_valid() -> None:
    for base in BASES.values():
        result = plan(base, STATE)
        assert result.status is not None and result.status.state == "Ready", result.status


def check_malformed(base: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    obj = set_at(base, path, value)
    result = plan(obj, STATE)  # must not raise
    assert result.status is not None
    if wrong_type(get_at(base, path), value):
        assert result.status.state == "Error", (path, value, result.status)
        assert f"Attribute '{attribute(path)}'" in result.status.description, (path, value, result.status)
        assert result.actions == ()


@pytest.mark.parametrize("version", sorted(BASES))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=json_values)
def test_any_json_value_in_any_field(version: str, data: st.DataObject, value: Any) -> None:
    base = BASES[version]
    path = data.draw(st.sampled_from(paths_of(base)))
    check_malformed(base, path, value)


@pytest.mark.parametrize(("path", "value"), [
    (("spec", "rules"), 3.5),  # the traceback: 'float' object is not iterable
    (("spec", "rules"), 7),
    (("spec",), "text"),
    (("spec", "hosts"), {"a": 1}),
    (("spec", "rules", 0), "GET /health"),
    (("spec", "rules", 0, "methods"), "GET"),
    (("spec", "rules", 0, "timeout"), "10"),
    (("spec", "rules", 0, "noAuth"), "true"),
    (("spec", "rules", 1, "jwt", "authentications", 0, "fromHeaders"), {"name": "x"}),
    (("spec", "service", "port"), "8080"),
    (("spec", "corsPolicy", "maxAge"), 1.5),
])
def test_known_malformed_fields(path: tuple[str | int, ...], value: Any) -> None:
    check_malformed(BASES["v2"], path, value)


def malformed_apirules(count: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        obj = mutate(rng, BASES["v2" if i % 2 else "v2alpha1"], changes=1 + i % 3)
        obj["metadata"] = {**obj["metadata"], "name": f"fuzz-{i}"}
        out.append(obj)
    return out


def test_render_300_malformed_apirules_in_process() -> None:
    docs = [*cluster(), *malformed_apirules(300)]
    out = list(yaml.safe_load_all(format_listing(render_documents(docs), Output.YAML)))
    rendered = [d for d in out if d.get("kind") == "APIRule"]
    assert len(rendered) == 300
    assert all(d["status"]["state"] in ("Ready", "Error", "Warning") for d in rendered)


def test_render_command_on_300_malformed_apirules(tmp_path: Path) -> None:
    """The issue's reproduction: ``reconcilery render apirules`` on 300 random malformed APIRules."""
    manifest = tmp_path / "fuzz.yaml"
    manifest.write_text(yaml.safe_dump_all([*cluster(), *malformed_apirules(300, seed=3)]))
    proc = subprocess.run([sys.executable, "-m", "reconcilery.cli", "render", "apirules", "-f", str(manifest),
                           "-o", "yaml"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    states = [d["status"]["state"] for d in yaml.safe_load_all(proc.stdout) if d.get("kind") == "APIRule"]
    assert len(states) == 300 and states.count("Error") > 150, states
