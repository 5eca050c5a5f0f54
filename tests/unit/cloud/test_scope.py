"""The Scope built from Garden objects (the common part and AWS's)."""

from __future__ import annotations

import base64

import pytest

from tasks.cloud import names
from tasks.cloud.aws.scope import aws_scope_info
from tasks.cloud.scope import (
    ScopeError,
    binding_secret_ref,
    build_scope,
    decode_secret,
    kyma_network_object,
    missing_labels,
    shoot_name,
)

LABELS = {"kyma-project.io/global-account-id": "ga", "kyma-project.io/subaccount-id": "sa",
          "kyma-project.io/shoot-name": "c-1", "kyma-project.io/region": "eu-central-1",
          "kyma-project.io/broker-plan-name": "aws"}
GC = {"metadata": {"name": "k1", "namespace": "kcp-system", "labels": LABELS}, "spec": {"shoot": {"name": "other"}}}
SHOOT = {"metadata": {"name": "c-1", "namespace": "garden-kyma"}, "spec": {
    "region": "eu-central-1",
    "networking": {"nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13"},
    "provider": {"type": "aws", "infrastructureConfig": {"networks": {
        "vpc": {"cidr": "10.250.0.0/16"},
        "zones": [{"name": "eu-central-1b", "workers": "10.250.64.0/19", "public": "p2", "internal": "i2"},
                  {"name": "eu-central-1a", "workers": "10.250.0.0/19", "public": "p1", "internal": "i1"}]}}}}}


def test_shoot_name_label_then_spec() -> None:
    assert shoot_name(GC) == "c-1"
    assert shoot_name({"spec": {"shoot": {"name": "other"}}}) == "other"


def test_vpc_network_name() -> None:
    assert names.vpc_network("garden-kyma", "c-1") == "shoot--kyma--c-1"
    assert names.vpc_network("kyma-dev", "c-1") == "shoot--kyma-dev--c-1"


def test_aws_scope_keeps_zone_order_and_networks() -> None:
    info = aws_scope_info(SHOOT, "shoot--kyma--c-1", "123456789012")
    assert info == {
        "accountId": "123456789012", "vpcNetwork": "shoot--kyma--c-1",
        "network": {"nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13",
                    "vpc": {"cidr": "10.250.0.0/16"},
                    "zones": [{"name": "eu-central-1b", "internal": "i2", "public": "p2", "workers": "10.250.64.0/19"},
                              {"name": "eu-central-1a", "internal": "i1", "public": "p1", "workers": "10.250.0.0/19"}]}}


def test_build_scope_labels_finalizer_spec() -> None:
    scope = build_scope(kyma="k1", namespace="kcp-system", gardener_cluster=GC, shoot=SHOOT, provider="aws",
                        info={"accountId": "1"})
    assert scope["metadata"]["labels"] == {**LABELS, names.LABEL_KYMA_NAME: "k1"}
    assert scope["metadata"]["finalizers"] == [names.FINALIZER]
    assert scope["spec"] == {"kymaName": "k1", "shootName": "c-1", "region": "eu-central-1", "provider": "aws",
                             "scope": {"aws": {"accountId": "1"}}}
    assert missing_labels(scope, GC) == []
    partial = {"metadata": {"labels": {names.LABEL_KYMA_NAME: "k1"}}}
    assert set(missing_labels(partial, GC)) == set(LABELS)


def test_bindings() -> None:
    cb = {"metadata": {"name": "b", "namespace": "garden-kyma"}, "provider": {"type": "aws"},
          "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "s", "namespace": "garden-x"}}
    assert binding_secret_ref(cb, "CredentialsBinding") == ("aws", "garden-x", "s")
    sb = {"metadata": {"name": "b", "namespace": "garden-kyma"}, "provider": {"type": "gcp"},
          "secretRef": {"name": "t"}}
    assert binding_secret_ref(sb, "SecretBinding") == ("gcp", "garden-kyma", "t")
    with pytest.raises(ScopeError, match="not a Secret"):
        binding_secret_ref({**cb, "credentialsRef": {"kind": "WorkloadIdentity", "name": "w"}}, "CredentialsBinding")


def test_decode_secret_and_network() -> None:
    secret = {"data": {"a": base64.b64encode(b"x").decode(), "bad": "!!"}, "stringData": {"b": "y"}}
    assert decode_secret(secret) == {"a": "x", "b": "y"}
    scope = {"metadata": {"name": "k1", "namespace": "kcp-system"}}
    net = kyma_network_object(scope, {"aws": {"awsAccountId": "1"}})
    assert net["metadata"]["name"] == "k1--kyma" and net["spec"]["type"] == "kyma"
