"""One ExternalGateway reconcile as a pure function: what to write, in which order, and the status.

As api-gateway's ExternalGateway controller (``internal/controller/gateway/external``,
``internal/reconciliations/externalgateway``), in its order:

1. the finalizer ``externalgateways.gateway.kyma-project.io/finalizer``;
2. ``spec.externalDomain`` unique among ExternalGateways (``ExternalDomainConflict``);
3. the internal domain ``<kymaSubdomain>.<domain of kube-system/shoot-info, else local.kyma.dev>``,
   at most 64 characters (the X.509 CommonName: ``InternalDomainTooLong``);
4. with Gardener's CRDs (DNSEntry, Certificate): DNSEntry ``istio-system/<base>-dns`` (the internal
   domain → the ingress gateway's load balancer, TTL 600) and Certificate ``istio-system/<base>-cert``
   (issuer ``garden``, 4096-bit key) into the TLS Secret ``istio-system/<base>-tls``; their Gardener
   states make ``DNSEntryReady`` / ``CertificateReady`` (pending: ``Processing``, requeue after 5 s;
   ``Error``/``Invalid``/``Stale``/``Revoked``: ``Error``). Without them both conditions are
   ``False`` ``GardenerCRDUnavailable`` and neither is written;
5. the CA Secret ``istio-system/<base>-tls-cacert`` (``ca.crt`` copied from ``spec.caSecretRef``: its
   only key, else ``ca.crt``; a Secret of another namespace only where that Namespace allows it, else
   one generic ``CASecretUnavailable`` error, and a copy made before the permission was withdrawn is
   deleted);
6. the region's certificate subjects from the regions ConfigMap (its only key, else ``regions.yaml``:
   ``regions: [{name, subjects: [...]}]``, region names case-insensitive, each subject's ``", "``
   parts reversed into Envoy's order);
7. EnvoyFilter ``istio-system/<base>-xfcc`` (``forward_client_cert_details``: ``FORWARD_ONLY``, or
   ``APPEND_FORWARD`` with ``includeExtGatewayClientCert``) and ``istio-system/<base>-cv`` (a Lua
   filter answering 403 unless the client certificate's subject is one of the region's), both for
   SNI ``externalDomain`` on the ingress gateway;
8. last, the Istio Gateway ``<namespace>/<base>-gw`` (HTTPS 443 ``https-external``, hosts
   ``[externalDomain, internalDomain]``, TLS ``MUTUAL`` with credential ``<base>-tls``), owned by the
   ExternalGateway. A failure at any step before it means no Gateway is written (mTLS traffic
   never reaches a workload without the region check).

Status: ``state`` Ready / Processing / Error, ``description``, ``observedGeneration`` (not while
Processing), ``lastProcessedTime`` and the conditions ``Ready``, ``DNSEntryReady``,
``CertificateReady``, ``GatewayConfigured`` with the original's reasons and messages (a step not
reached keeps ``Unknown``/``Reconciling``). Ready → requeue after 1 h; Error → retried with backoff.

Deletion (finalizer present): delete the Gateway, both EnvoyFilters, the CA Secret and, with Gardener's
CRDs, the DNSEntry, the Certificate and the TLS Secret; then remove the finalizer.

The plan's :class:`~kube.toolkit.outcome.Outcome` (``ExternalGatewayPlan.outcome``) holds it all: the
finalizer to add first, the writes in order, the status merge patch (by
:func:`~kube.toolkit.outcome.status_patch`: ``lastProcessedTime`` moves only with a change) with its Event,
and what a refused write means (``Outcome.refused``: the ``Error`` of its step, steps after it not
reached; a deletion keeps the finalizer and fails). :func:`kube.toolkit.execute` carries it out.

Differences from the original, deliberately (see docs/apigateway.md):

- objects in ``istio-system`` are named by the base name only, so ``a/gw`` and ``b/gw`` would share
  them, and a name may be an existing Secret's: an object whose owner labels do not name this
  ExternalGateway is never updated or deleted (the reconcile fails with ``ResourceNameConflict``);
  the original overwrites and deletes it;
- two ExternalGateways with one ``externalDomain``: only the newer one fails (the original fails both,
  so creating a duplicate breaks the working one on its next reconcile);
- the status is written once per reconcile and only when it changed (the original writes
  ``Processing`` and then the outcome on every reconcile, so ``lastProcessedTime`` and the Ready
  condition's transition time move every hour).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from kube.diff import needs_update, owner_reference, prepare_replace
from kube.refusal import Failure
from kube.toolkit.actions import Action, Write
from kube.toolkit.conditions import Condition, condition, set_condition
from kube.toolkit.outcome import Event, Outcome, has_finalizer, status_patch
from tasks.apigateway import model as agw
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.namespaces import ALLOW_EXTERNALGATEWAYS, allows

Ref = tuple[str, str, str]
"""``(kind, namespace, name)`` of a generated object."""

RECONCILIATION_SECONDS = 3600.0
PENDING_SECONDS = 5.0

XFCC_FORWARD_ONLY = "FORWARD_ONLY"
XFCC_APPEND_FORWARD = "APPEND_FORWARD"
HTTP_CONNECTION_MANAGER = "envoy.filters.network.http_connection_manager"
HCM_TYPE_URL = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
INGRESS_SELECTOR = {"app": "istio-ingressgateway", "istio": "ingressgateway"}

# stages (what a refused write of an action reports)
DNS = "DNSEntry"
CERTIFICATE = "Certificate"
CA_SECRET = "CA Secret"
XFCC = "XFCC sanitization filter"
CERT_VALIDATION = "certificate validation filter"
GATEWAY = "Gateway"

READY_DESCRIPTION = "All resources reconciled successfully"
WAITING_DESCRIPTION = "Waiting for sub-resources to become ready"
IN_PROGRESS = "Reconciliation in progress"

DNS_READY, DNS_FAILED = ("Ready",), ("Error", "Invalid", "Stale")
CERT_READY, CERT_FAILED = ("Ready",), ("Error", "Revoked")

_LUA_VALIDATION = """function fail(request_handle, reason)
  request_handle:logErr(reason)
  request_handle:respond({[":status"] = "403"}, "Forbidden")
