"""Cloud Resources on Azure: Scope building (:mod:`.scope`), the KCP IpRange step (:mod:`.iprange`) and
the only layer that talks to Azure Resource Manager (:mod:`.client`)."""

from tasks.cloud.azure.client import AzureApiError, AzureClient
from tasks.cloud.step import Event, Outcome

__all__ = ["AzureApiError", "AzureClient", "Event", "Outcome"]
