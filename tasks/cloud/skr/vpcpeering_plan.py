"""The SKR VPC peering plan (``pkg/skr/awsvpcpeering``, ``gcpvpcpeering``, ``azurevpcpeering``): one
turn's decision over what was read (pure), for the three kinds, which share the shape.

An SKR ``AwsVpcPeering`` / ``GcpVpcPeering`` / ``AzureVpcPeering`` (cluster-scoped) becomes two KCP
objects in ``kcp-system``, both named by the SKR object's ``status.id``: a remote ``Network`` (type
``external``, its ``spec.network.reference.<provider>`` from the SKR spec, :func:`remote_reference`) and a
``VpcPeering`` whose ``spec.details`` names the local network ``<kyma>--kyma`` and that remote one
(:func:`details`). :func:`plan` answers the turn's :class:`~kube.toolkit.Outcome`, its writes in the
original's order (the id label, the finalizer, the KCP objects on cluster ``kcp``):

0. ownership before action (:mod:`tasks.cloud.ownership`): an id that is not a UUID is an Error
   ``InvalidId``; a KCP VpcPeering or Network of that name that does not carry this SKR's kyma and
   this object's remote labels is an Error ``NotOwned``; nothing is written to the KCP then;
1. ``updateId``: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id`` (state
   ``Processing``);
2. deleting: the KCP VpcPeering deleted and waited for (its provider removes the cloud peering), then
   the remote Network deleted and waited for, then the finalizer released (state ``Deleting``); waits
   come back after 10 s, i.e. at a later connect, as the IpRange's (the original requeues every second in
   its own controller; here that would hold the connect's window);
3. the quota ``<lower(kind)>.cloud-resources.kyma-project.io/totalCount`` (declared default 5 per kind;
   the original sets none: unlimited), the older wins: ``QuotaExceeded`` ``Maximum number of <n>
   resources exceeded``;
4. the Azure ``remoteVnet`` must be a virtual network resource id (``InvalidRemoteVnet``);
5. the finalizer; the remote Network and the VpcPeering created in the same turn (the original waits
   for the Network to be Ready before creating the peering; the KCP VpcPeering controller waits for it
   instead), condition ``Submitted`` ``SubmissionSucceeded``, state ``Creating``;
6. the KCP status projected back (:func:`project`): once the KCP VpcPeering has a Ready or an Error
   condition its conditions are copied (exclusive, as the original's ``SetExclusiveConditions``), the
   state derived from them as the IpRange's (:func:`tasks.cloud.state.derive_state`), except that a KCP
   ``Warning`` (a user-fixable error, e.g. an untagged remote VPC) stays ``Warning``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.toolkit.conditions as cond
from kube.resources import Resource
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import claim_id, foreign, identity, owner_labels
from tasks.cloud.state import derive_state
from tasks.cloud.step import StepBuilder

__all__ = ["KINDS", "Seen", "details", "identity", "kcp_network", "kcp_peering", "parse_vnet_id",
           "plan", "project", "remote_reference"]

SUBMITTED_MESSAGE = "Resource is submitted for provisioning"

#: provider -> the SKR kind.
KINDS: Mapping[str, Resource] = names.SKR_VPC_PEERINGS

_VNET_ID = re.compile(r"^/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<group>[^/]+)/providers/"
                      r"Microsoft\.Network/virtualNetworks/(?P<name>[^/]+)/?$", re.IGNORECASE)


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        provider: ``aws``, ``gcp`` or ``azure`` (which kind ``obj`` is).
        obj: the SKR peering.
        everyone: every SKR peering of the kind in the connect (quota).
        peering: the KCP VpcPeering named by :func:`identity` (``None``: none, no id yet, or an id that
            is not a UUID, which is never looked up).
        network: the KCP remote Network of that name (same rules).
        kyma: the runtime; kcp_namespace: where the KCP objects live.
        quota: peerings of the kind allowed in this SKR (``None``: unlimited, as the original; the declared
            default is 5, :mod:`tasks.cloud.kinds.vpcpeering`).
    """

    provider: str
    obj: Mapping[str, Any]
    kyma: str
    kcp_namespace: str
    peering: Mapping[str, Any] | None = None
    network: Mapping[str, Any] | None = None
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None


