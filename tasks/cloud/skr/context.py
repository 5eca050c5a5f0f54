"""What the SKR reconcilers of one connect share, and the runner that gives each object its turn."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from informers.reader import Reader
from kube import Kube, Resource
from tasks.cloud import names, reads, registry
from tasks.cloud.ownership import invalid_id
from tasks.cloud.settings import CloudSettings
from tasks.cloud.validate import Ranked
from workers.controller import Result, ResultKind

__all__ = ["KEEP_SHARE", "READS_KEPT", "SkrContext", "run_object"]

#: Single reads (:meth:`SkrContext.get` without a snapshot, :meth:`SkrContext.mirror`) kept per connect.
READS_KEPT = 64
#: A snapshot kept past its kind's turn (:meth:`SkrContext.forget_all`) holds at most 1/KEEP_SHARE of
#: the connect's budget: a customer's thousand IpRanges do not shrink what the other kinds may read.
KEEP_SHARE = 16


@dataclass
class SkrContext:
    """One connect.

    Attributes:
        kyma: the runtime (Kyma CR name).
        skr: the SKR's short-lived client.
        kcp: the KCP client.
        scope: the runtime's KCP Scope.
        settings: the domain's settings.
        deadline: ``time.monotonic()`` at which the connect's reconcile window ends.
        kcp_reader: what KCP objects are read through (:attr:`kcp_reads`); default: the process's
            informers over ``kcp`` (:mod:`tasks.cloud.reads`).
    """

    kyma: str
    skr: Kube
    kcp: Kube
    scope: Mapping[str, Any]
    settings: CloudSettings
    deadline: float
    kcp_reader: Reader | None = None
    def objects(self, res: Resource) -> list[dict[str, Any]]:
        """Objects of ``res`` from the connect's snapshot (listed once, like the original's short-lived
        cache), read from the SKR when there is none; its bytes stay charged to the SKR client's
        budget until the snapshot is forgotten. Raises ``kube.ApiError``, ``kube.ReadLimitExceeded``
        (reason ``BudgetExhausted``) when the connect's budget cannot hold the list."""
        key = res.full_name
        if key not in self._cache:
            items, _, size = self.skr.list_measured(res)
            self.remember(res, items, size)
        return self._cache[key]

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """One object from the snapshot when there is one, else from the SKR (read once per connect until
        a turn writes: :meth:`wrote`)."""
        key = res.full_name
        if key in self._cache:
            for obj in self._cache[key]:
                meta = obj.get("metadata") or {}
                if meta.get("name") == name and (not res.namespaced or meta.get("namespace") == namespace):
                    return obj
            return None
        return self._read_once(("skr", key, namespace or "", name), lambda: self.skr.get(res, name, namespace))

    def quota(self, res: Resource) -> int | None:
        """This runtime's quota of the SKR kind ``res`` (``resourceQuota.skr``: override, configured
        default, else the kind's declared default); ``None`` = unlimited."""
        key = names.quota_key(res)
        return self.settings.quota(self.kyma, key, registry.quota_default(key))

    def mirror(self, res: Resource, ident: str) -> dict[str, Any] | None:
        """The KCP object of ``res`` named ``ident`` (an SKR object's id) in the KCP namespace (through
        :attr:`kcp_reads`); read only when ``ident`` is a canonical UUID (ownership before action: never a
        request path from an unchecked id), ``None`` otherwise or when missing. Raises ``kube.ApiError``."""
        if not ident or invalid_id(ident) is not None:
            return None
        return self._read_once(("kcp", res.full_name, self.kcp_namespace, ident),
                               lambda: self.kcp_reads.get(res, ident, self.kcp_namespace))

    def _read_once(self, key: tuple[str, str, str, str],
                   read: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
        """``read()``'s answer, kept for the connect (a consumer's IpRange and its KCP mirror are asked
        for by the IpRange's turn and again by each consumer's) until a turn writes (:meth:`wrote`); at
        most :data:`READS_KEPT` answers are kept (they are not charged to the budget)."""
        if key in self._reads:
            return self._reads[key]
        found = read()
        if len(self._reads) < READS_KEPT:
            self._reads[key] = found
        return found

    def wrote(self) -> None:
        """A turn wrote (or is about to read again after a write): the single reads kept by :meth:`get`
        and :meth:`mirror` are dropped, so later turns see the clusters as they are now."""
        self._reads.clear()

    def remember(self, res: Resource, objects: list[dict[str, Any]], size: int = 0) -> None:
        """Use ``objects`` as the snapshot of ``res``; ``size``: its raw bytes, charged to the SKR
        client's budget by the list that read them (given back when the snapshot is forgotten)."""
        self._drop(res.full_name)
        self._cache[res.full_name] = Ranked(objects)  # each object's quota rank: sorted once per snapshot
        self._sizes[res.full_name] = size

    def forget(self, res: Resource) -> None:
        """Drop the snapshot of ``res`` and give its bytes back to the budget: after a write, reads go
        to the SKR again (and the single reads kept: :meth:`wrote`)."""
        self._drop(res.full_name)
        self.wrote()

    def forget_all(self, keep: Iterable[Resource] = ()) -> None:
        """Drop every snapshot (a kind's turn is over: its lists are not kept for the next kind) but a
        small one of ``keep``, kinds that later turns read by name (the IpRanges their consumers use):
        one that holds at most 1/:data:`KEEP_SHARE` of the budget stays, still charged to it."""
        kept = {res.full_name for res in keep}
        budget = self.skr.budget
        for key in list(self._cache):
            if key not in kept or (budget is not None and self._sizes.get(key, 0) * KEEP_SHARE > budget.total):
                self._drop(key)

    def _drop(self, key: str) -> None:
        self._cache.pop(key, None)
        size = self._sizes.pop(key, 0)
        if size and self.skr.budget is not None:
            self.skr.budget.give(size)

    def track(self, ref: str, obj: Mapping[str, Any]) -> None:
        """Remember the object ``ref`` as last written: its final state is reported."""
        self._tracked[ref] = str((obj.get("status") or {}).get("state") or "")

    def state_of(self, ref: str) -> str:
        """The state of ``ref`` as last written (``gone``: not reconciled)."""
        return self._tracked.get(ref, "gone")

    def __post_init__(self) -> None:
        self._tracked: dict[str, str] = {}
        self._cache: dict[str, list[dict[str, Any]]] = {}
        self._sizes: dict[str, int] = {}  # raw bytes of each snapshot, charged to the SKR client's budget
        self._reads: dict[tuple[str, str, str, str], dict[str, Any] | None] = {}  # (cluster, kind, ns, name)

    @property
    def kcp_reads(self) -> Reader:
        """Reads of the KCP: :attr:`kcp_reader`, by default gets of the kinds :mod:`tasks.cloud.reads`
        caches from the process's informers (as the original's cached KCP client), other reads from the
        API server."""
        if self.kcp_reader is None:
            self.kcp_reader = reads.kcp_reader(self.kcp)
        return self.kcp_reader

    @property
    def provider(self) -> str:
        return str((self.scope.get("spec") or {}).get("provider") or "")

    @property
    def kcp_namespace(self) -> str:
        return self.settings.kcp_namespace

    @property
    def broker_plan(self) -> str:
        return str(((self.scope.get("metadata") or {}).get("labels") or {}).get(names.LABEL_BROKER_PLAN) or "")

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


#: Longest requeue an object waits for inside the window; longer ones mean "at the next connect".
MAX_WAIT_IN_WINDOW = 1.0
MAX_TURNS = 50


def run_object(ctx: SkrContext, reconcile: Callable[[SkrContext, str, str], Result], res: Resource,
               namespace: str, name: str) -> Result:
    """Reconcile one SKR object until it is done, fails, or asks for a requeue longer than
    :data:`MAX_WAIT_IN_WINDOW` or past the window (the original's short-lived manager gives each object
    at least one reconcile per connect; a longer requeue-after means the next connect). The first turn
    reads the connect's snapshot; a turn that wrote drops it (the reconcilers call :meth:`SkrContext.forget`),
    and a turn run again within the window reads the SKR."""
    result = Result.done()
    for _ in range(MAX_TURNS):
        result = reconcile(ctx, namespace, name)
        if result.outcome is not ResultKind.REQUEUE_AFTER:
            return result
        delay = result.requeue_after or 0.0
        if delay > MAX_WAIT_IN_WINDOW or delay >= ctx.remaining():
            return result
        ctx.forget(res)
        if delay:
            time.sleep(delay)
    return result
