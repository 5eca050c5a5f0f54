"""Snatch watch registration: the webhook's MutatingWebhookConfiguration -> its caBundle sync key.

A configuration that is (re)created or re-applied without its ``caBundle`` (``kubectl apply -k
deploy/snatch`` drops it) is repaired at once instead of at the next resync. Events that do not
change any ``clientConfig`` (e.g. label edits) and deletions enqueue nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from informers.store import Stores
from kube import resources
from tasks.snatch.controller import CONTROLLER_NAME, webhook_config_key, webhook_config_name
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

WEBHOOK_CONFIGS = "snatch-webhook-configs"


def _client_configs(obj: dict[str, Any] | None) -> list[Any]:
    hooks = (obj or {}).get("webhooks") or []
    return [h.get("clientConfig") if isinstance(h, dict) else None for h in hooks]


def map_webhook_config(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """ADDED, or MODIFIED with a changed ``clientConfig`` -> the caBundle sync key of that configuration."""
    name = (event.object.get("metadata") or {}).get("name")
    if not name or event.type == "DELETED":
        return []
    if event.type == "MODIFIED" and event.old is not None and \
            _client_configs(event.object) == _client_configs(event.old):
        return []
    return [(CONTROLLER_NAME, webhook_config_key(name, cluster=event.cluster))]


def registrations() -> list[WatchRegistration]:
    """The watch of the configuration this process's settings name."""
    return [
        WatchRegistration(name=WEBHOOK_CONFIGS, resource=resources.MUTATING_WEBHOOK_CONFIGURATION, namespace=None,
                          label_selector=None, map_event=map_webhook_config, controllers=(CONTROLLER_NAME,),
                          field_selector=f"metadata.name={webhook_config_name()}"),
    ]
