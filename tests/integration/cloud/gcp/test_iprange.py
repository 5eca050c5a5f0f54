"""The GCP KCP IpRange step through the GCP layer (google-cloud-compute, google-api-python-client)
against the GCP stand-in: create, Ready, delete, operation failures, another VPC, the legacy name."""

from __future__ import annotations

import time
from typing import Any

import pytest

import fencing
from standins.gcp import GcpStandIn
from tasks.cloud import settings
from tasks.cloud.gcp.client import GcpApiError, GcpClient
from tasks.cloud.kcp.iprange_plan import Seen
from tests.integration.cloud.steps import apply_step, drive, provider_step

from .conftest import NETWORK, NETWORK_URL, PROJECT, gcp_scope, kcp_iprange

pytestmark = pytest.mark.integration
WAIT = 0.02
SETTINGS = settings.load({"GCP_RETRY_WAIT_DURATION": "20ms"})


@pytest.fixture
def client(gcp: GcpStandIn) -> GcpClient:
    return GcpClient(endpoint=gcp.url)


def _reconcile(obj: dict[str, Any], client: GcpClient, scope: dict[str, Any] | None = None,
               s: settings.CloudSettings = SETTINGS) -> Any:
    """One turn of the IpRange kind's ``gcp`` provider as its KCP controller runs it (read, plan, the
    executor's calls) on ``client``."""
    deleting = bool(obj["metadata"].get("deletionTimestamp"))
    scope = scope or gcp_scope()
    return provider_step("iprange", obj, scope, s, Seen(obj, scope), client, deleting)


def _conditions(obj: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in obj["status"].get("conditions", [])]


def _delete(obj: dict[str, Any]) -> None:
    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"


def test_create_with_an_explicit_cidr_is_ready_and_delete_removes_address_and_psa_range(
        gcp: GcpStandIn, client: GcpClient) -> None:
    obj = kcp_iprange(name="ipr-1", cidr="10.250.4.0/22")
    step, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready" and "SyncAddress" in states and "SyncPSAConnection" in states
    assert _conditions(obj) == [("Ready", "True", "Ready", "IpRange provisioned in GCP")]
    assert obj["status"]["id"] == "cm-ipr-1" and obj["status"]["cidr"] == "10.250.4.0/22"
    assert "opIdentifier" not in obj["status"]
    address = gcp.state.addresses(PROJECT)["cm-ipr-1"]
    assert (address["address"], address["prefixLength"], address["network"]) == ("10.250.4.0", 22, NETWORK_URL)
    assert (address["addressType"], address["purpose"], address["description"]) == (
        "INTERNAL", "VPC_PEERING", "Kyma cloud-manager IP Range")
    [conn] = gcp.state.connections(PROJECT)
    assert conn["reservedPeeringRanges"] == ["cm-ipr-1"] and conn["peering"] == "servicenetworking-googleapis-com"
    assert not step.remove_finalizer

    # Ready again: nothing written, nothing requeued
    again = _reconcile(obj, client)
    assert (again.status, again.requeue_after, again.error) == (None, None, None)

    _delete(obj)
    step, states = drive(_reconcile, obj, client)
    assert step.remove_finalizer
    assert states == ["DeletePSAConnection", "DeleteAddress"]
    assert gcp.state.addresses(PROJECT) == {} and gcp.state.connections(PROJECT) == []


def test_two_ranges_share_the_connection_and_deleting_one_keeps_the_other(gcp: GcpStandIn, client: GcpClient) -> None:
    first, second = kcp_iprange(name="a", cidr="10.250.4.0/22"), kcp_iprange(name="b", cidr="10.250.8.0/22")
    drive(_reconcile, first, client)
    drive(_reconcile, second, client)
    [conn] = gcp.state.connections(PROJECT)
    assert sorted(conn["reservedPeeringRanges"]) == ["cm-a", "cm-b"]
    assert second["status"]["state"] == "Ready"
    _delete(first)
    step, _ = drive(_reconcile, first, client)
    assert step.remove_finalizer
    [conn] = gcp.state.connections(PROJECT)
    assert conn["reservedPeeringRanges"] == ["cm-b"]
    assert list(gcp.state.addresses(PROJECT)) == ["cm-b"]


