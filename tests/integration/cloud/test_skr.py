"""The SKR loop end to end: beat's sweep, ``reconcilery worker`` connects to SKR clusters of the dev API
server, the KCP loop on moto, the runtime-watcher listener. Scenarios after the original's
``internal/controller/cloud-resources/iprange_test.go``, ``quotaIpRange_test.go`` and the looper's
behaviour (deactivation mid-sweep, an unreachable SKR)."""

from __future__ import annotations

import time
import uuid
from functools import partial
from typing import Any

import pytest
import requests

from kube import Kube, resources
from tasks.cloud import names, registry
from tasks.cloud.skr import kind
from tests.integration.cloud.conftest import CloudEnv, Runtime

pytestmark = pytest.mark.integration


def skr_range(skr: Kube, cidr: str = "", name: str | None = None) -> str:
    name = name or f"r-{uuid.uuid4().hex[:6]}"
    skr.create(names.SKR_IPRANGE, {"metadata": {"name": name}, "spec": {"cidr": cidr} if cidr else {}})
    return name


def skr_state(cloud: CloudEnv, skr: Kube, name: str, state: str, timeout: float = 90) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(names.SKR_IPRANGE, name)) is not None
                      and (o.get("status") or {}).get("state") == state and o,
                      timeout=timeout, message=f"SKR IpRange {name} {state}")


def conditions(obj: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in obj["status"].get("conditions") or []]


def connections(cloud: CloudEnv, kyma: str) -> int:
    status = cloud.kcp_get(names.SKR_STATUS, kyma)
    return len(((status or {}).get("spec") or {}).get("pastConnections") or [])


def active_skr(cloud: CloudEnv, **kw: Any) -> tuple[Runtime, Kube]:
    rt = cloud.runtime(**kw)
    assert rt.skr is not None
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), timeout=90, message="SKR active")
    return rt, rt.skr


def test_iprange_with_cidr_ready_end_to_end(cloud: CloudEnv) -> None:
    rt, skr = active_skr(cloud)
    name = skr_range(skr, "10.251.0.0/22")
    obj = skr_state(cloud, skr, name, "Ready")
    ident = obj["status"]["id"]
    assert obj["metadata"]["labels"][names.LABEL_SKR_ID] == ident
    assert obj["status"]["cidr"] == "10.251.0.0/22"
    assert names.FINALIZER in obj["metadata"]["finalizers"]
    assert conditions(obj) == [("Ready", "True", "Ready", "Ready")]
    kcp = cloud.kcp_get(names.KCP_IPRANGE, ident)
    assert kcp is not None
    assert kcp["metadata"]["labels"] == {names.LABEL_KYMA_NAME: rt.kyma, names.LABEL_REMOTE_NAME: name,
                                         names.LABEL_REMOTE_NAMESPACE: "", "kyma-project.io/module": "cloud-manager"}
    assert kcp["spec"] == {"remoteRef": {"namespace": "", "name": name}, "scope": {"name": rt.kyma},
                           "network": {"name": f"{rt.kyma}--kyma"}, "cidr": "10.251.0.0/22"}
    assert len(kcp["status"]["subnets"]) == 3
    module = skr.get(names.CLOUD_RESOURCES, "default", "kyma-system")
    assert module is not None and module["status"]["state"] == "Ready" and module["status"]["served"] == "True"
    cloud.wait(lambda: connections(cloud, rt.kyma) >= 2, message="SkrStatus records connects")
    status = cloud.kcp_get(names.SKR_STATUS, rt.kyma)
    assert status is not None and status["spec"]["provider"] == "aws" and status["spec"]["shootName"] == rt.shoot
    titles = {c["title"]: c for c in status["spec"]["conditions"]}
    assert titles["Controller IpRange"]["ok"] and titles["Controller IpRange"]["outcomes"] == [f"{name}: Ready"]
    assert any(o.endswith(": skipped") for o in titles["Installer"]["outcomes"])


