"""The process's deadline watchdog of remote requests (kube.clusters): one thread shuts sockets down at
their deadlines, instead of one timer thread per request."""

from __future__ import annotations

import socket
import threading
import time

from kube.clusters import _Watchdog


def test_an_armed_socket_is_shut_down_at_its_deadline_and_a_disarmed_one_is_not() -> None:
    dog = _Watchdog()
    cut_a, peer_a = socket.socketpair()
    kept_b, peer_b = socket.socketpair()
    try:
        started = time.monotonic()
        dog.arm(started + 0.3, cut_a)
        dog.disarm(dog.arm(started + 0.1, kept_b))
        cut_a.settimeout(5)
        assert cut_a.recv(1) == b""  # shut down: the blocked read ends with EOF
        assert 0.25 < time.monotonic() - started < 3
        time.sleep(0.2)
        peer_b.sendall(b"x")
        kept_b.settimeout(1)
        assert kept_b.recv(1) == b"x"  # disarmed: still open
        assert threading.active_count() < 50  # one watchdog thread, not one per request
    finally:
        for s in (cut_a, peer_a, kept_b, peer_b):
            s.close()


def test_an_earlier_deadline_armed_later_is_not_held_up_by_a_later_one() -> None:
    dog = _Watchdog()
    late, late_peer = socket.socketpair()
    early, early_peer = socket.socketpair()
    try:
        started = time.monotonic()
        dog.arm(started + 30, late)
        dog.arm(started + 0.2, early)
        early.settimeout(5)
        assert early.recv(1) == b""
        assert time.monotonic() - started < 3
    finally:
        for s in (late, late_peer, early, early_peer):
            s.close()
