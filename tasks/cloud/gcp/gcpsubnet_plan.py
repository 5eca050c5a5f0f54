"""The GCP GcpSubnet plan (``pkg/kcp/provider/gcp/subnet``): one turn's Compute and Network Connectivity
calls over what was read (pure).

The subnetwork is ``projects/<project>/regions/<region>/subnetworks/cm-<kcpName>`` (purpose ``PRIVATE``,
private Google access) in the shoot's VPC with ``spec.cidr``; the service connection policy
``cm-<vpc>-<region>-rc`` (service class ``gcp-memorystore-redis``, what Memorystore for Redis Cluster
needs) lists the subnetworks of the VPC's GcpSubnets in that region. In the original's order:

1. a refused read: ``Failed to load Subnet``, ``Failed to load Service Connection Policy``, ``Failed to
   load GCP Subnet Creation Operation`` (Error ``CloudProviderError``, 60 s);
2. the creation operation (``status.subnetCreationOperationName``) not ``DONE`` -> back after 5 s; done
   with an error -> Error ``KCP GcpSubnet creation operation failed``, and it stays so (the original's
   StopAndForget);
3. no subnetwork -> insert it (``Failed to create GCP Private Subnet``), the operation's name in
   ``status.subnetCreationOperationName``;
4. ``status.id`` = the subnetwork's name, ``status.cidr`` = its range (kept when ``spec.cidr`` is empty
   and a range is recorded);
5. no policy -> create it with this subnetwork (``Failed to create GCP Connection Policy``); a policy
   without this subnetwork -> the subnetwork added (``Failed to update GCP Connection Policy``);
6. Ready: state ``Ready``, the single condition Ready ``Subnet is ready``.

Deletion: this subnetwork removed from a policy that lists others (``Failed to update GCP Connection
Policy``), a policy listing only it deleted (``Failed to delete Subnet``, sic), then the subnetwork
deleted (``Failed to delete Subnet``), each coming back after 10 s (also when it is already gone), then
the finalizer. A refused call is an Error (not exclusive) back after 60 s; a transient one (429, 5xx)
comes back after the GCP retry wait with the status as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.actions import Write
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall, with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["LOAD_MESSAGES", "POLICY_DESCRIPTION", "READY_MESSAGE", "SERVICE_CLASS", "Read", "Where", "plan_create",
           "plan_delete", "read_failed", "where"]

Timing = Callable[[float], float]
#: The policy's service class (``gcp-memorystore-redis``: Memorystore for Redis Cluster) and description.
SERVICE_CLASS = "gcp-memorystore-redis"
POLICY_DESCRIPTION = "Managed by cloud-manager. Used for Redis Cluster."
#: The Ready condition's message.
READY_MESSAGE = "Subnet is ready"
#: The Error condition's message when the subnetwork's insert operation ended with an error (it stays).
OPERATION_FAILED = "KCP GcpSubnet creation operation failed"
#: What a refused read of each is called in the Error condition.
LOAD_MESSAGES = {"subnet": "Failed to load Subnet", "policy": "Failed to load Service Connection Policy",
                 "operation": "Failed to load GCP Subnet Creation Operation"}


@dataclass(frozen=True)
class Where:
    """Where a GcpSubnet lives: the Scope's project, region and VPC network, and the names built from them
    (cloud-manager's ``GetSubnetFullName``, ``GetServiceConnectionPolicyShortName`` / ``FullName``).

    Attributes:
        network: ``projects/<project>/global/networks/<vpc>``.
        parent: ``projects/<project>/locations/<region>`` (the policy's parent).
        policy_id: ``cm-<vpc>-<region>-rc``.
        policy: ``<parent>/serviceConnectionPolicies/<policy_id>``.
    """

    project: str
    region: str
    vpc: str
    network: str
    parent: str
    policy_id: str
    policy: str

    def subnetwork(self, short: str) -> str:
        """``projects/<p>/regions/<r>/subnetworks/<short>``."""
        return f"projects/{self.project}/regions/{self.region}/subnetworks/{short}"


def where(scope: Mapping[str, Any]) -> Where:
    """The :class:`Where` of a Scope."""
    spec = scope.get("spec") or {}
    gcp = (spec.get("scope") or {}).get("gcp") or {}
    project, vpc = str(gcp.get("project") or ""), str(gcp.get("vpcNetwork") or "")
    region = str(spec.get("region") or "")
    parent, policy_id = f"projects/{project}/locations/{region}", f"cm-{vpc}-{region}-rc"
    return Where(project, region, vpc, f"projects/{project}/global/networks/{vpc}", parent, policy_id,
                 f"{parent}/serviceConnectionPolicies/{policy_id}")


def subnet_name(kcp_name: str) -> str:
    """``cm-<kcpName>`` (``GetSubnetShortName``)."""
    return f"cm-{kcp_name}"


@dataclass(frozen=True)
class Read:
    """What one turn read: the subnetwork, the policy, the creation operation (camelCase; ``None``:
    missing or not read), and the first read refused (``failed``: its :data:`LOAD_MESSAGES` key and
    failure; the reads after it were not made)."""

    subnet: Mapping[str, Any] | None = None
    policy: Mapping[str, Any] | None = None
    operation: Mapping[str, Any] | None = None
    failed: tuple[str, Failure] | None = None


def _calls(run: StepBuilder, t: Timing, step: Outcome, call: KwCall, transient: float, *,
           record: str | None = None, gone: float | None = None) -> Outcome:
    """``step`` with ``call`` made first (:func:`~tasks.cloud.calls.with_calls`): ``record`` names the
    status field its answer (an operation's name) goes to; ``gone``: a refusal because the target is
    already gone comes back after ``gone`` seconds instead."""
    out = with_calls(run, t, step, (call,), transient=transient)
    refused, then = out.refused, out.then
    if gone is not None and refused is not None:
        inner = refused

        def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
            return run.step(requeue_after=t(gone)) if failure.not_found else inner(write, failure, answers)

    if record is not None:
        def then(answers: Sequence[Any]) -> Outcome:
            run.set(**{record: str(answers[-1] or "") or None})
            return run.step(requeue_after=step.requeue_after)

    return replace(out, refused=refused, then=then)


def _load_failed(run: StepBuilder, found: Read, t: Timing, retry_wait: float) -> Outcome | None:
    if found.failed is None:
        return None
    what, failure = found.failed
    if failure.retryable:
        return run.step(requeue_after=t(retry_wait))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, LOAD_MESSAGES[what], requeue_after=t(60), exclusive=False)


def _subnetworks(policy: Mapping[str, Any]) -> list[str]:
    return [str(s) for s in ((policy.get("pscConfig") or {}).get("subnetworks") or [])]


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing, now: str | None = None,
                retry_wait: float = 5.0) -> Outcome:
    """One provisioning turn (see the module doc)."""
    run, at = StepBuilder(obj, now), where(scope)
    if (failed := _load_failed(run, found, t, retry_wait)) is not None:
        return failed
    operation = found.operation
    if operation is not None and str(operation.get("status") or "PENDING") != "DONE":
        return run.step(requeue_after=t(5))
    if operation is not None and operation.get("error"):
        if cond.find(run.conditions, names.COND_ERROR) is None:
            return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, OPERATION_FAILED, exclusive=False)
        return run.step()
    subnet = found.subnet
    if subnet is None:
        return _calls(run, t, run.step(requeue_after=t(1)), KwCall(
            "insert_subnetwork", {"project": at.project, "region": at.region, "name": subnet_name(run.name),
                                  "network": at.network, "cidr": str(run.spec.get("cidr") or ""),
                                  "purpose": "PRIVATE", "private_ip_google_access": True},
            "Failed to create GCP Private Subnet"), retry_wait, record="subnetCreationOperationName")
    if not run.status.get("id"):
        run.set(id=str(subnet.get("name") or ""))
    actual = str(subnet.get("ipCidrRange") or "")
    recorded = str(run.status.get("cidr") or "")
    if recorded != actual and not (not run.spec.get("cidr") and recorded):
        run.set(cidr=actual)
    current = at.subnetwork(str(run.current("id") or ""))
    policy = found.policy
    if policy is None:
        return _calls(run, t, run.step(requeue_after=t(1)), KwCall(
            "create_connection_policy", {"parent": at.parent, "policy_id": at.policy_id, "network": at.network,
                                         "service_class": SERVICE_CLASS,
                                         "subnetworks": [at.subnetwork(str(subnet.get("name") or ""))],
                                         "description": POLICY_DESCRIPTION},
            "Failed to create GCP Connection Policy"), retry_wait)
    listed = _subnetworks(policy)
    if current not in listed:
        return _calls(run, t, run.step(requeue_after=t(1)), KwCall(
            "update_connection_policy", {"name": str(policy.get("name") or at.policy),
                                         "subnetworks": [*listed, current]},
            "Failed to update GCP Connection Policy"), retry_wait)
    if cond.find(run.conditions, names.COND_READY) is not None and run.status.get("state") == names.STATE_READY:
        return run.step()
    return run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step()


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing, now: str | None = None,
                retry_wait: float = 5.0) -> Outcome:
    """One deletion turn (see the module doc)."""
    run, at = StepBuilder(obj, now), where(scope)
    if (failed := _load_failed(run, found, t, retry_wait)) is not None:
        return failed
    current = at.subnetwork(str(run.status.get("id") or ""))
    policy, subnet = found.policy, found.subnet
    if policy is not None:
        listed = _subnetworks(policy)
        name = str(policy.get("name") or at.policy)
        if current in listed and len(listed) > 1 and subnet is not None:
            return _calls(run, t, run.step(requeue_after=t(1)), KwCall(
                "update_connection_policy", {"name": name, "subnetworks": [s for s in listed if s != current]},
                "Failed to update GCP Connection Policy"), retry_wait)
        if listed == [current]:
            return _calls(run, t, run.step(requeue_after=t(10)), KwCall(
                "delete_connection_policy", {"name": name}, "Failed to delete Subnet"), retry_wait, gone=10)
    if subnet is not None:
        return _calls(run, t, run.step(requeue_after=t(10)), KwCall(
            "delete_subnetwork", {"project": at.project, "region": at.region, "name": subnet_name(run.name)},
            "Failed to delete Subnet"), retry_wait, gone=10)
    return run.step(remove_finalizer=names.FINALIZER)


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, retry_wait: float = 5.0,
                now: str | None = None) -> Outcome:
    """The provider's clients could not be built: transient -> back after ``retry_wait`` s, else the
    original's ``Failed to create Subnet state`` (Error ``CloudProviderError``, exclusive, not retried)."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(retry_wait))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, "Failed to create Subnet state")
