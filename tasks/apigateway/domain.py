"""The API Gateway domain's plug-in registration (entry point ``reconcilery.domains:apigateway``)."""

from workers.domains import Domain

DOMAIN = Domain(
    name="apigateway",
    controllers=("tasks.apigateway.controller", "tasks.apigateway.operator.controller",
                 "tasks.apigateway.ratelimit.controller", "tasks.apigateway.certificate_controller",
                 "tasks.apigateway.externalgateway.controller"),
    watches=("tasks.apigateway.watches", "tasks.apigateway.certificate_watches",
             "tasks.apigateway.externalgateway.watches"),
    webhooks=("tasks.apigateway.webhook",),
    queues=("apigateway",),
    examples=("examples/apigateway",),
    local="tasks.apigateway.local:ApiGatewayLocal",
)
