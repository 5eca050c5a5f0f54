"""The store's API semantics without HTTP (kubedev.store): metadata, conflicts, status, finalizers, log."""

from __future__ import annotations

import pytest

from kubedev.errors import ApiError
from kubedev.store import Store, StoreEvent

CRD = {"metadata": {"name": "widgets.example.com"}, "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}},
                 {"name": "v2", "served": True, "storage": False}]}}


@pytest.fixture
def store() -> Store:
    return Store(event_log_size=50)


def rt(store: Store, group: str, version: str, plural: str):
    found = store.registry.lookup(group, version, plural)
    assert found is not None, plural
    return found


def cm(name: str = "c", **data: str) -> dict:
    return {"metadata": {"name": name}, "data": data}


def code_of(exc: pytest.ExceptionInfo[ApiError]) -> tuple[int, str]:
    return exc.value.code, exc.value.reason


def test_create_sets_server_metadata_and_global_rv(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    first = store.create(cms, "default", cm("a"))
    second = store.create(cms, "default", cm("b"))
    meta = first["metadata"]
    assert meta["namespace"] == "default" and meta["generation"] == 1 and meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(second["metadata"]["resourceVersion"]) == int(meta["resourceVersion"]) + 1
    assert store.resource_version == second["metadata"]["resourceVersion"]
    assert first["kind"] == "ConfigMap" and first["apiVersion"] == "v1"


@pytest.mark.parametrize(("body", "namespace", "expected"), [
    (cm("dup"), "default", (409, "AlreadyExists")),
    ({"metadata": {}}, "default", (422, "Invalid")),
    (cm("x"), "missing", (404, "NotFound")),
    (cm("Bad_Name"), "default", (422, "Invalid")),
])
def test_create_errors(store: Store, body: dict, namespace: str, expected: tuple[int, str]) -> None:
    cms = rt(store, "", "v1", "configmaps")
    store.create(cms, "default", cm("dup"))
    with pytest.raises(ApiError) as exc:
        store.create(cms, namespace, body)
    assert code_of(exc) == expected


def test_generate_name(store: Store) -> None:
    obj = store.create(rt(store, "", "v1", "configmaps"), "default", {"metadata": {"generateName": "gen-"}})
    name = obj["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5


def test_replace_conflicts_on_stale_rv_and_is_unconditional_without(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    old = store.create(cms, "default", cm("c", a="1"))
    new = store.replace(cms, "default", "c", {**cm("c", a="2"), "metadata": dict(old["metadata"])})
    with pytest.raises(ApiError) as exc:
        store.replace(cms, "default", "c", {**cm("c", a="3"), "metadata": dict(old["metadata"])})
    assert code_of(exc) == (409, "Conflict")
    assert 'Operation cannot be fulfilled on configmaps "c": the object has been modified' in exc.value.message
    latest = store.replace(cms, "default", "c", cm("c", a="4"))
    assert latest["data"] == {"a": "4"} and latest["metadata"]["uid"] == new["metadata"]["uid"]


def test_noop_update_keeps_rv_and_emits_nothing(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    obj = store.create(cms, "default", cm("c", a="1"))
    events: list[StoreEvent] = []
    store.subscribe(cms.storage_key, events.append)
    same, _ = store.patch(cms, "default", "c", "merge", {"data": {"a": "1"}})
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"] and events == []


def test_status_subresource_and_generation(store: Store) -> None:
    store.create(rt(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    widgets = rt(store, "example.com", "v1", "widgets")
    created = store.create(widgets, "default", {"metadata": {"name": "w"}, "spec": {"size": 1},
                                                "status": {"phase": "ignored"}})
    assert "status" not in created
    with_status = store.replace(widgets, "default", "w", {**created, "status": {"phase": "Ready"},
                                                          "spec": {"size": 9}}, subresource="status")
    assert with_status["status"] == {"phase": "Ready"} and with_status["spec"] == {"size": 1}
    assert with_status["metadata"]["generation"] == 1
    main, _ = store.patch(widgets, "default", "w", "merge", {"spec": {"size": 2}, "status": {"phase": "X"}})
    assert main["status"] == {"phase": "Ready"} and main["metadata"]["generation"] == 2
    labelled, _ = store.patch(widgets, "default", "w", "merge", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2
    # read through another served version: same object, that version's apiVersion
    assert store.get(rt(store, "example.com", "v2", "widgets"), "default", "w")["metadata"]["uid"] == \
        created["metadata"]["uid"]


def test_strategic_patch_on_custom_resource_is_415(store: Store) -> None:
    store.create(rt(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    widgets = rt(store, "example.com", "v1", "widgets")
    store.create(widgets, "default", {"metadata": {"name": "w"}})
    with pytest.raises(ApiError) as exc:
        store.patch(widgets, "default", "w", "strategic", {"spec": {}})
    assert exc.value.code == 415


def test_finalizers_hold_deletion(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    store.create(cms, "default", {"metadata": {"name": "c", "finalizers": ["x/y"]}})
    events: list[StoreEvent] = []
    store.subscribe(cms.storage_key, events.append)
    marked = store.delete(cms, "default", "c")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked["metadata"]["generation"] == 2
    with pytest.raises(ApiError) as exc:
        store.patch(cms, "default", "c", "merge", {"metadata": {"finalizers": ["x/y", "new/one"]}})
    assert exc.value.code == 422
    store.patch(cms, "default", "c", "merge", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiError):
        store.get(cms, "default", "c")
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert int(events[1].obj["metadata"]["resourceVersion"]) > int(events[0].obj["metadata"]["resourceVersion"])


def test_namespace_delete_cascades_and_waits_for_finalizers(store: Store) -> None:
    nss, cms = rt(store, "", "v1", "namespaces"), rt(store, "", "v1", "configmaps")
    store.create(nss, None, {"metadata": {"name": "n1"}})
    store.create(cms, "n1", cm("plain"))
    store.create(cms, "n1", {"metadata": {"name": "held", "finalizers": ["x/y"]}})
    terminating = store.delete(nss, None, "n1")
    assert terminating["status"]["phase"] == "Terminating"
    assert [o["metadata"]["name"] for o in store.list(cms, "n1").items] == ["held"]
    with pytest.raises(ApiError) as exc:
        store.create(cms, "n1", cm("late"))
    assert exc.value.code == 403
    store.patch(cms, "n1", "held", "merge", {"metadata": {"finalizers": []}})
    assert not store.namespace_exists("n1")


def test_crd_serves_and_deletion_removes_objects(store: Store) -> None:
    crds = rt(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    crd = store.create(crds, None, CRD)
    assert {c["type"] for c in crd["status"]["conditions"]} == {"Established", "NamesAccepted"}
    widgets = rt(store, "example.com", "v1", "widgets")
    store.create(widgets, "default", {"metadata": {"name": "w"}})
    store.delete(crds, None, "widgets.example.com")
    assert store.registry.lookup("example.com", "v1", "widgets") is None
    store.create(crds, None, CRD)
    assert store.list(rt(store, "example.com", "v1", "widgets"), None).items == []


def test_owner_references_garbage_collect(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    owner = store.create(cms, "default", cm("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    store.create(cms, "default", {"metadata": {"name": "child", "ownerReferences": [ref]}})
    store.delete(cms, "default", "owner")
    assert store.list(cms, "default").items == []


def test_list_selectors_and_paging(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    for i in range(5):
        store.create(cms, "default", {"metadata": {"name": f"c{i}", "labels": {"even": str(i % 2 == 0)}}})
    assert [o["metadata"]["name"] for o in store.list(cms, "default", "even=True").items] == ["c0", "c2", "c4"]
    assert next(o["metadata"]["name"] for o in store.list(cms, None, None, "metadata.name!=c0").items) == "c1"
    page = store.list(cms, "default", limit=2)
    assert len(page.items) == 2 and page.remaining == 3
    rest = store.list(cms, "default", continue_token=page.continue_token)
    assert [o["metadata"]["name"] for o in rest.items] == ["c2", "c3", "c4"]
    with pytest.raises(ApiError) as exc:
        store.list(cms, None, None, "spec.nope=1")
    assert exc.value.code == 400


def test_event_log_bounds_and_compaction(store: Store) -> None:
    cms = rt(store, "", "v1", "configmaps")
    start = int(store.resource_version)
    store.create(cms, "default", cm("a"))
    assert [e.type for e in store.events_since(cms.storage_key, start)] == ["ADDED"]
    store.compact()
    with pytest.raises(ApiError) as exc:
        store.events_since(cms.storage_key, start)
    assert (exc.value.code, exc.value.reason) == (410, "Expired")
    for i in range(60):  # overflow the 50-event log
        store.patch(cms, "default", "a", "merge", {"data": {"i": str(i)}})
    with pytest.raises(ApiError):
        store.events_since(cms.storage_key, int(store.resource_version) - 55)
    assert len(store.events_since(cms.storage_key, int(store.resource_version) - 10)) == 10


def test_reset_wipes_objects_and_crds(store: Store) -> None:
    store.create(rt(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    store.create(rt(store, "", "v1", "namespaces"), None, {"metadata": {"name": "n1"}})
    store.reset()
    assert store.registry.lookup("example.com", "v1", "widgets") is None
    assert [n["metadata"]["name"] for n in store.list(rt(store, "", "v1", "namespaces")).items] == [
        "default", "kube-node-lease", "kube-public", "kube-system"]


def test_secret_string_data_is_folded(store: Store) -> None:
    secret = store.create(rt(store, "", "v1", "secrets"), "default",
                          {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    assert secret["data"] == {"k": "dg=="} and "stringData" not in secret and secret["type"] == "Opaque"
