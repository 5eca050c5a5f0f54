"""Outside the checkout: the wheels build without setuptools warnings, and installed into a fresh
virtualenv they run ``render`` and ``up --once`` from an empty directory (CRDs and every other run-time
file come from package data)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.fixtures.processes import free_port
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration

#: A warning as Python's ``warnings`` module prints it (``path.py:215: _Warning: Package ... is absent``):
#: how setuptools reports a configuration problem. distutils' ``warning: build_py: byte-compiling is
#: disabled`` log lines (``PYTHONDONTWRITEBYTECODE``) are about this machine, not the package.
WARNING_LINE = re.compile(r"^\S+\.py:\d+: \w*Warning\b.*$", re.MULTILINE)


def _run(args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(args)} exited with {proc.returncode}:\n{out[-6000:]}"
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Both wheels built now from a copy of the checkout: ``(their directory, the builds' output)``."""
    base = tmp_path_factory.mktemp("package")
    src = base / "src"  # a copy, so the build leaves no build/ or egg-info in the checkout
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".reconcilery", ".*_cache", "tests", "bench"))
    wheels = base / "wheels"
    # uv (a dev tool) builds and installs as pip does, in parallel and from its cache: ~30 s where pip
    # took 5 minutes on 2 cores for the ~100 packages of requirements.lock.
    uv = [str(Path(sys.executable).with_name("uv"))]
    # not -q: the build backend's output is what test_the_build_prints_no_setuptools_warnings reads
    output = _run([*uv, "build", "--wheel", "-o", str(wheels), str(src)], base, 600)
    output += _run([*uv, "build", "--wheel", "-o", str(wheels), str(src / "reconcilery-embedded")], base, 600)
    return wheels, output


@pytest.fixture(scope="module")
def installed(built: tuple[Path, str]) -> Path:
    """A fresh venv with ``reconcilery[embedded]`` installed from the wheels of ``built``; its ``bin``."""
    wheels, _ = built
    base = wheels.parent
    uv = [str(Path(sys.executable).with_name("uv"))]
    runtime = next(wheels.glob("reconcilery-*.whl"))
    tops = {n.split("/")[0] for n in zipfile.ZipFile(runtime).namelist()}
    assert {"kube", "workers", "watchers", "tasks", "reconcilery", "fencing", "informers"} <= tops
    # the image carries no stand-ins and no local harness
    assert not {"kubedev", "standins", "localrun", "reconcilery-embedded"} & tops, tops
    embedded = next(wheels.glob("reconcilery_embedded-*.whl"))
    assert {n.split("/")[0] for n in zipfile.ZipFile(embedded).namelist()} >= {"kubedev", "standins", "localrun"}

    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    pip = [*uv, "pip", "install", "-q", "--python", str(env_dir / "bin" / "python")]
    _run([*pip, "-r", str(ROOT / "requirements.lock")], base, 900)  # the image's versions
    _run([*pip, "--find-links", str(wheels), f"{runtime}[embedded]"], base, 900)
    return env_dir / "bin"


def test_the_build_prints_no_setuptools_warnings(built: tuple[Path, str]) -> None:
    _, output = built
    assert "Building wheel" in output  # the backend's output was captured (not silenced)
    assert not WARNING_LINE.findall(output), "\n".join(WARNING_LINE.findall(output))


def test_a_setuptools_warning_is_recognised() -> None:
    sample = ("running build_py\n/x/setuptools/command/build_py.py:215: _Warning: Package 'tasks.cloud.crds' is "
              "absent from the `packages` configuration.\n!!\nwarning: build_py: byte-compiling is disabled, "
              "skipping.\n/x/setuptools/dist.py:9: SetuptoolsDeprecationWarning: License classifiers\n")
    assert len(WARNING_LINE.findall(sample)) == 2


def test_render_from_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    files = []
    for name in ("00-cluster.yaml", "10-apirules.yaml"):
        files += ["-f", str(shutil.copy(ROOT / "examples" / "apigateway" / name, tmp_path / name))]
    out = _run([str(installed / "reconcilery"), "render", "apirules", *files, "-o", "yaml"], empty, 120,
               {"PATH": f"{installed}:/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"})
    assert "kind: VirtualService" in out and "state: Ready" in out, out
    assert not list(empty.iterdir())


def test_up_once_from_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    examples = tmp_path / "examples" / "apigateway"  # the cluster objects and the v2 APIRules
    examples.mkdir(parents=True)
    for name in ("00-cluster.yaml", "10-apirules.yaml"):
        shutil.copy(ROOT / "examples" / "apigateway" / name, examples / name)
    env = {"PATH": f"{installed}:/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"}
    if os.environ.get("RECONCILERY_REDIS_SERVER"):
        env["RECONCILERY_REDIS_SERVER"] = os.environ["RECONCILERY_REDIS_SERVER"]
    out = _run([str(installed / "reconcilery"), "up", "--once", "--timeout", "150", "--flower-port",
                str(free_port()), "--apply", str(examples)], empty, 400, env)
    rows = [line for line in out.splitlines() if "APIRule" in line]
    assert sum("Ready" in r for r in rows) == 3 and sum("Error" in r for r in rows) == 1, out
    assert (empty / ".reconcilery" / "endpoints.json").is_file()  # the state dir, in the working directory
    where = _run([str(installed / "python"), "-c", "import kubedev, tasks.apigateway.install as i; "
                  "print(kubedev.__file__, i.APIRULE_CRD)"], empty, 60, env)
    assert str(ROOT) not in where and str(installed.parent) in where, where  # nothing read from the checkout
