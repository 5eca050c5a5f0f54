"""The plan the KCP NfsInstance and RedisInstance share (pkg/kcp/nfsinstance, pkg/kcp/redisinstance),
table-driven from the notes (pure): the Scope, the IpRange, the provider, ``copyStatusHostsToHost``,
the finalizer and the provider's turn."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kube.toolkit.outcome import Event, Outcome
from tasks.cloud import names
from tasks.cloud.kcp.consumer_plan import Seen, plan
from tasks.cloud.kcp.nfsinstance_plan import copy_host
from tasks.cloud.step import gone

NOW = "2026-01-01T00:00:00Z"
SCOPE = {"spec": {"provider": "gcp"}}
READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]}}


def t(seconds: float) -> float:
    return seconds


def instance(*, finalizer: bool = True, deleting: bool = False, iprange: str = "r",
             status: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "n", "namespace": "kcp-system",
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"scope": {"name": "k"}, "ipRange": {"name": iprange}}, "status": status or {}}


@pytest.mark.parametrize(("case", "expected", "requeue"), [
    (Seen(instance(), None), ("ScopeNoFound", "Scope k does not exist"), 60),
    (Seen(instance(), SCOPE, True, None), ("InvalidIpRangeReference", "Referred IpRange kcp-system/r does not exist"),
     None),
    (Seen(instance(iprange=""), SCOPE, True, None),
     ("InvalidIpRangeReference", "Referred IpRange kcp-system/ does not exist"), None),
    (Seen(instance(), SCOPE, False, READY), ("Unknown", "Unknown provider gcp"), None),
])
def test_errors_end_the_turn_with_the_notes_words(case: Seen, expected: tuple[str, str], requeue: int | None) -> None:
    decided = plan(case, t, 10, now=NOW)
    assert not decided.handoff and decided.requeue_after == requeue and decided.error is None
    assert [(c["type"], c["reason"], c["message"]) for c in decided.status["conditions"]] == [("Error", *expected)]
    assert decided.status["state"] == "Error" and decided.event == Event("Warning", *expected)
    assert decided.add_finalizer is None


@pytest.mark.parametrize("wait", [5, 10])
def test_an_iprange_not_ready_is_waited_for_by_the_kind(wait: float) -> None:
    not_ready = {"status": {"conditions": [{"type": "Error", "status": "True", "reason": "x", "message": "x"}]}}
    assert plan(Seen(instance(finalizer=False), SCOPE, True, not_ready), t, wait, now=NOW) \
        == Outcome(requeue_after=wait)


@pytest.mark.parametrize(("case", "expected"), [
    (Seen(instance(deleting=True), None), gone()),
    (Seen(instance(deleting=True), SCOPE, False, READY), gone()),
    (Seen(instance(deleting=True), SCOPE, True, READY), Outcome(handoff="delete")),
    (Seen(instance(deleting=True), SCOPE, True, None), Outcome(handoff="delete")),  # deliberate: see the doc
])
def test_deletion(case: Seen, expected: Outcome) -> None:
    assert plan(case, t, 10, copy_host, NOW) == expected


@pytest.mark.parametrize(("obj", "prepare", "expected"), [
    (instance(finalizer=False), None, Outcome(add_finalizer=names.FINALIZER)),
    (instance(), None, Outcome()),
    (instance(status={"hosts": ["10.0.0.2", "10.0.0.3"]}), copy_host, Outcome(status={"host": "10.0.0.2"})),
    (instance(status={"hosts": ["10.0.0.2"], "host": "10.0.0.2"}), copy_host, Outcome()),
    (instance(finalizer=False, status={"host": "old"}), copy_host, Outcome(add_finalizer=names.FINALIZER)),
])
def test_the_provider_turn_after_prepare_and_the_finalizer(obj: dict[str, Any], prepare: Any,
                                                           expected: Outcome) -> None:
    assert plan(Seen(obj, SCOPE, True, READY), t, 10, prepare, NOW) == replace(expected, handoff="reconcile")
