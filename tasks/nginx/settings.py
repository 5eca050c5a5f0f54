"""Settings of the NGINX edge: where things live and which modes run (:class:`EdgeNames`), what the
``nkl-config`` ConfigMap says (:class:`ModeConfig`, "nkl" mode) and what the NGINXaaS Loadbalancer for
Kubernetes configuration says (:func:`parse_nlk_settings`, "nlk" mode).

The environment part (:class:`EdgeSettings`, ``RECONCILERY_NGINX_*``) is read through :mod:`config`.
Pure: :func:`parse_settings` turns the ConfigMap's ``data`` into typed settings or raises
:class:`ConfigError` listing every problem; :func:`tls_material` picks the PEM blocks out of the
Secrets it names. Keys as in nginx-loadbalancer-kubernetes v0.3 (``nginx-hosts``, ``tls-mode``,
``ca-certificate``, ``client-certificate``, ``log-level``) under the seed's "nkl" names; the "nlk" mode's
keys as nginx/nginx-loadbalancer-kubernetes v1.2's ``config.yaml`` (``nginx-hosts``,
``service-annotation-match``, ``tls-mode``, ``log-level``) plus ``NGINXAAS_DATAPLANE_API_KEY``.
"""

from __future__ import annotations

import base64
import enum
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, Field
from pydantic_settings import SettingsConfigDict

import config

#: The selection modes: ``nkl`` (the seed: one namespace, ``nkl-`` ports, NodePort) and ``nlk`` (the
#: current NGINXaaS Loadbalancer for Kubernetes: annotated Services of every namespace, ``http-``/
#: ``stream-`` ports, NodePort, LoadBalancer and ClusterIP through EndpointSlices).
MODES = ("nkl", "nlk")
#: The annotation that selects a Service in ``nlk`` mode (its value must equal ``service-annotation-match``).
NLK_ANNOTATION = "nginx.com/nginxaas"
#: ``service-annotation-match`` when the configuration does not say (the original's default).
NLK_DEFAULT_MATCH = "nginxaas"
#: The key of the original's configuration file inside its ConfigMap (Helm chart ``<name>-nlk-config``).
NLK_CONFIG_KEY = "config.yaml"

#: ``log-level`` values (the original's logrus names) -> Python logging levels.
LOG_LEVELS: dict[str, int] = {
    "panic": logging.CRITICAL, "fatal": logging.CRITICAL, "error": logging.ERROR, "warn": logging.WARNING,
    "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "trace": logging.DEBUG,
}


class ConfigError(ValueError):
    """A mode's configuration (the ``nkl-config`` ConfigMap, the ``nlk`` configuration, or a Secret one of
    them names) is invalid. ``problems`` lists each one, as ``key: why``. (Not :class:`config.SettingsError`,
    which is about the process's environment.)"""

    def __init__(self, problems: list[str], where: str = "nkl-config") -> None:
        super().__init__(f"invalid {where}: " + "; ".join(problems))
        self.problems = problems


class TLSMode(enum.Enum):
    """How the client talks TLS to the NGINX Plus hosts (nginx-loadbalancer-kubernetes v0.3 modes).

    - ``no-tls``: no verification of the server certificate (works with http and https URLs);
    - ``ca-tls``: verify against the system CA roots;
    - ``ca-mtls``: as ``ca-tls`` plus a client certificate (``client-certificate`` Secret);
    - ``ss-tls``: verify only against the CA in the ``ca-certificate`` Secret (self-signed);
    - ``ss-mtls``: as ``ss-tls`` plus a client certificate.
    """

    NO_TLS = "no-tls"
    CA_TLS = "ca-tls"
    CA_MTLS = "ca-mtls"
    SS_TLS = "ss-tls"
    SS_MTLS = "ss-mtls"

    @property
    def needs_ca(self) -> bool:
        return self in (TLSMode.SS_TLS, TLSMode.SS_MTLS)

    @property
    def needs_client_cert(self) -> bool:
        return self in (TLSMode.CA_MTLS, TLSMode.SS_MTLS)


