"""``workers.workqueue.current()``: how domain code reaches the process's workqueue without the Celery app."""

from __future__ import annotations

import pytest

from workers import workqueue
from workers.workqueue import WorkQueue, current, provide


def test_without_a_provider_one_workqueue_per_redis_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workqueue, "_provider", None)
    monkeypatch.setattr(workqueue, "_by_url", {})
    monkeypatch.setenv("RECONCILERY_REDIS_URL", "redis://127.0.0.1:1/0")
    first = current()
    assert current() is first and first.redis.connection_pool.connection_kwargs["port"] == 1
    monkeypatch.setenv("RECONCILERY_REDIS_URL", "redis://127.0.0.1:2/0")
    assert current() is not first and current().redis.connection_pool.connection_kwargs["port"] == 2


def test_the_celery_app_provides_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from workers import app

    monkeypatch.setattr(workqueue, "_provider", workqueue._provider)
    assert current() is app.workqueue()  # importing the app installed its workqueue
    mine = WorkQueue.__new__(WorkQueue)
    provide(lambda: mine)
    assert current() is mine
