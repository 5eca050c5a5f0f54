"""Fixtures of the workqueue tests: the probe controller in this process, on the test's Redis."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest

from workers.controller import registry

PROBE = "tests.integration.workqueue.probe"


@pytest.fixture
def inproc_probe(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's Celery app, workqueue and probe controller on the test's Redis (undone after)."""
    from workers import app as celery_module

    monkeypatch.setenv("RECONCILERY_REDIS_URL", redis_url)
    monkeypatch.setattr(celery_module.app.conf, "broker_url", redis_url)
    celery_module._state.clear()
    importlib.reload(importlib.import_module(PROBE))
    yield
    celery_module._state.clear()
    registry.unregister("probe")
