"""The AWS NfsInstance plan (``pkg/kcp/provider/aws/nfsinstance``): an EFS file system with one mount
target per IpRange subnet, behind a security group that lets NFS in from the shoot (pure).

:func:`plan_create` / :func:`plan_delete` decide over what :class:`Read` holds and answer the
:class:`~kube.toolkit.Outcome`: the calls to make (methods of
:class:`tasks.cloud.aws.nfsinstance_client.Efs`, as :class:`kube.toolkit.Call` s in its writes), what a
refused one means and the status they lead to. Provisioning, one step per turn, in the original's order:

1. ``validateIpRangeSubnets``: no subnets -> Error ``ValidationFailed`` ``IpRange has zero subnets, and
   at least one is needed``, forget;
2. the security group ``<kcpName>`` in the IpRange's VPC (tags ``Name``, remote-name, name, scope);
3. ingress TCP 2049 from the Scope's pods CIDR and the VPC CIDR (those missing);
4. ``CreateFileSystem`` (creation token and ``Name`` = the KCP name, encrypted, the spec's performance
   and throughput modes, tags ``Name``, name, remote-name, scope, shoot); refused -> Error
   ``FailedCreatingFileSystem`` ``Failed creating file system: <message>``, come back in 1 min;
5. wait until its life cycle state is ``available`` (1 s); ``status.id`` = the file system id;
6. mount targets in subnets of other VPCs are deleted (the original's migration fix, done before the
   validation below so the fix can run at all); mount targets in subnets that are not the IpRange's ->
   Error ``InvalidMountTargetsAlreadyExist`` ``Invalid mount targets already exist: [<ids>]``, forget
   (EFS allows one mount target per zone);
7. ``CreateMountTarget`` in every IpRange subnet lacking one (come back in 10 s); wait until all are
   ``available`` (300 ms; ``error`` -> Error ``Unknown`` ``Mount target <id>/<zone> in error state``);
8. Ready: ``hosts = [<fsId>.efs.<region>.amazonaws.com]``, ``host``, ``path /``, ``id``, the condition
   Ready ``NFS instance is ready``; every turn refreshes ``status.capacity`` (the file system's
   ``SizeInBytes.Value`` as a binary-SI quantity) and a Ready one comes back after the capacity check
   interval (1 h).

Deletion: Ready removed; mount targets deleted and waited for, then the file system, then the security
group; the finalizer goes once all three are gone.

A refused call (:func:`tasks.cloud.calls.with_calls`): transient (throttling, 5xx) -> back after 10 s, the
status as planned; else the call's Error (``<prefix><AWS message>``) and its retry, or the only Error
condition with backoff. A refused read: :func:`read_failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall, with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["Read", "binary_quantity", "efs_host", "plan_create", "plan_delete", "read_failed"]

Timing = Callable[[float], float]
NFS_PORT = 2049
READY_MESSAGE = "NFS instance is ready"
REASON_VALIDATION_FAILED = "ValidationFailed"
REASON_FAILED_CREATING_FILE_SYSTEM = "FailedCreatingFileSystem"
REASON_INVALID_MOUNT_TARGETS = "InvalidMountTargetsAlreadyExist"
_WAIT_STATES = ("creating", "updating", "deleting")


@dataclass(frozen=True)
class Read:
    """What one turn read: the security group (``IpPermissions``), the file system (by creation token),
    its mount targets, and ``subnet id -> VPC id`` of the mount targets' subnets that are not the
    IpRange's."""

    security_group: Mapping[str, Any] | None = None
    file_system: Mapping[str, Any] | None = None
    mount_targets: Sequence[Mapping[str, Any]] = field(default_factory=list)
    subnet_vpcs: Mapping[str, str] = field(default_factory=dict)


#: Seconds (scaled) a transient failure comes back after.
TRANSIENT = 10.0


