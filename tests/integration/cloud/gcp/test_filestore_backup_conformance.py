"""Conformance of the stand-in's Filestore backups and restore with the documented API (``file.googleapis.com``
v1), through the unmodified ``google-cloud-filestore`` client (transport ``rest``: Google's paths
``.../backups``, ``.../instances/{id}:restore``, ``updateMask`` and ``filter`` query parameters, its protobuf
parsing of every answer) and the discovery document ``google-api-python-client`` ships (every field of an
answer is one the API defines). Field names are the library's types'; the listing filters are the ones
cloud-manager sends (pkg/kcp/provider/gcp/client/gcpConstants.go ``GetSkrBackupsFilter`` /
``GetSharedBackupsFilter``, over location ``-``: pkg/kcp/provider/gcp/nuke/loadNfsBackups.go,
pkg/skr/gcpnfsvolumebackupdiscovery/loadAvailableBackups.go). A test
that needs one running holds it with a long ``op_delay`` and ends it with ``FilestoreState.finish``; the others
are done as they start, so no test waits for a poll."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import filestore_v1
from google.protobuf import field_mask_pb2, json_format

from standins.gcp import GcpStandIn, matches, parse_filter

from .conftest import NETWORK, PROJECT, VPC, conforms

pytestmark = pytest.mark.integration

ZONE = f"projects/{PROJECT}/locations/us-east4-a"
REGION = f"projects/{PROJECT}/locations/us-east4"
OTHER_REGION = f"projects/{PROJECT}/locations/europe-west3"
ANY_LOCATION = f"projects/{PROJECT}/locations/-"
INSTANCE = f"{ZONE}/instances/cm-src"
RANGE = "cm-0b8e5f4e"
ACCESSIBLE = "kyma-project__cloud-manager__accessible-from"  # cloud-manager's util.GcpLabelBackupAccessibleFrom
State = filestore_v1.Backup.State


def _skr_filter(scope: str) -> str:
    """cloud-manager's GetSkrBackupsFilter."""
    return f'labels.managed-by="cloud-manager" AND labels.scope-name="{scope}"'


def _shared_filter(shoot: str, subaccount: str) -> str:
    """cloud-manager's GetSharedBackupsFilter."""
    return (f'labels.managed-by="cloud-manager" AND ( labels.cm-allow-{shoot}="{ACCESSIBLE}"'
            f' OR labels.cm-allow-{subaccount}="{ACCESSIBLE}" OR labels.cm-allow-all="{ACCESSIBLE}")')


def _client(standin: GcpStandIn) -> filestore_v1.CloudFilestoreManagerClient:
    return filestore_v1.CloudFilestoreManagerClient(credentials=AnonymousCredentials(), transport="rest",
                                                    client_options=ClientOptions(api_endpoint=standin.url))


def _plain(message: Any) -> dict[str, Any]:
    return dict(json_format.MessageToDict(type(message).pb(message)))


def _status(err: gexc.GoogleAPICallError) -> str:
    """The rpc status name of an error answer (``error.status``), as Google sends it."""
    assert err.response is not None
    return str(err.response.json()["error"]["status"])


def _instance(capacity: int = 1024, source: str = "",
              tier: int = filestore_v1.Instance.Tier.BASIC_HDD) -> filestore_v1.Instance:
    return filestore_v1.Instance(
        tier=tier,
        file_shares=[filestore_v1.FileShareConfig(name="vol1", capacity_gb=capacity, source_backup=source)],
        networks=[filestore_v1.NetworkConfig(
            network=NETWORK, modes=[filestore_v1.NetworkConfig.AddressMode.MODE_IPV4], reserved_ip_range=RANGE,
            connect_mode=filestore_v1.NetworkConfig.ConnectMode.PRIVATE_SERVICE_ACCESS)])


def _backup(labels: dict[str, str] | None = None, source: str = INSTANCE, share: str = "vol1") -> filestore_v1.Backup:
    return filestore_v1.Backup(source_instance=source, source_file_share=share, description="nightly",
                               labels=labels or {"managed-by": "cloud-manager", "scope-name": "kyma-1"})


