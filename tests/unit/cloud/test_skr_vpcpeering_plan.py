"""The SKR VPC peering plan (pkg/skr/{aws,gcp,azure}vpcpeering), table-driven from the notes (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.toolkit import Outcome
from tasks.cloud import names
from tasks.cloud.skr.vpcpeering_plan import Seen, parse_vnet_id, plan, project
from tests.unit.cloud.outcomes import SkrWrites

NOW = "2026-01-01T00:00:00Z"
ID = "0b8e5f4e-3a51-4b7e-9a5b-2f1b6c1d9e70"
VNET = "/subscriptions/sub-1/resourceGroups/rg-1/providers/Microsoft.Network/virtualNetworks/vnet-1"

SPECS = {
    "aws": {"remoteAccountId": "444455556666", "remoteRegion": "eu-west-1", "remoteVpcId": "vpc-1",
            "remoteRouteTableUpdateStrategy": "MATCHED", "deleteRemotePeering": True},
    "gcp": {"remotePeeringName": "peer-1", "remoteProject": "project-1", "remoteVpc": "vpc-1",
            "importCustomRoutes": True},
    "azure": {"remotePeeringName": "peer-1", "remoteVnet": VNET, "remoteTenant": "tenant-1", "useRemoteGateway": True},
}


def t(seconds: float) -> float:
    return seconds


def skr(provider: str = "aws", name: str = "p", status: dict[str, Any] | None = None, finalizer: bool = False,
        deleting: bool = False, created: str = NOW, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created, "uid": name,
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": dict(SPECS[provider] if spec is None else spec), "status": status or {}}


def kcp(status: dict[str, Any] | None = None, kyma: str = "k", remote: str = "p", deleting: bool = False
        ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ID, "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: remote,
                                                   names.LABEL_REMOTE_NAMESPACE: ""}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "status": status or {}}


class Turn:
    """The plan's Outcome (``step``) read as these tests name its writes: the id label, the finalizers
    added, the KCP objects created and deleted (``(resource, body or name)``)."""

    def __init__(self, outcome: Outcome) -> None:
        writes = SkrWrites(outcome)
        self.step, self.label_id = outcome, writes.label_id
        self.create, self.delete = tuple(writes.creates), tuple(writes.deletes)
        self.finalizers = [dict(w.body or {}).get("finalizer") for w in outcome.writes
                           if getattr(w, "verb", "") == "add_finalizer"]


def run(obj: dict[str, Any], provider: str = "aws", peering: dict[str, Any] | None = None,
        network: dict[str, Any] | None = None, others: tuple[dict[str, Any], ...] = (),
        quota: int | None = None) -> Turn:
    seen = Seen(provider=provider, obj=obj, kyma="k", kcp_namespace="kcp-system", peering=peering, network=network,
                everyone=[obj, *others], quota=quota)
    return Turn(plan(seen, ID, t, NOW))


def conds(result: Turn) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"])
            for c in (result.step.status or {}).get("conditions") or []]


READY = {"type": "Ready", "status": "True", "reason": "Ready", "message": "Additional VpcPeerings(s) are provisioned",
         "lastTransitionTime": NOW}


@pytest.mark.parametrize(("provider", "reference", "details"), [
    ("aws", {"aws": {"awsAccountId": "444455556666", "region": "eu-west-1", "vpcId": "vpc-1"}},
     {"deleteRemotePeering": True, "remoteRouteTableUpdateStrategy": "MATCHED"}),
    ("gcp", {"gcp": {"gcpProject": "project-1", "networkName": "vpc-1"}},
     {"deleteRemotePeering": False, "peeringName": "peer-1", "importCustomRoutes": True}),
    ("azure", {"azure": {"tenantId": "tenant-1", "subscriptionId": "sub-1", "resourceGroup": "rg-1",
                         "networkName": "vnet-1"}},
     {"deleteRemotePeering": False, "peeringName": "peer-1", "useRemoteGateway": True}),
])
def test_a_new_peering_gets_id_finalizer_network_and_peering_in_one_turn(
        provider: str, reference: dict[str, Any], details: dict[str, Any]) -> None:
    result = run(skr(provider), provider)
    assert result.label_id == ID and result.finalizers == [names.FINALIZER]
    assert [res.kind for res, _ in result.create] == ["Network", "VpcPeering"]
    # the original's order: updateId, addFinalizer, the KCP objects (in the KCP)
    assert [(w.verb, w.cluster) for w in result.step.writes] == [  # type: ignore[union-attr]
        ("label", ""), ("add_finalizer", ""), ("create", "kcp"), ("create", "kcp")]
    (_, network), (_, peering) = result.create
    owners = {names.LABEL_KYMA_NAME: "k", names.LABEL_REMOTE_NAME: "p", names.LABEL_REMOTE_NAMESPACE: ""}
    for obj in (network, peering):
        assert obj["metadata"]["name"] == ID and obj["metadata"]["namespace"] == "kcp-system"
        assert obj["metadata"]["labels"] == {**owners, names.LABEL_MODULE: "cloud-manager"}
        assert obj["metadata"]["annotations"] == owners
    assert network["spec"] == {"scope": {"name": "k"}, "type": "external", "network": {"reference": reference}}
    assert peering["spec"] == {"remoteRef": {"namespace": "", "name": "p"}, "scope": {"name": "k"}, "details": {
        "localNetwork": {"name": "k--kyma", "namespace": "kcp-system"},
        "remoteNetwork": {"name": ID, "namespace": "kcp-system"}, **details}}
    assert (result.step.status or {})["id"] == ID and result.step.status["state"] == "Creating"
    assert conds(result) == [("Submitted", "True", "SubmissionSucceeded", "Resource is submitted for provisioning")]
    assert result.step.requeue_after == 1


def test_aws_strategy_defaults_to_auto() -> None:
    spec = {k: v for k, v in SPECS["aws"].items() if k != "remoteRouteTableUpdateStrategy"}
    (_, _), (_, peering) = run(skr(spec=spec)).create
    assert peering["spec"]["details"]["remoteRouteTableUpdateStrategy"] == "AUTO"


@pytest.mark.parametrize("vnet", ["", "vnet-1", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/x/y",
                                  "/subscriptions/s/resourceGroups/g"])
def test_an_azure_remote_vnet_that_is_no_vnet_id_is_an_error(vnet: str) -> None:
    result = run(skr("azure", spec={**SPECS["azure"], "remoteVnet": vnet}), "azure")
    assert result.create == ()
    [(kind, status, reason, message)] = conds(result)
    assert (kind, status, reason) == ("Error", "True", "InvalidRemoteVnet") and "not a virtual network" in message
    assert parse_vnet_id(vnet) is None
    assert parse_vnet_id(VNET) == ("sub-1", "rg-1", "vnet-1")


@pytest.mark.parametrize(("ident", "reason"), [(".", "InvalidId"), ("..", "InvalidId"), ("ABC", "InvalidId")])
def test_an_id_that_is_no_uuid_is_refused_before_any_kcp_write(ident: str, reason: str) -> None:
    result = run(skr(status={"id": ident}, finalizer=True))
    assert result.create == () and result.delete == ()
    assert conds(result)[0][2] == reason and result.step.status["state"] == "Error"


def test_a_kcp_object_of_another_tenant_is_not_owned() -> None:
    for peering, network in ((kcp(kyma="other"), None), (None, kcp(remote="other-name")), (kcp(), kcp(kyma="x"))):
        result = run(skr(status={"id": ID}, finalizer=True), peering=peering, network=network)
        assert result.create == () and result.delete == ()
        [(_, _, reason, message)] = conds(result)
        assert reason == "NotOwned" and "other" not in message


def test_waits_for_the_kcp_peering_then_projects_its_conditions_and_state() -> None:
    obj = skr(status={"id": ID, "state": "Creating"}, finalizer=True)
    waiting = run(obj, peering=kcp({"state": "initiating-request"}), network=kcp())
    assert waiting.create == () and waiting.step.status is None and waiting.step.requeue_after == 10
    ready = run(obj, peering=kcp({"state": "active", "conditions": [READY]}), network=kcp())
    assert ready.step.status == {"state": "Ready", "conditions": [READY]}
    assert ready.step.requeue_after is None and ready.step.error is None
    again = run(skr(status={"id": ID, "state": "Ready", "conditions": [READY]}, finalizer=True),
                peering=kcp({"state": "active", "conditions": [READY]}), network=kcp())
    assert again.step.status is None


@pytest.mark.parametrize(("kcp_state", "skr_state"), [("Warning", "Warning"), ("Error", "Error"),
                                                      ("initiating-request", "Error")])
def test_kcp_errors_are_projected_and_looked_at_again_in_a_minute(kcp_state: str, skr_state: str) -> None:
    error = {"type": "Error", "status": "True", "reason": "FailedLoadingRemoteVpcNetwork",
             "message": "Loaded remote Vpc network has no matching tags", "lastTransitionTime": NOW}
    result = run(skr(status={"id": ID}, finalizer=True), peering=kcp({"state": kcp_state, "conditions": [error]}),
                 network=kcp())
    assert result.step.status == {"state": skr_state, "conditions": [error]}
    assert result.step.requeue_after == 60


def test_project_drops_the_ready_of_a_kcp_peering_being_deleted() -> None:
    assert project(kcp({"state": "active", "conditions": [READY]}, deleting=True), []) is None
    assert project(kcp({"state": "active"}), []) is None


def test_deletion_removes_the_peering_then_the_network_then_the_finalizer() -> None:
    obj = skr(status={"id": ID, "state": "Ready"}, finalizer=True, deleting=True)
    first = run(obj, peering=kcp(), network=kcp())
    assert [(res.kind, name) for res, name in first.delete] == [("VpcPeering", ID)]
    assert first.step.status == {"state": "Deleting"} and first.step.requeue_after == 10
    waiting = run(obj, peering=kcp(deleting=True), network=kcp())
    assert waiting.delete == () and waiting.step.remove_finalizer is None
    second = run(obj, network=kcp())
    assert [(res.kind, name) for res, name in second.delete] == [("Network", ID)]
    assert run(obj, network=kcp(deleting=True)).step.remove_finalizer is None
    done = run(obj)
    assert done.delete == () and done.step.remove_finalizer == names.FINALIZER


def test_deleting_without_finalizer_or_id_does_nothing() -> None:
    assert run(skr(deleting=True)).step.status is None
    assert run(skr(deleting=True)).create == ()


def test_the_quota_when_one_is_configured_older_wins() -> None:
    older = skr(name="a", created="2025-01-01T00:00:00Z")
    newer = skr(name="b", created="2026-06-01T00:00:00Z")
    refused = run(newer, others=(older,), quota=1)
    assert refused.create == ()
    assert conds(refused) == [("QuotaExceeded", "True", "QuotaExceeded", "Maximum number of 1 resources exceeded")]
    assert run(older, others=(newer,), quota=1).create != ()
    assert run(newer, others=(older,)).create != ()  # the original's default: unlimited


@given(st.text(max_size=200))
@settings(max_examples=200, deadline=None)
def test_parse_vnet_id_never_raises_on_any_text(text: str) -> None:
    parsed = parse_vnet_id(text)
    assert parsed is None or all(part and "/" not in part for part in parsed)


@given(st.from_regex(r"[A-Za-z0-9-]{1,20}", fullmatch=True), st.from_regex(r"[A-Za-z0-9_.()-]{1,20}", fullmatch=True),
       st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True))
@settings(max_examples=100, deadline=None)
def test_parse_vnet_id_round_trips(subscription: str, group: str, name: str) -> None:
    vnet = f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworks/{name}"
    assert parse_vnet_id(vnet) == (subscription, group, name)


@given(st.dictionaries(st.sampled_from(["remoteAccountId", "remoteRegion", "remoteVpcId", "remotePeeringName",
                                        "remoteProject", "remoteVpc", "remoteVnet", "remoteTenant",
                                        "deleteRemotePeering", "importCustomRoutes", "useRemoteGateway",
                                        "remoteRouteTableUpdateStrategy"]),
                       st.one_of(st.text(max_size=30), st.booleans(), st.none())),
       st.sampled_from(["aws", "gcp", "azure"]), st.one_of(st.none(), st.text(max_size=40)))
@settings(max_examples=200, deadline=None)
def test_any_spec_and_id_give_a_step_never_an_exception(spec: dict[str, Any], provider: str, ident: str | None
                                                        ) -> None:
    status = {"id": ident} if ident is not None else {}
    result = run(skr(provider, spec=spec, status=status), provider)
    if result.create:
        assert [res.kind for res, _ in result.create] == ["Network", "VpcPeering"]
    else:
        assert (result.step.status or {}).get("state") == "Error"