end

function envoy_on_request(request_handle)
  local ssl = request_handle:streamInfo():downstreamSslConnection()
  if ssl == nil then
    fail(request_handle, "No TLS connection")
    return
  end

  local subjectPeerCert = ssl:subjectPeerCertificate()
  if subjectPeerCert == nil then
    fail(request_handle, "No subject peer certificate")
    return
  end

  -- Try to match against any expected subject (exact string comparison)
  local matchFound = false

  for _, expectedSubject in ipairs(expectedSubjects) do
    if subjectPeerCert == expectedSubject then
      matchFound = true
      request_handle:logInfo("Certificate subject validated successfully")
      break
    end
  end

  if not matchFound then
    fail(request_handle, string.format("Certificate subject validation failed: subject (%s) not in allowed list", subjectPeerCert))
    return
  end
end
"""  # noqa: E501 (the original's Lua source, verbatim)


@dataclass(frozen=True)
class ExternalGatewayState:
    """What one reconcile looks at.

    Attributes:
        crds: installed CRD names among Gardener's (``None`` = unknown: no Gardener).
        shoot_info: ConfigMap ``kube-system/shoot-info`` (Gardener's cluster domain), if any.
        external_gateways: every ExternalGateway of the cluster (the domain uniqueness check).
        regions_config_map: the ConfigMap ``spec.regionsConfigMap`` of the ExternalGateway's namespace.
        ca_secret: the Secret ``spec.caSecretRef``, if it exists (the controller reads one of another
            namespace only when :func:`ca_secret_readable` says so).
        ca_namespace: the Namespace of ``spec.caSecretRef`` when it is not the ExternalGateway's own
            (its :data:`~tasks.apigateway.namespaces.ALLOW_EXTERNALGATEWAYS` annotation), if it exists.
        gateways: every Istio Gateway of the cluster (``externalDomain`` must be none's host).
        ingress_service: Service ``istio-system/istio-ingressgateway`` (DNSEntry targets), if any.
        existing: the generated objects as they are, by ``(kind, namespace, name)``
            (:func:`refs`; absent ones missing).
    """

    crds: frozenset[str] | None = None
    shoot_info: Mapping[str, Any] | None = None
    external_gateways: tuple[Mapping[str, Any], ...] = ()
    regions_config_map: Mapping[str, Any] | None = None
    ca_secret: Mapping[str, Any] | None = None
    ca_namespace: Mapping[str, Any] | None = None
    gateways: tuple[Mapping[str, Any], ...] = ()
    ingress_service: Mapping[str, Any] | None = None
    existing: Mapping[Ref, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def gardener(self) -> bool:
        """Gardener's DNSEntry and Certificate CRDs are installed (``dependencies.Gardener()``)."""
        return self.crds is not None and all(c in self.crds for c in m.GARDENER_CRDS)


@dataclass(frozen=True)
class ExternalGatewayPlan:
    """What one reconcile does: ``outcome`` (the module doc), and for ``render`` and the logs what it
    decided: ``desired`` is every object rendered (written or already as desired), ``state``,
    ``description`` and ``conditions`` as planned."""

    outcome: Outcome
    desired: tuple[dict[str, Any], ...] = ()
    state: str = ""
    description: str = ""
    conditions: tuple[Condition, ...] = ()


def refs(eg: m.ExternalGateway) -> list[Ref]:
    """Every object an ExternalGateway may generate, in deletion order (the Gateway first)."""
    n = eg.names
    return [("Gateway", eg.namespace, n.gateway), ("EnvoyFilter", m.ISTIO_SYSTEM, n.xfcc_filter),
            ("EnvoyFilter", m.ISTIO_SYSTEM, n.cert_validation_filter), ("Secret", m.ISTIO_SYSTEM, n.ca_secret),
            ("DNSEntry", m.ISTIO_SYSTEM, n.dns_entry), ("Certificate", m.ISTIO_SYSTEM, n.certificate),
            ("Secret", m.ISTIO_SYSTEM, n.tls_secret)]


def gardener_refs(eg: m.ExternalGateway) -> list[Ref]:
    """The objects only written and deleted with Gardener's CRDs: DNSEntry, Certificate, TLS Secret."""
    n = eg.names
    return [("DNSEntry", m.ISTIO_SYSTEM, n.dns_entry), ("Certificate", m.ISTIO_SYSTEM, n.certificate),
            ("Secret", m.ISTIO_SYSTEM, n.tls_secret)]


class _Failed(Exception):
    """A step failed before any object: ``message`` is the description, ``reason`` the Ready condition's."""

    def __init__(self, message: str, reason: str = m.REASON_FAILED) -> None:
        super().__init__(message)
        self.message, self.reason = message, reason


class _Reasoned(Exception):
    """api-gateway's ``ReasonedError``: a message with a condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _go_list(items: Sequence[str]) -> str:
    """Go's ``%v`` of a ``[]string`` (sorted: Go's map order is random)."""
    return "[" + " ".join(sorted(items)) + "]"


# --- inputs ---------------------------------------------------------------------------------------


def kyma_domain(shoot_info: Mapping[str, Any] | None) -> str:
    """The cluster's (Kyma's) domain: ``kube-system/shoot-info``'s ``domain``, else ``local.kyma.dev``
    (as the Kyma Gateway's ``*.<domain>``, :mod:`tasks.apigateway.operator`). Raises :class:`_Failed`
    when shoot-info has no ``domain``."""
    if shoot_info is None:
        return m.NON_GARDENER_DOMAIN
    data = shoot_info.get("data")
    value = data.get("domain") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise _Failed("failed to build internal domain: failed to get Gardener cluster domain: "
                      "domain not found in shoot-info ConfigMap")
    return value


def internal_domain(eg: m.ExternalGateway, shoot_info: Mapping[str, Any] | None) -> str:
    """``<kymaSubdomain>.<cluster domain>`` (``buildInternalDomain``). Raises :class:`_Reasoned` /
    :class:`_Failed` (no ``domain`` in shoot-info, too long for a CommonName)."""
    result = f"{eg.kyma_subdomain}.{kyma_domain(shoot_info)}"
    if len(result) > m.X509_COMMON_NAME_MAX:
        over = len(result) - m.X509_COMMON_NAME_MAX
        raise _Failed(f'failed to build internal domain: internal domain "{result}" is {len(result)} chars; '
                      f"X.509 CommonName limit is {m.X509_COMMON_NAME_MAX}. Shorten "
                      f"spec.internalDomain.kymaSubdomain by {over} chars.", m.REASON_INTERNAL_DOMAIN_TOO_LONG)
    return result


def _created(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = _meta(obj)
    return (str(meta.get("creationTimestamp") or "~"), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def domain_conflict(eg: m.ExternalGateway, others: Sequence[Mapping[str, Any]]) -> str | None:
    """The message when an older ExternalGateway (creation time, then namespace/name) has the same
    ``externalDomain``, or one overlapping it (a wildcard covering it, or covered by it)
    (``CheckExternalDomainUnique``, but only the newer one fails, and it compares equal strings only)."""
    if not eg.external_domain:
        return None
    mine = _created(eg.raw)
    for other in sorted(others, key=_created):
        o = m.ExternalGateway.of(other)
        if (o.namespace, o.name) == (eg.namespace, eg.name) or not hosts_overlap(o.external_domain,
                                                                                  eg.external_domain):
            continue
        if _created(other) < mine:  # the original's words; another namespace's object is not named
            who = f"ExternalGateway {o.namespace}/{o.name}" if o.namespace == eg.namespace \
                else "an ExternalGateway of another namespace"
            return f'externalDomain "{eg.external_domain}" is also used by {who}'
    return None


def _host(value: str) -> str:
    """An Istio host without its ``namespace/`` prefix (Gateway ``servers[].hosts``), lower case, no final dot."""
    return value.rpartition("/")[2].lower().rstrip(".")


def _covers(pattern: str, host: str) -> bool:
    """``*.<suffix>`` covers every name (and wildcard) below ``<suffix>``; a name only itself."""
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return pattern == host


def hosts_overlap(a: str, b: str) -> bool:
    """Whether hosts ``a`` and ``b`` (names or ``*.`` wildcards, optionally ``namespace/``-prefixed)
    share a name: equal, or one's wildcard covers the other. A bare ``*`` (a catch-all Gateway) claims
    no name and overlaps nothing; nor does an empty host."""
    a, b = _host(a), _host(b)
    if not a or not b or "*" in (a, b):
        return False
    return a == b or _covers(a, b) or _covers(b, a)


def domain_taken(eg: m.ExternalGateway, gateways: Sequence[Mapping[str, Any]],
                 external_gateways: Sequence[Mapping[str, Any]], domain: str) -> str | None:
    """The message when ``spec.externalDomain`` is a host of another Istio Gateway (its
    ``servers[].hosts``, a wildcard covering it or covered by it) or within the Kyma domain
    ``domain`` (``<domain>`` or ``*.<domain>``, the Kyma Gateway's): its EnvoyFilters match the SNI
    on the shared ingress gateway, so it would take that traffic over. The Gateways labelled as an
    existing ExternalGateway's (this one's own included) are left to :func:`domain_conflict`. The
    message names no other Gateway. Not in the original (issue 27)."""
    if not eg.external_domain:
        return None
    if hosts_overlap(eg.external_domain, domain) or hosts_overlap(eg.external_domain, f"*.{domain}"):
        return f'externalDomain "{eg.external_domain}" is within the Kyma domain "{domain}"'
    external = {(o.namespace, o.name) for o in map(m.ExternalGateway.of, external_gateways)} | {
        (eg.namespace, eg.name)}
    for gateway_ in gateways:
        if m.owner_of(gateway_) in external:
            continue
        spec = gateway_.get("spec")
        servers = spec.get("servers") if isinstance(spec, dict) else None
        for server in servers if isinstance(servers, list) else ():
            hosts = server.get("hosts") if isinstance(server, dict) else None
            for host in hosts if isinstance(hosts, list) else ():
                if isinstance(host, str) and hosts_overlap(eg.external_domain, host):
                    return f'externalDomain "{eg.external_domain}" is a host of another Gateway'
    return None


def ingress_targets(service: Mapping[str, Any] | None) -> list[str]:
    """The ingress gateway load balancer's IPs and hostnames (``fetchIngressGatewayTargets``). Raises
    :class:`ValueError` with the original's words."""
    ns, name = m.INGRESS_SERVICE
    if service is None:
        raise ValueError(f'failed to get istio-ingressgateway service: services "{name}" not found')
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if not ingress:
        raise ValueError(f"no ingress exists for {ns}/{name}")
    targets: list[str] = []
    for entry in ingress:
        if isinstance(entry, dict):
            targets += [str(entry[k]) for k in ("ip", "hostname") if entry.get(k)]
    if not targets:
        raise ValueError(f"no ingress ip set for {ns}/{name}")
    return targets


def _secret_data(secret: Mapping[str, Any]) -> dict[str, str]:
    """``data`` (base64) with ``stringData`` folded in, as the API server stores a written Secret."""
    data = {str(k): str(v) for k, v in (secret.get("data") or {}).items()}
    for k, v in (secret.get("stringData") or {}).items():
        data[str(k)] = base64.b64encode(str(v).encode()).decode()
    return data


def ca_secret_readable(eg: m.ExternalGateway, namespace: Mapping[str, Any] | None) -> bool:
    """Whether the Secret ``spec.caSecretRef`` may be read: it is in the ExternalGateway's namespace,
    or ``namespace`` (the manifest of its Namespace, ``None`` if not found) lists the ExternalGateway's
    namespace (or ``*``) in :data:`~tasks.apigateway.namespaces.ALLOW_EXTERNALGATEWAYS`."""
    return allows(eg.ca_secret[0], eg.namespace, namespace, ALLOW_EXTERNALGATEWAYS)


def ca_unavailable(eg: m.ExternalGateway) -> str:
    """The one message for a CA Secret of another namespace that cannot be used, whatever the cause
    (not allowed, missing, empty, keys): it says nothing the author did not write."""
    ns, name = eg.ca_secret
    return (f"CA secret {ns}/{name} referenced by spec.caSecretRef cannot be used: a Secret of another "
            f"namespace must exist with the CA under its only key or 'ca.crt', and its Namespace must list "
            f'"{eg.namespace}" in the annotation {ALLOW_EXTERNALGATEWAYS}')


def ca_certificate(eg: m.ExternalGateway, secret: Mapping[str, Any] | None,
                   namespace: Mapping[str, Any] | None = None) -> str:
    """The CA (base64, as in ``data``) to copy (``ReconcileCASecret``); ``namespace`` is the Namespace of
    a Secret of another namespace (:func:`ca_secret_readable`). Raises :class:`_Reasoned`: the
    original's reasons and words for a Secret of its own namespace, one reason
    (``CASecretUnavailable``) and message (:func:`ca_unavailable`) for any problem with another's."""
    ns, name = eg.ca_secret
    if not name:  # the CRD does not require caSecretRef.name; client-go refuses the GET
        raise _Reasoned(m.REASON_FAILED, f"failed to get source CA secret {ns}/: resource name may not be empty")
    if ns != eg.namespace:
        if not ca_secret_readable(eg, namespace):
            raise _Reasoned(m.REASON_CA_SECRET_UNAVAILABLE, ca_unavailable(eg))
        try:
            return _ca_of(eg, secret)
        except _Reasoned:
            raise _Reasoned(m.REASON_CA_SECRET_UNAVAILABLE, ca_unavailable(eg)) from None
    return _ca_of(eg, secret)


def _ca_of(eg: m.ExternalGateway, secret: Mapping[str, Any] | None) -> str:
    """The CA of ``secret`` (its only key, else ``ca.crt``). Raises :class:`_Reasoned`."""
    ns, name = eg.ca_secret
    if secret is None:
        raise _Reasoned(m.REASON_CA_SECRET_NOT_FOUND, f"CA secret {ns}/{name} referenced by spec.caSecretRef not found")
    data = _secret_data(secret)
    if not data:
        raise _Reasoned(m.REASON_CA_SECRET_INVALID, f"source CA secret {ns}/{name} is empty")
    if len(data) == 1:
        return next(iter(data.values()))
    if m.CA_KEY not in data:
        raise _Reasoned(m.REASON_CA_SECRET_KEY_AMBIGUOUS,
                        f"source CA secret {ns}/{name} has keys {_go_list(list(data))}; expected a single key "
                        f"or 'ca.crt' (Istio convention)")
    return data[m.CA_KEY]


def reverse_subject(subject: str) -> str:
    """``C=US, O=Corp, CN=x`` → ``CN=x,O=Corp,C=US`` (Envoy's order, ``reverseSubjectParts``)."""
    return ",".join(reversed(subject.split(", ")))


def region_subjects(eg: m.ExternalGateway, config_map: Mapping[str, Any] | None) -> list[str]:
    """The region's certificate subjects in Envoy's order (``ResolveRegionCertSubjects``). Raises
    :class:`_Reasoned` with the original's reasons and words."""
    ns, name = eg.namespace, eg.regions_config_map
    if config_map is None:
        raise _Reasoned(m.REASON_REGIONS_NOT_FOUND, f"RegionsConfigMap {ns}/{name} not found")
    data = {str(k): v for k, v in (config_map.get("data") or {}).items()}
    if not data:
        raise _Reasoned(m.REASON_REGIONS_INVALID, f"ConfigMap {ns}/{name} is empty")
    if len(data) == 1:
        text = next(iter(data.values()))
    elif m.REGIONS_KEY in data:
        text = data[m.REGIONS_KEY]
    else:
        raise _Reasoned(m.REASON_REGIONS_KEY_AMBIGUOUS, f"ConfigMap {ns}/{name} has keys {_go_list(list(data))}; "
                                                        f'expected a single key or "{m.REGIONS_KEY}"')
    regions = _parse_regions(str(text), ns, name)
    if not regions:
        raise _Reasoned(m.REASON_REGIONS_INVALID, f"no regions found in ConfigMap {ns}/{name}")
    subjects = regions.get(eg.region.lower())
    if subjects is None:
        raise _Reasoned(m.REASON_REGION_NOT_FOUND, f'region "{eg.region}" not defined in ConfigMap {ns}/{name}')
    if not subjects:
        raise _Reasoned(m.REASON_REGION_NO_SUBJECTS,
                        f'region "{eg.region}" in ConfigMap {ns}/{name} has no certificate subjects')
    return [reverse_subject(s) for s in subjects]


def _parse_regions(text: str, ns: str, name: str) -> dict[str, list[str]]:
    """Region name (lower case; a later entry wins) → subjects. Raises :class:`_Reasoned`."""
    def invalid(detail: str) -> _Reasoned:
        return _Reasoned(m.REASON_REGIONS_INVALID, f"failed to parse regions YAML in ConfigMap {ns}/{name}: {detail}")

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise invalid(str(exc).replace("\n", " ")) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise invalid(f"cannot unmarshal {type(doc).__name__} into the regions document (a mapping)")
    entries = doc.get("regions")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise invalid("regions must be a list")
    out: dict[str, list[str]] = {}
    for i, entry in enumerate(entries):
        entry = entry or {}
        if not isinstance(entry, dict):
            raise invalid(f"regions[{i}] must be a mapping")
        subjects = entry.get("subjects") or []
        if not isinstance(subjects, list) or not all(isinstance(s, str) for s in subjects):
            raise invalid(f"regions[{i}].subjects must be a list of strings")
        out[str(entry.get("name") or "").lower()] = list(subjects)
    return out


# --- the generated objects (pure builders) --------------------------------------------------------


def _object(eg: m.ExternalGateway, api_version: str, kind: str, name: str, namespace: str,
            **body: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": eg.labels()}, **body}


def dns_entry(eg: m.ExternalGateway, domain: str, targets: list[str]) -> dict[str, Any]:
    """DNSEntry ``istio-system/<base>-dns``: ``domain`` → ``targets``, TTL 600, class ``garden``."""
    obj = _object(eg, agw.DNS_ENTRY.api_version, "DNSEntry", eg.names.dns_entry, m.ISTIO_SYSTEM,
                  spec={"dnsName": domain, "ttl": 600, "targets": targets})
    obj["metadata"]["annotations"] = {"dns.gardener.cloud/class": "garden"}
    return obj


def certificate(eg: m.ExternalGateway, domain: str) -> dict[str, Any]:
    """Certificate ``istio-system/<base>-cert`` for ``domain`` into Secret ``<base>-tls``."""
    return _object(eg, agw.CERTIFICATE.api_version, "Certificate", eg.names.certificate, m.ISTIO_SYSTEM,
                   spec={"commonName": domain, "secretName": eg.names.tls_secret, "issuerRef": {"name": "garden"},
                         "privateKey": {"size": 4096}, "secretLabels": eg.labels()})


def ca_secret(eg: m.ExternalGateway, ca: str) -> dict[str, Any]:
    """Secret ``istio-system/<base>-tls-cacert`` (``ca.crt``: Istio's ``<credentialName>-cacert``)."""
    return _object(eg, "v1", "Secret", eg.names.ca_secret, m.ISTIO_SYSTEM, type="Opaque", data={m.CA_KEY: ca})


def _listener_match(eg: m.ExternalGateway, sub_filter: str | None) -> dict[str, Any]:
    filter_: dict[str, Any] = {"name": HTTP_CONNECTION_MANAGER}
    if sub_filter:
        filter_["subFilter"] = {"name": sub_filter}
    return {"context": "GATEWAY", "listener": {"filterChain": {"sni": eg.external_domain, "filter": filter_}}}


def xfcc_filter(eg: m.ExternalGateway) -> dict[str, Any]:
    """EnvoyFilter ``istio-system/<base>-xfcc``: the connection manager's ``forward_client_cert_details``."""
    mode = XFCC_APPEND_FORWARD if eg.include_client_cert else XFCC_FORWARD_ONLY
    patch = {"operation": "MERGE", "value": {"typed_config": {
        "@type": HCM_TYPE_URL, "forward_client_cert_details": mode}}}
    return _object(eg, agw.ENVOY_FILTER.api_version, "EnvoyFilter", eg.names.xfcc_filter, m.ISTIO_SYSTEM, spec={
        "workloadSelector": {"labels": dict(INGRESS_SELECTOR)},
        "configPatches": [{"applyTo": "NETWORK_FILTER", "match": _listener_match(eg, None), "patch": patch}]})


def lua_string(value: str) -> str:
    """``value`` escaped for a double-quoted Lua literal (``escapeString``)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def validation_lua(subjects: Sequence[str]) -> str:
    """The Lua source of the certificate validation filter (``buildValidationLuaScript``)."""
    lines = ",\n".join(f'  "{lua_string(s)}"' for s in subjects)
    return "local expectedSubjects = {\n" + lines + "\n}\n\n" + _LUA_VALIDATION


def cert_validation_filter(eg: m.ExternalGateway, subjects: Sequence[str]) -> dict[str, Any]:
    """EnvoyFilter ``istio-system/<base>-cv``: a Lua filter before the router admitting only ``subjects``."""
    name = eg.names.cert_validation_filter
    patch = {"operation": "INSERT_BEFORE", "value": {
        "name": "api_gateway.external_gateway.cert_validation." + name,
        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
                         "defaultSourceCode": {"inlineString": validation_lua(subjects)}}}}
    return _object(eg, agw.ENVOY_FILTER.api_version, "EnvoyFilter", name, m.ISTIO_SYSTEM, spec={
        "workloadSelector": {"labels": dict(INGRESS_SELECTOR)},
        "configPatches": [{"applyTo": "HTTP_FILTER", "match": _listener_match(eg, "envoy.filters.http.router"),
                           "patch": patch}]})


def gateway(eg: m.ExternalGateway, domain: str) -> dict[str, Any]:
    """Istio Gateway ``<namespace>/<base>-gw`` (mTLS on 443), owned by the ExternalGateway."""
    obj = _object(eg, agw.GATEWAY.api_version, "Gateway", eg.names.gateway, eg.namespace, spec={
        "selector": {"istio": "ingressgateway"},
        "servers": [{"port": {"number": 443, "name": "https-external", "protocol": "HTTPS"},
                     "hosts": [eg.external_domain, domain],
                     "tls": {"mode": "MUTUAL", "credentialName": eg.names.tls_secret}}]})
    if eg.uid:
        raw = {**eg.raw, "apiVersion": m.KIND.api_version, "kind": m.KIND.kind}
        obj["metadata"]["ownerReferences"] = [owner_reference(raw)]
    return obj


# --- conditions and status ------------------------------------------------------------------------


def _cond(type_: str, status: str, reason: str, message: str, eg: m.ExternalGateway, now: str) -> Condition:
    return condition(type_, status, reason, message, now, observed_generation=eg.generation)


def _processing(eg: m.ExternalGateway, now: str) -> list[Condition]:
    """``ProcessingConditions``: every condition ``Unknown``/``Reconciling`` (steps not reached keep them)."""
    return [_cond(t, "Unknown", m.REASON_RECONCILING, IN_PROGRESS, eg, now)
            for t in (m.COND_READY, m.COND_DNS, m.COND_CERTIFICATE, m.COND_GATEWAY)]


def _gardener_condition(type_: str, state: str, message: str, eg: m.ExternalGateway, now: str) -> tuple[
        Condition, bool, str | None]:
    """(condition, pending, error) of a DNSEntry (``type_`` DNSEntryReady) or Certificate from its
    Gardener ``status.state`` (``dnsEntryCondition`` / ``certificateCondition``)."""
    ready: tuple[str, ...]
    failed: tuple[str, ...]
    if type_ == m.COND_DNS:
        ready, failed, what = DNS_READY, DNS_FAILED, "DNSEntry"
        reasons, pending_text, error_prefix = (m.REASON_DNS_ERROR, m.REASON_DNS_PENDING), \
            "DNSEntry is being provisioned", "DNSEntry"
    else:
        ready, failed, what = CERT_READY, CERT_FAILED, "Certificate"
        reasons, pending_text, error_prefix = (m.REASON_CERTIFICATE_ERROR, m.REASON_CERTIFICATE_PENDING), \
            "Certificate is being issued", "certificate"
    if state in ready:
        return _cond(type_, "True", m.REASON_READY, f"{what} is ready", eg, now), False, None
    if state in failed:
        return (_cond(type_, "False", reasons[0], message, eg, now), False,
                f'{error_prefix} is in a terminal error state "{state}": {message}')
    return _cond(type_, "False", reasons[1], message or pending_text, eg, now), True, None


def _gardener_status(obj: Mapping[str, Any] | None) -> tuple[str, str]:
    status = (obj or {}).get("status")
    status = status if isinstance(status, dict) else {}
    return str(status.get("state") or ""), str(status.get("message") or "")


def _current_status(eg: m.ExternalGateway) -> dict[str, Any]:
    status = eg.raw.get("status")
    return status if isinstance(status, dict) else {}


def status_body(eg: m.ExternalGateway, state: str, description: str, conditions: Sequence[Condition]) -> dict[
        str, Any]:
    """The status the reconcile ends with: the original's ``updateStatus`` (``observedGeneration``
    not advanced while Processing), conditions merged into the current ones by type."""
    current = _current_status(eg)
    merged: list[Condition] = list(current.get("conditions") or [])
    for c in conditions:
        merged = set_condition(merged, c)
    body: dict[str, Any] = {"state": state, "description": description, "conditions": merged}
    if state != m.PROCESSING:
        body["observedGeneration"] = eg.generation
    return body


def _status_patch(eg: m.ExternalGateway, body: Mapping[str, Any], now: str) -> dict[str, Any] | None:
    """The merge patch of ``.status`` (``None`` when it already says ``body``, conditions compared
    without their transition times); ``lastProcessedTime`` moves only with a change."""
    patch = status_patch(_current_status(eg), body)
    return None if patch is None else {**patch, "lastProcessedTime": now}


def _finish(eg: m.ExternalGateway, state: str, description: str, conditions: list[Condition], reason: str,
            now: str, writes: Sequence[Action] = (), stages: Sequence[str] = (),
            desired: Sequence[dict[str, Any]] = ()) -> ExternalGatewayPlan:
    body = status_body(eg, state, description, conditions)
    patch = _status_patch(eg, body, now)
    event = None
    if patch is not None and state == m.ERROR:
        event = Event("Warning", reason, description)
    elif patch is not None and state == m.READY and _current_status(eg).get("state") != m.READY:
        event = Event("Normal", "Ready", description)
    if state == m.ERROR:
        outcome = Outcome(status=patch, event=event, error=description)
    else:
        outcome = Outcome(status=patch, event=event,
                          requeue_after=PENDING_SECONDS if state == m.PROCESSING else RECONCILIATION_SECONDS)
    if not has_finalizer(eg.raw, m.FINALIZER):
        outcome = replace(outcome, add_finalizer=m.FINALIZER)
    planned = tuple(body["conditions"])
    if writes:
        def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
            return _refused(eg, stages[len(answers)], write, failure, planned, now)

        outcome = replace(outcome, writes=tuple(writes), refused=refused)
    return ExternalGatewayPlan(outcome=outcome, state=state, description=description, conditions=planned,
                               desired=tuple(desired))


# --- the plan -------------------------------------------------------------------------------------


class _Writer:
    """Collects the actions of one reconcile: an object is created, updated when it differs, or left;
    one owned by another ExternalGateway (its labels) is refused."""

    def __init__(self, eg: m.ExternalGateway, state: ExternalGatewayState) -> None:
        self.eg, self.state = eg, state
        self.actions: list[Action] = []
        self.stages: list[str] = []
        self.desired: list[dict[str, Any]] = []

    def taken(self, ref: Ref) -> str | None:
        """The message when ``ref`` exists and is not this ExternalGateway's (its owner labels)."""
        actual = self.state.existing.get(ref)
        owner = m.owner_of(actual)
        if actual is None or owner == (self.eg.namespace, self.eg.name):
            return None
        kind, ns, name = ref
        if owner is None:
            return f"{kind} {ns}/{name} exists and is not managed by ExternalGateway {self.eg.ref}"
        return f"{kind} {ns}/{name} belongs to ExternalGateway {owner[0]}/{owner[1]}"

    def write(self, stage: str, obj: dict[str, Any]) -> None:
        """Plan ``obj``. Raises :class:`_Reasoned` (``ResourceNameConflict``)."""
        ref: Ref = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        conflict = self.taken(ref)
        if conflict is not None:
            raise _Reasoned(m.REASON_NAME_CONFLICT, conflict)
        self.desired.append(obj)
        actual = self.state.existing.get(ref)
        if actual is None:
            self.actions.append(Action("create", ref[0], obj))
        elif needs_update(obj, actual):
            self.actions.append(Action("update", ref[0], prepare_replace(obj, actual), dict(actual)))
        else:
            return
        self.stages.append(stage)

    def withdraw(self, ref: Ref, stage: str) -> None:
        """Delete ``ref`` when it exists and is this ExternalGateway's (its labels): the CA copied from
        another namespace's Secret once that Namespace no longer allows it."""
        actual = self.state.existing.get(ref)
        if actual is None or m.owner_of(actual) != (self.eg.namespace, self.eg.name):
            return
        kind, ns, name = ref
        self.actions.append(Action("delete", kind, {"metadata": {"name": name, "namespace": ns}}, dict(actual)))
        self.stages.append(stage)

    def plan(self) -> dict[str, Any]:
        """``_finish``'s writes, their stages and the desired objects."""
        return {"writes": tuple(self.actions), "stages": tuple(self.stages), "desired": tuple(self.desired)}


def plan(obj: Mapping[str, Any], state: ExternalGatewayState, now: str) -> ExternalGatewayPlan:
    """The reconcile of ExternalGateway ``obj`` (as read) against ``state``; ``now`` (RFC 3339) for
    condition and processing times. Pure; never raises for bad input (every problem is the
    ``Error`` status with the original's words)."""
    eg = m.ExternalGateway.of(obj)
    if eg.deleting:
        return plan_deletion(eg, state)
    conditions = _processing(eg, now)
    w = _Writer(eg, state)

    def failed(message: str, reason: str, *extra: Condition) -> ExternalGatewayPlan:
        for c in extra:
            conditions[:] = set_condition(conditions, c)
        conditions[:] = set_condition(conditions, _cond(m.COND_READY, "False", reason, message, eg, now))
        return _finish(eg, m.ERROR, message, conditions, reason, now, **w.plan())

    conflict = domain_conflict(eg, state.external_gateways)
    if conflict is not None:
        return failed(conflict, m.REASON_DOMAIN_CONFLICT)
    try:
        domain = internal_domain(eg, state.shoot_info)
    except _Failed as exc:
        return failed(exc.message, exc.reason)
    taken = domain_taken(eg, state.gateways, state.external_gateways, kyma_domain(state.shoot_info))
    if taken is not None:
        return failed(taken, m.REASON_DOMAIN_CONFLICT)

    pending = False
    if state.gardener:
        errors: list[str] = []
        try:
            targets = ingress_targets(state.ingress_service)
            w.write(DNS, dns_entry(eg, domain, targets))
            dns = _gardener_condition(m.COND_DNS, *_gardener_status(state.existing.get(
                ("DNSEntry", m.ISTIO_SYSTEM, eg.names.dns_entry))), eg, now)
        except (ValueError, _Reasoned) as exc:
            text = f"failed to fetch Istio ingress gateway IP: {exc}" if isinstance(exc, ValueError) else str(exc)
            dns = (_cond(m.COND_DNS, "False", m.REASON_FAILED, text, eg, now), False,
                   f"failed to reconcile DNSEntry: {text}")
        try:
            tls_conflict = w.taken(("Secret", m.ISTIO_SYSTEM, eg.names.tls_secret))
            if tls_conflict is not None:
                raise _Reasoned(m.REASON_NAME_CONFLICT, tls_conflict)
            w.write(CERTIFICATE, certificate(eg, domain))
            cert = _gardener_condition(m.COND_CERTIFICATE, *_gardener_status(state.existing.get(
                ("Certificate", m.ISTIO_SYSTEM, eg.names.certificate))), eg, now)
        except _Reasoned as exc:
            cert = (_cond(m.COND_CERTIFICATE, "False", m.REASON_FAILED, str(exc), eg, now), False,
                    f"failed to reconcile Certificate: {exc}")
        for cond_, is_pending, error in (dns, cert):
            conditions[:] = set_condition(conditions, cond_)
            pending = pending or is_pending
            if error is not None:
                errors.append(error)
        if errors:
            return failed("\n".join(errors), m.REASON_FAILED)
    else:
        for type_, what in ((m.COND_DNS, "DNSEntry"), (m.COND_CERTIFICATE, "Certificate")):
            conditions[:] = set_condition(conditions, _cond(
                type_, "False", m.REASON_GARDENER_UNAVAILABLE,
                f"Gardener CRDs are not available; {what} management skipped", eg, now))

    def gateway_failed(prefix: str, exc: _Reasoned) -> ExternalGatewayPlan:
        return failed(f"{prefix}: {exc.message}", exc.reason,
                      _cond(m.COND_GATEWAY, "False", exc.reason, exc.message, eg, now))

    try:
        w.write(CA_SECRET, ca_secret(eg, ca_certificate(eg, state.ca_secret, state.ca_namespace)))
    except _Reasoned as exc:
        if not ca_secret_readable(eg, state.ca_namespace):
            w.withdraw(("Secret", m.ISTIO_SYSTEM, eg.names.ca_secret), CA_SECRET)
        return gateway_failed("failed to reconcile CA Secret", exc)
    try:
        subjects = region_subjects(eg, state.regions_config_map)
    except _Reasoned as exc:
        return gateway_failed("failed to resolve certificate subjects", exc)
    # the filters before the Gateway: mTLS traffic never reaches a workload without the region check
    for stage, build in ((XFCC, lambda: xfcc_filter(eg)),
                         (CERT_VALIDATION, lambda: cert_validation_filter(eg, subjects)),
                         (GATEWAY, lambda: gateway(eg, domain))):
        try:
            w.write(stage, build())
        except _Reasoned as exc:
            return gateway_failed(f"failed to reconcile {stage}", exc)
    conditions[:] = set_condition(conditions, _cond(m.COND_GATEWAY, "True", m.REASON_READY,
                                                    "Istio Gateway and EnvoyFilters configured successfully", eg, now))
    if pending:
        conditions[:] = set_condition(conditions, _cond(m.COND_READY, "Unknown", m.REASON_RECONCILING,
                                                        WAITING_DESCRIPTION, eg, now))
        return _finish(eg, m.PROCESSING, WAITING_DESCRIPTION, conditions, m.REASON_RECONCILING, now, **w.plan())
    conditions[:] = set_condition(conditions, _cond(m.COND_READY, "True", m.REASON_READY, READY_DESCRIPTION, eg, now))
    return _finish(eg, m.READY, READY_DESCRIPTION, conditions, m.REASON_READY, now, **w.plan())


def _refused(eg: m.ExternalGateway, stage: str, write: Write, failure: Failure, planned: Sequence[Condition],
             now: str) -> Outcome:
    """What the API server refusing ``write`` (of ``stage``) means: the ``Error`` status the original
    reports for a failed write at that step (steps after it not reached). A 409 (stale, or created
    meanwhile) fails the reconcile without a status: it runs again on fresh state."""
    if failure.conflict:
        return Outcome(error=str(failure))
    message = failure.message
    known = {c.get("type"): c for c in planned}
    conditions = _processing(eg, now)
    for type_ in (m.COND_DNS, m.COND_CERTIFICATE):
        if type_ in known:
            conditions = set_condition(conditions, known[type_])
    if stage in (DNS, CERTIFICATE) and isinstance(write, Action):
        inner = f"failed to create or update {stage} {write.namespace}/{write.name}: {message}"
        type_ = m.COND_DNS if stage == DNS else m.COND_CERTIFICATE
        conditions = set_condition(conditions, _cond(type_, "False", m.REASON_FAILED, inner, eg, now))
        description = f"failed to reconcile {stage}: {inner}"
    else:
        conditions = set_condition(conditions, _cond(m.COND_GATEWAY, "False", m.REASON_FAILED, message, eg, now))
        description = f"failed to reconcile {stage}: {message}"
    conditions = set_condition(conditions, _cond(m.COND_READY, "False", m.REASON_FAILED, description, eg, now))
    return _finish(eg, m.ERROR, description, conditions, m.REASON_FAILED, now).outcome


def plan_deletion(eg: m.ExternalGateway, state: ExternalGatewayState) -> ExternalGatewayPlan:
    """``handleDeletion``: delete what exists and is labelled as this ExternalGateway's (the Gardener
    objects only with Gardener's CRDs), then remove the finalizer. Nothing without the finalizer."""
    if not has_finalizer(eg.raw, m.FINALIZER):
        return ExternalGatewayPlan(outcome=Outcome())
    actions: list[Action] = []
    for ref in refs(eg):
        kind, ns, name = ref
        if not state.gardener and ref in gardener_refs(eg):
            continue
        actual = state.existing.get(ref)
        if actual is None or m.owner_of(actual) != (eg.namespace, eg.name):
            continue  # never another's object, nor one we did not label
        actions.append(Action("delete", kind, {"metadata": {"name": name, "namespace": ns}}, dict(actual)))
    def refused(write: Write, failure: Failure, _answers: Sequence[Any]) -> Outcome:
        return Outcome(error=f"{write.describe()}: {failure.message}")  # the finalizer stays: again

    return ExternalGatewayPlan(outcome=Outcome(remove_finalizer=m.FINALIZER, writes=tuple(actions),
                                               refused=refused if actions else None))
