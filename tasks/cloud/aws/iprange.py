"""The AWS IpRange flow (``pkg/kcp/provider/aws/iprange/v2``): a CIDR block on the shoot's VPC and one
subnet per zone.

One turn is read → pure plan → calls → Step, the recipe of every Cloud kind (docs/cloud.md):
:func:`read` asks :class:`~tasks.cloud.aws.client.Ec2` for the VPC and its subnets (:class:`Read`);
:func:`plan_create` / :func:`plan_delete` decide over that plain data (pure, with the helpers
:func:`vpc_overlap`, :func:`association_for`, :func:`subnet_conflict`, :func:`missing_subnets`) and
answer a :class:`Plan`: the EC2 writes to make (:class:`Call`) and the :class:`~kube.toolkit.Step`
they lead to; :func:`apply` makes the calls. Reasons and messages are the original's, including its
spelling (``adress``, ``different then``). Retryable SDK errors requeue after 10 s without an Error;
other SDK errors write an Error condition and back off.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

import kube.toolkit.conditions as cond
from kube.toolkit.step import Step
from tasks.cloud import names
from tasks.cloud.aws.client import AwsError, AwsRefused, Ec2, ec2_for, is_retryable, tag_value, user_message
from tasks.cloud.providers import IpRangeContext
from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones
from tasks.cloud.step import StepBuilder

log = structlog.get_logger("tasks.cloud.aws")

__all__ = ["Call", "Plan", "Read", "apply", "association_for", "delete", "missing_subnets", "plan_create",
           "plan_delete", "read", "reconcile", "subnet_conflict", "vpc_overlap"]

#: Seconds to wait: ``t(10)`` is 10 s scaled by the domain's ``time_scale``.
Timing = Callable[[float], float]

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


@dataclass
class Plan:
    """A plan's answer: ``calls`` to make in order, then the Step of :meth:`done` (with the calls'
    answers); a refused call ends the turn with :meth:`failed`."""

    run: StepBuilder
    t: Timing
    calls: tuple[Call, ...] = ()
    requeue_after: float | None = None
    final: Step | None = None
    record: str = ""  #: how the calls' answers go into the status: "association" or "subnets"

    def done(self, answers: Sequence[Any] = ()) -> Step:
        """The Step once every call was made (``answers``: their results, in order)."""
        if self.final is not None:
            return self.final
        if self.record == "association" and answers:
            self.run.set(addressSpaceId=(answers[0] or {}).get("AssociationId"))
        elif self.record == "subnets" and answers:
            self.run.set(subnets=[*list(self.run.current("subnets") or []), *map(_subnet_status, answers)])
        return self.run.step(requeue_after=self.requeue_after)

    def failed(self, call: Call | None, exc: Exception) -> Step:
        """The Step of a refused call (``call`` ``None``: a refused read)."""
        return sdk_failure(self.run, exc, call.reason if call else names.REASON_CLOUD_PROVIDER_ERROR,
                           call.prefix if call else "", self.t)


def sdk_failure(run: StepBuilder, exc: Exception, reason: str, prefix: str, t: Timing) -> Step:
    """A refused EC2 request: retryable -> come back after 10 s; else an Error and backoff."""
    if is_retryable(exc):
        log.info("aws retryable error", iprange=run.name, error=str(exc))
        return run.step(requeue_after=t(10))
    return run.fail(reason, f"{prefix}{user_message(exc)}", backoff=True)


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Plan:
    """One provisioning turn over what :func:`read` found (pure). Provisioned: state ``Ready``, the
    single condition Ready/True ``Ready``, ``status.subnets`` from EC2."""
    run = StepBuilder(obj, now)

    def stop(step: Step) -> Plan:
        return Plan(run, t, final=step)

    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc = found.vpc
    if vpc is None:
        return stop(run.fail(names.REASON_VPC_NOT_FOUND, f"AWS VPC {aws.get('vpcNetwork') or ''} not found"))
    vpc_id = str(vpc["VpcId"])
    run.set(vpcId=vpc_id)
    cm_subnets = [s for s in found.subnets if is_cm_subnet(s)]
    cidr = str(run.status.get("cidr") or "")
    spec_cidr = str(run.spec.get("cidr") or "")
    if spec_cidr and spec_cidr != cidr and cond.is_true(run.conditions, names.COND_READY):
        return stop(run.fail(names.REASON_CIDR_CAN_NOT_CHANGE, "Cidr can not change in Ready condition"))
    zones = _zones(scope)
    ranges = list(run.status.get("ranges") or [])
    if not ranges:
        try:
            ranges = split_by_zones(cidr, len(zones))
        except CidrParseError:
            return stop(run.fail(names.REASON_INVALID_CIDR, "Can not parse CIDR"))
        except CidrSplitError as exc:
            return stop(run.fail(names.REASON_CIDR_CAN_NOT_SPLIT, str(exc)))
        run.set(ranges=ranges)
    if len(ranges) != len(zones):
        return stop(run.fail(names.REASON_SHOOT_AND_VPC_MISMATCH,
                             f"RangeSubnetCount {len(ranges)} different then shootZonesCount {len(zones)}"))
    associations = list(vpc.get("CidrBlockAssociationSet") or [])
    block = vpc_overlap(cidr, associations)
    if block is not None:
        return stop(run.fail(names.REASON_CIDR_OVERLAP, f"CIDR overlaps with VPC adress range cidr {block}"))
    assoc = association_for(cidr, associations)
    if assoc is not None:
        state = (assoc.get("CidrBlockState") or {}).get("State")
        if state == "associating":
            return stop(run.step(requeue_after=t(10)))
        if state != "associated":
            return stop(run.fail(names.REASON_CIDR_ASSOCIATION_FAILED, f"CIDR block status state is {state}"))
    conflict = subnet_conflict(ranges, found.subnets)
    if conflict is not None:
        r, subnet = conflict
        return stop(run.fail(names.REASON_CIDR_OVERLAP, f"Range {r} overlaps with existing subnet "
                             f"{subnet.get('SubnetId')} with cidr {subnet.get('CidrBlock')}"))
    if assoc is None:
        return Plan(run, t, calls=(Call("associate_cidr", (vpc_id, cidr), names.REASON_CIDR_ASSOCIATION_FAILED,
                                        "Error associating VPC CIDR block: "),),
                    requeue_after=t(1), record="association")
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
        return Plan(run, t, calls=tuple(calls), requeue_after=t(1), record="subnets")
    if any(s.get("State") == "pending" for s in cm_subnets):
        return stop(run.step(requeue_after=t(1)))
    run.set(subnets=[_subnet_status(s) for s in sorted(cm_subnets, key=lambda s: str(s.get("CidrBlock")))])
    return stop(run.ready())


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Plan:
    """One deletion turn (pure): the subnets, then the CIDR association; a Step that releases the
    finalizer once both are gone."""
    run = StepBuilder(obj, now).without(names.COND_READY)

    def stop(step: Step) -> Plan:
        return Plan(run, t, final=step)

    vpc = found.vpc
    if vpc is None:
        return stop(run.step(remove_finalizer=names.FINALIZER))
    cidr = str(run.status.get("cidr") or "")
    cm_subnets = [s for s in found.subnets if is_cm_subnet(s) and (not cidr or _overlap(str(s.get("CidrBlock")), cidr))]
    deletes = tuple(Call("delete_subnet", (str(s["SubnetId"]),), names.REASON_UNKNOWN)
                    for s in cm_subnets if s.get("State") == "available")
    if cm_subnets or deletes:
        return Plan(run, t, calls=deletes, requeue_after=t(1))
    run.set(subnets=None)
    if not cidr:
        return stop(run.step(remove_finalizer=names.FINALIZER))
    associations = list(vpc.get("CidrBlockAssociationSet") or [])
    assoc = association_for(cidr, associations)
    if assoc is None:
        disassociating = any(a.get("CidrBlock") == cidr and (a.get("CidrBlockState") or {}).get("State")
                             == "disassociating" for a in associations)
        return stop(run.step(requeue_after=t(1)) if disassociating else run.step(remove_finalizer=names.FINALIZER))
    state = (assoc.get("CidrBlockState") or {}).get("State")
    if state == "associating":
        return stop(run.step(requeue_after=t(1)))
    if state == "associated":
        return Plan(run, t, calls=(Call("disassociate_cidr", (str(assoc["AssociationId"]),), names.REASON_UNKNOWN),),
                    requeue_after=t(1))
    return stop(run.fail(names.REASON_UNKNOWN, "VPC Cidr block is in Failed/Associated state", backoff=True))


def read(ec2: Ec2, obj: Mapping[str, Any], scope: Mapping[str, Any]) -> Read:
    """The VPC (by ``status.vpcId``, else by the Scope's VPC name) and its subnets. Raises
    :class:`~tasks.cloud.aws.client.AwsError`."""
    aws = ((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc_id = str((obj.get("status") or {}).get("vpcId") or "")
    vpc = ec2.vpc(vpc_id) if vpc_id else ec2.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    return Read(vpc, ec2.subnets(vpc["VpcId"]) if vpc is not None else [])


def apply(ec2: Ec2, plan: Plan) -> Step:
    """Make the plan's calls in order; the Step they lead to (a refused call's Error or retry)."""
    answers = []
    for call in plan.calls:
        try:
            answers.append(getattr(ec2, call.method)(*call.args))
        except AwsRefused as exc:
            return plan.failed(call, exc)
    return plan.done(answers)


def _client(ctx: IpRangeContext) -> Ec2:
    spec = ctx.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return ec2_for(ctx.settings, account, str(spec.get("region") or ""))


def _turn(ctx: IpRangeContext, plan: Callable[[Read], Plan], reason: str) -> Step:
    try:
        ec2 = _client(ctx)
        return apply(ec2, plan(read(ec2, ctx.obj, ctx.scope)))
    except AwsError as exc:
        return sdk_failure(StepBuilder(ctx.obj), exc, reason, "", ctx.settings.t)


def reconcile(ctx: IpRangeContext) -> Step:
    """One provisioning turn of the KCP IpRange of ``ctx`` (read → :func:`plan_create` → calls)."""
    return _turn(ctx, lambda found: plan_create(ctx.obj, ctx.scope, found, ctx.settings.t),
                 names.REASON_CLOUD_PROVIDER_ERROR)


def delete(ctx: IpRangeContext) -> Step:
    """One deletion turn (read → :func:`plan_delete` → calls)."""
    return _turn(ctx, lambda found: plan_delete(ctx.obj, found, ctx.settings.t), names.REASON_UNKNOWN)
