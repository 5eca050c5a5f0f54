"""nlk mode settings: the original's config.yaml keys (spec §1.5), its ConfigMap forms, the modes variable."""

from __future__ import annotations

import pytest

import config
from tasks.nginx.settings import (
    ConfigError,
    EdgeNames,
    EdgeSettings,
    TLSMode,
    nlk_document,
    parse_nlk_settings,
)

H0, H1 = "http://10.0.0.4:9000/api", "https://10.0.0.5:9000/api"


@pytest.mark.parametrize(("hosts", "expected"), [
    ([H0, H1], [H0, H1]),                       # a YAML list
    (f"{H0} {H1}", [H0, H1]),                   # a string split on whitespace (viper)
    (f"{H0},{H1}", [H0, H1]),                   # and on commas (the original made one bogus URL)
    (f"{H0}\n  {H0}", [H0]),                    # duplicates once
    (None, []),
])
def test_nginx_hosts_forms(hosts: object, expected: list[str]) -> None:
    doc = {} if hosts is None else {"nginx-hosts": hosts}
    assert list(parse_nlk_settings(doc).hosts) == expected


def test_defaults_as_the_original() -> None:
    settings = parse_nlk_settings(None)
    assert settings.annotation_match == "nginxaas" and settings.tls_mode is TLSMode.CA_TLS
    assert settings.log_level == "warn" and settings.hosts == ()


@pytest.mark.parametrize(("raw", "mode"), [("", TLSMode.CA_TLS), ("ca-tls", TLSMode.CA_TLS),
                                           ("no-tls", TLSMode.NO_TLS), ("skip-verify-tls", TLSMode.NO_TLS)])
def test_tls_modes(raw: str, mode: TLSMode) -> None:
    assert parse_nlk_settings({"tls-mode": raw}).tls_mode is mode


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_nlk_settings({"nginx-hosts": ["ftp://x"], "tls-mode": "ss-tls", "log-level": "loud", "hosts": "x"},
                           where="ConfigMap nlk/nlk-config")
    text = str(caught.value)
    assert text.startswith("invalid ConfigMap nlk/nlk-config: ")
    assert len(caught.value.problems) == 4 and "unknown keys hosts" in text


def test_configmap_forms_config_yaml_or_plain_keys() -> None:
    file_form = {"config.yaml": f"nginx-hosts:\n- {H0}\nservice-annotation-match: edge\nlog-level: info\n"}
    plain = {"nginx-hosts": H0, "service-annotation-match": "edge", "log-level": "info"}
    assert parse_nlk_settings(nlk_document(file_form)) == parse_nlk_settings(nlk_document(plain))
    assert parse_nlk_settings(nlk_document(plain)).annotation_match == "edge"
    with pytest.raises(ConfigError, match="expected a mapping"):
        nlk_document({"config.yaml": "- a\n- b\n"})
    with pytest.raises(ConfigError, match="not YAML"):
        nlk_document({"config.yaml": "a: [b\n"})


def test_modes_variable_and_api_key() -> None:
    loaded = EdgeSettings.load({"RECONCILERY_NGINX_MODES": "nlk, nkl", "NGINXAAS_DATAPLANE_API_KEY": "s3cret"})
    assert loaded.names.modes == ("nkl", "nlk") and loaded.api_key == "s3cret"
    assert "s3cret" not in repr(loaded)
    assert EdgeSettings.load({}).names == EdgeNames()
    with pytest.raises(config.SettingsError, match="RECONCILERY_NGINX_MODES"):
        EdgeSettings.load({"RECONCILERY_NGINX_MODES": "nkl,e3"})


def test_ownership_namespace_follows_the_modes() -> None:
    assert EdgeNames().owned_namespace == "nkl"
    assert EdgeNames(modes=("nlk",)).owned_namespace == "nlk"
