"""Network: the KCP ``Network`` (KCP only): the runtime's network (``<kyma>--kyma``), a managed one
(``<kyma>--cm``, type ``cloud-resources``) or a peering's remote one (cloud-manager's ``pkg/kcp/network``).
Its controller is the generic ``cloud-network``; a managed network is its provider's (Azure's, for the
IpRange's Cloud Manager VNet; the others have none). Nuke deletes it after everything that lives in it;
its watch is :mod:`tasks.cloud.watches`' own (a Network's status change wakes the objects naming it)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.azure import network as azure
from tasks.cloud.kcp import network as kcp
from tasks.cloud.kcp.network_plan import plan, unsupported

#: The turn of a provider without managed networks.
UNSUPPORTED = registry.ProviderSide(clients=lambda turn: {}, read=lambda clients, turn: None,
                                    create=lambda found, turn: unsupported(turn.obj),
                                    delete=lambda found, turn: unsupported(turn.obj))

KIND = registry.register(registry.Kind(
    name="network",
    kcp=registry.KcpSide(names.NETWORK, read=kcp.read, plan=plan, resync=None),
    providers={"aws": UNSUPPORTED, "gcp": UNSUPPORTED, "azure": azure.SIDE},
    nuke=80))
