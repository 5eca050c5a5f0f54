"""NGINX edge: Services and Nodes into NGINX Plus upstream servers on every configured NGINX Plus host.

Two selection modes from one controller (``RECONCILERY_NGINX_MODES``): ``nkl`` (the seed) and ``nlk``
(nginx/nginx-loadbalancer-kubernetes v1.2, NGINXaaS). Pure core: :mod:`tasks.nginx.settings`,
:mod:`tasks.nginx.translate`, :mod:`tasks.nginx.plan` (an upstream's writes as one ``kube.toolkit.Outcome``
of NGINX Plus calls), :mod:`tasks.nginx.diff`, :mod:`tasks.nginx.render`; I/O: :mod:`tasks.nginx.plus_client`
(NGINX Plus), :mod:`tasks.nginx.ownership` (the ownership record) and the reconcile in
:mod:`tasks.nginx.controller` (which registers the ``nginx-upstream`` controller on import and carries the
Outcome out with ``kube.toolkit.execute``).
"""
