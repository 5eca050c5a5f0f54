"""The Azure IpRange plan over what the client read: one turn per case, table-driven from the notes
(§5.3, §5.7, §8) and the cases the stand-in tests drive (tests/integration/cloud/azure/test_iprange.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit import Action, Outcome
from tasks.cloud.azure import iprange_plan
from tasks.cloud.azure.iprange_plan import Read, Timing
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.calls import needed, read_as_needed
from tests.unit.cloud.outcomes import calls, done, failed

NOW = "2026-01-01T00:00:00Z"
SUB, SHOOT, KYMA, REGION = "sub-1", "c-1", "kyma-az", "northeurope"
VPC = f"shoot--kyma--{SHOOT}"
CM = f"{VPC}--cm"
ZONE = "privatelink.redis.cache.windows.net"
SCOPE = {"metadata": {"name": KYMA}, "spec": {"shootName": SHOOT, "region": REGION,
                                              "scope": {"azure": {"subscriptionId": SUB, "vpcNetwork": VPC}}}}
T = Timing()
KYMA_ID = f"/subscriptions/{SUB}/resourceGroups/{VPC}/providers/Microsoft.Network/virtualNetworks/{VPC}"
CM_ID = f"/subscriptions/{SUB}/resourceGroups/{CM}/providers/Microsoft.Network/virtualNetworks/{CM}"


KEYS = ("group", "vnet", "nsg", "subnet", "zone", "link")
#: The KCP VpcPeering <scope> as the controller reads it: Ready, in Error, on its way.
PEERED = {"metadata": {"name": KYMA}, "status": {"state": "Ready", "conditions": [
    {"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]}}
PEERING_ERROR = {"metadata": {"name": KYMA}, "status": {"state": "Error", "conditions": [
    {"type": "Error", "status": "True", "reason": "FailedCreatingVpcPeeringConnection", "message": "no"}]}}
PEERING_PENDING = {"metadata": {"name": KYMA}, "status": {}}
_UNSET: Any = object()


def plan(obj: dict[str, Any], scope: dict[str, Any], found: Read, timing: Timing = T, *,
         kyma_peering: Any = _UNSET, **kwargs: Any) -> Outcome:
    """The plan; the kyma VpcPeering Ready while creating and gone while deleting unless given."""
    if kyma_peering is _UNSET:
        kyma_peering = None if (obj.get("metadata") or {}).get("deletionTimestamp") else PEERED
    return iprange_plan.plan(obj, scope, found, timing, peering=kyma_peering, **kwargs)


def peering_writes(outcome: Outcome) -> list[tuple[str, str, str]]:
    """The outcome's writes of the kyma VpcPeering: ``(verb, namespace, name)``."""
    return [(w.verb, w.namespace, w.name) for w in outcome.writes if isinstance(w, Action) and w.kind == "VpcPeering"]


def read_of(**read: Any) -> Read:
    """A complete read: every resource missing but those given."""
    return Read(**{**dict.fromkeys(KEYS), **read})


def kcp_range(status: dict | None = None, cidr: str = "10.251.0.0/22", network: str = f"{KYMA}--cm",
              deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "ipr", "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"cidr": cidr, "network": {"name": network}, "scope": {"name": KYMA}},
            "status": dict(status or {})}


def res(state: str = "Succeeded", **props: Any) -> dict[str, Any]:
    return {"id": f"id-{state}", "properties": {"provisioningState": state, **props}}


DONE = dict(group=res(), vnet=res(), nsg=res(), subnet=res(), zone=res(), link=res())


def done_but(**changes: Any) -> Read:
    return read_of(**{**DONE, **changes})


def made(p: Any) -> list[tuple[str, tuple]]:
    return [(c.method, c.args) for c in calls(p)]


def conditions(step: Any) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions", [])]


# -- creating: the chain ---------------------------------------------------------------------------------------

def test_nothing_there_creates_the_resource_group_and_the_vnet_in_one_turn() -> None:
    p = plan(kcp_range(), SCOPE, read_of(), T, now=NOW)
    assert made(p) == [("create_resource_group", (CM, REGION)), ("create_vnet", (CM, CM, REGION, "10.251.0.0/22"))]
    step = done(p)
    assert step.status == {"cidr": "10.251.0.0/22"} and step.requeue_after == T.wait


