"""One SKR connect within one byte budget (issue 27), against a tiny HTTP server playing an attacker's
SKR (no cloud stack: seconds): a kind's list past the budget stops the connect with
``BudgetExhausted`` (which :func:`tasks.cloud.skr.connect.reconcile` turns into the SkrStatus condition,
the Warning Event and the rotation's backoff, see test_skr_flood.py), and a kind's snapshot is dropped
after its turn so the next kind has the whole budget."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from kube import ReadLimitExceeded
from kube.resources import Resource
from tasks.cloud import settings as cloud_settings
from tasks.cloud.skr import connect
from tasks.cloud.skr.context import SkrContext
from tests.fixtures.processes import served
from tests.integration.kube.test_remote_limits import Evil, _json, _page
from workers.controller import Result

pytestmark = pytest.mark.integration

KIND_A = Resource("cloud-resources.kyma-project.io", "v1beta1", "ipranges", "IpRange", namespaced=False)
KIND_B = Resource("cloud-resources.kyma-project.io", "v1beta1", "awsnfsvolumes", "AwsNfsVolume", namespaced=False)


@pytest.fixture
def evil() -> Iterator[Evil]:
    yield from served(Evil())


def _ctx(evil: Evil, budget: int) -> SkrContext:
    return SkrContext(kyma="attacker", skr=evil.client(budget=budget), kcp=None,  # type: ignore[arg-type]
                      scope={"spec": {"provider": "aws"}}, settings=cloud_settings.load({}),
                      deadline=time.monotonic() + 10)


def _by_kind(big: str) -> Any:
    """Kind ``big`` lists 8 objects of ~20 KB, any other kind 2."""
    def handler(h: BaseHTTPRequestHandler) -> None:
        _json(h, _page(8 if big in h.path else 2, pad=20_000))
    return handler


def _done(ctx: SkrContext, namespace: str, name: str) -> Result:
    return Result.done()


def test_a_list_past_the_connect_budget_stops_the_connect(evil: Evil) -> None:
    evil.handler = _by_kind("/ipranges")
    ctx = _ctx(evil, budget=100_000)
    with pytest.raises(ReadLimitExceeded) as caught:
        connect._run(ctx, KIND_A, _done, "IpRange")
    assert caught.value.reason == "BudgetExhausted"
    assert "attacker" in caught.value.message and "budget of 100000 bytes" in caught.value.message


def test_a_budget_exhausted_inside_an_objects_turn_stops_the_connect(evil: Evil) -> None:
    # before: the error was one object's outcome and the connect read on, kind after kind
    evil.handler = _by_kind("/awsnfsvolumes")
    ctx = _ctx(evil, budget=100_000)

    def reads_another_kind(ctx: SkrContext, namespace: str, name: str) -> Result:
        ctx.objects(KIND_B)
        return Result.done()

    with pytest.raises(ReadLimitExceeded, match="BudgetExhausted"):
        connect._run(ctx, KIND_A, reads_another_kind, "IpRange")
    assert sum("/awsnfsvolumes" in p for p in evil.paths) == 1  # stopped at the first object


def test_each_kinds_snapshot_is_dropped_after_its_turn(evil: Evil) -> None:
    # before: every kind's snapshot stayed cached for the whole connect; here two kinds of ~160 KB each
    # fit a 200 KB budget only one after the other
    evil.handler = _by_kind("/")
    ctx = _ctx(evil, budget=200_000)
    budget = ctx.skr.budget
    assert budget is not None
    held: list[int] = []

    def holds(ctx: SkrContext, namespace: str, name: str) -> Result:
        held.append(budget.left)
        return Result.done()

    assert connect._run(ctx, KIND_A, holds, "IpRange")["ok"]
    assert held and max(held) < 50_000  # the snapshot is charged while its turn runs
    assert budget.left == 200_000
    reads = len(evil.paths)
    ctx.get(KIND_A, "r0")
    assert len(evil.paths) == reads + 1  # no snapshot left: read from the SKR again
    assert connect._run(ctx, KIND_B, _done, "AwsNfsVolume")["ok"]
    assert budget.left == 200_000
