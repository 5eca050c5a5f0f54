"""Resource references of the built-in kinds every domain uses.

Custom kinds are declared by their domain: ``Resource("gateway.kyma-project.io", "v2", "apirules",
"APIRule", True)``.
"""

from __future__ import annotations

from kube.resource import Resource

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
    "Resource",
]
