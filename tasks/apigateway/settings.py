"""Settings of the API Gateway domain (the ``apirule``, ``apigateway``, ``ratelimit`` and certificate
controllers and the ``/convert`` webhook), read from the environment through :mod:`config`.

Every field names its variable exactly (``RECONCILERY_APIRULE_*``, ``RECONCILERY_APIGATEWAY_*``,
``RECONCILERY_RATELIMIT_*``, ``RECONCILERY_*_IMAGE``). Read once per process by :func:`current`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from config import FLAG_NO, FLAG_YES, Flag, Seconds, Settings, cached, flag

#: ``allow`` (also the yes words) / ``deny`` (also the no words) of ``RECONCILERY_APIRULE_V1BETA1_ACCESS``.
Access = Annotated[bool, BeforeValidator(flag(yes=("allow", *FLAG_YES), no=("deny", *FLAG_NO)))]


def _seconds(name: str, default: float, description: str) -> Any:
    """A :data:`config.Seconds` field read from the variable ``name``."""
    return Field(default, validation_alias=name, description=description)


class ApiGatewaySettings(Settings):
    """The API Gateway domain's settings (seconds unless said otherwise)."""

    apirule_error_retry: Seconds = _seconds("RECONCILERY_APIRULE_ERROR_RETRY_SECONDS", 60.0,
                                            "First backoff of a failing APIRule (and the planner's error retry).")
    apirule_error_retry_cap: Seconds = _seconds("RECONCILERY_APIRULE_ERROR_RETRY_CAP_SECONDS", 300.0,
                                                "Longest backoff of a failing APIRule (at least the first one).")
    apirule_reconciliation: Seconds = _seconds("RECONCILERY_APIRULE_RECONCILIATION_SECONDS", 1800.0,
                                               "A Ready APIRule is reconciled again after this long.")
    apirule_migration: Seconds = _seconds("RECONCILERY_APIRULE_MIGRATION_SECONDS", 60.0,
                                          "An APIRule migrating from Ory Rules to Istio (its ``migration-step`` "
                                          "annotation present) is reconciled again after this long.")
    apirule_resync: Seconds = _seconds("RECONCILERY_APIRULE_RESYNC_SECONDS", 1800.0,
                                       "Seconds between beat's resyncs of every APIRule (0: none).")
    v1beta1_access: Access = Field(False, validation_alias="RECONCILERY_APIRULE_V1BETA1_ACCESS", description=(
        "``allow`` reconciles v1beta1 APIRules and installs Ory Oathkeeper; ``deny`` (default) does not. "
        "Stands for the original's signed ``kyma-system/apirule-access`` ConfigMap (notes §5.6)."))
    allow_cross_namespace_services: Flag = Field(
        False, validation_alias="RECONCILERY_APIRULE_ALLOW_CROSS_NAMESPACE_SERVICES", description=(
            "On: an APIRule may name a Service of any namespace and writes its AuthorizationPolicies and "
            "RequestAuthentications there (the original). Off (default): only in its own namespace, or in one "
            "whose Namespace annotation ``gateway.kyma-project.io/allow-apirules-from`` lists the APIRule's "
            "namespace or ``*``; otherwise the APIRule is ``Error`` and nothing is written there."))
    vs_cache: Flag = Field(True, validation_alias="RECONCILERY_APIRULE_VS_CACHE", description=(
        "Look up occupied hosts in an informer's VirtualService index (independent of "
        "``RECONCILERY_INFORMERS``); off lists VirtualServices on every reconcile."))
    apigateway_error_retry: Seconds = _seconds("RECONCILERY_APIGATEWAY_ERROR_RETRY_SECONDS", 1.0,
                                               "First backoff of a failing APIGateway CR.")
    apigateway_error_retry_cap: Seconds = _seconds("RECONCILERY_APIGATEWAY_ERROR_RETRY_CAP_SECONDS", 1000.0,
                                                   "Longest backoff of a failing APIGateway CR.")
    apigateway_reconciliation: Seconds = _seconds("RECONCILERY_APIGATEWAY_RECONCILIATION_SECONDS", 36000.0,
                                                  "A Ready APIGateway CR is reconciled again after this long.")
    apigateway_resync: Seconds = _seconds("RECONCILERY_APIGATEWAY_RESYNC_SECONDS", 36000.0,
                                          "Seconds between beat's resyncs of every APIGateway CR (0: none).")
    oathkeeper_ready: Seconds = _seconds("RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS", 120.0,
                                         "How long Oathkeeper's Deployment may take to become ready.")
    ratelimit_error_retry: Seconds = _seconds("RECONCILERY_RATELIMIT_ERROR_RETRY_SECONDS", 1.0,
                                              "First backoff of a failing RateLimit.")
    ratelimit_error_retry_cap: Seconds = _seconds("RECONCILERY_RATELIMIT_ERROR_RETRY_CAP_SECONDS", 300.0,
                                                  "Longest backoff of a failing RateLimit.")
    ratelimit_reconciliation: Seconds = _seconds("RECONCILERY_RATELIMIT_RECONCILIATION_SECONDS", 1800.0,
                                                 "A Ready RateLimit is reconciled again after this long.")
    ratelimit_resync: Seconds = _seconds("RECONCILERY_RATELIMIT_RESYNC_SECONDS", 1800.0,
                                         "Seconds between beat's resyncs of every RateLimit (0: none).")
    oathkeeper_image: str = Field("oryd/oathkeeper:v0.38.25-beta.1", validation_alias="RECONCILERY_OATHKEEPER_IMAGE",
                                  description="Image of Oathkeeper's Deployment.")
    oathkeeper_maester_image: str = Field("oryd/oathkeeper-maester:v0.1.10",
                                          validation_alias="RECONCILERY_OATHKEEPER_MAESTER_IMAGE",
                                          description="Image of Oathkeeper's maester sidecar.")
    busybox_image: str = Field("busybox:1.36", validation_alias="RECONCILERY_BUSYBOX_IMAGE",
                               description="Image of Oathkeeper's init container.")
    webhook_host: str = Field("", validation_alias="RECONCILERY_APIGATEWAY_WEBHOOK_HOST",
                              description="Address the ``/convert`` webhook listens on (empty: the command's).")
    webhook_port: int = Field(9444, validation_alias="RECONCILERY_APIGATEWAY_WEBHOOK_PORT",
                              description="Port of the ``/convert`` webhook; negative turns it off.")
    cert_poll: Seconds = _seconds("RECONCILERY_APIGATEWAY_CERT_POLL_SECONDS", 10.0,
                                  "Seconds between two reads of the webhook's certificate Secret.")
    cert_key_bits: int = Field(4096, ge=1024, validation_alias="RECONCILERY_APIGATEWAY_CERT_KEY_BITS",
                               description="RSA key size of new webhook certificates (bits).")


#: This process's API Gateway settings, read on first use.
current = cached(ApiGatewaySettings)
