"""Names of the Cloud Resources domain: API groups, kinds, labels, finalizers, condition types and reasons.

Every string here is the original's (``kyma-project/cloud-manager``: ``api/cloud-resources/v1beta1``,
``api/cloud-control/v1beta1``, ``pkg/common``); tests and users match on them, so they are kept exact,
including the original's misspellings (``ScopeNoFound``).
"""

from __future__ import annotations

from kube.resources import Resource  # the pure type (the package imports the client)

# ---- API groups and kinds --------------------------------------------------------------------

SKR_GROUP = "cloud-resources.kyma-project.io"
KCP_GROUP = "cloud-control.kyma-project.io"
VERSION = "v1beta1"

#: SKR (user-facing) kinds.
SKR_IPRANGE = Resource(SKR_GROUP, VERSION, "ipranges", "IpRange", False)
CLOUD_RESOURCES = Resource(SKR_GROUP, VERSION, "cloudresources", "CloudResources", True)
#: SKR Redis instances (namespaced), one kind per provider (``api/cloud-resources/v1beta1/*redisinstance_types.go``).
SKR_AWS_REDIS_INSTANCE = Resource(SKR_GROUP, VERSION, "awsredisinstances", "AwsRedisInstance", True)
SKR_GCP_REDIS_INSTANCE = Resource(SKR_GROUP, VERSION, "gcpredisinstances", "GcpRedisInstance", True)
SKR_AZURE_REDIS_INSTANCE = Resource(SKR_GROUP, VERSION, "azureredisinstances", "AzureRedisInstance", True)
#: SKR VPC peerings (cluster-scoped), one kind per provider (``api/cloud-resources/v1beta1/*vpcpeering_types.go``).
SKR_AWS_VPC_PEERING = Resource(SKR_GROUP, VERSION, "awsvpcpeerings", "AwsVpcPeering", False)
SKR_GCP_VPC_PEERING = Resource(SKR_GROUP, VERSION, "gcpvpcpeerings", "GcpVpcPeering", False)
SKR_AZURE_VPC_PEERING = Resource(SKR_GROUP, VERSION, "azurevpcpeerings", "AzureVpcPeering", False)
#: The SKR peering kind of each provider (its CRD is installed only in SKRs of that provider).
SKR_VPC_PEERINGS = {"aws": SKR_AWS_VPC_PEERING, "gcp": SKR_GCP_VPC_PEERING, "azure": SKR_AZURE_VPC_PEERING}

#: KCP (low-level) kinds.
KCP_IPRANGE = Resource(KCP_GROUP, VERSION, "ipranges", "IpRange", True)
SCOPE = Resource(KCP_GROUP, VERSION, "scopes", "Scope", True)
NETWORK = Resource(KCP_GROUP, VERSION, "networks", "Network", True)
NUKE = Resource(KCP_GROUP, VERSION, "nukes", "Nuke", True)
SKR_STATUS = Resource(KCP_GROUP, VERSION, "skrstatuses", "SkrStatus", True)
#: KCP kinds of other features that reference an IpRange (``spec.ipRange.name``) or a scope; read when
#: served, so deletion protection and Nuke work once they are installed.
NFS_INSTANCE = Resource(KCP_GROUP, VERSION, "nfsinstances", "NfsInstance", True)
REDIS_INSTANCE = Resource(KCP_GROUP, VERSION, "redisinstances", "RedisInstance", True)
REDIS_CLUSTER = Resource(KCP_GROUP, VERSION, "redisclusters", "RedisCluster", True)
VPC_PEERING = Resource(KCP_GROUP, VERSION, "vpcpeerings", "VpcPeering", True)
GCP_REDIS_CLUSTER = Resource(KCP_GROUP, VERSION, "gcpredisclusters", "GcpRedisCluster", True)
GCP_SUBNET = Resource(KCP_GROUP, VERSION, "gcpsubnets", "GcpSubnet", True)
AZURE_MANAGED_REDIS = Resource(KCP_GROUP, VERSION, "azuremanagedredis", "AzureManagedRedis", True)

