"""The GCP KCP VpcPeering flow through the GCP layer (google-cloud-compute, google-api-python-client)
against the GCP stand-in: the customer's network seeded through the SDKs in a second project, create →
both peerings ACTIVE with the route flags → delete with and without ``deleteRemotePeering``; an untagged
remote network and a remote network the service account may not read."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kube.toolkit import deleting
from standins.gcp import GcpStandIn
from tasks.cloud.gcp import vpcpeering
from tasks.cloud.gcp.client import GcpClient
from tasks.cloud.kcp.vpcpeering_plan import Seen
from tasks.cloud.registry import Turn
from tasks.cloud.settings import CloudSettings
from tests.integration.cloud.steps import apply_step, drive, provider_outcome, provider_turns

from .conftest import PROJECT, VPC, gcp_scope

pytestmark = pytest.mark.integration

REMOTE_PROJECT = "customer-project-7"
REMOTE_VPC = "customer-vpc"
SHOOT = "c-91b7d03"  # gcp_scope()'s shoot


def t(seconds: float) -> float:
    return seconds / 1000


@pytest.fixture
def client(gcp: GcpStandIn) -> GcpClient:
    gcp.state.project_number(REMOTE_PROJECT)
    c = GcpClient(endpoint=gcp.url)
    vpcpeering.seed_network(c, PROJECT, VPC)  # the shoot's network (Gardener's)
    return c


def network(project: str, name: str, type_: str) -> dict[str, Any]:
    ref = {"gcp": {"gcpProject": project, "networkName": name}}
    return {"metadata": {"name": name, "namespace": "kcp-system"},
            "spec": {"type": type_, "network": {"reference": ref}}, "status": {"network": ref, "state": "Ready"}}


LOCAL = network(PROJECT, VPC, "kyma")
REMOTE = network(REMOTE_PROJECT, REMOTE_VPC, "external")


def peering(name: str = "3f0c2b1a-peer", import_routes: bool = True, delete_remote: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "kcp-system", "finalizers": [
                "cloud-manager.kyma-project.io/deletion-hook"]},
            "spec": {"scope": {"name": "kyma-1"}, "remoteRef": {"namespace": "", "name": "to-customer"},
                     "details": {"localNetwork": {"name": "kyma-1--kyma"}, "remoteNetwork": {"name": REMOTE_VPC},
                                 "peeringName": "customer-to-kyma", "importCustomRoutes": import_routes,
                                 "deleteRemotePeering": delete_remote}},
            "status": {}}


def _reconcile(obj: dict[str, Any], client: GcpClient) -> Any:
    """The GCP provider's turn (its read, plan and the executor's call) with ``client``, as the KCP
    VpcPeering controller hands the object on (a deleted one to the deletion)."""
    scope = gcp_scope()
    turn = Turn(kube=None, obj=obj, scope=scope, settings=CloudSettings(time_scale=1000),  # type: ignore[arg-type]
                seen=Seen(obj, scope, True, LOCAL, REMOTE))
    return provider_outcome("vpcpeering", turn, deleting(obj), {"": client})


def _conditions(obj: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in obj["status"].get("conditions", [])]


def test_tagged_remote_is_peered_both_ways_then_deleted_on_both_sides(gcp: GcpStandIn, client: GcpClient) -> None:
    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=(SHOOT,))
    obj = peering()
    step, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready" and step.requeue_after is None
    assert _conditions(obj) == [("Ready", "True", "Ready", "VpcPeering :customer-to-kyma is provisioned")]
    assert (obj["status"]["id"], obj["status"]["remoteId"]) == ("cm-3f0c2b1a-peer", "customer-to-kyma")
    assert obj["status"]["remotePeeringOperation"] and obj["status"]["localPeeringOperation"]
    remote = gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma")
    local = gcp.state.peering(PROJECT, VPC, "cm-3f0c2b1a-peer")
    assert remote is not None and local is not None
    assert (remote["state"], local["state"]) == ("ACTIVE", "ACTIVE")
    assert remote["network"].endswith(f"/projects/{PROJECT}/global/networks/{VPC}")
    assert local["network"].endswith(f"/projects/{REMOTE_PROJECT}/global/networks/{REMOTE_VPC}")
    # the customer exports custom routes to Kyma, which imports them; both exchange subnet routes
    assert (remote["exportCustomRoutes"], remote["importCustomRoutes"]) == (True, False)
    assert (local["importCustomRoutes"], local["exportCustomRoutes"]) == (True, False)
    assert remote["exchangeSubnetRoutes"] and local["exchangeSubnetRoutes"]
    # the remote peering was made first
    kinds = [op.kind for op in gcp.state._compute_ops.values() if op.kind == "addPeering"]
    targets = [op.target for op in gcp.state._compute_ops.values() if op.kind == "addPeering"]
    assert kinds == ["addPeering", "addPeering"] and targets == [f"{REMOTE_PROJECT}/{REMOTE_VPC}", f"{PROJECT}/{VPC}"]

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step, _ = drive(_reconcile, obj, client)
    assert step.remove_finalizer == "cloud-manager.kyma-project.io/deletion-hook"
    assert "Ready" not in [c[0] for c in _conditions(obj)]
    assert gcp.state.peering(PROJECT, VPC, "cm-3f0c2b1a-peer") is None
    # the remote removal was started last; its operation ends op_delay later
    assert _wait_gone(gcp, REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma")


def _wait_gone(gcp: GcpStandIn, project: str, network: str, name: str) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if gcp.state.peering(project, network, name) is None:
            return True
        time.sleep(0.02)
    return False


def test_untagged_remote_is_refused_until_tagged_and_delete_keeps_the_remote_side(
        gcp: GcpStandIn, client: GcpClient) -> None:
    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=("someone-else",))
    obj = peering(name="9a-untagged", import_routes=False, delete_remote=False)
    step = _reconcile(obj, client)
    assert step.status is not None and step.status["state"] == "Disconnected"
    assert [(c["type"], c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Error", "FailedCreatingVpcPeeringConnection",
         f"Error creating VpcPeering, remote VPC does not have a tag with the key: {SHOOT}")]
    assert step.requeue_after == pytest.approx(t(300)) and step.event is not None
    assert gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma") is None

    client.tag_network(REMOTE_PROJECT, REMOTE_VPC, SHOOT)  # the customer fixes it
    step, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"
    remote = gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma")
    assert remote is not None and remote["exportCustomRoutes"] is False

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step, _ = drive(_reconcile, obj, client)
    assert step.remove_finalizer
    assert gcp.state.peering(PROJECT, VPC, "cm-9a-untagged") is None
    kept = gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma")
    assert kept is not None and kept["state"] == "INACTIVE"  # the customer's side, without its partner


def test_remote_network_missing_or_not_readable(gcp: GcpStandIn, client: GcpClient) -> None:
    obj = peering(name="b1-missing")
    step = _reconcile(obj, client)
    assert step.status is not None and step.status["state"] == "Disconnected"
    assert step.status["conditions"][0]["message"] == f"Remote VPC Network {REMOTE_PROJECT}/{REMOTE_VPC} not found."

    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=(SHOOT,))
    gcp.state.inject("GET", "/v3/effectiveTags", 403, "The caller does not have permission")
    step = _reconcile(peering(name="b1-missing"), client)
    assert step.status is not None and step.status["conditions"][0]["message"] == (
        f"Error fetching GCP remote network tags for network {REMOTE_PROJECT}/{REMOTE_VPC}, due to insufficient "
        "permissions")


def test_through_the_gcp_provider(gcp: GcpStandIn, client: GcpClient) -> None:
    """The kind's gcp provider side with its own Compute client (``gcp.clients.compute``) aimed at the stand-in."""
    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=(SHOOT,))
    env = {"RECONCILERY_GCP_ENDPOINT_URL": gcp.url, "RECONCILERY_CLOUD_TIME_SCALE": "1000"}
    with provider_turns("gcp", env, gcp_scope(), LOCAL, REMOTE) as turn:
        obj = peering(name="c2-bridge")
        _, states = drive(turn, obj)
        assert states[-1] == "Ready"
        step, _ = drive(turn, obj, delete=True)
        assert step.remove_finalizer and gcp.state.peering(PROJECT, VPC, "cm-c2-bridge") is None