def _call(method: str, prefix: str = "", reason: str = names.REASON_CLOUD_PROVIDER_ERROR,
          retry: float | None = None, **kwargs: Any) -> KwCall:
    """``Efs.<method>(**kwargs)``; refused: an Error ``reason`` ``<prefix><AWS message>``, back after
    ``retry`` seconds (``None``: with backoff)."""
    return KwCall(method, kwargs, prefix, reason, with_cause=True, retry=retry)


def binary_quantity(size: int) -> str:
    """``size`` bytes as Kubernetes prints a binary-SI quantity (``resource.NewQuantity(n, BinarySI)``):
    ``6Ki``, ``1Gi``, ``1500``."""
    for power, suffix in ((6, "Ei"), (5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")):
        unit = 1024 ** power
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def efs_host(fs_id: str, region: str) -> str:
    """``<fsId>.efs.<region>.amazonaws.com``."""
    return f"{fs_id}.efs.{region}.amazonaws.com"


def _tag_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _remote(obj: Mapping[str, Any]) -> str:
    ref = (obj.get("spec") or {}).get("remoteRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}"


def _missing_ingress(group: Mapping[str, Any], cidrs: Sequence[str]) -> list[str]:
    have = {str(r.get("CidrIp")) for perm in group.get("IpPermissions") or []
            if perm.get("IpProtocol") == "tcp" and perm.get("ToPort") == NFS_PORT
            for r in perm.get("IpRanges") or []}
    return [c for c in cidrs if c and c not in have]


def _capacity(run: StepBuilder, fs: Mapping[str, Any] | None) -> None:
    size = ((fs or {}).get("SizeInBytes") or {}).get("Value")
    if size is not None:
        quantity = binary_quantity(int(size))
        if run.status.get("capacity") != quantity:
            run.set(capacity=quantity)


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                t: Timing, capacity_check: float, now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc). ``capacity_check``: seconds a Ready turn comes back after."""
    run = StepBuilder(obj, now)

    def then(requeue: float, *calls: KwCall) -> Outcome:
        return with_calls(run, t, run.step(requeue_after=requeue), calls, transient=TRANSIENT)

    ip_status = iprange.get("status") or {}
    subnets = [s for s in ip_status.get("subnets") or [] if s.get("id")]
    if not subnets:  # 1
        return run.fail(REASON_VALIDATION_FAILED, "IpRange has zero subnets, and at least one is needed")
    spec = scope.get("spec") or {}
    aws_scope = (spec.get("scope") or {}).get("aws") or {}
    network = aws_scope.get("network") or {}
    scope_name = str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "")
    fs = found.file_system
    _capacity(run, fs)
    group = found.security_group
    if group is None:  # 2
        tags = {"Name": run.name, names.TAG_REMOTE_NAME: _remote(obj), names.TAG_NAME: _tag_name(obj),
                names.TAG_SCOPE: scope_name}
        return then(t(0.1), _call("create_security_group", "Error creating security group: ",
                                  vpc_id=str(ip_status.get("vpcId") or ""), name=run.name, tags=tags))
    group_id = str(group.get("GroupId"))
    vpc_cidr = str((network.get("vpc") or {}).get("cidr") or "")
    missing = _missing_ingress(group, [str(network.get("pods") or ""), vpc_cidr])
    if missing:  # 3
        return then(t(0.1), _call("authorize_ingress", "Error adding security group ingress: ",
                                  group_id=group_id, cidrs=missing, port=NFS_PORT))
    if fs is None:  # 4
        aws = ((obj.get("spec") or {}).get("instance") or {}).get("aws") or {}
        tags = {"Name": run.name, names.TAG_NAME: _tag_name(obj), names.TAG_REMOTE_NAME: _remote(obj),
                names.TAG_SCOPE: scope_name, names.TAG_SHOOT: str(spec.get("shootName") or "")}
        return then(t(1), _call("create_file_system", "Failed creating file system: ",
                                REASON_FAILED_CREATING_FILE_SYSTEM, 60, token=run.name,
                                performance_mode=str(aws.get("performanceMode") or "generalPurpose"),
                                throughput_mode=str(aws.get("throughput") or "bursting"), tags=tags))
    fs_id = str(fs.get("FileSystemId"))
    if run.status.get("id") != fs_id:
        run.set(id=fs_id)
    if fs.get("LifeCycleState") != "available":  # 5
        return run.step(requeue_after=t(1))
    ours = {str(s["id"]) for s in subnets}
    vpc_id = str(ip_status.get("vpcId") or "")
    mts = list(found.mount_targets)
    elsewhere = [m for m in mts if str(m.get("SubnetId")) not in ours
                 and found.subnet_vpcs.get(str(m.get("SubnetId")), vpc_id) not in ("", vpc_id)]
    if elsewhere:  # 6
        return then(t(1), *(_call("delete_mount_target", mount_target_id=str(m["MountTargetId"])) for m in elsewhere
                            if m.get("LifeCycleState") == "available"))
    invalid = [str(m.get("MountTargetId")) for m in mts if str(m.get("SubnetId")) not in ours]
    if invalid:
        return run.fail(REASON_INVALID_MOUNT_TARGETS, f"Invalid mount targets already exist: [{' '.join(invalid)}]")
    have = {str(m.get("SubnetId")) for m in mts}
    creates = [_call("create_mount_target", "Error creating mount target: ", fs_id=fs_id, subnet_id=str(s["id"]),
                     group_ids=[group_id]) for s in subnets if str(s["id"]) not in have]
    if creates:  # 7
        return then(t(10), *creates)
    for m in mts:
        state = m.get("LifeCycleState")
        if state in _WAIT_STATES:
            return run.step(requeue_after=t(0.3))
        if state == "error":
            where = f"{m.get('MountTargetId')}/{m.get('AvailabilityZoneName')}"
            return run.fail(names.REASON_UNKNOWN, f"Mount target {where} in error state")
    host = efs_host(fs_id, str(spec.get("region") or ""))  # 8
    run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY,
                  hosts=[host], host=host, path="/", id=fs_id)
    return run.step(requeue_after=capacity_check)


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn: mount targets, the file system, the security group; then the finalizer."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    run.set(state=names.STATE_DELETING)

    def then(step: Outcome, *calls: KwCall) -> Outcome:
        return with_calls(run, t, step, calls, transient=TRANSIENT)

    fs = found.file_system
    if fs is not None:
        mts = list(found.mount_targets)
        if any(m.get("LifeCycleState") in _WAIT_STATES for m in mts):
            return then(run.step(requeue_after=t(0.3)))
        deletes = [_call("delete_mount_target", reason=names.REASON_UNKNOWN, mount_target_id=str(m["MountTargetId"]))
                   for m in mts if m.get("LifeCycleState") == "available"]
        if deletes:
            return then(run.step(requeue_after=t(1)), *deletes)
        if mts:
            return then(run.step(requeue_after=t(0.3)))
        state = fs.get("LifeCycleState")
        if state in _WAIT_STATES:
            return then(run.step(requeue_after=t(0.3)))
        if state == "available":
            return then(run.step(requeue_after=t(1)),
                        _call("delete_file_system", reason=names.REASON_UNKNOWN, fs_id=str(fs["FileSystemId"])))
    if found.security_group is not None:
        return then(run.step(requeue_after=t(0.1)), _call("delete_security_group", reason=names.REASON_UNKNOWN,
                                                          group_id=str(found.security_group["GroupId"])))
    return then(run.step(remove_finalizer=names.FINALIZER))


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, now: str | None = None) -> Outcome:
    """A refused read (or client): transient -> back after 10 s, the status untouched; else an Error
    ``CloudProviderError`` with the user's words, with backoff."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(TRANSIENT))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, failure.message, backoff=True)
