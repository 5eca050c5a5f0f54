"""No process of Reconcilery changes its own environment (issue 26): ``reconcilery up`` and the domains'
local harness hand settings to their children through the spawn environment (``LocalRun.env``) and to
their own process through explicit arguments. Checked over the source, so a new write is caught before
any run: assignments to and deletions from ``os.environ``, its mutating methods, ``os.putenv`` and
``os.unsetenv``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: The runtime packages and the local harness (the embedded distribution's localrun).
PACKAGES = ("config", "fencing", "informers", "kube", "workers", "watchers", "webhooks", "tasks", "reconcilery",
            "localrun")
MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os")


def environ_writes(source: str) -> list[int]:
    """Line numbers of the writes to the process environment in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = list(node.targets) if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if (func.attr in MUTATORS and _is_environ(func.value)) or (
                    func.attr in ("putenv", "unsetenv") and isinstance(func.value, ast.Name) and func.value.id == "os"):
                lines.append(node.lineno)
    return sorted(lines)


@pytest.mark.parametrize("source", [
    "import os\nos.environ['A'] = '1'\n", "import os\nos.environ.update({'A': '1'})\n",
    "import os\nos.environ.setdefault('A', '1')\n", "import os\ndel os.environ['A']\n",
    "import os\nos.putenv('A', '1')\n", "import os\nos.environ.pop('A', None)\n",
])
def test_a_write_is_recognised(source: str) -> None:
    assert environ_writes(source) == [2]


def test_reads_are_not_writes() -> None:
    assert environ_writes("import os\nx = os.environ.get('A', '1')\ny = {**os.environ}\nz = os.environ['A']\n") == []


def test_no_runtime_package_and_no_local_harness_writes_the_environment() -> None:
    found = {str(path.relative_to(ROOT)): lines for top in PACKAGES for path in sorted((ROOT / top).rglob("*.py"))
             if (lines := environ_writes(path.read_text()))}
    assert found == {}
