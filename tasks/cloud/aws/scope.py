"""AWS's part of the Scope (``pkg/kcp/scope`` ``createScopeAws``) and of the exposed data.

:func:`aws_scope_info` is pure (the Shoot's networking and AWS InfrastructureConfig); the account
comes from STS ``GetCallerIdentity`` with the credential Secret's ``accessKeyID`` /
``secretAccessKey`` in the shoot's region.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["aws_network_reference", "aws_scope_info"]


def aws_scope_info(shoot: Mapping[str, Any], vpc_network: str, account_id: str) -> dict[str, Any]:
    """``spec.scope.aws``: account, VPC network name, nodes/pods/services, the VPC (id, CIDR) and the
    zones ``{name, internal, public, workers}`` in the shoot's order."""
    spec = shoot.get("spec") or {}
    networking = spec.get("networking") or {}
    infra = ((spec.get("provider") or {}).get("infrastructureConfig") or {}).get("networks") or {}
    vpc = infra.get("vpc") or {}
    network: dict[str, Any] = {k: str(networking[k]) for k in ("nodes", "pods", "services") if networking.get(k)}
    network["vpc"] = {k: str(vpc[k]) for k in ("id", "cidr") if vpc.get(k)}
    network["zones"] = [{k: str(z.get(k) or "") for k in ("name", "internal", "public", "workers")}
                        for z in infra.get("zones") or [] if isinstance(z, dict)]
    return {"accountId": account_id, "vpcNetwork": vpc_network, "network": network}


def aws_network_reference(scope: Mapping[str, Any]) -> dict[str, Any]:
    """``{"aws": {awsAccountId, region, networkName}}`` of the ``<kyma>--kyma`` Network."""
    spec = scope.get("spec") or {}
    aws = (spec.get("scope") or {}).get("aws") or {}
    ref = {"awsAccountId": str(aws.get("accountId") or ""), "region": str(spec.get("region") or ""),
           "networkName": str(aws.get("vpcNetwork") or "")}
    vpc_id = ((aws.get("network") or {}).get("vpc") or {}).get("id")
    if vpc_id:
        ref["vpcId"] = str(vpc_id)
    return {"aws": ref}
