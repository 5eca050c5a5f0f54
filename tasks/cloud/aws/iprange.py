"""The AWS IpRange flow (``pkg/kcp/provider/aws/iprange/v2``): a CIDR block on the shoot's VPC and one
subnet per zone.

The decisions are pure functions over the EC2 answers (:func:`vpc_overlap`, :func:`association_for`,
:func:`subnet_conflict`, :func:`missing_subnets`); :func:`reconcile` and :func:`delete` are the thin
flow over :class:`~tasks.cloud.aws.client.Ec2`. Reasons and messages are the original's, including its
spelling (``adress``, ``different then``). Retryable SDK errors requeue after 10 s without touching the
status; other SDK errors write an Error condition and back off.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import botocore.exceptions
import structlog

from tasks.cloud import conditions as cond
from tasks.cloud import names
from tasks.cloud.aws.client import Ec2, ec2_for, is_retryable, tag_value, user_message
from tasks.cloud.providers import IpRangeContext
from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones
from workers.controller import Result

log = structlog.get_logger("tasks.cloud.aws")

__all__ = ["association_for", "delete", "missing_subnets", "reconcile", "subnet_conflict", "vpc_overlap"]

_GONE_STATES = ("disassociated", "disassociating")


def _overlap(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_network(a, strict=False).overlaps(ipaddress.ip_network(b, strict=False))
    except ValueError:
        return False


def vpc_overlap(cidr: str, associations: Iterable[Mapping[str, Any]]) -> str | None:
    """A VPC CIDR block (other than an identical one, and not disassociated) overlapping ``cidr``."""
    for assoc in associations:
        block = str(assoc.get("CidrBlock") or "")
        if block == cidr or (assoc.get("CidrBlockState") or {}).get("State") == "disassociated":
            continue
        if _overlap(block, cidr):
            return block
    return None


def association_for(cidr: str, associations: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The VPC's association of exactly ``cidr`` that is not (being) disassociated."""
    for assoc in associations:
        if assoc.get("CidrBlock") == cidr and (assoc.get("CidrBlockState") or {}).get("State") not in _GONE_STATES:
            return assoc
    return None


def is_cm_subnet(subnet: Mapping[str, Any]) -> bool:
    """Whether a subnet is one of Cloud Manager's (tag ``cloud-manager.kyma-project.io/iprange``)."""
    return tag_value(subnet, names.TAG_IPRANGE) is not None


def subnet_conflict(ranges: Sequence[str],
                    subnets: Iterable[Mapping[str, Any]]) -> tuple[str, Mapping[str, Any]] | None:
    """The first ``(range, subnet)`` where a split range overlaps a subnet that is not Cloud Manager's."""
    others = [s for s in subnets if not is_cm_subnet(s)]
    for r in ranges:
        for subnet in others:
            if _overlap(r, str(subnet.get("CidrBlock") or "")):
                return r, subnet
    return None


def missing_subnets(ranges: Sequence[str], zones: Sequence[str],
                    cm_subnets: Iterable[Mapping[str, Any]]) -> list[tuple[int, str, str]]:
    """``(zone index, zone, range)`` of each range/zone pair not already covered by a Cloud Manager
    subnet with that AZ and CIDR."""
    have = {(s.get("AvailabilityZone"), s.get("CidrBlock")) for s in cm_subnets}
    return [(i, zone, r) for i, (zone, r) in enumerate(zip(zones, ranges, strict=False)) if (zone, r) not in have]


def _zones(scope: Mapping[str, Any]) -> list[str]:
    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    return [str(z.get("name")) for z in (aws.get("network") or {}).get("zones") or [] if z.get("name")]


def _client(ctx: IpRangeContext) -> Ec2:
    spec = ctx.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return ec2_for(ctx.settings, account, str(spec.get("region") or ""))


