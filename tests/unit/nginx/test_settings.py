"""Settings from the nkl-config ConfigMap: the seed's keys, the original's values, our clearer errors."""

from __future__ import annotations

import base64

import pytest

from tasks.nginx.settings import (
    ConfigError,
    EdgeNames,
    ModeConfig,
    Redacted,
    TLSMode,
    parse_hosts,
    parse_settings,
    tls_material,
)

CERT = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize(("raw", "hosts"), [
    ("http://10.1.1.4:9000/api,http://10.1.1.5:9000/api", ["http://10.1.1.4:9000/api", "http://10.1.1.5:9000/api"]),
    # the original did not trim: " http://..." became a broken URL
    ("http://10.1.1.4:9000/api, http://10.1.1.5:9000/api ", ["http://10.1.1.4:9000/api", "http://10.1.1.5:9000/api"]),
    ("https://10.0.0.1:9000/api", ["https://10.0.0.1:9000/api"]),
    ("", []),
    (" , ,", []),
    ("http://a:1/api,http://a:1/api", ["http://a:1/api"]),
])
def test_hosts_are_split_on_commas_and_trimmed(raw: str, hosts: list[str]) -> None:
    assert parse_hosts(raw) == (hosts, [])
    assert parse_settings({"nginx-hosts": raw}).hosts == tuple(hosts)


@pytest.mark.parametrize("raw", ["10.1.1.4:9000/api", "ftp://h/api", "http://", "http://h:99999/api"])
def test_a_host_that_is_not_an_http_url_is_an_error(raw: str) -> None:
    with pytest.raises(ConfigError, match="nginx-hosts"):
        parse_settings({"nginx-hosts": raw})


def test_missing_configmap_and_keys_give_the_defaults() -> None:
    assert parse_settings(None) == ModeConfig()
    assert parse_settings({}) == ModeConfig(hosts=(), tls_mode=TLSMode.NO_TLS, log_level="warn")


@pytest.mark.parametrize(("data", "mode"), [
    ({"tls-mode": "no-tls"}, TLSMode.NO_TLS),
    ({"tls-mode": "ca-tls"}, TLSMode.CA_TLS),
    ({"tls-mode": "ca-mtls", "client-certificate": "nkl-tls-client-secret"}, TLSMode.CA_MTLS),
    ({"tls-mode": "ss-tls", "ca-certificate": "nkl-tls-ca-secret"}, TLSMode.SS_TLS),
    ({"tls-mode": "ss-mtls", "ca-certificate": "ca", "client-certificate": "client"}, TLSMode.SS_MTLS),
    ({"tls-mode": " ss-tls ", "ca-certificate": "ca"}, TLSMode.SS_TLS),
])
def test_tls_modes(data: dict[str, str], mode: TLSMode) -> None:
    assert parse_settings(data).tls_mode is mode


@pytest.mark.parametrize(("data", "message"), [
    ({"tls-mode": "mtls"}, "tls-mode: 'mtls' is not one of no-tls, ca-tls, ca-mtls, ss-tls, ss-mtls"),
    ({"tls-mode": "ss-tls"}, "ca-certificate: tls-mode ss-tls needs"),
    ({"tls-mode": "ca-mtls"}, "client-certificate: tls-mode ca-mtls needs"),
    ({"tls-mode": "ss-mtls", "ca-certificate": "ca"}, "client-certificate"),
    ({"log-level": "loud"}, "log-level: 'loud' is not one of"),
])
def test_invalid_values_are_clear_errors(data: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(data)
    assert message in str(caught.value)


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings({"nginx-hosts": "nope", "tls-mode": "x", "log-level": "y"})
    assert len(caught.value.problems) == 3


@pytest.mark.parametrize(("raw", "level"), [
    ("panic", 50), ("fatal", 50), ("error", 40), ("warn", 30), ("info", 20), ("debug", 10), ("trace", 10),
    ("INFO", 20), ("", 30),
])
def test_log_levels(raw: str, level: int) -> None:
    assert parse_settings({"log-level": raw}).python_log_level == level


def test_names_default_to_the_seed_and_come_from_the_environment() -> None:
    assert EdgeNames() == EdgeNames("nkl", "nkl-config", "nginx-ingress", "nkl-", "nginxinc.io")
    assert EdgeNames.from_env({}) == EdgeNames()
    env = {"RECONCILERY_NGINX_NAMESPACE": "nlk", "RECONCILERY_NGINX_CONFIGMAP": "nlk-config",
           "RECONCILERY_NGINX_PORT_PREFIX": "nlk-", "RECONCILERY_NGINX_WATCHED_NAMESPACE": " "}
    assert EdgeNames.from_env(env) == EdgeNames("nlk", "nlk-config", "nginx-ingress", "nlk-", "nginxinc.io")


@pytest.mark.parametrize("variable, value", [
    ("RECONCILERY_NGINX_CONFIGMAP", "nkl-config,other"),  # a field selector of two terms: no longer one name
    ("RECONCILERY_NGINX_CONFIGMAP", "nkl/config"), ("RECONCILERY_NGINX_NLK_CONFIGMAP", "NLK"),
    ("RECONCILERY_NGINX_OWNED_CONFIGMAP", ".."), ("RECONCILERY_NGINX_NAMESPACE", "."),
    ("RECONCILERY_NGINX_WATCHED_NAMESPACE", "a.b"), ("RECONCILERY_NGINX_NLK_NAMESPACE", "x" * 64),
])
def test_namespaces_and_configmaps_must_be_kubernetes_names(variable: str, value: str) -> None:
    """They become watch paths and ``metadata.name=`` field selectors, which deploy/ grants by name."""
    import config
    from tasks.nginx.settings import EdgeSettings

    with pytest.raises(config.SettingsError, match=variable):
        EdgeSettings.load({variable: value})
    assert EdgeSettings.load({variable: "nkl-2"}).names  # a valid name is taken


def _secret(**data: bytes) -> dict[str, object]:
    return {"data": {k.replace("_", "."): base64.b64encode(v).decode() for k, v in data.items()}}


def test_tls_material_reads_the_named_secrets() -> None:
    settings = parse_settings({"tls-mode": "ss-mtls", "ca-certificate": "ca", "client-certificate": "client"})
    material = tls_material(settings, {"ca": _secret(tls_crt=CERT), "client": _secret(tls_crt=CERT, tls_key=KEY)})
    assert material.ca_pem == Redacted(CERT)
    assert material.client_key_pem is not None and material.client_key_pem.reveal() == KEY


def test_tls_material_for_no_tls_needs_no_secret() -> None:
    assert tls_material(ModeConfig(), {}).ca_pem is None


@pytest.mark.parametrize(("secrets", "message"), [
    ({}, "Secret 'ca' not found"),
    ({"ca": _secret(tls_crt=b"garbage")}, "Secret 'ca' key tls.crt: missing or not PEM"),
    ({"ca": {"data": {}}}, "missing or not PEM"),
])
def test_tls_material_problems_are_errors_not_a_silent_skip_verify(secrets: dict, message: str) -> None:
    settings = parse_settings({"tls-mode": "ss-tls", "ca-certificate": "ca"})
    with pytest.raises(ConfigError, match=message):
        tls_material(settings, secrets)


def test_secrets_never_print() -> None:
    settings = parse_settings({"tls-mode": "ca-mtls", "client-certificate": "client"})
    material = tls_material(settings, {"client": _secret(tls_crt=CERT, tls_key=KEY)})
    text = repr(material) + str(material)
    assert "PRIVATE" not in text and "MIIE" not in text
    assert "[REDACTED]" in text
