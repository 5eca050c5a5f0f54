"""APIRule v1beta1: the model, the ``istio`` / ``ory`` validators and processors, and the plan.

The package exports the model and the status (what :mod:`tasks.apigateway.model` builds on); the plan
is :mod:`tasks.apigateway.v1beta1.plan`, which imports the v2 model, so the package does not import it.
"""

from tasks.apigateway.v1beta1.model import V1beta1APIRule, looks_v1beta1
from tasks.apigateway.v1beta1.status import V1beta1Status

__all__ = ["V1beta1APIRule", "V1beta1Status", "looks_v1beta1"]
