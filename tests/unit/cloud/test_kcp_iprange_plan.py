"""The KCP IpRange's provider-independent plan (pkg/kcp/iprange), table-driven from the notes (pure):
the Scope, the CIDR, the Network, the provider's VpcPeering, deletion, the kyma VpcPeering's writes and
what completes a provider's deletion turn."""

from __future__ import annotations

from typing import Any

import pytest

from kube.toolkit import Action, Call
from kube.toolkit.outcome import Event, Outcome
from tasks.cloud import names
from tasks.cloud.kcp.iprange_plan import NETWORK, VPC_PEERING, Seen, finish, peering_writes, plan
from tasks.cloud.step import gone
from tests.unit.cloud.outcomes import done

NOW = "2026-01-01T00:00:00Z"
NODES = ["10.250.0.0/22", "100.64.0.0/12", "100.104.0.0/13"]
WANTED = {"metadata": {"name": "k"}, "spec": {"details": {"peeringName": "kyma"}}}


def t(seconds: float) -> float:
    return seconds


def iprange(*, finalizer: bool = True, deleting: bool = False, cidr: str = "", status_cidr: str = "10.251.0.0/22",
            network: str = "", conditions: list[dict[str, Any]] | None = None, state: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r", "namespace": "kcp-system",
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    spec: dict[str, Any] = {"scope": {"name": "k"}, "cidr": cidr}
    if network:
        spec["network"] = {"name": network}
    status: dict[str, Any] = {"cidr": status_cidr} if status_cidr else {}
    if conditions is not None:
        status["conditions"] = conditions
    if state:
        status["state"] = state
    return {"metadata": meta, "spec": spec, "status": status}


def net(*conditions: str, state: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "k--kyma"}, "status": {"state": state, "conditions": [
        {"type": c, "status": "True", "reason": c, "message": c} for c in conditions]}}


SCOPE = {"spec": {"provider": "aws", "region": "eu-west-1"}}
READY_NET = net("Ready")


def seen(obj: dict[str, Any], **kwargs: Any) -> Seen:
    return Seen(**{"obj": obj, "scope": SCOPE, "ranges": NODES, "network": READY_NET, **kwargs})


def conds(step: Outcome) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


# --- the turn before the provider's ---------------------------------------------------------------

@pytest.mark.parametrize(("case", "expected", "requeue"), [
    (seen(iprange(), scope=None), ("Error", "ScopeNoFound", "Scope k does not exist"), 60),
    (seen(iprange(), provider_known=False), ("Error", "Unknown", "Unknown provider aws"), None),
    (seen(iprange(status_cidr=""), ranges=[]), ("Error", "CidrAllocationFailed",
                                                 "Error due to unknown SKR nodes range"), None),
    (seen(iprange(status_cidr=""), ranges=["", "100.64.0.0/12"]),
     ("Error", "CidrAllocationFailed", "Error due to unknown SKR nodes range"), None),
    (seen(iprange(status_cidr=""), ranges=["255.255.252.0/22"]), ("Error", "CidrAllocationFailed",
                                                                  "Unable to allocate CIDR"), None),
    (seen(iprange(), network=None), ("Error", "NotFound", "Kyma network not found"), 300),
    (seen(iprange(network="elsewhere"), network=None), ("Error", "NotFound", "Network not found"), 300),
    (seen(iprange(), network=net("Error")), ("Error", "Unknown", "Network in error state"), 300),
    (seen(iprange(), network=net(state="Error")), ("Error", "Unknown", "Network in error state"), 300),
    (seen(iprange(), wanted=WANTED, peering={"metadata": {"name": "k", "labels": {names.LABEL_KYMA_NAME: "other"}}}),
     ("Error", "Unknown", "VpcPeering k exists and does not belong to kyma k"), 60),
    (seen(iprange(deleting=True), wanted=WANTED, peering={"metadata": {"name": "k"}}),
     ("Error", "Unknown", "VpcPeering k exists and does not belong to kyma k"), 60),
])
def test_errors_end_the_turn_with_the_notes_words(case: Seen, expected: tuple[str, str, str],
                                                  requeue: int | None) -> None:
    decided = plan(case, t, NOW)
    assert conds(decided) == [expected] and decided.status is not None and decided.status["state"] == "Error"
    assert decided.requeue_after == requeue and decided.error is None
    assert decided.event == Event("Warning", expected[1], expected[2])
    assert decided.handoff is None and decided.writes == ()


def test_a_scope_gone_while_deleting_releases_the_finalizer() -> None:
    assert plan(seen(iprange(deleting=True), scope=None), t, NOW) == gone()


