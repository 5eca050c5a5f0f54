"""The ExternalGateway CR (``gateway.kyma-project.io/v1alpha1``, namespaced): its spec read leniently,
the names of what it generates and the constants of api-gateway's ``apis/gateway/external/v1alpha1``
and ``internal/reconciliations/externalgateway`` (pure).

Names: every generated object is ``<base><suffix>`` where the base is the ExternalGateway's name, or,
for names longer than 45 characters, its first 37 characters + ``-`` + the first 7 hex digits of the
name's sha256 (45 characters), so ``<base>-tls-cacert`` stays within 63 (``BaseName``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube.toolkit.outcome import deleting
from tasks.apigateway import model
from tasks.apigateway.parsing import as_dict, as_str, strs

KIND = model.EXTERNAL_GATEWAY
FINALIZER = "externalgateways.gateway.kyma-project.io/finalizer"
ISTIO_SYSTEM = "istio-system"
MAX_BASE_NAME_LENGTH = 45
#: Cluster domain when ``kube-system/shoot-info`` is missing (not Gardener).
NON_GARDENER_DOMAIN = "local.kyma.dev"
SHOOT_INFO = ("kube-system", "shoot-info")
INGRESS_SERVICE = (ISTIO_SYSTEM, "istio-ingressgateway")
#: The X.509 CommonName limit the internal domain must fit in (it is the Certificate's commonName).
X509_COMMON_NAME_MAX = 64
DEFAULT_KYMA_SUBDOMAIN = "external"
REGIONS_KEY = "regions.yaml"
CA_KEY = "ca.crt"
GARDENER_CRDS = (model.DNS_ENTRY.crd_name, model.CERTIFICATE.crd_name)

OWNER_NAME_LABEL = "externalgateway.gateway.kyma-project.io/name"
OWNER_NAMESPACE_LABEL = "externalgateway.gateway.kyma-project.io/namespace"
CONTROLLER_LABEL_VALUE = "externalgateway-controller"

# status.state
PROCESSING = "Processing"
READY = "Ready"
ERROR = "Error"

# condition types
COND_READY = "Ready"
COND_CERTIFICATE = "CertificateReady"
COND_DNS = "DNSEntryReady"
COND_GATEWAY = "GatewayConfigured"

# condition reasons
REASON_READY = "Ready"
REASON_FAILED = "ReconciliationFailed"
REASON_RECONCILING = "Reconciling"
REASON_CA_SECRET_INVALID = "CASecretInvalid"
REASON_CA_SECRET_KEY_AMBIGUOUS = "CASecretKeyAmbiguous"
REASON_CA_SECRET_NOT_FOUND = "CASecretNotFound"
#: Not in the original: a CA Secret of another namespace cannot be used, for whatever cause (issue 27).
REASON_CA_SECRET_UNAVAILABLE = "CASecretUnavailable"
REASON_GARDENER_UNAVAILABLE = "GardenerCRDUnavailable"
REASON_CERTIFICATE_ERROR = "CertificateError"
REASON_CERTIFICATE_PENDING = "CertificatePending"
REASON_DNS_ERROR = "DNSEntryError"
REASON_DNS_PENDING = "DNSEntryPending"
REASON_DOMAIN_CONFLICT = "ExternalDomainConflict"
REASON_INTERNAL_DOMAIN_TOO_LONG = "InternalDomainTooLong"
REASON_REGION_NO_SUBJECTS = "RegionHasNoSubjects"
REASON_REGION_NOT_FOUND = "RegionNotFound"
REASON_REGIONS_INVALID = "RegionsConfigMapInvalid"
REASON_REGIONS_KEY_AMBIGUOUS = "RegionsConfigMapKeyAmbiguous"
REASON_REGIONS_NOT_FOUND = "RegionsConfigMapNotFound"
#: Not in the original: a generated name is taken by another ExternalGateway's object (see plan).
REASON_NAME_CONFLICT = "ResourceNameConflict"


def base_name(name: str) -> str:
    """The base of every generated name (``BaseName``): ``name`` up to 45 characters, else its first 37
    characters + ``-`` + 7 hex digits of ``sha256(name)``."""
    if len(name) <= MAX_BASE_NAME_LENGTH:
        return name
    return name[:MAX_BASE_NAME_LENGTH - 8] + "-" + hashlib.sha256(name.encode()).hexdigest()[:7]


@dataclass(frozen=True)
class Names:
    """The generated names of ExternalGateway ``name`` (the Gateway in the ExternalGateway's namespace,
    everything else in ``istio-system``): :func:`base_name` + the suffix of :data:`SUFFIXES`."""

    base: str
    gateway: str
    certificate: str
    tls_secret: str
    ca_secret: str
    dns_entry: str
    xfcc_filter: str
    cert_validation_filter: str

    @classmethod
    def of(cls, name: str) -> Names:
        base = base_name(name)
        return cls(base, **{field: base + suffix for field, suffix in SUFFIXES.items()})


#: The suffix of every generated name after the base, by :class:`Names` field.
SUFFIXES: dict[str, str] = {
    "gateway": "-gw", "certificate": "-cert", "tls_secret": "-tls", "ca_secret": "-tls-cacert",
    "dns_entry": "-dns", "xfcc_filter": "-xfcc", "cert_validation_filter": "-cv",
}


@dataclass(frozen=True)
class ExternalGateway:
    """An ExternalGateway as read (lenient: wrong types read as empty; the CRD's schema rejects them).

    Attributes:
        name, namespace, uid, generation: its metadata.
        external_domain: ``spec.externalDomain`` (``api.customer.com`` or ``*.api.customer.com``).
        kyma_subdomain: ``spec.internalDomain.kymaSubdomain`` (CRD default ``external``).
        region: ``spec.region``.
        regions_config_map: ``spec.regionsConfigMap`` (a ConfigMap of the ExternalGateway's namespace).
        ca_secret: ``(namespace, name)`` of ``spec.caSecretRef`` (namespace defaults to its own).
        include_client_cert: ``spec.includeExtGatewayClientCert`` (XFCC ``APPEND_FORWARD``).
        deleting: it has a ``deletionTimestamp``.
        finalizers: its finalizers.
        raw: the manifest.
    """

    name: str
    namespace: str
    uid: str
    generation: int
    external_domain: str
    kyma_subdomain: str
    region: str
    regions_config_map: str
    ca_secret: tuple[str, str]
    include_client_cert: bool
    deleting: bool
    finalizers: tuple[str, ...]
    raw: Mapping[str, Any]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ExternalGateway:
        meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
        namespace = as_str(meta.get("namespace")) or "default"
        internal = spec.get("internalDomain")
        subdomain = as_str(as_dict(internal).get("kymaSubdomain"))
        if not isinstance(internal, dict) or "kymaSubdomain" not in internal:
            subdomain = DEFAULT_KYMA_SUBDOMAIN  # the CRD's default, for manifests read without a server
        ca = as_dict(spec.get("caSecretRef"))
        generation = meta.get("generation")
        return cls(
            name=as_str(meta.get("name")), namespace=namespace, uid=as_str(meta.get("uid")),
            generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
            external_domain=as_str(spec.get("externalDomain")), kyma_subdomain=subdomain,
            region=as_str(spec.get("region")), regions_config_map=as_str(spec.get("regionsConfigMap")),
            ca_secret=(as_str(ca.get("namespace")) or namespace, as_str(ca.get("name"))),
            include_client_cert=spec.get("includeExtGatewayClientCert") is True,
            deleting=deleting(obj),
            finalizers=strs(meta.get("finalizers")),
            raw=obj,
        )

    @property
    def names(self) -> Names:
        return Names.of(self.name)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def labels(self) -> dict[str, str]:
        """The labels of every generated object (``GetStandardLabels``)."""
        return {
            "kyma-project.io/module": "api-gateway",
            "app.kubernetes.io/managed-by": CONTROLLER_LABEL_VALUE,
            "app.kubernetes.io/component": "api-gateway",
            "app.kubernetes.io/part-of": "api-gateway",
            OWNER_NAME_LABEL: self.name,
            OWNER_NAMESPACE_LABEL: self.namespace,
        }


def owner_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(namespace, name)`` of the ExternalGateway an object's labels name, or ``None``."""
    labels = as_dict(as_dict((obj or {}).get("metadata")).get("labels"))
    name, namespace = labels.get(OWNER_NAME_LABEL), labels.get(OWNER_NAMESPACE_LABEL)
    if isinstance(name, str) and isinstance(namespace, str) and name and namespace:
        return namespace, name
    return None
