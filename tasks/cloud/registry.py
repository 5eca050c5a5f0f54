"""The Cloud kind registry: one declaration per kind, and everything that is driven from it.

A Cloud kind is *data*: a
:class:`Kind` declared in its own module ``tasks/cloud/kinds/<kind>.py`` with

- its SKR side (:class:`SkrSide`): the SKR resource of each provider, the read and the pure plan the SKR
  loop runs for each object in every connect, its place in the connect's order, its quota default;
- its KCP side (:class:`KcpSide`): the KCP resource, the read and the pure plan of the
  provider-independent part (Scope, dependencies, finalizer), the controller's timing, the keys a watch
  event of it also wakes;
- its providers (:class:`ProviderSide`, one per provider type): the clients of a turn, the read through
  them and the pure create / delete plans whose :class:`~kube.toolkit.Outcome` carries the provider calls;
- whether it consumes an IpRange, its place in Nuke's order, and its ``render`` command.

The connect (:mod:`tasks.cloud.skr.connect`), the KCP controllers (:mod:`tasks.cloud.controller`,
:mod:`tasks.cloud.kcp.kind`), the watches (:mod:`tasks.cloud.watches`), Nuke, the IpRange's consumers,
the quota defaults and the CLI read the registry; none of them names a kind. A kind without a KCP mirror
(the original's NFS backups, restores and schedules) has no :class:`KcpSide`: its SKR plan calls its
provider directly with the Scope's credentials (:attr:`SkrSide.clients`).

Declarations are discovered by importing every module of :mod:`tasks.cloud.kinds` once (:func:`kinds`).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.client import Kube
from kube.resources import Resource
from kube.toolkit.outcome import Outcome
from tasks.cloud.kcp.nuke_plan import ProviderObject
from tasks.cloud.settings import CloudSettings

__all__ = ["ANY_PROVIDER", "KcpSide", "Kind", "KindRender", "NukeSide", "ProviderObject", "ProviderSide", "SkrSide",
           "Summary", "Timing", "Turn", "by_kcp_kind", "by_skr_kind", "get", "iprange_consumers", "kinds", "nuked",
           "provider_nuked", "quota_default", "register", "skr_kinds", "unregister"]

#: Seconds scaled by the domain's time scale (``CloudSettings.t``).
Timing = Callable[[float], float]
#: The key of :attr:`SkrSide.resources` for a kind whose SKR resource is the same on every provider.
ANY_PROVIDER = "*"


@dataclass(frozen=True)
class Turn:
    """One provider turn of a KCP object, as its provider's functions see it.

    Attributes:
        kube: the KCP client.
        obj: the object (as the provider-independent part left it).
        scope: its Scope.
        settings: the domain's settings (timings: :meth:`t`).
        seen: what the kind's KCP read found (its dependencies: ``seen.iprange``, ``seen.local``...).
    """

    kube: Kube
    obj: dict[str, Any]
    scope: Mapping[str, Any]
    settings: CloudSettings
    seen: Any = None

    @property
    def name(self) -> str:
        """The object's name."""
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The object's namespace."""
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def provider(self) -> str:
        """The Scope's provider type."""
        return str((self.scope.get("spec") or {}).get("provider") or "")

    def t(self, seconds: float) -> float:
        """``seconds`` scaled by the domain's time scale."""
        return self.settings.t(seconds)


@dataclass(frozen=True)
class Summary:
    """What ``reconcilery up``'s summary row of one SKR object shows beside its state.

    Attributes:
        detail: where it is in the KCP and the provider (endpoint, ids, CIDR, ...); ``""`` for nothing yet.
        state: shown instead of the SKR object's state (``None``: its own), e.g. ``Binding`` for an NFS
            volume Ready in the KCP whose PersistentVolume is not written yet.
    """

    detail: str
    state: str | None = None