def test_iprange_without_cidr_is_allocated_in_the_kcp(cloud: CloudEnv) -> None:
    _, skr = active_skr(cloud)
    name = skr_range(skr)
    obj = skr_state(cloud, skr, name, "Ready")
    assert "cidr" not in obj["status"], "an allocated CIDR is not copied back to the SKR"
    kcp = cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"])
    assert kcp is not None and kcp["status"]["cidr"] == "10.251.0.0/22"


@pytest.mark.parametrize(("cidr", "message"), [
    ("10.251.0.0/31", "CIDR 10.251.0.0/31 block size must not be greater than 30"),
    ("10.0.0.0/12", "CIDR 10.0.0.0/12 block size must not be less than 16"),
    ("10.251.0.0-22", "CIDR 10.251.0.0-22 has invalid syntax"),
])
def test_invalid_cidr(cloud: CloudEnv, cidr: str, message: str) -> None:
    _, skr = active_skr(cloud)
    name = skr_range(skr, cidr)
    obj = skr_state(cloud, skr, name, "Error")
    assert conditions(obj) == [("Error", "True", "InvalidCidr", message)]
    assert cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"]) is None


def test_overlap_the_newer_fails_and_quota_one_per_skr(cloud: CloudEnv) -> None:
    _, skr = active_skr(cloud)
    first = skr_range(skr, "10.251.0.0/22", name="a-first")
    skr_state(cloud, skr, first, "Ready")
    overlapping = skr_range(skr, "10.251.2.0/24", name="b-overlapping")
    other = skr_range(skr, "10.252.0.0/22", name="c-other")
    obj = skr_state(cloud, skr, overlapping, "Error")
    assert conditions(obj) == [("Error", "True", "CidrOverlap", "CIDR overlaps with a-first")]
    obj = skr_state(cloud, skr, other, "Error")
    assert conditions(obj) == [("QuotaExceeded", "True", "QuotaExceeded", "Maximum number of 1 resources exceeded")]
    assert skr.get(names.SKR_IPRANGE, first)["status"]["state"] == "Ready"  # the older passes


def test_delete_removes_the_mirror_and_the_subnets(cloud: CloudEnv) -> None:
    rt, skr = active_skr(cloud)
    name = skr_range(skr, "10.253.0.0/22")
    ident = skr_state(cloud, skr, name, "Ready")["status"]["id"]
    skr.delete(names.SKR_IPRANGE, name)
    cloud.wait(lambda: skr.get(names.SKR_IPRANGE, name) is None, timeout=90, message="SKR IpRange gone")
    assert cloud.kcp_get(names.KCP_IPRANGE, ident) is None
    tagged = cloud.ec2().describe_subnets(Filters=[{"Name": "vpc-id", "Values": [rt.vpc_id]},
                                                   {"Name": "tag-key",
                                                    "Values": ["cloud-manager.kyma-project.io/iprange"]}])["Subnets"]
    assert tagged == []


def test_delete_while_used_by_a_consumer(cloud: CloudEnv) -> None:
    _, skr = active_skr(cloud, zones=1)
    volume = names.AWS_NFS_VOLUME  # an IpRange consumer (its own reconciler skips it: the ignore label)
    name = skr_range(skr, "10.251.0.0/24")
    skr_state(cloud, skr, name, "Ready")
    skr.create(volume, {"metadata": {"name": "vol", "namespace": "default", "labels": {names.LABEL_IGNORE: "true"}},
                        "spec": {"capacity": "1Gi", "ipRange": {"name": name}}})
    skr.delete(names.SKR_IPRANGE, name)
    obj = cloud.wait(lambda: (o := skr.get(names.SKR_IPRANGE, name)) and any(
        c["reason"] == "DeleteWhileUsed" for c in o["status"].get("conditions") or []) and o, timeout=90,
        message="DeleteWhileUsed")
    assert conditions(obj) == [("Warning", "True", "DeleteWhileUsed",
                                "Can not be deleted while used by: [default/vol]")]
    assert obj["status"]["state"] == "Error"
    skr.delete(volume, "vol", "default")
    cloud.wait(lambda: skr.get(names.SKR_IPRANGE, name) is None, timeout=90, message="deleted once unused")


