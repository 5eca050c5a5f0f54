"""Settings of the Kubernetes client layer (``RECONCILERY_KUBECONFIG``, ``RECONCILERY_KUBE_REFRESH_SECONDS``),
read through :mod:`config`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from config import Seconds, Settings, cached


class KubeSettings(Settings):
    """How :mod:`kube` reaches the local cluster."""

    model_config = SettingsConfigDict(env_prefix="RECONCILERY_")

    kubeconfig: str = Field("", description=(
        "Path of the local cluster's kubeconfig; empty: the in-cluster service account, else the default "
        "kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``)."))
    kube_refresh_seconds: Seconds = Field(5.0, description=(
        "Seconds between two runs of the official loader's credential refresh hook; 0 runs it before every "
        "request, as the official client does."))
    kube_audit_dir: str = Field("", description=(
        "Directory the RBAC audit of every Kubernetes API call is written to (:mod:`kube.audit`); empty: off."))
    kube_audit_components: str = Field("", description=(
        "Comma-separated ``deploy/components`` this process's configuration stands for (e.g. ``nginx-nlk``): "
        "the RBAC check holds its recorded calls to ``deploy/base`` with those components."))
    component: str = Field("", description=(
        "The component this process is in the audit (the deployment sets it); empty: derived from the "
        "command line."))
    remote_list_page_size: int = Field(500, ge=1, description=(
        "Objects per list page asked of a remote (untrusted) cluster such as an SKR."))
    remote_list_max_objects: int = Field(10_000, ge=1, description=(
        "Objects per list (all pages) read from a remote cluster; past it the read fails."))
    remote_list_max_bytes: int = Field(64 * 2**20, ge=1, description=(
        "Bytes per list (all pages) and per answer read from a remote cluster; past it the read fails."))
    remote_connect_budget_bytes: int = Field(0, ge=0, description=(
        "Bytes of answers one connect to a remote cluster (an SKR) may hold at once: each kind's list stays "
        "charged while its turn runs, and a connect past it stops with a ``BudgetExhausted`` status and "
        "Event and is retried with backoff. 0: derived from the pod's memory, ``memory * "
        "REMOTE_MEMORY_SHARE / (REMOTE_CONNECTS * 4)`` (decoded JSON takes about 3.8x its bytes)."))
    remote_memory_bytes: int = Field(512 * 2**20, ge=1, description=(
        "The pod's memory in bytes when the cgroup declares no limit (``/sys/fs/cgroup/memory.max``, or "
        "cgroup v1's ``memory.limit_in_bytes``, wins when present); set it to the container's memory limit."))
    remote_memory_share: float = Field(0.5, gt=0, le=1, description=(
        "Share of the pod's memory all concurrent remote connects' answers may take together."))
    remote_connects: int = Field(8, ge=1, description=(
        "Concurrent connects to remote clusters per process (the ``cloud-skr`` worker's ``--concurrency``)."))


#: This process's kube settings, read on first use.
current = cached(KubeSettings)
