"""The GCP IpRange plan over what the client read: one turn per case, table-driven from the notes
(§5.6) and the cases the stand-in tests drive (tests/integration/cloud/gcp/test_iprange.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from tasks.cloud.calls import needed, read_as_needed
from tasks.cloud.gcp.iprange_plan import Read, plan
from tests.unit.cloud.outcomes import calls, done, failed

NOW = "2026-01-01T00:00:00Z"
PROJECT, VPC = "p-1", "shoot--kyma--c"
NET = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{VPC}"
SCOPE = {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"gcp": {"project": PROJECT, "vpcNetwork": VPC}}}}
WAIT = 5.0
DENIED = Failure.of_http(403, "Permission denied")


def read_of(**read: Any) -> Read:
    """A complete read: nothing found but what is given."""
    return Read(**{"operation": None, "address": None, "legacy": None, "connections": [], "addresses": [], **read})


def kcp_range(status: dict | None = None, cidr: str = "10.250.4.0/22", deleting: bool = False,
              remote: str = "", purpose: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "ipr", "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    spec: dict[str, Any] = {"cidr": cidr, "remoteRef": {"namespace": "", "name": remote}}
    if purpose is not None:
        spec["options"] = {"gcp": {"purpose": purpose}}
    return {"metadata": meta, "spec": spec, "status": dict(status or {})}


def address(name: str = "cm-ipr", network: str = NET, purpose: str = "VPC_PEERING") -> dict[str, Any]:
    return {"name": name, "network": network, "purpose": purpose}


def connection(*ranges: str) -> dict[str, Any]:
    return {"peering": "servicenetworking-googleapis-com", "reservedPeeringRanges": list(ranges)}


def conditions(step: Any) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions", [])]


def made(p: Any) -> list[tuple[str, tuple]]:
    return [(c.method, c.args) for c in calls(p)]


# -- creating -----------------------------------------------------------------------------------------------

def test_a_new_range_inserts_its_address_and_records_the_cidr() -> None:
    p = plan(kcp_range(), SCOPE, read_of(), WAIT, NOW)
    assert made(p) == [("insert_global_address", (PROJECT, VPC, "cm-ipr", "Kyma cloud-manager IP Range",
                                                   "10.250.4.0", 22))]
    step = done(p, ["op-1"])
    assert step.status == {"cidr": "10.250.4.0/22", "state": "SyncAddress", "opIdentifier": "op-1"}
    assert step.requeue_after == WAIT and step.error is None


def test_an_allocated_cidr_in_status_is_used_and_not_rewritten() -> None:
    p = plan(kcp_range({"cidr": "10.250.8.0/22"}, cidr=""), SCOPE, read_of(), WAIT, NOW)
    assert made(p)[0][1][4:] == ("10.250.8.0", 22)
    assert "cidr" not in (done(p, ["op"]).status or {})


def test_the_address_without_a_connection_creates_it_with_just_this_range() -> None:
    p = plan(kcp_range(), SCOPE, read_of(address=address()), WAIT, NOW)
    assert made(p) == [("create_service_connection", (PROJECT, VPC, ["cm-ipr"]))]
    step = done(p, ["op-2"])
    assert step.status is not None and step.status["state"] == "SyncPSAConnection" and step.status["id"] == "cm-ipr"


def test_the_connection_is_patched_to_the_vpcs_peering_addresses() -> None:
    found = read_of(address=address(), connections=[connection("cm-other")],
                 addresses=[address("cm-other"), address(), address("psc", purpose="PRIVATE_SERVICE_CONNECT")])
    p = plan(kcp_range(), SCOPE, found, WAIT, NOW)
    assert made(p) == [("patch_service_connection", (PROJECT, VPC, ["cm-ipr", "cm-other"]))]


def test_no_peering_address_left_deletes_the_connection() -> None:
    found = read_of(address=address(), connections=[connection("cm-gone")], addresses=[])
    assert made(plan(kcp_range(), SCOPE, found, WAIT, NOW)) == [("delete_service_connection", (PROJECT, VPC))]


def test_ready_when_the_connection_holds_the_range_and_nothing_changes_after() -> None:
    found = read_of(address=address(), connections=[connection("cm-ipr")], addresses=[address()])
    step = done(plan(kcp_range(), SCOPE, found, WAIT, NOW))
    assert conditions(step) == [("Ready", "True", "Ready", "IpRange provisioned in GCP")]
    assert step.status is not None and step.status["state"] == "Ready" and step.requeue_after is None
    ready = kcp_range({**step.status, "cidr": "10.250.4.0/22"})
    again = done(plan(ready, SCOPE, found, WAIT, "2026-02-02T00:00:00Z"))
    assert (again.status, again.requeue_after, again.error, again.event) == (None, None, None, None)


def test_a_range_not_for_psa_is_ready_with_its_address_alone() -> None:
    p = plan(kcp_range(purpose="PRIVATE_SERVICE_CONNECT"), SCOPE, read_of(address=address()), WAIT, NOW)
    assert calls(p) == () and done(p).status is not None and done(p).status["state"] == "Ready"


def test_the_legacy_address_on_the_scope_vpc_is_adopted() -> None:
    found = read_of(address=None, legacy=address("my-old"), connections=[connection("my-old")],
                 addresses=[address("my-old")])
    step = done(plan(kcp_range(remote="my-old"), SCOPE, found, WAIT, NOW))
    assert step.status is not None and step.status["id"] == "my-old" and step.status["state"] == "Ready"


def test_a_legacy_address_on_another_vpc_is_ignored() -> None:
    found = read_of(address=None, legacy=address("elsewhere", network=NET.replace(VPC, "other")))
    p = plan(kcp_range(remote="elsewhere"), SCOPE, found, WAIT, NOW)
    assert made(p)[0][0] == "insert_global_address" and made(p)[0][1][2] == "cm-ipr"


@pytest.mark.parametrize(("cidr", "message"), [
    ("", "CIDR is required"),
    ("10.250.4.1/22", "10.250.4.1/22 is not a valid network"),
    ("not-a-cidr", "invalid CIDR address: not-a-cidr"),
])
def test_cidr_errors_are_invalid_cidr_and_not_retried(cidr: str, message: str) -> None:
    step = done(plan(kcp_range(cidr=cidr), SCOPE, read_of(), WAIT, NOW))
    assert conditions(step) == [("Error", "True", "InvalidCidr", message)]
    assert (step.requeue_after, step.error) == (None, None)
    assert step.event is not None and step.event.reason == "InvalidCidr"


def test_an_address_in_another_vpc_is_an_error_that_is_not_retried() -> None:
    p = plan(kcp_range(), SCOPE, read_of(address=address(network=NET.replace(VPC, "other"))), WAIT, NOW)
    step = done(p)
    assert calls(p) == () and (step.requeue_after, step.error) == (None, None)
    assert conditions(step) == [("Error", "True", "GCPError", "Obtained IpRange belongs to another VPC.")]


@pytest.mark.parametrize(("found", "message"), [
    (read_of(address=DENIED), "Error getting address from GCP"),
    (read_of(address=None, legacy=DENIED), "Error getting fallback IpRange address from GCP"),
    (read_of(address=address(), connections=DENIED), "Error listing Service Connections from GCP"),
    (read_of(address=address(), connections=[connection()], addresses=DENIED),
     "Error listing Global Addresses from GCP"),
])
def test_refused_reads_are_errors_with_backoff(found: Read, message: str) -> None:
    step = done(plan(kcp_range(remote="legacy"), SCOPE, found, WAIT, NOW))
    assert conditions(step) == [("Error", "True", "GCPError", message)]
    assert step.error == message and step.status is not None and step.status["state"] == "Error"


@pytest.mark.parametrize(("found", "prefix"), [
    (read_of(), "Error creating Address: "),
    (read_of(address=address()), "Error creating PSA Connection: "),
    (read_of(address=address(), connections=[connection()], addresses=[address()]), "Error updating PSA Connection: "),
])
def test_refused_writes_are_errors_retried_after_the_wait(found: Read, prefix: str) -> None:
    p = plan(kcp_range(), SCOPE, found, WAIT, NOW)
    step = failed(p, calls(p)[0], Failure.of_http(503, "Backend Error"))
    assert conditions(step) == [("Error", "True", "GCPError", f"{prefix}Backend Error")]
    assert step.requeue_after == WAIT and step.error is None


def test_a_scope_without_gcp_fields_is_a_clear_error() -> None:
    step = plan(kcp_range(), {"metadata": {"name": "s"}, "spec": {"scope": {}}}, Read(), WAIT, NOW)
    assert calls(step) == () and conditions(step)[0][2:] == (
        "GCPError", "Scope 's' has no spec.scope.gcp project and vpcNetwork")


# -- a pending operation ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("state", "running"), [
    ("SyncAddress", {"status": "RUNNING"}),
    ("DeleteAddress", {"status": "PENDING"}),
    ("SyncPSAConnection", {"done": False}),
    ("DeletePSAConnection", {}),
])
def test_a_running_operation_requeues_without_a_status_change(state: str, running: dict) -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": state, "opIdentifier": "op-1"}, deleting=state.startswith("D"))
    p = plan(obj, SCOPE, read_of(operation=running, address=DENIED), WAIT, NOW)
    step = done(p)
    assert calls(p) == () and (step.status, step.requeue_after, step.error) == (None, WAIT, None)


def test_a_done_operation_is_forgotten_and_the_turn_goes_on() -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": "SyncAddress", "opIdentifier": "op-1"})
    p = plan(obj, SCOPE, read_of(operation={"status": "DONE"}, address=address()), WAIT, NOW)
    assert made(p)[0][0] == "create_service_connection"
    step = done(p, ["op-2"])
    assert step.status is not None and step.status["opIdentifier"] == "op-2"


@pytest.mark.parametrize(("state", "operation"), [("SyncPSAConnection", None), ("SyncAddress", None),
                                                   ("Processing", None)])
def test_a_forgotten_or_unknown_operation_is_dropped(state: str, operation: Any) -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": state, "opIdentifier": "op-1"})
    found = read_of(operation=operation, address=address(), connections=[connection("cm-ipr")], addresses=[address()])
    step = done(plan(obj, SCOPE, found, WAIT, NOW))
    assert step.status is not None and step.status["opIdentifier"] is None and step.status["state"] == "Ready"


@pytest.mark.parametrize(("operation", "message"), [
    ({"status": "DONE", "error": {"errors": [{"message": "Quota 'GLOBAL_INTERNAL_ADDRESSES' exceeded."}]}},
     "Quota 'GLOBAL_INTERNAL_ADDRESSES' exceeded."),
    ({"status": "DONE", "statusMessage": "status says", "error": {"errors": [{"message": "x"}]}}, "status says"),
    ({"status": "DONE", "error": {"errors": []}}, "Operation failed with no error message"),
])
def test_a_failed_compute_operation_is_a_gcp_error_with_backoff(operation: dict, message: str) -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": "SyncAddress", "opIdentifier": "op-1"})
    step = done(plan(obj, SCOPE, read_of(operation=operation), WAIT, NOW))
    assert conditions(step) == [("Error", "True", "GCPError", message)]
    assert step.error == message and step.status is not None and step.status["opIdentifier"] is None
    assert step.status["state"] == "Error" and step.event is not None and step.event.reason == "GCPError"


def test_a_failed_psa_operation_is_a_gcp_error() -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": "SyncPSAConnection", "opIdentifier": "op-1"})
    step = done(plan(obj, SCOPE, read_of(operation={"done": True, "error": {"code": 13}}), WAIT, NOW))
    assert step.error == "Service Networking operation failed"


def test_a_refused_operation_read_keeps_the_state() -> None:
    obj = kcp_range({"cidr": "10.250.4.0/22", "state": "SyncAddress", "opIdentifier": "op-1"})
    step = done(plan(obj, SCOPE, read_of(operation=Failure.of_http(500, "boom")), WAIT, NOW))
    assert step.error == "boom" and step.status is not None and "state" not in step.status
    assert "opIdentifier" not in step.status


# -- deleting -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("found", "expected", "state"), [
    (read_of(address=address(), connections=[connection("cm-ipr", "cm-b")]),
     [("patch_service_connection", (PROJECT, VPC, ["cm-b"]))], "DeletePSAConnection"),
    (read_of(address=address(), connections=[connection("cm-ipr")]),
     [("delete_service_connection", (PROJECT, VPC))], "DeletePSAConnection"),
    (read_of(address=address(), connections=[connection("cm-b")]),
     [("delete_global_address", (PROJECT, "cm-ipr"))], "DeleteAddress"),
    (read_of(address=None, legacy=address("my-old"), connections=[connection("my-old")]),
     [("delete_service_connection", (PROJECT, VPC))],
     "DeletePSAConnection"),
])
def test_delete_takes_the_range_out_of_the_connection_then_deletes_the_address(
        found: Read, expected: list, state: str) -> None:
    p = plan(kcp_range(deleting=True, remote="my-old"), SCOPE, found, WAIT, NOW)
    assert made(p) == expected
    step = done(p, ["op-d"])
    assert step.status is not None and step.status["state"] == state and not step.remove_finalizer


def test_delete_without_cidr_cleans_up_and_releases_when_all_is_gone() -> None:
    p = plan(kcp_range(cidr="", deleting=True), SCOPE, read_of(connections=[connection("cm-b")]), WAIT, NOW)
    assert calls(p) == () and done(p).remove_finalizer


def test_a_refused_delete_quotes_the_api() -> None:
    p = plan(kcp_range(deleting=True), SCOPE, read_of(address=address(), connections=[]), WAIT, NOW)
    step = failed(p, calls(p)[0], Failure.of_http(400, "in use"))
    assert conditions(step) == [("Error", "True", "GCPError", "Error deleting Address: in use")]
    assert step.requeue_after == WAIT


# -- the reads a turn needs -----------------------------------------------------------------------------------

def reads(obj: dict[str, Any], answers: dict[str, Any]) -> list[str]:
    """The reads a turn makes, in order, when the client answers ``answers`` (a key not given: not found)."""
    asked: list[str] = []

    def fetch(key: str) -> Any:
        asked.append(key)
        return answers.get(key, [] if key in ("connections", "addresses") else None)

    fetches = {key: (lambda key=key: fetch(key)) for key in Read.__dataclass_fields__}
    read_as_needed(Read(), lambda f: needed(lambda: plan(obj, SCOPE, f, WAIT, NOW)), fetches)
    return asked


PENDING = {"cidr": "10.250.4.0/22", "state": "SyncAddress", "opIdentifier": "op-1"}


@pytest.mark.parametrize(("obj", "answers", "expected"), [
    (kcp_range(), {}, ["address", "connections"]),
    (kcp_range(remote="cm-ipr"), {}, ["address", "connections"]),
    (kcp_range(remote="old"), {}, ["address", "legacy", "connections"]),
    (kcp_range(remote="old"), {"address": address()}, ["address", "connections"]),
    (kcp_range(), {"address": address(), "connections": [connection("cm-ipr")]},
     ["address", "connections", "addresses"]),
    (kcp_range(purpose="PRIVATE_SERVICE_CONNECT"), {"address": address()}, ["address"]),
    (kcp_range(PENDING), {"operation": {"status": "RUNNING"}}, ["operation"]),
    (kcp_range(PENDING), {"operation": {"status": "DONE"}, "address": address()},
     ["operation", "address", "connections"]),
    (kcp_range({**PENDING, "state": "Processing"}), {}, ["address", "connections"]),
    (kcp_range(cidr="10.250.4.1/22"), {}, []),
    (kcp_range(deleting=True, remote="old"), {"legacy": address("old")}, ["address", "legacy", "connections"]),
    (kcp_range(), {"address": Failure.of_http(500, "x")}, ["address"]),
])
def test_a_turn_reads_only_what_its_decision_looks_at_in_order(obj: dict, answers: dict,
                                                               expected: list[str]) -> None:
    assert reads(obj, answers) == expected


def test_an_incomplete_read_names_the_next_read_and_no_call() -> None:
    assert needed(lambda: plan(kcp_range(PENDING), SCOPE, Read(), WAIT, NOW)) == "operation"
    assert needed(lambda: plan(kcp_range(), SCOPE, Read(address=None), WAIT, NOW)) == "connections"
    assert needed(lambda: plan(kcp_range(remote="old"), SCOPE, Read(address=None, connections=[]), WAIT, NOW)) \
        == "legacy"
