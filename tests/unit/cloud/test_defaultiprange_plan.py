"""The IpRange a consumer uses (pkg/skr/common/defaultiprange), decided over what was read."""

from __future__ import annotations

from typing import Any

from tasks.cloud import names
from tasks.cloud.skr.defaultiprange_plan import (
    DEFAULT_NAME,
    blocked,
    decide,
    default_manifest,
    owned,
    reference,
    wanted,
)
from tasks.cloud.step import StepBuilder


def volume(ref: str = "", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "vol", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"ipRange": {"name": ref}} if ref else {}}


def iprange(name: str = "default", ready: bool = True, ident: str = "3f0c1c1e-0000-4000-8000-000000000001"):
    conds = [{"type": "Ready", "status": "True" if ready else "False", "reason": "Ready", "message": ""}]
    return {"metadata": {"name": name}, "status": {"id": ident, "conditions": conds}}


def test_no_reference_uses_the_default():
    assert reference(volume()) == "" and wanted(volume()) == DEFAULT_NAME
    assert wanted(volume("mine")) == "mine"


def test_missing_default_is_created_with_the_originals_labels_and_no_cidr():
    use = decide(volume(), None)
    assert use.create == default_manifest() and use.wait and not use.ready
    assert use.create["metadata"] == {"name": "default", "labels": names.DEFAULT_IPRANGE_LABELS}
    assert use.create["spec"] == {} and use.create["kind"] == "IpRange"


def test_missing_named_iprange_is_an_error_not_a_creation():
    use = decide(volume("mine"), None)
    assert use.missing == "Specified IpRange mine does not exist" and use.create is None and not use.ready


def test_not_ready_waits_ready_goes_on_with_the_kcp_name():
    assert decide(volume(), iprange(ready=False)).wait
    use = decide(volume("x"), iprange("x"))
    assert use.ready and use.kcp_name == "3f0c1c1e-0000-4000-8000-000000000001"


def test_deleting_consumer_never_creates_waits_or_blocks():
    assert decide(volume(deleting=True), None).ready
    assert decide(volume("gone", deleting=True), None).ready
    use = decide(volume(deleting=True), iprange(ready=False))
    assert use.ready and use.iprange is not None


MINE = "3f0c1c1e-0000-4000-8000-000000000001"


def kcp_iprange(kyma: str = "kyma-a", remote: str = "x", namespace: str = "") -> dict[str, Any]:
    return {"metadata": {"name": MINE, "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: remote,
                                                  names.LABEL_REMOTE_NAMESPACE: namespace}}}


def test_a_ready_iprange_is_used_only_when_its_id_names_its_own_kcp_mirror():
    """Issue 27: the SKR IpRange's status.id is tenant-written; the KCP IpRange it names must carry this
    SKR's kyma label and the SKR IpRange's remote name, else NotOwned, in words that name no one else."""
    use = decide(volume("x"), iprange("x"))
    assert owned(use, kcp_iprange(), "kyma-a") == use
    message = "IpRange x id names no KCP IpRange of this IpRange"
    for kcp in (kcp_iprange(kyma="kyma-b"), kcp_iprange(remote="other"), kcp_iprange(namespace="ns"), None):
        refused = owned(use, kcp, "kyma-a")
        assert refused.not_owned == message and not refused.ready, kcp
    forged = decide(volume("x"), iprange("x", ident=".."))
    assert owned(forged, kcp_iprange(), "kyma-a").not_owned == message  # never a UUID: never trusted
    waiting = decide(volume("x"), iprange("x", ready=False))
    assert owned(waiting, None, "kyma-a") == waiting  # no mirror yet: its own turn makes it, wait
    assert owned(waiting, kcp_iprange(), "kyma-a") == waiting
    # not Ready because its own turn refuses the copied id (NotOwned there too): an Error, not a wait for ever
    assert owned(waiting, kcp_iprange(kyma="kyma-b"), "kyma-a").not_owned == message
    assert owned(decide(volume("x"), iprange("x", ready=False, ident="..")), None, "kyma-a").not_owned == message
    assert owned(decide(volume("x"), None), None, "kyma-a").not_owned is None  # no IpRange: nothing to check


def test_a_not_owned_iprange_is_the_consumers_error_and_nothing_else():
    run = StepBuilder({"metadata": {"name": "vol", "namespace": "ns"}}, "2026-01-01T00:00:00Z")
    use = owned(decide(volume("x"), iprange("x")), kcp_iprange(kyma="kyma-b"), "kyma-a")
    step = blocked(use, run, lambda s: s)
    assert step is not None and not step.writes and step.requeue_after is None
    assert step.status is not None and step.status["state"] == "Error"
    assert [(c["type"], c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Error", "NotOwned", "IpRange x id names no KCP IpRange of this IpRange")]
    assert "kyma-b" not in str(step)
