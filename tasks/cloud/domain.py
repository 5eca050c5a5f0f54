"""The Cloud Resources domain's plug-in registration (entry point ``reconcilery.domains:cloud``)."""

from workers.domains import Command, Domain

DOMAIN = Domain(
    name="cloud",
    controllers=("tasks.cloud.controller",),
    watches=("tasks.cloud.watches",),
    queues=("cloud-skr", "cloud-kcp"),
    examples=("examples/cloud",),
    local="localrun.cloud:CloudResourcesLocal",
    command_source="tasks.cloud.cli:commands",
    commands=(
        Command("skr-listener", "tasks.cloud.cli:listener",
                "Run the runtime-watcher listener: SKR events connect their SKR sooner.", group="", process=True),
    ),
)