@dataclass(frozen=True)
class SkrSide:
    """How the SKR loop reconciles the kind's objects, once per connect per object.

    Attributes:
        resources: provider type -> the SKR resource (``ANY_PROVIDER``: every provider's). Only the
            connect's provider's resource is reconciled (its CRD is the only one installed).
        read: ``(ctx, res, obj) -> seen``: what the plan needs (I/O through ``ctx``, a
            :class:`~tasks.cloud.skr.context.SkrContext`); raises ``kube.ApiError``. ``None`` (with
            ``plan``): no SKR reconciler yet (a kind the original knows: its objects still protect
            the IpRanges they name).
        plan: ``(seen, new_id, t, now) -> Outcome``: the pure decision (``new_id``: a UUID to assign,
            ``t``: scales seconds, ``now``: RFC 3339). Its writes to the KCP name ``cluster="kcp"``.
            ``read`` and ``plan`` ``None``: the connect does not reconcile it (a kind of the original whose
            SKR reconciler comes later, or one with its own: it still counts as an IpRange consumer).
        order: place in a connect (lower first: the IpRanges before their consumers).
        quota: SKR kind -> the default of its quota key ``<lower(kind)>.<group>/totalCount`` (a kind not
            named: unlimited unless configured).
        clients: ``(ctx) -> {name: client}`` for a plan that calls its provider directly (kinds without
            a KCP mirror); ``None``: the plan only writes to Kubernetes.
        skip_trial: not reconciled on ``trial`` plans (their APIs are disabled).
        summary: ``(skr, kcp, kyma, obj) -> Summary``: the detail of ``reconcilery up``'s row for ``obj`` as
            stored in the SKR of runtime ``kyma`` (reads through the SKR and KCP clients, a KCP mirror only
            when it is the object's own; ``None``: state and message only).
        timed: an object whose turn asks to come back later than the connect's window is also a key of
            its own (``cloud-skr-object``, :mod:`tasks.cloud.skr.timed`), requeued at that time: a backup
            schedule runs at its run time, not at the next connect after it.
        kept: later kinds' turns read its objects by name (a consumer's IpRange, a GCP Redis cluster's
            GcpSubnet): its snapshot is kept past its own turn for the rest of the connect while it is small
            (:meth:`~tasks.cloud.skr.context.SkrContext.forget_all`), instead of a GET per read.
    """

    resources: Mapping[str, Resource]
    read: Callable[[Any, Resource, dict[str, Any]], Any] | None = None
    plan: Callable[[Any, str, Timing, str], Outcome] | None = None
    order: int = 50
    quota: Mapping[str, int] | None = None
    clients: Callable[[Any], Mapping[str, Any]] | None = None
    skip_trial: bool = True
    summary: Callable[[Kube, Kube, str, Mapping[str, Any]], Summary] | None = None
    timed: bool = False
    kept: bool = False

    def resource(self, provider: str) -> Resource | None:
        """The SKR resource of ``provider`` (``None``: the kind has none there)."""
        return self.resources.get(provider) or self.resources.get(ANY_PROVIDER)


@dataclass(frozen=True)
class ProviderSide:
    """One provider's part of a kind's KCP reconcile (read -> pure plan -> provider calls).

    Attributes:
        clients: ``(turn) -> {name: client}``: the clients of a turn (``""``: the default one); raises
            the client layer's :class:`~kube.refusal.Refusal` when one cannot be built.
        read: ``(clients, turn) -> found``: what the plans need; raises a
            :class:`~kube.refusal.Refusal` for a refused read.
        create: ``(found, turn) -> Outcome``: one provisioning turn (pure).
        delete: ``(found, turn) -> Outcome``: one deletion turn (pure); ``remove_finalizer`` once gone.
        read_failed: ``(failure, turn) -> Outcome``: what a refused read or client means (pure);
            ``None``: transient failures come back after their delay, others fail with backoff.
    """

    clients: Callable[[Turn], Mapping[str, Any]]
    read: Callable[[Mapping[str, Any], Turn], Any]
    create: Callable[[Any, Turn], Outcome]
    delete: Callable[[Any, Turn], Outcome]
    read_failed: Callable[[Any, Turn], Outcome] | None = None


@dataclass(frozen=True)
class KcpSide:
    """The kind's KCP controller (``cloud-<kind>``, queue ``cloud-kcp``).

    Attributes:
        resource: the KCP resource.
        read: ``(kcp, obj, namespace) -> seen``: the provider-independent reads (Scope, dependencies).
        plan: ``(seen, t) -> Outcome``: the provider-independent part (pure). Its
            :attr:`~kube.toolkit.Outcome.handoff` (``"reconcile"`` / ``"delete"``) hands the object,
            once that outcome is carried out, to the Scope's provider (:attr:`Kind.providers`): the
            Scope is ``seen.scope``, and the provider's turn gets ``seen`` (:attr:`Turn.seen`).
        resync: seconds between resyncs of every object (``None``: none).
        timeout: the reconcile's deadline, seconds.
        wakes: ``(event type, obj) -> [(kind name or controller, name)]``: other objects a watch event
            of this kind wakes, in the same namespace (a deleted consumer wakes its IpRange).
        controller: the controller's name (default ``cloud-<kind name>``); ``""``: no controller (a kind
            the original knows whose controller comes later: it is still nuked and protects IpRanges).
        networks: names of the KCP Networks an object uses: a Network is not deleted while one names it,
            and its status changes wake the object (``None``: it names none).
    """

    resource: Resource
    read: Callable[[Any, dict[str, Any], str], Any] | None = None
    plan: Callable[[Any, Timing], Outcome] | None = None
    resync: float | None = 600.0
    timeout: float = 120.0
    wakes: Callable[[str, Mapping[str, Any]], Iterable[tuple[str, str]]] | None = None
    controller: str | None = None
    networks: Callable[[Mapping[str, Any]], list[str]] | None = None


