"""Installing what the API Gateway controllers need in a cluster: their own CRDs (APIRule, APIGateway,
RateLimit, ExternalGateway and Ory Oathkeeper's Rule, which the original operator installs too) and, on clusters without
Istio or Gardener (the dev API server), minimal stand-in CRDs of those. Used by tests, the benchmark
and ``up``."""

from __future__ import annotations

from importlib import resources as package_data
from typing import Any

import yaml

from kube import Kube, Resource, resources
from tasks.apigateway import model

#: Package data (``importlib.resources``): the installed package carries its CRDs.
CRDS = package_data.files("tasks.apigateway").joinpath("crds")
APIRULE_CRD = CRDS.joinpath("apirules.gateway.kyma-project.io.yaml")
APIGATEWAY_CRD = CRDS.joinpath("apigateways.operator.kyma-project.io.yaml")
RATELIMIT_CRD = CRDS.joinpath("ratelimits.gateway.kyma-project.io.yaml")
EXTERNAL_GATEWAY_CRD = CRDS.joinpath("externalgateways.gateway.kyma-project.io.yaml")
ORY_RULE_CRD = CRDS.joinpath("oathkeeper", "rules.oathkeeper.ory.sh.yaml")
OWN_CRDS = (APIRULE_CRD, APIGATEWAY_CRD, RATELIMIT_CRD, ORY_RULE_CRD, EXTERNAL_GATEWAY_CRD)
ISTIO_CRDS = CRDS.joinpath("istio", "istio-crds.yaml")
GARDENER_CRDS = CRDS.joinpath("gardener", "gardener-crds.yaml")


def _resource(kind: model.Kind, namespaced: bool = True) -> Resource:
    return Resource(kind.group, kind.version, kind.plural, kind.kind, namespaced)


#: Kinds that must be served before the controllers run: our own ...
OWN = tuple(_resource(k, k.kind != "APIGateway") for k in (model.APIRULE, model.APIGATEWAY, model.RATELIMIT,
                                                            model.ORY_RULE, model.EXTERNAL_GATEWAY))
#: ... and, with the stand-ins, the Istio kinds the controllers read and write.
ISTIO = tuple(_resource(k) for k in (model.GATEWAY, model.VIRTUAL_SERVICE, model.AUTHORIZATION_POLICY,
                                     model.REQUEST_AUTHENTICATION, model.ENVOY_FILTER))


def load_crds(istio: bool = True, gardener: bool = False, conversion: bool = False) -> list[dict[str, Any]]:
    """The CRD manifests: our own, then (``istio=True``) the Istio stand-ins, then (``gardener=True``)
    the Gardener stand-ins (Certificate, DNSEntry).

    ``conversion=False`` replaces the APIRule CRD's conversion webhook by ``strategy: None``, for
    clusters that do not run the conversion webhook (the tests and the benchmark: v2 and v2alpha1
    have the same schema, so a dev API server then only relabels objects; v1beta1 objects are not
    converted).
    """
    paths = [*OWN_CRDS, *([ISTIO_CRDS] if istio else []), *([GARDENER_CRDS] if gardener else [])]
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    if not conversion:
        docs[0]["spec"]["conversion"] = {"strategy": "None"}
    return docs


def _ca_bundle(crd: dict[str, Any] | None) -> Any:
    webhook = (((crd or {}).get("spec") or {}).get("conversion") or {}).get("webhook") or {}
    return (webhook.get("clientConfig") or {}).get("caBundle")


def install_crds(kube: Kube, istio: bool = True, timeout: float = 30.0, gardener: bool = False,
                 conversion: bool = False) -> None:
    """Create (or replace) the CRDs and wait until their kinds are served.

    ``istio=False`` on clusters where Istio is installed (never replace Istio's own CRDs); likewise
    ``gardener=True`` only where Gardener's are not; ``conversion`` see :func:`load_crds` (a caBundle
    already in the cluster is kept). Raises ``TimeoutError`` when a kind is not served within
    ``timeout`` seconds, ``kube.ApiError`` on failures.
    """
    for crd in load_crds(istio, gardener, conversion):
        name = crd["metadata"]["name"]
        current = kube.get(resources.CRD, name)
        if current is None:
            kube.create(resources.CRD, crd)
        else:
            if conversion and _ca_bundle(current) and not _ca_bundle(crd):
                crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = _ca_bundle(current)
            crd = {**crd, "metadata": {**crd["metadata"],
                                       "resourceVersion": current["metadata"]["resourceVersion"]}}
            kube.replace(resources.CRD, crd)
    wanted: tuple[Resource, ...] = OWN + ISTIO if istio else OWN
    kube.wait_served(wanted, timeout, interval=0.1)
