"""Pure parts of the GCP IpRange step and the step helpers."""

from __future__ import annotations

import pytest

from kube.toolkit import Outcome, condition, status_patch
from kube.toolkit import set_exclusive as exclusive
from tasks.cloud import settings
from tasks.cloud.gcp.iprange_plan import address_name, is_psa, parse_cidr


@pytest.mark.parametrize(("cidr", "expected"), [
    ("10.250.4.0/22", ("10.250.4.0", 22)),
    ("10.0.0.0/8", ("10.0.0.0", 8)),
])
def test_parse_cidr(cidr: str, expected: tuple[str, int]) -> None:
    assert parse_cidr(cidr) == expected


@pytest.mark.parametrize(("cidr", "message"), [
    ("10.250.4.1/22", "10.250.4.1/22 is not a valid network"),
    ("10.250.4.0", "invalid CIDR address: 10.250.4.0"),
    ("10.250.4.0/33", "invalid CIDR address: 10.250.4.0/33"),
])
def test_parse_cidr_errors(cidr: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_cidr(cidr)


def test_names_and_purpose() -> None:
    assert address_name("1a2b") == "cm-1a2b"
    assert is_psa({"spec": {}})
    assert is_psa({"spec": {"options": {"gcp": {"purpose": "VPC_PEERING"}}}})
    assert not is_psa({"spec": {"options": {"gcp": {"purpose": "PRIVATE_SERVICE_CONNECT"}}}})


@pytest.mark.parametrize(("raw", "seconds"), [("", 5.0), ("3s", 3.0), ("500ms", 0.5), ("2", 2.0)])
def test_retry_wait_from_env(raw: str, seconds: float) -> None:
    assert settings.load({"GCP_RETRY_WAIT_DURATION": raw} if raw else {}).gcp_retry_wait == seconds


def test_status_patch_only_carries_changes() -> None:
    ready = condition("Ready", True, "Ready", "IpRange provisioned in GCP", "2026-01-01T00:00:00Z")
    current = {"state": "Ready", "conditions": [ready], "opIdentifier": ""}
    later = condition("Ready", True, "Ready", "IpRange provisioned in GCP", "2026-02-02T00:00:00Z")
    assert status_patch(current, {"state": "Ready", "conditions": [later], "opIdentifier": None}) is None
    assert status_patch(current, {"state": "Error"}) == {"state": "Error"}
    assert status_patch({"opIdentifier": "op-1"}, {"opIdentifier": None}) == {"opIdentifier": None}


def test_exclusive_keeps_transition_time_of_an_unchanged_condition() -> None:
    old = condition("Error", True, "GCPError", "a", "2026-01-01T00:00:00Z")
    new = condition("Error", True, "GCPError", "b", "2026-02-02T00:00:00Z")
    assert exclusive([old], new) == [{**new, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    ready = condition("Ready", True, "Ready", "r", "2026-02-02T00:00:00Z")
    assert exclusive([old], ready) == [ready]


def test_step_as_result() -> None:
    from workers.controller import ResultKind

    assert Outcome(error="x").as_result().outcome is ResultKind.ERROR
    assert Outcome(requeue_after=5.0).as_result().requeue_after == 5.0
    assert Outcome().as_result().outcome is ResultKind.SUCCESS