@dataclass(frozen=True)
class NukeSide:
    """One provider's resources of a kind that Nuke deletes at the provider (a runtime's NFS backups:
    cloud-manager's ``pkg/kcp/provider/<provider>/nuke``, flags ``nukeBackupsGcp`` / ``nukeBackupsAws``).

    Attributes:
        kind: the kind named in the Nuke's status (``resourceType: ProviderResource``), e.g.
            ``FilestoreBackup``.
        clients: ``(scope, settings) -> client``: the client of the Scope's credentials; raises the client
            layer's :class:`~kube.refusal.Refusal`.
        list: ``(client, scope) -> [ProviderObject]``: this runtime's resources only (what the Scope's own
            names or labels select); raises :class:`~kube.refusal.Refusal`.
        list_failed: the Error reason of a refused listing (``ErrorListingGcpFilestoreBackups``).
    """

    kind: str
    clients: Callable[[Mapping[str, Any], CloudSettings], Any]
    list: Callable[[Any, Mapping[str, Any]], list[ProviderObject]]
    list_failed: str


@dataclass(frozen=True)
class KindRender:
    """The kind's ``reconcilery render <command>``: a dry run over manifests and a Scope (pure).

    Attributes:
        command: the command's name.
        help: its one-line help.
        files: what its ``-f`` manifests are (the option's help).
        kinds: the manifest kinds it takes (``-f``; others in the files are left out).
        run: ``(scope, objects, settings) -> rendered``: rows with ``name``, ``kind``, ``state``,
            ``outcome``, ``plan`` (lines) and ``as_dict()``.
        problems: ``(scope, objects) -> [problem]``: input it cannot render (exit 2); ``None``: a
            ``metadata``/``spec``/``status`` that is not an object.
        cidr: the table has a CIDR column (``rendered.cidr``).
    """

    command: str
    help: str
    files: str
    kinds: tuple[str, ...]
    run: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]], Any], Sequence[Any]]
    problems: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], list[str]] | None = None
    cidr: bool = False


@dataclass(frozen=True)
class Kind:
    """One Cloud kind's declaration (see the module doc).

    Attributes:
        name: lower case, the original's package name (``gcpsubnet``).
        skr: the SKR side (``None``: a KCP-only kind such as Network).
        kcp: the KCP side (``None``: a kind without a KCP mirror).
        providers: provider type -> its part of the KCP reconcile.
        iprange_consumer: its objects reference an IpRange (``spec.ipRange.name``): an IpRange is not
            deleted while one uses it, and a deleted one wakes its IpRange. The number orders the kinds
            in the ``DeleteWhileUsed`` messages (``None``: not a consumer).
        nuke: place in Nuke's deletion order (``None``: Nuke leaves it).
        render: the ``render`` command (``None``: none).
        provider_nuke: provider type -> the provider resources of the kind Nuke deletes directly (kinds
            without a KCP mirror: a runtime's NFS backups).
    """

    name: str
    skr: SkrSide | None = None
    kcp: KcpSide | None = None
    providers: Mapping[str, ProviderSide] = field(default_factory=dict)
    iprange_consumer: int | None = None
    nuke: int | None = None
    render: KindRender | None = None
    provider_nuke: Mapping[str, NukeSide] = field(default_factory=dict)

    @property
    def controller(self) -> str:
        """The KCP controller's name (``""``: none)."""
        if self.kcp is None or self.kcp.read is None or self.kcp.plan is None:
            return ""
        return f"cloud-{self.name}" if self.kcp.controller is None else self.kcp.controller


