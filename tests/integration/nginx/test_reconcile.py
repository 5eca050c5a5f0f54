"""The reconcile driven directly, with the dev API server and two NGINX Plus stand-in hosts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kubernetes.client import ApiClient
from prometheus_client import REGISTRY

from kube import Kube, resources
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx import controller, synclock
from tasks.nginx.controller import desired_keys, host_key, key_for, reconcile, sync_upstream
from tasks.nginx.synclock import SYNC_LOCKS
from tasks.nginx.translate import UpstreamRef
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

WEB, WEBS, TCP = UpstreamRef("http", "nginx-lb-http"), UpstreamRef("http", "nginx-lb-https"), UpstreamRef(
    "stream", "nginx-lb-tcp")


@pytest.fixture
def kube(kube_client: ApiClient) -> Kube:
    k = Kube(kube_client)
    for ns in ("nkl", "nginx-ingress"):
        k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
    return k


@pytest.fixture
def hosts(plus_factory: Callable[..., NginxPlusStandIn]) -> list[NginxPlusStandIn]:
    return [plus_factory(), plus_factory()]


def configmap(kube: Kube, hosts: Iterable[NginxPlusStandIn], **extra: str) -> None:
    data = {"nginx-hosts": ", ".join(h.url for h in hosts), **extra}
    if kube.get(resources.CONFIGMAP, "nkl-config", "nkl") is None:
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "nkl-config", "namespace": "nkl"}, "data": data})
    else:
        kube.patch(resources.CONFIGMAP, "nkl-config", {"data": data}, namespace="nkl")


def node(kube: Kube, name: str, ip: str, control_plane: bool = False) -> None:
    labels = {"node-role.kubernetes.io/control-plane": ""} if control_plane else {}
    kube.create(resources.NODE, {"metadata": {"name": name, "labels": labels},
                                 "status": {"addresses": [{"type": "InternalIP", "address": ip}]}})


def service(kube: Kube, ports: list[tuple[str, int]], annotations: dict[str, str] | None = None,
            name: str = "nginx-ingress") -> None:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "nginx-ingress", "annotations": annotations or {}},
        "spec": {"type": "NodePort", "selector": {"app": "nginx-ingress"},
                 "ports": [{"name": n, "port": 80 + i, "nodePort": p, "protocol": "TCP"}
                           for i, (n, p) in enumerate(ports)]}}
    if kube.get(resources.SERVICE, name, "nginx-ingress") is None:
        kube.create(resources.SERVICE, body)
    else:
        current = kube.get(resources.SERVICE, name, "nginx-ingress")
        assert current is not None
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        kube.replace(resources.SERVICE, body)


def sync(kube: Kube, hosts: list[NginxPlusStandIn], *also: UpstreamRef) -> list[ResultKind]:
    """Reconcile every key the watchers would enqueue: the desired ones plus ``also`` on every host."""
    keys = set(desired_keys(kube)) | {key_for(h.url, ref) for h in hosts for ref in also}
    return [reconcile(key, kube=kube).outcome for key in sorted(keys)]


def addresses(hosts: list[NginxPlusStandIn], ref: UpstreamRef) -> list[list[str]]:
    return [h.addresses(ref.protocol, ref.name) for h in hosts]


def test_create_scale_change_and_delete(kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts)
    node(kube, "cp", "10.0.0.10", control_plane=True)
    node(kube, "w0", "10.0.1.11")
    node(kube, "w1", "10.0.1.12")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432), ("metrics", 30913)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})

    # create: both hosts get the worker nodes, not the control plane
    assert set(sync(kube, hosts)) == {ResultKind.SUCCESS}
    assert addresses(hosts, WEB) == [["10.0.1.11:30080", "10.0.1.12:30080"]] * 2
    assert addresses(hosts, TCP) == [["10.0.1.11:30432", "10.0.1.12:30432"]] * 2

    # a converged sync is one GET per (host, upstream) and nothing else; right after a sync that left
    # the servers it made known (tasks/nginx/synclock.py), not even that
    for h in hosts:
        h.reset_requests()
    report = sync_upstream(kube, hosts[0].url, WEB)
    assert (report.requests, bool(report.changes)) == (0, False)
    forget_view(hosts[0].url, WEB)
    report = sync_upstream(kube, hosts[0].url, WEB)
    assert (report.requests, bool(report.changes)) == (1, False)

    # scale nodes: one joins, one leaves
    node(kube, "w2", "10.0.1.13")
    kube.delete(resources.NODE, "w0")
    sync(kube, hosts)
    assert addresses(hosts, WEB) == [["10.0.1.12:30080", "10.0.1.13:30080"]] * 2

    # a node changes address
    kube.patch_status(resources.NODE, "w1", {"addresses": [{"type": "InternalIP", "address": "10.0.1.99"}]})
    sync(kube, hosts)
    assert addresses(hosts, WEB) == [["10.0.1.13:30080", "10.0.1.99:30080"]] * 2

    # change ports: new nodePort, a port renamed to another upstream (the old one is emptied)
    service(kube, [("nkl-nginx-lb-http", 31080), ("nkl-nginx-lb-https", 30443)])
    sync(kube, hosts, TCP)
    assert addresses(hosts, WEB) == [["10.0.1.13:31080", "10.0.1.99:31080"]] * 2
    assert addresses(hosts, WEBS) == [["10.0.1.13:30443", "10.0.1.99:30443"]] * 2
    assert addresses(hosts, TCP) == [[], []]

    # annotation: nginx-lb-https becomes a stream upstream -> the http one is emptied
    hosts[0].state.declare("stream", "nginx-lb-https")
    hosts[1].state.declare("stream", "nginx-lb-https")
    service(kube, [("nkl-nginx-lb-http", 31080), ("nkl-nginx-lb-https", 30443)],
            {"nginxinc.io/nkl-nginx-lb-https": "stream"})
    sync(kube, hosts, WEBS)
    assert addresses(hosts, WEBS) == [[], []]
    assert addresses(hosts, UpstreamRef("stream", "nginx-lb-https")) == [["10.0.1.13:30443", "10.0.1.99:30443"]] * 2

    # delete the Service: exactly its servers go, on every host
    kube.delete(resources.SERVICE, "nginx-ingress", "nginx-ingress")
    sync(kube, hosts, WEB, UpstreamRef("stream", "nginx-lb-https"))
    assert addresses(hosts, WEB) == [[], []]
    assert addresses(hosts, UpstreamRef("stream", "nginx-lb-https")) == [[], []]


def test_two_services_share_an_upstream_and_deleting_one_keeps_the_other(kube: Kube,
                                                                         hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts)
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080)], name="a")
    service(kube, [("nkl-nginx-lb-http", 30081)], name="b")
    sync(kube, hosts)
    assert addresses(hosts, WEB) == [["10.0.1.11:30080", "10.0.1.11:30081"]] * 2
    kube.delete(resources.SERVICE, "a", "nginx-ingress")
    sync(kube, hosts, WEB)
    assert addresses(hosts, WEB) == [["10.0.1.11:30081"]] * 2


def test_drifted_and_foreign_servers_are_repaired(kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080)])
    plus = hosts[0]
    plus.state.declare("http", "nginx-lb-http", servers=[{"server": "10.9.9.9:80"},
                                                         {"server": "10.0.1.11:30080", "weight": 5, "down": True}])
    assert set(sync(kube, hosts[:1])) == {ResultKind.SUCCESS}
    assert plus.servers("http", "nginx-lb-http") == [
        {"id": 1, "server": "10.0.1.11:30080", "weight": 1, "max_conns": 0, "max_fails": 1, "fail_timeout": "10s",
         "slow_start": "0s", "route": "", "backup": False, "down": False, "drain": False}]
    plus.reset_requests()
    forget_view(plus.url, UpstreamRef("http", "nginx-lb-http"))  # read the servers again
    sync(kube, hosts[:1])
    assert plus.request_count == 1  # converged: no PATCH on every sync (the original's bug)


def forget_view(host: str, upstream: UpstreamRef) -> None:
    """Drop the servers the last sync of ``upstream`` left known: an acquire takes them."""
    token, _ = SYNC_LOCKS.acquire(host, upstream) or ("", 0.0)
    assert SYNC_LOCKS.release(host, upstream, token)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_host_down_fails_then_converges_when_back(kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts)
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-https", 30443)])
    down, up = hosts
    down.stop()
    unreachable = metric("reconcilery_nginx_plus_errors_total", host=down.url, code="unreachable")
    timed = metric("reconcilery_nginx_sync_seconds_count", host=up.url)
    results = {(k.namespace, k.name): reconcile(k, kube=kube) for k in desired_keys(kube)}
    assert results[(up.url, str(WEB))].outcome is ResultKind.SUCCESS
    assert results[(down.url, str(WEB))].outcome is ResultKind.ERROR
    assert "ConnectionError" in results[(down.url, str(WEB))].message
    assert up.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080"]
    assert metric("reconcilery_nginx_plus_errors_total", host=down.url, code="unreachable") == unreachable + 2
    assert metric("reconcilery_nginx_sync_seconds_count", host=up.url) == timed + 2
    assert metric("reconcilery_nginx_host_in_sync", host=up.url) == 1
    assert metric("reconcilery_nginx_host_in_sync", host=down.url) == 0
    down.start()
    assert reconcile(key_for(down.url, WEB), kube=kube).outcome is ResultKind.SUCCESS
    assert down.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080"]
    assert metric("reconcilery_nginx_host_in_sync", host=down.url) == 0  # https still failed last time
    assert reconcile(key_for(down.url, WEBS), kube=kube).outcome is ResultKind.SUCCESS
    assert metric("reconcilery_nginx_host_in_sync", host=down.url) == 1


def test_a_host_added_to_the_configmap_gets_the_full_state(kube: Kube, hosts: list[NginxPlusStandIn],
                                                          plus_factory: Callable[..., NginxPlusStandIn]) -> None:
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})
    sync(kube, hosts)
    assert addresses(hosts, WEB) == [["10.0.1.11:30080"], []]  # the second host is not configured yet
    configmap(kube, hosts)
    sync(kube, hosts)
    assert addresses(hosts, WEB) == [["10.0.1.11:30080"]] * 2
    assert addresses(hosts, TCP) == [["10.0.1.11:30432"]] * 2


def test_a_host_key_syncs_every_upstream_on_its_host_and_stops_at_a_host_down(
        kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts)
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})
    sync(kube, hosts)
    node(kube, "w1", "10.0.1.12")
    service(kube, [("nkl-nginx-lb-http", 30080)], {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})  # tcp port gone
    first, second = hosts
    sent = first.request_count
    assert reconcile(host_key(first.url), kube=kube).outcome is ResultKind.SUCCESS
    assert first.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080", "10.0.1.12:30080"]
    assert first.addresses("stream", "nginx-lb-tcp") == []  # recorded, named by no Service: emptied
    # per upstream the one change; a GET only for the emptied one (its servers are known to the edge
    # only while a Service names it: tasks/nginx/synclock.py)
    assert first.request_count - sent == 3
    assert second.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080"]  # another host's key
    second.stop()
    unreachable = metric("reconcilery_nginx_plus_errors_total", host=second.url, code="unreachable")
    result = reconcile(host_key(second.url), kube=kube)
    assert result.outcome is ResultKind.ERROR and "1 of 1 upstreams" in result.message
    assert metric("reconcilery_nginx_plus_errors_total", host=second.url, code="unreachable") == unreachable + 1
    assert metric("reconcilery_nginx_host_in_sync", host=second.url) == 0


def test_a_held_upstream_is_left_to_its_holder_and_a_read_older_than_its_last_sync_is_read_again(
        kube: Kube, hosts: list[NginxPlusStandIn], monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard key and an upstream's own key cover one upstream: one sync at a time (else both add a
    missing server and NGINX Plus holds it twice), and none writes what it read before the other's sync."""
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080), ("nkl-nginx-lb-tcp", 30432)],
            {"nginxinc.io/nkl-nginx-lb-tcp": "stream"})
    sync(kube, hosts[:1])
    first = hosts[0]
    node(kube, "w1", "10.0.1.12")
    held = SYNC_LOCKS.acquire(first.url, WEB)
    assert held is not None and SYNC_LOCKS.acquire(first.url, WEB) is None
    sent = first.request_count
    result = reconcile(key_for(first.url, WEB), kube=kube)
    assert result.outcome is ResultKind.REQUEUE_AFTER and first.request_count == sent  # nothing sent
    monkeypatch.setattr(controller, "BUSY_WAIT", 0.2)
    result = reconcile(host_key(first.url), kube=kube)  # syncs the tcp upstream, leaves http to its holder
    assert result.outcome is ResultKind.REQUEUE_AFTER
    assert first.addresses("stream", "nginx-lb-tcp") == ["10.0.1.11:30432", "10.0.1.12:30432"]
    assert first.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080"]
    SYNC_LOCKS.release(first.url, WEB, held[0])
    # a sync that read the cluster before the upstream's last sync reads again before it writes
    stale = controller.STATE_READS.get(kube, controller.edge_names(), time.monotonic())
    stamp = SYNC_LOCKS.now()
    node(kube, "w2", "10.0.1.13")
    assert reconcile(key_for(first.url, WEB), kube=kube).outcome is ResultKind.SUCCESS
    assert len(first.addresses("http", "nginx-lb-http")) == 3
    token, synced = SYNC_LOCKS.acquire(first.url, WEB) or ("", 0.0)
    assert synced > stamp
    SYNC_LOCKS.release(first.url, WEB, token)
    reads = controller.STATE_READS.reads
    monkeypatch.setattr(controller.SYNC_LOCKS, "now", lambda: stamp)  # as if it had read with ``stale``
    assert controller.sync_upstream(kube, first.url, WEB).stopped is None
    assert controller.STATE_READS.reads == reads + 2 and len(stale.nodes) == 2  # its read, then again
    assert len(first.addresses("http", "nginx-lb-http")) == 3


