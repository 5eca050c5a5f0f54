"""Domain module for bench/chaos.py: a test controller over ConfigMaps in namespace ``chaos``.

Loaded by the chaos run's workers (``RECONCILERY_DOMAINS``) and watcher (``RECONCILERY_WATCH_MODULES``).
Its reconcile reads the ConfigMap, takes a while (``data.slow == "1"``: ``CHAOS_SLOW_SECONDS``, longer
than the lease and the visibility timeout), writes the generation it saw into ConfigMap
``chaos-applied/<name>`` through ``kube`` (so a fenced reconcile cannot), and records what it did in a
second Redis that the chaos run never disturbs (``CHAOS_RECORDER_URL``):

- ``chaos:windows`` gets ``"<key> <token> <pid> <enter> <end> <outcome>"`` per reconcile, where ``end``
  is when it returned or, if it was fenced, when its lease stopped being trusted (wall clock);
- ``chaos:enter:<pid>:<token>`` holds the key and enter time of a running reconcile, and
  ``chaos:lost:<pid>:<token>`` when its lease stopped being trusted, so that the window of a reconcile
  that never returned (SIGKILL) closes at the kill or at the loss of its lease, whichever came first;
- ``chaos:applied`` (hash) maps each name to the last generation written.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator

import redis

import fencing
from informers.store import Stores
from kube import client_for, resources
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Backoff, Controller, Key, Result, registry

NAMESPACE = "chaos"
APPLIED_NAMESPACE = "chaos-applied"
CONTROLLER = "chaos"
_rec = redis.Redis.from_url(os.environ.get("CHAOS_RECORDER_URL", "redis://127.0.0.1:6379/15"), decode_responses=True)


def reconcile(key: Key) -> Result:
    kube = client_for(key.cluster)
    fence = fencing.current()
    token = fence.token if fence else "-"
    pid = os.getpid()
    enter = time.time()
    _rec.set(f"chaos:enter:{pid}:{token}", f"{key.name} {enter}")
    outcome = "error"
    try:
        obj = kube.get(resources.CONFIGMAP, key.name, key.namespace)
        if obj is None:
            outcome = "gone"
            return Result.done()
        data = obj.get("data") or {}
        gen = data.get("gen", "0")
        _sleep(float(os.environ.get("CHAOS_SLOW_SECONDS", "9")) if data.get("slow") == "1"
               else random.uniform(0.0, 0.03), fence, pid)
        body = {"metadata": {"name": key.name, "namespace": APPLIED_NAMESPACE}, "data": {"gen": gen}}
        if kube.get(resources.CONFIGMAP, key.name, APPLIED_NAMESPACE) is None:
            kube.create(resources.CONFIGMAP, body)
        else:
            kube.patch(resources.CONFIGMAP, key.name, {"data": {"gen": gen}}, APPLIED_NAMESPACE)
        _rec.hset("chaos:applied", key.name, gen)
        outcome = "ok"
        return Result.done()
    except fencing.LeaseLost:
        outcome = "fenced"
        raise
    finally:
        end = time.time()
        if fence is not None and fence.lost and fence.lost_at is not None:
            end = min(end, fence.lost_at)
        _rec.rpush("chaos:windows", f"{key.name} {token} {pid} {enter} {end} {outcome}")
        _rec.delete(f"chaos:enter:{pid}:{token}")


def _sleep(seconds: float, fence: fencing.Fence | None, pid: int) -> None:
    """Work that makes no request (it cannot be interrupted), noting when the fence was lost so that
    a reconcile killed later is counted only while it held its lease."""
    until = time.monotonic() + seconds
    noted = False
    while time.monotonic() < until:
        time.sleep(0.02)
        if fence is not None and not noted and fence.lost and fence.lost_at is not None:
            _rec.set(f"chaos:lost:{pid}:{fence.token}", str(fence.lost_at))
            noted = True


registry.register(Controller(name=CONTROLLER, queue="apigateway", reconcile=reconcile,
                             backoff=Backoff(base=0.2, cap=2.0, jitter=0.2)))


def _map(event: WatchEvent, _stores: Stores) -> Iterator[tuple[str, Key]]:
    meta = event.object.get("metadata") or {}
    yield CONTROLLER, Key(event.cluster, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


REGISTRATIONS = [WatchRegistration("chaos-configmaps", resources.CONFIGMAP, NAMESPACE, None, _map,
                                   controllers=(CONTROLLER,))]


def registrations() -> list[WatchRegistration]:
    """The watches of this module (:data:`REGISTRATIONS`), as every domain's watch module answers them."""
    return REGISTRATIONS