@dataclass(frozen=True)
class EdgeNames:
    """Where the NGINX edge reads its inputs. Defaults are the seed's ("nkl" era) names.

    Attributes:
        namespace: namespace of the settings ConfigMap and the TLS Secrets (env ``RECONCILERY_NGINX_NAMESPACE``).
        configmap: name of the settings ConfigMap (env ``RECONCILERY_NGINX_CONFIGMAP``).
        watched_namespace: namespace whose Services are synced (env ``RECONCILERY_NGINX_WATCHED_NAMESPACE``).
        port_prefix: Service port names with this prefix name upstreams (env ``RECONCILERY_NGINX_PORT_PREFIX``).
        annotation_prefix: ``<prefix>/<port name>: http|stream`` chooses the upstream kind
            (env ``RECONCILERY_NGINX_ANNOTATION_PREFIX``).
        modes: the selection modes that run, a subset of :data:`MODES` (env ``RECONCILERY_NGINX_MODES``).
        nlk_namespace: namespace of the ``nlk`` mode's ConfigMap (env ``RECONCILERY_NGINX_NLK_NAMESPACE``).
        nlk_configmap: name of the ``nlk`` mode's ConfigMap (env ``RECONCILERY_NGINX_NLK_CONFIGMAP``).
        nlk_config_file: the original's ``config.yaml`` to read instead of that ConfigMap; ``""`` = none
            (env ``RECONCILERY_NGINX_NLK_CONFIG_FILE``).
        owned_configmap: name of the ConfigMap recording the upstreams the edge owns, in
            :attr:`owned_namespace` (env ``RECONCILERY_NGINX_OWNED_CONFIGMAP``).
        nlk_allowed_namespaces: the only namespaces whose Services the ``nlk`` mode takes upstreams
            from (``()``: every namespace; env ``RECONCILERY_NGINX_NLK_ALLOWED_NAMESPACES``).
    """

    namespace: str = "nkl"
    configmap: str = "nkl-config"
    watched_namespace: str = "nginx-ingress"
    port_prefix: str = "nkl-"
    annotation_prefix: str = "nginxinc.io"
    modes: tuple[str, ...] = ("nkl",)
    nlk_namespace: str = "nlk"
    nlk_configmap: str = "nlk-config"
    nlk_config_file: str = ""
    owned_configmap: str = "nginx-edge-upstreams"
    nlk_allowed_namespaces: tuple[str, ...] = ()

    @property
    def nkl(self) -> bool:
        """Whether the ``nkl`` mode runs."""
        return "nkl" in self.modes

    @property
    def nlk(self) -> bool:
        """Whether the ``nlk`` mode runs."""
        return "nlk" in self.modes

    @property
    def owned_namespace(self) -> str:
        """Namespace of the ownership record: the ``nkl`` settings namespace when that mode runs,
        else the ``nlk`` one (a namespace the edge already reads)."""
        return self.namespace if self.nkl else self.nlk_namespace

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EdgeNames:
        """Names from ``RECONCILERY_NGINX_*`` variables (``env``, default this process's settings), the
        defaults for those unset or blank. Raises :class:`config.SettingsError` on a bad variable."""
        return (current() if env is None else EdgeSettings.load(env)).names


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _check_namespace(value: str) -> str:
    """A namespace name (DNS-1123 label): the watcher's and the workers' list/watch stay in one
    namespace (an empty one would list every namespace)."""
    if len(value.strip()) > 63 or not _DNS_LABEL.fullmatch(value.strip()):
        raise ValueError("expected a Kubernetes namespace name (lower-case letters, digits, '-', at most 63)")
    return value


