"""The RateLimit CR (``gateway.kyma-project.io/v1alpha1``) → an EnvoyFilter: the model and the plan.

The ``ratelimit`` controller (:mod:`tasks.apigateway.ratelimit.controller`) is registered by importing its
module (listed in :data:`tasks.apigateway.domain.DOMAIN`); this package exports the pure parts.
"""

from tasks.apigateway.ratelimit.model import RateLimit
from tasks.apigateway.ratelimit.plan import RateLimitState, desired_envoy_filter, plan

__all__ = ["RateLimit", "RateLimitState", "desired_envoy_filter", "plan"]