def test_missing_upstream_is_an_error_with_a_metric(kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-not-declared", 30080)])
    key = key_for(hosts[0].url, UpstreamRef("http", "not-declared"))
    answered = metric("reconcilery_nginx_plus_errors_total", host=hosts[0].url, code="404")
    result = reconcile(key, kube=kube)
    assert result.outcome is ResultKind.ERROR and "missing" in result.message
    assert metric("reconcilery_nginx_plus_errors_total", host=hosts[0].url, code="404") == answered + 1
    assert metric("reconcilery_nginx_upstream_missing", host=hosts[0].url, upstream="http:not-declared") == 1
    hosts[0].state.declare("http", "not-declared")
    assert reconcile(key, kube=kube).outcome is ResultKind.SUCCESS
    assert REGISTRY.get_sample_value("reconcilery_nginx_upstream_missing",
                                     {"host": hosts[0].url, "upstream": "http:not-declared"}) is None  # no series


def test_invalid_settings_are_terminal_and_unknown_hosts_are_left_alone(kube: Kube,
                                                                        hosts: list[NginxPlusStandIn]) -> None:
    configmap(kube, hosts[:1], **{"tls-mode": "bogus"})
    service(kube, [("nkl-nginx-lb-http", 30080)])
    result = reconcile(key_for(hosts[0].url, WEB), kube=kube)
    assert result.outcome is ResultKind.TERMINAL and "tls-mode: 'bogus'" in result.message
    configmap(kube, hosts[:1], **{"tls-mode": "no-tls"})
    assert reconcile(key_for(hosts[1].url, WEB), kube=kube).outcome is ResultKind.SUCCESS
    assert hosts[1].request_count == 0
    assert reconcile(Key("local", hosts[0].url, "bad-key"), kube=kube).outcome is ResultKind.TERMINAL


def test_a_write_made_from_known_servers_that_fails_reads_them_again(kube: Kube, hosts: list[NginxPlusStandIn]) -> None:
    """The servers the last sync left are used instead of a GET; when the host no longer holds one (it was
    restarted, or edited by hand), the write to its id fails and the sync reads and diffs again."""
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    node(kube, "w1", "10.0.1.12")
    service(kube, [("nkl-nginx-lb-http", 30080)])
    sync(kube, hosts[:1])
    plus = hosts[0]
    upstream = plus.state.upstreams[("http", "nginx-lb-http")]
    gone = next(i for i, s in upstream.servers.items() if s["server"] == "10.0.1.12:30080")
    with plus.state.lock:
        del upstream.servers[gone]
        upstream.views.pop(gone, None)
    kube.patch_status(resources.NODE, "w1", {"addresses": [{"type": "InternalIP", "address": "10.0.1.13"}]})
    plus.reset_requests()
    report = sync_upstream(kube, plus.url, WEB)
    assert report.stopped is None and not report.error
    assert [method for method, _ in plus.request_log] == ["PATCH", "GET", "POST"]  # moved from the view: 404
    assert plus.addresses("http", "nginx-lb-http") == ["10.0.1.11:30080", "10.0.1.13:30080"]


def test_a_sync_whose_lock_is_lost_writes_nothing_more(kube: Kube, hosts: list[NginxPlusStandIn],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    configmap(kube, hosts[:1])
    node(kube, "w0", "10.0.1.11")
    service(kube, [("nkl-nginx-lb-http", 30080)])
    sync(kube, hosts[:1])
    node(kube, "w1", "10.0.1.12")

    def lost(self: synclock.Lease, upstream: UpstreamRef) -> None:
        raise synclock.SyncLockLost(f"{upstream}: taken")

    monkeypatch.setattr(synclock.Lease, "check", lost)
    hosts[0].reset_requests()
    with pytest.raises(synclock.SyncLockLost):
        reconcile(key_for(hosts[0].url, WEB), kube=kube)
    assert hosts[0].request_log == []  # the servers were known: no GET, and the POST was fenced
    monkeypatch.undo()
    assert reconcile(key_for(hosts[0].url, WEB), kube=kube).outcome is ResultKind.SUCCESS  # lock released
    assert hosts[0].addresses("http", "nginx-lb-http") == ["10.0.1.11:30080", "10.0.1.12:30080"]