#: SKR NFS volumes (``nfs`` feature; installed for their provider).
AWS_NFS_VOLUME = Resource(SKR_GROUP, VERSION, "awsnfsvolumes", "AwsNfsVolume", True)
GCP_NFS_VOLUME = Resource(SKR_GROUP, VERSION, "gcpnfsvolumes", "GcpNfsVolume", True)

#: SKR NFS backups, restores and schedules (``nfsBackup`` feature; no KCP mirror: their SKR plans call
#: the provider with the Scope's credentials).
GCP_NFS_VOLUME_BACKUP = Resource(SKR_GROUP, VERSION, "gcpnfsvolumebackups", "GcpNfsVolumeBackup", True)
GCP_NFS_VOLUME_RESTORE = Resource(SKR_GROUP, VERSION, "gcpnfsvolumerestores", "GcpNfsVolumeRestore", True)
GCP_NFS_BACKUP_SCHEDULE = Resource(SKR_GROUP, VERSION, "gcpnfsbackupschedules", "GcpNfsBackupSchedule", True)
GCP_NFS_VOLUME_BACKUP_DISCOVERY = Resource(SKR_GROUP, VERSION, "gcpnfsvolumebackupdiscoveries",
                                           "GcpNfsVolumeBackupDiscovery", False)
AWS_NFS_VOLUME_BACKUP = Resource(SKR_GROUP, VERSION, "awsnfsvolumebackups", "AwsNfsVolumeBackup", True)
AWS_NFS_VOLUME_RESTORE = Resource(SKR_GROUP, VERSION, "awsnfsvolumerestores", "AwsNfsVolumeRestore", True)
AWS_NFS_BACKUP_SCHEDULE = Resource(SKR_GROUP, VERSION, "awsnfsbackupschedules", "AwsNfsBackupSchedule", True)

#: Outside kinds the loops read.
KYMA = Resource("operator.kyma-project.io", "v1beta2", "kymas", "Kyma", True)
GARDENER_CLUSTER = Resource("infrastructuremanager.kyma-project.io", "v1", "gardenerclusters", "GardenerCluster",
                            True)
SHOOT = Resource("core.gardener.cloud", "v1beta1", "shoots", "Shoot", True)
SECRET_BINDING = Resource("core.gardener.cloud", "v1beta1", "secretbindings", "SecretBinding", True)
CREDENTIALS_BINDING = Resource("security.gardener.cloud", "v1alpha1", "credentialsbindings", "CredentialsBinding",
                               True)

# ---- namespaces, names -----------------------------------------------------------------------

#: The KCP namespace of Scopes, mirrors, kubeconfig Secrets (``KymaRef`` namespace).
KCP_NAMESPACE = "kcp-system"
#: Secret (KCP) with the Garden's kubeconfig, and its key.
GARDENER_CREDENTIALS = "gardener-credentials"
GARDENER_CREDENTIALS_KEY = "kubeconfig"
#: Default Gardener project namespace when the Garden kubeconfig names none (env ``GARDENER_NAMESPACE``).
DEFAULT_GARDENER_NAMESPACE = "garden-kyma-dev"
#: The Cloud Resources module name in ``Kyma.status.modules``.
MODULE_NAME = "cloud-manager"
#: SKR namespace and ConfigMap of the runtime's exposed data.
KYMA_SYSTEM = "kyma-system"
KYMA_INFO = "kyma-info"
KYMA_INFO_NAT_KEY = "cloud.natGatewayIps"
#: ``common.DefaultCloudManagerCidr``.
DEFAULT_CIDR = "10.250.4.0/22"


def kubeconfig_secret(kyma: str) -> str:
    """Name of the KCP Secret holding the SKR's kubeconfig (key ``config``)."""
    return f"kubeconfig-{kyma}"


def kyma_network(scope: str) -> str:
    """``<scope>--kyma``: the KCP Network referencing the shoot's own VPC."""
    return f"{scope}--kyma"