def test_an_unchanged_error_writes_and_records_nothing() -> None:
    error = [{"type": "Error", "status": "True", "reason": "NotFound", "message": "Kyma network not found",
              "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    step = plan(seen(iprange(conditions=error, state="Error"), network=None), t, NOW)
    assert step.status is None and step.event is None and step.requeue_after == 300


def test_a_new_cidr_is_written_with_an_unchanged_error_without_an_event() -> None:
    """The original writes the CIDR first and the Error after it: the Event follows the Error alone."""
    error = [{"type": "Error", "status": "True", "reason": "NotFound", "message": "Kyma network not found",
              "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    step = plan(seen(iprange(status_cidr="", cidr="10.252.0.0/22", conditions=error, state="Error"), network=None),
                t, NOW)
    assert step.status == {"cidr": "10.252.0.0/22"} and step.event is None


@pytest.mark.parametrize(("obj", "ranges", "cidr"), [
    (iprange(status_cidr="", cidr="10.252.0.0/22"), NODES, "10.252.0.0/22"),  # spec.cidr copied
    (iprange(status_cidr=""), NODES, "10.250.4.0/22"),  # the first free /22 after the nodes
    (iprange(status_cidr="10.251.0.0/22", cidr="10.252.0.0/22"), NODES, None),  # status.cidr kept
])
def test_the_cidr_goes_with_the_handover(obj: dict[str, Any], ranges: list[str], cidr: str | None) -> None:
    decided = plan(seen(obj, ranges=ranges), t, NOW)
    assert decided == Outcome(status={"cidr": cidr} if cidr else None, handoff="reconcile")


def test_the_finalizer_is_added_before_anything_else() -> None:
    assert plan(seen(iprange(finalizer=False)), t, NOW).add_finalizer == names.FINALIZER
    assert plan(seen(iprange(finalizer=False), provider_known=False), t, NOW).add_finalizer == names.FINALIZER
    assert plan(seen(iprange(finalizer=False), network=None), t, NOW).add_finalizer == names.FINALIZER
    assert plan(seen(iprange(finalizer=False), scope=None), t, NOW).add_finalizer is None


def test_a_missing_cm_network_is_created_with_the_cidr_and_region() -> None:
    decided = plan(seen(iprange(status_cidr="", network="k--cm"), network=None), t, NOW)
    assert (decided.status, decided.requeue_after, decided.handoff) == ({"cidr": "10.250.4.0/22"}, 10, None)
    assert [(a.verb, a.kind, a.object) for a in decided.writes if isinstance(a, Action)] == [("create", NETWORK, {
            "metadata": {"name": "k--cm", "namespace": "kcp-system", "labels": {names.LABEL_KYMA_NAME: "k"}},
            "spec": {"scope": {"name": "k"}, "type": "cloud-resources",
                     "network": {"managed": {"cidr": "10.250.4.0/22", "location": "eu-west-1"}}}})]


def test_a_network_not_ready_yet_is_waited_for() -> None:
    decided = plan(seen(iprange(status_cidr="", cidr="10.252.0.0/22"), network=net()), t, NOW)
    assert decided == Outcome(status={"cidr": "10.252.0.0/22"}, requeue_after=10)


def test_our_peering_does_not_stop_the_turn() -> None:
    ours = {"metadata": {"name": "k", "labels": {names.LABEL_KYMA_NAME: "k"}}}
    assert plan(seen(iprange(), wanted=WANTED, peering=ours), t, NOW).handoff == "reconcile"


# --- deletion -----------------------------------------------------------------------------------

WARNING = [{"type": "Warning", "status": "True", "reason": "DeleteWhileUsed", "message": "old",
            "lastTransitionTime": "2025-01-01T00:00:00Z"}]


def test_deletion_waits_while_consumers_use_it() -> None:
    users = {"NfsInstance": ["kcp-system/a", "kcp-system/b"], "RedisInstance": ["kcp-system/c"]}
    decided = plan(seen(iprange(deleting=True), users=users), t, NOW)
    assert conds(decided) == [("Warning", "DeleteWhileUsed",
                               "Can not be deleted while used by NfsInstance: [kcp-system/a kcp-system/b]; "
                               "Can not be deleted while used by RedisInstance: [kcp-system/c]")]
    assert decided.status is not None and decided.status["state"] == "Warning" and decided.requeue_after == 10
    assert decided.event is None and decided.handoff is None and decided.writes == ()


OURS = {"metadata": {"name": "k", "labels": {names.LABEL_KYMA_NAME: "k"}}}


@pytest.mark.parametrize(("case", "handoff", "writes", "released", "requeue"), [
    (seen(iprange(deleting=True, conditions=WARNING, state="Warning")), "delete", [], False, None),
    (seen(iprange(deleting=True), network=None), None, [], True, None),
    (seen(iprange(deleting=True), provider_known=False), None, [], True, None),
    # the network is gone, the provider has nothing left: the VpcPeering goes first, then the finalizer
    (seen(iprange(deleting=True), network=None, wanted=WANTED, peering=OURS), None,
     [("delete", VPC_PEERING, "kcp-system/k")], False, 1),
])
def test_deletion_says_deleting_then_hands_over(case: Seen, handoff: str | None, writes: list[tuple[str, str, str]],
                                                released: bool, requeue: float | None) -> None:
    decided = plan(case, t, NOW)
    assert decided.status == {"state": "Deleting", **({"conditions": []} if case.obj["status"].get("conditions")
                                                       else {})}
    assert decided.handoff == handoff and decided.requeue_after == requeue
    assert [(a.verb, a.kind, f"{a.namespace}/{a.name}") for a in decided.writes if isinstance(a, Action)] == writes
    assert decided.add_finalizer is None and bool(decided.remove_finalizer) is released


# --- the kyma VpcPeering's writes, what completes a deletion turn ----------------------------------

def peering_of(kyma: str = "k", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "k", "labels": {names.LABEL_KYMA_NAME: kyma}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta}


@pytest.mark.parametrize(("peering", "exist", "expected"), [
    (None, True, [("create", VPC_PEERING, "kcp-system/k")]),
    (peering_of(), True, []),
    (peering_of(), False, [("delete", VPC_PEERING, "kcp-system/k")]),
    (peering_of(deleting=True), False, []),
    (None, False, []),
])
def test_peering_writes_make_the_kyma_peering_exist_or_go(peering: dict[str, Any] | None, exist: bool,
                                                          expected: list[tuple[str, str, str]]) -> None:
    found = peering_writes(iprange(), WANTED, peering, exist)
    assert [(a.verb, a.kind, f"{a.namespace}/{a.name}") for a in found] == expected


def test_the_created_peering_carries_the_kyma_and_module_labels() -> None:
    wanted = {"metadata": {"name": "k", "labels": {"x": "y"}}, "spec": {"details": {"peeringName": "kyma"}}}
    (action,) = peering_writes(iprange(), wanted, None, True)
    assert action.object == {"metadata": {"name": "k", "namespace": "kcp-system", "labels": {
        "x": "y", names.LABEL_KYMA_NAME: "k", names.LABEL_MODULE: names.MODULE_LABEL_VALUE}},
        "spec": {"details": {"peeringName": "kyma"}}}
    assert wanted["metadata"] == {"name": "k", "labels": {"x": "y"}}  # the provider's description is not changed


def writes_of(outcome: Outcome) -> list[tuple[str, str, str]]:
    return [(a.verb, a.kind, f"{a.namespace}/{a.name}") for a in outcome.writes if isinstance(a, Action)]


@pytest.mark.parametrize(("case", "step", "expected"), [
    (seen(iprange(deleting=True, network="k--cm")), gone(), [("delete", NETWORK, "kcp-system/k--cm")]),
    (seen(iprange(deleting=True, network="k--cm"), network=None), gone(), []),
    (seen(iprange(deleting=True, network="k--cm")), Outcome(requeue_after=1), []),
    (seen(iprange(deleting=True)), gone(), []),  # the kyma network is the Scope's
    (seen(iprange(network="k--cm")), gone(), []),  # not deleting
])
def test_finish_deletes_the_cm_network_once_the_finalizer_goes(case: Seen, step: Outcome,
                                                               expected: list[tuple[str, str, str]]) -> None:
    assert writes_of(finish(case, step)) == expected


def test_finish_follows_a_provider_turn_to_its_end() -> None:
    """After the provider's calls: their answers decide whether the finalizer goes, and the Network goes
    with it (not when a call was refused)."""
    call = Call("delete_subnet", ("s-1",))
    turn = Outcome(writes=(call,), then=lambda answers: gone() if answers == ("ok",) else Outcome(requeue_after=1),
                   refused=lambda write, failure, answers: Outcome(requeue_after=10, remove_finalizer=None))
    finished = finish(seen(iprange(deleting=True, network="k--cm")), turn)
    assert finished.writes == (call,)
    assert writes_of(done(finished, ["ok"])) == [("delete", NETWORK, "kcp-system/k--cm")]
    assert writes_of(done(finished, ["later"])) == []
    assert finished.refused is not None
    assert finished.refused(call, None, ()) == Outcome(requeue_after=10)  # type: ignore[arg-type]
