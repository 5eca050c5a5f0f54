"""The SKR AwsNfsVolumeBackup and AwsNfsVolumeRestore plans (pkg/skr/awsnfsvolumebackup,
pkg/skr/awsnfsvolumerestore), turn by turn over what was read (pure). The provider reads are made as the
plan needs them: each test gives the answers and :func:`decide` fails when the plan asks for one it was not
given (a turn reads only what its decision looks at)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from kube.clock import now_rfc3339
from kube.refusal import Failure
from kube.toolkit import Outcome
from kube.toolkit.conditions import condition
from tasks.cloud import names, ownership
from tasks.cloud.aws import nfsbackup_plan as bp
from tasks.cloud.aws import nfsbackup_render as render
from tasks.cloud.aws import nfsrestore_plan as rp
from tasks.cloud.calls import needed, read_as_needed
from tasks.cloud.settings import CloudSettings
from tasks.cloud.skr import awsnfsbackup
from tasks.cloud.skr.context import SkrContext
from tests.unit.cloud.outcomes import answered, calls, refuse

NOW = "2026-01-01T00:00:00Z"
TOKEN = "6f1c1f0e-8c1d-4c52-a0f7-3b1fcb8f7a11"
WHERE = bp.Where(scope="kyma-1", region="eu-central-1", account="123456789012", shoot="shoot-1")
READY = [condition("Ready", True, "Ready", "Ready", NOW)]
VOLUME = {"metadata": {"name": "vol", "namespace": "apps"}, "status": {"id": "vol-id", "conditions": READY}}
INSTANCE = {"metadata": {"name": "vol-id"}, "status": {"id": "fs-0123"}}
VAULTS = [{"BackupVaultName": "cm-kyma-1"}]
POINT_ARN = "arn:aws:backup:eu-central-1:123456789012:recovery-point:rp-1"


def t(seconds: float) -> float:
    return seconds


def backup(status: dict[str, Any] | None = None, *, finalizer: bool = True, deleting: bool = False,
           **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "bk", "namespace": "apps", "creationTimestamp": NOW}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"source": {"volume": {"name": "vol"}}, **spec}, "status": status or {}}


def decide(plan: Any, seen: Any, **answers: Any) -> Outcome:
    """The plan's Outcome once the reads it needs are made from ``answers`` (a read it needs that is not in
    ``answers`` fails the test)."""

    def fetch(key: str) -> Any:
        if key not in answers:
            raise AssertionError(f"the plan needs the read {key!r}")
        return answers[key]

    fetchers: dict[str, Callable[[], Any]] = {
        k: partial(fetch, k) for k in ("vaults", "dest_vaults", "job", "point", "copy_job", "dest_point", "metadata")}
    filled = read_as_needed(seen, lambda s: needed(lambda: plan(s, TOKEN, t, NOW)), fetchers)
    for key, value in answers.items():  # a given read the plan did not need is a test mistake
        assert getattr(filled, key) is value, f"the plan did not need {key!r}"
    return plan(filled, TOKEN, t, NOW)


def bseen(obj: dict[str, Any], **kw: Any) -> bp.Seen:
    return bp.Seen(obj=obj, where=WHERE, **{"volume": VOLUME, "instance": INSTANCE, **kw})


def errors(outcome: Outcome) -> list[tuple[str, str]]:
    return [(c["reason"], c["message"]) for c in (outcome.status or {}).get("conditions") or []]


def methods(outcome: Outcome) -> list[tuple[str, str]]:
    return [(c.client, c.method) for c in calls(outcome)]


STARTED = {"idempotencyToken": TOKEN, "jobId": "job-1", "id": "rp-1", "state": "Creating",
           "locations": ["eu-central-1"]}


# ---- AwsNfsVolumeBackup -----------------------------------------------------------------------------------

def test_a_new_backup_gets_its_finalizer_and_token_first() -> None:
    step = decide(bp.plan, bseen(backup(finalizer=False)))
    assert step.add_finalizer == names.FINALIZER
    assert step.status == {"idempotencyToken": TOKEN} and step.writes == ()


@pytest.mark.parametrize(("kw", "reason", "message"), [
    ({"volume": None}, "MissingNfsVolume", "AwsNfsVolume apps/vol does not exist"),
    ({"volume": {**VOLUME, "status": {"conditions": []}}}, "NfsVolumeNotReady", "The AwsNfsVolume is not ready"),
    ({"instance": None}, "MissingNfsVolume", "NfsInstance vol-id does not exist"),
])
def test_the_volume_and_its_own_instance_must_be_there_and_ready(kw: dict[str, Any], reason: str,
                                                                message: str) -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": TOKEN}), **kw))
    assert errors(step) == [(reason, message)] and step.status and step.status["state"] == "Error"
    assert step.requeue_after is None and step.writes == ()


def test_a_missing_vault_is_created_with_the_scope_tag() -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": TOKEN})), vaults=[{"BackupVaultName": "cm-other"}])
    (call,) = calls(step)
    assert (call.method, dict(call.kwargs)) == (
        "create_vault", {"name": "cm-kyma-1", "tags": {"cloud-resources.kyma-project.io/scope": "kyma-1"}})


def test_the_backup_job_starts_on_the_volumes_file_system_with_the_lifecycle() -> None:
    obj = backup({"idempotencyToken": TOKEN}, lifecycle={"deleteAfterDays": 100, "moveToColdStorageAfterDays": 5})
    step = decide(bp.plan, bseen(obj), vaults=VAULTS)
    (call,) = calls(step)
    assert call.method == "start_backup_job" and dict(call.kwargs) == {
        "vault": "cm-kyma-1",
        "resource_arn": "arn:aws:elasticfilesystem:eu-central-1:123456789012:file-system/fs-0123",
        "role_arn": "arn:aws:iam::123456789012:role/CloudManagerBackupServiceRole",
        "idempotency_token": TOKEN, "delete_after_days": 100, "cold_after_days": 5,
        "tags": {"Name": "apps/bk", "cloud-manager.kyma-project.io/name": "apps/bk",
                                names.TAG_SCOPE: "kyma-1", names.TAG_SHOOT: "shoot-1"}}
    after = answered(step, {"BackupJobId": "job-1", "RecoveryPointArn": POINT_ARN})
    assert after.status == {"jobId": "job-1", "id": "rp-1", "state": "Creating", "locations": ["eu-central-1"]}
    refused = refuse(step, call, "role missing")
    assert refused is not None and errors(refused) == [("Error", "Error creating AWS Backup: role missing")]


def test_a_running_job_is_waited_for_and_a_completed_one_is_ready_with_its_capacity() -> None:
    obj = backup(STARTED)
    running = decide(bp.plan, bseen(obj), job={"State": "RUNNING"}, point=None)
    assert running.requeue_after == bp.JOB_POLL and running.writes == ()
    creating = decide(bp.plan, bseen(obj), job={"State": "RUNNING"},
                      point={"Status": "CREATING", "BackupSizeInBytes": 0})
    assert creating.requeue_after == bp.JOB_POLL and creating.status is None  # no capacity of a point still being made
    ready = decide(bp.plan, bseen(obj), job={"State": "COMPLETED"},
                   point={"Status": "COMPLETED", "BackupSizeInBytes": 2048})
    assert ready.status is not None and ready.status["state"] == "Ready"
    assert errors(ready) == [("Ready", "Backup is ready for use.")]
    assert ready.status["capacity"] == "2Ki" and ready.status["lastCapacityUpdate"] == NOW
    assert ready.requeue_after == WHERE.capacity_check


@pytest.mark.parametrize(("job", "point", "message"), [
    ({"State": "FAILED", "StatusMessage": "no access"}, None, "AWS BackupJob State: FAILED. Message: no access"),
    ({"State": "COMPLETED"}, {"Status": "EXPIRED", "StatusMessage": "gone"},
     "AWS RecoveryPoint State: EXPIRED. Message: gone"),
])
def test_a_failed_job_or_recovery_point_is_an_error(job: dict[str, Any], point: Any, message: str) -> None:
    step = decide(bp.plan, bseen(backup(STARTED)), job=job, point=point)
    assert errors(step) == [("Error", message)] and step.requeue_after is None


def test_a_missing_recovery_point_of_a_completed_job_is_an_error() -> None:
    step = decide(bp.plan, bseen(backup(STARTED)), job={"State": "COMPLETED"},
                  point=Failure("not_found", 404, "ResourceNotFoundException", "nope"))
    assert errors(step) == [("Error", "Recovery point rp-1 does not exist")]


def test_a_ready_backup_only_reads_again_when_its_capacity_is_due() -> None:
    status = {**STARTED, "state": "Ready", "conditions": [condition("Ready", True, "Ready", bp.READY_MESSAGE, NOW)],
              "lastCapacityUpdate": "2025-12-31T23:30:00Z"}
    step = decide(bp.plan, bseen(backup(status)))
    assert step.requeue_after == 1800 and step.writes == () and step.status is None
    due = decide(bp.plan, bseen(backup({**status, "lastCapacityUpdate": "2025-12-31T22:00:00Z"})),
                 job={"State": "COMPLETED"}, point={"Status": "COMPLETED", "BackupSizeInBytes": 1024})
    assert due.status == {"capacity": "1Ki", "lastCapacityUpdate": NOW}


def test_a_failed_backup_is_left_alone() -> None:
    step = decide(bp.plan, bseen(backup({**STARTED, "state": "Failed"})))
    assert step.writes == () and step.status is None and step.requeue_after is None


def test_an_error_backup_of_a_schedule_with_a_newer_one_fails() -> None:
    status = {**STARTED, "state": "Error", "conditions": [condition("Error", True, "Error", "boom", NOW)]}
    step = decide(bp.plan, bseen(backup(status), newer_in_schedule=True))
    assert step.status is not None and step.status["state"] == "Failed"
    assert errors(step) == [("BackupFailed", "boom\nBackup moved to Failed state as more recent backup(s) is "
                                             "available.")]


def test_the_quota_refuses_a_new_backup_beyond_it() -> None:
    older = [backup() | {"metadata": {"name": f"b{i}", "namespace": "apps", "creationTimestamp": "2025-01-01T00:00:0"
                                                                                          f"{i}Z"}} for i in range(2)]
    obj = backup()
    step = decide(bp.plan, bseen(obj, everyone=[*older, obj], quota=2))
    assert errors(step) == [("QuotaExceeded", "Maximum number of 2 resources exceeded")]


@pytest.mark.parametrize(("spec", "status", "reason"), [
    ({"location": "evil.example.com/x"}, {}, "InvalidLocation"),
    ({}, {"id": "../../other"}, "InvalidId"),
])
def test_untrusted_location_and_ids_never_reach_a_request(spec: dict[str, Any], status: dict[str, Any],
                                                         reason: str) -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": TOKEN, **status}, **spec)))
    assert [r for r, _ in errors(step)] == [reason] and step.writes == ()


# -- the copy into another region --

def test_a_remote_location_copies_once_the_local_recovery_point_is_complete() -> None:
    obj = backup(STARTED, location="us-west-2")
    waiting = decide(bp.plan, bseen(obj), job={"State": "RUNNING"}, point={"Status": "CREATING"})
    assert waiting.writes == () and waiting.requeue_after == bp.JOB_POLL
    seen = bseen(obj)
    vault = decide(bp.plan, seen, job={"State": "COMPLETED"}, point={"Status": "COMPLETED"},
                   dest_vaults=[])
    assert methods(vault) == [("us-west-2", "create_vault")]
    copy = decide(bp.plan, seen, job={"State": "COMPLETED"}, point={"Status": "COMPLETED"},
                  dest_vaults=VAULTS)
    (call,) = calls(copy)
    assert (call.client, call.method) == ("", "start_copy_job") and dict(call.kwargs) == {
        "source_vault": "cm-kyma-1",
        "destination_vault_arn": "arn:aws:backup:us-west-2:123456789012:backup-vault:cm-kyma-1",
        "recovery_point_arn": POINT_ARN, "role_arn": "arn:aws:iam::123456789012:role/CloudManagerBackupServiceRole",
        "idempotency_token": TOKEN, "delete_after_days": None, "cold_after_days": None}
    after = answered(copy, {"CopyJobId": "copy-1"})
    assert after.status == {"copyJobId": "copy-1", "state": "CreatingRemote"}


def test_the_copy_jobs_recovery_point_becomes_the_remote_id_and_then_ready() -> None:
    obj = backup({**STARTED, "copyJobId": "copy-1", "state": "CreatingRemote"}, location="us-west-2")
    done = {"State": "COMPLETED"}, {"Status": "COMPLETED", "BackupSizeInBytes": 1024}
    pending = decide(bp.plan, bseen(obj), job=done[0], point=done[1], copy_job={"State": "RUNNING"})
    assert pending.requeue_after == 10 and pending.writes == ()
    failed = decide(bp.plan, bseen(obj), job=done[0], point=done[1],
                    copy_job={"State": "FAILED", "StatusMessage": "denied"})
    assert errors(failed) == [("BackupFailed", "denied")]
    copied = decide(bp.plan, bseen(obj), job=done[0], point=done[1], copy_job={
        "State": "COMPLETED", "DestinationRecoveryPointArn": "arn:aws:backup:us-west-2:1:recovery-point:rp-2"})
    assert copied.status == {"remoteId": "rp-2", "locations": ["eu-central-1", "us-west-2"]}
    obj2 = backup({**STARTED, "copyJobId": "copy-1", "remoteId": "rp-2", "locations": ["eu-central-1", "us-west-2"]},
                  location="us-west-2")
    ready = decide(bp.plan, bseen(obj2), job=done[0], point=done[1],
                   dest_point={"Status": "COMPLETED", "BackupSizeInBytes": 1024})
    assert ready.status is not None and ready.status["state"] == "Ready" and ready.status["capacity"] == "2Ki"


# -- deletion --

def test_deletion_deletes_the_remote_then_the_local_recovery_point_then_the_finalizer() -> None:
    status = {**STARTED, "remoteId": "rp-2", "state": "Ready"}
    obj = backup(status, deleting=True, location="us-west-2")
    remote = decide(bp.plan, bseen(obj), dest_point={"Status": "COMPLETED"})
    (call,) = calls(remote)
    assert (call.client, call.method, dict(call.kwargs)) == ("us-west-2", "delete_recovery_point", {
        "vault": "cm-kyma-1", "arn": "arn:aws:backup:us-west-2:123456789012:recovery-point:rp-2"})
    assert remote.status is not None and remote.status["state"] == "DeletingRemote"
    local = decide(bp.plan, bseen(obj), dest_point=None, point={"Status": "COMPLETED"})
    assert methods(local) == [("", "delete_recovery_point")] and local.status and local.status["state"] == "Deleting"
    for going in ("DELETING", "CREATING"):  # AWS refuses to delete a point its job still makes
        waiting = decide(bp.plan, bseen(obj), dest_point=None, point={"Status": going})
        assert waiting.writes == () and waiting.requeue_after == bp.JOB_POLL and waiting.remove_finalizer is None
    gone = decide(bp.plan, bseen(obj), dest_point=None, point=Failure("not_found", 404, "", "gone"))
    assert gone.remove_finalizer == names.FINALIZER and gone.writes == ()


def test_a_vault_made_meanwhile_is_fine() -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": TOKEN})), vaults=[])
    (call,) = calls(step)
    exists = refuse(step, call, "exists", code="AlreadyExistsException")
    assert exists is not None and exists.status is None and exists.requeue_after == 0.1


def test_deleting_a_backup_with_a_tampered_id_releases_it_without_a_request() -> None:
    step = decide(bp.plan, bseen(backup({"id": "../x"}, deleting=True)))
    assert step.remove_finalizer == names.FINALIZER and step.writes == ()


def test_deleting_a_backup_that_never_started_only_releases_it() -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": TOKEN}, deleting=True)))
    assert step.remove_finalizer == names.FINALIZER and step.writes == ()


def test_a_refused_read_is_an_error_and_a_transient_one_waits() -> None:
    obj = backup({"idempotencyToken": TOKEN})
    refused = decide(bp.plan, bseen(obj), vaults=Failure("refused", 403, "AccessDenied", "denied"))
    assert errors(refused) == [("Error", "Error listing AWS Backup Vaults: denied")]
    transient = decide(bp.plan, bseen(obj), vaults=Failure("retry", 503, "", "down", delay=3))
    assert transient.requeue_after == 3 and transient.status is None


@pytest.mark.parametrize(("arn", "ident"), [
    (POINT_ARN, "rp-1"), ("arn:aws:elasticfilesystem:r:1:file-system/fs-1", "fs-1"), ("nope", "")])
def test_parse_arn_id(arn: str, ident: str) -> None:
    assert bp.parse_arn_id(arn) == ident


# ---- AwsNfsVolumeRestore ----------------------------------------------------------------------------------

BACKUP = backup({**STARTED, "state": "Ready", "conditions": READY})


def restore(status: dict[str, Any] | None = None, *, finalizer: bool = True, deleting: bool = False,
            **source: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "rs", "namespace": "apps", "creationTimestamp": NOW}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"source": {"backup": {"name": "bk", **source}}}, "status": status or {}}


def rseen(obj: dict[str, Any], **kw: Any) -> rp.Seen:
    return rp.Seen(obj=obj, where=WHERE, **{"backup": BACKUP, "volume": VOLUME, "instance": INSTANCE, **kw})


def test_a_restore_starts_in_place_into_the_volumes_own_file_system() -> None:
    first = decide(rp.plan, rseen(restore(finalizer=False)))
    assert first.add_finalizer == names.FINALIZER and first.status == {"idempotencyToken": TOKEN}
    obj = restore({"idempotencyToken": TOKEN})
    metadata = {"RestoreMetadata": {"file-system-id": "fs-other", "Encrypted": "true"}}
    step = decide(rp.plan, rseen(obj), metadata=metadata)
    (call,) = calls(step)
    assert call.method == "start_restore_job" and dict(call.kwargs) == {
        "role_arn": "arn:aws:iam::123456789012:role/CloudManagerBackupServiceRole", "idempotency_token": TOKEN,
        "recovery_point_arn": POINT_ARN,
        "metadata": {"file-system-id": "fs-0123", "Encrypted": "true", "newFileSystem": "false"}}
    assert answered(step, "rj-1").status == {"jobId": "rj-1", "state": "InProgress"}


@pytest.mark.parametrize(("kw", "reason", "message"), [
    ({"backup": None}, "MissingNfsVolumeBackup", "AwsNfsVolumeBackup apps/bk does not exist"),
    ({"backup": backup(STARTED)}, "NfsVolumeBackupNotReady", "The AwsNfsVolumeBackup is not ready"),
    ({"volume": None}, "MissingNfsVolume", "AwsNfsVolume apps/vol does not exist"),
    ({"volume": {**VOLUME, "status": {}}}, "NfsVolumeNotReady", "The AwsNfsVolume is not ready"),
    ({"instance": None}, "MissingNfsVolume", "NfsInstance vol-id does not exist"),
])
def test_the_backup_and_the_volume_must_be_there_and_ready(kw: dict[str, Any], reason: str, message: str) -> None:
    step = decide(rp.plan, rseen(restore({"idempotencyToken": TOKEN}), **kw))
    assert errors(step) == [(reason, message)] and step.writes == ()


def test_refused_metadata_is_an_error() -> None:
    step = decide(rp.plan, rseen(restore({"idempotencyToken": TOKEN})),
                  metadata=Failure("refused", 400, "InvalidParameterValueException", "bad arn"))
    assert errors(step) == [("Error", "bad arn")] and step.status and step.status["state"] == "Error"


@pytest.mark.parametrize(("job", "state", "conds"), [
    ({"Status": "RUNNING"}, None, None),
    ({"Status": "FAILED", "StatusMessage": "x"}, "Failed", [("Error", "Restore Job failed: x")]),
    ({"Status": "ABORTED", "StatusMessage": "y"}, "Failed", [("Error", "Restore Job aborted: y")]),
    (None, "Failed", [("Error", "Restore Job rj-1 does not exist")]),
])
def test_the_restore_job_is_followed_to_its_end(job: Any, state: str | None, conds: Any) -> None:
    step = decide(rp.plan, rseen(restore({"idempotencyToken": TOKEN, "jobId": "rj-1", "state": "InProgress"})),
                  job=job)
    if state is None:
        assert step.requeue_after == bp.JOB_POLL and step.status is None
    else:
        assert step.status is not None and step.status["state"] == state and errors(step) == conds


def test_a_completed_restore_is_done_with_its_directory_and_releases_its_finalizer() -> None:
    created = dt.datetime(2026, 1, 1, 1, 2, 3, tzinfo=dt.UTC)
    step = decide(rp.plan, rseen(restore({"idempotencyToken": TOKEN, "jobId": "rj-1", "state": "InProgress"})),
                  job={"Status": "COMPLETED", "CreationDate": created})
    assert step.status is not None and step.status["state"] == "Done"
    assert step.status["restoredDir"] == "aws-backup-restore_2026-01-01T01-02-03"
    assert errors(step) == [("Ready", "Restore Job completed successfully")]
    assert step.remove_finalizer == names.FINALIZER


@pytest.mark.parametrize("obj", [restore({"state": "Done"}), restore({"state": "Failed"}),
                                 restore({"jobId": "rj-1"}, deleting=True)])
def test_a_finished_or_deleted_restore_only_releases_its_finalizer(obj: dict[str, Any]) -> None:
    step = decide(rp.plan, rseen(obj))
    assert step.remove_finalizer == names.FINALIZER and step.writes == () and step.status is None


def test_the_backup_namespace_defaults_to_the_restores() -> None:
    assert rp.backup_ref(restore()) == ("apps", "bk")
    assert rp.backup_ref(restore(namespace="other")) == ("other", "bk")


# ---- render -------------------------------------------------------------------------------------------------

SCOPE = {"metadata": {"name": "kyma-1"}, "spec": {"provider": "aws", "region": "eu-central-1", "shootName": "s",
                                                  "scope": {"aws": {"accountId": "123456789012"}}}}
VOLUME_DOC = {"kind": "AwsNfsVolume", "metadata": {"name": "vol", "namespace": "apps"}, "spec": {"capacity": "1Gi"}}


def doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "apps"}, "spec": spec}


def test_render_shows_the_backup_and_copy_jobs_and_the_plans_errors() -> None:
    remote = {"source": {"volume": {"name": "vol"}}, "location": "us-west-2"}
    docs = [VOLUME_DOC, doc("AwsNfsVolumeBackup", "bk", remote),
            doc("AwsNfsVolumeBackup", "lost", {"source": {"volume": {"name": "gone"}}})]
    bk, lost = render.render_backups(SCOPE, docs)
    assert (bk.name, bk.state) == ("apps/bk", "Ready")
    assert bk.plan[0] == "vault cm-kyma-1 in eu-central-1 (created when missing)"
    assert bk.plan[1].startswith("start_backup_job(vault=cm-kyma-1, resource_arn=arn:aws:elasticfilesystem:"
                                 "eu-central-1:123456789012:file-system/<fsId>")
    assert bk.plan[2] == "vault cm-kyma-1 in us-west-2 (created when missing)"
    assert (lost.state, lost.outcome) == ("Error", "MissingNfsVolume: AwsNfsVolume apps/gone does not exist")


def test_render_shows_the_restore_job_into_the_volumes_file_system() -> None:
    docs = [VOLUME_DOC, doc("AwsNfsVolumeBackup", "bk", {"source": {"volume": {"name": "vol"}}}),
            doc("AwsNfsVolumeRestore", "rs", {"source": {"backup": {"name": "bk"}}}),
            doc("AwsNfsVolumeRestore", "lost", {"source": {"backup": {"name": "gone"}}})]
    rs, lost = render.render_restores(SCOPE, docs)
    assert rs.state == "Ready" and rs.plan[-1].startswith("start_restore_job(")
    assert "recovery-point:<recoveryPointId>" in rs.plan[-1] and "'file-system-id': '<fsId>'" in rs.plan[-1]
    assert (lost.state, lost.outcome) == ("Error",
                                          "MissingNfsVolumeBackup: AwsNfsVolumeBackup apps/gone does not exist")


# ---- the reads: only this SKR's objects, only the volume's own NfsInstance ----------------------------------

class _Kcp:
    """A KCP holding one NfsInstance per name."""

    def __init__(self, objs: dict[str, dict[str, Any]]) -> None:
        self.objs, self.reads = objs, 0

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.reads += 1
        return self.objs.get(name)


IDENT = "0b9e4c1e-8a53-4c0e-9f3a-2d5c8c2f6f11"


def ctx_with(instance_labels: dict[str, str], objects: list[dict[str, Any]]) -> SkrContext:
    kcp = _Kcp({IDENT: {"metadata": {"name": IDENT, "labels": instance_labels}, "status": {"id": "fs-0123"}}})
    ctx = SkrContext(kyma="k1", skr=None, kcp=kcp, scope=SCOPE, settings=CloudSettings(),  # type: ignore[arg-type]
                     deadline=0, kcp_reader=kcp)  # type: ignore[arg-type]
    volume = {"metadata": {"name": "vol", "namespace": "apps"}, "status": {"id": IDENT, "conditions": READY}}
    ctx.remember(names.AWS_NFS_VOLUME, [volume])
    ctx.remember(names.AWS_NFS_VOLUME_BACKUP, objects)
    return ctx


def test_the_backup_reads_only_the_volumes_own_instance_and_never_calls_aws_before_it_must() -> None:
    obj = backup()
    own = awsnfsbackup.read_backup(ctx_with(ownership.owner_labels("k1", "vol", "apps"), [obj]),
                                   names.AWS_NFS_VOLUME_BACKUP, obj)
    assert own.instance is not None and own.volume is not None and own.where.region == "eu-central-1"
    assert own.where.scope == "kyma-1" and own.quota is None  # as the original (schedules keep up to 100)
    foreign = awsnfsbackup.read_backup(ctx_with(ownership.owner_labels("k2", "vol", "apps"), [obj]),
                                       names.AWS_NFS_VOLUME_BACKUP, obj)
    assert foreign.instance is None  # another runtime's NfsInstance of that name is never used
    step = bp.plan(foreign, TOKEN, t, NOW)
    assert errors(step) == [("MissingNfsVolume", f"NfsInstance {IDENT} does not exist")]


def test_a_settled_backup_or_restore_reads_nothing() -> None:
    ready = backup({**STARTED, "state": "Ready", "lastCapacityUpdate": now_rfc3339(),
                    "conditions": [condition("Ready", True, "Ready", bp.READY_MESSAGE, NOW)]})
    ctx = ctx_with(ownership.owner_labels("k1", "vol", "apps"), [ready])
    seen = awsnfsbackup.read_backup(ctx, names.AWS_NFS_VOLUME_BACKUP, ready)
    assert seen.volume is None and ctx.kcp.reads == 0  # type: ignore[attr-defined]
    ctx.remember(names.AWS_NFS_VOLUME_RESTORE, [])
    done = restore({"state": "Done"})
    assert awsnfsbackup.read_restore(ctx, names.AWS_NFS_VOLUME_RESTORE, done).backup is None


def test_a_newer_backup_of_the_same_schedule_is_seen() -> None:
    labels = {names.LABEL_SCHEDULE_NAME: "nightly", names.LABEL_SCHEDULE_NAMESPACE: "apps"}
    old = backup({"state": "Error"}) | {"metadata": {"name": "old", "namespace": "apps", "labels": labels,
                                                     "creationTimestamp": "2026-01-01T00:00:00Z"}}
    new = backup() | {"metadata": {"name": "new", "namespace": "apps", "labels": labels,
                                   "creationTimestamp": "2026-01-02T00:00:00Z"}}
    ctx = ctx_with({}, [old, new])
    assert awsnfsbackup.read_backup(ctx, names.AWS_NFS_VOLUME_BACKUP, old).newer_in_schedule
    assert not awsnfsbackup.read_backup(ctx, names.AWS_NFS_VOLUME_BACKUP, {**new, "status": {"state": "Error"}}
                                        ).newer_in_schedule


def test_the_clients_are_of_region_shaped_names_only() -> None:
    clients = awsnfsbackup.Clients(ctx_with({}, []))
    assert clients  # the executor's ``clients or {}`` must keep it
    with pytest.raises(KeyError):
        clients["evil.example.com/"]


def test_ups_rows_show_the_recovery_point_and_the_restored_directory() -> None:
    assert awsnfsbackup.backup_summary(None, None, "k", backup(STARTED | {"capacity": "6Ki"})).detail == \
        "recovery point rp-1 in eu-central-1; capacity 6Ki"
    assert awsnfsbackup.restore_summary(None, None, "k", restore({"jobId": "rj-1", "restoredDir": "d"})).detail == \
        "restore job rj-1 into /d"


@pytest.mark.parametrize("token", ["", "x" * 500, "bad token"])
def test_a_token_that_is_no_token_is_replaced_before_any_job(token: str) -> None:
    step = decide(bp.plan, bseen(backup({"idempotencyToken": token})))
    assert step.status == {"idempotencyToken": TOKEN} and step.writes == ()
    step = decide(rp.plan, rseen(restore({"idempotencyToken": token})))
    assert step.status == {"idempotencyToken": TOKEN} and step.writes == ()