def cm_network(scope: str) -> str:
    """``<scope>--cm``: the Cloud-Manager managed KCP Network (Azure)."""
    return f"{scope}--cm"


def vpc_network(gardener_namespace: str, shoot: str) -> str:
    """``shoot--<project>--<shoot>``, the project being the Gardener namespace without ``garden-``."""
    project = gardener_namespace.removeprefix("garden-")
    return f"shoot--{project}--{shoot}"


# ---- labels, annotations, finalizers, tags ---------------------------------------------------

FINALIZER = "cloud-manager.kyma-project.io/deletion-hook"
LEGACY_FINALIZERS = ("cloud-control.kyma-project.io/deletion-hook", "cloud-resources.kyma-project.io/deletion-hook")

LABEL_KYMA_NAME = "cloud-manager.kyma-project.io/kymaName"
LABEL_REMOTE_NAME = "cloud-manager.kyma-project.io/remoteName"
LABEL_REMOTE_NAMESPACE = "cloud-manager.kyma-project.io/remoteNamespace"
LABEL_MODULE = "kyma-project.io/module"
MODULE_LABEL_VALUE = "cloud-manager"
LABEL_IGNORE = "cloud-manager.kyma-project.io/ignore"
LABEL_SKR_ID = "cloud-resources.kyma-project.io/id"
ANNOTATION_VERSION = "cloud-resources.kyma-project.io/version"

#: Labels copied from the GardenerCluster onto the Scope.
SCOPE_LABELS = (
    "kyma-project.io/global-account-id",
    "kyma-project.io/subaccount-id",
    "kyma-project.io/shoot-name",
    "kyma-project.io/region",
    "kyma-project.io/broker-plan-name",
)
LABEL_GLOBAL_ACCOUNT, LABEL_SUBACCOUNT, LABEL_SHOOT_NAME, LABEL_REGION, LABEL_BROKER_PLAN = SCOPE_LABELS
LABEL_PROVIDER = "kyma-project.io/provider"

#: Labels of the default IpRange the consumers create (``pkg/skr/common/defaultiprange``).
DEFAULT_IPRANGE_LABELS = {
    "app.kubernetes.io/name": "default-iprange",
    "app.kubernetes.io/instance": "default",
    "app.kubernetes.io/version": "1.0.0",
    "app.kubernetes.io/component": "cloud-manager",
    "app.kubernetes.io/part-of": "kyma",
    "app.kubernetes.io/managed-by": "cloud-manager",
}

#: Cloud tags (``pkg/common/consts.go``).
TAG_NAME = "cloud-manager.kyma-project.io/name"
TAG_REMOTE_NAME = "cloud-manager.kyma-project.io/remote-name"
TAG_SCOPE = "cloud-manager.kyma-project.io/scope"
TAG_SHOOT = "cloud-manager.kyma-project.io/shoot"
TAG_IPRANGE = "cloud-manager.kyma-project.io/iprange"

#: Labels of the PersistentVolume / PersistentVolumeClaim of an NFS volume (``api/cloud-resources/v1beta1``).
LABEL_NFS_VOLUME_NAME = "cloud-resources.kyma-project.io/nfsVolumeName"
LABEL_NFS_VOLUME_NAMESPACE = "cloud-resources.kyma-project.io/nfsVolumeNamespace"
LABEL_NFS_VOLUME_CAPACITY = "cloud-resources.kyma-project.io/nfsVolumeStorageCapacity"
LABEL_MANAGED = "cloud-resources.kyma-project.io/managed"
#: Labels of a backup a schedule created (``api/cloud-resources/v1beta1`` ``LabelScheduleName`` ...).
LABEL_SCHEDULE_NAME = "cloud-resources.kyma-project.io/scheduleName"
LABEL_SCHEDULE_NAMESPACE = "cloud-resources.kyma-project.io/scheduleNamespace"
#: ``util.NewLabelBuilder().WithCloudManagerDefaults()``.
CLOUD_MANAGER_DEFAULT_LABELS = {"app.kubernetes.io/component": "cloud-manager", "app.kubernetes.io/part-of": "kyma",
                                "app.kubernetes.io/managed-by": "cloud-manager"}