VICTIM_PROJECT, VICTIM_VPC, VICTIM_SHOOT = "victim-kyma-project", "shoot--kyma--c-victim", "c-victim"


def _turns(obj: dict[str, Any], client: GcpClient, n: int = 12) -> Any:
    """Up to ``n`` turns (a peering that cannot finish is never final): the last Outcome."""
    step = None
    for _ in range(n):
        step = _reconcile(obj, client)
        apply_step(obj, step)
        if step.remove_finalizer or (step.requeue_after is None and step.error is None):
            break
        time.sleep(min(step.requeue_after or 0.01, 0.05))
    return step


def test_attacker_naming_another_tenants_remote_peering_never_peers_nor_deletes_it(
        gcp: GcpStandIn, client: GcpClient) -> None:
    """Tenant A's GcpVpcPeering names tenant B's customer network and B's remote peering, with
    ``deleteRemotePeering``, then is deleted: B's peering stays ACTIVE, A's shoot is never peered (the
    tag names B's shoot only), and A's object finishes deleting."""
    gcp.state.project_number(VICTIM_PROJECT)
    vpcpeering.seed_network(client, VICTIM_PROJECT, VICTIM_VPC)
    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=(VICTIM_SHOOT,))
    for args in ((REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma", VICTIM_PROJECT, VICTIM_VPC),
                 (VICTIM_PROJECT, VICTIM_VPC, "cm-victim", REMOTE_PROJECT, REMOTE_VPC)):  # B's connection
        assert _wait_op(gcp, client, client.add_peering(*args, import_custom_routes=False,
                                                        export_custom_routes=False), args[0])
    assert (gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma") or {}).get("state") == "ACTIVE"

    obj = peering(name="a7-attacker", delete_remote=True)
    step = _turns(obj, client)
    assert gcp.state.peering(PROJECT, VPC, "cm-a7-attacker") is None  # A's shoot was never peered
    assert not obj["status"].get("remoteId") and obj["status"]["state"] == "Disconnected"
    assert _conditions(obj)[0][3] == (f"Peering with the same name customer-to-kyma already exists in network "
                                      f"{REMOTE_PROJECT}/{REMOTE_VPC}")
    assert VICTIM_PROJECT not in str(obj["status"]) and VICTIM_VPC not in str(obj["status"])

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step = _turns(obj, client)
    assert step.remove_finalizer == "cloud-manager.kyma-project.io/deletion-hook"
    assert step.event is not None and VICTIM_PROJECT not in step.event.message
    time.sleep(0.1)  # a removal would be done by now (op_delay 50 ms)
    kept = gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma")
    assert kept is not None and kept["state"] == "ACTIVE"


def _wait_op(gcp: GcpStandIn, client: GcpClient, op: str, project: str) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if (client.get_global_operation(project, op) or {}).get("status") == "DONE":
            return True
        time.sleep(0.02)
    return False


def test_attacker_a_generic_tag_or_another_shoots_tag_does_not_open_a_network(gcp: GcpStandIn,
                                                                              client: GcpClient) -> None:
    """The customer's network carries the landscape-wide ``PEERING_NETWORK_TAG`` key and a key naming
    another shoot that contains this one's name: no tenant's shoot may peer with it (the original's
    substring match on either let every tenant in)."""
    vpcpeering.seed_network(client, REMOTE_PROJECT, REMOTE_VPC, tag_keys=("kyma-peering", f"{SHOOT}0"))
    env = {"RECONCILERY_GCP_ENDPOINT_URL": gcp.url, "RECONCILERY_CLOUD_TIME_SCALE": "1000",
           "PEERING_NETWORK_TAG": "kyma-peering"}
    with provider_turns("gcp", env, gcp_scope(), LOCAL, REMOTE) as turn:
        step = turn(peering(name="d3-generic"))
    assert step.status is not None and step.status["state"] == "Disconnected" and not step.writes
    assert step.status["conditions"][0]["message"] == (
        f"Error creating VpcPeering, remote VPC does not have a tag with the key: {SHOOT}")
    assert gcp.state.peering(REMOTE_PROJECT, REMOTE_VPC, "customer-to-kyma") is None
