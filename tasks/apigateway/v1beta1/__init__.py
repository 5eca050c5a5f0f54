"""APIRule v1beta1: the model, the ``istio`` / ``ory`` validators and processors, and the plan."""

from tasks.apigateway.v1beta1.model import V1beta1APIRule, looks_v1beta1
from tasks.apigateway.v1beta1.plan import V1beta1Result, plan_v1beta1
from tasks.apigateway.v1beta1.status import V1beta1Status

__all__ = ["V1beta1APIRule", "V1beta1Result", "V1beta1Status", "looks_v1beta1", "plan_v1beta1"]
