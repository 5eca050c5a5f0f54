"""The Cloud Resources domain's plug-in registration (entry point ``reconcilery.domains:cloud``)."""

from workers.domains import Domain

DOMAIN = Domain(
    name="cloud",
    controllers=("tasks.cloud.controller",),
    watches=("tasks.cloud.watches",),
    queues=("cloud-skr", "cloud-kcp"),
    examples=("examples/cloud",),
    local="tasks.cloud.local:CloudResourcesLocal",
)