_lock = threading.RLock()
_kinds: dict[str, Kind] = {}
_discovered = False
#: :func:`kinds`' answer, kept until the next :func:`register` (a connect asks for it a dozen times)
_sorted: tuple[Kind, ...] | None = None


def register(kind: Kind) -> Kind:
    """Add ``kind`` (a declaration module calls it on import; a second one of the name replaces it)."""
    global _sorted
    with _lock:
        _kinds[kind.name] = kind
        _sorted = None
    return kind


def unregister(kind: Kind) -> None:
    """Remove ``kind`` when it is the one registered under its name (a test's declaration)."""
    global _sorted
    with _lock:
        if _kinds.get(kind.name) is kind:
            del _kinds[kind.name]
            _sorted = None


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    with _lock:
        if _discovered:
            return
        package = importlib.import_module("tasks.cloud.kinds")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            importlib.import_module(f"{package.__name__}.{info.name}")
        _discovered = True


def kinds() -> list[Kind]:
    """Every declared kind, by name (a new list; the kinds themselves are shared)."""
    global _sorted
    found = _sorted
    if found is None or not _discovered:
        _discover()
        with _lock:
            found = _sorted = tuple(_kinds[name] for name in sorted(_kinds))
    return list(found)


def get(name: str) -> Kind:
    """The kind ``name``. Raises ``KeyError`` naming the declared kinds."""
    _discover()
    with _lock:
        if name not in _kinds:
            raise KeyError(f"unknown Cloud kind {name!r} (declared: {', '.join(sorted(_kinds))})")
        return _kinds[name]


def skr_kinds(provider: str) -> list[tuple[Kind, Resource]]:
    """The kinds the connect reconciles in an SKR of ``provider``, with their SKR resource, in its order."""
    found = [(k, res) for k in kinds() if k.skr is not None and k.skr.plan is not None
             and (res := k.skr.resource(provider)) is not None]
    return sorted(found, key=lambda pair: (pair[0].skr.order if pair[0].skr else 0, pair[0].name))


def kept_skr_resources() -> tuple[Resource, ...]:
    """The SKR resources (every provider's) of the kinds declared :attr:`SkrSide.kept`."""
    return tuple(res for k in kinds() if k.skr is not None and k.skr.kept for res in k.skr.resources.values())


def by_skr_kind(kind: str) -> tuple[Kind, Resource] | None:
    """The kind whose SKR resource (of any provider) has kind ``kind`` (``GcpSubnet``), with that
    resource; ``None`` for none."""
    return next(((k, res) for k in kinds() if k.skr is not None for res in k.skr.resources.values()
                 if res.kind == kind), None)


def by_kcp_kind(kind: str) -> Kind | None:
    """The kind whose KCP resource's kind is ``kind`` (``GcpSubnet``), ``None`` for none."""
    return next((k for k in kinds() if k.kcp is not None and k.kcp.resource.kind == kind), None)


def nuked() -> list[Resource]:
    """The KCP resources Nuke deletes, in its order."""
    found = [k for k in kinds() if k.nuke is not None and k.kcp is not None]
    return [k.kcp.resource for k in sorted(found, key=lambda k: (k.nuke, k.name)) if k.kcp is not None]


def provider_nuked(provider: str) -> list[NukeSide]:
    """The provider resources Nuke deletes directly in a runtime of ``provider``, in Nuke's order (then by
    kind name)."""
    found = sorted((k for k in kinds() if provider in k.provider_nuke), key=lambda k: (k.nuke or 0, k.name))
    return [k.provider_nuke[provider] for k in found]


def iprange_consumers(skr: bool) -> list[Resource]:
    """The resources whose objects reference an IpRange: the SKR ones (``skr``) or the KCP ones, in the
    order the ``DeleteWhileUsed`` messages name them."""
    found = sorted((k for k in kinds() if k.iprange_consumer is not None),
                   key=lambda k: (k.iprange_consumer, k.name))
    if not skr:
        return [k.kcp.resource for k in found if k.kcp is not None]
    return [res for k in found if k.skr is not None for _, res in sorted(k.skr.resources.items())]


def quota_default(key: str) -> int | None:
    """The declared default of the SKR quota ``key`` (``<lower(kind)>.<group>/totalCount``)."""
    for kind in kinds():
        if kind.skr is not None and kind.skr.quota is not None:
            for res in kind.skr.resources.values():
                if f"{res.kind.lower()}.{res.group}/totalCount" == key and res.kind in kind.skr.quota:
                    return kind.skr.quota[res.kind]
    return None