def test_the_vnet_not_yet_succeeded_asks_for_no_vpcpeering() -> None:
    p = plan(kcp_range(), SCOPE, read_of(group=res(), vnet=res("Updating")), T, now=NOW, kyma_peering=None)
    step = done(p)
    assert p.writes == () and step.requeue_after == T.wait


@pytest.mark.parametrize("peering", [None, PEERING_PENDING])
def test_once_the_vnet_succeeded_the_kyma_vpcpeering_must_exist_and_is_waited_for(peering: Any) -> None:
    step = plan(kcp_range(), SCOPE, read_of(group=res(), vnet=res()), T, now=NOW, kyma_peering=peering)
    assert step.then is None and step.requeue_after == T.peering_wait and "conditions" not in (step.status or {})
    # created when missing, in the IpRange's namespace, labelled with the Scope's kyma name (the original's)
    assert peering_writes(step) == ([("create", "kcp-system", KYMA)] if peering is None else [])
    if peering is None:
        created = step.writes[0]
        assert isinstance(created, Action) and created.object["metadata"]["labels"] == {
            "cloud-manager.kyma-project.io/kymaName": KYMA, "kyma-project.io/module": "cloud-manager"}
        assert created.object["spec"] == kyma_peering(SCOPE)["spec"]


def test_a_kyma_vpcpeering_in_error_is_the_iprange_error() -> None:
    step = done(plan(kcp_range(), SCOPE, read_of(group=res(), vnet=res()), T, now=NOW, kyma_peering=PEERING_ERROR))
    assert conditions(step) == [("Error", "True", "FailedCreatingVpcPeeringConnection", "Error creating VPC peering")]
    assert peering_writes(step) == [] and step.requeue_after == T.create_error  # it exists: left to its own status


def test_a_ready_kyma_vpcpeering_goes_on_to_the_security_group() -> None:
    p = plan(kcp_range(), SCOPE, read_of(group=res(), vnet=res()), T, now=NOW)
    assert made(p) == [("create_security_group", (CM, CM, REGION))]


def test_the_kyma_vpcpeering_is_the_originals() -> None:
    scope = {**SCOPE, "metadata": {"name": KYMA, "namespace": "kcp-system"}}
    assert kyma_peering(scope)["metadata"] == {"name": KYMA, "namespace": "kcp-system"}
    assert kyma_peering(scope)["spec"]["details"] == {
        "localNetwork": {"name": f"{KYMA}--kyma"}, "remoteNetwork": {"name": f"{KYMA}--cm"},
        "peeringName": f"kyma--{SHOOT}", "localPeeringName": f"cm--{SHOOT}", "deleteRemotePeering": True}


@pytest.mark.parametrize(("missing", "expected"), [
    ("nsg", ("create_security_group", (CM, CM, REGION))),
    ("subnet", ("create_subnet", (CM, CM, CM, "10.251.0.0/22", "id-Succeeded"))),
    ("zone", ("create_private_dns_zone", (CM, ZONE))),
    ("link", ("create_vnet_link", (CM, ZONE, "ipr", KYMA_ID))),
])
def test_the_first_missing_resource_of_the_chain_is_created(missing: str, expected: tuple) -> None:
    later = {"nsg": ["subnet", "zone", "link"], "subnet": ["zone", "link"], "zone": ["link"], "link": []}[missing]
    p = plan(kcp_range(), SCOPE, done_but(**{missing: None}, **{k: None for k in later}), T, now=NOW)
    assert made(p) == [expected]
    assert done(p).requeue_after == T.wait


def test_a_resource_still_provisioning_is_waited_for() -> None:
    p = plan(kcp_range(), SCOPE, done_but(subnet=res("Updating")), T, now=NOW)
    assert calls(p) == () and done(p).requeue_after == T.wait


def test_a_failed_resource_is_put_again_and_reported() -> None:
    p = plan(kcp_range(), SCOPE, done_but(subnet=res("Failed")), T, now=NOW)
    assert [c for c, _ in made(p)] == ["create_subnet"]
    step = done(p)
    assert conditions(step) == [("Error", "True", "Error", "Error creating Azure subnet")]
    assert step.status is not None and step.status["state"] == "Error" and step.requeue_after == T.create_error
    assert step.event is not None and step.event.type == "Warning"


