"""The SKR IpRange plan, table-driven from the notes (pkg/skr/iprange): states, reasons, messages (pure)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kube import Resource, ResourceMissing
from kube.toolkit import Outcome
from tasks.cloud import names, settings
from tasks.cloud.skr import iprange
from tasks.cloud.skr.iprange_plan import Seen, plan
from tests.unit.cloud.outcomes import SkrWrites

NOW = "2026-01-01T00:00:00Z"
ID = "0b8e5f4e-3a51-4b7e-9a5b-2f1b6c1d9e70"
OTHER_ID = "6f1c1f0e-8c1d-4c52-a0f7-3b1fcb8f7a11"


def t(seconds: float) -> float:
    return seconds


def skr(name: str = "r", cidr: str = "", status: dict[str, Any] | None = None, finalizer: bool = False,
        deleting: bool = False, created: str = "2026-01-01T00:00:00Z", label: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created, "uid": name,
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if label:
        meta["labels"] = {names.LABEL_SKR_ID: label}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"cidr": cidr} if cidr else {}, "status": status or {}}


def kcp(name: str = ID, conditions: list[dict[str, Any]] | None = None, kyma: str = "k", remote: str = "r",
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: remote,
                                                     names.LABEL_REMOTE_NAMESPACE: ""}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "status": {"conditions": conditions or []}}


def run(obj: dict[str, Any], mirror: dict[str, Any] | None = None, others: tuple[dict[str, Any], ...] = (),
        users: tuple[str, ...] = (), quota: int = 1) -> SkrWrites:
    seen = Seen(obj=obj, everyone=[obj, *others], kcp=mirror, kyma="k", provider="aws", kcp_namespace="kcp-system",
                quota=quota, users=list(users))
    return SkrWrites(plan(seen, ID, t, NOW), names.KCP_IPRANGE)


def finalized(result: SkrWrites) -> bool:
    """Whether the turn adds the finalizer (after the id label, before the KCP mirror)."""
    verbs = [getattr(w, "verb", "") for w in result.step.writes]
    if "add_finalizer" not in verbs:
        return False
    assert result.added == {"IpRange": ["r"]} and result.step.add_finalizer is None
    assert verbs.index("add_finalizer") == (1 if result.label_id is not None else 0)
    return True


def conds(result: SkrWrites) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"])
            for c in (result.step.status or {}).get("conditions") or []]


def test_a_new_iprange_gets_id_finalizer_and_mirror_in_one_turn() -> None:
    result = run(skr(cidr="10.251.0.0/22"))
    assert result.label_id == ID
    assert finalized(result)
    assert [(getattr(w, 'verb', ''), getattr(w, 'cluster', '')) for w in result.step.writes] == [
        ("label", ""), ("add_finalizer", ""), ("create", "kcp")]
    assert result.create is not None and result.create["metadata"]["name"] == ID
    assert result.create["metadata"]["labels"][names.LABEL_KYMA_NAME] == "k"
    assert result.create["spec"] == {"remoteRef": {"namespace": "", "name": "r"}, "scope": {"name": "k"},
                                     "network": {"name": "k--kyma"}, "cidr": "10.251.0.0/22"}
    assert result.step.status is not None
    assert result.step.status["id"] == ID and result.step.status["state"] == "Creating"
    assert result.step.status["cidr"] == "10.251.0.0/22"
    assert conds(result) == [("Submitted", "True", "SubmissionSucceeded", "Resource is submitted for provisioning")]
    assert result.step.requeue_after == 0.1


def test_an_id_label_is_kept() -> None:
    result = run(skr(label=OTHER_ID))
    assert result.label_id is None and result.create is not None
    assert result.create["metadata"]["name"] == OTHER_ID


@pytest.mark.parametrize(("obj", "others", "state", "expected"), [
    (skr(cidr="10.0.0.0/22", status={"id": ID, "cidr": "10.1.0.0/22"}), (), "Error",
     [("Error", "False", "CidrCanNotBeChanged", "IpRange CIDR can not be changed")]),
    (skr(cidr="10.251.0.0/31"), (), "Error",
     [("Error", "True", "InvalidCidr", "CIDR 10.251.0.0/31 block size must not be greater than 30")]),
    (skr(cidr="10.0.0.0/12"), (), "Error",
     [("Error", "True", "InvalidCidr", "CIDR 10.0.0.0/12 block size must not be less than 16")]),
    (skr(cidr="10.251.0.0-22"), (), "Error",
     [("Error", "True", "InvalidCidr", "CIDR 10.251.0.0-22 has invalid syntax")]),
    (skr("b", cidr="10.251.2.0/24", created="2026-01-02T00:00:00Z"), (skr("a", cidr="10.251.0.0/22"),), "Error",
     [("Error", "True", "CidrOverlap", "CIDR overlaps with a")]),
    (skr("c", cidr="10.252.0.0/22", created="2026-01-02T00:00:00Z"), (skr("a", cidr="10.251.0.0/22"),), "Error",
     [("QuotaExceeded", "True", "QuotaExceeded", "Maximum number of 1 resources exceeded")]),
])
def test_refusals(obj: dict[str, Any], others: tuple[dict[str, Any], ...], state: str,
                  expected: list[tuple[str, str, str, str]]) -> None:
    result = run(obj, others=others)
    assert result.create is None and result.delete is None
    assert result.step.status is not None and result.step.status["state"] == state
    assert conds(result) == expected


def test_a_cleared_overlap_goes_on_to_submission() -> None:
    error = {"type": "Error", "status": "True", "reason": "CidrOverlap", "message": "CIDR overlaps with a",
             "lastTransitionTime": NOW}
    result = run(skr(cidr="10.251.0.0/22", status={"id": ID, "cidr": "10.251.0.0/22", "conditions": [error]},
                     finalizer=True))
    assert result.create is not None and not finalized(result)
    assert conds(result) == [("Submitted", "True", "SubmissionSucceeded", "Resource is submitted for provisioning")]


@pytest.mark.parametrize(("kcp_conditions", "state", "expected", "requeue"), [
    ([], None, [], 10),
    ([{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}], "Ready",
     [("Ready", "True", "Ready", "Ready")], None),
    ([{"type": "Error", "status": "True", "reason": "VpcNotFound", "message": "AWS VPC x not found"}], "Error",
     [("Error", "True", "Error", "AWS VPC x not found")], None),
])
def test_the_kcp_status_is_projected_back(kcp_conditions: list[dict[str, Any]], state: str | None,
                                          expected: list[tuple[str, str, str, str]], requeue: float | None) -> None:
    result = run(skr(status={"id": ID, "state": "Creating"}, finalizer=True), mirror=kcp(conditions=kcp_conditions))
    assert result.create is None and result.label_id is None
    assert (result.step.status or {}).get("state") == state
    assert conds(result) == expected
    assert result.step.requeue_after == requeue


@pytest.mark.parametrize(("mirror", "users", "state", "expected", "delete", "release"), [
    (kcp(), ("default/vol",), "Error",
     [("Warning", "True", "DeleteWhileUsed", "Can not be deleted while used by: [default/vol]")], None, False),
    (kcp(), (), "Deleting", [], ID, False),
    (kcp(deleting=True), (), "Deleting", [], None, False),
    (None, (), "Processing", [], None, True),
])
def test_deletion(mirror: dict[str, Any] | None, users: tuple[str, ...], state: str,
                  expected: list[tuple[str, str, str, str]], delete: str | None, release: bool) -> None:
    result = run(skr(status={"id": ID, "state": "Ready"}, finalizer=True, deleting=True), mirror=mirror, users=users)
    assert (result.step.status or {}).get("state") == state
    assert conds(result) == expected
    assert result.delete == delete and result.create is None
    assert (result.step.remove_finalizer == names.FINALIZER) is release


class ListingSkr:
    """The SKR reads of :func:`tasks.cloud.skr.iprange.read`: ``list`` per kind (an absent kind is not
    served, as an SKR of another provider), ``get`` of the KCP mirror."""

    def __init__(self, objs: dict[str, list[dict[str, Any]]], mirror: dict[str, Any] | None = None) -> None:
        self.objs, self.mirror = objs, mirror

    def list(self, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        if res.kind not in self.objs:
            raise ResourceMissing(404, "NotFound", f"{res.kind} not served")
        return self.objs[res.kind]

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.mirror if res.kind == names.KCP_IPRANGE.kind and name == ID else None


def redis(kind: Resource, name: str, ref: str = "") -> dict[str, Any]:
    return {"kind": kind.kind, "metadata": {"name": name, "namespace": "shop"},
            "spec": {"redisTier": "S1", **({"ipRange": {"name": ref}} if ref else {})}}


@pytest.mark.parametrize(("ipr_name", "objs", "users"), [
    ("default", {"AwsRedisInstance": [redis(names.SKR_AWS_REDIS_INSTANCE, "cache")]}, "[shop/cache]"),
    ("r", {"GcpRedisInstance": [redis(names.SKR_GCP_REDIS_INSTANCE, "c1", "r"),
                                redis(names.SKR_GCP_REDIS_INSTANCE, "c2", "other")]}, "[shop/c1]"),
    ("r", {"AzureRedisInstance": [redis(names.SKR_AZURE_REDIS_INSTANCE, "az", "r")],
           "AwsNfsVolume": [redis(names.AWS_NFS_VOLUME, "vol", "r")]}, "[shop/vol shop/az]"),
])
def test_deletion_is_refused_while_a_redis_instance_uses_it(ipr_name: str, objs: dict[str, list[dict[str, Any]]],
                                                            users: str) -> None:
    """The shell's read finds the Redis kinds among the consumers (an empty ``ipRange`` means ``default``),
    and the plan refuses the deletion naming them."""
    obj = skr(name=ipr_name, status={"id": ID, "state": "Ready"}, finalizer=True, deleting=True)
    fake = ListingSkr({**objs, names.SKR_IPRANGE.kind: [obj]}, mirror=kcp(remote=ipr_name))
    ctx = SimpleNamespace(skr=fake, kcp=fake, kyma="k", provider="aws", kcp_namespace="kcp-system",
                          settings=settings.current(), objects=lambda res: fake.list(res), quota=lambda res: 1,
                          mirror=lambda res, ident: fake.get(res, ident, "kcp-system"))
    result = SkrWrites(plan(iprange.read(cast(Any, ctx), names.SKR_IPRANGE, obj), ID, t, NOW), names.KCP_IPRANGE)
    assert conds(result) == [("Warning", "True", "DeleteWhileUsed", f"Can not be deleted while used by: {users}")]
    assert result.delete is None and result.step.remove_finalizer is None


def test_a_deleting_iprange_without_finalizer_is_left_alone() -> None:
    result = run(skr(deleting=True))
    assert result.step == Outcome()


# -- ownership before action (issue 17): an id that is not a UUID, or that names another SKR's object --

@pytest.mark.parametrize(("obj", "mirror", "reason", "message"), [
    (skr(status={"id": "."}, finalizer=True), None, "InvalidId", "IpRange id '.' is not a UUID"),
    (skr(status={"id": ".."}, finalizer=True, deleting=True), None, "InvalidId", "IpRange id '..' is not a UUID"),
    (skr(status={"id": "victim-range"}), None, "InvalidId", "IpRange id 'victim-range' is not a UUID"),
    (skr(label="../x"), None, "InvalidId", "IpRange id '../x' is not a UUID"),
    (skr(status={"id": ID.upper()}), None, "InvalidId", f"IpRange id '{ID.upper()}' is not a UUID"),
    (skr(status={"id": OTHER_ID}, finalizer=True), kcp(OTHER_ID, kyma="victim", remote="theirs"), "NotOwned",
     "IpRange id names a KCP object that does not belong to this object"),
    (skr(status={"id": OTHER_ID}, finalizer=True, deleting=True), kcp(OTHER_ID, kyma="victim", remote="theirs"),
     "NotOwned", "IpRange id names a KCP object that does not belong to this object"),
    (skr(status={"id": OTHER_ID}, finalizer=True), kcp(OTHER_ID, kyma="k", remote="another-range"), "NotOwned",
     "IpRange id names a KCP object that does not belong to this object"),
])
def test_ids_that_are_not_ours_end_in_error_and_touch_nothing(obj: dict[str, Any], mirror: dict[str, Any] | None,
                                                             reason: str, message: str) -> None:
    ready = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "IpRange provisioned in GCP"}]
    if mirror is not None:
        mirror["status"]["conditions"] = ready
    result = run(obj, mirror=mirror, users=())
    assert result.create is None and result.delete is None and result.label_id is None
    assert result.step.status is not None and result.step.status["state"] == "Error"
    assert "id" not in result.step.status
    assert conds(result) == [("Error", "True", reason, message)]
    assert result.step.event is not None and result.step.event.reason == reason
    assert result.step.remove_finalizer is None and not finalized(result)
