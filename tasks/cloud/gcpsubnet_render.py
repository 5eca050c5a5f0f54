"""``reconcilery render gcpsubnet``: what SKR GcpSubnets would create, offline (pure).

For each ``GcpSubnet`` with a KCP Scope: the KCP ``GcpSubnet`` the SKR loop would create
(:func:`tasks.cloud.skr.gcpsubnet_plan.mirror`, named ``<id>`` until the object has a ``status.id``) and
the provider's pieces as :mod:`tasks.cloud.gcp.gcpsubnet_plan` names them: the subnetwork and the service
connection policy. A Scope of another provider, or a ``spec.cidr`` that is no IPv4 CIDR, is an Error.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.gcp.gcpsubnet_plan import SERVICE_CLASS, subnet_name, where
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr.gcpsubnet_plan import mirror

__all__ = ["RenderedSubnet", "render_gcpsubnets"]


@dataclass(frozen=True)
class RenderedSubnet(Rendered):
    """One SKR GcpSubnet's outcome: ``state`` (``Ready`` when it would be provisioned, else ``Error``), its
    ``cidr``, the KCP GcpSubnet (``kcp``) and the provider's pieces (``plan``, one per line)."""

    cidr: str = ""
    kcp: dict[str, Any] = field(default_factory=dict)
    plan: list[str] = field(default_factory=list)


def render_gcpsubnets(scope: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> list[RenderedSubnet]:
    """The outcome of every SKR GcpSubnet in ``objects`` with ``scope``."""
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    kyma = str(spec.get("kymaName") or (scope.get("metadata") or {}).get("name") or "?")
    namespace = str((scope.get("metadata") or {}).get("namespace") or names.KCP_NAMESPACE)
    at = where(scope)
    out: list[RenderedSubnet] = []
    for obj in objects:
        name = str((obj.get("metadata") or {}).get("name") or "?")
        kind = str(obj.get("kind") or "GcpSubnet")
        cidr = str((obj.get("spec") or {}).get("cidr") or "")
        if provider != "gcp":
            out.append(RenderedSubnet(name, kind, names.STATE_ERROR,
                                      f"{kind} is not served in an SKR of provider {provider or '?'}", cidr))
            continue
        try:
            valid = ipaddress.IPv4Network(cidr, strict=True)
        except ValueError:
            out.append(RenderedSubnet(name, kind, names.STATE_ERROR,
                                      f"spec.cidr {cidr!r} is not an IPv4 CIDR (the subnetwork would be refused)",
                                      cidr))
            continue
        ident = str((obj.get("status") or {}).get("id") or "<id>")
        kcp = mirror(obj, ident, kyma, namespace)
        plan = [f"subnetwork {at.subnetwork(subnet_name(ident))}: {valid}, PRIVATE, private Google access, "
                f"on {at.network}",
                f"service connection policy {at.policy} ({SERVICE_CLASS}) listing the subnetwork"]
        out.append(RenderedSubnet(name, kind, names.STATE_READY, f"valid; GcpSubnet {ident} in {namespace}",
                                  str(valid), kcp, plan))
    return out
