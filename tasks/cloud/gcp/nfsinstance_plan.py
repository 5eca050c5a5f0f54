"""The GCP NfsInstance plan (``pkg/kcp/provider/gcp/nfsinstance/v2``): a Filestore instance on the shoot's
VPC in the IpRange's PSA range (pure).

:func:`plan_create` / :func:`plan_delete` decide over :class:`Read` (the instance, the operation of
``status.opIdentifier``) and answer the :class:`~kube.toolkit.Outcome`: at most one call (a method of
:class:`tasks.cloud.gcp.nfsinstance_client.FilestoreClient`, whose answer, the new operation's name, goes
to ``status.opIdentifier``), what its refusal means and the status. Every wait is ``retry`` seconds (the
GCP retry wait, scaled by ``t``).

* an operation in ``status.opIdentifier`` that is not done: come back (``GCP_RETRY_WAIT_DURATION``);
  one that failed: Error ``GCPError`` with its message (the identifier cleared);
* no instance: ``CreateInstance`` of ``cm-<kcpName>`` in ``projects/<p>/locations/<location>`` (tier, the
  file share ``{fileShareName, capacityGb, sourceBackup}``, network ``projects/<p>/global/networks/<vpc>``
  with ``MODE_IPV4``, ``reservedIpRange`` = the KCP IpRange's ``status.id`` (its ``cm-<name>`` address)
  and connect mode ``PRIVATE_SERVICE_ACCESS``), ``status.id`` = the instance's full name, the operation
  in ``status.opIdentifier``, state ``Creating``;
* ``CREATING`` (and the other transient states): state ``Creating``, wait; ``ERROR``: Error ``GCPError``
  with the instance's status message; ``DELETING``: wait;
* ``READY`` with another capacity than the spec's: ``UpdateInstance`` (mask ``fileShares``), state
  ``Updating``;
* ``READY``: ``hosts`` = the instance's IPs, ``host`` the first, ``path`` = the file share's name,
  ``capacityGb``, ``capacity`` ``<n>Gi``, ``stateData.gcpNfsProtocol``, the condition Ready
  ``Filestore instance provisioned in GCP.``, state ``Ready``.

Deletion: ``DeleteInstance`` (state ``Deleting``), wait until the instance is gone, then the finalizer.

A refused call or read: 429 and 5xx come back after the retry wait without a new condition; any other is an
Error ``GCPError`` with the API's message, with backoff (:func:`tasks.cloud.calls.with_calls`,
:func:`read_failed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall, with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["Read", "instance_body", "instance_name", "plan_create", "plan_delete", "read_failed"]

Timing = Callable[[float], float]
READY_MESSAGE = "Filestore instance provisioned in GCP."
REASON_GCP_ERROR = "GCPError"
_CREATING = ("CREATING", "REPAIRING", "RESTORING", "RESUMING", "REVERTING", "PROMOTING", "SUSPENDING")


@dataclass(frozen=True)
class Read:
    """What one turn read: the instance (``None``: none) and the operation of ``status.opIdentifier``."""

    instance: Mapping[str, Any] | None = None
    operation: Mapping[str, Any] | None = None


def _call(run: StepBuilder, t: Timing, retry: float, step: Outcome, method: str, **kwargs: Any) -> Outcome:
    """``step`` after ``FilestoreClient.<method>(**kwargs)``, whose answer (an operation's name) goes to
    ``opIdentifier``; refused: transient -> back after ``retry`` s, else the Error ``GCPError`` with the
    API's message, with backoff."""
    call = KwCall(method, kwargs, "", REASON_GCP_ERROR, with_cause=True, retry=None)
    return with_calls(run, t, step, [call], operation=True, transient=retry)


def _gcp(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((obj.get("spec") or {}).get("instance") or {}).get("gcp") or {}


def instance_name(obj: Mapping[str, Any], scope: Mapping[str, Any]) -> str:
    """``projects/<project>/locations/<location>/instances/cm-<kcpName>``."""
    project = str((((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}).get("project") or "")
    return f"projects/{project}/locations/{_gcp(obj).get('location') or ''}/instances/cm-{obj['metadata']['name']}"


def instance_body(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any]) -> dict[str, Any]:
    """The Filestore instance to create (API JSON)."""
    gcp = _gcp(obj)
    scope_gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
    share: dict[str, Any] = {"name": str(gcp.get("fileShareName") or ""), "capacityGb": int(gcp.get("capacityGb") or 0)}
    if gcp.get("sourceBackup"):
        share["sourceBackup"] = str(gcp["sourceBackup"])
    network = f"projects/{scope_gcp.get('project')}/global/networks/{scope_gcp.get('vpcNetwork')}"
    return {"tier": str(gcp.get("tier") or "BASIC_HDD"), "fileShares": [share],
            "networks": [{"network": network,
                          "modes": ["MODE_IPV4"], "reservedIpRange": str((iprange.get("status") or {}).get("id") or ""),
                          "connectMode": str(gcp.get("connectMode") or "PRIVATE_SERVICE_ACCESS")}]}


def _operation(run: StepBuilder, found: Read, t: Timing, retry: float) -> Outcome | None:
    """The tracked operation: a Outcome to stop with while it runs or when it failed, else ``None``."""
    if not run.status.get("opIdentifier"):
        return None
    op = found.operation
    if op is not None and not op.get("done"):
        return run.step(requeue_after=t(retry))
    run.set(opIdentifier=None)
    error = (op or {}).get("error")
    if error:
        return run.fail(REASON_GCP_ERROR, str(error.get("message") or error), backoff=True)
    return None


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                t: Timing, retry: float, now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc). ``retry``: seconds between looks at a running operation."""
    run = StepBuilder(obj, now)
    stop = _operation(run, found, t, retry)
    if stop is not None:
        return stop
    gcp = _gcp(obj)
    name = instance_name(obj, scope)
    instance = found.instance
    if instance is None:
        run.set(id=name, state="Creating")
        parent, _, ident = name.rpartition("/instances/")
        return _call(run, t, retry, run.step(requeue_after=t(retry)), "create_instance", parent=parent,
                     instance_id=ident, instance=instance_body(obj, scope, iprange))
    state = str(instance.get("state") or "")
    if run.status.get("id") != name:
        run.set(id=name)
    if state == "ERROR":
        return run.fail(REASON_GCP_ERROR, str(instance.get("statusMessage") or "Filestore instance error"),
                        requeue_after=t(retry))
    if state in _CREATING:
        run.set(state="Creating")
        return run.step(requeue_after=t(retry))
    if state != "READY":
        return run.step(requeue_after=t(retry))
    share = (instance.get("fileShares") or [{}])[0]
    have, want = int(share.get("capacityGb") or 0), int(gcp.get("capacityGb") or 0)
    if want and have != want:
        run.set(state="Updating")
        return _call(run, t, retry, run.step(requeue_after=t(retry)), "update_capacity", name=name,
                     file_share=str(share.get("name") or gcp.get("fileShareName")), capacity_gb=want)
    hosts = [str(ip) for net in instance.get("networks") or [] for ip in net.get("ipAddresses") or []]
    protocol = str(instance.get("protocol") or "NFS_V3")
    run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY,
                  hosts=hosts, host=hosts[0] if hosts else "", path=str(share.get("name") or ""), capacityGb=have,
                  capacity=f"{have}Gi",
                  stateData={**dict(run.status.get("stateData") or {}), "gcpNfsProtocol": protocol})
    return run.step()


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing, retry: float,
                now: str | None = None) -> Outcome:
    """One deletion turn: delete the instance, wait until it is gone, release the finalizer."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    stop = _operation(run, found, t, retry)
    if stop is not None and found.instance is not None:
        return stop
    instance = found.instance
    if instance is None:
        return run.step(remove_finalizer=names.FINALIZER)
    run.set(state=names.STATE_DELETING)
    if instance.get("state") == "DELETING":
        return run.step(requeue_after=t(retry))
    return _call(run, t, retry, run.step(requeue_after=t(retry)), "delete_instance", name=instance_name(obj, scope))


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, retry: float, now: str | None = None) -> Outcome:
    """A refused read (or client): transient -> back after ``retry`` s, the status untouched; else the
    Error ``GCPError`` with the API's message, with backoff."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(retry))
    return run.fail(REASON_GCP_ERROR, failure.message, backoff=True)
