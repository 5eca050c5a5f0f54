"""The NFS backup schedule plan (tasks/cloud/skr/backupschedule_plan.py), pure: cron dialect, validation,
run times, the run decision, retention, deletion; and the timed key's parsing (tasks/cloud/skr/timed.py)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.refusal import Failure
from kube.toolkit.actions import Action
from tasks.cloud import names
from tasks.cloud.skr import backupschedule_plan as bs
from tasks.cloud.skr.backupschedule import AWS, GCP
from tasks.cloud.skr.timed import key_of, parse
from workers.controller import Key

T0 = dt.datetime(2026, 11, 28, 10, 0, 0, tzinfo=dt.UTC)
CREATED = "2026-11-28T09:00:00Z"


def t(seconds: float) -> float:
    return seconds


def schedule(cron: str = "0 * * * *", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "nightly", "namespace": "apps", "creationTimestamp": CREATED,
                         "finalizers": [names.FINALIZER]},
            "spec": {"nfsVolumeRef": {"name": "data"}, "schedule": cron, **spec}, "status": {}}


def volume(ready: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": "data", "namespace": "apps"},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def backup(name: str, created: dt.datetime, state: str = "Ready", obj: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = (obj or schedule())["metadata"]
    return {"metadata": {"name": name, "namespace": meta["namespace"], "creationTimestamp": bs.fmt(created),
                         "labels": {names.LABEL_SCHEDULE_NAME: meta["name"],
                                    names.LABEL_SCHEDULE_NAMESPACE: meta["namespace"]}},
            "status": {"state": state}}


def turn(obj: dict[str, Any], now: dt.datetime, backups: list[dict[str, Any]] | None = None,
         source: dict[str, Any] | None = None, kind: bs.BackupKind = GCP) -> bs.Outcome:
    seen = bs.Seen(obj=obj, kind=kind, now=now.timestamp(), loaded=bs.due(obj, now.timestamp()),
                   source=source if source is not None else volume(), backups=tuple(backups or ()))
    return bs.plan(seen, "", t, bs.fmt(now))


def apply(obj: dict[str, Any], outcome: bs.Outcome) -> dict[str, Any]:
    status = obj.setdefault("status", {})
    for key, value in (outcome.status or {}).items():
        if value is None:
            status.pop(key, None)
        else:
            status[key] = copy.deepcopy(value)
    return obj


def creates(outcome: bs.Outcome) -> list[Action]:
    return [w for w in outcome.writes if isinstance(w, Action) and w.verb == "create"]


def deletes(outcome: bs.Outcome) -> list[str]:
    return [w.name for w in outcome.writes if isinstance(w, Action) and w.verb == "delete"]


# ---- cron dialect and validation -----------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "first"), [
    ("0 0 * * *", "2026-11-29T00:00:00Z"),
    ("*/5 * * * *", "2026-11-28T10:05:00Z"),
    ("@daily", "2026-11-29T00:00:00Z"),
    ("@hourly", "2026-11-28T11:00:00Z"),
    ("0 0 * * * 2027", "2027-01-01T00:00:00Z"),          # cronexpr: 6 fields end with a year
    ("30 0 0 * * * *", "2026-11-29T00:00:30Z"),           # 7 fields: a second first, a year last
    ("0 0 L * *", "2026-11-30T00:00:00Z"),
    ("0 0 * * MON#2", "2026-12-14T00:00:00Z"),
])
def test_cron_dialect(expr: str, first: str) -> None:
    parsed = bs.cron(expr)
    assert isinstance(parsed, bs.Cron), parsed
    assert bs.fmt(parsed.next_n(T0, 1)[0]) == first


@pytest.mark.parametrize("expr", ["* * *", "61 * * * *", "@reboot", "x y z a b", "* " * 200, "0 0 * * * * * *"])
def test_invalid_cron_is_an_error_not_a_crash(expr: str) -> None:
    assert isinstance(bs.cron(expr), str)
    obj = schedule(expr)
    out = turn(obj, T0)
    assert out.status is not None and out.status["state"] == "Error"
    assert [c["reason"] for c in out.status["conditions"]] == ["InvalidCronExpression"]
    assert out.requeue_after is None and not out.writes


@pytest.mark.parametrize(("spec", "reason"), [
    ({"startTime": "2026-11-28T08:00:00Z"}, "InvalidStartTime"),       # before the creation
    ({"startTime": "2026-11-28T09:00:00.5Z"}, None),                   # within the tolerance
    ({"startTime": "2026-11-28T12:00:00Z", "endTime": "2026-11-28T11:00:00Z"}, "InvalidEndTime"),
    ({"startTime": "yesterday"}, "InvalidStartTime"),
    ({"prefix": "Not_A_Name"}, "InvalidPrefix"),
    ({"nfsVolumeRef": {"name": "../../x"}}, "NfsVolumeNotFound"),
    ({"nfsVolumeRef": {"name": "data", "namespace": "a" * 64}}, "NfsVolumeNotFound"),
    ({"schedule": "0 0 30 2 *"}, "InvalidCronExpression"),            # no run within the horizon
])
def test_validation(spec: dict[str, Any], reason: str | None) -> None:
    problem = bs.validate(schedule(**spec) if "schedule" not in spec else {**schedule(), "spec": {
        "nfsVolumeRef": {"name": "data"}, **spec}}, T0)
    assert (problem[0] if problem else None) == reason


# ---- run times and the run decision -------------------------------------------------------------------------

def test_a_name_too_long_for_the_backups_label_is_invalid() -> None:
    obj = schedule()
    obj["metadata"]["name"] = "n" * 64
    assert bs.validate(obj, T0) == ("InvalidName", "The schedule's name labels its backups: at most 63 characters.")


def test_suspended_or_done_schedules_read_nothing_more() -> None:
    assert bs.due(schedule(suspend=True), T0.timestamp()) is False
    done = schedule()
    done["status"] = {"state": "Done"}
    assert bs.due(done, T0.timestamp()) is False
    done["metadata"]["deletionTimestamp"] = CREATED
    assert bs.due(done, T0.timestamp()) is True


def test_recurring_schedule_waits_exactly_until_its_next_run_time() -> None:
    obj = schedule("0 * * * *")
    out = turn(obj, T0 + dt.timedelta(minutes=20))
    assert out.add_finalizer is None and not out.writes
    assert out.status is not None and out.status["state"] == "Active"
    assert out.status["nextRunTimes"] == ["2026-11-28T11:00:00Z", "2026-11-28T12:00:00Z", "2026-11-28T13:00:00Z"]
    assert out.status["schedule"] == "0 * * * *"
    assert out.requeue_after == pytest.approx(40 * 60)
    apply(obj, out)
    again = turn(obj, T0 + dt.timedelta(minutes=50))
    assert again.status is None and again.requeue_after == pytest.approx(10 * 60)


def test_due_run_creates_one_named_labelled_backup_and_comes_back_at_the_next() -> None:
    obj = apply(schedule("0 * * * *", prefix="db", location="us-east4", accessibleFrom=["all"]),
                turn(schedule("0 * * * *"), T0 + dt.timedelta(minutes=20)))
    obj["spec"].update(prefix="db", location="us-east4", accessibleFrom=["all"])
    out = turn(obj, T0 + dt.timedelta(hours=1, seconds=0.4))
    [create] = creates(out)
    assert create.object["metadata"] == {"name": "db-1-20261128-110000", "namespace": "apps", "labels": {
        names.LABEL_SCHEDULE_NAME: "nightly", names.LABEL_SCHEDULE_NAMESPACE: "apps"}}
    assert create.object["kind"] == "GcpNfsVolumeBackup"
    assert create.object["spec"] == {"location": "us-east4", "accessibleFrom": ["all"],
                                     "source": {"volume": {"name": "data", "namespace": "apps"}}}
    assert out.status is not None
    assert out.status["lastCreateRun"] == out.status["lastDeleteRun"] == "2026-11-28T11:00:00Z"
    assert out.status["lastCreatedBackup"] == {"kind": "GcpNfsVolumeBackup", "namespace": "apps",
                                               "name": "db-1-20261128-110000"}
    assert out.status["backupIndex"] == 1 and out.status["backupCount"] == 1
    assert out.status["nextRunTimes"][0] == "2026-11-28T12:00:00Z"
    assert out.requeue_after == pytest.approx(3600 - 0.4)


def test_aws_backup_spec() -> None:
    obj = schedule("", location="eu-west-1")
    [create] = creates(turn(obj, T0, kind=AWS))
    assert create.object["kind"] == "AwsNfsVolumeBackup"
    assert create.object["spec"] == {"location": "eu-west-1",
                                     "source": {"volume": {"name": "data", "namespace": "apps"}}}


def test_retried_or_concurrent_run_makes_the_same_name_and_already_exists_is_success() -> None:
    obj = schedule("")
    first, second = turn(copy.deepcopy(obj), T0), turn(copy.deepcopy(obj), T0 + dt.timedelta(seconds=0.5))
    assert [w.name for w in creates(first)] == [w.name for w in creates(second)] == ["nightly-1-20261128-100000"]
    assert first.refused is not None
    exists = Failure.of_http(409, "already exists", code="AlreadyExists")
    assert first.refused(creates(first)[0], exists, ()) is None  # the writes go on: done
    forbidden = first.refused(creates(first)[0], Failure.of_http(422, "spec.location: invalid"), ())
    assert forbidden is not None and forbidden.status is not None and forbidden.status["state"] == "Error"
    assert forbidden.status["conditions"][0]["reason"] == "GCPError" and forbidden.requeue_after == 10


def test_a_listed_backup_of_the_run_is_not_created_again() -> None:
    obj = schedule("")
    out = turn(obj, T0, backups=[backup("nightly-1-20261128-100000", T0, "Creating")])
    assert not creates(out) and out.status is not None and out.status["backupCount"] == 1


def test_missed_runs_run_once() -> None:
    obj = schedule("*/10 * * * *")
    apply(obj, turn(obj, T0 - dt.timedelta(minutes=1)))
    assert obj["status"]["nextRunTimes"][0] == "2026-11-28T10:00:00Z"
    later = T0 + dt.timedelta(hours=5, minutes=3)  # workers were down for 30 periods
    out = turn(obj, later)
    assert [w.name for w in creates(out)] == ["nightly-1-20261128-100000"]
    apply(obj, out)
    assert obj["status"]["nextRunTimes"][0] == "2026-11-28T15:10:00Z"
    assert out.requeue_after == pytest.approx(7 * 60)
    again = turn(obj, later + dt.timedelta(seconds=1), backups=[backup(creates(out)[0].name, later)])
    assert not creates(again) and again.requeue_after is not None and again.requeue_after > 60


def test_no_pile_up_while_the_last_backup_is_in_progress() -> None:
    obj = schedule("*/10 * * * *")
    apply(obj, turn(obj, T0 - dt.timedelta(minutes=1)))
    out = turn(obj, T0)
    apply(obj, out)
    name = creates(out)[0].name
    slow = [backup(name, T0, "Creating")]
    held = turn(obj, T0 + dt.timedelta(minutes=10), backups=slow)
    assert not creates(held) and held.requeue_after == 30
    assert held.status is not None
    [warning] = held.status["conditions"]
    assert (warning["type"], warning["reason"]) == ("Warning", "BackupInProgress") and name in warning["message"]
    apply(obj, held)
    for minutes in (20, 30, 40):  # still slow: nothing more, however many runs are due
        assert not creates(turn(obj, T0 + dt.timedelta(minutes=minutes), backups=slow))
    done = turn(obj, T0 + dt.timedelta(minutes=41), backups=[backup(name, T0, "Ready")])
    assert [w.name for w in creates(done)] == ["nightly-2-20261128-101000"]  # once, for the run that waited
    assert done.status is not None and done.status["conditions"] is None
    assert done.status["nextRunTimes"][0] == "2026-11-28T10:50:00Z"


def test_an_error_backup_does_not_stop_the_schedule() -> None:
    """An Error backup retries at every connect and turns Failed only once a newer one exists (markFailed):
    waiting for it to be Ready or Failed would stop the schedule for good."""
    obj = schedule("*/10 * * * *")
    apply(obj, turn(obj, T0 - dt.timedelta(minutes=1)))
    out = turn(obj, T0)
    apply(obj, out)
    name = creates(out)[0].name
    nxt = turn(obj, T0 + dt.timedelta(minutes=10), backups=[backup(name, T0, "Error")])
    assert [w.name for w in creates(nxt)] == ["nightly-2-20261128-101000"]


def test_source_missing_or_not_ready() -> None:
    obj = schedule("")
    seen = bs.Seen(obj=obj, kind=GCP, now=T0.timestamp(), loaded=True, source=None)
    out = bs.plan(seen, "", t, bs.fmt(T0))
    assert out.status is not None and out.status["conditions"][0]["reason"] == "NfsVolumeNotFound"
    assert out.requeue_after == 10 and not out.writes
    out = turn(obj, T0, source=volume(ready=False))
    assert out.status is not None and out.status["conditions"][0]["reason"] == "NfsVolumeNotReady"


def test_one_time_schedule_then_daily_retention_then_done() -> None:
    obj = schedule("", maxRetentionDays=2)
    out = turn(obj, T0)
    apply(obj, out)
    assert [w.name for w in creates(out)] == ["nightly-1-20261128-100000"]
    assert obj["status"]["nextRunTimes"] == ["2026-11-29T11:00:00Z"]  # next day, the hour after the run
    kept = [backup("nightly-1-20261128-100000", T0)]
    day = dt.datetime(2026, 11, 29, 11, 0, tzinfo=dt.UTC)
    out = turn(obj, day, backups=kept)
    apply(obj, out)
    assert not creates(out) and not deletes(out) and obj["status"]["nextRunTimes"] == ["2026-11-30T11:00:00Z"]
    out = turn(obj, dt.datetime(2026, 11, 30, 11, 0, tzinfo=dt.UTC), backups=kept)
    assert deletes(out) == ["nightly-1-20261128-100000"]
    assert out.status is not None and out.status["state"] == "Done" and out.status["nextRunTimes"] is None


def test_suspend_end_time_and_done() -> None:
    obj = schedule(suspend=True)
    obj["status"] = {"nextRunTimes": ["x"], "nextDeleteTimes": {"a": "b"}}
    out = turn(obj, T0)
    assert out.status == {"state": "Suspended", "nextRunTimes": None, "nextDeleteTimes": None}
    assert out.requeue_after is None
    ended = turn(schedule(endTime="2026-11-28T09:30:00Z"), T0)
    assert ended.status is not None and ended.status["state"] == "Done"
    done = schedule()
    done["status"] = {"state": "Done"}
    assert turn(done, T0).status is None and turn(done, T0).requeue_after is None


def test_finalizer_added_first() -> None:
    obj = schedule()
    obj["metadata"]["finalizers"] = []
    assert turn(obj, T0).add_finalizer == names.FINALIZER


def test_quota() -> None:
    older = schedule()
    older["metadata"] = {**older["metadata"], "name": "a", "creationTimestamp": "2026-11-28T08:00:00Z"}
    obj = schedule()
    seen = bs.Seen(obj=obj, kind=GCP, now=T0.timestamp(), everyone=(older, obj), quota=1)
    out = bs.plan(seen, "", t, bs.fmt(T0))
    assert out.status is not None and out.status["conditions"][0]["reason"] == "QuotaExceeded"
    assert out.requeue_after is None


def test_deletion_cascades_to_its_own_backups_then_releases() -> None:
    obj = schedule(deleteCascade=True)
    obj["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    mine = [backup("nightly-1-20261128-100000", T0), backup("nightly-2-20261128-110000", T0)]
    out = turn(obj, T0, backups=mine)
    assert deletes(out) == ["nightly-1-20261128-100000", "nightly-2-20261128-110000"]
    assert out.status is not None and out.status["state"] == "Deleting" and out.requeue_after == 1
    assert out.remove_finalizer is None
    for b in mine:
        b["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:01Z"
    waiting = turn(obj, T0, backups=mine)
    assert not waiting.writes and waiting.requeue_after == 15 and waiting.remove_finalizer is None
    gone = turn(obj, T0, backups=[])
    assert gone.remove_finalizer == names.FINALIZER and not gone.writes
    obj["spec"]["deleteCascade"] = False
    keep = turn(obj, T0, backups=mine)
    assert keep.remove_finalizer == names.FINALIZER and not keep.writes


@pytest.mark.parametrize(("change", "mine"), [
    ({}, True),
    ({"namespace": "other"}, False),
    ({"labels": {names.LABEL_SCHEDULE_NAME: "nightly"}}, False),
    ({"labels": {names.LABEL_SCHEDULE_NAME: "other", names.LABEL_SCHEDULE_NAMESPACE: "apps"}}, False),
    ({"name": "customers-own-backup"}, False),
    ({"name": "nightly-1-20261128-100000-x"}, False),
])
def test_own_backups_only(change: dict[str, Any], mine: bool) -> None:
    b = backup("nightly-1-20261128-100000", T0)
    b["metadata"].update(change)
    assert bs.own(schedule(), b) is mine


# ---- retention -----------------------------------------------------------------------------------------

def test_retention_table() -> None:
    spec = {"maxRetentionDays": 10, "maxReadyBackups": 2, "maxFailedBackups": 1}
    items = [backup(f"b{i}", T0 - dt.timedelta(days=i), state) for i, state in
             enumerate(["Ready", "Failed", "Ready", "Failed", "Ready", "Creating"])] + \
        [backup("old", T0 - dt.timedelta(days=11), "Ready")]
    kept = bs.retention(items, spec, T0)
    assert [b["metadata"]["name"] for b in kept.delete] == ["b3", "b4", "old"]
    assert kept.kept == 4
    assert list(kept.next_delete_times) == ["apps/b5", "apps/b2", "apps/b1"]
    assert kept.next_delete_times["apps/b5"] == bs.fmt(T0 - dt.timedelta(days=5) + dt.timedelta(days=10))


backups_st = st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["Ready", "Failed", "Creating", "Error", ""])),
                      max_size=40)


@settings(max_examples=200, deadline=None)
@given(backups_st, st.integers(1, 400), st.integers(1, 10), st.integers(1, 5))
def test_retention_keeps_exactly_what_the_limits_say(items: list[tuple[int, str]], days: int, max_ready: int,
                                                    max_failed: int) -> None:
    listed = [backup(f"b{i}", T0 - dt.timedelta(days=age, seconds=i), state) for i, (age, state) in enumerate(items)]
    kept = bs.retention(listed, {"maxRetentionDays": days, "maxReadyBackups": max_ready,
                                 "maxFailedBackups": max_failed}, T0)
    deleted = {b["metadata"]["name"] for b in kept.delete}
    survivors = [b for b in listed if b["metadata"]["name"] not in deleted]
    young = [b for b in listed if T0 - bs.parse_time(b["metadata"]["creationTimestamp"]) <= dt.timedelta(days=days)]  # type: ignore[operator]
    for state, limit in (("Ready", max_ready), ("Failed", max_failed)):
        candidates = sorted((b for b in young if b["status"]["state"] == state),
                            key=lambda b: b["metadata"]["creationTimestamp"], reverse=True)
        assert [b for b in survivors if b["status"]["state"] == state] == \
            sorted(candidates[:limit], key=lambda b: listed.index(b))  # the newest ones, exactly the limit
    assert all(b in young for b in survivors)
    assert kept.kept == len(survivors) and len(deleted) + len(survivors) == len(listed)


# ---- properties of the run decision --------------------------------------------------------------------

CRONS = ["*/5 * * * *", "0 * * * *", "*/7 * * * *", "0 0 * * *", "30 2 * * 1-5", "15,45 * * * *", ""]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CRONS), st.lists(st.floats(0, 3 * 24 * 3600), min_size=1, max_size=25),
       st.lists(st.booleans(), min_size=25, max_size=25), st.lists(st.booleans(), min_size=25, max_size=25))
def test_one_backup_per_run_time_and_a_missed_run_runs_once(cron: str, gaps: list[float], slow: list[bool],
                                                           twice: list[bool]) -> None:
    """Turns at arbitrary times (long gaps: workers down), backups that finish at once or stay slow, and
    turns that run twice on the same read (a retry, a concurrent connect and timed key): every run time
    has at most one backup, a turn creates at most one, and never while the last one is in progress."""
    obj = schedule(cron)
    now = T0
    listed: dict[str, dict[str, Any]] = {}
    run_times: list[str] = []
    for i, gap in enumerate(gaps):
        now += dt.timedelta(seconds=gap)
        before = copy.deepcopy(obj)
        out = turn(obj, now, backups=list(listed.values()))
        made = creates(out)
        assert len(made) <= 1
        last = (before["status"].get("lastCreatedBackup") or {}).get("name")
        if made and last in listed:
            assert listed[last]["status"]["state"] in ("Ready", "Failed")
        if twice[i]:  # the same turn again on the same read: the same name
            assert [w.name for w in creates(turn(copy.deepcopy(before), now, backups=list(listed.values())))] == \
                [w.name for w in made]
        for write in made:
            assert write.name not in listed
            listed[write.name] = backup(write.name, now, "Creating" if slow[i] else "Ready", obj)
            run_times.append(write.name.split("-", 2)[2])
        for name in deletes(out):
            listed.pop(name, None)
        apply(obj, out)
        for b in listed.values():  # a slow backup finishes by the next turn unless it stays slow
            if not slow[(i + 1) % len(slow)]:
                b["status"]["state"] = "Ready"
    assert len(run_times) == len(set(run_times))
    if cron == "":
        assert len(run_times) <= 1


# ---- the timed key --------------------------------------------------------------------------------------

def test_timed_key_round_trip_and_validation() -> None:
    key = key_of("5b0c8a2e-kyma", "gcpnfsbackupschedule", "apps", "nightly.v1")
    target = parse(Key.decode(key.encode()))
    assert not isinstance(target, str)
    assert (target.kyma, target.kind.name, target.namespace, target.name) == \
        ("5b0c8a2e-kyma", "gcpnfsbackupschedule", "apps", "nightly.v1")
    for bad in [Key("other", "k", "gcpnfsbackupschedule/apps/x"), Key("local", "K!", "gcpnfsbackupschedule/apps/x"),
                Key("local", "k", "gcpnfsbackupschedule/apps"), Key("local", "k", "gcpnfsvolume/apps/x"),
                Key("local", "k", "nosuchkind/apps/x"), Key("local", "k", "gcpnfsbackupschedule/Apps/x"),
                Key("local", "k", "gcpnfsbackupschedule/apps/" + "x" * 254),
                Key("local", "k", "gcpnfsbackupschedule/apps/x/y"), Key("local", "k", "gcpnfsbackupschedule/apps/")]:
        assert isinstance(parse(bad), str), bad
