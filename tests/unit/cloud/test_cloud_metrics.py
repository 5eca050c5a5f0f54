"""The pure parts of the Cloud metrics: the provider call labels (ported from cloud-manager's
pkg/metrics and pkg/kcp/provider/*/metrics), the per-kind labels, first Ready, requeue reasons, the SKR
fleet's health entries and revisit interval."""

from __future__ import annotations

import datetime

import pytest

from kube.refusal import Failure
from kube.toolkit.execute import Executed
from kube.toolkit.outcome import Outcome
from tasks.cloud.aws.metrics import method_of as aws_method
from tasks.cloud.aws.metrics import status_of as aws_status
from tasks.cloud.azure.metrics import parse_path
from tasks.cloud.gcp.metrics import region_and_project, sanitize_path, status_of, zone_region
from tasks.cloud.kind_metrics import first_ready, kind_label, requeue_reason, state_label
from tasks.cloud.rotation import revisit_interval
from tasks.cloud.skr.fleet import summary

SUB = "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44"


@pytest.mark.parametrize(("path", "expected"), [
    ("/compute/v1/projects/sap-kyma-42/global/networks/shoot--kyma--c-91b",
     "/compute/v1/projects/{id}/global/networks/{id}"),
    ("/compute/v1/projects/myproject/global/addresses/plain", "/compute/v1/projects/{id}/global/addresses/{id}"),
    ("/v1/projects/p/locations/us-east4/instances/cm-1:getAuthString",
     "/v1/projects/{id}/locations/{id}/instances/{id}:getAuthString"),
    ("/v1/services/servicenetworking.googleapis.com/connections", "/v1/services/{id}/connections"),
    ("/v1/operations/operation-1700-abc", "/v1/operations/{id}"),
    ("//compute/v1//zones/", "/compute/v1/zones"),
])
def test_gcp_path_masks_ids(path: str, expected: str) -> None:
    assert sanitize_path(path) == expected


def test_gcp_region_and_project() -> None:
    assert region_and_project("/v1/projects/p1/locations/us-east4-a/instances/x") == ("us-east4", "p1")
    assert region_and_project("/compute/v1/projects/p2/regions/europe-west1/subnetworks/s") == ("europe-west1", "p2")
    header = "name=projects%2Fp3%2Flocations%2Fasia-south1%2Finstances%2Fi&other=x"
    assert region_and_project("/v1/whatever", header) == ("asia-south1", "p3")
    assert region_and_project("/compute/v1/projects/p4/global/networks/n") == ("", "p4")
    assert zone_region("us-east4-b") == "us-east4" and zone_region("us-east4") == "us-east4"


@pytest.mark.parametrize(("status", "code"), [(200, 200), (204, 200), (302, 200), (404, 404), (429, 429),
                                              (503, 503), (None, 0)])
def test_gcp_code_is_the_originals(status: int | None, code: int) -> None:
    assert status_of(status) == code


def test_aws_labels() -> None:
    assert aws_method("EC2", "response-received.ec2.DescribeVpcs") == "EC2/DescribeVpcs"
    assert aws_status({"status_code": 400}) == 400
    assert aws_status(None) == 0


@pytest.mark.parametrize(("path", "expected"), [
    (f"/subscriptions/{SUB}/resourceGroups/rg-1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s1",
     ("/subscriptions/{id}/resourceGroups/{id}/providers/Microsoft.Network/virtualNetworks/{id}/subnets/{id}",
      "", SUB)),
    (f"/subscriptions/{SUB}/providers/Microsoft.Network/locations/westeurope/operations/{SUB}",
     ("/subscriptions/{id}/providers/Microsoft.Network/locations/{id}/operations/{id}", "westeurope", SUB)),
    (f"/SUBSCRIPTIONS/{SUB}/resourcegroups/rg", ("/subscriptions/{id}/resourceGroups/{id}", "", SUB)),
    (f"/{SUB}/x", ("/{id}/x", "", "")),
    ("/", ("/", "", "")),
])
def test_azure_path(path: str, expected: tuple[str, str, str]) -> None:
    assert parse_path(path) == expected


def test_kind_and_state_labels_are_bounded() -> None:
    assert kind_label("IpRange", "cloud-control.kyma-project.io") == "iprange.cloud-control.kyma-project.io"
    assert [state_label(s) for s in ("Ready", "", None, "pwned-by-customer", "Deleting")] == [
        "Ready", "none", "none", "other", "Deleting"]


def _obj(state: str, ready_condition: bool = False, created: str = "2026-01-01T00:00:00Z") -> dict:
    conditions = [{"type": "Ready", "status": "True"}] if ready_condition else []
    return {"metadata": {"creationTimestamp": created}, "status": {"state": state, "conditions": conditions}}


NOW = datetime.datetime(2026, 1, 1, 0, 2, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize(("before", "after", "seconds"), [
    (_obj(""), _obj("Ready"), 120.0),
    (_obj("Creating"), _obj("Ready"), 120.0),
    (_obj("Ready"), _obj("Ready"), None),  # already Ready
    (_obj("Error"), _obj("Ready"), None),  # recovered, not the first time
    (_obj("Processing", ready_condition=True), _obj("Ready"), None),  # was Ready before (an update)
    (_obj(""), _obj("Processing"), None),
    (_obj(""), _obj("Ready", created="garbage"), None),
    (None, _obj("Ready"), None),
])
def test_first_ready(before: dict | None, after: dict, seconds: float | None) -> None:
    assert first_ready(before, after, NOW) == seconds


def _done(outcome: Outcome, refused: Failure | None = None) -> Executed:
    return Executed({}, outcome, outcome.as_result(), None if refused is None else (object(), refused), ())  # type: ignore[arg-type]


def test_requeue_reasons() -> None:
    assert requeue_reason(_done(Outcome())) is None
    assert requeue_reason(_done(Outcome(requeue_after=5))) == "wait"
    assert requeue_reason(_done(Outcome(error="boom"))) == "error"
    assert requeue_reason(_done(Outcome(requeue_after=5), Failure("throttled", 429, "", "", ""))) == "throttled"
    assert requeue_reason(_done(Outcome(error="x"), Failure("refused", 400, "", "", ""))) == "refused"


def test_the_fleet_summary_counts_health_entries_and_the_longest_unreachable() -> None:
    # (the entries themselves are finish.lua's: tests/integration/cloud/test_sweep.py)
    counts, longest = summary(["ready|1", "unreachable|100", "unreachable|40", "not_ready|5", "junk"], 7, 160.0)
    assert counts == {"ready": 1, "not_ready": 1, "unreachable": 2, "pending": 3}
    assert longest == 120.0
    assert summary([], 0, 1.0) == ({"ready": 0, "not_ready": 0, "unreachable": 0, "pending": 0}, 0.0)


def test_revisit_interval() -> None:
    assert revisit_interval([], "2026-01-01T00:00:10Z") is None
    assert revisit_interval(["2026-01-01T00:00:00Z", "bad"], "2026-01-01T00:05:00Z") == 300.0
    assert revisit_interval(["2026-01-01T00:05:00Z"], "2026-01-01T00:00:00Z") == 0.0
