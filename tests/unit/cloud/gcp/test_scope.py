"""GCP Scope building from a Garden shoot and its credentials (notes §4.2), pure."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from tasks.cloud.gcp.scope import (
    kyma_network_reference,
    needs_rebuild,
    scope_section,
    secret_values,
    vpc_network_name,
)
from tests.unit.cloud.garden import shoot_and_secret


def test_scope_from_the_sample_gcp_shoot() -> None:
    shoot, secret = shoot_and_secret("gcp")
    section = scope_section(shoot, secret_values(secret))
    assert section == {"gcp": {
        "project": "sap-kyma-example-42",
        "vpcNetwork": "shoot--kyma--c-91b7d03",
        "network": {"nodes": "10.250.0.0/22", "pods": "10.96.0.0/13", "services": "10.104.0.0/13"},
        "workers": [{"zones": ["us-east4-a", "us-east4-b", "us-east4-c"]}],
    }}
    scope = {"spec": {"scope": section}}
    assert kyma_network_reference(scope) == {"gcp": {"gcpProject": "sap-kyma-example-42",
                                                     "networkName": "shoot--kyma--c-91b7d03"}}
    assert not needs_rebuild(scope)
    assert needs_rebuild({"spec": {"scope": {"gcp": {"project": "p", "workers": []}}}})


def test_secret_data_is_base64_decoded() -> None:
    payload = json.dumps({"project_id": "p-1"}).encode()
    values = secret_values({"data": {"serviceaccount.json": base64.b64encode(payload).decode()}})
    shoot, _ = shoot_and_secret("gcp")
    section = scope_section(shoot, values)
    assert section is not None and section["gcp"]["project"] == "p-1"


def test_workers_keep_their_zones_in_order() -> None:
    shoot, secret = shoot_and_secret("gcp")
    shoot["spec"]["provider"]["workers"] = [{"name": "a", "zones": ["z-2", "z-1"]}, {"name": "b", "zones": ["z-3"]}]
    section = scope_section(shoot, secret_values(secret))
    assert section is not None and section["gcp"]["workers"] == [{"zones": ["z-2", "z-1"]}, {"zones": ["z-3"]}]


@pytest.mark.parametrize(("credentials", "logged"), [
    ({}, "missing serviceaccount.json key"),
    ({"serviceaccount.json": "{not json"}, "error decoding serviceaccount.json"),
    ({"serviceaccount.json": '{"type": "service_account"}'}, "missing project_id"),
])
def test_missing_key_is_logged_and_stops(caplog: pytest.LogCaptureFixture, credentials: dict[str, str],
                                         logged: str) -> None:
    shoot, _ = shoot_and_secret("gcp")
    with caplog.at_level(logging.ERROR, logger="tasks.cloud.gcp.scope"):
        assert scope_section(shoot, credentials) is None
    assert logged in caplog.text


def test_vpc_network_name() -> None:
    assert vpc_network_name("garden-kyma", "c-1") == "shoot--kyma--c-1"
    assert vpc_network_name("garden-kyma-dev", "c-2") == "shoot--kyma-dev--c-2"
