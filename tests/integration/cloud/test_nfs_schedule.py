"""NFS backup schedules on the package's cloud stack (issue 28): a one-time AwsNfsBackupSchedule whose
``startTime`` is a few seconds ahead is scheduled by a connect as a key of its own (``cloud-skr-object``)
and makes its backup at that time through that key, while the SKR's rotation is held so that no connect
runs in between."""

from __future__ import annotations

import datetime as dt
import time

import pytest
import redis

from kube.clock import now_rfc3339
from tasks.cloud import names
from tasks.cloud.skr import timed
from tasks.cloud.sweep import PREFIX
from tests.integration.cloud.conftest import CloudEnv
from tests.integration.cloud.test_skr import active_skr
from workers.workqueue import WorkQueue

pytestmark = pytest.mark.integration


def test_one_time_schedule_makes_its_backup_at_its_start_through_its_timed_key(cloud: CloudEnv) -> None:
    rt, skr = active_skr(cloud)
    cloud.wait(lambda: skr.served(names.AWS_NFS_BACKUP_SCHEDULE) and skr.served(names.AWS_NFS_VOLUME_BACKUP),
               timeout=30, message="schedule and backup CRDs served")
    skr.create(names.AWS_NFS_VOLUME, {"metadata": {"name": "data", "namespace": "default",
                                                   "labels": {names.LABEL_IGNORE: "true"}},  # Ready as written
                                      "spec": {"capacity": "100Gi"}})
    skr.patch_status(names.AWS_NFS_VOLUME, "data", {"state": "Ready", "conditions": [
        {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": now_rfc3339()}]},
        "default")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=7)
    skr.create(names.AWS_NFS_BACKUP_SCHEDULE, {"metadata": {"name": "once", "namespace": "default"}, "spec": {
        "nfsVolumeRef": {"name": "data"}, "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "prefix": "db"}})
    wq = WorkQueue.from_url(cloud.redis_url)
    key = timed.key_of(rt.kyma, "awsnfsbackupschedule", "default", "once")
    cloud.wait(lambda: wq.due_in(timed.OBJECT, key) is not None, timeout=6, message="a connect scheduled the key")
    assert (wq.due_in(timed.OBJECT, key) or 0) > 0.5
    hold = redis.Redis.from_url(cloud.redis_url)
    rotation = f"{PREFIX}rotation"

    def held() -> bool:  # the SKR waits in the rotation far ahead: no connect until released
        return bool(hold.zadd(rotation, {rt.kyma: time.time() + 3600}, xx=True, ch=True))

    cloud.wait(held, timeout=6, message="rotation held")
    try:
        obj = cloud.wait(lambda: (o := skr.get(names.AWS_NFS_BACKUP_SCHEDULE, "once", "default")) is not None
                         and (o.get("status") or {}).get("nextRunTimes") and o, timeout=3, message="next run")
        assert obj["status"]["nextRunTimes"] == [start.strftime("%Y-%m-%dT%H:%M:%SZ")]
        assert obj["status"]["state"] == "Active"
        assert not skr.list(names.AWS_NFS_VOLUME_BACKUP, "default")
        name = f"db-1-{start:%Y%m%d-%H%M%S}"
        backup = cloud.wait(lambda: skr.get(names.AWS_NFS_VOLUME_BACKUP, name, "default"), timeout=12,
                            message="the backup at the start time")
        assert time.time() >= start.timestamp() - 1.0
        assert hold.zscore(rotation, rt.kyma) > time.time() + 3000  # type: ignore[operator]  # still held
        assert backup["metadata"]["labels"] == {names.LABEL_SCHEDULE_NAME: "once",
                                                names.LABEL_SCHEDULE_NAMESPACE: "default"}
        assert backup["spec"]["source"] == {"volume": {"name": "data", "namespace": "default"}}
        obj = cloud.wait(lambda: (o := skr.get(names.AWS_NFS_BACKUP_SCHEDULE, "once", "default")) is not None
                         and o["status"].get("backupCount") == 1 and o, timeout=3, message="status")
        assert obj["status"]["lastCreatedBackup"] == {"kind": "AwsNfsVolumeBackup", "namespace": "default",
                                                      "name": name}
        assert obj["status"]["backupIndex"] == 1 and obj["status"]["state"] == "Active"
        assert names.FINALIZER in obj["metadata"]["finalizers"]
        # the key waits for the one-time schedule's daily retention look (tomorrow): no worker sleeps on it
        assert (wq.due_in(timed.OBJECT, key) or 0) > 3600
        assert len(skr.list(names.AWS_NFS_VOLUME_BACKUP, "default")) == 1
    finally:
        hold.zadd(rotation, {rt.kyma: time.time()}, xx=True)
