"""The start-up error path: a process command with a bad setting prints one error naming every bad
variable and what was expected, and exits 2 without a traceback, before it starts anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import config
from reconcilery.cli import app

ROOT = Path(__file__).resolve().parents[3]

BAD = {"RECONCILERY_LEASE_SECONDS": "-1", "RECONCILERY_NGINX_RESYNC_SECONDS": "soon",
       "RECONCILERY_APIRULE_V1BETA1_ACCESS": "maybe", "RECONCILERY_CLOUD_QUOTA_DEFAULTS": "{",
       "RECONCILERY_INFORMERS": "perhaps", "RECONCILERY_LEADER_ELECT": "y"}
EXPECTED = [
    "RECONCILERY_LEASE_SECONDS='-1': expected seconds (a number >= 0), got a negative value",
    "RECONCILERY_NGINX_RESYNC_SECONDS='soon': expected seconds (a number >= 0)",
    "RECONCILERY_APIRULE_V1BETA1_ACCESS='maybe': expected one of allow/1/true/yes/on or deny/0/false/no/off",
    "RECONCILERY_CLOUD_QUOTA_DEFAULTS='{': expected JSON",
    "RECONCILERY_INFORMERS='perhaps': expected one of 1/true/yes/on or 0/false/no/off",
    "RECONCILERY_LEADER_ELECT='y': expected one of 1/true/yes/on or 0/false/no/off",
]


@pytest.mark.parametrize("command", [["worker"], ["beat"], ["watch"], ["webhook"], ["up", "--once"],
                                     ["skr-listener"]])
def test_a_process_with_a_bad_setting_exits_2_naming_every_bad_variable(command: list[str]) -> None:
    config.reset()
    result = CliRunner().invoke(app, command, env=BAD)
    config.reset()
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert output.startswith("error: invalid settings:"), output
    for problem in EXPECTED:
        assert problem in output
    assert "Traceback" not in result.output


def test_the_real_process_prints_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "reconcilery.cli", "worker"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", **BAD})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[0] == "error: invalid settings:"
    assert sorted(line.strip() for line in proc.stderr.splitlines()[1:]) == sorted(EXPECTED)  # one line each
    assert "Traceback" not in proc.stderr and proc.stdout == ""
