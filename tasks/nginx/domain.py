"""The NGINX edge domain's plug-in registration (entry point ``reconcilery.domains:nginx``)."""

from workers.domains import Domain

DOMAIN = Domain(
    name="nginx",
    controllers=("tasks.nginx.controller",),
    watches=("tasks.nginx.watches",),
    queues=("nginx",),
    examples=("examples/nginx",),
    local="tasks.nginx.local:NginxLocal",
)
