"""APIRule reconciles read from the worker's informers: requests counted at the dev API server.

What the issue's goals mean, one reconcile at a time (``controller.reconcile`` as a worker runs it):
a create makes at most 6 requests, an unchanged resync 0 writes and at most 1 request (the GET of the
APIRule itself), the next reconcile sees the previous one's writes even when the watch lags, a
VirtualService deleted by someone else leaves the store (and is created again), and a watch that
expired (410) relists and catches up.
"""

from __future__ import annotations

from typing import Any

import pytest

from informers import informer as informers
from informers import metrics
from informers.store import Store
from kubedev import DevAPIServer
from tasks.apigateway import controller
from tests.fixtures.devapi import counted
from tests.fixtures.processes import wait_for
from tests.integration.apigateway.conftest import AGW
from workers.controller import Key

pytestmark = pytest.mark.integration

VS = controller.OWNED["VirtualService"]
AP = controller.OWNED["AuthorizationPolicy"]
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def apirule(name: str) -> dict[str, Any]:
    return {"apiVersion": "gateway.kyma-project.io/v2", "kind": "APIRule",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"hosts": [f"{name}.local.kyma.dev"], "gateway": "kyma-system/kyma-gateway",
                     "service": {"name": "httpbin", "port": 8000},
                     "rules": [{"path": "/*", "methods": ["GET"], "noAuth": True}]}}


def reconcile(name: str) -> Any:
    return controller.reconcile(Key("local", "shop", name))


def store_of(agw: AGW, res: Any) -> Store:
    informer = informers.informers_for(agw.kube).find(res, None)
    assert informer is not None and informer.synced()
    return informer.store


@pytest.fixture
def warm(agw: AGW, devapi_clean: DevAPIServer | None) -> DevAPIServer:
    """The informers started and synced by a first reconcile (their initial lists are not counted)."""
    if devapi_clean is None:
        pytest.skip("counts requests at the dev API server")
    agw.create(apirule("warmup"))
    reconcile("warmup")
    assert agw.get("warmup")["status"]["state"] == "Ready"  # type: ignore[index]
    return devapi_clean


def test_a_create_makes_at_most_6_requests_and_an_unchanged_resync_one_read_and_no_write(
        agw: AGW, warm: DevAPIServer) -> None:
    agw.create(apirule("fresh"))
    create = counted(warm, lambda: reconcile("fresh"))
    assert sum(create.values()) <= 6, create
    assert create == {"GET": 1, "PATCH": 2, "POST": 3}  # APIRule; finalizer + status; VS, AP, Event
    assert agw.get("fresh")["status"]["state"] == "Ready"  # type: ignore[index]

    resync = counted(warm, lambda: reconcile("fresh"))
    assert resync == {"GET": 1}, resync
    assert not any(resync.get(v) for v in WRITES)


def test_the_next_reconcile_sees_its_own_writes_while_the_watch_lags(agw: AGW, warm: DevAPIServer,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for res in (VS, AP):  # the watch delivers nothing from now on: only the write-through fills the stores
        store = store_of(agw, res)
        monkeypatch.setattr(store, "apply", lambda type_, obj, store=store: store.get(*_key(obj)))
    agw.create(apirule("mine"))
    reconcile("mine")
    assert len(agw.owned("mine")["VirtualService"]) == 1
    again = counted(warm, lambda: reconcile("mine"))
    assert again == {"GET": 1}, again  # no second generateName create, no update
    assert len(agw.owned("mine")["VirtualService"]) == 1 and len(agw.owned("mine")["AuthorizationPolicy"]) == 1


def test_a_create_by_another_process_not_yet_in_our_store_is_not_made_twice(
        agw: AGW, warm: DevAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for res in (VS, AP):  # our informers see nothing from now on
        store = store_of(agw, res)
        monkeypatch.setattr(store, "apply", lambda type_, obj, store=store: store.get(*_key(obj)))
    agw.create(apirule("elsewhere"))
    other = agw.kube.__class__(agw.kube.api_client, cluster="local")  # "another worker process"
    try:
        apirule_now = agw.get("elsewhere")
        assert apirule_now is not None
        controller.reconcile_object(other, apirule_now)
    finally:
        informers.informers_for(other).stop()
    assert len(agw.owned("elsewhere")["VirtualService"]) == 1
    again = counted(warm, lambda: reconcile("elsewhere"))  # our stores lack both: read again, not created
    assert not again.get("POST") and again.get("LIST", 0) >= 2, again
    owned = agw.owned("elsewhere")
    assert len(owned["VirtualService"]) == 1 and len(owned["AuthorizationPolicy"]) == 1


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def test_a_deleted_virtualservice_leaves_the_store_and_is_created_again(agw: AGW, warm: DevAPIServer) -> None:
    agw.create(apirule("gone"))
    reconcile("gone")
    (vs,) = agw.owned("gone")["VirtualService"]
    store = store_of(agw, VS)
    other = agw.kube.__class__(agw.kube.api_client, cluster="someone-else")  # not our write listener
    other.delete(VS, vs["metadata"]["name"], "shop")
    wait_for(lambda: store.get("shop", vs["metadata"]["name"]) is None, timeout=5, message="deletion seen")
    again = counted(warm, lambda: reconcile("gone"))
    assert again.get("POST") == 1 and len(agw.owned("gone")["VirtualService"]) == 1, again


def test_an_expired_watch_relists_and_catches_up(agw: AGW, warm: DevAPIServer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    informer = informers.informers_for(agw.kube).find(VS, None)
    assert informer is not None
    relists = metrics.WATCH_RELISTS.labels(informer.name)._value.get()
    store = informer.store
    with monkeypatch.context() as m:  # the watch misses an event...
        m.setattr(store, "apply", lambda type_, obj, **_: store.get(*_key(obj)))
        foreign = {"metadata": {"name": "foreign", "namespace": "default"},
                   "spec": {"hosts": ["x.local.kyma.dev"]}}
        other = agw.kube.__class__(agw.kube.api_client, cluster="someone-else")
        other.create(VS, foreign)
        wait_for(lambda: informer.resource_version == other.get(VS, "foreign", "default")["metadata"]  # type: ignore[index]
                 ["resourceVersion"], timeout=5, message="event passed by")
    assert store.get("default", "foreign") is None
    warm.compact()  # ...and the event log is dropped; the watch breaks and resumes from an expired
    with informer._response_lock:  # resourceVersion (older than the log): 410 Gone
        response = informer._response
    assert response is not None
    response.shutdown()
    informer.resource_version = str(int(informer.resource_version) - 1)
    wait_for(lambda: store.get("default", "foreign") is not None, timeout=10, message="relisted")
    assert metrics.WATCH_RELISTS.labels(informer.name)._value.get() == relists + 1
