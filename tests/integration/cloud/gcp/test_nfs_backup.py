"""GCP NFS backups end to end on the package's cloud stack (issue 28): a GcpNfsVolume, a GcpNfsVolumeBackup
of it (Ready, the original's labels on the Filestore stand-in's backup), a GcpNfsVolumeRestore into the
volume (Done, the lease released), a GcpNfsVolume created from the backup (the KCP NfsInstance's
``sourceBackup``, its instance created from it), a GcpNfsVolumeBackupDiscovery listing a backup
another shoot shared, and the backup's deletion deleting the Filestore backup."""

from __future__ import annotations

from typing import Any

import pytest

from kube import Kube, resources
from tasks.cloud import names
from tasks.cloud.gcp import nfsbackup_plan as fs
from tests.integration.cloud.conftest import GCP_PROJECT, CloudEnv

pytestmark = pytest.mark.integration


def state_of(cloud: CloudEnv, skr: Kube, res: Any, name: str, state: str, namespace: str | None = "default",
             timeout: float = 60) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(res, name, namespace)) is not None
                      and (o.get("status") or {}).get("state") == state and o,
                      timeout=timeout, message=f"{res.kind} {name} {state}")


def test_gcp_nfs_backup_restore_and_volume_from_backup(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="gcp")
    skr = rt.skr
    assert skr is not None
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), timeout=90, message="SKR active")
    cloud.wait(lambda: skr.served(names.GCP_NFS_VOLUME_BACKUP), timeout=90, message="backup CRDs installed")
    scope = cloud.kcp_get(names.SCOPE, rt.kyma)
    assert scope is not None
    shared = f"projects/{GCP_PROJECT}/locations/europe-west3/backups/cm-shared"
    cloud.gcp.filestore.put_backup(shared, labels={"managed-by": "cloud-manager", fs.SHOOT_NAME_KEY: "shoot-b",
                                                   fs.allow_key(fs.shoot(scope)): fs.ACCESSIBLE_FROM_VALUE})
    # all at once (<= 15 s): each waits for what it needs, in the connect's order (volumes, backups, restores)
    skr.create(names.SKR_IPRANGE, {"metadata": {"name": "nfs"}, "spec": {"cidr": "10.251.0.0/22"}})
    skr.create(names.GCP_NFS_VOLUME, {"metadata": {"name": "src", "namespace": "default"},
                                      "spec": {"capacityGb": 1024, "ipRange": {"name": "nfs"}}})
    skr.create(names.GCP_NFS_VOLUME_BACKUP, {"metadata": {"name": "bk", "namespace": "default"}, "spec": {
        "source": {"volume": {"name": "src"}}, "accessibleFrom": ["shoot-other"]}})
    skr.create(names.GCP_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": "default"}, "spec": {
        "source": {"backup": {"name": "bk", "namespace": "default"}}, "destination": {"volume": {"name": "src"}}}})
    skr.create(names.GCP_NFS_VOLUME, {"metadata": {"name": "copy", "namespace": "default"}, "spec": {
        "capacityGb": 1024, "ipRange": {"name": "nfs"}, "sourceBackup": {"name": "bk", "namespace": "default"}}})
    skr.create(names.GCP_NFS_VOLUME_BACKUP_DISCOVERY, {"metadata": {"name": "find"}})
    found = state_of(cloud, skr, names.GCP_NFS_VOLUME_BACKUP_DISCOVERY, "find", "Done", namespace=None)
    assert found["status"]["availableBackupUris"] == ["europe-west3/cm-shared"]

    done = state_of(cloud, skr, names.GCP_NFS_VOLUME_RESTORE, "rs", "Done", timeout=120)
    assert done["status"]["conditions"][0]["type"] == "Ready"
    volume = state_of(cloud, skr, names.GCP_NFS_VOLUME, "src", "Ready")
    backup = state_of(cloud, skr, names.GCP_NFS_VOLUME_BACKUP, "bk", "Ready")
    path = f"projects/{GCP_PROJECT}/locations/{backup['status']['location']}/backups/cm-{backup['status']['id']}"
    stored = cloud.gcp.filestore.backups(GCP_PROJECT)[path]
    assert stored["sourceInstance"].endswith(f"/instances/cm-{volume['status']['id']}")
    labels = stored["labels"]
    assert labels["managed-by"] == "cloud-manager" and labels["cm-allow-shoot-other"] == fs.ACCESSIBLE_FROM_VALUE
    assert labels[fs.BACKUP_NAME_KEY] == "bk" and labels[fs.VOLUME_NAME_KEY] == "src"
    assert backup["status"]["capacity"] and backup["status"]["accessibleFrom"] == "shoot-other"
    assert skr.get(resources.LEASE, "restore-src", "default") is None
    instance = f"/instances/cm-{volume['status']['id']}"
    restored = next(i for n, i in cloud.gcp.filestore.instances(GCP_PROJECT).items() if n.endswith(instance))
    assert restored["fileShares"][0]["sourceBackup"] == path

    # the copy's instance is created from the backup (then the backup may go: the copy no longer needs it)
    created = cloud.wait(lambda: next((i for i in cloud.gcp.filestore.instances(GCP_PROJECT).values()
                                       if i["fileShares"][0].get("sourceBackup") == path and not i["name"].endswith(
                                           instance)), None), timeout=60, message="the copy's instance")
    copy = skr.get(names.GCP_NFS_VOLUME, "copy", "default")
    assert copy is not None and created["name"].endswith(f"/instances/cm-{copy['status']['id']}")
    mirror = cloud.kcp_get(names.NFS_INSTANCE, copy["status"]["id"])
    assert mirror is not None and mirror["spec"]["instance"]["gcp"]["sourceBackup"] == path

    skr.delete(names.GCP_NFS_VOLUME_BACKUP, "bk", "default")
    cloud.wait(lambda: skr.get(names.GCP_NFS_VOLUME_BACKUP, "bk", "default") is None, timeout=60,
               message="backup gone")
    assert path not in cloud.gcp.filestore.backups(GCP_PROJECT)