def _check_object_name(value: str) -> str:
    """A ConfigMap name (DNS-1123 subdomain): it becomes the ``metadata.name=<value>`` field selector of
    the watch, which deploy/'s RBAC grants by name (empty, or ``a,b``, would list every ConfigMap)."""
    if len(value.strip()) > 253 or not _DNS_SUBDOMAIN.fullmatch(value.strip()):
        raise ValueError("expected a Kubernetes object name (lower-case letters, digits, '-', '.', at most 253)")
    return value


Namespace = Annotated[str, AfterValidator(_check_namespace)]
ObjectName = Annotated[str, AfterValidator(_check_object_name)]


def _check_modes(value: str) -> str:
    modes = [m.strip() for m in value.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise ValueError(f"expected a comma-separated subset of {', '.join(MODES)}")
    return value


class EdgeSettings(config.Settings):
    """The environment part of the NGINX edge's settings (``RECONCILERY_NGINX_*``); the rest comes
    from each mode's configuration (:class:`ModeConfig`: the ``nkl-config`` ConfigMap, the ``nlk`` one)."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_NGINX_")

    namespace: Namespace = Field(EdgeNames.namespace, description=(
        "Namespace of the settings ConfigMap and the TLS Secrets."))
    configmap: ObjectName = Field(EdgeNames.configmap, description="Name of the settings ConfigMap.")
    watched_namespace: Namespace = Field(EdgeNames.watched_namespace, description=(
        "Namespace whose Services are synced."))
    port_prefix: str = Field(EdgeNames.port_prefix, description="Service port names with this prefix name upstreams.")
    annotation_prefix: str = Field(EdgeNames.annotation_prefix, description=(
        "``<prefix>/<port name>: http|stream`` on a Service chooses the upstream kind."))
    resync_seconds: config.Seconds = Field(300.0, description=(
        "Seconds between resyncs of every (host, upstream): repairs drift on the NGINX Plus side and "
        "empties owned upstreams no Service names any more."))
    modes: Annotated[str, AfterValidator(_check_modes)] = Field("nkl", description=(
        "Comma-separated selection modes: ``nkl`` (Services of the watched namespace, ``nkl-`` ports, "
        "NodePort) and/or ``nlk`` (Services of every namespace annotated ``nginx.com/nginxaas``, "
        "``http-``/``stream-`` ports, NodePort, LoadBalancer, ClusterIP through EndpointSlices)."))
    nlk_namespace: Namespace = Field(EdgeNames.nlk_namespace, description="Namespace of the ``nlk`` mode's ConfigMap.")
    nlk_configmap: ObjectName = Field(EdgeNames.nlk_configmap, description=(
        "Name of the ``nlk`` mode's ConfigMap: the original's keys, or its ``config.yaml`` under that key."))
    nlk_config_file: str = Field("", description=(
        "Path of the original's ``config.yaml`` (e.g. ``/etc/nginxaas-loadbalancer-kubernetes/config.yaml``); "
        "when set it is read instead of the ``nlk`` ConfigMap; the watcher checks it every 5 s and a change "
        "re-syncs every ``nlk`` upstream (mount it into the watcher and the workers)."))
    owned_configmap: ObjectName = Field(EdgeNames.owned_configmap, description=(
        "ConfigMap recording which (host, upstream) pairs the edge owns, so upstreams no Service names "
        "any more are emptied even after a restart."))
    nlk_allowed_namespaces: str = Field("", description=(
        "Comma-separated namespaces whose annotated Services the ``nlk`` mode takes upstreams from; a Service "
        "of another namespace names none (a Warning Event ``NamespaceNotAllowed`` on it). Empty: every "
        "namespace (the original's)."))
    api_key: str = Field("", validation_alias="NGINXAAS_DATAPLANE_API_KEY", repr=False, description=(
        "NGINXaaS dataplane API key, sent as ``Authorization: ApiKey <base64>`` to the ``nlk`` mode's hosts only."))

    @property
    def names(self) -> EdgeNames:
        """Where the edge reads its inputs."""
        modes = tuple(m for m in MODES if m in {x.strip() for x in self.modes.split(",")})
        return EdgeNames(self.namespace.strip(), self.configmap.strip(), self.watched_namespace.strip(),
                         self.port_prefix.strip(), self.annotation_prefix.strip(), modes,
                         self.nlk_namespace.strip(), self.nlk_configmap.strip(), self.nlk_config_file.strip(),
                         self.owned_configmap.strip(),
                         tuple(sorted({n.strip() for n in self.nlk_allowed_namespaces.split(",") if n.strip()})))


#: This process's NGINX edge settings (environment part), read on first use.
current = config.cached(EdgeSettings)


@dataclass(frozen=True)
class ModeConfig:
    """One mode's configuration, parsed: the ``nkl-config`` ConfigMap (``nkl``) or the original's
    ``config.yaml`` (``nlk``). (The environment part is :class:`EdgeSettings`.)

    Attributes:
        hosts: NGINX Plus API base URLs (e.g. ``http://10.1.1.4:9000/api``), trimmed, without empty
            entries or duplicates, in ConfigMap order.
        tls_mode: see :class:`TLSMode`; ``no-tls`` when the key is absent.
        ca_certificate: name of the Secret (same namespace) whose ``tls.crt`` is the CA; ``""`` = none.
        client_certificate: name of the Secret holding ``tls.crt`` + ``tls.key``; ``""`` = none.
        log_level: one of :data:`LOG_LEVELS`; ``warn`` when absent (the original's default).
        annotation_match: (``nlk`` mode) a Service is selected when its ``nginx.com/nginxaas``
            annotation equals this value.
    """

    hosts: tuple[str, ...] = ()
    tls_mode: TLSMode = TLSMode.NO_TLS
    ca_certificate: str = ""
    client_certificate: str = ""
    log_level: str = "warn"
    annotation_match: str = NLK_DEFAULT_MATCH

    @property
    def python_log_level(self) -> int:
        return LOG_LEVELS[self.log_level]


def parse_hosts(raw: str) -> tuple[list[str], list[str]]:
    """Split ``nginx-hosts`` on commas, trimming whitespace (the original did not trim: a space after
    a comma became part of the URL). Returns ``(hosts, problems)``; empty entries are skipped and
    duplicates kept once; each host must be an ``http``/``https`` URL with a host name.
    """
    hosts: list[str] = []
    problems: list[str] = []
    for entry in raw.split(","):
        url = entry.strip()
        if not url:
            continue
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(f"nginx-hosts: {url!r} is not an http(s) URL such as http://10.1.1.4:9000/api")
            continue
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            problems.append(f"nginx-hosts: {url!r} has an invalid port")
            continue
        if url not in hosts:
            hosts.append(url)
    return hosts, problems


def parse_settings(data: Mapping[str, Any] | None) -> ModeConfig:
    """The ConfigMap's ``data`` (``None`` = no ConfigMap) as :class:`ModeConfig`.

    A missing ConfigMap or key gives the defaults (no hosts, ``no-tls``, ``warn``). Raises
    :class:`ConfigError` listing every invalid value: a host that is not an http(s) URL, an unknown
    ``tls-mode`` or ``log-level``, or a TLS mode whose Secret name is missing. (The original logged an
    invalid value and kept the previous one, which made the effective settings depend on history.)
    """
    data = data or {}
    problems: list[str] = []
    hosts, host_problems = parse_hosts(str(data.get("nginx-hosts") or ""))
    problems += host_problems
    raw_mode = str(data.get("tls-mode") or "").strip() or TLSMode.NO_TLS.value
    try:
        tls_mode = TLSMode(raw_mode)
    except ValueError:
        modes = ", ".join(m.value for m in TLSMode)
        problems.append(f"tls-mode: {raw_mode!r} is not one of {modes}")
        tls_mode = TLSMode.NO_TLS
    ca = str(data.get("ca-certificate") or "").strip()
    client = str(data.get("client-certificate") or "").strip()
    if tls_mode.needs_ca and not ca:
        problems.append(f"ca-certificate: tls-mode {tls_mode.value} needs the name of a Secret holding the CA")
    if tls_mode.needs_client_cert and not client:
        problems.append(
            f"client-certificate: tls-mode {tls_mode.value} needs the name of a Secret holding tls.crt and tls.key")
    log_level = str(data.get("log-level") or "").strip().lower() or "warn"
    if log_level not in LOG_LEVELS:
        problems.append(f"log-level: {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    if problems:
        raise ConfigError(problems)
    return ModeConfig(hosts=tuple(hosts), tls_mode=tls_mode, ca_certificate=ca, client_certificate=client,
                    log_level=log_level)


#: ``nlk`` mode ``tls-mode`` values (nginx/nginx-loadbalancer-kubernetes v1.2) -> our modes:
#: ``no-tls`` and ``skip-verify-tls`` skip verification, ``ca-tls`` (and no value) verify.
NLK_TLS_MODES: dict[str, TLSMode] = {"": TLSMode.CA_TLS, "ca-tls": TLSMode.CA_TLS, "no-tls": TLSMode.NO_TLS,
                                     "skip-verify-tls": TLSMode.NO_TLS}
_NLK_KEYS = ("nginx-hosts", "service-annotation-match", "tls-mode", "log-level")


def nlk_document(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The ``nlk`` configuration mapping from a ConfigMap's ``data``: its ``config.yaml`` (the
    original's file form, as its Helm chart mounts it) parsed when present, else ``data`` itself
    (the keys written straight into the ConfigMap). Raises :class:`ConfigError` when
    ``config.yaml`` is not a YAML mapping."""
    data = data or {}
    if NLK_CONFIG_KEY not in data:
        return data
    try:
        doc = yaml.safe_load(str(data[NLK_CONFIG_KEY]) or "{}") or {}
    except yaml.YAMLError as exc:
        raise ConfigError([f"{NLK_CONFIG_KEY}: not YAML: {str(exc).splitlines()[0]}"], where="nlk config") from None
    if not isinstance(doc, Mapping):
        raise ConfigError([f"{NLK_CONFIG_KEY}: expected a mapping of keys, got {type(doc).__name__}"],
                            where="nlk config")
    return doc


def parse_nlk_settings(doc: Mapping[str, Any] | None, where: str = "nlk config") -> ModeConfig:
    """The ``nlk`` mode's configuration (the original's ``config.yaml`` keys, see :func:`nlk_document`)
    as :class:`ModeConfig`; ``None`` gives the defaults (no hosts).

    - ``nginx-hosts``: a YAML list, or a string split on whitespace as the original (viper) does,
      and on commas too (the original made one bogus URL of ``a,b``); URLs validated as in
      :func:`parse_hosts`;
    - ``service-annotation-match``: default ``nginxaas``;
    - ``tls-mode``: ``no-tls``/``skip-verify-tls`` (no verification), ``ca-tls`` or nothing (verify
      against the system roots);
    - ``log-level``: as the ``nkl`` mode's; default ``warn``.

    Raises :class:`ConfigError` listing every problem (the original logged an unknown
    ``tls-mode``/``log-level`` and carried on with a default), an unknown key included.
    """
    doc = doc or {}
    problems: list[str] = []
    raw_hosts = doc.get("nginx-hosts")
    if raw_hosts is None:
        entries: list[str] = []
    elif isinstance(raw_hosts, list):
        entries = [str(h) for h in raw_hosts]
    else:
        entries = re.split(r"[\s,]+", str(raw_hosts))
    hosts, host_problems = parse_hosts(",".join(e.strip() for e in entries))
    problems += host_problems
    raw_mode = str(doc.get("tls-mode") or "").strip()
    tls_mode = NLK_TLS_MODES.get(raw_mode)
    if tls_mode is None:
        problems.append(f"tls-mode: {raw_mode!r} is not one of no-tls, skip-verify-tls, ca-tls")
        tls_mode = TLSMode.CA_TLS
    match = str(doc.get("service-annotation-match") or "").strip() or NLK_DEFAULT_MATCH
    log_level = str(doc.get("log-level") or "").strip().lower() or "warn"
    if log_level not in LOG_LEVELS:
        problems.append(f"log-level: {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    unknown = sorted(str(k) for k in doc if k not in _NLK_KEYS)
    if unknown:
        problems.append(f"unknown keys {', '.join(unknown)} (expected {', '.join(_NLK_KEYS)})")
    if problems:
        raise ConfigError(problems, where=where)
    return ModeConfig(hosts=tuple(hosts), tls_mode=tls_mode, log_level=log_level, annotation_match=match)


class Redacted:
    """Secret bytes that never print: ``repr``/``str`` give ``[REDACTED]`` (original issue #145)."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes) -> None:
        self._value = value

    def reveal(self) -> bytes:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Redacted) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return "[REDACTED]"

    __str__ = __repr__


@dataclass(frozen=True)
class TLSMaterial:
    """What the client needs for a TLS mode: PEM bytes, each wrapped in :class:`Redacted`.

    ``ca_pem`` is only set for ``ss-*`` modes, ``client_cert_pem``/``client_key_pem`` for ``*-mtls``.
    ``source`` names the Secrets they were read from: the client keeps one live context per mode and
    source, and loads changed material into it.
    """

    mode: TLSMode = TLSMode.NO_TLS
    ca_pem: Redacted | None = None
    client_cert_pem: Redacted | None = None
    client_key_pem: Redacted | None = field(default=None)
    source: str = ""


def _secret_value(secret: Mapping[str, Any], key: str) -> bytes:
    """``data[key]`` (base64) or ``stringData[key]`` of a Secret, as bytes; ``b""`` when absent."""
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key]).encode()
    encoded = (secret.get("data") or {}).get(key)
    if not encoded:
        return b""
    try:
        return base64.b64decode(encoded, validate=True)
    except ValueError:
        return b""


def tls_material(settings: ModeConfig, secrets: Mapping[str, Mapping[str, Any] | None]) -> TLSMaterial:
    """The PEM blocks for ``settings.tls_mode`` from ``secrets`` (Secret name -> Secret object, ``None``
    when it does not exist).

    Raises :class:`ConfigError` naming the Secret and key that is missing or not PEM (the original
    silently fell back to skipping verification). Secret contents never appear in messages.
    """
    mode = settings.tls_mode
    problems: list[str] = []
    ca_pem = cert_pem = key_pem = None

    def read(name: str, key: str, marker: bytes) -> Redacted | None:
        secret = secrets.get(name)
        if secret is None:
            problems.append(f"Secret {name!r} not found")
            return None
        value = _secret_value(secret, key)
        if marker not in value:
            problems.append(f"Secret {name!r} key {key}: missing or not PEM")
            return None
        return Redacted(value)

    if mode.needs_ca:
        ca_pem = read(settings.ca_certificate, "tls.crt", b"-----BEGIN CERTIFICATE-----")
    if mode.needs_client_cert:
        cert_pem = read(settings.client_certificate, "tls.crt", b"-----BEGIN CERTIFICATE-----")
        key_pem = read(settings.client_certificate, "tls.key", b"PRIVATE KEY-----")
    if problems:
        raise ConfigError(problems, where=f"TLS material for tls-mode {mode.value}")
    source = ",".join(name for name, used in ((settings.ca_certificate, mode.needs_ca),
                                              (settings.client_certificate, mode.needs_client_cert)) if used)
    return TLSMaterial(mode=mode, ca_pem=ca_pem, client_cert_pem=cert_pem, client_key_pem=key_pem, source=source)
