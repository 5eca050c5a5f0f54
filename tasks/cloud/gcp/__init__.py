"""Cloud Resources on GCP: Scope building (:mod:`.scope`), the KCP IpRange step (:mod:`.iprange`) and
the only layer that talks to GCP (:mod:`.client`)."""

from tasks.cloud.gcp.client import GcpApiError, GcpClient
from tasks.cloud.step import Event, Outcome

__all__ = ["Event", "GcpApiError", "GcpClient", "Outcome"]
