"""Diff: any current server set converges to the desired set in one sync."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.nginx.diff import ServerChanges, desired_params, diff, diff_known

DEFAULTS_HTTP = {"weight": 1, "max_conns": 0, "max_fails": 1, "fail_timeout": "10s", "slow_start": "0s",
                 "route": "", "backup": False, "down": False}


def srv(id_: int, address: str, **params: Any) -> dict[str, Any]:
    return {"id": id_, "server": address, **DEFAULTS_HTTP, **params}


def test_empty_to_desired_adds_in_address_order() -> None:
    plan = diff("http", [], ["10.0.0.2:80", "10.0.0.1:80"])
    assert [(a.op, a.server) for a in plan.ordered] == [("add", "10.0.0.1:80"), ("add", "10.0.0.2:80")]
    assert plan.adds[0].body == {"server": "10.0.0.1:80", **DEFAULTS_HTTP}


def test_extra_servers_are_deleted_by_id() -> None:
    plan = diff("http", [srv(0, "a:1"), srv(1, "c:1"), srv(2, "d:1")], ["a:1"])
    assert [(a.op, a.server, a.server_id) for a in plan.ordered] == [("delete", "c:1", 1), ("delete", "d:1", 2)]


def test_an_unwanted_server_moves_to_a_missing_address_with_one_patch() -> None:
    """A nodePort change: every server of the upstream moves; one PATCH each instead of a POST and a
    DELETE (half the NGINX Plus requests), with the full body so its parameters converge too."""
    current = [srv(i, f"10.0.0.{i}:30080", weight=2 if i == 0 else 1) for i in range(100)]
    plan = diff("http", current, [f"10.0.0.{i}:30081" for i in range(100)])
    assert plan.summary() == {"add": 0, "delete": 0, "update": 100}
    first = plan.updates[0]
    assert (first.server_id, first.server) == (0, "10.0.0.0:30081")
    assert first.body == {"server": "10.0.0.0:30081", **{k: v for k, v in DEFAULTS_HTTP.items() if k != "backup"},
                          "drain": False}


def test_moves_then_the_rest_is_added_or_deleted() -> None:
    plan = diff("http", [srv(0, "a:1"), srv(1, "c:1")], ["a:1", "b:1", "d:1"])
    assert [(a.op, a.server, a.server_id) for a in plan.ordered] == [("add", "d:1", None), ("update", "b:1", 1)]
    plan = diff("http", [srv(0, "c:1"), srv(1, "d:1")], ["b:1"])
    assert [(a.op, a.server, a.server_id) for a in plan.ordered] == [("delete", "d:1", 1), ("update", "b:1", 0)]


def test_backup_and_resolved_servers_are_not_moved() -> None:
    plan = diff("http", [srv(0, "c:1", backup=True), srv(1, "d:1", service="http"), srv(2, "e:1", parent="x")],
                ["b:1"])
    assert [(a.op, a.server_id) for a in plan.ordered] == [("add", None), ("delete", 0), ("delete", 1), ("delete", 2)]


def test_converged_upstream_needs_nothing() -> None:
    assert not diff("http", [srv(0, "a:1"), srv(4, "b:1")], ["b:1", "a:1"])
    assert not diff("stream", [{k: v for k, v in srv(0, "a:1").items() if k != "route"}], ["a:1"])


def test_drifted_parameters_are_patched_with_a_full_body() -> None:
    plan = diff("http", [srv(3, "a:1", weight=5, down=True, drain=True)], ["a:1"])
    assert [(a.op, a.server_id) for a in plan.ordered] == [("update", 3)]
    body = plan.updates[0].body
    assert body is not None and body["weight"] == 1 and body["down"] is False and body["drain"] is False
    assert body["server"] == "a:1" and "backup" not in body


def test_backup_cannot_be_patched_so_the_server_is_replaced() -> None:
    plan = diff("http", [srv(0, "a:1", backup=True)], ["a:1"])
    assert [(a.op, a.server) for a in plan.ordered] == [("add", "a:1"), ("delete", "a:1")]


def test_duplicates_keep_the_lowest_id() -> None:
    plan = diff("http", [srv(7, "a:1"), srv(2, "a:1"), srv(5, "a:1")], ["a:1"])
    assert [(a.op, a.server_id) for a in plan.ordered] == [("delete", 5), ("delete", 7)]


def test_empty_desired_empties_the_upstream() -> None:
    plan = diff("http", [srv(0, "a:1"), srv(1, "b:1")], [])
    assert plan.summary() == {"add": 0, "delete": 2, "update": 0}


# -- property: one sync converges -------------------------------------------------------------------

ADDRESSES = st.sampled_from([f"10.0.0.{i}:{p}" for i in range(1, 6) for p in (80, 30080)])
CURRENT = st.lists(st.tuples(ADDRESSES, st.fixed_dictionaries({}, optional={
    "weight": st.integers(1, 3), "max_fails": st.integers(0, 2), "down": st.booleans(), "backup": st.booleans(),
    "drain": st.booleans(), "fail_timeout": st.sampled_from(["10s", "5s"]), "route": st.sampled_from(["", "r"]),
})), max_size=12)


def apply_to_model(protocol: str, model: dict[int, dict[str, Any]], plan: ServerChanges) -> dict[int, dict[str, Any]]:
    """What an NGINX Plus upstream does with the plan's requests (ids never reused)."""
    model = {k: dict(v) for k, v in model.items()}
    next_id = max(model, default=-1) + 1
    for action in plan.ordered:
        if action.op == "add":
            assert action.body is not None
            model[next_id] = {"id": next_id, **(desired_params(protocol) if protocol == "http" else {}),
                              **action.body}
            next_id += 1
        elif action.op == "delete":
            assert action.server_id in model, "a delete names a server that exists"
            del model[action.server_id]
        else:
            assert action.server_id in model and action.body is not None
            server = model[action.server_id]
            assert not server.get("backup") or action.body["server"] == server["server"], "a backup never moves"
            server.update(action.body)
    return model


@settings(max_examples=300, deadline=None)
@given(protocol=st.sampled_from(["http", "stream"]), current=CURRENT, desired=st.lists(ADDRESSES, max_size=8))
def test_any_current_set_converges_to_any_desired_set_in_one_sync(
        protocol: str, current: list[tuple[str, dict[str, Any]]], desired: list[str]) -> None:
    model = {i: {"id": i, "server": address, **DEFAULTS_HTTP, **params} for i, (address, params) in
             enumerate(current)}
    if protocol == "stream":
        for server in model.values():
            server.pop("route"), server.pop("drain", None)
    after = apply_to_model(protocol, model, diff(protocol, list(model.values()), desired))
    assert sorted(s["server"] for s in after.values()) == sorted(set(desired))
    assert not diff(protocol, list(after.values()), desired), "a second sync has nothing to do"


@pytest.mark.parametrize("protocol", ["http", "stream"])
def test_diff_known_is_diff_of_the_view_s_servers(protocol: str) -> None:
    """Views of up to 6 servers over 5 addresses (duplicates included) against desired sets: the fast
    path gives exactly what diff gives for the same servers as objects."""
    rng = random.Random(31)
    addresses = [f"10.0.0.{n}:80" for n in range(5)]
    for _ in range(400):
        view = {rng.randrange(1, 50): rng.choice(addresses) for _ in range(rng.randrange(0, 7))}
        desired = rng.sample(addresses, rng.randrange(0, 6))
        objects = [{"id": i, "server": a, **desired_params(protocol)} for i, a in view.items()]
        assert diff_known(protocol, view, desired) == diff(protocol, objects, desired), (view, desired)
