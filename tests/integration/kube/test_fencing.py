"""The kube layer honours the running reconcile's fence: a fenced reconcile sends nothing."""

from __future__ import annotations

import time

import pytest

import fencing
from kube import Kube, resources

pytestmark = pytest.mark.integration


def test_a_reconcile_that_lost_its_lease_cannot_write(kube: Kube, unique_ns: str) -> None:
    now = time.monotonic()
    fence = fencing.Fence(token="1", deadline=now + 60, valid_until=now + 30)
    with fencing.fenced(fence):
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "before", "namespace": unique_ns}})
        fence.mark_lost("the key was recovered by another worker")
        with pytest.raises(fencing.LeaseLost):
            kube.create(resources.CONFIGMAP, {"metadata": {"name": "after", "namespace": unique_ns}})
        with pytest.raises(fencing.LeaseLost):
            kube.patch(resources.CONFIGMAP, "before", {"data": {"x": "y"}}, unique_ns)
    names = {o["metadata"]["name"] for o in kube.list(resources.CONFIGMAP, unique_ns)}
    assert "before" in names and "after" not in names
    assert (kube.get(resources.CONFIGMAP, "before", unique_ns) or {}).get("data") is None


def test_a_reconcile_past_its_deadline_gets_deadline_exceeded(kube: Kube, unique_ns: str) -> None:
    now = time.monotonic()
    with fencing.fenced(fencing.Fence(token="2", deadline=now - 1, valid_until=now + 30)), \
            pytest.raises(fencing.DeadlineExceeded):
        kube.get(resources.CONFIGMAP, "x", unique_ns)