def _outcome(step: Outcome, seen: Seen, *, label_id: str | None = None, add_finalizer: bool = False,
             create: tuple[tuple[Resource, dict[str, Any]], ...] = (),
             delete: tuple[tuple[Resource, str], ...] = ()) -> Outcome:
    """``step`` with the turn's writes in the original's order: the id label, the finalizer (after the
    label, as the original's ``updateId`` comes before ``addFinalizer``), the KCP objects created (the
    Network, then the VpcPeering) or deleted (``(kind, name)``), all on cluster ``kcp``."""
    res = KINDS[seen.provider]
    name = str((seen.obj.get("metadata") or {}).get("name") or "")
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", res, name, body={names.LABEL_SKR_ID: label_id}))
    if add_finalizer:
        writes.append(Action.finalizer(True, res, seen.obj, names.FINALIZER))
    writes += [Action.on("create", kind, body, cluster="kcp") for kind, body in create]
    writes += [Action.named("delete", kind, kcp_name, seen.kcp_namespace, cluster="kcp") for kind, kcp_name in delete]
    return step.also(*writes)


def parse_vnet_id(vnet: str) -> tuple[str, str, str] | None:
    """``(subscription, resource group, name)`` of an Azure virtual network resource id, else ``None``."""
    found = _VNET_ID.match(vnet.strip())
    return (found["subscription"], found["group"], found["name"]) if found else None


