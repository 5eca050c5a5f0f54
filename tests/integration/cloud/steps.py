"""Driving a provider layer's IpRange step (:class:`tasks.cloud.step.Outcome`) as the KCP controller
would, without Kubernetes: shared by the GCP and Azure layer tests."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["apply_step", "drive", "provider_outcome", "provider_step"]


def provider_outcome(kind: str, turn: Any, deleting: bool = False, clients: Any = None) -> Any:
    """The Cloud kind ``kind``'s provider turn on ``turn`` (a :class:`tasks.cloud.registry.Turn`) as its KCP
    controller runs it — the provider's clients (or ``clients``), read, plan, and the executor's writes
    and calls — without Kubernetes: the Outcome it ended with (its status patch not yet written)."""
    from kube.toolkit import execute
    from tasks.cloud import registry
    from tasks.cloud.kcp.kind import provider_turn

    outcome, used = provider_turn(registry.get(kind), turn, deleting, clients)
    return execute(outcome, clients=used, scale=turn.t).outcome


def provider_step(kind: str, obj: dict[str, Any], scope: dict[str, Any], settings: Any, seen: Any, client: Any,
                  deleting: bool = False) -> Any:
    """One provider turn of ``kind`` on ``obj`` (:func:`provider_outcome` with ``client`` as the default
    client, no Kubernetes), its status patch written into ``obj`` (:func:`apply_step`): the Outcome."""
    from tasks.cloud.registry import Turn

    at = Turn(kube=None, obj=obj, scope=scope, settings=settings, seen=seen)  # type: ignore[arg-type]
    step = provider_outcome(kind, at, deleting, clients={"": client})
    apply_step(obj, step)
    return step


def apply_step(obj: dict[str, Any], step: Any) -> None:
    """Write a step's status merge patch into ``obj`` (as the controller's status patch would; values
    copied, so a later step never shares them)."""
    if step.status:
        status = obj.setdefault("status", {})
        for key, value in step.status.items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = copy.deepcopy(value)


def drive(reconcile: Any, obj: dict[str, Any], *args: Any, max_steps: int = 400, timeout: float = 90.0,
          stop_on_error: bool = False, **kwargs: Any) -> tuple[Any, list[Any]]:
    """Run ``reconcile(obj, *args, **kwargs)`` step after step, writing each status patch, until a step
    neither requeues nor asks for backoff (or removes the finalizer; ``stop_on_error``: or the state is
    ``Error``). Returns (last step, the distinct states seen, in order). Requeue delays are honoured up
    to 50 ms each (tests run the steps with small waits). Raises ``AssertionError`` when no step is final
    within ``max_steps`` steps or ``timeout`` seconds."""
    states: list[Any] = []
    deadline = time.monotonic() + timeout
    for _ in range(max_steps):
        step = reconcile(obj, *args, **kwargs)
        apply_step(obj, step)
        state = obj.get("status", {}).get("state")
        if not states or states[-1] != state:
            states.append(state)
        if step.remove_finalizer or (step.requeue_after is None and step.error is None):
            return step, states
        if stop_on_error and state == "Error":
            return step, states
        if time.monotonic() > deadline:
            break
        time.sleep(min(step.requeue_after or 0.01, 0.05))
    raise AssertionError(f"no final step after {max_steps} steps; states {states}, status {obj.get('status')}")


@contextlib.contextmanager
def provider_turns(name: str, env: dict[str, str], scope: dict[str, Any], local: Any,
                   remote: Any) -> Iterator[Callable[..., Any]]:
    """The provider ``name``'s VpcPeering turn as the KCP controller runs it (its own clients, read, plan and
    the executor's calls), ``turn(obj, delete=False)`` -> its Outcome, under the cloud settings loaded from
    ``env`` (the settings are restored on leaving)."""
    from tasks.cloud import settings
    from tasks.cloud.calls import marked_deleting
    from tasks.cloud.kcp.vpcpeering_plan import Seen
    from tasks.cloud.registry import Turn

    settings.override(settings.load(env))
    try:
        def turn(obj: dict[str, Any], delete: bool = False) -> Any:
            marked = dict(marked_deleting(obj, delete))  # as the controller hands a deleted object on
            assert str((scope.get("spec") or {}).get("provider") or "") == name
            return provider_outcome("vpcpeering", Turn(
                kube=None, obj=marked, scope=scope, settings=settings.current(),  # type: ignore[arg-type]
                seen=Seen(marked, scope, True, local, remote)), delete)

        yield turn
    finally:
        settings.override(None)
