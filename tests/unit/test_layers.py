"""The layer contracts (``[tool.importlinter]`` in pyproject.toml, run by ``lint-imports`` in scripts/test):
the engine never imports a domain, domains never import each other or ``reconcilery``, the runtime never
imports the local harness (``localrun``) and its modules are independent, pure modules import no I/O.
Kept on the tree; broken by each kind of violation; and they cover every domain."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def config() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f))


def contract(name_start: str) -> dict[str, Any]:
    (found,) = [c for c in config()["tool"]["importlinter"]["contracts"] if c["name"].startswith(name_start)]
    return dict(found)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def domain_packages() -> list[str]:
    return sorted(f"tasks.{p.name}" for p in (ROOT / "tasks").iterdir() if (p / "__init__.py").is_file())


def harness_modules() -> list[str]:
    return sorted(f"localrun.{p.stem}" for p in (ROOT / "localrun").glob("*.py") if p.stem != "__init__")


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_domain_is_independent_installed_and_layered() -> None:
    cfg = config()
    assert sorted(contract("Domains are independent")["modules"]) == domain_packages()
    installed = cfg["project"]["entry-points"]["reconcilery.domains"]
    assert sorted(f"tasks.{name}" for name in installed) == domain_packages()
    assert all(value == f"tasks.{name}.domain:DOMAIN" for name, value in installed.items())
    assert sorted(contract("Local harnesses are independent")["modules"]) == harness_modules()
    layers = contract("Layers")["layers"]
    assert layers.index("localrun") < layers.index("reconcilery") < layers.index("tasks") \
        < layers.index("watchers | webhooks") < layers.index("workers") < layers.index("informers") \
        < layers.index("kube") < layers.index("fencing")


def test_every_pure_module_pattern_names_modules() -> None:
    """A renamed pure module would silently drop out of the contract: each pattern matches a module."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts)
               for top in ("tasks", "kube") for p in (ROOT / top).rglob("*.py")}
    for pattern in contract("Pure modules")["source_modules"]:
        head, _, leaf = pattern.partition(".**.")
        matches = [m for m in modules if m.startswith(f"{head}.") and m.endswith(f".{leaf}")] if leaf \
            else [m for m in modules if m == pattern]
        assert matches, pattern


def test_each_kind_of_violation_breaks_its_contract(tmp_path: Path) -> None:
    for top in config()["tool"]["importlinter"]["root_packages"]:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__", "crds", "*.yaml"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    violations = {
        "workers/controller.py": "import tasks.nginx.controller  # the engine imports a domain",
        "tasks/snatch/mutate.py": "import tasks.nginx.translate  # a domain imports another",
        "tasks/nginx/diff.py": "import requests  # a pure module does I/O",
        "tasks/cloud/kcp/newkind_plan.py": "import boto3  # a new kind's plan, listed nowhere, does I/O",
        "tasks/cloud/names.py": "import reconcilery.up  # a domain imports the runtime",
        "tasks/cloud/aws/iprange.py": "import botocore.exceptions  # an AWS flow catches the SDK's errors",
        "localrun/nginx.py": "import localrun.snatch  # a domain's local harness imports another's",
        "reconcilery/supervisor.py": "import localrun.cloud  # the runtime imports the local harness",
    }
    for path, line in violations.items():
        with (tmp_path / path).open("a") as f:
            f.write(f"\n{line}\n")
    result = lint_imports(tmp_path)
    out = " ".join(result.stdout.split())  # long contract names wrap
    assert result.returncode == 1, out
    assert "Contracts: 0 kept, 5 broken." in out, out
    assert "workers.controller -> tasks.nginx.controller" in out
    assert "tasks.snatch.mutate -> tasks.nginx.translate" in out
    assert "tasks.nginx.diff is not allowed to import requests" in out
    assert "tasks.cloud.kcp.newkind_plan is not allowed to import boto3" in out  # covered by rule
    assert "tasks.cloud.names -> reconcilery.up" in out
    assert "tasks.cloud.aws.iprange is not allowed to import botocore" in out
    assert "localrun.nginx -> localrun.snatch" in out
    assert "reconcilery.supervisor -> localrun.cloud" in out
