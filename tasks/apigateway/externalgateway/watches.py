"""Watch registrations of the ``externalgateway`` controller.

As the original's ``For(&ExternalGateway{}, GenerationChangedPredicate)``: an ExternalGateway added,
deleted, with a new ``metadata.generation`` or a ``deletionTimestamp`` enqueues itself (status and
finalizer writes enqueue nothing). Beyond the original:

- a deleted ExternalGateway also enqueues the others with the same ``externalDomain`` (the newer one
  waiting on the domain conflict becomes Ready at once);
- the generated Gateways and EnvoyFilters (label selector on the owner name label) deleted, or whose
  spec or labels changed, enqueue their ExternalGateway, so drift is repaired at once (the original
  repairs it at the next hourly reconcile);
- a Namespace added or deleted, or its ``gateway.kyma-project.io/allow-externalgateways-from``
  annotation changed, enqueues the ExternalGateways of other namespaces whose ``caSecretRef`` names it
  (a granted or withdrawn permission takes effect at once; issue 27).

Secrets are not watched: the watcher would need to read every Secret of ``istio-system`` (the mesh CA
among them), so the CA Secret copy is repaired at the next reconcile, as the original. The regions
ConfigMap and the user's CA Secret are not watched either (as the original: a change is picked up at
the next reconcile, hourly or after a spec change).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from informers.store import Stores
from kube import resources
from tasks.apigateway import reads
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway.controller import CONTROLLER_NAME, EXTERNAL_GATEWAY
from tasks.apigateway.namespaces import ALLOW_EXTERNALGATEWAYS
from tasks.apigateway.watches import drifted, generation_changed
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

EXTERNAL_GATEWAYS = "apigateway-externalgateways"
GENERATED_PREFIX = "apigateway-externalgateway-"
NAMESPACES = "apigateway-externalgateway-namespaces"


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _key(event: WatchEvent, obj: Mapping[str, Any]) -> tuple[str, Key]:
    meta = _meta(obj)
    return CONTROLLER_NAME, Key(event.cluster, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def map_external_gateway(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """Itself on add, delete, new generation or deletion; a deletion also the others of its domain."""
    obj, meta = event.object, _meta(event.object)
    if not generation_changed(event):
        return []
    keys = [_key(event, obj)]
    if event.type == "DELETED":
        domain = m.ExternalGateway.of(obj).external_domain
        keys += [_key(event, o) for o in stores.list(EXTERNAL_GATEWAYS)
                 if domain and m.ExternalGateway.of(o).external_domain == domain
                 and (_meta(o).get("namespace"), _meta(o).get("name")) != (meta.get("namespace"), meta.get("name"))]
    return keys


def map_generated(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """A generated object deleted or changed in spec, data or labels → its ExternalGateway (creates are
    our own writes: nothing)."""
    if not drifted(event, ("spec", "data")):
        return []
    owners = {m.owner_of(o) for o in (event.object, event.old)} - {None}
    return [(CONTROLLER_NAME, Key(event.cluster, ns, name)) for ns, name in sorted(o for o in owners if o)]


def map_namespace(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """A Namespace added or deleted, or its ``allow-externalgateways-from`` annotation changed → the
    ExternalGateways of other namespaces whose ``caSecretRef`` is in it."""
    if event.type == "MODIFIED" and event.old is not None and (
            (_meta(event.object).get("annotations") or {}).get(ALLOW_EXTERNALGATEWAYS)
            == (_meta(event.old).get("annotations") or {}).get(ALLOW_EXTERNALGATEWAYS)):
        return []
    name = str(_meta(event.object).get("name") or "")
    found: list[dict[str, Any]] = []
    with contextlib.suppress(KeyError):  # ExternalGateways not watched in this process
        found = stores.list(EXTERNAL_GATEWAYS)
    return [_key(event, o) for o in found
            if (eg := m.ExternalGateway.of(o)).ca_secret[0] == name and eg.namespace != name]


REGISTRATIONS: list[WatchRegistration] = [
    WatchRegistration(name=EXTERNAL_GATEWAYS, resource=EXTERNAL_GATEWAY, namespace=None, label_selector=None,
                      map_event=map_external_gateway, controllers=(CONTROLLER_NAME,)),
    *(WatchRegistration(name=GENERATED_PREFIX + res.plural, resource=res, namespace=None,
                        label_selector=m.OWNER_NAME_LABEL, map_event=map_generated, controllers=(CONTROLLER_NAME,))
      for res in (reads.GATEWAY, reads.ENVOY_FILTER)),
    WatchRegistration(name=NAMESPACES, resource=resources.NAMESPACE, namespace=None, label_selector=None,
                      map_event=map_namespace, controllers=(CONTROLLER_NAME,)),
]


def registrations() -> list[WatchRegistration]:
    """The watches of this module (:data:`REGISTRATIONS`), as every domain's watch module answers them."""
    return REGISTRATIONS
