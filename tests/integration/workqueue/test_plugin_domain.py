"""A domain installed as a plug-in (an entry point of group ``reconcilery.domains``, no setting names it)
is found by a real worker process: its controller's queue exists and its keys are reconciled."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import redis

from tests.fixtures.processes import wait_for
from tests.fixtures.workers import ROOT, WorkerPool
from tests.plugin import fakedomain
from tests.unit.workers.test_domains import dist_info
from workers.controller import Key
from workers.redis_client import redis_client
from workers.workqueue import WorkQueue


def test_a_worker_reconciles_the_keys_of_a_plug_in_domain(redis_url: str, tmp_path: Path,
                                                          worker_pool: Callable[[str], WorkerPool]) -> None:
    site = dist_info(tmp_path / "site", "fake = tests.plugin.fakedomain:DOMAIN")
    # RECONCILERY_DOMAINS empty: every installed domain's controllers, the fake one's included
    pool = worker_pool("")
    pool.start(queues=fakedomain.QUEUE, concurrency=1, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    wq = WorkQueue(redis_client(redis_url))
    assert wq.add(fakedomain.CONTROLLER, Key("local", "default", "one"))
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    wait_for(lambda: r.lrange("fake:reconciled", 0, -1) == ["one"], timeout=30, message="fake reconcile")
