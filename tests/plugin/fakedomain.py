"""A fake domain, registered as a plug-in the way a real one is: one :class:`workers.domains.Domain`
(:data:`DOMAIN`) naming this module as its controllers, watches, webhooks and local part.

Its controller ``fake-echo`` records every reconcile in Redis (``fake:reconciled``, the key's name),
so a worker process that found the domain through its entry point shows it.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from kube import resources
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Controller, Key, Result, registry
from workers.domains import Command, Domain, Local, Row

CONTROLLER = "fake-echo"
QUEUE = "fake"

DOMAIN = Domain(name="fake", controllers=(__name__,), watches=(__name__,), webhooks=(__name__,), queues=(QUEUE,),
                local=f"{__name__}:FakeLocal", examples=("examples/fake-not-here",),
                commands=(Command("fakes", f"{__name__}:render", "Fakes -> what the fake controller writes."),
                          Command("fake-serve", f"{__name__}:serve", "Run the fake process.", group="", process=True),
                          Command("missing", "tests.plugin.not_here:render", "A module not installed.")))


def render(name: str = typer.Argument(..., help="the fake's name")) -> None:
    """``reconcilery render fakes NAME``: echoes what the fake controller would write."""
    typer.echo(f"fake {name}: reconciled")


def serve() -> None:
    """``reconcilery fake-serve``: a process command (its settings are validated first)."""
    typer.echo("fake serving")


def reconcile(key: Key) -> Result:
    import redis

    redis.Redis.from_url(os.environ["RECONCILERY_REDIS_URL"]).rpush("fake:reconciled", key.name)
    return Result.done()


registry.register(Controller(CONTROLLER, QUEUE, reconcile))


def _map(event: WatchEvent, _stores: Any) -> list[tuple[str, Key]]:
    meta = event.object.get("metadata") or {}
    return [(CONTROLLER, Key(event.cluster, str(meta.get("namespace") or ""), str(meta.get("name"))))]


REGISTRATIONS = [WatchRegistration("fake-configmaps", resources.CONFIGMAP, None, None, _map, (CONTROLLER,))]


class FakeListener:
    """A webhook listener that serves nothing."""

    name = "fake-listener"

    def __init__(self, host: str) -> None:
        self.host = host

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


def _build(**options: Any) -> FakeListener:
    return FakeListener(str(options.get("host", "")))


def register_listener() -> None:
    """Register :class:`FakeListener` with :mod:`webhooks` (as importing a domain's webhook module does)."""
    from webhooks import register

    register(FakeListener.name, _build)


register_listener()


class FakeLocal(Local):
    """Records the hooks ``up`` calls; one summary row."""

    always_busy = (CONTROLLER,)

    def start(self) -> None:
        self.run.endpoints["fake"] = "started"

    def rows(self) -> list[Row]:
        return [("Fake", "default/one", "Ready", "from the fake domain")]

    def hints(self) -> list[str]:
        return ["fake hint"]


def registrations() -> list[WatchRegistration]:
    """The fake domain's watches."""
    return REGISTRATIONS
