"""The KCP IpRange consumers' read and plan as their controller runs them (tasks/cloud/kcp/consumer.py and
kind.py; the original's pkg/kcp/nfsinstance and pkg/kcp/redisinstance ``loadIpRange``): a missing IpRange
is the object's Error ``InvalidIpRangeReference``, an IpRange not Ready yet is waited for, and neither
reaches the provider nor adds the finalizer.

The shell's I/O is a handful of Kube calls; a recording stand-in for them keeps this a unit test."""

from __future__ import annotations

from typing import Any

import pytest

from kube import Resource
from tasks.cloud import names, registry, settings
from tasks.cloud.kcp import kind
from tasks.cloud.kcp.consumer import REASON_INVALID_IPRANGE_REFERENCE
from workers.controller import Key, ResultKind

NS = "kcp-system"


class RecordingKube:
    """Objects by ``(kind, namespace, name)``; records status patches and Events; any other write fails
    the test (AttributeError)."""

    def __init__(self, *objs: tuple[Resource, dict[str, Any]]) -> None:
        self.objs = {(res.kind, o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for res, o in objs}
        self.status_patches: list[dict[str, Any]] = []
        self.events: list[tuple[str, str, str]] = []

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.objs.get((res.kind, namespace or "", name))

    def patch_status(self, res: Resource, name: str, status: dict[str, Any],
                     namespace: str | None = None) -> dict[str, Any]:
        self.status_patches.append(status)
        obj = self.objs[(res.kind, namespace or "", name)]
        obj["status"] = {**(obj.get("status") or {}), **status}
        return obj

    def emit_event(self, involved: dict[str, Any], reason: str, message: str, type: str = "Normal") -> None:
        self.events.append((type, reason, message))


def scope(provider: str = "aws") -> dict[str, Any]:
    return {"metadata": {"name": "k", "namespace": NS}, "spec": {"provider": provider}}


def consumer_obj(res: Resource, iprange: str = "gone") -> dict[str, Any]:
    return {"apiVersion": res.api_version, "kind": res.kind,
            "metadata": {"name": "0b8e5f4e", "namespace": NS, "resourceVersion": "1"},
            "spec": {"scope": {"name": "k"}, "ipRange": {"name": iprange}}}


@pytest.fixture
def no_provider_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any provider turn reached fails the test."""
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the provider must not be reached")
    monkeypatch.setattr(kind, "provider_turn", refuse)  # the declared kinds' provider turn


def run(monkeypatch: pytest.MonkeyPatch, kube: RecordingKube, res: Resource, of: registry.Kind) -> Any:
    """The KCP reconcile of the declared consumer kind ``of``."""
    obj = kube.get(res, "0b8e5f4e", NS)
    monkeypatch.setattr(kind, "load", lambda key, r: (settings.current(), kube, obj))
    return kind.reconcile(Key("local", NS, "0b8e5f4e"), kind=of)


@pytest.mark.usefixtures("no_provider_calls")
@pytest.mark.parametrize(("res", "of"), [(names.NFS_INSTANCE, "nfsinstance"),
                                         (names.REDIS_INSTANCE, "redisinstance")])
def test_a_missing_iprange_is_invalid_iprange_reference(monkeypatch: pytest.MonkeyPatch, res: Resource,
                                                        of: str) -> None:
    kube = RecordingKube((names.SCOPE, scope()), (res, consumer_obj(res)))
    result = run(monkeypatch, kube, res, registry.get(of))
    message = f"Referred IpRange {NS}/gone does not exist"
    status = kube.get(res, "0b8e5f4e", NS)["status"]  # type: ignore[index]
    assert status["state"] == "Error"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Error", "True", REASON_INVALID_IPRANGE_REFERENCE, message)]
    assert kube.events == [("Warning", REASON_INVALID_IPRANGE_REFERENCE, message)]
    assert result.outcome == ResultKind.SUCCESS  # forget: a new IpRange comes with its own watch event
    assert "finalizers" not in kube.get(res, "0b8e5f4e", NS)["metadata"]  # type: ignore[index]
    run(monkeypatch, kube, res, registry.get(of))  # the same again: no second write, no second Event
    assert len(kube.status_patches) == 1 and len(kube.events) == 1


@pytest.mark.usefixtures("no_provider_calls")
def test_an_iprange_not_ready_is_waited_for_without_a_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    iprange = {"metadata": {"name": "ipr", "namespace": NS}, "spec": {"scope": {"name": "k"}},
               "status": {"conditions": []}}
    kube = RecordingKube((names.SCOPE, scope()), (names.KCP_IPRANGE, iprange),
                         (names.NFS_INSTANCE, consumer_obj(names.NFS_INSTANCE, "ipr")))
    result = run(monkeypatch, kube, names.NFS_INSTANCE, registry.get("nfsinstance"))
    assert result.outcome == ResultKind.REQUEUE_AFTER and result.requeue_after
    assert kube.status_patches == [] and kube.events == []


@pytest.mark.usefixtures("no_provider_calls")
@pytest.mark.parametrize(("res", "of"), [(names.NFS_INSTANCE, "nfsinstance"),
                                         (names.REDIS_INSTANCE, "redisinstance")])
def test_an_iprange_of_another_scope_is_one_that_does_not_exist(monkeypatch: pytest.MonkeyPatch, res: Resource,
                                                                of: str) -> None:
    """Issue 27: a KCP object naming another runtime's IpRange (its SKR copied that IpRange's id) gets the
    missing IpRange's Error, word for word (nothing about the other runtime is revealed), and neither the
    plan nor the provider sees that IpRange."""
    ready = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]
    theirs = {"metadata": {"name": "theirs", "namespace": NS}, "spec": {"scope": {"name": "victim"}},
              "status": {"conditions": ready, "vpcId": "vpc-victim"}}
    kube = RecordingKube((names.SCOPE, scope()), (names.KCP_IPRANGE, theirs), (res, consumer_obj(res, "theirs")))
    result = run(monkeypatch, kube, res, registry.get(of))
    status = kube.get(res, "0b8e5f4e", NS)["status"]  # type: ignore[index]
    message = f"Referred IpRange {NS}/theirs does not exist"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Error", REASON_INVALID_IPRANGE_REFERENCE, message)]
    assert result.outcome == ResultKind.SUCCESS and "victim" not in str(status)