def test_second_module_instance_is_not_served(cloud: CloudEnv) -> None:
    _, skr = active_skr(cloud)
    skr.create(resources.NAMESPACE, {"metadata": {"name": "other"}})
    skr.create(names.CLOUD_RESOURCES, {"metadata": {"name": "second", "namespace": "other"}, "spec": {}})
    obj = cloud.wait(lambda: (o := skr.get(names.CLOUD_RESOURCES, "second", "other")) and
                     (o.get("status") or {}).get("state") == "Warning" and o, timeout=90, message="second Warning")
    assert obj["status"]["served"] == "False"
    assert [(c["type"], c["reason"]) for c in obj["status"]["conditions"]] == [("Error", "OtherIsServed")]


def test_unreachable_skr_stays_in_the_rotation_and_never_slows_the_others(cloud: CloudEnv) -> None:
    bad = cloud.runtime(skr=False)
    good, _ = active_skr(cloud)
    cloud.wait(lambda: cloud.rotation.failures(bad.kyma) >= 2, timeout=90, message="failed connects counted")
    assert cloud.rotation.is_active(bad.kyma)
    start = connections(cloud, good.kyma)
    cloud.wait(lambda: connections(cloud, good.kyma) >= start + 2, timeout=60, message="the good SKR keeps cycling")
    assert cloud.kcp_get(names.SKR_STATUS, bad.kyma) is None


def test_kyma_deactivated_mid_sweep_is_not_connected_again(cloud: CloudEnv) -> None:
    rt, _ = active_skr(cloud)
    cloud.wait(lambda: connections(cloud, rt.kyma) >= 1, timeout=60, message="first connect")
    cloud.kcp.patch_status(names.KYMA, rt.kyma, {"modules": []}, names.KCP_NAMESPACE)
    cloud.wait(lambda: not cloud.rotation.is_active(rt.kyma), timeout=60, message="deactivated")
    settled = connections(cloud, rt.kyma)
    time.sleep(5)  # > 2 revisit intervals of an active SKR
    assert connections(cloud, rt.kyma) <= settled + 1  # at most the connect already running


def test_runtime_watcher_event_connects_sooner_rate_limited(cloud: CloudEnv) -> None:
    rt, _ = active_skr(cloud)
    assert cloud.listener_certs is not None
    ca = str(cloud.listener_certs.server_ca)
    skr_cert = cloud.listener_certs.client(rt.kyma)  # as KLM issues it: CN = the kyma name
    url = f"{cloud.listener}/v2/cloud-manager/event"
    body = {"owner": {"name": rt.kyma, "namespace": "kcp-system"}, "watched": {"name": "x", "namespace": "y"},
            "watchedGvk": {"group": "cloud-resources.kyma-project.io", "version": "v1beta1", "kind": "IpRange"}}
    assert requests.post(url, json=body, timeout=5, verify=ca).status_code == 401  # no client certificate
    assert requests.get(url, timeout=5, verify=ca).status_code == 405
    assert requests.get(f"{cloud.listener}/healthz", timeout=5, verify=ca).status_code == 200
    cloud.wait(lambda: connections(cloud, rt.kyma) >= 1, timeout=60, message="first connect")
    # push the SKR's rotation turn far away: any further connect is the notification's
    cloud.wait(lambda: cloud.rotation.due(rt.kyma) is not None, timeout=30, message="waiting in the rotation")
    cloud.rotation.redis.zadd(cloud.rotation.keys["rotation"], {rt.kyma: 4_000_000_000})
    before = connections(cloud, rt.kyma)
    assert requests.post(url, json=body, cert=skr_cert, verify=ca, timeout=5).status_code == 200
    cloud.wait(lambda: connections(cloud, rt.kyma) == before + 1, timeout=30, message="notified connect")
    assert cloud.rotation.due(rt.kyma) == 4_000_000_000, "the notification's connect left the rotation alone"
    for _ in range(3):  # within notif_min_interval (3 s here): rate limited
        assert requests.post(url, json=body, cert=skr_cert, verify=ca, timeout=5).status_code == 200
    time.sleep(1.5)
    assert connections(cloud, rt.kyma) == before + 1