@pytest.fixture
def fs(gcp: GcpStandIn) -> Iterator[tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]]:
    """The stand-in with the PSA range and a READY BASIC_HDD instance ``cm-src`` (share ``vol1``, 1 TiB);
    operations are done as they start (no polling) unless a test holds them (:func:`_held`)."""
    gcp.state.op_delay = 0.0
    gcp.state.put_address(PROJECT, RANGE, "10.251.0.0/22", f"projects/{PROJECT}/global/networks/{VPC}")
    client = _client(gcp)
    client.create_instance(parent=ZONE, instance_id="cm-src", instance=_instance()).result(timeout=10)
    yield gcp, client


def _held(standin: GcpStandIn) -> None:
    """Operations started from now on keep running until ``standin.filestore.finish()``."""
    standin.state.op_delay = 60.0


def _done(standin: GcpStandIn) -> None:
    standin.filestore.finish()
    standin.state.op_delay = 0.0


def test_create_get_backup_creating_then_ready(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]
                                               ) -> None:
    gcp, client = fs
    gcp.filestore.set_used_bytes(INSTANCE, 123_456_789)
    _held(gcp)
    op = client.create_backup(parent=REGION, backup_id="cm-b1", backup=_backup())
    name = f"{REGION}/backups/cm-b1"
    assert op.operation.name.startswith(f"{REGION}/operations/")
    meta = json_format.MessageToDict(op.operation)["metadata"]
    assert meta["target"] == name and meta["verb"] == "create"
    first = client.get_backup(name=name)
    assert first.state == State.CREATING
    _done(gcp)
    done = op.result(timeout=10)  # polls the operation; its response is a Backup
    assert isinstance(done, filestore_v1.Backup) and done.name == name and done.state == State.READY
    got = client.get_backup(name=name)
    assert got.state == State.READY and got.source_instance == INSTANCE and got.source_file_share == "vol1"
    assert got.capacity_gb == 1024 and got.storage_bytes == 123_456_789 and got.download_bytes == 123_456_789
    assert got.source_instance_tier == filestore_v1.Instance.Tier.BASIC_HDD
    assert got.description == "nightly" and dict(got.labels) == {"managed-by": "cloud-manager", "scope-name": "kyma-1"}
    assert got.create_time.timestamp() > 0
    conforms("file", "Backup", _plain(got))
    gcp.filestore.set_used_bytes(INSTANCE, None)
    client.create_backup(parent=REGION, backup_id="cm-b2", backup=_backup()).result(timeout=10)
    assert client.get_backup(name=f"{REGION}/backups/cm-b2").storage_bytes == 1024 * 2**30 // 10  # the default
    conforms("file", "Operation", json_format.MessageToDict(client.get_operation(request={"name": op.operation.name})))


