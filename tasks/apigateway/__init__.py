"""API Gateway domain: APIRule v2 / v2alpha1 → Istio VirtualService, AuthorizationPolicies and
RequestAuthentications. The pure core is :func:`plan`; the worker and ``render`` both run it."""

from tasks.apigateway.plan import Plan, Settings, plan
from tasks.apigateway.state import ClusterState

__all__ = ["ClusterState", "Plan", "Settings", "plan"]