def test_compute_operation_failure_is_a_gcp_error_then_retried(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.fail_operation("compute", "insert", "cm-ipr-f", code="QUOTA_EXCEEDED",
                             message="Quota 'GLOBAL_INTERNAL_ADDRESSES' exceeded.")
    obj = kcp_iprange(name="ipr-f")
    _reconcile(obj, client)
    assert obj["status"]["state"] == "SyncAddress" and obj["status"]["opIdentifier"]
    time.sleep(0.2)
    failed = _reconcile(obj, client)
    apply_step(obj, failed)
    assert failed.error == "Quota 'GLOBAL_INTERNAL_ADDRESSES' exceeded."
    assert _conditions(obj) == [("Error", "True", "GCPError", "Quota 'GLOBAL_INTERNAL_ADDRESSES' exceeded.")]
    assert "opIdentifier" not in obj["status"] and obj["status"]["state"] == "Error"
    assert failed.event is not None and failed.event.reason == "GCPError"
    # the backoff retry inserts again and now succeeds
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready" and _conditions(obj)[0][0] == "Ready"


def test_psa_operation_failure_is_a_gcp_error(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.fail_operation("servicenetworking", "create", message="Internal error")
    obj = kcp_iprange(name="ipr-p")
    for _ in range(50):
        step = _reconcile(obj, client)
        apply_step(obj, step)
        if step.error:
            break
        time.sleep(0.05)
    assert step.error == "Service Networking operation failed"
    assert _conditions(obj) == [("Error", "True", "GCPError", "Service Networking operation failed")]
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"


def test_a_running_operation_requeues_without_a_status_change(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.op_delay = 5.0
    obj = kcp_iprange(name="ipr-slow")
    apply_step(obj, _reconcile(obj, client))
    waiting = _reconcile(obj, client)
    assert (waiting.status, waiting.requeue_after, waiting.error) == (None, WAIT, None)
    assert _reconcile(obj, client, s=settings.load({})).requeue_after == 5.0  # GCP_RETRY_WAIT_DURATION's default


def test_address_in_another_vpc_is_an_error_that_is_not_retried(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.put_address(PROJECT, "cm-ipr-x", "10.250.4.0/22", f"projects/{PROJECT}/global/networks/other-vpc")
    obj = kcp_iprange(name="ipr-x")
    step, _ = drive(_reconcile, obj, client)
    assert (step.requeue_after, step.error) == (None, None)
    assert _conditions(obj) == [("Error", "True", "GCPError", "Obtained IpRange belongs to another VPC.")]
    assert step.event is not None and step.event.type == "Warning"
    assert not any(m == "POST" for m, _ in gcp.state.request_log)


def test_legacy_address_name_is_adopted_on_the_scope_vpc_only(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.put_address(PROJECT, "my-old-range", "10.250.4.0/22", NETWORK)
    obj = kcp_iprange(name="ipr-l", remote_name="my-old-range")
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready" and obj["status"]["id"] == "my-old-range"
    assert sorted(gcp.state.addresses(PROJECT)) == ["my-old-range"]  # no cm-ipr-l inserted
    # a legacy-named address on another VPC is ignored: cm-<name> is created
    gcp.state.put_address(PROJECT, "elsewhere", "10.100.0.0/22", f"projects/{PROJECT}/global/networks/other")
    other = kcp_iprange(name="ipr-m", cidr="10.250.8.0/22", remote_name="elsewhere")
    drive(_reconcile, other, client)
    assert other["status"]["id"] == "cm-ipr-m"


@pytest.mark.parametrize(("cidr", "message"), [
    ("", "CIDR is required"),
    ("10.250.4.1/22", "10.250.4.1/22 is not a valid network"),
    ("not-a-cidr", "invalid CIDR address: not-a-cidr"),
])
def test_cidr_errors_are_invalid_cidr_and_not_retried(client: GcpClient, cidr: str, message: str) -> None:
    obj = kcp_iprange(name="ipr-c", cidr=cidr)
    step, _ = drive(_reconcile, obj, client)
    assert (step.requeue_after, step.error) == (None, None)
    assert _conditions(obj) == [("Error", "True", "InvalidCidr", message)]


def test_api_errors_become_conditions(gcp: GcpStandIn, client: GcpClient) -> None:
    gcp.state.inject("POST", "/global/addresses$", 503, "Backend Error")
    obj = kcp_iprange(name="ipr-e")
    step = _reconcile(obj, client)
    assert step.requeue_after == WAIT
    assert step.status is not None
    assert step.status["conditions"][0]["message"] == "Error creating Address: Backend Error"
    gcp.state.inject("GET", "/global/addresses/cm-ipr-e$", 429, "Rate Limit Exceeded")
    assert _reconcile(obj, client).error == "Error getting address from GCP"


def test_extended_operation_result_polls_the_endpoint(gcp: GcpStandIn, client: GcpClient) -> None:
    """The layer's workaround: waiting on an insert polls the stand-in, not compute.googleapis.com."""
    client.insert_global_address(PROJECT, "shoot--kyma--c-91b7d03", "cm-w", "d", "10.250.4.0", 22, wait=True)
    assert "cm-w" in gcp.state.addresses(PROJECT)
    assert any(p.endswith("/global/operations/" + p.rsplit("/", 1)[-1]) and m == "GET"
               for m, p in gcp.state.request_log)
    gcp.state.fail_operation("compute", "delete", "cm-w", message="boom")
    with pytest.raises(GcpApiError, match="boom"):
        client.delete_global_address(PROJECT, "cm-w", wait=True)


def test_a_fenced_reconcile_writes_nothing(gcp: GcpStandIn, client: GcpClient) -> None:
    fence = fencing.Fence(token="1", deadline=time.monotonic() + 60, valid_until=time.monotonic() + 60)
    fence.mark_lost("taken over")
    obj = kcp_iprange(name="ipr-fence")
    with fencing.fenced(fence), pytest.raises(fencing.LeaseLost):
        _reconcile(obj, client)
    assert not any(m == "POST" for m, _ in gcp.state.request_log)


def test_an_allocated_cidr_in_status_is_used(gcp: GcpStandIn, client: GcpClient) -> None:
    """The common part allocates a CIDR into status.cidr when spec.cidr is empty (notes §5.4)."""
    obj = kcp_iprange(name="ipr-alloc", cidr="", status={"cidr": "10.250.4.0/22"})
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"
    assert gcp.state.addresses(PROJECT)["cm-ipr-alloc"]["address"] == "10.250.4.0"


def test_a_scope_without_gcp_fields_is_a_clear_error(client: GcpClient) -> None:
    obj = kcp_iprange()
    step = _reconcile(obj, client, {"metadata": {"name": "s"}, "spec": {"provider": "gcp", "scope": {}}})
    assert _conditions(obj) == [("Error", "True", "GCPError", "Scope 's' has no spec.scope.gcp project and vpcNetwork")]
    assert (step.requeue_after, step.error) == (None, None)  # not retried: the Scope has to change