def test_backup_errors_have_the_apis_codes(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    with pytest.raises(gexc.NotFound):
        client.get_backup(name=f"{REGION}/backups/none")
    with pytest.raises(gexc.NotFound):
        client.delete_backup(name=f"{REGION}/backups/none")
    bad: list[tuple[str, str, filestore_v1.Backup]] = [
        (REGION, "Bad_Id", _backup()),
        (ZONE, "zonal", _backup()),  # backups are regional
        (ANY_LOCATION, "anywhere", _backup()),
        (REGION, "no-source", _backup(source=f"{ZONE}/instances/none")),
        (REGION, "bad-source", _backup(source="cm-src")),
        (REGION, "foreign", _backup(source="projects/other/locations/us-east4-a/instances/cm-src")),
        (REGION, "no-share", _backup(share="vol2")),
        (REGION, "bad-label", _backup(labels={"Scope": "x"})),
        (REGION, "bad-value", _backup(labels={"scope": "kyma.1"})),
    ]
    for parent, backup_id, backup in bad:
        with pytest.raises(gexc.BadRequest) as err:
            client.create_backup(parent=parent, backup_id=backup_id, backup=backup)
        assert _status(err.value) == "INVALID_ARGUMENT", backup_id
    client.create_backup(parent=REGION, backup_id="twice", backup=_backup()).result(timeout=10)
    with pytest.raises(gexc.Conflict) as conflict:
        client.create_backup(parent=REGION, backup_id="twice", backup=_backup())
    assert _status(conflict.value) == "ALREADY_EXISTS"
    gcp.filestore.set_error(INSTANCE, "disk failure")  # the source instance is not READY
    with pytest.raises(gexc.BadRequest) as precondition:
        client.create_backup(parent=REGION, backup_id="unready", backup=_backup())
    assert _status(precondition.value) == "FAILED_PRECONDITION"
    assert sorted(gcp.filestore.backups(PROJECT)) == [f"{REGION}/backups/twice"]


def test_list_filters_as_cloud_manager_lists(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    _, client = fs
    mine = {"managed-by": "cloud-manager", "scope-name": "kyma-1"}
    shared = {"managed-by": "cloud-manager", "scope-name": "kyma-2", "cm-allow-c-91b7d03": ACCESSIBLE}
    for parent, backup_id, labels in [(REGION, "a1", mine), (OTHER_REGION, "a2", mine), (REGION, "b1", shared),
                                      (OTHER_REGION, "c1", {"managed-by": "someone", "scope-name": "kyma-1"}),
                                      (REGION, "d1", {"managed-by": "cloud-manager", "scope-name": "kyma-10"})]:
        client.create_backup(parent=parent, backup_id=backup_id, backup=_backup(labels)).result(timeout=10)

    def ids(parent: str, flt: str = "", **kw: Any) -> list[str]:
        pager = client.list_backups(request=filestore_v1.ListBackupsRequest(parent=parent, filter=flt, **kw))
        return [b.name.rsplit("/", 1)[-1] for b in pager]  # the pager follows nextPageToken

    assert ids(ANY_LOCATION, _skr_filter("kyma-1")) == ["a2", "a1"]  # every location, this Scope's only
    assert ids(REGION, _skr_filter("kyma-1")) == ["a1"]
    assert ids(ANY_LOCATION, _shared_filter("c-91b7d03", "c-91b7d03")) == ["b1"]
    assert ids(ANY_LOCATION, _shared_filter("c-other", "c-other")) == []
    assert ids(ANY_LOCATION) == ["a2", "c1", "a1", "b1", "d1"]  # by name: regions europe-west3 < us-east4
    assert ids(ANY_LOCATION, 'labels.scope-name!="kyma-1" AND NOT labels.managed-by="someone"') == ["b1", "d1"]
    assert ids(ANY_LOCATION, "labels:cm-allow-c-91b7d03") == ["b1"]  # has the key
    assert ids(ANY_LOCATION, 'state="READY" labels.scope-name=kyma-10') == ["d1"]  # bare value, implicit AND
    assert ids(ANY_LOCATION, order_by="name desc") == ["d1", "b1", "a1", "c1", "a2"]
    assert ids(ANY_LOCATION, page_size=2) == ids(ANY_LOCATION)
    first = client.list_backups(request={"parent": ANY_LOCATION, "page_size": 2})._response
    assert len(first.backups) == 2 and first.next_page_token
    conforms("file", "ListBackupsResponse", {k: v for k, v in _plain(first).items() if k != "backups"})
    assert ids("projects/other/locations/-") == []
    for broken in ['labels.managed-by="cloud-manager" AND (', "labels.x", 'labels.a="b" OR', "= x",
                   "(" * 2000 + "a=b" + ")" * 2000, 'labels.a="unterminated']:
        with pytest.raises(gexc.BadRequest):
            ids(ANY_LOCATION, broken)


@pytest.mark.parametrize(("flt", "expected"), [
    ("", True),
    ('labels.a="1"', True),
    ('labels.a="2"', False),
    ('labels.a="1" labels.b="x"', False),
    ('labels.a="1" AND (labels.b="x" OR labels.c="3")', True),
    ('labels.a="2" OR labels.c="3" AND labels.b="x"', False),  # AIP-160: OR binds tighter than AND
    ('labels.missing!="1"', True),
    ('labels.missing="1"', False),
    ('-labels.a="1"', False),
    ('-labels.a="2"', True),
    ('NOT labels.a="2"', True),
    ('NOT (labels.a="1" AND labels.c="3")', False),
    ("labels:*", True),
    ("capacityGb>=1024", True),
    ("capacityGb<100", False),
    ('name:"projects/p/locations/r/backups/x"', True),
    (r'description="say \"hi\""', True),
])
def test_filter_evaluation(flt: str, expected: bool) -> None:
    backup = {"name": "projects/p/locations/r/backups/x", "labels": {"a": "1", "c": "3"}, "capacityGb": "1024",
              "description": 'say "hi"'}
    assert matches(parse_filter(flt), backup) is expected


def test_patch_labels_and_delete(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    name = f"{REGION}/backups/cm-patch"
    client.create_backup(parent=REGION, backup_id="cm-patch", backup=_backup()).result(timeout=10)
    labels = {"managed-by": "cloud-manager", "scope-name": "kyma-1", "cm-allow-c-2": ACCESSIBLE}
    change = filestore_v1.Backup(name=name, labels=labels, description="ignored: not in the mask")
    op = client.update_backup(backup=change, update_mask=field_mask_pb2.FieldMask(paths=["labels"]))
    assert isinstance(op.result(timeout=10), filestore_v1.Backup)
    got = client.get_backup(name=name)
    assert dict(got.labels) == labels and got.description == "nightly"
    for mask in (["capacity_gb"], []):
        with pytest.raises(gexc.BadRequest):
            client.update_backup(backup=change, update_mask=field_mask_pb2.FieldMask(paths=mask))
    with pytest.raises(gexc.NotFound):
        client.update_backup(backup=filestore_v1.Backup(name=f"{REGION}/backups/none", labels=labels),
                             update_mask=field_mask_pb2.FieldMask(paths=["labels"]))
    _held(gcp)
    op = client.delete_backup(name=name)
    assert client.get_backup(name=name).state == State.DELETING
    with pytest.raises(gexc.BadRequest) as again:  # already being deleted
        client.delete_backup(name=name)
    assert _status(again.value) == "FAILED_PRECONDITION"
    _done(gcp)
    op.result(timeout=10)
    with pytest.raises(gexc.NotFound):
        client.get_backup(name=name)
    assert gcp.filestore.instances(PROJECT)[INSTANCE]["state"] == "READY"  # the source stays


def test_restore_runs_one_at_a_time(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    backup = f"{REGION}/backups/cm-r"
    client.create_backup(parent=REGION, backup_id="cm-r", backup=_backup()).result(timeout=10)
    restore = filestore_v1.RestoreInstanceRequest(name=INSTANCE, file_share="vol1", source_backup=backup)
    for request, error, status in [
        ({"source_backup": f"{REGION}/backups/none"}, gexc.NotFound, "NOT_FOUND"),
        ({"source_backup": "cm-r"}, gexc.BadRequest, "INVALID_ARGUMENT"),
        ({"file_share": "vol2"}, gexc.BadRequest, "INVALID_ARGUMENT"),
        ({"name": f"{ZONE}/instances/none"}, gexc.NotFound, "NOT_FOUND"),
    ]:
        with pytest.raises(error) as err:
            client.restore_instance(request=filestore_v1.RestoreInstanceRequest(
                {"name": INSTANCE, "file_share": "vol1", "source_backup": backup, **request}))
        assert _status(err.value) == status, request
    _held(gcp)
    op = client.restore_instance(request=restore)
    assert op.operation.name.startswith(f"{ZONE}/operations/")
    assert client.get_instance(name=INSTANCE).state == filestore_v1.Instance.State.RESTORING
    with pytest.raises(gexc.BadRequest) as busy:  # one operation per instance
        client.restore_instance(request=restore)
    assert _status(busy.value) == "FAILED_PRECONDITION"
    with pytest.raises(gexc.BadRequest) as busy:
        client.create_backup(parent=REGION, backup_id="meanwhile", backup=_backup())
    assert _status(busy.value) == "FAILED_PRECONDITION"
    # how cloud-manager finds a running restore (pkg/kcp/provider/gcp/nfsrestore/client FindRestoreOperation)
    found = client.list_operations(request={"name": ZONE, "filter": f'metadata.target="{INSTANCE}" AND '
                                                                    'metadata.verb="restore"'})
    assert [o.name for o in found.operations] == [op.operation.name] and not found.operations[0].done
    conforms("file", "ListOperationsResponse", json_format.MessageToDict(found))
    _done(gcp)
    done = op.result(timeout=10)
    assert isinstance(done, filestore_v1.Instance) and done.state == filestore_v1.Instance.State.READY
    assert client.get_instance(name=INSTANCE).file_shares[0].source_backup == backup
    conforms("file", "Instance", _plain(client.get_instance(name=INSTANCE)))


def test_restore_needs_a_share_as_large_as_the_backup(
        fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    big = f"{REGION}/backups/big"
    gcp.filestore.put_backup(big, source_instance=f"{ZONE}/instances/gone", capacity_gb=2048)
    with pytest.raises(gexc.BadRequest) as small:
        client.restore_instance(request={"name": INSTANCE, "file_share": "vol1", "source_backup": big})
    assert _status(small.value) == "INVALID_ARGUMENT"
    foreign = "projects/other/locations/us-east4/backups/theirs"
    gcp.filestore.put_backup(foreign)
    with pytest.raises(gexc.BadRequest) as shared:  # backups cannot be shared across projects
        client.restore_instance(request={"name": INSTANCE, "file_share": "vol1", "source_backup": foreign})
    assert _status(shared.value) == "INVALID_ARGUMENT"
    gcp.filestore.put_backup(f"{REGION}/backups/pending", state="CREATING")
    with pytest.raises(gexc.BadRequest) as pending:
        client.restore_instance(request={"name": INSTANCE, "file_share": "vol1",
                                         "source_backup": f"{REGION}/backups/pending"})
    assert _status(pending.value) == "FAILED_PRECONDITION"


def test_create_instance_from_a_backup(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    with pytest.raises(gexc.NotFound):  # was accepted blindly
        client.create_instance(parent=ZONE, instance_id="cm-new", instance=_instance(source=f"{REGION}/backups/no"))
    with pytest.raises(gexc.BadRequest):
        client.create_instance(parent=ZONE, instance_id="cm-new", instance=_instance(source="no"))
    backup = f"{REGION}/backups/cm-seed"
    client.create_backup(parent=REGION, backup_id="cm-seed", backup=_backup()).result(timeout=10)
    created = client.create_instance(parent=ZONE, instance_id="cm-new", instance=_instance(2048, backup))
    assert created.result(timeout=10).file_shares[0].source_backup == backup
    assert gcp.filestore.instances(PROJECT)[f"{ZONE}/instances/cm-new"]["fileShares"][0]["sourceBackup"] == backup
    gcp.filestore.put_backup(f"{REGION}/backups/huge", capacity_gb=4096)
    with pytest.raises(gexc.BadRequest):  # a share smaller than the backup's source
        client.create_instance(parent=ZONE, instance_id="cm-small", instance=_instance(2048, f"{REGION}/backups/huge"))


def _failed(client: filestore_v1.CloudFilestoreManagerClient, name: str) -> Any:
    deadline = time.monotonic() + 10
    while not (got := client.get_operation(request={"name": name})).done:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return got.error


def test_injected_operation_failures(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    gcp, client = fs
    gcp.state.fail_operation("filestore", "createBackup", "cm-quota", code="RESOURCE_EXHAUSTED", message="quota")
    op = client.create_backup(parent=REGION, backup_id="cm-quota", backup=_backup())
    error = _failed(client, op.operation.name)
    assert error.code == 8 and error.message == "quota"
    with pytest.raises(gexc.NotFound):
        client.get_backup(name=f"{REGION}/backups/cm-quota")

    name = f"{REGION}/backups/cm-keep"
    client.create_backup(parent=REGION, backup_id="cm-keep", backup=_backup()).result(timeout=10)
    gcp.state.fail_operation("filestore", "deleteBackup", "cm-keep", code="INTERNAL", message="boom")
    assert _failed(client, client.delete_backup(name=name).operation.name).code == 13
    assert client.get_backup(name=name).state == State.READY

    gcp.state.fail_operation("filestore", "restore", "cm-src", code="FAILED_PRECONDITION", message="busy")
    restore = client.restore_instance(request={"name": INSTANCE, "file_share": "vol1", "source_backup": name})
    assert _failed(client, restore.operation.name).code == 9
    instance = client.get_instance(name=INSTANCE)
    assert instance.state == filestore_v1.Instance.State.READY and not instance.file_shares[0].source_backup


def test_a_backup_chain_deletes_one_at_a_time(fs: tuple[GcpStandIn, filestore_v1.CloudFilestoreManagerClient]) -> None:
    """As documented (Filestore "Operations concurrency"): outside the BASIC tiers a second delete in a chain
    is RESOURCE_EXHAUSTED (FAILED_PRECONDITION once the source is gone); the most recent backup cannot go while
    a backup of its instance is being created, nor can a backup be created while the most recent one goes."""
    gcp, client = fs
    zonal = f"{ZONE}/instances/cm-zonal"
    client.create_instance(parent=ZONE, instance_id="cm-zonal",
                           instance=_instance(tier=filestore_v1.Instance.Tier.ZONAL)).result(timeout=10)
    for backup_id in ("z1", "z2", "z3"):
        client.create_backup(parent=REGION, backup_id=backup_id, backup=_backup(source=zonal)).result(timeout=10)
    _held(gcp)
    client.delete_backup(name=f"{REGION}/backups/z1")
    with pytest.raises(gexc.TooManyRequests) as exhausted:
        client.delete_backup(name=f"{REGION}/backups/z2")
    assert _status(exhausted.value) == "RESOURCE_EXHAUSTED"
    client.create_backup(parent=OTHER_REGION, backup_id="z-eu", backup=_backup(source=zonal))
    _done(gcp)
    _held(gcp)
    client.delete_backup(name=f"{OTHER_REGION}/backups/z-eu")  # another region: another chain, another turn
    client.create_backup(parent=REGION, backup_id="z4", backup=_backup(source=zonal))
    with pytest.raises(gexc.BadRequest) as newest:  # z3 is the most recent while z4 is being created
        client.delete_backup(name=f"{REGION}/backups/z3")
    assert _status(newest.value) == "FAILED_PRECONDITION"
    _done(gcp)
    _held(gcp)
    client.delete_backup(name=f"{REGION}/backups/z4")  # now the most recent one
    with pytest.raises(gexc.BadRequest) as going:
        client.create_backup(parent=REGION, backup_id="z5", backup=_backup(source=zonal))
    assert _status(going.value) == "FAILED_PRECONDITION"
    _done(gcp)
    client.delete_instance(name=zonal).result(timeout=10)
    _held(gcp)
    client.delete_backup(name=f"{REGION}/backups/z2")
    with pytest.raises(gexc.BadRequest) as orphaned:
        client.delete_backup(name=f"{REGION}/backups/z3")
    assert _status(orphaned.value) == "FAILED_PRECONDITION"
    _done(gcp)
    for backup_id in ("b1", "b2"):  # BASIC tiers: deletes run side by side
        client.create_backup(parent=REGION, backup_id=backup_id, backup=_backup()).result(timeout=10)
    _held(gcp)
    client.delete_backup(name=f"{REGION}/backups/b1")
    client.delete_backup(name=f"{REGION}/backups/b2")
    _done(gcp)
    assert sorted(gcp.filestore.backups(PROJECT)) == [f"{REGION}/backups/z3"]
