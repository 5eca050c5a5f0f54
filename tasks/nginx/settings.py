"""Settings of the NGINX edge: where things live (:class:`EdgeNames`) and what the ``nkl-config``
ConfigMap says (:class:`Settings`).

The environment part (:class:`EdgeSettings`, ``RECONCILERY_NGINX_*``) is read through :mod:`config`.
Pure: :func:`parse_settings` turns the ConfigMap's ``data`` into typed settings or raises
:class:`SettingsError` listing every problem; :func:`tls_material` picks the PEM blocks out of the
Secrets it names. Keys as in nginx-loadbalancer-kubernetes v0.3 (``nginx-hosts``, ``tls-mode``,
``ca-certificate``, ``client-certificate``, ``log-level``) under the seed's "nkl" names.
"""

from __future__ import annotations

import base64
import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field
from pydantic_settings import SettingsConfigDict

import config

#: ``log-level`` values (the original's logrus names) -> Python logging levels.
LOG_LEVELS: dict[str, int] = {
    "panic": logging.CRITICAL, "fatal": logging.CRITICAL, "error": logging.ERROR, "warn": logging.WARNING,
    "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "trace": logging.DEBUG,
}


class SettingsError(ValueError):
    """The ConfigMap (or a Secret it names) is invalid. ``problems`` lists each one, as ``key: why``."""

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
    """

    namespace: str = "nkl"
    configmap: str = "nkl-config"
    watched_namespace: str = "nginx-ingress"
    port_prefix: str = "nkl-"
    annotation_prefix: str = "nginxinc.io"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EdgeNames:
        """Names from ``RECONCILERY_NGINX_*`` variables (``env``, default this process's settings), the
        defaults for those unset or blank. Raises :class:`config.SettingsError` on a bad variable."""
        return (current() if env is None else EdgeSettings.load(env)).names


class EdgeSettings(config.Settings):
    """The environment part of the NGINX edge's settings (``RECONCILERY_NGINX_*``); the rest comes
    from the ``nkl-config`` ConfigMap (:class:`Settings`)."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_NGINX_")

    namespace: str = Field(EdgeNames.namespace, description="Namespace of the settings ConfigMap and the TLS Secrets.")
    configmap: str = Field(EdgeNames.configmap, description="Name of the settings ConfigMap.")
    watched_namespace: str = Field(EdgeNames.watched_namespace, description="Namespace whose Services are synced.")
    port_prefix: str = Field(EdgeNames.port_prefix, description="Service port names with this prefix name upstreams.")
    annotation_prefix: str = Field(EdgeNames.annotation_prefix, description=(
        "``<prefix>/<port name>: http|stream`` on a Service chooses the upstream kind."))
    resync_seconds: config.Seconds = Field(300.0, description=(
        "Seconds between resyncs of every (host, upstream): repairs drift on the NGINX Plus side."))

    @property
    def names(self) -> EdgeNames:
        """Where the edge reads its inputs."""
        return EdgeNames(self.namespace.strip(), self.configmap.strip(), self.watched_namespace.strip(),
                         self.port_prefix.strip(), self.annotation_prefix.strip())


#: This process's NGINX edge settings (environment part), read on first use.
current = config.cached(EdgeSettings)


@dataclass(frozen=True)
class Settings:
    """The ``nkl-config`` ConfigMap, parsed.

    Attributes:
        hosts: NGINX Plus API base URLs (e.g. ``http://10.1.1.4:9000/api``), trimmed, without empty
            entries or duplicates, in ConfigMap order.
        tls_mode: see :class:`TLSMode`; ``no-tls`` when the key is absent.
        ca_certificate: name of the Secret (same namespace) whose ``tls.crt`` is the CA; ``""`` = none.
        client_certificate: name of the Secret holding ``tls.crt`` + ``tls.key``; ``""`` = none.
        log_level: one of :data:`LOG_LEVELS`; ``warn`` when absent (the original's default).
    """

    hosts: tuple[str, ...] = ()
    tls_mode: TLSMode = TLSMode.NO_TLS
    ca_certificate: str = ""
    client_certificate: str = ""
    log_level: str = "warn"

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


def parse_settings(data: Mapping[str, Any] | None) -> Settings:
    """The ConfigMap's ``data`` (``None`` = no ConfigMap) as :class:`Settings`.

    A missing ConfigMap or key gives the defaults (no hosts, ``no-tls``, ``warn``). Raises
    :class:`SettingsError` listing every invalid value: a host that is not an http(s) URL, an unknown
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
        raise SettingsError(problems)
    return Settings(hosts=tuple(hosts), tls_mode=tls_mode, ca_certificate=ca, client_certificate=client,
                    log_level=log_level)


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
    """

    mode: TLSMode = TLSMode.NO_TLS
    ca_pem: Redacted | None = None
    client_cert_pem: Redacted | None = None
    client_key_pem: Redacted | None = field(default=None)


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


def tls_material(settings: Settings, secrets: Mapping[str, Mapping[str, Any] | None]) -> TLSMaterial:
    """The PEM blocks for ``settings.tls_mode`` from ``secrets`` (Secret name -> Secret object, ``None``
    when it does not exist).

    Raises :class:`SettingsError` naming the Secret and key that is missing or not PEM (the original
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
        raise SettingsError(problems, where=f"TLS material for tls-mode {mode.value}")
    return TLSMaterial(mode=mode, ca_pem=ca_pem, client_cert_pem=cert_pem, client_key_pem=key_pem)