# ---- states ------------------------------------------------------------------------------------

STATE_READY = "Ready"
STATE_ERROR = "Error"
STATE_WARNING = "Warning"
STATE_PROCESSING = "Processing"
STATE_CREATING = "Creating"
STATE_DELETING = "Deleting"

# ---- condition types ---------------------------------------------------------------------------

COND_READY = "Ready"
COND_ERROR = "Error"
COND_WARNING = "Warning"
COND_SUBMITTED = "Submitted"
COND_QUOTA_EXCEEDED = "QuotaExceeded"
COND_DELETE_WHILE_USED = "DeleteWhileUsed"

# ---- reasons -----------------------------------------------------------------------------------

REASON_READY = "Ready"
REASON_ERROR = "Error"
REASON_SUBMISSION_SUCCEEDED = "SubmissionSucceeded"
REASON_INVALID_CIDR = "InvalidCidr"
REASON_CIDR_OVERLAP = "CidrOverlap"
REASON_CIDR_CAN_NOT_BE_CHANGED = "CidrCanNotBeChanged"  # SKR
REASON_QUOTA_EXCEEDED = "QuotaExceeded"
REASON_DELETE_WHILE_USED = "DeleteWhileUsed"
REASON_RESOURCES_EXIST = "ResourcesExist"
REASON_OTHER_IS_SERVED = "OtherIsServed"
# KCP
REASON_SCOPE_NOT_FOUND = "ScopeNoFound"  # sic
REASON_CIDR_CAN_NOT_CHANGE = "CidrCanNotChange"
REASON_CIDR_CAN_NOT_SPLIT = "CidrCanNotSplit"
REASON_CIDR_ASSOCIATION_FAILED = "CidrAssociationFailed"
REASON_CIDR_ALLOCATION_FAILED = "CidrAllocationFailed"
REASON_VPC_NOT_FOUND = "VpcNotFound"
REASON_SHOOT_AND_VPC_MISMATCH = "ShootAndVpcMismatch"
REASON_UNKNOWN = "Unknown"
REASON_NOT_FOUND = "NotFound"
REASON_CLOUD_PROVIDER_ERROR = "CloudProviderError"
REASON_ERROR_LISTING_RESOURCES = "ErrorListingResources"
# KCP RedisInstance (``api/cloud-control/v1beta1/conditions.go``)
REASON_FAILED_CREATING_REDIS_INSTANCE = "FailedCreatingRedisInstance"
REASON_INVALID_DEPENDENCY = "InvalidDependency"
# KCP VpcPeering (``api/cloud-control/v1beta1/conditions.go``)
REASON_MISSING_DEPENDENCY = "MissingDependency"
REASON_WAITING_DEPENDENCY = "WaitingDependency"
REASON_FAILED_CREATING_VPC_PEERING_CONNECTION = "FailedCreatingVpcPeeringConnection"
REASON_FAILED_ACCEPTING_VPC_PEERING_CONNECTION = "FailedAcceptingVpcPeeringConnection"
REASON_FAILED_LOADING_REMOTE_VPC_NETWORK = "FailedLoadingRemoteVpcNetwork"
REASON_FAILED_LOADING_REMOTE_VPC_PEERING_CONNECTION = "FailedLoadingRemoteVpcPeeringConnection"
REASON_FAILED_CREATING_ROUTES = "FailedCreatingRoutes"
REASON_INVALID_REMOTE_VNET = "InvalidRemoteVnet"

# ---- SKR quotas ---------------------------------------------------------------------------------

def quota_key(res: Resource) -> str:
    """``resourceQuota.skr`` key of the total count of an SKR kind: ``<lower(kind)>.<group>/totalCount``."""
    return f"{res.kind.lower()}.{res.group}/totalCount"
