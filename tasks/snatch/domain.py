"""The Snatch domain's plug-in registration (entry point ``reconcilery.domains:snatch``)."""

from workers.domains import Command, Domain

DOMAIN = Domain.conventional("snatch", "SnatchLocal", commands=(
    Command("snatch", "tasks.snatch.cli:render",
            "Pods with Namespaces and Nodes -> the Pods as the webhook admits them."),
    Command("webhook", "tasks.snatch.cli:webhook", "Run the Snatch mutating admission webhook (HTTPS).", group="",
            process=True),
))
