"""Cloud Resources on GCP: Scope building (:mod:`.scope`), the KCP IpRange step (:mod:`.iprange`) and
the only layer that talks to GCP (:mod:`.client`)."""

from tasks.cloud.gcp.client import GcpApiError, GcpClient
from tasks.cloud.step import Event, Step

__all__ = ["Event", "GcpApiError", "GcpClient", "Step"]
