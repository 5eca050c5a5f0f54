"""The NGINX edge domain's plug-in registration (entry point ``reconcilery.domains:nginx``)."""

from workers.domains import Command, Domain

DOMAIN = Domain.conventional("nginx", "NginxLocal", commands=(
    Command("nginx", "tasks.nginx.cli:render",
            "Services, Nodes and nkl-config -> the servers of every (host, upstream)."),
))
