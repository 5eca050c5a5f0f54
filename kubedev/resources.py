"""What the dev API server serves: built-in resource types and the ones CRDs add.

A :class:`ResourceType` is one served ``group/version/plural``. Objects are stored once per
``group/plural`` (:attr:`ResourceType.storage_key`), whatever version they are read through: CRD
versions are not converted, only ``apiVersion`` is rewritten, as a CRD with ``conversion: None`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUILTINS", "Registry", "ResourceType", "crd_resource_types"]

_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True)
class ResourceType:
    """One served resource: ``group`` is ``""`` for core; ``has_status`` means a ``/status`` subresource.

    DELETE answers, as the real registries do: the object while finalizers hold it, else a
    ``Status`` of ``Success`` unless ``returns_deleted`` (pods, services, namespaces answer the object).

    ``reset_status_on_create`` drops ``status`` from create bodies (as the real strategies for Pods,
    Services, Deployments and CRs do; Nodes keep theirs). ``field_selectors`` lists the fields that
    field selectors may use besides ``metadata.name`` and ``metadata.namespace``.
    """

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    reset_status_on_create: bool = True
    field_selectors: frozenset[str] = field(default_factory=frozenset)
    custom: bool = False  # served because of a CRD
    returns_deleted: bool = False  # DELETE answers the object, not a Status (pods, services, namespaces)

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        """Same as :attr:`api_version`; the discovery ``groupVersion``."""
        return self.api_version

    @property
    def storage_key(self) -> str:
        """Where objects live in the store: ``group/plural`` (``/pods`` for core)."""
        return f"{self.group}/{self.plural}"

    @property
    def qualified(self) -> str:
        """The resource as error messages name it: ``pods`` or ``widgets.example.com``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def allows_field(self, path: str) -> bool:
        """Whether a field selector may use ``path`` on this resource."""
        return path in _META_FIELDS or path in self.field_selectors


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool = True, short: tuple[str, ...] = (),
       status: bool = False, cats: tuple[str, ...] = (), keep_status: bool = False,
       fields: Iterable[str] = (), returns_deleted: bool = False) -> ResourceType:
    return ResourceType(group, version, plural, kind.lower(), kind, namespaced, short, cats, status,
                        not keep_status, frozenset(fields), returns_deleted=returns_deleted)


_POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
               "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")
_EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                 "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")
_EVENT_V1_FIELDS = ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                    "reason", "reportingController", "type")

#: Built-in resources, as ``kubectl api-resources`` lists them on a real cluster.
BUILTINS: tuple[ResourceType, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, ("ns",), True, fields=("status.phase",), returns_deleted=True),
    _r("", "v1", "nodes", "Node", False, ("no",), True, keep_status=True, fields=("spec.unschedulable",)),
    _r("", "v1", "pods", "Pod", True, ("po",), True, ("all",), fields=_POD_FIELDS, returns_deleted=True),
    _r("", "v1", "services", "Service", True, ("svc",), True, ("all",), returns_deleted=True),
    _r("", "v1", "endpoints", "Endpoints", True, ("ep",)),
    _r("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _r("", "v1", "secrets", "Secret", True, fields=("type",)),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    _r("", "v1", "events", "Event", True, ("ev",), fields=_EVENT_FIELDS),
    _r("events.k8s.io", "v1", "events", "Event", True, ("ev",), fields=_EVENT_V1_FIELDS),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
       False),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False),
    _r("apps", "v1", "deployments", "Deployment", True, ("deploy",), True, ("all",)),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), True, ("all",)),
    _r("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), True, ("all",)),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), True, ("all",)),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), True),
    _r("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ("hpa",), True, ("all",)),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       ("crd", "crds"), True, ("api-extensions",)),
)


def crd_resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves: one per version with ``served: true``.

    Field selectors allowed are ``metadata.name``/``metadata.namespace`` plus the version's
    ``selectableFields`` (JSON paths like ``.spec.color``).
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    plural = names.get("plural", "")
    kind = names.get("kind", "")
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        selectable = {str(f.get("jsonPath", "")).lstrip(".") for f in version.get("selectableFields") or []}
        out.append(ResourceType(
            group=group, version=version.get("name", ""), plural=plural,
            singular=names.get("singular") or kind.lower(), kind=kind,
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            has_status="status" in subresources, reset_status_on_create=True,
            field_selectors=frozenset(selectable), custom=True,
        ))
    return out


class Registry:
    """Index of served resource types by ``(group, version, plural)``; CRDs add and remove theirs."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        for rt in BUILTINS:
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served type for a URL's group/version/plural, or ``None`` (the server answers 404)."""
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        """Every served type, built-ins first, in a stable order."""
        return list(self._by_gvr.values())

    def set_crd(self, crd: Mapping[str, Any]) -> list[ResourceType]:
        """Serve (or re-serve after an update) the versions of a CRD; returns the types now served."""
        name = (crd.get("metadata") or {}).get("name", "")
        self.remove_crd(name)
        types = crd_resource_types(crd)
        for rt in types:
            if (rt.group, rt.version, rt.plural) in self._by_gvr and not self._by_gvr[
                    (rt.group, rt.version, rt.plural)].custom:
                continue  # never shadow a built-in
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._by_crd[name] = types
        return types

    def remove_crd(self, name: str) -> list[ResourceType]:
        """Stop serving a CRD's versions; returns the types that were served."""
        types = self._by_crd.pop(name, [])
        for rt in types:
            if self._by_gvr.get((rt.group, rt.version, rt.plural)) == rt:
                del self._by_gvr[(rt.group, rt.version, rt.plural)]
        return types

    def clear_crds(self) -> None:
        """Stop serving every CRD (the built-ins stay)."""
        for name in list(self._by_crd):
            self.remove_crd(name)

    def storage_types(self, storage_key: str) -> list[ResourceType]:
        """All served versions that store into ``storage_key``."""
        return [rt for rt in self._by_gvr.values() if rt.storage_key == storage_key]
