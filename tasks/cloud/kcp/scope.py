"""The ``cloud-scope`` controller: one Scope per runtime, built from the Garden (``pkg/kcp/scope``).

Triggered by the Scope and by the GardenerCluster of the same name. While the GardenerCluster exists
(and is not being deleted):

1. (re)build the Scope when it is missing, lacks one of its labels, or its provider says it is
   incomplete: the Garden client comes from Secret ``kcp-system/gardener-credentials`` (key
   ``kubeconfig``; the project namespace is its context's namespace, else ``GARDENER_NAMESPACE``), the
   Shoot from the GardenerCluster's shoot name, the credentials from its CredentialsBinding (falling
   back to a SecretBinding), ``spec.scope.<provider>`` from the provider (AWS: the account from STS);
2. create the ``<kyma>--kyma`` Network and wait until it is Ready (1 s); the provider's own steps
   (:meth:`~tasks.cloud.providers.Provider.reconcile_scope`, e.g. GCP's service APIs);
3. exposed data (flag ``exposeData``, not on ``trial`` plans, at most once an hour): the NAT gateway
   IPs into ``status.exposedData`` and the SKR's ConfigMap ``kyma-system/kyma-info`` key
   ``cloud.natGatewayIps``;
4. state ``Ready`` with the condition Ready/True ``Ready``; requeue after 30 min (the resync).

Otherwise the runtime is gone: deactivate the SKR, delete the ``<kyma>--kyma`` Network, create a Nuke
and wait for it (unless disabled or trial), release the Scope's finalizer and delete it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import structlog

import kube.toolkit.conditions as cond
from kube import ApiError, Kube, NotFound, ResourceMissing, clusters, resources
from kube import client_for as kube_client_for
from kube.clock import now_rfc3339
from kube.kubeconfig import KubeconfigError, current_namespace
from kube.toolkit import StatusWriter, deleting, remove_finalizer
from tasks.cloud import names, providers, settings, sweep
from tasks.cloud import scope as shoots
from tasks.cloud.kcp.common import carry_out_step
from tasks.cloud.providers import ProviderError, ScopeContext, ScopeInputs
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.scope")

__all__ = ["reconcile"]

RESYNC = 30 * 60
EXPOSED_DATA_EVERY = 60 * 60
TRIAL = "trial"


def reconcile(key: Key) -> Result:
    """Reconcile the Scope ``key`` (same namespace/name as the Kyma and GardenerCluster)."""
    s = settings.current()
    kcp = kube_client_for(key.cluster)
    scope = kcp.get(names.SCOPE, key.name, key.namespace)
    gc = kcp.get(names.GARDENER_CLUSTER, key.name, key.namespace)
    if gc is None or deleting(gc):
        return _gone(kcp, key, scope, s)
    provider = providers.get(str((scope or {}).get("spec", {}).get("provider") or ""))
    if scope is None or shoots.missing_labels(scope, gc) or (provider is not None and provider.scope_incomplete(scope)):
        built = _build(kcp, key, gc, scope, s)
        if isinstance(built, Result):
            return built
        scope = built
        provider = providers.get(str(scope["spec"]["provider"]))
    if provider is None:
        log.error("unknown provider", scope=key.name, provider=scope.get("spec", {}).get("provider"))
        return Result.done()
    network = kcp.get(names.NETWORK, names.kyma_network(key.name), key.namespace)
    if network is None:
        kcp.create(names.NETWORK, shoots.kyma_network_object(scope, provider.network_reference(scope)))
        return Result.requeue(s.t(1))
    if not cond.is_true((network.get("status") or {}).get("conditions"), names.COND_READY):
        return Result.requeue(s.t(1))
    status = StatusWriter(kcp, names.SCOPE, scope)
    stop = provider.reconcile_scope(ScopeContext(kube=kcp, scope=scope, settings=s))
    if stop is not None:
        return carry_out_step(kcp, names.SCOPE, status.obj, stop)
    retry = _exposed_data(kcp, key, scope, status, provider, s)
    status.ready()
    return Result.requeue(s.t(60) if retry else s.t(RESYNC))


def _garden(kcp: Kube, s: settings.CloudSettings) -> tuple[Kube, str]:
    kube, config = clusters.client_from_secret(kcp, s.kcp_namespace, names.GARDENER_CREDENTIALS,
                                               names.GARDENER_CREDENTIALS_KEY, cluster="garden")
    return kube, current_namespace(config) or s.gardener_namespace


def _binding(garden: Kube, shoot: Mapping[str, Any], namespace: str) -> tuple[str, str, str]:
    spec = shoot.get("spec") or {}
    name = str(spec.get("credentialsBindingName") or "")
    if name:
        try:
            binding = garden.get(names.CREDENTIALS_BINDING, name, namespace)
        except ResourceMissing:
            binding = None
        except ApiError as exc:
            if exc.status != 403:
                raise
            binding = None
        if binding is not None:
            return shoots.binding_secret_ref(binding, "CredentialsBinding")
    fallback = str(spec.get("secretBindingName") or name)
    try:
        binding = garden.get(names.SECRET_BINDING, fallback, namespace) if fallback else None
    except ResourceMissing:
        binding = None
    if binding is None:
        raise shoots.ScopeError(f"no CredentialsBinding or SecretBinding {fallback or '(unnamed)'} in {namespace}")
    return shoots.binding_secret_ref(binding, "SecretBinding")


def _build(kcp: Kube, key: Key, gc: dict, scope: dict | None, s: settings.CloudSettings) -> dict | Result:
    try:
        garden, namespace = _garden(kcp, s)
    except KubeconfigError as exc:
        return Result.error(f"Garden client: {exc}")
    try:
        shoot_ref = shoots.shoot_name(gc)
        shoot = garden.get(names.SHOOT, shoot_ref, namespace)
        if shoot is None:
            return Result.error(f"shoot {namespace}/{shoot_ref} not found")
        provider_type, secret_ns, secret_name = _binding(garden, shoot, namespace)
        secret = garden.get(resources.SECRET, secret_name, secret_ns)
        if secret is None:
            return Result.error(f"credentials Secret {secret_ns}/{secret_name} not found")
    except shoots.ScopeError as exc:
        return Result.error(str(exc))
    finally:
        garden.close()
    provider = providers.get(provider_type)
    if provider is None:
        log.error("unknown provider", scope=key.name, provider=provider_type)
        return Result.done()
    inputs = ScopeInputs(kyma=key.name, region=str((shoot.get("spec") or {}).get("region") or ""), shoot=shoot,
                         credentials=shoots.decode_secret(secret), vpc_network=names.vpc_network(namespace, shoot_ref),
                         gardener_namespace=namespace)
    try:
        info = provider.scope_info(inputs)
    except ProviderError as exc:
        log.error("scope not built", scope=key.name, provider=provider_type, error=exc.message)
        return Result.error(exc.message) if exc.retryable else Result.terminal(exc.message)
    desired = shoots.build_scope(kyma=key.name, namespace=key.namespace, gardener_cluster=gc, shoot=shoot,
                          provider=provider_type, info=info, existing=scope)
    if scope is None:
        created = kcp.create(names.SCOPE, desired)
        log.info("scope created", scope=key.name, provider=provider_type)
        return created
    desired["metadata"]["resourceVersion"] = scope["metadata"]["resourceVersion"]
    log.info("scope rebuilt", scope=key.name, provider=provider_type)
    return kcp.replace(names.SCOPE, desired)


def _exposed_data(kcp: Kube, key: Key, scope: dict, status: StatusWriter, provider: providers.Provider,
                  s: settings.CloudSettings) -> bool:
    """Read and publish the NAT gateway IPs when due; True when it must be retried soon."""
    labels = (scope.get("metadata") or {}).get("labels") or {}
    if not s.expose_data or labels.get(names.LABEL_BROKER_PLAN) == TRIAL:
        return False
    read = str((status.status.get("exposedData") or {}).get("readTime") or "")
    if read:
        try:
            age = datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(read.replace("Z", "+00:00"))
            if age.total_seconds() < s.t(EXPOSED_DATA_EVERY):
                return False
        except ValueError:
            pass
    try:
        ips = sorted(set(provider.nat_gateway_ips(scope)))
    except ProviderError as exc:
        log.warning("exposed data not read", scope=key.name, error=exc.message)
        return True
    try:
        with clusters.remote(kcp, s.kcp_namespace, names.kubeconfig_secret(key.name), cluster=key.name,
                             timeout=s.skr_request_timeout) as skr:
            _write_kyma_info(skr, ips)
    except (KubeconfigError, ApiError) as exc:
        log.warning("kyma-info not written", scope=key.name, error=str(exc))
        return True
    status.patch(exposedData={"natGatewayIps": ips, "readTime": now_rfc3339()})
    return False


def _write_kyma_info(skr: Kube, ips: list[str]) -> None:
    if skr.get(resources.NAMESPACE, names.KYMA_SYSTEM) is None:
        try:
            skr.create(resources.NAMESPACE, {"metadata": {"name": names.KYMA_SYSTEM}})
        except ApiError as exc:
            if exc.status != 409:
                raise
    value = ", ".join(ips)
    current = skr.get(resources.CONFIGMAP, names.KYMA_INFO, names.KYMA_SYSTEM)
    if current is None:
        skr.create(resources.CONFIGMAP, {"metadata": {"name": names.KYMA_INFO, "namespace": names.KYMA_SYSTEM},
                                         "data": {names.KYMA_INFO_NAT_KEY: value}})
    elif (current.get("data") or {}).get(names.KYMA_INFO_NAT_KEY) != value:
        skr.patch(resources.CONFIGMAP, names.KYMA_INFO, {"data": {names.KYMA_INFO_NAT_KEY: value}}, names.KYMA_SYSTEM)


def _gone(kcp: Kube, key: Key, scope: dict | None, s: settings.CloudSettings) -> Result:
    """The runtime is gone: deactivate, delete the kyma network, nuke, delete the Scope."""
    if sweep.rotation(s).deactivate(key.name):
        log.info("skr deactivated: GardenerCluster gone", kyma=key.name)
    if scope is None:
        return Result.done()
    kcp.delete(names.NETWORK, names.kyma_network(key.name), key.namespace)
    labels = (scope.get("metadata") or {}).get("labels") or {}
    if s.nuke and labels.get(names.LABEL_BROKER_PLAN) != TRIAL:
        nuke = kcp.get(names.NUKE, key.name, key.namespace)
        if nuke is None:
            kcp.create(names.NUKE, {"metadata": {"name": key.name, "namespace": key.namespace,
                                                 "labels": {names.LABEL_KYMA_NAME: key.name}},
                                    "spec": {"scope": {"name": key.name}}})
            return Result.requeue(s.t(1))
        created = str((nuke.get("metadata") or {}).get("creationTimestamp") or "")
        if created < str((scope.get("metadata") or {}).get("creationTimestamp") or ""):
            kcp.delete(names.NUKE, key.name, key.namespace)  # a finished Nuke of an earlier runtime of this name
            return Result.requeue(s.t(1))
        if (nuke.get("status") or {}).get("state") != names.STATE_READY:
            return Result.requeue(s.t(1))
    try:
        if remove_finalizer(kcp, names.SCOPE, scope, names.FINALIZER, names.LEGACY_FINALIZERS) is not None:
            kcp.delete(names.SCOPE, key.name, key.namespace)
    except NotFound:
        pass
    log.info("scope deleted", scope=key.name)
    return Result.done()
