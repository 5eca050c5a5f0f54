"""The API Gateway domain's plug-in registration (entry point ``reconcilery.domains:apigateway``)."""

from workers.domains import Command, Domain

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
    local="localrun.apigateway:ApiGatewayLocal",
    commands=(
        Command("apirules", "tasks.apigateway.cli:render",
                "APIRules with cluster state -> the Istio objects and status the controller writes."),
        Command("ratelimit", "tasks.apigateway.cli:render_ratelimit",
                "RateLimits with cluster state -> the EnvoyFilter and status the controller writes."),
        Command("apigateway", "tasks.apigateway.cli:render_apigateway",
                "APIGateway CRs with cluster state -> the Kyma Gateway, Oathkeeper and status."),
        Command("externalgateway", "tasks.apigateway.externalgateway.cli:render",
                "ExternalGateways with cluster state -> the mTLS Gateway, EnvoyFilters, Secrets and status."),
    ),
)