def _subnet_status(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {"id": str(subnet.get("SubnetId")), "zone": str(subnet.get("AvailabilityZone")),
            "range": str(subnet.get("CidrBlock")), "name": str(tag_value(subnet, "Name") or "")}


def _sdk_failure(ctx: IpRangeContext, exc: Exception, reason: str, prefix: str) -> Result:
    if is_retryable(exc):
        log.info("aws retryable error", iprange=ctx.name, error=str(exc))
        return Result.requeue(ctx.settings.t(10))
    message = f"{prefix}{user_message(exc)}"
    ctx.status.fail(reason, message)
    return Result.error(message)


def reconcile(ctx: IpRangeContext) -> Result | None:
    """Provision the IpRange; ``None`` once every subnet is available (the caller writes Ready)."""
    try:
        return _reconcile(ctx, _client(ctx))
    except botocore.exceptions.BotoCoreError as exc:
        return _sdk_failure(ctx, exc, names.REASON_CLOUD_PROVIDER_ERROR, "")
    except botocore.exceptions.ClientError as exc:
        return _sdk_failure(ctx, exc, names.REASON_CLOUD_PROVIDER_ERROR, "")


def _reconcile(ctx: IpRangeContext, ec2: Ec2) -> Result | None:
    t = ctx.settings.t
    status = ctx.status
    aws = ((ctx.scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc_name = str(aws.get("vpcNetwork") or "")
    vpc_id = str(status.status.get("vpcId") or "")
    vpc = ec2.vpc(vpc_id) if vpc_id else ec2.vpc_by_name(vpc_name)
    if vpc is None:
        status.fail(names.REASON_VPC_NOT_FOUND, f"AWS VPC {vpc_name} not found")
        return Result.done()
    status.patch(vpcId=vpc["VpcId"])
    subnets = ec2.subnets(vpc["VpcId"])
    cm_subnets = [s for s in subnets if is_cm_subnet(s)]
    cidr = ctx.cidr
    spec_cidr = str((ctx.obj.get("spec") or {}).get("cidr") or "")
    if spec_cidr and spec_cidr != cidr and cond.is_true(status.conditions, names.COND_READY):
        status.fail(names.REASON_CIDR_CAN_NOT_CHANGE, "Cidr can not change in Ready condition")
        return Result.done()
    zones = _zones(ctx.scope)
    ranges = list(status.status.get("ranges") or [])
    if not ranges:
        try:
            ranges = split_by_zones(cidr, len(zones))
        except CidrParseError:
            status.fail(names.REASON_INVALID_CIDR, "Can not parse CIDR")
            return Result.done()
        except CidrSplitError as exc:
            status.fail(names.REASON_CIDR_CAN_NOT_SPLIT, str(exc))
            return Result.done()
        status.patch(ranges=ranges)
    if len(ranges) != len(zones):
        status.fail(names.REASON_SHOOT_AND_VPC_MISMATCH,
                    f"RangeSubnetCount {len(ranges)} different then shootZonesCount {len(zones)}")
        return Result.done()
    associations = list(vpc.get("CidrBlockAssociationSet") or [])
    block = vpc_overlap(cidr, associations)
    if block is not None:
        status.fail(names.REASON_CIDR_OVERLAP, f"CIDR overlaps with VPC adress range cidr {block}")
        return Result.done()
    assoc = association_for(cidr, associations)
    if assoc is not None:
        state = (assoc.get("CidrBlockState") or {}).get("State")
        if state == "associating":
            return Result.requeue(t(10))
        if state != "associated":
            status.fail(names.REASON_CIDR_ASSOCIATION_FAILED, f"CIDR block status state is {state}")
            return Result.done()
    conflict = subnet_conflict(ranges, subnets)
    if conflict is not None:
        r, subnet = conflict
        status.fail(names.REASON_CIDR_OVERLAP, f"Range {r} overlaps with existing subnet "
                    f"{subnet.get('SubnetId')} with cidr {subnet.get('CidrBlock')}")
        return Result.done()
    if assoc is None:
        try:
            created = ec2.associate_cidr(vpc["VpcId"], cidr)
        except botocore.exceptions.ClientError as exc:
            return _sdk_failure(ctx, exc, names.REASON_CIDR_ASSOCIATION_FAILED, "Error associating VPC CIDR block: ")
        status.patch(addressSpaceId=created.get("AssociationId"))
        return Result.requeue(t(1))
    status.patch(addressSpaceId=assoc.get("AssociationId"))
    remote = (ctx.obj.get("spec") or {}).get("remoteRef") or {}
    made = []
    for index, zone, r in missing_subnets(ranges, zones, cm_subnets):
        tags = {"Name": f"{ctx.name}-{index}", names.TAG_NAME: f"{ctx.namespace}/{ctx.name}",
                names.TAG_REMOTE_NAME: f"{remote.get('namespace', '')}/{remote.get('name', '')}",
                names.TAG_SCOPE: ctx.scope_name, names.TAG_IPRANGE: "1"}
        try:
            subnet = ec2.create_subnet(vpc["VpcId"], zone, r, tags)
        except botocore.exceptions.ClientError as exc:
            return _sdk_failure(ctx, exc, names.REASON_CLOUD_PROVIDER_ERROR, f"Error creating subnet {r} in {zone}: ")
        made.append(_subnet_status(subnet))
    if made:
        status.patch(subnets=[*list(status.status.get("subnets") or []), *made])
        return Result.requeue(t(1))
    if any(s.get("State") == "pending" for s in cm_subnets):
        return Result.requeue(t(1))
    status.patch(subnets=[_subnet_status(s) for s in sorted(cm_subnets, key=lambda s: str(s.get("CidrBlock")))])
    return None


def delete(ctx: IpRangeContext) -> Result | None:
    """Delete the subnets, then the CIDR association; ``None`` once both are gone."""
    try:
        return _delete(ctx, _client(ctx))
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        return _sdk_failure(ctx, exc, names.REASON_UNKNOWN, "")


def _delete(ctx: IpRangeContext, ec2: Ec2) -> Result | None:
    t = ctx.settings.t
    status = ctx.status
    status.without(names.COND_READY)
    aws = ((ctx.scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc_id = str(status.status.get("vpcId") or "")
    vpc = ec2.vpc(vpc_id) if vpc_id else ec2.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    if vpc is None:
        return None
    cm_subnets = [s for s in ec2.subnets(vpc["VpcId"]) if is_cm_subnet(s)
                  and (not ctx.cidr or _overlap(str(s.get("CidrBlock")), ctx.cidr))]
    deleted = False
    for subnet in cm_subnets:
        if subnet.get("State") == "available":
            ec2.delete_subnet(str(subnet["SubnetId"]))
            deleted = True
    if cm_subnets or deleted:
        return Result.requeue(t(1))
    status.patch(subnets=None)
    if not ctx.cidr:
        return None
    assoc = association_for(ctx.cidr, vpc.get("CidrBlockAssociationSet") or [])
    if assoc is None:
        disassociating = any(a.get("CidrBlock") == ctx.cidr and (a.get("CidrBlockState") or {}).get("State")
                             == "disassociating" for a in vpc.get("CidrBlockAssociationSet") or [])
        return Result.requeue(t(1)) if disassociating else None
    state = (assoc.get("CidrBlockState") or {}).get("State")
    if state == "associating":
        return Result.requeue(t(1))
    if state == "associated":
        ec2.disassociate_cidr(str(assoc["AssociationId"]))
        return Result.requeue(t(1))
    status.fail(names.REASON_UNKNOWN, "VPC Cidr block is in Failed/Associated state")
    return Result.error("VPC Cidr block is in Failed/Associated state")