def test_all_there_is_ready_and_ready_again_changes_nothing() -> None:
    p = plan(kcp_range(), SCOPE, read_of(**DONE), T, now=NOW)
    step = done(p)
    assert calls(p) == () and conditions(step) == [("Ready", "True", "Ready", "Ready")]
    assert step.status is not None and step.status["state"] == "Ready" and step.requeue_after is None
    again = done(plan(kcp_range({**step.status, "cidr": "10.251.0.0/22"}), SCOPE, read_of(**DONE), T,
                      now="2026-02-02T00:00:00Z"))
    assert (again.status, again.requeue_after, again.error) == (None, None, None)


def test_not_on_a_cm_network_is_unsupported_unless_the_network_type_says_so() -> None:
    step = done(plan(kcp_range(network=f"{KYMA}--kyma"), SCOPE, read_of(), T, now=NOW))
    assert conditions(step) == [("Error", "True", "Error", "Unsupported network type")]
    assert (step.requeue_after, step.error) == (None, None)
    typed = plan(kcp_range(network="other"), SCOPE, read_of(), T, now=NOW, network_type="cloud-resources")
    assert made(typed)[0][0] == "create_resource_group"


def test_cidr_is_required() -> None:
    step = done(plan(kcp_range(cidr=""), SCOPE, read_of(), T, now=NOW))
    assert conditions(step) == [("Error", "True", "InvalidCidr", "CIDR is required")]


def test_the_scope_must_name_the_vnet_and_shoot() -> None:
    step = plan(kcp_range(), {"metadata": {"name": "s"}, "spec": {"scope": {}}}, Read(), T)
    assert step.writes == () and conditions(step) == [
        ("Error", "True", "Error", "Scope 's' has no spec.scope.azure.vpcNetwork, spec.shootName or name")]


def test_the_client_subscription_is_used_when_the_scope_names_none() -> None:
    scope = {**SCOPE, "spec": {**SCOPE["spec"], "scope": {"azure": {"vpcNetwork": VPC}}}}
    p = plan(kcp_range(), scope, done_but(link=None), T, now=NOW, subscription="sub-2")
    assert calls(p)[0].args[3] == KYMA_ID.replace(SUB, "sub-2")


def test_azure_china_uses_its_dns_zone() -> None:
    p = plan(kcp_range(), SCOPE, done_but(zone=None, link=None), T, now=NOW, cloud="AzureChina")
    assert made(p) == [("create_private_dns_zone", (CM, "privatelink.redis.cache.chinacloudapi.cn"))]


# -- creating: refusals ------------------------------------------------------------------------------------------

BROKEN = Failure.of_http(500, "boom", text="(InternalError) boom")
THROTTLED = Failure.of_http(429, "Too many requests", text="(TooManyRequests) Too many requests")



@pytest.mark.parametrize("key", ["group", "vnet", "nsg", "subnet", "zone", "link"])
def test_429_on_any_read_requeues_after_60_s_without_a_status_change(key: str) -> None:
    step = done(plan(kcp_range(), SCOPE, done_but(**{key: THROTTLED}), T, now=NOW))
    assert (step.status, step.requeue_after, step.error, step.event) == (None, T.throttled, None, None)


@pytest.mark.parametrize(("key", "expected", "requeue"), [
    ("group", [], T.wait), ("vnet", [], T.wait),
    ("nsg", [("Error", "True", "Error", "Error loading security group")], T.load_error),
    ("subnet", [("Error", "True", "Error", "Error loading subnet")], T.load_error),
    ("zone", [("Ready", "True", "Ready", "Ready"),
              ("Error", "True", "Error", "Failed loading AzureIpRange: (InternalError) boom")], T.load_error),
])
def test_refused_reads(key: str, expected: list, requeue: float) -> None:
    ready = done(plan(kcp_range(), SCOPE, read_of(**DONE), T, now=NOW))
    obj = kcp_range({**(ready.status or {}), "cidr": "10.251.0.0/22"})
    step = done(plan(obj, SCOPE, done_but(**{key: BROKEN}), T, now=NOW))
    assert conditions(step) == expected and step.requeue_after == requeue  # [] : no status change
    if key == "zone":
        assert step.status is not None and "state" not in step.status  # the state stays Ready