def test_file_backup_client_against_the_stand_in(gcp: Any) -> None:
    """Every call of :class:`FileBackupClient` through google-cloud-filestore against the stand-in: a backup
    created, read, relabelled, listed by the shared filter, restored from (the running restore found again
    by listing the instance's operations), deleted; a missing one is ``None``."""
    import time

    from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
    from tasks.cloud.gcp.nfsinstance_client import FilestoreClient
    from tests.integration.cloud.gcp.conftest import NETWORK, PROJECT, VPC

    gcp.state.op_delay = 0.0
    gcp.state.put_network(PROJECT, VPC)
    gcp.state.put_address(PROJECT, "cm-r", "10.251.0.0/22", NETWORK)
    zone, region = f"projects/{PROJECT}/locations/us-east4-a", f"projects/{PROJECT}/locations/us-east4"
    FilestoreClient(endpoint=gcp.url).create_instance(zone, "cm-src", {
        "tier": "BASIC_HDD", "fileShares": [{"name": "vol1", "capacityGb": 1024}],
        "networks": [{"network": NETWORK, "modes": ["MODE_IPV4"], "reservedIpRange": "cm-r",
                      "connectMode": "PRIVATE_SERVICE_ACCESS"}]})
    client, source = FileBackupClient(endpoint=gcp.url), f"{zone}/instances/cm-src"
    name = f"{region}/backups/cm-b1"
    assert client.get_backup(name) is None
    op = client.create_backup(region, "cm-b1", {"sourceInstance": source, "sourceFileShare": "vol1",
                                                "labels": {"managed-by": "cloud-manager"}})
    assert (client.get_operation(op) or {}).get("done") is True
    assert (client.get_backup(name) or {})["state"] == "READY"
    client.update_backup_labels(name, {"managed-by": "cloud-manager", "cm-allow-s2": fs.ACCESSIBLE_FROM_VALUE})
    assert [b["name"] for b in client.list_backups(f"projects/{PROJECT}/locations/-", fs.shared_filter("s2", "s2"))] \
        == [name]
    gcp.state.op_delay = 30.0  # the restore runs until finished
    restore = client.restore_instance(source, "vol1", name)
    assert client.find_restore_operation(source) == {"name": restore, "done": False}
    gcp.filestore.finish()
    assert client.find_restore_operation(source) is None
    gcp.state.op_delay = 0.0
    assert client.delete_backup(name) is not None
    time.sleep(0.01)
    assert client.get_backup(name) is None and client.delete_backup(name) is None
    assert client.get_operation(f"{region}/operations/nope") is None
