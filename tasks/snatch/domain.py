"""The Snatch domain's plug-in registration (entry point ``reconcilery.domains:snatch``)."""

from workers.domains import Domain

DOMAIN = Domain.conventional("snatch", "SnatchLocal")
