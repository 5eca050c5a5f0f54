"""Settings of the informers (``RECONCILERY_INFORMERS``, ``RECONCILERY_INFORMER_SYNC_SECONDS``), read
through :mod:`config`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from config import Flag, Seconds, Settings, cached


class InformerSettings(Settings):
    """Whether reconciles read from watch-fed caches, and how long they wait for a first sync."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_")

    informers: Flag = Field(True, description=(
        "Reconciles read through informers (watch-fed caches); off reads every object from the API server."))
    informer_sync_seconds: Seconds = Field(10.0, description=(
        "How long a reconcile waits for a new informer's first list before it reads directly."))


#: This process's informer settings, read on first use.
current = cached(InformerSettings)