def test_a_refused_read_after_a_planned_write_keeps_the_write() -> None:
    p = plan(kcp_range(), SCOPE, read_of(group=None, vnet=BROKEN), T, now=NOW)
    assert made(p) == [("create_resource_group", (CM, REGION))] and done(p).requeue_after == T.wait


@pytest.mark.parametrize(("found", "index", "reason", "message", "requeue"), [
    (read_of(), 0, "Error", "Failed to create Azure Resource Group", T.network_error),
    (read_of(), 1, "Error", "Failed to create Azure VNet", T.create_error),
    (done_but(nsg=None), 0, "Error", "Error creating Azure security group", T.create_error),
    (done_but(link=None), 0, "Error", "Error creating Azure virtualNetworkLink", T.create_error),
])
def test_refused_creates_are_state_error(found: Read, index: int, reason: str, message: str, requeue: float) -> None:
    p = plan(kcp_range(), SCOPE, found, T, now=NOW)
    step = failed(p, calls(p)[index], Failure.of_http(400, "bad", text="(InvalidRequestFormat) bad"))
    assert conditions(step) == [("Error", "True", reason, message)]
    assert step.status is not None and step.status["state"] == "Error" and step.status["cidr"] == "10.251.0.0/22"
    assert step.requeue_after == requeue and step.event is not None and step.event.reason == reason
    throttled = failed(p, calls(p)[index], THROTTLED)
    assert (throttled.status, throttled.requeue_after) == (None, T.throttled)


def test_a_refused_write_is_reported_over_the_status_as_planned_before_the_turns_end() -> None:
    p = plan(kcp_range(), SCOPE, done_but(subnet=res("Failed")), T, now=NOW)
    step = failed(p, calls(p)[0], BROKEN)
    assert conditions(step) == [("Error", "True", "Error", "Error creating Azure subnet")]


# -- deleting --------------------------------------------------------------------------------------------------

ORDER = [("link", "delete_vnet_link", (CM, ZONE, "ipr"), T.link_delete_wait),
         ("zone", "delete_private_dns_zone", (CM, ZONE), T.wait),
         ("subnet", "delete_subnet", (CM, CM, CM), T.wait),
         ("nsg", "delete_security_group", (CM, CM), T.wait),
         ("vnet", "delete_vnet", (CM, CM), T.wait),
         ("group", "delete_resource_group", (CM,), T.wait)]


@pytest.mark.parametrize("index", range(len(ORDER)))
def test_delete_goes_in_reverse_one_resource_per_turn(index: int) -> None:
    present = {key: res() for key, *_ in ORDER[index:]}
    key, method, args, wait = ORDER[index]
    p = plan(kcp_range(deleting=True), SCOPE, read_of(**present), T, now=NOW)
    assert made(p) == [(method, args)]
    step = done(p)
    assert step.requeue_after == wait and not step.remove_finalizer
    deleting = plan(kcp_range(deleting=True), SCOPE, read_of(**{**present, key: res("Deleting")}), T, now=NOW)
    assert calls(deleting) == () and done(deleting).requeue_after == wait


@pytest.mark.parametrize("peering", [PEERED, PEERING_ERROR])
def test_delete_removes_the_kyma_vpcpeering_after_the_security_group_and_before_the_vnet(peering: Any) -> None:
    found = read_of(vnet=res(), group=res())
    step = plan(kcp_range(deleting=True), SCOPE, found, T, now=NOW, kyma_peering=peering)
    assert peering_writes(step) == [("delete", "kcp-system", KYMA)] and step.then is None
    assert step.requeue_after == T.peering_wait and not step.remove_finalizer
    being_deleted = {**peering, "metadata": {**peering["metadata"], "deletionTimestamp": NOW}}
    waiting = plan(kcp_range(deleting=True), SCOPE, found, T, now=NOW, kyma_peering=being_deleted)
    assert waiting.writes == () and waiting.requeue_after == T.peering_wait
    before = plan(kcp_range(deleting=True), SCOPE, read_of(nsg=res(), vnet=res()), T, now=NOW, kyma_peering=peering)
    assert made(before) == [("delete_security_group", (CM, CM))] and peering_writes(done(before)) == []
    gone = plan(kcp_range(deleting=True), SCOPE, found, T, now=NOW, kyma_peering=None)
    assert made(gone) == [("delete_vnet", (CM, CM))]