def _inactive_skr(cloud: CloudEnv) -> tuple[Runtime, Kube, Any]:
    """A runtime whose Kyma lists no cloud-manager module: no worker connects to it, so the test
    drives its SKR reconciles in-process (its Scope is built all the same)."""
    import os

    from tasks.cloud import settings as cloud_settings
    from tasks.cloud.skr.context import SkrContext
    from tests.integration.cloud.conftest import CLOUD_ENV

    rt = cloud.runtime(module=None)
    assert rt.skr is not None
    scope = cloud.wait(lambda: cloud.kcp_get(names.SCOPE, rt.kyma), timeout=90, message="Scope built")
    s = cloud_settings.load({**os.environ, **CLOUD_ENV})
    ctx = SkrContext(kyma=rt.kyma, skr=rt.skr, kcp=cloud.kcp, scope=scope, settings=s,
                     deadline=time.monotonic() + 30)
    return rt, rt.skr, ctx


def test_the_mirror_is_created_in_the_turn_that_first_sees_the_iprange(cloud: CloudEnv) -> None:
    from tasks.cloud.skr import connect

    _, skr, ctx = _inactive_skr(cloud)
    name = skr_range(skr, "10.251.0.0/22")
    turns = 0
    original = partial(kind.reconcile, kind=registry.get("iprange"), res=names.SKR_IPRANGE)

    def counted(*args: Any) -> Any:
        nonlocal turns
        turns += 1
        return original(*args)

    counted(ctx, "", name)
    assert turns == 1
    obj = skr.get(names.SKR_IPRANGE, name)
    assert obj is not None
    ident = obj["status"]["id"]
    assert obj["metadata"]["labels"][names.LABEL_SKR_ID] == ident
    assert names.FINALIZER in obj["metadata"]["finalizers"]
    assert obj["status"]["state"] == "Creating"
    assert conditions(obj) == [("Submitted", "True", "SubmissionSucceeded", "Resource is submitted for provisioning")]
    kcp = cloud.kcp_get(names.KCP_IPRANGE, ident)
    assert kcp is not None and kcp["metadata"]["labels"][names.LABEL_REMOTE_NAME] == name
    # and one connect of a fresh SKR: the mirror exists when it ends (the connect counts its handles)
    rt2, skr2, ctx2 = _inactive_skr(cloud)
    second = skr_range(skr2, "10.251.0.0/22")
    report = connect.connect(cloud.kcp, rt2.kyma, ctx2.settings)
    assert report.result == "ok"
    obj = skr2.get(names.SKR_IPRANGE, second)
    assert obj is not None and cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"]) is not None
    status = cloud.kcp_get(names.SKR_STATUS, rt2.kyma)
    assert status is not None and len(status["spec"]["pastConnections"]) == 1


