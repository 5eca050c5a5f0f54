"""The Snatch domain's plug-in registration (entry point ``reconcilery.domains:snatch``)."""

from workers.domains import Domain

DOMAIN = Domain(
    name="snatch",
    controllers=("tasks.snatch.controller",),
    watches=("tasks.snatch.watches",),
    queues=("snatch",),
    examples=("examples/snatch",),
    local="tasks.snatch.local:SnatchLocal",
)
