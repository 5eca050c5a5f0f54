"""AzureManagedRedis: the KCP ``AzureManagedRedis`` (cloud-manager's ``pkg/kcp/provider/azure/managedredis``),
known before its reconciler comes: Nuke deletes it, last."""

from __future__ import annotations

from tasks.cloud import names, registry

KIND = registry.register(registry.Kind(name="azuremanagedredis", kcp=registry.KcpSide(names.AZURE_MANAGED_REDIS),
                                       nuke=90))
