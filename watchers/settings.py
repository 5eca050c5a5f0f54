"""Settings of the watcher process (``RECONCILERY_LEADER_ELECT``, ``POD_NAMESPACE``), read through :mod:`config`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from config import Flag, Settings, cached


class WatchSettings(Settings):
    """Leader election of ``reconcilery watch`` (the command's flags win over these)."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_")

    leader_elect: Flag = Field(False, description=(
        "Watch only while holding a coordination.k8s.io Lease (replicas > 1); ``--leader-elect`` sets it too."))
    pod_namespace: str = Field("", validation_alias="POD_NAMESPACE", description=(
        "Namespace of the Lease (the downward API's Pod namespace); empty: the service account's, else "
        "``default``."))


#: This process's watcher settings, read on first use.
current = cached(WatchSettings)
