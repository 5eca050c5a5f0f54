"""The NGINX edge domain's plug-in registration (entry point ``reconcilery.domains:nginx``)."""

from workers.domains import Domain

DOMAIN = Domain.conventional("nginx", "NginxLocal")
