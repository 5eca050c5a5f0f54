"""The host index of the VirtualService cache (pure)."""

from __future__ import annotations

from typing import Any

from tasks.apigateway.cache import HostIndex, enabled, host_label, ready_timeout


def vs(name: str, *hosts: str, namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"hosts": list(hosts)}}


def test_host_label_is_the_first_dns_label() -> None:
    assert host_label("a.b.c") == "a" and host_label("httpbin") == "httpbin" and host_label("*.x.y") == "*"


def test_index_follows_adds_changes_and_deletes() -> None:
    index = HostIndex()
    index.update("ADDED", vs("one", "a.example.com", "b.example.com"), None)
    index.update("ADDED", vs("two", "a.other.org"), None)
    assert index.keys_for(["a"]) == {("ns", "one"), ("ns", "two")}
    index.update("MODIFIED", vs("one", "c.example.com"), vs("one", "a.example.com", "b.example.com"))
    assert index.keys_for(["a", "b"]) == {("ns", "two")} and index.keys_for(["c"]) == {("ns", "one")}
    index.update("DELETED", vs("two", "a.other.org"), vs("two", "a.other.org"))
    assert index.keys_for(["a"]) == set()
    index.update("ADDED", {"metadata": {"name": "bad", "namespace": "ns"}, "spec": {"hosts": "x"}}, None)
    assert index.keys_for(["x"]) == set()


def test_settings() -> None:
    assert enabled({}) and not enabled({"RECONCILERY_APIRULE_VS_CACHE": "0"})
    assert ready_timeout({}) == 5.0 and ready_timeout({"RECONCILERY_APIRULE_VS_CACHE_READY_SECONDS": "1"}) == 1.0
