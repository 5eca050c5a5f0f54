"""The managed KCP Network on Azure (``pkg/kcp/provider/azure/network``): the IpRange's turn provisions the
Cloud Manager VNet itself, so its ``<kyma>--cm`` Network is Ready at once, ``status.network`` naming that
VNet as the original's Network reconciler writes it, so a peering can name it as its network. Declared as the
Network kind's ``azure`` provider (:data:`SIDE`)."""

from __future__ import annotations

import contextlib
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud.azure.scope import cm_network_reference
from tasks.cloud.registry import ProviderSide, Turn
from tasks.cloud.step import StepBuilder, gone

__all__ = ["SIDE"]


def _ready(found: Any, turn: Turn) -> Outcome:
    fields: dict[str, Any] = {"networkType": str((turn.obj.get("spec") or {}).get("type") or "")}
    with contextlib.suppress(KeyError, TypeError):  # a Scope without the Azure fields names nothing
        fields["network"] = cm_network_reference(turn.scope)
    return StepBuilder(turn.obj).ready(**fields)


#: The Network kind's ``azure`` provider (the IpRange's turn deletes the VNet: deleting releases the finalizer).
SIDE = ProviderSide(clients=lambda turn: {}, read=lambda clients, turn: None, create=_ready,
                    delete=lambda found, turn: gone())
