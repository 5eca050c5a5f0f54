"""SKR IpRange state derivation and the KCP -> SKR projection; condition helpers."""

from __future__ import annotations

import pytest

from kube.toolkit import conditions as cond
from tasks.cloud.state import derive_state, project_kcp_iprange

NOW = "2026-01-01T00:00:00Z"


def c(type_: str, status: bool = True, reason: str = "r", message: str = "m") -> dict:
    return cond.condition(type_, status, reason, message, NOW)


@pytest.mark.parametrize(("conditions", "state"), [
    ([c("Ready")], "Ready"),
    ([c("Submitted")], "Creating"),
    ([c("QuotaExceeded")], "Error"),
    ([c("Error")], "Error"),
    ([c("Warning")], "Error"),  # sic: the original maps Warning to Error
    ([c("Error", False)], "Processing"),
    ([], "Processing"),
    ([c("Ready"), c("Error")], "Ready"),
])
def test_state_from_conditions(conditions: list[dict], state: str) -> None:
    assert derive_state(conditions, "Processing") == state


def test_projection_error_ready_wait() -> None:
    skr = [c("Submitted", reason="SubmissionSucceeded")]
    kcp_error = {"status": {"conditions": [c("Error", reason="VpcNotFound", message="AWS VPC x not found")]}}
    projected = project_kcp_iprange(kcp_error, skr, NOW)
    assert not projected.wait
    assert projected.conditions == [cond.condition("Error", True, "Error", "AWS VPC x not found", NOW)]
    kcp_ready = {"status": {"conditions": [c("Ready", reason="Ready", message="Ready")]}}
    assert project_kcp_iprange(kcp_ready, skr, NOW).conditions == [cond.condition("Ready", True, "Ready", "Ready", NOW)]
    deleting = {**kcp_ready, "metadata": {"deletionTimestamp": NOW}}
    assert project_kcp_iprange(deleting, skr, NOW).wait
    assert project_kcp_iprange({}, skr, NOW).wait


def test_condition_transition_time_kept_while_status_holds() -> None:
    old = [cond.condition("Ready", True, "Ready", "old", "2020-01-01T00:00:00Z")]
    same = cond.set_condition(old, cond.condition("Ready", True, "Ready", "new", NOW))
    assert same[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z" and same[0]["message"] == "new"
    flipped = cond.set_exclusive(old, cond.condition("Ready", False, "Ready", "x", NOW))
    assert flipped[0]["lastTransitionTime"] == NOW
    assert cond.remove(old, "Ready") == []
    assert cond.same(old, same[:1]) is False and cond.same(old, old)
