"""Property: against the stand-in, any current server set converges to any desired set in one sync."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube.toolkit import execute
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.diff import diff
from tasks.nginx.plan import sync_outcome
from tasks.nginx.plus_client import PlusClient
from tasks.nginx.translate import UpstreamRef
from tests.unit.nginx.test_diff import ADDRESSES, CURRENT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def standin() -> Iterator[NginxPlusStandIn]:
    plus = NginxPlusStandIn().start()
    try:
        yield plus
    finally:
        plus.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(protocol=st.sampled_from(["http", "stream"]), current=CURRENT, desired=st.lists(ADDRESSES, max_size=8))
def test_one_sync_converges_on_the_standin(standin: NginxPlusStandIn, protocol: str,
                                           current: list[tuple[str, dict[str, Any]]], desired: list[str]) -> None:
    servers = []
    for address, params in current:
        if protocol == "stream":
            params = {k: v for k, v in params.items() if k not in ("route", "drain")}
        servers.append({"server": address, **params})
    standin.state.declare(protocol, "u", servers=servers)
    client = PlusClient(standin.url, api_version=9)
    changes = diff(protocol, client.list_servers(protocol, "u"), desired)
    done = execute(sync_outcome(standin.url, UpstreamRef(protocol, "u"), changes), clients={"": client})
    assert done.outcome.error is None and done.refused is None
    after = client.list_servers(protocol, "u")
    assert sorted(s["server"] for s in after) == sorted(set(desired))
    assert not diff(protocol, after, desired)
