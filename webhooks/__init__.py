"""Listeners that the ``reconcilery webhook`` process runs besides the Snatch admission webhook.

A domain whose webhook needs its own HTTPS listener (its own serving certificate: the API Gateway's
conversion webhook is served with the certificate its Certificate controller keeps in a Secret)
registers a factory here at import time; the webhook process imports every installed domain's webhook
modules (:attr:`workers.domains.Domain.webhooks`), builds every
registered listener and starts and stops them with its own. The same listeners run in a thread of
``reconcilery up`` with :class:`ThreadedListener`. Lower layer: imports no domain.
"""

from webhooks.listeners import Listener, ThreadedListener, factories, load, register, start_all

__all__ = ["Listener", "ThreadedListener", "factories", "load", "register", "start_all"]
