"""The AWS provider of Cloud Resources (``aws`` in :data:`tasks.cloud.clouds.PROVIDERS`): Scope (account from
STS), the shoot VPC's NAT gateway IPs and the ranges an IpRange's CIDR is allocated beside (its
provisioning is the IpRange kind's ``aws`` provider, :mod:`tasks.cloud.aws.iprange`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.aws import client
from tasks.cloud.aws.scope import aws_network_reference, aws_scope_info
from tasks.cloud.providers import Provider, ProviderError, ScopeInputs
from tasks.cloud.settings import current as current_settings


class AwsProvider(Provider):
    """The ``aws`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "aws"

    def scope_info(self, inputs: ScopeInputs) -> dict[str, Any]:
        """Account from STS with the credential Secret's keys; networks from the Shoot."""
        key = inputs.credentials.get("accessKeyID", "")
        secret = inputs.credentials.get("secretAccessKey", "")
        if not key or not secret:
            raise ProviderError("the credentials Secret has no accessKeyID/secretAccessKey")
        try:
            account = client.caller_account(key, secret, inputs.region, current_settings())
        except client.AwsError as exc:
            raise ProviderError(f"STS GetCallerIdentity failed: {client.user_message(exc)}",
                                retryable=client.is_retryable(exc), code=client.error_code(exc)) from exc
        return aws_scope_info(inputs.shoot, inputs.vpc_network, account)

    def network_reference(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        return aws_network_reference(scope)

    def nat_gateway_ips(self, scope: Mapping[str, Any]) -> list[str]:
        """NAT gateway IPs of the shoot's VPC (found by its Name tag)."""
        spec = scope.get("spec") or {}
        aws = (spec.get("scope") or {}).get("aws") or {}
        try:
            ec2 = client.ec2_for(current_settings(), str(aws.get("accountId") or ""), str(spec.get("region") or ""))
            vpc = ec2.vpc_by_name(str(aws.get("vpcNetwork") or ""))
            return ec2.nat_gateway_ips([vpc["VpcId"]]) if vpc else []
        except client.AwsError as exc:
            raise ProviderError(client.user_message(exc), retryable=client.is_retryable(exc)) from exc

    # each kind's steps (reconcile, delete): its module of the layer, taking the provider's context
