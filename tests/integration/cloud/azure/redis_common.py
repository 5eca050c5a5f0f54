"""What the Azure RedisInstance and RedisCluster integration tests share: turns until Ready or gone, and the
deletions the ARM stand-in saw."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kube.toolkit.outcome import Outcome
from standins.azure import AzureStandIn

__all__ = ["deleted", "drive"]


def drive(turn: Callable[[], Outcome], o: dict[str, Any], deleting: bool, turns: int,
          no_error: bool = False) -> Outcome:
    """``turn()`` (one provider turn of ``o``, its status applied) until Ready with no requeue, or, when
    ``deleting``, until the finalizer goes: that last step. ``no_error``: an Error condition on the way fails
    at once. Raises ``AssertionError`` with the status after ``turns`` turns."""
    for _ in range(turns):
        step = turn()
        if (deleting and step.remove_finalizer) or (not deleting and o["status"].get("state") == "Ready"
                                                     and step.requeue_after is None):
            return step
        if no_error:
            assert not any(c["type"] == "Error" for c in o["status"].get("conditions") or []), o["status"]
        time.sleep(0.02)
    raise AssertionError(o["status"])


def deleted(standin: AzureStandIn) -> list[str]:
    """The resources the stand-in deleted since its history was cleared, in order, from ``Microsoft.*`` on."""
    return [rid.rsplit("/providers/", 1)[1] for kind, rid in standin.state.history if kind == "delete"]
