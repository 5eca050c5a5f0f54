"""The house's one TLS listener stack: what every webhook and listener shares, and the registry of extra listeners.

Modules: :mod:`webhooks.tls` (TLS 1.3 server contexts, client-certificate verification, and the one
certificate reloader: of the webhooks, the SKR listener and the NGINX edge's client certificates),
:mod:`webhooks.certificates` (the key-pair type, generation, kubelet-style certificate dirs),
:mod:`webhooks.review` (the AdmissionReview / ConversionReview skeleton, pure), :mod:`webhooks.server`
(that skeleton over aiohttp, listeners), :mod:`webhooks.connections` (a listener that bounds its
connections: slots, deadlines, TLS and plain HTTP on one port), :mod:`webhooks.exchange` (one small HTTP
request per connection over streams), :mod:`webhooks.serving` (a webhook process's shell: the HTTPS
review listener over a certificate directory, health and metrics listeners, ``serve`` and ``run`` with
signals), :mod:`webhooks.clients` (the kube client factory). The domains keep only their decisions,
metrics and routes.

Listeners that the ``reconcilery webhook`` process runs besides the Snatch admission webhook:

A domain whose webhook needs its own HTTPS listener (its own serving certificate: the API Gateway's
conversion webhook is served with the certificate its Certificate controller keeps in a Secret)
registers a factory here at import time; the webhook process imports every installed domain's webhook
modules (:attr:`workers.domains.Domain.webhooks`), builds every
registered listener and starts and stops them with its own. The same listeners run in a thread of
``reconcilery up`` with :class:`ThreadedListener`. Lower layer: imports no domain.
"""

from webhooks.listeners import Listener, ThreadedListener, factories, load, register, start_all

__all__ = ["Listener", "ThreadedListener", "factories", "load", "register", "start_all"]
