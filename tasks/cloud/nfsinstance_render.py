"""``reconcilery render nfsvolume``: what the controllers would create for SKR NFS volumes, offline (pure).

For each AwsNfsVolume / GcpNfsVolume with one Scope (and the SKR IpRanges given, rendered by
:func:`tasks.cloud.iprange_render.render_ipranges`): the KCP NfsInstance
(:func:`tasks.cloud.skr.nfsvolume_plan.mirror`),
what its provider makes (AWS: the security group ``<id>`` with its NFS rules, the encrypted file system,
one mount target per IpRange subnet; GCP: the Filestore instance ``cm-<id>`` with its tier, share and
network in the IpRange's reserved range), and the PersistentVolume and PersistentVolumeClaim the SKR gets
once it is Ready. Names not known offline stay placeholders: ``<id>`` (the volume's id), ``<fsId>`` (the
EFS id), ``<ip>`` (the Filestore address). A volume whose IpRange is not among the given ones uses the
default IpRange (``default``; created when missing, as the controller does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.iprange_render import render_ipranges
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse, wanted
from tasks.cloud.skr.nfsvolume_plan import (
    AWS,
    GCP,
    Seen,
    claim,
    invalid_names,
    location,
    mirror,
    persistent_volume,
    pv_name,
)

__all__ = ["RenderedVolume", "render_volumes"]

PLACEHOLDER_ID = "<id>"
#: The state of a volume of another provider's kind (its CRD is not installed in such an SKR).
SKIPPED = "Skipped"


@dataclass(frozen=True)
class RenderedVolume(Rendered):
    """One volume's outcome: ``state`` ``Ready`` (would be provisioned), ``Error``, or ``Skipped`` (a
    kind of another provider); ``plan`` one line per cloud object; ``objects`` the KCP NfsInstance, the
    PV and the PVC."""

    plan: list[str] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)


def _aws_plan(scope: Mapping[str, Any], spec: Mapping[str, Any], ranges: Sequence[tuple[str, str]],
              iprange_id: str) -> list[str]:
    network = (((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}).get("network") or {}
    cidrs = [c for c in (str(network.get("pods") or ""), str((network.get("vpc") or {}).get("cidr") or "")) if c]
    lines = [f"security group {PLACEHOLDER_ID} in the VPC of IpRange {iprange_id}: "
             f"ingress TCP 2049 from {', '.join(cidrs) or '-'}",
             f"EFS file system {PLACEHOLDER_ID} (encrypted, {spec.get('performanceMode') or 'generalPurpose'}, "
             f"{spec.get('throughput') or 'bursting'})"]
    lines += [f"mount target in the subnet {zone} {r}" for zone, r in ranges]
    return lines


def render_volumes(scope: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]],
                   ipranges: Sequence[Mapping[str, Any]] = (), kyma: str = "<kyma>",
                   kcp_namespace: str = names.KCP_NAMESPACE) -> list[RenderedVolume]:
    """The outcome of every volume with ``scope`` and the SKR ``ipranges`` (see the module doc)."""
    provider = str((scope.get("spec") or {}).get("provider") or "")
    known = {str((o.get("metadata") or {}).get("name")): o for o in ipranges}
    out: list[RenderedVolume] = []
    for obj in volumes:
        meta = obj.get("metadata") or {}
        name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
        kind = AWS if obj.get("kind") == names.AWS_NFS_VOLUME.kind else GCP
        if kind != provider:
            out.append(RenderedVolume(name, str(obj.get("kind")), SKIPPED,
                                      f"{obj.get('kind')} is not installed on provider {provider or '?'}"))
            continue
        invalid = invalid_names(obj, pv_name(obj))
        if invalid:  # the reconcile's Error, before anything is planned
            out.append(RenderedVolume(name, str(obj.get("kind")), names.STATE_ERROR, f"{invalid[0]}: {invalid[1]}"))
            continue
        ipr_name = wanted(obj)
        iprange = known.get(ipr_name) or {"apiVersion": f"{names.SKR_GROUP}/{names.VERSION}", "kind": "IpRange",
                                          "metadata": {"name": ipr_name}, "spec": {}}
        [ipr] = render_ipranges(scope, [iprange], quota=None)
        if ipr.state != names.STATE_READY:
            out.append(RenderedVolume(name, str(obj.get("kind")), names.STATE_ERROR,
                                      f"IpRange {ipr_name}: {ipr.outcome}"))
            continue
        ipr_id = str((iprange.get("status") or {}).get("id") or f"<{ipr_name} id>")
        spec = obj.get("spec") or {}
        body = {**obj, "metadata": {"namespace": "default", **meta}, "status": {"id": PLACEHOLDER_ID}}
        seen = Seen(kind=kind, obj=body, kcp=None, iprange=IpRangeUse(iprange), kyma=kyma,
                    kcp_namespace=kcp_namespace, scope=scope)
        if kind == AWS:
            kcp = mirror(seen, PLACEHOLDER_ID, ipr_id)
            plan = _aws_plan(scope, spec, ipr.ranges, ipr_id)
            body["status"]["server"] = f"<fsId>.efs.{(scope.get('spec') or {}).get('region') or '?'}.amazonaws.com"
        else:
            where = location(body, scope)
            if where is None:
                out.append(RenderedVolume(name, str(obj.get("kind")), names.STATE_ERROR,
                                          "NoWorkerZones: Could not automatically select a zone"))
                continue
            kcp = mirror(seen, PLACEHOLDER_ID, ipr_id, where)
            gcp = kcp["spec"]["instance"]["gcp"]
            info = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
            plan = [f"Filestore instance projects/{info.get('project') or '?'}/locations/{where}/instances/"
                    f"cm-{PLACEHOLDER_ID}: {gcp['tier']}, share {gcp['fileShareName']} {gcp['capacityGb']} GB",
                    f"network {info.get('vpcNetwork') or '?'} (PRIVATE_SERVICE_ACCESS), reserved range "
                    f"cm-{ipr_id} ({ipr.cidr})"]
            body["status"]["hosts"] = ["<ip>"]
        pv = persistent_volume(kind, body, str((spec.get("volume") or {}).get("name") or PLACEHOLDER_ID))
        pvc = claim(kind, body, pv["metadata"]["name"])
        out.append(RenderedVolume(name, str(obj.get("kind")), names.STATE_READY,
                                  f"valid; IpRange {ipr_name} ({ipr.cidr})", plan, [kcp, pv, pvc]))
    return out
