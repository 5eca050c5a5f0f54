"""Switches of the informers and the throttled credential refresh of the kube layer (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from informers import informer
from kube import kubeconfig


def test_settings() -> None:
    assert informer.enabled({}) and not informer.enabled({"RECONCILERY_INFORMERS": "off"})
    assert informer.sync_timeout({}) == 10.0
    assert informer.sync_timeout({"RECONCILERY_INFORMER_SYNC_SECONDS": "2"}) == 2.0
    with pytest.raises(ValueError, match="RECONCILERY_INFORMER_SYNC_SECONDS"):
        informer.sync_timeout({"RECONCILERY_INFORMER_SYNC_SECONDS": "soon"})
    assert kubeconfig.refresh_interval({}) == 5.0 and kubeconfig.refresh_interval(
        {"RECONCILERY_KUBE_REFRESH_SECONDS": "0"}) == 0.0


def test_direct_reads_bypass_the_informers_in_their_block_only() -> None:
    assert not informer.bypassed()
    with informer.direct_reads():
        assert informer.bypassed()
        assert informer.synced_informer(object(), object()) is None  # type: ignore[arg-type]
    assert not informer.bypassed()


class Config:
    refresh_api_key_hook: Any = None


def test_the_refresh_hook_runs_at_most_once_per_interval_and_stays_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    config = Config()

    def loader_hook(c: Any) -> None:  # as the official loader: it installs itself again
        calls.append(1)
        c.refresh_api_key_hook = loader_hook

    config.refresh_api_key_hook = loader_hook
    monkeypatch.setenv("RECONCILERY_KUBE_REFRESH_SECONDS", "60")
    kubeconfig._tune(config, small=True)
    for _ in range(5):
        config.refresh_api_key_hook(config)
    assert calls == [1] and config.refresh_api_key_hook is not loader_hook
    monkeypatch.setenv("RECONCILERY_KUBE_REFRESH_SECONDS", "0")
    unthrottled = Config()
    unthrottled.refresh_api_key_hook = loader_hook
    kubeconfig._tune(unthrottled, small=True)
    assert unthrottled.refresh_api_key_hook is loader_hook