def test_an_iprange_naming_another_skrs_id_ends_in_error_and_touches_nothing(cloud: CloudEnv) -> None:
    """The attacker suite of issue 17: ``status.id`` = another SKR's UUID, ``"."``, ``".."``, a non-UUID."""
    _, victim_skr = active_skr(cloud)
    victim_name = skr_range(victim_skr, "10.251.0.0/22")
    victim_id = skr_state(cloud, victim_skr, victim_name, "Ready")["status"]["id"]
    count = len(cloud.kcp.list(names.KCP_IPRANGE, names.KCP_NAMESPACE))
    _, skr, ctx = _inactive_skr(cloud)
    for forged, reason in ((victim_id, "NotOwned"), (".", "InvalidId"), ("..", "InvalidId"),
                           ("not-a-uuid", "InvalidId")):
        name = f"attack-{uuid.uuid4().hex[:6]}"
        skr.create(names.SKR_IPRANGE, {"metadata": {"name": name, "finalizers": [names.FINALIZER]},
                                       "spec": {"cidr": "10.252.0.0/22"}})
        skr.patch_status(names.SKR_IPRANGE, name, {"id": forged, "state": "Ready"})
        for deleting in (False, True):
            if deleting:
                skr.delete(names.SKR_IPRANGE, name)
            ctx.forget(names.SKR_IPRANGE)  # each turn reads the SKR afresh (as a new connect would)
            kind.reconcile(ctx, "", name, kind=registry.get("iprange"), res=names.SKR_IPRANGE)
            obj = skr.get(names.SKR_IPRANGE, name)
            assert obj is not None and obj["status"]["state"] == "Error", (forged, deleting)
            assert [(c["type"], c["reason"]) for c in obj["status"]["conditions"]] == [("Error", reason)]
            assert obj["status"]["conditions"][0]["message"].startswith("IpRange id")  # no victim status copied
            assert obj["status"]["id"] == forged
        victim = cloud.kcp_get(names.KCP_IPRANGE, victim_id)
        assert victim is not None and not victim["metadata"].get("deletionTimestamp"), forged
        assert victim["status"]["state"] == "Ready"
        assert len(cloud.kcp.list(names.KCP_IPRANGE, names.KCP_NAMESPACE)) == count, forged
    time.sleep(1)
    assert victim_skr.get(names.SKR_IPRANGE, victim_name)["status"]["state"] == "Ready"
    assert cloud.kcp_get(names.KCP_IPRANGE, victim_id) is not None


def test_a_kind_without_a_kcp_mirror_calls_its_provider_from_the_skr_plan(cloud: CloudEnv) -> None:
    """The registry's second shape (the original's NFS backups, restores and schedules): no KCP side, the
    SKR plan's Outcome carries the provider call, made with a client built from the connect's Scope (here
    the shoot's account in moto); its answer reaches the plan's ``then``, whose write lands in the SKR."""
    from kube.toolkit.actions import Action, Call
    from kube.toolkit.outcome import Outcome
    from tasks.cloud import registry
    from tasks.cloud.aws import client as aws
    from tasks.cloud.skr import kind as skr_kind
    from workers.controller import ResultKind

    _, skr, ctx = _inactive_skr(cloud)
    assert ctx.provider == "aws"
    ctx.settings = ctx.settings.model_copy(update={"aws_endpoint_url": cloud.aws})  # moto, as the workers'
    aws_scope = (ctx.scope.get("spec") or {}).get("scope", {}).get("aws") or {}
    built: list[str] = []

    def clients(c: Any) -> dict[str, Any]:
        account = str(aws_scope.get("accountId") or "")
        built.append(account)
        return {"": aws.ec2_for(c.settings, account, str(c.scope["spec"]["region"]))}

    def plan(obj: Any, new_id: str, t: Any, now: str) -> Outcome:
        if (obj["metadata"].get("labels") or {}).get("probe/vpc"):
            return Outcome()
        def label(answers: Any) -> Outcome:
            vpc = str((answers[0] or {}).get("VpcId") or "none")
            return Outcome(writes=(Action.named("label", resources.CONFIGMAP, obj["metadata"]["name"],
                                                obj["metadata"]["namespace"], body={"probe/vpc": vpc}),))

        return Outcome(writes=(Call("vpc_by_name", (str(aws_scope.get("vpcNetwork") or ""),)),), then=label)

    probe = registry.Kind(name="probe", skr=registry.SkrSide(
        resources={registry.ANY_PROVIDER: resources.CONFIGMAP}, read=lambda c, res, obj: obj, plan=plan,
        clients=clients))
    assert probe.controller == ""  # no KCP controller for it
    skr.create(resources.CONFIGMAP, {"metadata": {"name": "backup", "namespace": "default"}})
    assert skr_kind.reconcile(ctx, "default", "backup", kind=probe, res=resources.CONFIGMAP).outcome \
        is ResultKind.SUCCESS
    labelled = (skr.get(resources.CONFIGMAP, "backup", "default") or {})["metadata"]["labels"]["probe/vpc"]
    assert labelled.startswith("vpc-") and built == [str(aws_scope.get("accountId"))]