def test_delete_with_nothing_left_releases_the_finalizer() -> None:
    p = plan(kcp_range(deleting=True, cidr=""), SCOPE, read_of(), T, now=NOW)
    assert calls(p) == () and done(p).remove_finalizer


@pytest.mark.parametrize(("key", "status", "expected", "requeue", "error"), [
    ("link", 409, [], T.throttled, None),
    ("zone", 409, [], T.throttled, None),
    ("link", 400, [("Error", "True", "Error", "Error deleting virtualNetworkLink")], T.delete_error, None),
    ("subnet", 409, [("Error", "True", "Error", "Error deleting subnet")], T.delete_error, None),
    ("nsg", 400, [("Error", "True", "Error", "Error deleting security group")], T.delete_error, None),
    ("vnet", 400, [], T.wait, "(Code) nope"),
])
def test_refused_deletes(key: str, status: int, expected: list, requeue: float, error: str | None) -> None:
    present = {k: res() for k, *_ in ORDER[[k for k, *_ in ORDER].index(key):]}
    p = plan(kcp_range(deleting=True), SCOPE, read_of(**present), T, now=NOW)
    step = failed(p, calls(p)[0], Failure.of_http(status, "nope", text="(Code) nope"))
    assert conditions(step) == expected and step.requeue_after == requeue and step.error == error


@pytest.mark.parametrize(("key", "expected", "requeue"), [
    ("link", [], T.load_error),
    ("subnet", [("Error", "True", "Error", "Error loading subnet")], T.load_error),
    ("nsg", [("Error", "True", "Error", "Error loading security group")], T.load_error),
    ("group", [], T.load_error),
])
def test_refused_reads_while_deleting(key: str, expected: list, requeue: float) -> None:
    step = done(plan(kcp_range(deleting=True), SCOPE, read_of(**{key: BROKEN}), T, now=NOW))
    assert conditions(step) == expected and step.requeue_after == requeue and not step.remove_finalizer
    throttled = done(plan(kcp_range(deleting=True), SCOPE, read_of(**{key: THROTTLED}), T, now=NOW))
    assert (throttled.status, throttled.requeue_after) == (None, T.throttled)


# -- the reads a turn needs ------------------------------------------------------------------------------------

def reads(obj: dict[str, Any], answers: dict[str, Any]) -> list[str]:
    """The reads a turn makes, in order, when ARM answers ``answers`` (a key not given: missing)."""
    asked: list[str] = []

    def fetch(key: str) -> Any:
        asked.append(key)
        return answers.get(key)

    fetches = {key: (lambda key=key: fetch(key)) for key in KEYS}
    read_as_needed(Read(), lambda f: needed(lambda: plan(obj, SCOPE, f, T, now=NOW)), fetches)
    return asked


@pytest.mark.parametrize(("obj", "answers", "expected"), [
    (kcp_range(), {}, ["group", "vnet"]),
    (kcp_range(), {"group": res(), "vnet": res("Updating")}, ["group", "vnet"]),
    (kcp_range(), {**DONE, "subnet": None}, ["group", "vnet", "nsg", "subnet"]),
    (kcp_range(), DONE, list(KEYS)),
    (kcp_range(), {"group": BROKEN}, ["group"]),
    (kcp_range(network="other"), {}, []),
    (kcp_range(cidr=""), {}, []),
    (kcp_range(deleting=True), {"link": res()}, ["link"]),
    (kcp_range(deleting=True), {"nsg": res("Deleting")}, ["link", "zone", "subnet", "nsg"]),
    (kcp_range(deleting=True), {}, ["link", "zone", "subnet", "nsg", "vnet", "group"]),
])
def test_a_turn_reads_the_chain_up_to_where_it_stops(obj: dict, answers: dict, expected: list[str]) -> None:
    assert reads(obj, answers) == expected


def test_an_incomplete_read_names_the_next_read_and_no_call() -> None:
    assert needed(lambda: plan(kcp_range(), SCOPE, Read(group=None), T, now=NOW)) == "vnet"
    assert needed(lambda: plan(kcp_range(deleting=True), SCOPE, Read(), T, now=NOW)) == "link"
