"""Fixtures of the NGINX edge integration tests: NGINX Plus API stand-ins, stopped at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.plus_client import forget_versions

UPSTREAMS = {"http_upstreams": ["web", "nginx-lb-http", "nginx-lb-https"], "stream_upstreams": ["db", "nginx-lb-tcp"]}


@pytest.fixture
def plus_factory() -> Iterator[Callable[..., NginxPlusStandIn]]:
    """``plus_factory(**options) -> started NginxPlusStandIn``; every one is stopped at teardown."""
    started: list[NginxPlusStandIn] = []
    forget_versions()

    def make(**options: object) -> NginxPlusStandIn:
        merged = {**UPSTREAMS, **options}
        standin = NginxPlusStandIn(**merged).start()  # type: ignore[arg-type]
        started.append(standin)
        return standin

    try:
        yield make
    finally:
        for standin in started:
            standin.stop()
        forget_versions()


@pytest.fixture
def plus(plus_factory: Callable[..., NginxPlusStandIn]) -> NginxPlusStandIn:
    """One running stand-in with the upstreams of :data:`UPSTREAMS`."""
    return plus_factory()
