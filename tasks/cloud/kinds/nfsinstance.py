"""NfsInstance: ``AwsNfsVolume`` / ``GcpNfsVolume`` in the SKR (with their PersistentVolume and
PersistentVolumeClaim), mirrored into the KCP ``NfsInstance``, provisioned as EFS or Filestore in the network
of its IpRange (cloud-manager's ``pkg/skr/{aws,gcp}nfsvolume``, ``pkg/kcp/nfsinstance``,
``pkg/kcp/provider/{aws,gcp}/nfsinstance``)."""

from __future__ import annotations

from functools import partial

from tasks.cloud import names, registry
from tasks.cloud.aws import nfsinstance as aws
from tasks.cloud.gcp import nfsinstance as gcp
from tasks.cloud.kcp import consumer, consumer_plan
from tasks.cloud.kcp.nfsinstance_plan import copy_host
from tasks.cloud.nfsinstance_render import render_volumes
from tasks.cloud.skr import nfsvolume as skr
from tasks.cloud.skr.nfsvolume_plan import KINDS, plan

#: The manifests ``render nfsvolume`` takes: the volumes, and the SKR IpRanges they may name.
RENDERED = (*(res.kind for res in KINDS.values()), names.SKR_IPRANGE.kind)

KIND = registry.register(registry.Kind(
    name="nfsinstance",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=40, summary=skr.summary,
                         quota={names.AWS_NFS_VOLUME.kind: 5, names.GCP_NFS_VOLUME.kind: 5}),  # GCP: as AWS
    kcp=registry.KcpSide(names.NFS_INSTANCE, read=consumer.read,
                         plan=partial(consumer_plan.plan, wait_ready=5, prepare=copy_host)),
    providers={"aws": aws.SIDE, "gcp": gcp.SIDE},
    iprange_consumer=10, nuke=50,
    render=registry.KindRender(
        "nfsvolume", "NFS volumes with a Scope -> the KCP NfsInstance, EFS / Filestore objects, the PV and PVC.",
        "AwsNfsVolume / GcpNfsVolume manifests, and SKR IpRanges", RENDERED,
        lambda scope, docs, settings: render_volumes(
            scope, [d for d in docs if d.get("kind") != names.SKR_IPRANGE.kind],
            [d for d in docs if d.get("kind") == names.SKR_IPRANGE.kind]))))
