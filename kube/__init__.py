"""The Kubernetes layer: the only code that talks to a Kubernetes API server (dict based)."""

from kube import clusters, diff, events, resources
from kube.client import Kube
from kube.clusters import client_for
from kube.errors import ApiError, Conflict, Gone, NotFound, ReadLimitExceeded, ResourceMissing
from kube.resources import InvalidName, Resource, object_ref

__all__ = [
    "ApiError",
    "Conflict",
    "Gone",
    "InvalidName",
    "Kube",
    "NotFound",
    "ReadLimitExceeded",
    "Resource",
    "ResourceMissing",
    "client_for",
    "clusters",
    "diff",
    "events",
    "object_ref",
    "resources",
]
