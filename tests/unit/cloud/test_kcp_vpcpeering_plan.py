"""The KCP VpcPeering's provider-independent plan (pkg/kcp/vpcpeering) and the KCP Network plan
(pkg/kcp/network), table-driven from the notes (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud import names
from tasks.cloud.kcp import network_plan, vpcpeering_plan
from tasks.cloud.kcp.vpcpeering_plan import Seen, network_names, network_refs, plan

NOW = "2026-01-01T00:00:00Z"


def t(seconds: float) -> float:
    return seconds


def peering(finalizer: bool = True, deleting: bool = False, details: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "kcp-system",
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    spec: dict[str, Any] = {"scope": {"name": "k"}, "remoteRef": {"namespace": "", "name": "x"}}
    if details:
        spec["details"] = {"localNetwork": {"name": "k--kyma"}, "remoteNetwork": {"name": "p", "namespace": "other"}}
    return {"metadata": meta, "spec": spec, "status": {"state": "active"}}


def net(*conditions: str) -> dict[str, Any]:
    return {"metadata": {"name": "n"}, "status": {"conditions": [
        {"type": c, "status": "True", "reason": c, "message": c} for c in conditions]}}


SCOPE = {"spec": {"provider": "aws"}}


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


def test_network_refs_default_to_the_peerings_namespace() -> None:
    assert network_refs(peering()) == (("kcp-system", "k--kyma"), ("other", "p"))
    assert network_names(peering()) == ["k--kyma", "p"] and network_names(peering(details=False)) == []


def test_both_networks_ready_hand_over_to_the_provider_with_the_finalizer() -> None:
    decided = plan(Seen(peering(finalizer=False), SCOPE, True, net("Ready"), net("Ready")), t, NOW)
    assert decided.handoff == "reconcile" and decided.add_finalizer == names.FINALIZER
    assert plan(Seen(peering(), SCOPE, True, net("Ready"), net("Ready")), t, NOW).add_finalizer is None


@pytest.mark.parametrize(("local", "remote", "expected", "requeue"), [
    (None, net("Ready"), ("Error", "MissingDependency", "Local network not found"), 10),
    (net("Error"), net("Ready"), ("Error", "WaitingDependency", "Local network not ready"), 60),
    (net("Ready"), None, ("Error", "MissingDependency", "Remote network not found"), 10),
    (net("Ready"), net("Error"), ("Error", "WaitingDependency", "Remote network not ready"), 60),
])
def test_networks_missing_or_in_error(local: Any, remote: Any, expected: tuple[str, str, str], requeue: int) -> None:
    decided = plan(Seen(peering(), SCOPE, True, local, remote), t, NOW)
    assert decided.handoff is None and conds(decided) == [expected]
    assert decided.status is not None
    assert decided.status["state"] == "Error" and decided.requeue_after == requeue
    assert decided.event is not None and decided.event.reason == expected[1]


def test_a_network_not_ready_yet_is_waited_for_quietly() -> None:
    decided = plan(Seen(peering(), SCOPE, True, net("Ready"), net()), t, NOW)
    assert decided.handoff is None and decided.status is None and decided.requeue_after == 1


def test_scope_missing_unknown_provider_and_legacy_spec() -> None:
    missing = plan(Seen(peering(), None), t, NOW)
    assert conds(missing) == [("Error", "ScopeNoFound", "Scope k does not exist")]
    assert missing.requeue_after == 60
    assert plan(Seen(peering(deleting=True), None), t, NOW).remove_finalizer == names.FINALIZER
    unknown = plan(Seen(peering(), {"spec": {"provider": "openstack"}}, False), t, NOW)
    assert conds(unknown) == [("Error", "Unknown", "Unknown provider openstack")]
    legacy = plan(Seen(peering(details=False), SCOPE, True, net("Ready"), net("Ready")), t, NOW)
    assert conds(legacy)[0][1] == "InvalidSpec"


def test_deletion_goes_to_the_provider_whatever_networks_are_left() -> None:
    assert plan(Seen(peering(deleting=True), SCOPE, True, None, None), t, NOW).handoff == "delete"


def network(kind: str = "external", deleting: bool = False, reference: dict[str, Any] | None = None,
            finalizer: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "n", "namespace": "kcp-system",
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"type": kind, "scope": {"name": "k"}, "network": {
        "reference": reference if reference is not None else {"aws": {"vpcId": "vpc-1", "region": "r"}}}}}


AWS_SCOPE = {"spec": {"scope": {"aws": {"accountId": "123"}, "azure": {"subscriptionId": "s", "tenantId": "t"},
                                "gcp": {"project": "p"}}}}


@pytest.mark.parametrize(("reference", "expected"), [
    ({"aws": {"vpcId": "vpc-1"}}, {"aws": {"vpcId": "vpc-1", "awsAccountId": "123"}}),
    ({"aws": {"vpcId": "vpc-1", "awsAccountId": "999"}}, {"aws": {"vpcId": "vpc-1", "awsAccountId": "999"}}),
    ({"gcp": {"networkName": "n"}}, {"gcp": {"networkName": "n", "gcpProject": "p"}}),
    ({"azure": {"networkName": "n", "tenantId": "x"}},
     {"azure": {"networkName": "n", "tenantId": "x", "subscriptionId": "s"}}),
])
def test_a_reference_network_is_ready_with_its_reference_completed_from_the_scope(
        reference: dict[str, Any], expected: dict[str, Any]) -> None:
    decided = network_plan.plan(network_plan.Seen(network(reference=reference, finalizer=False), AWS_SCOPE), t, NOW)
    assert decided.handoff is None and decided.add_finalizer == names.FINALIZER
    assert decided.status is not None
    assert decided.status["network"] == expected and decided.status["networkType"] == "external"
    assert decided.status["state"] == "Ready" and conds(decided) == [("Ready", "Ready", "Ready")]


@pytest.mark.parametrize(("ipranges", "local", "remote", "message"), [
    (["kcp-system/r"], [], [], "Can not be deleted while used by: [kcp-system/r]"),
    ([], ["kcp-system/a", "kcp-system/b"], [],
     "Can not be deleted while used by VpcPeering local network: [kcp-system/a kcp-system/b]"),
    ([], [], ["kcp-system/p"], "Can not be deleted while used by VpcPeering remote network: [kcp-system/p]"),
])
def test_a_network_in_use_is_not_deleted(ipranges: list[str], local: list[str], remote: list[str],
                                         message: str) -> None:
    decided = network_plan.plan(network_plan.Seen(network(deleting=True), None, ipranges, local, remote), t, NOW)
    assert conds(decided) == [("Warning", "DeleteWhileUsed", message)]
    assert decided.status["state"] == "Warning" and decided.requeue_after == 10
    assert decided.remove_finalizer is None


def test_an_unused_network_is_deleted_managed_ones_by_the_provider() -> None:
    gone = network_plan.plan(network_plan.Seen(network(deleting=True)), t, NOW)
    assert gone.handoff is None and gone.remove_finalizer == names.FINALIZER
    managed = network_plan.Seen(network("cloud-resources", deleting=True), AWS_SCOPE)
    assert network_plan.plan(managed, t, NOW).handoff == "delete"
    assert network_plan.plan(network_plan.Seen(network("cloud-resources"), AWS_SCOPE), t, NOW).handoff == "reconcile"
    assert vpcpeering_plan.__name__ and network_plan.kind_of({"spec": {}}) == "external"


def test_a_managed_network_without_its_scope_is_an_error_and_goes_when_deleted() -> None:
    decided = network_plan.plan(network_plan.Seen(network("cloud-resources", finalizer=False)), t, NOW)
    assert conds(decided) == [("Error", "ScopeNoFound", "Scope k does not exist")]
    assert decided.handoff is None and decided.requeue_after == 60 and decided.add_finalizer == names.FINALIZER
    gone = network_plan.plan(network_plan.Seen(network("cloud-resources", deleting=True)), t, NOW)
    assert gone.handoff is None and gone.remove_finalizer == names.FINALIZER and gone.status is None


def test_a_provider_without_managed_networks_says_so_and_lets_a_deleted_one_go() -> None:
    refused = network_plan.unsupported(network("cloud-resources"))
    assert conds(refused) == [("Error", "Unknown", "Unsupported network type")] and refused.requeue_after is None
    assert network_plan.unsupported(network("cloud-resources", deleting=True)).remove_finalizer == names.FINALIZER