def remote_reference(provider: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.network.reference`` of the remote KCP Network from the SKR spec (as the originals'
    ``createKcpRemoteNetwork``). Raises ``ValueError`` for an Azure ``remoteVnet`` that is no VNet id."""
    if provider == "aws":
        return {"aws": {"awsAccountId": str(spec.get("remoteAccountId") or ""),
                        "region": str(spec.get("remoteRegion") or ""), "vpcId": str(spec.get("remoteVpcId") or "")}}
    if provider == "gcp":
        return {"gcp": {"gcpProject": str(spec.get("remoteProject") or ""),
                        "networkName": str(spec.get("remoteVpc") or "")}}
    parsed = parse_vnet_id(str(spec.get("remoteVnet") or ""))
    if parsed is None:
        raise ValueError(f"RemoteVnet {spec.get('remoteVnet')!r} is not a virtual network resource id "
                         "(/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<name>)")
    subscription, group, name = parsed
    return {"azure": {"tenantId": str(spec.get("remoteTenant") or ""), "subscriptionId": subscription,
                      "resourceGroup": group, "networkName": name}}


def details(provider: str, spec: Mapping[str, Any], kyma: str, kcp_name: str, kcp_namespace: str) -> dict[str, Any]:
    """``spec.details`` of the KCP VpcPeering (as the originals' ``createKcpVpcPeering``)."""
    out: dict[str, Any] = {
        "localNetwork": {"name": names.kyma_network(kyma), "namespace": kcp_namespace},
        "remoteNetwork": {"name": kcp_name, "namespace": kcp_namespace},
        "deleteRemotePeering": bool(spec.get("deleteRemotePeering")),
    }
    if provider == "aws":
        out["remoteRouteTableUpdateStrategy"] = str(spec.get("remoteRouteTableUpdateStrategy") or "AUTO")
    elif provider == "gcp":
        out["peeringName"] = str(spec.get("remotePeeringName") or "")
        out["importCustomRoutes"] = bool(spec.get("importCustomRoutes"))
    else:
        out["peeringName"] = str(spec.get("remotePeeringName") or "")
        out["useRemoteGateway"] = bool(spec.get("useRemoteGateway"))
    return out


def _meta(obj: Mapping[str, Any], kcp_name: str, kyma: str, kcp_namespace: str) -> dict[str, Any]:
    name = str(obj["metadata"]["name"])
    owners = owner_labels(kyma, name)
    # labels for the ownership check; the original puts the same three as annotations
    return {"name": kcp_name, "namespace": kcp_namespace,
            "labels": {**owners, names.LABEL_MODULE: names.MODULE_LABEL_VALUE}, "annotations": dict(owners)}


def kcp_network(provider: str, obj: Mapping[str, Any], kcp_name: str, kyma: str, kcp_namespace: str
                ) -> dict[str, Any]:
    """The remote KCP Network of the SKR peering ``obj`` (name = its id). Raises ``ValueError`` (see
    :func:`remote_reference`)."""
    reference = remote_reference(provider, obj.get("spec") or {})
    return {"metadata": _meta(obj, kcp_name, kyma, kcp_namespace),
            "spec": {"scope": {"name": kyma}, "type": "external", "network": {"reference": reference}}}


def kcp_peering(provider: str, obj: Mapping[str, Any], kcp_name: str, kyma: str, kcp_namespace: str
                ) -> dict[str, Any]:
    """The KCP VpcPeering of the SKR peering ``obj`` (name = its id)."""
    return {"metadata": _meta(obj, kcp_name, kyma, kcp_namespace),
            "spec": {"remoteRef": {"namespace": "", "name": str(obj["metadata"]["name"])},
                     "scope": {"name": kyma},
                     "details": details(provider, obj.get("spec") or {}, kyma, kcp_name, kcp_namespace)}}


def project(kcp: Mapping[str, Any], skr_conditions: Sequence[Mapping[str, Any]] | None
            ) -> tuple[list[dict[str, Any]], str] | None:
    """KCP VpcPeering status -> the SKR peering's ``(conditions, state)``, or ``None`` to wait (no Ready
    or Error condition yet). The KCP conditions are copied exclusively (their transition times kept);
    the state is derived from them, a KCP ``Warning`` stays ``Warning``."""
    status = kcp.get("status") or {}
    kcp_conds = [dict(c) for c in status.get("conditions") or []]
    if not (cond.find(kcp_conds, names.COND_READY) or cond.find(kcp_conds, names.COND_ERROR)):
        return None
    if deleting(kcp):
        kcp_conds = cond.remove(kcp_conds, names.COND_READY)
        if not kcp_conds:
            return None
    conditions = cond.set_exclusive([dict(c) for c in skr_conditions or ()], *kcp_conds)
    if status.get("state") == names.STATE_WARNING:
        return conditions, names.STATE_WARNING
    return conditions, derive_state(conditions, names.STATE_PROCESSING)


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of an SKR peering (see the module doc). ``new_id``: the UUID to assign when the object
    has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
    obj, kind = seen.obj, KINDS[seen.provider].kind
    run = StepBuilder(obj, now)
    name = str((obj.get("metadata") or {}).get("name") or "")
    finalized = has_finalizer(obj, names.FINALIZER)

    if not run.status.get("id") and run.deleting and not finalized:
        return Outcome()
    not_owned = foreign(seen.peering, seen.kyma, name) or foreign(seen.network, seen.kyma, name)
    ident, label_id, refused = claim_id(run, new_id, kind, not_owned)  # 0, 1
    if refused is not None:
        return refused

    if run.deleting:  # 2
        if not finalized:
            return _outcome(run.step(), seen, label_id=label_id)
        run.set(state=names.STATE_DELETING)
        for res, found in ((names.VPC_PEERING, seen.peering), (names.NETWORK, seen.network)):
            if found is not None:
                gone = deleting(found)
                return _outcome(run.step(requeue_after=t(10)), seen, label_id=label_id,
                                delete=() if gone else ((res, ident),))
        return _outcome(run.step(remove_finalizer=names.FINALIZER), seen, label_id=label_id)

    add = not finalized
    if seen.peering is None or seen.network is None:
        over = run.over_quota(seen.everyone, seen.quota)  # 3
        if over is not None:
            return _outcome(over, seen, label_id=label_id)
        create: list[tuple[Resource, dict[str, Any]]] = []
        if seen.network is None:
            try:
                create.append((names.NETWORK, kcp_network(seen.provider, obj, ident, seen.kyma, seen.kcp_namespace)))
            except ValueError as exc:  # 4
                return _outcome(run.fail(names.REASON_INVALID_REMOTE_VNET, str(exc)), seen, label_id=label_id)
        if seen.peering is None:
            create.append((names.VPC_PEERING, kcp_peering(seen.provider, obj, ident, seen.kyma, seen.kcp_namespace)))
        run.exclusive(names.COND_SUBMITTED, True, names.REASON_SUBMISSION_SUCCEEDED, SUBMITTED_MESSAGE,
                      names.STATE_CREATING)  # 5
        return _outcome(run.step(requeue_after=t(1)), seen, label_id=label_id, add_finalizer=add,
                        create=tuple(create))
    projected = project(seen.peering, run.conditions)  # 6
    if projected is None:  # the KCP loop is at it: look again at the next connect (never hold the window)
        return _outcome(run.step(requeue_after=t(10)), seen, label_id=label_id, add_finalizer=add)
    conditions, state = projected
    run.set(conditions=conditions, state=state)
    if cond.is_true(conditions, names.COND_READY):
        return _outcome(run.step(), seen, label_id=label_id, add_finalizer=add)
    # an error the user may fix in the cloud (tags, routes, permissions): look again at the next connect
    return _outcome(run.step(requeue_after=t(60)), seen, label_id=label_id, add_finalizer=add)
