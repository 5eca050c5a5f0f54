"""Resource references: which REST collection a kind lives in (pure, no I/O), and those of the built-in
kinds every domain uses.

A :class:`Resource` is what lightkube calls a resource class and client-go a GroupVersionResource
plus its kind and scope. Building a request path from it is a pure function, so the paths every
controller uses are unit tested without a server.

Custom kinds are declared by their domain: ``Resource("gateway.kyma-project.io", "v2", "apirules",
"APIRule", True)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

#: Longest object name any kind accepts (a DNS subdomain).
MAX_NAME = 253


class InvalidName(ValueError):
    """A name or namespace that no Kubernetes object can have in a request path (the API server's
    ``ValidatePathSegmentName``): empty, ``.`` or ``..``, containing ``/`` or ``%``, longer than 253."""


def check_name(value: str, what: str = "name") -> str:
    """``value`` when it can be one path segment of an object's URL; else raises :class:`InvalidName`.

    A dot segment would make the path name the collection (a GET becomes a LIST, a DELETE a
    delete-collection), ``/`` or ``%`` another path: names read from untrusted clusters must never
    reach a path unchecked."""
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "%" in value \
            or len(value) > MAX_NAME:
        raise InvalidName(f"invalid {what} {str(value)[:80]!r}: not a valid Kubernetes object {what}")
    return value


@dataclass(frozen=True)
class Resource:
    """One served kind: ``Resource("gateway.kyma-project.io", "v2", "apirules", "APIRule", True)``.

    Attributes:
        group: API group, ``""`` for the core group (``/api/v1``).
        version: API version, e.g. ``"v1"``.
        plural: the REST collection name (``"services"``).
        kind: the object kind (``"Service"``).
        namespaced: ``True`` for namespaced kinds, ``False`` for cluster-scoped ones.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``apiVersion`` of the objects: ``"v1"`` or ``"group/version"``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """``/api/v1`` or ``/apis/{group}/{version}``: the discovery document of this kind's group."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def full_name(self) -> str:
        """``plural.group`` (``"apirules.gateway.kyma-project.io"``), the name of the kind's CRD."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The REST path of the collection, an object or an object's subresource.

        ``namespace=None`` on a namespaced kind is the all-namespaces collection; ``namespace`` is
        ignored for cluster-scoped kinds. Raises ``ValueError`` for a subresource without a name and
        :class:`InvalidName` for a name or namespace that is not a valid path segment (``.``, ``..``,
        ``/``, ``%``: see :func:`check_name`), before anything is built.
        """
        if subresource and not name:
            raise ValueError("a subresource needs an object name")
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(check_name(namespace, 'namespace'), safe='')}")
        parts.append(self.plural)
        if name is not None and name != "":
            parts.append(quote(check_name(name), safe=""))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


def object_ref(obj: dict) -> str:
    """``Kind namespace/name`` (or ``Kind name``) of an object dict, for logs and errors."""
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name", "?")
    return f"{obj.get('kind', '?')} {ns}/{name}" if ns else f"{obj.get('kind', '?')} {name}"

NAMESPACE = Resource("", "v1", "namespaces", "Namespace", False)
NODE = Resource("", "v1", "nodes", "Node", False)
POD = Resource("", "v1", "pods", "Pod", True)
SERVICE = Resource("", "v1", "services", "Service", True)
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints", True)
PERSISTENT_VOLUME = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIM = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
CONFIGMAP = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRET = Resource("", "v1", "secrets", "Secret", True)
SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
EVENT = Resource("", "v1", "events", "Event", True)
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment", True)
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
PDB = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
HPA = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True)
NETWORK_POLICY = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True)
CLUSTER_ROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDING = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False)
MUTATING_WEBHOOK_CONFIGURATION = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
    False,
)
VALIDATING_WEBHOOK_CONFIGURATION = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
    False,
)
CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)

__all__ = [
    "CONFIGMAP",
    "CRD",
    "DEPLOYMENT",
    "ENDPOINTS",
    "EVENT",
    "LEASE",
    "MUTATING_WEBHOOK_CONFIGURATION",
    "NAMESPACE",
    "NODE",
    "POD",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "VALIDATING_WEBHOOK_CONFIGURATION",
    "InvalidName",
    "Resource",
    "check_name",
    "object_ref",
]
