"""A fleet of SKRs that each hold every GA Cloud kind in its steady state, for ``bench/skr_sweep.py``.

The steady state is not written by hand: per provider, one template SKR (``tmpl-<provider>``) gets the
objects' specs only (:func:`specs`, shapes of ``examples/cloud``), and :func:`bootstrap` runs the real
connect (:func:`tasks.cloud.skr.connect.connect`) over it, in this process, against the dev API server:
the first connect gives each object its id label, finalizer and ``status.id`` and creates its KCP mirror;
the KCP side is then made Ready as the KCP loop and the cloud leave it (:func:`kcp_ready`: conditions,
``state``, the NFS hosts and capacity, the Redis endpoints and auth string), and the next connect projects
that into the SKR (status Ready, the NFS volume's PV and PVC, the Redis instance's auth Secret, the
schedule's next run times). The template is steady when a connect writes nothing; :func:`bootstrap`
checks that (``writes`` of its :class:`Template`, the SKR's and the KCP's write requests of the last
connect) and :func:`clone` copies the template's objects into SKR ``i`` with its own kyma name and ids.

GA kinds per provider (:data:`KINDS`): IpRange; a VPC peering (Aws/Gcp/AzureVpcPeering); an NFS volume
with its PV and PVC (Aws/GcpNfsVolume; Azure has none); a Redis instance with its auth Secret
(Aws/Gcp/AzureRedisInstance); an NFS backup schedule (Aws/GcpNfsBackupSchedule). The schedule's cron
is ``0 2 1 1 *`` (02:00 on 1 January): its next run is months ahead of any bench, so no connect finds a
run due, creates a backup or calls a provider (a schedule waiting for its next run time reads nothing
beyond itself, :mod:`tasks.cloud.skr.backupschedule`); each connect only hands it to the timed keys at
that run time.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubedev import DevAPIServer
from kubedev.store import Store
from tasks.cloud import names

__all__ = ["KINDS", "WRITE_VERBS", "Template", "bootstrap", "clone", "clone_kcp", "clone_skr", "kcp_ready", "kinds_of",
           "kyma_name", "seed_cluster", "skr_crds", "specs", "template_from_json", "template_to_json"]

READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
          "lastTransitionTime": "2026-01-01T00:00:00Z"}]
#: provider -> the SKR kinds every seeded SKR holds (``--kinds all``), besides the CloudResources CR.
KINDS: dict[str, list[str]] = {
    "aws": ["IpRange", "AwsVpcPeering", "AwsNfsVolume", "PersistentVolume", "PersistentVolumeClaim",
            "AwsRedisInstance", "Secret", "AwsNfsBackupSchedule"],
    "gcp": ["IpRange", "GcpVpcPeering", "GcpNfsVolume", "PersistentVolume", "PersistentVolumeClaim",
            "GcpRedisInstance", "Secret", "GcpNfsBackupSchedule"],
    "azure": ["IpRange", "AzureVpcPeering", "AzureRedisInstance", "Secret"],
}
#: The schedule's cron: 02:00 on 1 January, never due within a bench (module doc).
SCHEDULE_CRON = "0 2 1 1 *"
_SKR = "cloud-resources.kyma-project.io/v1beta1"


def specs(provider: str, kinds: str = "all") -> list[dict[str, Any]]:
    """The template SKR's objects before any connect: the default IpRange, and with ``kinds="all"``
    the provider's VPC peering, NFS volume, Redis instance and backup schedule (specs only)."""
    out: list[dict[str, Any]] = [{"apiVersion": _SKR, "kind": "IpRange", "metadata": {"name": "default"},
                                  "spec": {"cidr": "10.251.0.0/22"}}]
    if kinds == "iprange":
        return out
    if provider == "aws":
        out += [
            {"apiVersion": _SKR, "kind": "AwsVpcPeering", "metadata": {"name": "to-customer-vpc"},
             "spec": {"remoteAccountId": "444455556666", "remoteRegion": "eu-central-1",
                      "remoteVpcId": "vpc-0a1b2c3d4e5f60718", "remoteRouteTableUpdateStrategy": "MATCHED",
                      "deleteRemotePeering": False}},
            {"apiVersion": _SKR, "kind": "AwsNfsVolume", "metadata": {"name": "shared-files", "namespace": "default"},
             "spec": {"capacity": "100Gi", "volumeClaim": {"name": "shared-files", "labels": {"app": "uploads"}}}},
            {"apiVersion": _SKR, "kind": "AwsRedisInstance", "metadata": {"name": "cache", "namespace": "default"},
             "spec": {"redisTier": "S1", "authEnabled": True, "parameters": {"maxmemory-policy": "allkeys-lru"},
                      "authSecret": {"name": "cache-connection", "labels": {"app": "shop"},
                                     "extraData": {"url": "rediss://:{{.authString}}@{{.host}}:{{.port}}"}}}},
            {"apiVersion": _SKR, "kind": "AwsNfsBackupSchedule",
             "metadata": {"name": "shared-files-yearly", "namespace": "default"},
             "spec": {"nfsVolumeRef": {"name": "shared-files"}, "schedule": SCHEDULE_CRON, "prefix": "yearly",
                      "maxReadyBackups": 7}},
        ]
    elif provider == "gcp":
        out += [
            {"apiVersion": _SKR, "kind": "GcpVpcPeering", "metadata": {"name": "to-customer-network"},
             "spec": {"remotePeeringName": "customer-to-kyma", "remoteProject": "customer-project",
                      "remoteVpc": "customer-vpc", "importCustomRoutes": False, "deleteRemotePeering": False}},
            {"apiVersion": _SKR, "kind": "GcpNfsVolume", "metadata": {"name": "reports", "namespace": "default"},
             "spec": {"tier": "BASIC_HDD", "capacityGb": 1024}},
            {"apiVersion": _SKR, "kind": "GcpRedisInstance", "metadata": {"name": "sessions", "namespace": "default"},
             "spec": {"redisTier": "P1", "authEnabled": True, "redisConfigs": {"maxmemory-policy": "allkeys-lru"}}},
            {"apiVersion": _SKR, "kind": "GcpNfsBackupSchedule",
             "metadata": {"name": "reports-yearly", "namespace": "default"},
             "spec": {"nfsVolumeRef": {"name": "reports"}, "schedule": SCHEDULE_CRON, "prefix": "yearly",
                      "maxRetentionDays": 30}},
        ]
    else:
        out += [
            {"apiVersion": _SKR, "kind": "AzureVpcPeering", "metadata": {"name": "to-customer-vnet"},
             "spec": {"remotePeeringName": "customer-to-kyma", "remoteTenant": "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d",
                      "remoteVnet": "/subscriptions/3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44/resourceGroups/customer/"
                                    "providers/Microsoft.Network/virtualNetworks/customer-vnet",
                      "deleteRemotePeering": False}},
            {"apiVersion": _SKR, "kind": "AzureRedisInstance", "metadata": {"name": "orders", "namespace": "default"},
             "spec": {"redisTier": "P1", "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}}},
        ]
    return out


def kcp_ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ``status`` the KCP loop and the cloud leave on the KCP object ``obj`` once provisioned (Ready;
    the NFS instance's hosts and capacity, the Redis instance's endpoints and auth string), or ``None``
    for an object this bench leaves as it is."""
    kind = obj["kind"]
    status: dict[str, Any] = {"state": "Ready", "conditions": READY, "id": obj["metadata"]["name"]}
    if kind == "IpRange":
        status["cidr"] = "10.251.0.0/22"
    elif kind == "NfsInstance":
        status.update(hosts=["10.251.0.10"], capacity="100Gi", capacityGb=1024, path="/")
    elif kind == "RedisInstance":
        status.update(primaryEndpoint="10.251.0.20:6379", readEndpoint="10.251.0.21:6379",
                      authString="s3cr3t-auth-string-of-the-bench")
    elif kind not in ("VpcPeering", "Network"):
        return None
    return status


@dataclass
class Template:
    """One provider's steady SKR: its objects (storage key, object) and the KCP objects of its kyma, and
    the write requests its last bootstrap connect made (``{"skr": n, "kcp": n}``: 0 when steady)."""

    provider: str
    kyma: str
    skr_objects: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    kcp_objects: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    writes: dict[str, int] = field(default_factory=dict)
    connects: int = 0


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


def kinds_of(template: Template) -> list[str]:
    """The kinds of the template's SKR objects, in :data:`KINDS`' order (others after, sorted)."""
    held = {obj["kind"] for _, obj in template.skr_objects}
    order = KINDS.get(template.provider, [])
    return [k for k in order if k in held] + sorted(held - set(order))


def _writes(counts: dict[str, int]) -> int:
    return sum(counts.get(v, 0) for v in WRITE_VERBS)


def bootstrap(server: DevAPIServer, kyma: str, provider: str, connect_once: Callable[[str], None],
              kinds: str = "all", rounds: int = 4) -> Template:
    """Bring the template SKR ``kyma`` (already seeded as a fleet SKR: CRDs, CloudResources CR, Scope,
    kubeconfig Secret; no Cloud object yet) to its steady state: its :func:`specs` created, then up to
    ``rounds`` connects (``connect_once(kyma)``), the KCP objects of ``kyma`` made Ready (:func:`kcp_ready`)
    after each, until a connect writes nothing but its SkrStatus (one KCP write: the connect's record,
    its time among ``pastConnections``, as the original's). Returns the template (its ``writes`` those
    of the last connect)."""
    skr = server.clusters.store(kyma)
    assert skr is not None, kyma
    for body in specs(provider, kinds):
        rt = _rt(skr, body)
        server.call(lambda rt=rt, body=body: skr.create(rt, body["metadata"].get("namespace"), body))  # type: ignore[misc]
    template = Template(provider, kyma)
    for _ in range(rounds):
        before_skr, before_kcp = server.request_counts(kyma), server.request_counts()
        connect_once(kyma)
        template.connects += 1
        after_skr, after_kcp = server.request_counts(kyma), server.request_counts()
        template.writes = {"skr": _writes(after_skr) - _writes(before_skr),
                           "kcp": _writes(after_kcp) - _writes(before_kcp)}
        made_ready = server.call(lambda: _make_kcp_ready(server.store, kyma))
        if template.writes["skr"] == 0 and template.writes["kcp"] <= 1 and not made_ready:
            break
    server.call(lambda: _snapshot(server, template))
    return template


def _rt(store: Store, body: dict[str, Any]) -> Any:
    group, _, version = body["apiVersion"].rpartition("/")
    found = store.registry.by_kind(group, version, body["kind"]) if hasattr(store.registry, "by_kind") else None
    if found is None:
        found = next((rt for rt in store.registry.all() if rt.group == group and rt.version == version
                      and rt.kind == body["kind"]), None)
    assert found is not None, body["kind"]
    return found


def _owned_by(obj: dict[str, Any], kyma: str) -> bool:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return (spec.get("scope") or {}).get("name") == kyma or (meta.get("labels") or {}).get(
        names.LABEL_KYMA_NAME) == kyma or meta.get("name") == kyma


def _kcp_types(store: Store) -> list[Any]:
    return [rt for rt in store.registry.all() if rt.group == names.KCP_GROUP]


def _make_kcp_ready(kcp: Store, kyma: str) -> int:
    """Patch every KCP object of ``kyma`` whose status is not yet :func:`kcp_ready`'s; returns how many."""
    changed = 0
    for rt in _kcp_types(kcp):
        for obj in kcp.list(rt, names.KCP_NAMESPACE).items if rt.namespaced else []:
            if not _owned_by(obj, kyma):
                continue
            status = kcp_ready({**obj, "kind": rt.kind})
            if status is None or all((obj.get("status") or {}).get(k) == v for k, v in status.items()):
                continue
            kcp.patch(rt, names.KCP_NAMESPACE, obj["metadata"]["name"], "merge", {"status": status}, "status")
            changed += 1
    return changed


_SKIP_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", "default", names.KYMA_SYSTEM}


def _snapshot(server: DevAPIServer, template: Template) -> None:
    """Record the template's SKR objects (every custom object and the PVs, PVCs, Secrets) and its KCP
    objects (everything of the kyma, but its Scope and kubeconfig Secret, which the fleet seed makes)."""
    skr = server.clusters.store(template.kyma)
    assert skr is not None
    for rt in skr.registry.all():
        if rt.storage_key.startswith("apiextensions") or rt.kind in ("Namespace", "Event"):
            continue
        if not rt.custom and rt.kind not in ("PersistentVolume", "PersistentVolumeClaim", "Secret"):
            continue
        if rt.kind == "CloudResources":
            continue  # the fleet seed makes it
        for obj in skr.list(rt, None).items:
            if rt.kind == "Secret" and obj["metadata"].get("namespace") in _SKIP_NAMESPACES - {"default"}:
                continue
            template.skr_objects.append((rt, copy.deepcopy(obj)))
            ident = str((obj.get("status") or {}).get("id") or "")
            if ident:
                template.ids.append(ident)
    for rt in _kcp_types(server.store):
        if rt.kind in ("Scope", "SkrStatus"):
            continue
        for obj in server.store.list(rt, names.KCP_NAMESPACE).items if rt.namespaced else []:
            if _owned_by(obj, template.kyma):
                template.kcp_objects.append((rt, copy.deepcopy(obj)))


def clone_ids(template: Template, i: int) -> dict[str, str]:
    """Template id -> SKR ``i``'s own canonical UUID (version 4), one per template object."""
    return {ident: str(uuid.UUID(int=(n + 1) << 96 | i << 32 | 0xBE4C, version=4))
            for n, ident in enumerate(template.ids)}


def _clone_into(target: Store, objects: list[tuple[Any, dict[str, Any]]], mapping: dict[str, str]) -> int:
    """Create ``objects`` in ``target`` with every ``mapping`` key replaced by its value (owners first,
    ownerReferences re-pointed to the clones' uids); returns how many were written."""
    written = 0
    uids: dict[str, str] = {}  # template uid -> the clone's, for ownerReferences
    for rt, obj in sorted(objects, key=lambda pair: bool(pair[1]["metadata"].get("ownerReferences"))):
        text = json.dumps(obj)
        for old, new in mapping.items():
            text = text.replace(old, new)
        body = json.loads(text)
        meta = body["metadata"]
        old_uid = meta.pop("uid", "")
        for drop in ("resourceVersion", "creationTimestamp", "generation", "managedFields"):
            meta.pop(drop, None)
        for ref in meta.get("ownerReferences") or []:
            ref["uid"] = uids.get(ref.get("uid", ""), ref.get("uid", ""))
        made = target.create(rt, meta.get("namespace"), body, validated=True, keep_status=True)
        uids[old_uid] = made["metadata"]["uid"]
        written += 1
    return written


def clone_skr(store: Store, template: Template, kyma: str, i: int) -> int:
    """Copy the template's SKR objects into ``store`` (SKR ``kyma``'s cluster, number ``i``: its name and
    ids, :func:`clone_ids`); store calls. Returns how many objects were written."""
    return _clone_into(store, template.skr_objects, {template.kyma: kyma, **clone_ids(template, i)})


def clone_kcp(kcp: Store, template: Template, kyma: str, i: int) -> int:
    """Copy the template's KCP objects into ``kcp`` for SKR ``kyma`` (number ``i``); store calls.
    Returns how many objects were written."""
    return _clone_into(kcp, template.kcp_objects, {template.kyma: kyma, **clone_ids(template, i)})


def clone(server: DevAPIServer, template: Template, kyma: str, i: int) -> int:
    """Copy the template's SKR objects into cluster ``kyma`` of ``server`` and its KCP objects into the
    KCP, with ``kyma``'s name and SKR ``i``'s ids (:func:`clone_ids`); store calls (run on the server's
    loop). Returns how many objects were written."""
    skr = server.clusters.store(kyma)
    assert skr is not None, kyma
    return clone_skr(skr, template, kyma, i) + clone_kcp(server.store, template, kyma, i)


def kyma_name(i: int) -> str:
    """The kyma name of fleet SKR ``i``."""
    return f"skr-{i:04d}"


_CRDS: dict[str, list[dict[str, Any]]] = {}


def skr_crds(provider: str) -> list[dict[str, Any]]:
    """The module and SKR CRDs of ``provider``, parsed once per process (a store keeps a shallow copy)."""
    if provider not in _CRDS:
        from tasks.cloud import install

        _CRDS[provider] = install.load_crds("module", "skr", provider=provider)
    return _CRDS[provider]


def seed_cluster(store: Store, provider: str) -> None:
    """An SKR cluster's own part of the fleet seed (``store``: the cluster's): the module and SKR CRDs of
    ``provider``, namespace ``kyma-system`` and the CloudResources CR, Ready, with its finalizer."""
    crd_rt = store.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    ns_rt = store.registry.lookup("", "v1", "namespaces")
    assert crd_rt is not None and ns_rt is not None
    for crd in skr_crds(provider):
        store.create(crd_rt, None, crd)
    store.create(ns_rt, None, {"metadata": {"name": names.KYMA_SYSTEM}})
    res = names.CLOUD_RESOURCES
    rt = store.registry.lookup(res.group, res.version, res.plural)
    assert rt is not None, res
    store.create(rt, names.KYMA_SYSTEM, {
        "metadata": {"name": "default", "namespace": names.KYMA_SYSTEM, "finalizers": [names.FINALIZER]},
        "spec": {}, "status": {"state": "Ready", "served": "True", "conditions": READY}}, keep_status=True)


def template_to_json(template: Template) -> dict[str, Any]:
    """The template's SKR side as plain JSON (for an SKR server process, :func:`serve_shard`): provider,
    kyma, ids and each SKR object with its resource's ``[group, version, plural]``."""
    return {"provider": template.provider, "kyma": template.kyma, "ids": template.ids,
            "skr_objects": [[[rt.group, rt.version, rt.plural], obj] for rt, obj in template.skr_objects]}


def template_from_json(data: dict[str, Any], store: Store) -> Template:
    """The SKR side of a template from :func:`template_to_json`, its resources looked up in ``store``'s
    registry (a seeded SKR cluster, :func:`seed_cluster`). Raises ``KeyError`` for a resource not served."""
    objects = []
    for (group, version, plural), obj in data["skr_objects"]:
        rt = store.registry.lookup(group, version, plural)
        if rt is None:
            raise KeyError(f"{group}/{version}/{plural}")
        objects.append((rt, obj))
    return Template(data["provider"], data["kyma"], skr_objects=objects, ids=list(data["ids"]))
