"""The host index of the occupied-host check over the VirtualService informer store (pure)."""

from __future__ import annotations

from typing import Any

from informers.store import Store
from tasks.apigateway.cache import VirtualServiceCache, enabled, host_label, host_labels


def vs(name: str, *hosts: str, namespace: str = "ns", rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv},
            "spec": {"hosts": list(hosts)}}


def names(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def test_host_label_is_the_first_dns_label() -> None:
    assert host_label("a.b.c") == "a" and host_label("httpbin") == "httpbin" and host_label("*.x.y") == "*"
    assert host_labels(vs("x", "a.b", "c.d", "a.e")) == {"a", "c"}
    assert host_labels({"spec": {"hosts": "x"}}) == set()


def test_index_follows_adds_changes_deletes_and_relists() -> None:
    store = Store()
    store.replace([vs("pre", "p.example.com")], "1")
    cache = VirtualServiceCache(store)  # built over what the store holds already
    assert names(cache.with_hosts(["p.x"])) == {"pre"}
    store.apply("ADDED", vs("one", "a.example.com", "b.example.com", rv="2"))
    store.apply("ADDED", vs("two", "a.other.org", rv="3"))
    assert names(cache.with_hosts(["a.z"])) == {"one", "two"}
    store.apply("MODIFIED", vs("one", "c.example.com", rv="4"))
    assert names(cache.with_hosts(["a.z", "b.z"])) == {"two"} and names(cache.with_hosts(["c"])) == {"one"}
    store.apply("DELETED", vs("two", "a.other.org", rv="5"))
    assert cache.with_hosts(["a"]) == []
    store.apply("ADDED", {"metadata": {"name": "bad", "namespace": "ns", "resourceVersion": "6"},
                          "spec": {"hosts": "x"}})
    assert cache.with_hosts(["x"]) == []
    store.replace([vs("fresh", "q.example.com", rv="9")], "9")
    assert cache.with_hosts(["c"]) == [] and names(cache.with_hosts(["q"])) == {"fresh"}
    assert VirtualServiceCache(store).with_hosts(["q"])  # a second view shares the index


def test_settings() -> None:
    assert enabled({}) and not enabled({"RECONCILERY_APIRULE_VS_CACHE": "0"})
    assert enabled({"RECONCILERY_INFORMERS": "0"})  # its own switch
