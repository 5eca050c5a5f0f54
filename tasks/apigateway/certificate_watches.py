"""Watch registrations of the ``apigateway-certificate`` controller (one key: the certificate Secret).

As the original's ``For(&corev1.Secret{})`` with a name predicate: the Secret
``kyma-system/api-gateway-webhook-certificate`` added, changed or deleted enqueues the key. Beyond
the original, the APIRule CRD added, or changed in its ``spec.conversion``, enqueues it too, so a CRD
re-applied without its caBundle is repaired at once (and a fresh cluster gets its certificate as soon
as the CRD with the conversion webhook is installed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from informers.store import Stores
from kube import resources
from tasks.apigateway import certificate
from tasks.apigateway.certificate_controller import CONTROLLER_NAME, secret_key
from watchers.engine import WatchEvent, WatchRegistration
from workers.controller import Key

SECRET = "apigateway-certificate-secret"
CRD = "apigateway-certificate-crd"


def map_secret(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """The certificate Secret: any change (our own writes included: the reconcile is cheap)."""
    if event.type == "MODIFIED" and event.old is not None and event.object.get("data") == event.old.get("data"):
        return []
    return [(CONTROLLER_NAME, secret_key(event.cluster))]


def _conversion(obj: dict[str, Any] | None) -> Any:
    return ((obj or {}).get("spec") or {}).get("conversion")


def map_crd(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
    """The APIRule CRD added, or its ``spec.conversion`` changed (a caBundle dropped by a re-apply)."""
    if event.type == "DELETED":
        return []
    if event.type == "MODIFIED" and event.old is not None and _conversion(event.object) == _conversion(event.old):
        return []
    return [(CONTROLLER_NAME, secret_key(event.cluster))]


REGISTRATIONS: list[WatchRegistration] = [
    WatchRegistration(name=SECRET, resource=resources.SECRET, namespace=certificate.SECRET[0], label_selector=None,
                      map_event=map_secret, controllers=(CONTROLLER_NAME,),
                      field_selector=f"metadata.name={certificate.SECRET[1]}"),
    WatchRegistration(name=CRD, resource=resources.CRD, namespace=None, label_selector=None, map_event=map_crd,
                      controllers=(CONTROLLER_NAME,), field_selector=f"metadata.name={certificate.APIRULE_CRD}"),
]


def registrations() -> list[WatchRegistration]:
    """The watches of this module (:data:`REGISTRATIONS`), as every domain's watch module answers them."""
    return REGISTRATIONS
