"""A pooled connection's check before reuse (kube.clusters' connections poll with the OS's poll): alive
while the server keeps it open and silent, dropped once the server closes it."""

from __future__ import annotations

import socket

from kube import clusters


def test_a_connection_the_server_closed_is_not_reused() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for cls in (clusters._LivenessHTTPConnection, clusters._DeadlineHTTPConnection):
            conn = cls("127.0.0.1", port)
            assert conn.is_connected is False, "no socket yet"
            conn.connect()
            peer, _ = server.accept()
            assert conn.is_connected is True
            peer.close()
            assert conn.is_connected is False, "closed by the server: urllib3 opens a new one"
            conn.close()
