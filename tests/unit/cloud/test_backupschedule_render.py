"""``reconcilery render gcpnfsbackupschedule`` / ``awsnfsbackupschedule`` (pure): one turn of the real schedule
plan at a fixed ``now`` over manifests, and the command through typer's CliRunner."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from reconcilery.cli import app
from tasks.cloud import names
from tasks.cloud.skr.backupschedule import AWS, GCP
from tasks.cloud.skr.backupschedule_render import problems, render_schedules

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "render"
NOW = dt.datetime(2026, 11, 28, 10, 0, tzinfo=dt.UTC).timestamp()
SCOPE: dict[str, Any] = {"kind": "Scope", "metadata": {"name": "s"}, "spec": {"provider": "gcp"}}
CREATED = "2026-11-01T00:00:00Z"


def volume(kind: str = "GcpNfsVolume", ready: bool = True) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "vol", "namespace": "apps"},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def schedule(kind: str = "GcpNfsBackupSchedule", **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "nightly", "namespace": "apps", "creationTimestamp": CREATED},
            "spec": {"nfsVolumeRef": {"name": "vol"}, **spec}}


def backup(name: str, created: str, state: str = "Ready", kind: str = "GcpNfsVolumeBackup") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "apps", "creationTimestamp": created,
                                       "labels": {names.LABEL_SCHEDULE_NAME: "nightly",
                                                  names.LABEL_SCHEDULE_NAMESPACE: "apps"}},
            "status": {"state": state}}


def test_a_due_one_time_schedule_creates_its_backup_now() -> None:
    [row] = render_schedules(SCOPE, [schedule(location="us-east4", accessibleFrom=["shoot-b"]), volume()], GCP, now=NOW)
    assert row.state == "Active" and row.errors == [] and row.now == "2026-11-28T10:00:00Z"
    assert row.create == {"kind": "GcpNfsVolumeBackup", "name": "nightly-1-20261128-100000", "namespace": "apps",
                          "labels": {names.LABEL_SCHEDULE_NAME: "nightly", names.LABEL_SCHEDULE_NAMESPACE: "apps"},
                          "spec": {"location": "us-east4", "accessibleFrom": ["shoot-b"],
                                   "source": {"volume": {"name": "vol", "namespace": "apps"}}}}
    # after its backup, a one-time schedule looks once a day (the hour after its run) for its retention
    assert row.next_run_times == ["2026-11-29T11:00:00Z"]
    assert row.plan[0] == ("create GcpNfsVolumeBackup apps/nightly-1-20261128-100000: source apps/vol, "
                           "location us-east4, accessibleFrom shoot-b")
    assert row.outcome == "due: creates nightly-1-20261128-100000; next 2026-11-29T11:00:00Z"


def test_a_one_time_schedule_whose_volume_is_missing_or_not_ready_is_an_error() -> None:
    [missing] = render_schedules(SCOPE, [schedule()], GCP, now=NOW)
    assert missing.state == "Error" and missing.create is None
    assert missing.errors == ["NfsVolumeNotFound: Error loading SourceRef"]
    [waiting] = render_schedules(SCOPE, [schedule(), volume(ready=False)], GCP, now=NOW)
    assert waiting.errors == ["NfsVolumeNotReady: SourceRef is not ready"]


def test_a_recurring_schedule_shows_its_next_runs_and_creates_nothing_yet() -> None:
    [row] = render_schedules(SCOPE, [schedule("AwsNfsBackupSchedule", schedule="0 2 * * *"),
                                     volume("AwsNfsVolume")], AWS, now=NOW)
    assert row.kind == "AwsNfsBackupSchedule" and row.state == "Active"
    assert row.next_run_times == ["2026-11-29T02:00:00Z", "2026-11-30T02:00:00Z", "2026-12-01T02:00:00Z"]
    assert row.create is None and row.delete == []
    assert row.plan == ["next runs 2026-11-29T02:00:00Z, 2026-11-30T02:00:00Z, 2026-12-01T02:00:00Z"]


def test_a_due_recurring_run_creates_and_applies_the_retention() -> None:
    obj = schedule(schedule="0 10 * * *", maxReadyBackups=2)
    obj["status"] = {"state": "Active", "schedule": "0 10 * * *", "nextRunTimes": ["2026-11-28T10:00:00Z"],
                     "backupIndex": 3, "lastCreateRun": "2026-11-27T10:00:00Z",
                     "lastCreatedBackup": {"name": "nightly-3-20261127-100000", "namespace": "apps"}}
    old = [backup("nightly-1-20261125-100000", "2026-11-25T10:00:00Z"),
           backup("nightly-2-20261126-100000", "2026-11-26T10:00:00Z"),
           backup("nightly-3-20261127-100000", "2026-11-27T10:00:00Z"),
           backup("other-1-20261127-100000", "2026-11-27T10:00:00Z")]  # not the schedule's: left alone
    [row] = render_schedules(SCOPE, [obj, volume(), *old], GCP, now=NOW)
    assert row.state == "Active" and row.create is not None and row.create["name"] == "nightly-4-20261128-100000"
    assert row.delete == ["apps/nightly-1-20261125-100000"]
    assert row.next_run_times[0] == "2026-11-29T10:00:00Z"
    assert "delete GcpNfsVolumeBackup apps/nightly-1-20261125-100000 (retention)" in row.plan


def test_an_invalid_cron_is_a_validation_error() -> None:
    [row] = render_schedules(SCOPE, [schedule(schedule="every day"), volume()], GCP, now=NOW)
    assert row.state == "Error" and row.create is None and row.next_run_times == []
    assert len(row.errors) == 1 and row.errors[0].startswith("InvalidCronExpression: ")
    assert row.outcome == row.errors[0]


def test_the_command_renders_a_table_and_json(tmp_path: Path) -> None:
    manifests = tmp_path / "schedules.yaml"
    manifests.write_text(yaml.safe_dump_all([schedule(schedule="0 2 * * *"), volume()]))
    args = ["render", "gcpnfsbackupschedule", "-f", str(manifests), "--scope", str(EXAMPLES / "cloud-scope-gcp.yaml")]
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "nightly" in table.output and "GcpNfsBackupSchedule" in table.output and "next runs" in table.output
    [doc] = json.loads(CliRunner().invoke(app, [*args, "-o", "json"]).output)
    assert doc["state"] == "Active" and len(doc["next_run_times"]) == 3 and doc["create"] is None
    manifests.write_text(yaml.safe_dump_all([schedule(schedule="61 * * * *"), volume()]))
    bad = CliRunner().invoke(app, args)
    assert bad.exit_code == 1 and "InvalidCronExpression" in bad.output


def test_malformed_input_is_a_problem_not_a_traceback() -> None:
    odd = schedule(schedule="* * * * *")
    odd["status"] = {"conditions": 5}
    assert problems([odd, volume()], GCP) == [
        "GcpNfsBackupSchedule nightly: status.conditions must be a list of objects"]
    assert problems([{**schedule(), "spec": "x"}], GCP) == ["GcpNfsBackupSchedule nightly: spec must be an object"]
    assert problems([schedule(), volume()], GCP) == []
