"""NGINX edge: Services and Nodes into NGINX Plus upstream servers on every configured NGINX Plus host.

Pure core: :mod:`tasks.nginx.settings`, :mod:`tasks.nginx.translate`, :mod:`tasks.nginx.diff`,
:mod:`tasks.nginx.render`; I/O: :mod:`tasks.nginx.plus_client` (NGINX Plus) and the reconcile in
:mod:`tasks.nginx.controller` (which registers the ``nginx-upstream`` controller on import).
"""
