"""Settings of the Snatch domain (``RECONCILERY_SNATCH_*``), read through :mod:`config`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from config import Settings, cached

#: Name of the MutatingWebhookConfiguration in deploy/snatch (KIM Snatch's name).
WEBHOOK_CONFIG_NAME = "kim-snatch-mutating-webhook-configuration"
DEFAULT_CA_SECRET = "kyma-system/kim-snatch-certificates"


class SnatchSettings(Settings):
    """Where the caBundle sync finds its webhook configuration and CA."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_SNATCH_")

    webhook_config: str = Field(WEBHOOK_CONFIG_NAME, description=(
        "The MutatingWebhookConfiguration whose caBundle this process keeps in sync."))
    cert_dir: str = Field("", description=(
        "Directory whose ``ca.crt`` is the CA (the webhook's certificate directory); empty: read "
        "``RECONCILERY_SNATCH_CA_SECRET``."))
    ca_secret: str = Field(DEFAULT_CA_SECRET, description=(
        "``NAMESPACE/NAME`` of the Secret whose ``ca.crt`` is the CA (when no certificate directory is set)."))


#: This process's Snatch settings, read on first use.
current = cached(SnatchSettings)
