"""The AWS IpRange plan (``pkg/kcp/provider/aws/iprange/v2``): a CIDR block on the shoot's VPC and one
subnet per zone; one turn's decision over what was read (pure; the reads and calls are
:mod:`tasks.cloud.aws.iprange`).

:class:`Read` is what EC2 answered (the shoot's VPC and its subnets); :func:`plan_create` /
:func:`plan_delete` answer the :class:`~kube.toolkit.Outcome` whose writes are the EC2 calls (:class:`Call`,
methods of :class:`tasks.cloud.aws.client.Ec2`), with what their answers and a refusal mean;
:func:`read_failed` answers a refused read. A refusal reaches the plan as a :class:`~kube.refusal.Failure`
(plain data), so the plan never sees the client's exceptions. The original's steps,
reasons and messages, including its spelling (``adress``, ``different then``), in its order:

create: the VPC (``VpcNotFound`` ``AWS VPC <name> not found``), ``status.vpcId``; ``CidrCanNotChange``
while Ready; the split into ``2^k >= zones`` ranges (``InvalidCidr`` ``Can not parse CIDR``,
``CidrCanNotSplit``), ``ShootAndVpcMismatch``; ``CidrOverlap`` with another VPC block; the association of
the CIDR (``associating``: again in 10 s; another state than ``associated``: ``CidrAssociationFailed``
``CIDR block status state is <state>``); ``CidrOverlap``
with a subnet that is not Cloud Manager's; ``AssociateVpcCidrBlock`` (refused: ``CidrAssociationFailed``
``Error associating VPC CIDR block: <msg>``), ``status.addressSpaceId``; one subnet per zone lacking one,
tagged ``Name=<kcpName>-<zoneIndex>``, ``.../{name,remote-name,scope}`` and ``.../iprange=1`` (refused:
``CloudProviderError`` ``Error creating subnet <range> in <zone>: <msg>``), appended to
``status.subnets``; wait while one is ``pending`` (1 s); Ready: ``status.subnets`` as EC2 has them, the
single condition Ready/True ``Ready``.

delete: the Ready condition removed; Cloud Manager's subnets in the CIDR (those ``available`` deleted,
the others waited for, 1 s); then the association (``associating`` waited for, ``associated``
disassociated, ``disassociating`` waited for, another state: Error ``Unknown`` ``VPC Cidr block is in
Failed/Associated state``, backoff); then the finalizer. A refused deletion call: Error ``Unknown`` with
the SDK's message.

A retryable refusal (throttling, 5xx, connection) comes back after 10 s without touching the status;
another writes an Error and backs off.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import with_planned
from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones
from tasks.cloud.step import StepBuilder

__all__ = ["Call", "Read", "association_for", "is_cm_subnet", "missing_subnets", "plan_create",
           "plan_delete", "read_failed", "refusal", "subnet_conflict", "tag_value", "vpc_overlap"]

#: Seconds to wait: ``t(10)`` is 10 s scaled by the domain's ``time_scale``.
Timing = Callable[[float], float]

_GONE_STATES = ("disassociated", "disassociating")


def tag_value(obj: Mapping[str, Any], key: str) -> str | None:
    """The value of tag ``key`` of an EC2 object, or ``None``."""
    for tag in obj.get("Tags") or []:
        if tag.get("Key") == key:
            return str(tag.get("Value", ""))
    return None


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


def _subnet_status(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {"id": str(subnet.get("SubnetId")), "zone": str(subnet.get("AvailabilityZone")),
            "range": str(subnet.get("CidrBlock")), "name": str(tag_value(subnet, "Name") or "")}


@dataclass(frozen=True)
class Read:
    """What one turn read from EC2: the shoot's VPC (``None``: not found) and its subnets."""

    vpc: Mapping[str, Any] | None
    subnets: Sequence[Mapping[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Call:
    """One EC2 write of a plan: ``Ec2.<method>(*args)``. A refused call is an Error with ``reason`` and
    ``prefix`` + the SDK's message (a retryable one comes back after 10 s instead)."""

    method: str
    args: tuple[Any, ...]
    reason: str = names.REASON_CLOUD_PROVIDER_ERROR
    prefix: str = ""


def refusal(run: StepBuilder, failure: Failure, reason: str, prefix: str, t: Timing) -> Outcome:
    """The Outcome of a refused EC2 request: retryable (throttling, 5xx, connection) -> come back after
    10 s, the status untouched; else Error ``reason`` ``<prefix><the user's words>`` and backoff."""
    if failure.retryable:
        return run.step(requeue_after=t(10))
    return run.fail(reason, f"{prefix}{failure.message}", backoff=True)


def read_failed(obj: Mapping[str, Any], failure: Failure, reason: str, t: Timing, now: str | None = None) -> Outcome:
    """The Outcome of a turn whose client or reads were refused (``reason``: ``CloudProviderError`` when
    provisioning, ``Unknown`` when deleting): :func:`refusal` over the object as read."""
    return refusal(StepBuilder(obj, now), failure, reason, "", t)


def _calls(run: StepBuilder, t: Timing, calls: Sequence[Call], requeue_after: float | None,
           record: str = "") -> Outcome:
    """The Outcome making ``calls`` in order, then recording their answers (``record``: ``association``
    -> ``status.addressSpaceId``, ``subnets`` -> appended to ``status.subnets``) and coming back after
    ``requeue_after``; a refused one: :func:`refusal` with its reason and prefix (the answers of the calls
    before it are not recorded)."""
    def done(answers: Sequence[Any]) -> Outcome:
        if record == "association" and answers:
            run.set(addressSpaceId=(answers[0] or {}).get("AssociationId"))
        elif record == "subnets" and answers:
            run.set(subnets=[*list(run.current("subnets") or []), *map(_subnet_status, answers)])
        return run.step(requeue_after=requeue_after)

    return with_planned(calls, done, lambda call, failure: refusal(run, failure, call.reason, call.prefix, t))


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One provisioning turn over what was read (see the module doc). Provisioned: state ``Ready``, the
    single condition Ready/True ``Ready``, ``status.subnets`` from EC2."""
    run = StepBuilder(obj, now)

    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc = found.vpc
    if vpc is None:
        return run.fail(names.REASON_VPC_NOT_FOUND, f"AWS VPC {aws.get('vpcNetwork') or ''} not found")
    vpc_id = str(vpc["VpcId"])
    run.set(vpcId=vpc_id)
    cm_subnets = [s for s in found.subnets if is_cm_subnet(s)]
    cidr = str(run.status.get("cidr") or "")
    spec_cidr = str(run.spec.get("cidr") or "")
    if spec_cidr and spec_cidr != cidr and cond.is_true(run.conditions, names.COND_READY):
        return run.fail(names.REASON_CIDR_CAN_NOT_CHANGE, "Cidr can not change in Ready condition")
    zones = _zones(scope)
    ranges = list(run.status.get("ranges") or [])
    if not ranges:
        try:
            ranges = split_by_zones(cidr, len(zones))
        except CidrParseError:
            return run.fail(names.REASON_INVALID_CIDR, "Can not parse CIDR")
        except CidrSplitError as exc:
            return run.fail(names.REASON_CIDR_CAN_NOT_SPLIT, str(exc))
        run.set(ranges=ranges)
    if len(ranges) != len(zones):
        return run.fail(names.REASON_SHOOT_AND_VPC_MISMATCH,
                             f"RangeSubnetCount {len(ranges)} different then shootZonesCount {len(zones)}")
    associations = list(vpc.get("CidrBlockAssociationSet") or [])
    block = vpc_overlap(cidr, associations)
    if block is not None:
        return run.fail(names.REASON_CIDR_OVERLAP, f"CIDR overlaps with VPC adress range cidr {block}")
    assoc = association_for(cidr, associations)
    if assoc is not None:
        state = (assoc.get("CidrBlockState") or {}).get("State")
        if state == "associating":
            return run.step(requeue_after=t(10))
        if state != "associated":
            return run.fail(names.REASON_CIDR_ASSOCIATION_FAILED, f"CIDR block status state is {state}")
    conflict = subnet_conflict(ranges, found.subnets)
    if conflict is not None:
        r, subnet = conflict
        return run.fail(names.REASON_CIDR_OVERLAP, f"Range {r} overlaps with existing subnet "
                             f"{subnet.get('SubnetId')} with cidr {subnet.get('CidrBlock')}")
    if assoc is None:
        return _calls(run, t, (Call("associate_cidr", (vpc_id, cidr), names.REASON_CIDR_ASSOCIATION_FAILED,
                                    "Error associating VPC CIDR block: "),), t(1), "association")
    run.set(addressSpaceId=assoc.get("AssociationId"))
    remote = run.spec.get("remoteRef") or {}
    scope_name = str((run.spec.get("scope") or {}).get("name") or "")
    calls = []
    for index, zone, r in missing_subnets(ranges, zones, cm_subnets):
        tags = {"Name": f"{run.name}-{index}", names.TAG_NAME: f"{run.namespace}/{run.name}",
                names.TAG_REMOTE_NAME: f"{remote.get('namespace', '')}/{remote.get('name', '')}",
                names.TAG_SCOPE: scope_name, names.TAG_IPRANGE: "1"}
        calls.append(Call("create_subnet", (vpc_id, zone, r, tags), names.REASON_CLOUD_PROVIDER_ERROR,
                          f"Error creating subnet {r} in {zone}: "))
    if calls:
        return _calls(run, t, calls, t(1), "subnets")
    if any(s.get("State") == "pending" for s in cm_subnets):
        return run.step(requeue_after=t(1))
    run.set(subnets=[_subnet_status(s) for s in sorted(cm_subnets, key=lambda s: str(s.get("CidrBlock")))])
    return run.ready()


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn (see the module doc): the subnets, then the CIDR association; a Outcome that
    releases the finalizer once both are gone."""
    run = StepBuilder(obj, now).without(names.COND_READY)

    vpc = found.vpc
    if vpc is None:
        return run.step(remove_finalizer=names.FINALIZER)
    cidr = str(run.status.get("cidr") or "")
    cm_subnets = [s for s in found.subnets if is_cm_subnet(s) and (not cidr or _overlap(str(s.get("CidrBlock")), cidr))]
    deletes = tuple(Call("delete_subnet", (str(s["SubnetId"]),), names.REASON_UNKNOWN)
                    for s in cm_subnets if s.get("State") == "available")
    if cm_subnets or deletes:
        return _calls(run, t, deletes, t(1))
    run.set(subnets=None)
    if not cidr:
        return run.step(remove_finalizer=names.FINALIZER)
    associations = list(vpc.get("CidrBlockAssociationSet") or [])
    assoc = association_for(cidr, associations)
    if assoc is None:
        disassociating = any(a.get("CidrBlock") == cidr and (a.get("CidrBlockState") or {}).get("State")
                             == "disassociating" for a in associations)
        return run.step(requeue_after=t(1)) if disassociating else run.step(remove_finalizer=names.FINALIZER)
    state = (assoc.get("CidrBlockState") or {}).get("State")
    if state == "associating":
        return run.step(requeue_after=t(1))
    if state == "associated":
        return _calls(run, t, (Call("disassociate_cidr", (str(assoc["AssociationId"]),), names.REASON_UNKNOWN),), t(1))
    return run.fail(names.REASON_UNKNOWN, "VPC Cidr block is in Failed/Associated state", backoff=True)
