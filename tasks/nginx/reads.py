"""The NGINX edge's read registration: what its reconciles read from the process's informers.

Every read of the ``nginx-upstream`` reconcile and its resync goes through ``READS.reader(kube)``
(:class:`informers.reader.DelegatingReader`): the ConfigMaps (settings, ``nlk`` configuration, the
ownership record) and Services from one informer per namespace read (every namespace's Services, for
the ``nlk`` mode, from one cluster-wide informer), Nodes and EndpointSlices from cluster-wide ones; the
TLS Secrets from the API server.
"""

from __future__ import annotations

from informers.reader import Cached, Reads
from kube import Resource, resources

#: EndpointSlices (``discovery.k8s.io/v1``), read by the ``nlk`` mode for ClusterIP Services.
ENDPOINTSLICE = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)

#: The kinds the edge reads from informers (the rest, Secrets: the API server).
READS = Reads((
    Cached(resources.CONFIGMAP, per_namespace=True), Cached(resources.SERVICE, per_namespace=True),
    Cached(resources.NODE), Cached(ENDPOINTSLICE),
))
