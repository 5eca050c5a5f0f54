"""The APIGateway CR (``operator.kyma-project.io/v1alpha1``): the model, the managed objects, the plan.

The ``apigateway`` controller (:mod:`tasks.apigateway.operator.controller`) is registered by importing its
module (listed in :data:`tasks.apigateway.domain.DOMAIN`); this package exports the pure parts.
"""

from tasks.apigateway.operator.model import APIGateway, oldest_apigateway
from tasks.apigateway.operator.plan import OperatorPlan, OperatorPolicy, OperatorState, OperatorStatus, plan

__all__ = ["APIGateway", "OperatorPlan", "OperatorPolicy", "OperatorState", "OperatorStatus", "oldest_apigateway",
           "plan"]
