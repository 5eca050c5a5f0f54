"""Network: the KCP ``Network`` (KCP only): the runtime's network (``<kyma>--kyma``), a managed one
(``<kyma>--cm``, type ``cloud-resources``) or a peering's remote one (cloud-manager's ``pkg/kcp/network``).
Its controller is ``cloud-network`` of :mod:`tasks.cloud.controller`; Nuke deletes it after everything that
lives in it."""

from __future__ import annotations

from tasks.cloud import names, registry

KIND = registry.register(registry.Kind(name="network", kcp=registry.KcpSide(names.NETWORK), nuke=80))
