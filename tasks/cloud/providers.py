"""Cloud providers: what a provider implements for Scope, Network and IpRange (the table of them is
:data:`tasks.cloud.clouds.PROVIDERS`).

The KCP controllers (:mod:`tasks.cloud.kcp`) do the provider-independent part of each object (the
original's "common part") and hand the rest to the provider named by ``Scope.spec.provider``:

===========================  ===========================================================================
``scope_info(inputs)``       ``Scope.spec.scope.<provider>`` from the Shoot and the credential Secret
                             (:class:`ScopeInputs`); may call the cloud (AWS: the account from STS).
                             Raise :class:`ProviderError` (``retryable`` or not) when it cannot.
``scope_incomplete(scope)``  whether a stored Scope misses provider data and must be rebuilt (GCP:
                             ``workers`` empty; Azure: ``network.nodes`` empty).
``network_reference(scope)`` the ``spec.network.reference`` of the ``<kyma>--kyma`` Network
                             (``{"aws": {...}}``).
``reconcile_scope(ctx)``     provider steps of the Scope reconcile once its kyma Network is Ready (GCP:
                             enable the service APIs): ``None`` to go on, a :class:`~kube.toolkit.Outcome`
                             to stop here (e.g. requeue while an operation runs).
``nat_gateway_ips(scope)``   public NAT gateway IPs of the shoot's network (exposed data), sorted.
``existing_ranges(scope)``   ``[nodes, pods, services]`` for CIDR allocation (``nodes`` ``""`` when unknown).
``iprange_peering(scope)``   the KCP VpcPeering an IpRange of ``scope`` depends on (Azure: the kyma ↔
                             Cloud Manager VNet peering ``<scope>``), ``None`` for none. The IpRange's
                             read reads it (``seen.peering``); the provider's IpRange turn creates or
                             deletes it (:func:`tasks.cloud.kcp.iprange_plan.peering_writes`).
===========================  ===========================================================================

The IpRange's provisioning is not here: it is a declared kind (:mod:`tasks.cloud.kinds.iprange`) whose
providers are ``tasks/cloud/<type>/iprange.py`` as every kind's. A provider answers Outcomes; the KCP
controller carries them out
(:func:`kube.toolkit.execute`: status only when it changed, the Event, the finalizer). Provider
calls sit in one client module per provider (``tasks/cloud/<type>/client.py``), which calls
:func:`fencing.check` before each write to the cloud.

Each provider lives in its package (``tasks/cloud/<type>/provider.py``) and is one entry of the static
table :data:`tasks.cloud.clouds.PROVIDERS`. :class:`Provider` is a base class with the defaults
(unsupported operations answer a clear error); :class:`LayerProvider` adds the Scope and IpRange parts of
a provider whose Scope is a ``scope`` module (GCP, Azure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube import Kube
from kube.toolkit.outcome import Outcome
from tasks.cloud.settings import CloudSettings

__all__ = ["LayerProvider", "Provider", "ProviderError",
           "ScopeContext", "ScopeInputs"]



class ProviderError(Exception):
    """A provider call failed. ``retryable``: transient (throttling, 5xx, timeouts) -> requeue without
    touching the status; else the message is the user's or operator's answer."""

    def __init__(self, message: str, retryable: bool = False, code: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.code = code


@dataclass(frozen=True)
class ScopeInputs:
    """What the Scope is built from.

    Attributes:
        kyma: the runtime's name (Kyma CR, GardenerCluster and Scope share it).
        region: the shoot's region.
        shoot: the Garden's Shoot object.
        credentials: the decoded data of the credentials binding's Secret (e.g. ``accessKeyID``).
        vpc_network: ``shoot--<project>--<shoot>``.
        gardener_namespace: the Gardener project namespace.
    """

    kyma: str
    region: str
    shoot: Mapping[str, Any]
    credentials: Mapping[str, str]
    vpc_network: str
    gardener_namespace: str


@dataclass
class ScopeContext:
    """One Scope reconcile as the provider sees it (after the kyma Network is Ready)."""

    kube: Kube
    scope: Mapping[str, Any]
    settings: CloudSettings


class Provider:
    """Base class of a cloud provider (see the module doc for the contract of each method)."""

    #: The Gardener provider type (``aws``, ``gcp``, ``azure``).
    name: str = ""

    def scope_info(self, inputs: ScopeInputs) -> dict[str, Any]:
        raise ProviderError(f"provider {self.name} can not build a Scope")

    def scope_incomplete(self, scope: Mapping[str, Any]) -> bool:
        return False

    def network_reference(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def reconcile_scope(self, ctx: ScopeContext) -> Outcome | None:
        return None

    def nat_gateway_ips(self, scope: Mapping[str, Any]) -> list[str]:
        return []

    def existing_ranges(self, scope: Mapping[str, Any]) -> list[str]:
        network = (((scope.get("spec") or {}).get("scope") or {}).get(self.name) or {}).get("network") or {}
        return [str(network.get(k) or "") for k in ("nodes", "pods", "services")]

    def iprange_peering(self, scope: Mapping[str, Any]) -> dict[str, Any] | None:
        return None



class LayerProvider(Provider):
    """A provider over a layer whose Scope is built by a ``scope`` module (``scope_section``,
    ``needs_rebuild``, ``kyma_network_reference``), as the GCP and Azure layers are (issue 10)."""

    #: The layer's ``scope`` module.
    scope_layer: Any = None

    def scope_info(self, inputs: ScopeInputs) -> dict[str, Any]:
        section = self.scope_layer.scope_section(inputs.shoot, inputs.credentials)
        if section is None:
            raise ProviderError(f"the {self.name} Scope can not be built from the shoot's credentials (see the log)")
        return dict(section[self.name])

    def scope_incomplete(self, scope: Mapping[str, Any]) -> bool:
        return bool(self.scope_layer.needs_rebuild(scope))

    def network_reference(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self.scope_layer.kyma_network_reference(scope))
