"""Installing what the ``apirule`` controller needs in a cluster: the APIRule CRD and, on clusters
without Istio (the dev API server), the minimal Istio CRDs. Used by tests, the benchmark and ``up``."""

from __future__ import annotations

import time
from importlib import resources as package_data
from typing import Any

import yaml

from kube import Kube, Resource, resources
from tasks.apigateway.controller import APIRULE, GATEWAY, OWNED

#: Package data (``importlib.resources``): the installed package carries its CRDs.
CRDS = package_data.files("tasks.apigateway").joinpath("crds")
APIRULE_CRD = CRDS.joinpath("apirules.gateway.kyma-project.io.yaml")
ISTIO_CRDS = CRDS.joinpath("istio", "istio-crds.yaml")
#: Kinds that must be served before the controller runs (the APIRule and the Istio kinds it writes).
REQUIRED = (APIRULE, GATEWAY, *(OWNED[k] for k in ("VirtualService", "AuthorizationPolicy", "RequestAuthentication")))


def load_crds(istio: bool = True, conversion: bool = False) -> list[dict[str, Any]]:
    """The CRD manifests: the APIRule CRD, then (``istio=True``) the Istio stand-in CRDs.

    ``conversion=False`` replaces the APIRule CRD's conversion webhook by ``strategy: None``, for
    clusters that do not run the conversion webhook (the tests and the benchmark: v2 and v2alpha1
    have the same schema, so a dev API server then only relabels objects; v1beta1 objects are not
    converted).
    """
    docs: list[dict[str, Any]] = []
    for path in (APIRULE_CRD, ISTIO_CRDS) if istio else (APIRULE_CRD,):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    if not conversion:
        docs[0]["spec"]["conversion"] = {"strategy": "None"}
    return docs


def _ca_bundle(crd: dict[str, Any] | None) -> Any:
    webhook = (((crd or {}).get("spec") or {}).get("conversion") or {}).get("webhook") or {}
    return (webhook.get("clientConfig") or {}).get("caBundle")


def install_crds(kube: Kube, istio: bool = True, timeout: float = 30.0, conversion: bool = False) -> None:
    """Create (or replace) the CRDs and wait until their kinds are served.

    ``istio=False`` on clusters where Istio is installed (never replace Istio's own CRDs);
    ``conversion`` see :func:`load_crds` (a caBundle already in the cluster is kept). Raises
    ``TimeoutError`` when a kind is not served within ``timeout`` seconds, ``kube.ApiError`` on failures.
    """
    for crd in load_crds(istio, conversion):
        name = crd["metadata"]["name"]
        current = kube.get(resources.CRD, name)
        if current is None:
            kube.create(resources.CRD, crd)
        else:
            crd = {**crd, "metadata": {**crd["metadata"],
                                       "resourceVersion": current["metadata"]["resourceVersion"]}}
            if conversion and _ca_bundle(current) and not _ca_bundle(crd):
                crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = _ca_bundle(current)
            kube.replace(resources.CRD, crd)
    wanted: tuple[Resource, ...] = REQUIRED if istio else (APIRULE,)
    deadline = time.monotonic() + timeout
    for res in wanted:
        while not kube.served(res):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{res} not served after {timeout:.0f} s")
            time.sleep(0.1)
