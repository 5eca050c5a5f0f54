"""Conformance of the stand-in's Filestore with the documented API (``file.googleapis.com`` v1), through the
unmodified ``google-cloud-filestore`` client (transport ``rest``: Google's paths, its
``$alt=json;enum-encoding=int`` requests, its protobuf parsing of every answer) and the discovery document
``google-api-python-client`` ships (every field of an answer is one the API defines)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import googleapiclient
import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import filestore_v1
from google.protobuf import field_mask_pb2, json_format

from standins.gcp import GcpStandIn

from .conftest import NETWORK, PROJECT, VPC

pytestmark = pytest.mark.integration

LOCATION = f"projects/{PROJECT}/locations/us-east4-a"
RANGE = "cm-0b8e5f4e"


def _schema(name: str) -> dict[str, Any]:
    path = os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents", "file.v1.json")
    with open(path) as f:
        return dict(json.load(f)["schemas"][name])


def _conforms(schema: str, body: dict[str, Any]) -> None:
    props = _schema(schema).get("properties", {})
    for key, value in body.items():
        assert key in props, f"{schema}.{key} is not in the file.v1 discovery schema"
        ref = props[key].get("$ref") or (props[key].get("items") or {}).get("$ref")
        for item in (value if isinstance(value, list) else [value]):
            if ref and isinstance(item, dict) and ref not in ("Status",):
                _conforms(ref, item)


def _client(standin: GcpStandIn) -> filestore_v1.CloudFilestoreManagerClient:
    return filestore_v1.CloudFilestoreManagerClient(credentials=AnonymousCredentials(), transport="rest",
                                                    client_options=ClientOptions(api_endpoint=standin.url))


def _instance(tier: filestore_v1.Instance.Tier = filestore_v1.Instance.Tier.BASIC_HDD,
              capacity: int = 1024, reserved: str = RANGE) -> filestore_v1.Instance:
    return filestore_v1.Instance(
        tier=tier, file_shares=[filestore_v1.FileShareConfig(name="vol1", capacity_gb=capacity)],
        networks=[filestore_v1.NetworkConfig(
            network=NETWORK, modes=[filestore_v1.NetworkConfig.AddressMode.MODE_IPV4], reserved_ip_range=reserved,
            connect_mode=filestore_v1.NetworkConfig.ConnectMode.PRIVATE_SERVICE_ACCESS)])


def _plain(message: Any) -> dict[str, Any]:
    return dict(json_format.MessageToDict(type(message).pb(message)))


@pytest.fixture
def filestore(gcp: GcpStandIn) -> GcpStandIn:
    gcp.state.put_address(PROJECT, RANGE, "10.251.0.0/22", f"projects/{PROJECT}/global/networks/{VPC}")
    return gcp


def test_create_runs_an_operation_creating_then_ready(filestore: GcpStandIn) -> None:
    client = _client(filestore)
    op = client.create_instance(parent=LOCATION, instance_id="cm-vol", instance=_instance())
    assert op.operation.name.startswith(f"{LOCATION}/operations/")
    name = f"{LOCATION}/instances/cm-vol"
    first = client.get_instance(name=name)
    assert first.state == filestore_v1.Instance.State.CREATING
    done = op.result(timeout=10)  # polls the operation through the client's operations path
    assert isinstance(done, filestore_v1.Instance) and done.name == name
    ready = client.get_instance(name=name)
    assert ready.state == filestore_v1.Instance.State.READY
    assert ready.tier == filestore_v1.Instance.Tier.BASIC_HDD and ready.file_shares[0].capacity_gb == 1024
    net = ready.networks[0]
    assert net.reserved_ip_range == RANGE and list(net.ip_addresses) == ["10.251.0.2"]
    assert net.connect_mode == filestore_v1.NetworkConfig.ConnectMode.PRIVATE_SERVICE_ACCESS
    assert ready.protocol == filestore_v1.Instance.FileProtocol.NFS_V3
    _conforms("Instance", _plain(ready))
    got = client.get_operation(request={"name": op.operation.name})
    assert got.done and not got.HasField("error")
    _conforms("Operation", json_format.MessageToDict(got))


def test_errors_have_the_apis_codes(filestore: GcpStandIn) -> None:
    client = _client(filestore)
    with pytest.raises(gexc.NotFound):
        client.get_instance(name=f"{LOCATION}/instances/none")
    with pytest.raises(gexc.BadRequest):  # BASIC_SSD starts at 2560 GB
        client.create_instance(parent=LOCATION, instance_id="small",
                               instance=_instance(filestore_v1.Instance.Tier.BASIC_SSD, 1024))
    with pytest.raises(gexc.BadRequest):  # the reserved range must be an allocated range of the project
        client.create_instance(parent=LOCATION, instance_id="norange", instance=_instance(reserved="cm-missing"))
    with pytest.raises(gexc.BadRequest):
        client.create_instance(parent=LOCATION, instance_id="Bad_Id", instance=_instance())
    client.create_instance(parent=LOCATION, instance_id="twice", instance=_instance()).result(timeout=10)
    with pytest.raises(gexc.Conflict):
        client.create_instance(parent=LOCATION, instance_id="twice", instance=_instance())


def test_capacity_update_no_shrink_on_basic_and_delete(filestore: GcpStandIn) -> None:
    client = _client(filestore)
    name = f"{LOCATION}/instances/cm-grow"
    client.create_instance(parent=LOCATION, instance_id="cm-grow", instance=_instance()).result(timeout=10)
    mask = field_mask_pb2.FieldMask(paths=["file_shares"])
    grown = filestore_v1.Instance(name=name, file_shares=[filestore_v1.FileShareConfig(name="vol1", capacity_gb=2048)])
    client.update_instance(instance=grown, update_mask=mask).result(timeout=10)
    assert client.get_instance(name=name).file_shares[0].capacity_gb == 2048
    shrunk = filestore_v1.Instance(name=name, file_shares=[filestore_v1.FileShareConfig(name="vol1", capacity_gb=1024)])
    with pytest.raises(gexc.BadRequest):
        client.update_instance(instance=shrunk, update_mask=mask)
    op = client.delete_instance(name=name)
    assert client.get_instance(name=name).state == filestore_v1.Instance.State.DELETING
    op.result(timeout=10)
    with pytest.raises(gexc.NotFound):
        client.get_instance(name=name)


def test_injected_error_state_and_failed_operation(filestore: GcpStandIn) -> None:
    client = _client(filestore)
    name = f"{LOCATION}/instances/cm-err"
    client.create_instance(parent=LOCATION, instance_id="cm-err", instance=_instance()).result(timeout=10)
    filestore.filestore.set_error(name, "disk failure")
    broken = client.get_instance(name=name)
    assert broken.state == filestore_v1.Instance.State.ERROR and broken.status_message == "disk failure"
    filestore.state.fail_operation("filestore", "create", "cm-quota", code="RESOURCE_EXHAUSTED", message="quota")
    op = client.create_instance(parent=LOCATION, instance_id="cm-quota", instance=_instance())
    deadline = time.monotonic() + 10
    while not (got := client.get_operation(request={"name": op.operation.name})).done:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert got.error.code == 8 and got.error.message == "quota"
    with pytest.raises(gexc.NotFound):
        client.get_instance(name=f"{LOCATION}/instances/cm-quota")
