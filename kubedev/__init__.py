"""The dev Kubernetes API server: an in-memory API server for ``reconcilery up`` and the tests.

``DevAPIServer(port=0).start()`` serves core kinds, CRDs, selectors, PUT/PATCH/DELETE semantics,
status subresources, finalizers and watches; ``python -m kubedev --port N --kubeconfig PATH`` runs one.
"""

from kubedev.server import DevAPIServer, build_app, kubeconfig_dict
from kubedev.store import Store

__all__ = ["DevAPIServer", "Store", "build_app", "kubeconfig_dict"]
