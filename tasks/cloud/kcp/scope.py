"""The ``cloud-scope`` controller: one Scope per runtime, built from the Garden (``pkg/kcp/scope``).

Triggered by the Scope and by the GardenerCluster of the same name. The decisions are
:mod:`tasks.cloud.kcp.scope_plan`'s (pure, which states the rules); this module reads, asks the
provider and writes. While the GardenerCluster exists (and is not being deleted):

1. (re)build the Scope when the plan says so: the Garden client comes from Secret
   ``kcp-system/gardener-credentials`` (key ``kubeconfig``; the project namespace is its context's
   namespace, else ``GARDENER_NAMESPACE``), the Shoot from the GardenerCluster's shoot name, the
   credentials from its CredentialsBinding (falling back to a SecretBinding), ``spec.scope.<provider>``
   from the provider (AWS: the account from STS);
2. the ``<kyma>--kyma`` Network, then the provider's own steps
   (:meth:`~tasks.cloud.providers.Provider.reconcile_scope`, e.g. GCP's service APIs);
3. exposed data when due: the provider's NAT gateway IPs into the SKR's ``kyma-system/kyma-info``;
4. the Ready status (with the exposed data) in one write.

Otherwise the runtime is gone: deactivate the SKR, then the gone plan (delete the ``<kyma>--kyma``
Network, the Nuke, release and delete the Scope).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kube import ApiError, Kube, ResourceMissing, clusters, resources
from kube import client_for as kube_client_for
from kube.clock import now_rfc3339
from kube.kubeconfig import KubeconfigError, current_namespace
from kube.toolkit import deleting, execute
from tasks.cloud import clouds, names, providers, settings, sweep
from tasks.cloud import scope as shoots
from tasks.cloud.kcp import scope_plan
from tasks.cloud.kcp.scope_plan import EXPOSED_DATA_EVERY, RESYNC, TRIAL
from tasks.cloud.providers import ProviderError, ScopeContext, ScopeInputs
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.scope")

__all__ = ["EXPOSED_DATA_EVERY", "RESYNC", "TRIAL", "reconcile"]


def reconcile(key: Key) -> Result:
    """Reconcile the Scope ``key`` (same namespace/name as the Kyma and GardenerCluster)."""
    s = settings.current()
    now = now_rfc3339()
    kcp = kube_client_for(key.cluster)
    scope = kcp.get(names.SCOPE, key.name, key.namespace)
    gc = kcp.get(names.GARDENER_CLUSTER, key.name, key.namespace)
    if gc is None or deleting(gc):
        return _gone(kcp, key, scope, s)
    provider = clouds.get(str((scope or {}).get("spec", {}).get("provider") or ""))
    incomplete = scope is not None and provider is not None and provider.scope_incomplete(scope)
    if scope_plan.needs_build(scope, gc, incomplete):
        built = _build(kcp, key, gc, scope, s)
        if isinstance(built, Result):
            return built
        scope = built
        provider = clouds.get(str(scope["spec"]["provider"]))
    assert scope is not None  # built when missing
    if provider is None:
        log.error("unknown provider", scope=key.name, provider=scope.get("spec", {}).get("provider"))
        return Result.done()
    network = kcp.get(names.NETWORK, names.kyma_network(key.name), key.namespace)
    reference = provider.network_reference(scope) if network is None else {}
    waiting = scope_plan.plan_network(scope, network, reference, s.t)
    if waiting is not None:
        return execute(waiting, kcp, names.SCOPE, scope).result
    stop = provider.reconcile_scope(ScopeContext(kube=kcp, scope=scope, settings=s))
    if stop is not None:
        return execute(stop, kcp, names.SCOPE, scope, legacy_finalizers=names.LEGACY_FINALIZERS).result
    published: list[str] | None = None
    retry = False
    if scope_plan.exposed_data_due(scope, s.expose_data, now, s.t):
        published = _exposed_data(kcp, key, scope, provider, s)
        retry = published is None
    ready = scope_plan.plan_ready(scope, now, s.t, published, retry)
    return execute(ready, kcp, names.SCOPE, scope, legacy_finalizers=names.LEGACY_FINALIZERS).result


def _garden(kcp: Kube, s: settings.CloudSettings) -> tuple[Kube, str]:
    kube, config = clusters.client_from_secret(kcp, s.kcp_namespace, names.GARDENER_CREDENTIALS,
                                               names.GARDENER_CREDENTIALS_KEY, cluster="garden")
    return kube, current_namespace(config) or s.gardener_namespace


def _binding(garden: Kube, shoot: Mapping[str, Any], namespace: str) -> tuple[str, str, str]:
    """Read the Shoot's CredentialsBinding, falling back to its SecretBinding (a missing or forbidden
    CredentialsBinding reads the SecretBinding of ``secretBindingName``, else of the same name)."""
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
    """Read the Garden, ask the provider, write the Scope of :func:`~.scope_plan.scope_write`."""
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
    provider = clouds.get(provider_type)
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
    written = execute(scope_plan.scope_write(key.name, key.namespace, gc, shoot, provider_type, info, scope), kcp)
    log.info("scope created" if scope is None else "scope rebuilt", scope=key.name, provider=provider_type)
    return dict(written.answers[-1])


def _exposed_data(kcp: Kube, key: Key, scope: dict, provider: providers.Provider,
                  s: settings.CloudSettings) -> list[str] | None:
    """Read the NAT gateway IPs and publish them in the SKR's ``kyma-info``; the IPs published, or
    ``None`` when reading or writing failed (retried soon)."""
    try:
        ips = sorted(set(provider.nat_gateway_ips(scope)))
    except ProviderError as exc:
        log.warning("exposed data not read", scope=key.name, error=exc.message)
        return None
    try:
        with clusters.remote(kcp, s.kcp_namespace, names.kubeconfig_secret(key.name), cluster=key.name,
                             timeout=s.skr_request_timeout) as skr:
            namespace = skr.get(resources.NAMESPACE, names.KYMA_SYSTEM)
            configmap = skr.get(resources.CONFIGMAP, names.KYMA_INFO, names.KYMA_SYSTEM)
            done = execute(scope_plan.kyma_info_writes(namespace, configmap, ips), skr)
    except (KubeconfigError, ApiError) as exc:
        log.warning("kyma-info not written", scope=key.name, error=str(exc))
        return None
    if done.refused is not None:
        log.warning("kyma-info not written", scope=key.name, error=str(done.refused[1]))
        return None
    return ips


def _gone(kcp: Kube, key: Key, scope: dict | None, s: settings.CloudSettings) -> Result:
    """The runtime is gone: deactivate, then :func:`~.scope_plan.plan_gone`."""
    if sweep.rotation(s).deactivate(key.name):
        log.info("skr deactivated: GardenerCluster gone", kyma=key.name)
    if scope is None:
        return Result.done()
    nuke = kcp.get(names.NUKE, key.name, key.namespace) if scope_plan.nukes(scope, s.nuke) else None
    gone = scope_plan.plan_gone(scope, nuke, s.nuke, s.t)
    done = execute(gone, kcp, names.SCOPE, scope)
    if gone.requeue_after is None:
        log.info("scope deleted", scope=key.name)
    return done.result
