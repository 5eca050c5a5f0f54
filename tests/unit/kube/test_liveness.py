"""A pooled connection's check before reuse (kube.clusters' connections poll with the OS's poll): alive
while the server keeps it open and silent, dropped once the server closes it."""

from __future__ import annotations

import json
import socket

import pytest

from kube import clusters


def test_a_connection_the_server_closed_is_not_reused() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for cls in (clusters._LIVENESS_POOLS["http"].ConnectionCls, clusters._DEADLINE_POOLS["http"].ConnectionCls):
            conn = cls("127.0.0.1", port)
            assert conn.is_connected is False, "no socket yet"
            conn.connect()
            peer, _ = server.accept()
            assert conn.is_connected is True
            peer.close()
            assert conn.is_connected is False, "closed by the server: urllib3 opens a new one"
            conn.close()


def test_a_cached_kubeconfig_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": {"token": "t"}}]}
    secret = {"metadata": {"name": "kc", "uid": "u-1", "resourceVersion": "7"},
              "stringData": {"config": json.dumps(config)}}

    class Local:
        def get(self, res: object, name: str, namespace: str) -> dict:
            return secret

    first = clusters._from_secret(Local(), "ns", "kc", "config", "x", 5.0, parse=False)  # type: ignore[arg-type]
    assert first[1] == config
    monkeypatch.setattr(clusters, "parse_kubeconfig", lambda text: pytest.fail("parsed again"))
    kube, parsed = clusters._from_secret(Local(), "ns", "kc", "config", "x", 5.0, parse=False)  # type: ignore[arg-type]
    assert parsed is None and kube.api_client.configuration.host == "http://127.0.0.1:1"
    secret["metadata"]["resourceVersion"] = "8"  # a changed Secret is parsed
    with pytest.raises(pytest.fail.Exception):
        clusters._from_secret(Local(), "ns", "kc", "config", "x", 5.0, parse=False)  # type: ignore[arg-type]
