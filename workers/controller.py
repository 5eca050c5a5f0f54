"""Controller registrations: what a domain hands the engine.

A controller is a name, a Celery queue, a reconcile function and a backoff policy. The reconcile
function gets one :class:`Key` and returns a :class:`Result` (or raises: any exception is an error
that backs off, :class:`TerminalError` is not retried). Registrations are plain data; the engine
(:mod:`workers.workqueue`, :mod:`workers.dispatch`) does the rest, as controller-runtime does for a
``Reconciler``.
"""

from __future__ import annotations

import enum
import functools
import importlib
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import overload
from urllib.parse import quote, unquote

#: Strings ``quote`` leaves as they are: skip it for them (most Kubernetes names).
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")

#: The cluster name of objects in the cluster Reconcilery itself runs against.
LOCAL_CLUSTER = "local"


@dataclass(frozen=True, order=True)
class Key:
    """One workqueue item: an object of one cluster, as ``cluster/namespace/name``.

    ``namespace`` is ``""`` for cluster-scoped objects. Domains whose items are not Kubernetes
    objects (the NGINX edge's ``(host, upstream)``) use ``namespace`` and ``name`` for their own
    two parts. Encoded keys percent-quote each part, so any string (URLs included) round-trips.
    """

    cluster: str
    namespace: str
    name: str

    @functools.cached_property
    def encoded(self) -> str:
        """:meth:`encode`, computed once per key (hot in batched enqueues)."""
        return "/".join(p if _UNRESERVED.fullmatch(p) else quote(p, safe="")
                        for p in (self.cluster, self.namespace, self.name))

    def encode(self) -> str:
        """``cluster/namespace/name`` with each part percent-quoted."""
        return self.encoded

    @classmethod
    def decode(cls, raw: str) -> Key:
        """Inverse of :meth:`encode`. Raises ``ValueError`` unless ``raw`` has exactly three parts."""
        parts = raw.split("/")
        if len(parts) != 3:
            raise ValueError(f"workqueue key must be cluster/namespace/name, got {raw!r}")
        return cls(*(unquote(p) for p in parts))

    @classmethod
    def parse(cls, ref: str, cluster: str = LOCAL_CLUSTER) -> Key:
        """A user's ``NAMESPACE/NAME`` (or ``NAME`` for cluster-scoped objects) as a key."""
        namespace, _, name = ref.rpartition("/")
        if not name:
            raise ValueError(f"expected NAMESPACE/NAME or NAME, got {ref!r}")
        return cls(cluster, namespace, name)

    @property
    def ref(self) -> str:
        """``namespace/name`` (or ``name``), the way kubectl users name the object."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return f"{self.cluster}:{self.ref}"


class ResultKind(enum.Enum):
    """How a reconcile ended; also the ``result`` label of ``controller_runtime_reconcile_total``."""

    SUCCESS = "success"
    REQUEUE_AFTER = "requeue_after"
    ERROR = "error"
    TERMINAL = "terminal_error"


@dataclass(frozen=True)
class Result:
    """What a reconcile returns.

    - ``Result.done()``: success; failure count forgotten.
    - ``Result.requeue(seconds)``: success, reconcile again after ``seconds`` (earliest due time wins).
    - ``Result.error(message)``: failure, retried with the controller's per-key backoff.
    - ``Result.terminal(message)``: failure that a retry cannot fix; not retried until the key is
      enqueued again (e.g. by a watch event).
    """

    outcome: ResultKind
    requeue_after: float | None = None
    message: str = ""

    @classmethod
    def done(cls) -> Result:
        return cls(ResultKind.SUCCESS)

    @classmethod
    def requeue(cls, seconds: float) -> Result:
        if seconds < 0:
            raise ValueError("requeue_after must be >= 0 seconds")
        return cls(ResultKind.REQUEUE_AFTER, requeue_after=float(seconds))

    @classmethod
    def error(cls, message: str) -> Result:
        return cls(ResultKind.ERROR, message=message)

    @classmethod
    def terminal(cls, message: str) -> Result:
        return cls(ResultKind.TERMINAL, message=message)


class TerminalError(Exception):
    """Raised by a reconcile for a failure that retrying cannot fix (no backoff, no retry)."""


@dataclass(frozen=True)
class Backoff:
    """Per-key exponential failure backoff: ``min(cap, base * 2**(failures-1))`` seconds.

    ``jitter`` in [0, 1] scales the delay by a random factor in ``[1 - jitter, 1]`` so that many
    keys failing together do not retry in lockstep. controller-runtime's default is base 5 ms and
    cap 1000 s; domains set the originals' numbers (api-gateway: 60 s; nginx edge: 2 s to 60 s).
    """

    base: float = 0.005
    cap: float = 1000.0
    jitter: float = 0.0

    def delay(self, failures: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after the ``failures``-th consecutive failure (``failures`` >= 1)."""
        exponent = max(0, failures - 1)
        raw = self.cap if exponent >= 64 else min(self.cap, self.base * (2**exponent))
        if self.jitter:
            raw *= 1.0 - self.jitter * rand()
        return raw


Reconcile = Callable[[Key], Result | None]
ListKeys = Callable[[], Iterable[Key]]


@dataclass(frozen=True)
class Controller:
    """A registration.

    Attributes:
        name: unique controller name, e.g. ``"apirule"``; the label of every metric.
        queue: the Celery queue (one per domain: ``apigateway``, ``cloud-skr``, ``cloud-kcp``,
            ``nginx``, ``snatch``).
        reconcile: ``(key) -> Result``; ``None`` means done. Exceptions are errors with backoff.
        backoff: failure backoff policy.
        resync_interval: seconds between periodic resyncs of every key (``None``: no resync).
        list_keys: every key the resync enqueues; required when ``resync_interval`` is set.
        sync_delay: ``(low, high)`` seconds; a fresh enqueue is delayed by a uniform random
            value in this range (the NGINX edge's 250-750 ms jitter). ``None``: immediately.
        timeout: the reconcile's deadline in seconds (``None``: the process default,
            ``RECONCILERY_RECONCILE_TIMEOUT``). Enforced cooperatively: every request through
            ``kube`` (and every I/O layer that asks :mod:`fencing`) is bounded by what is left, and
            a reconcile past it ends as an error with backoff. Long reconciles (an SKR connect) set
            it higher; the lease keeps the key theirs for as long as they run.
    """

    name: str
    queue: str
    reconcile: Reconcile
    backoff: Backoff = field(default_factory=Backoff)
    resync_interval: float | None = None
    list_keys: ListKeys | None = None
    sync_delay: tuple[float, float] | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.name or any(ch.isspace() for ch in self.name):
            raise ValueError(f"controller name must be non-empty without spaces, got {self.name!r}")
        if self.resync_interval is not None and self.list_keys is None:
            raise ValueError(f"controller {self.name}: resync_interval needs list_keys")


class Registry:
    """Controllers by name. A process registers the domains it runs at import time.

    A registration whose numbers come from settings registers a factory (``() -> Controller``)
    instead: it is built on the registry's first use, so importing a domain reads no environment
    (see :mod:`config`)."""

    def __init__(self) -> None:
        self._controllers: dict[str, Controller] = {}
        self._pending: list[Callable[[], Controller]] = []
        self._lock = threading.RLock()  # a factory may import a module that registers

    @overload
    def register(self, controller: Controller) -> Controller: ...

    @overload
    def register(self, controller: Callable[[], Controller]) -> Callable[[], Controller]: ...

    def register(self, controller: Controller | Callable[[], Controller]) -> Controller | Callable[[], Controller]:
        """Add (or replace, for reloads in tests) a controller, or a factory built on first use; returns it."""
        with self._lock:
            if isinstance(controller, Controller):
                self._controllers[controller.name] = controller
            else:
                self._pending.append(controller)
        return controller

    def _built(self) -> dict[str, Controller]:
        if self._pending:
            with self._lock:
                while self._pending:
                    built = self._pending[0]()
                    self._controllers[built.name] = built
                    self._pending.pop(0)
        return self._controllers

    def get(self, name: str) -> Controller:
        """The controller ``name``. Raises ``KeyError`` with the known names when unknown."""
        controllers = self._built()
        try:
            return controllers[name]
        except KeyError:
            known = ", ".join(sorted(controllers)) or "none"
            raise KeyError(f"unknown controller {name!r} (registered: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._built()

    def __iter__(self) -> Iterator[Controller]:
        return iter(sorted(self._built().values(), key=lambda c: c.name))

    def names(self) -> list[str]:
        return sorted(self._built())

    def unregister(self, name: str) -> None:
        self._built().pop(name, None)


#: The process-wide registry the Celery task, the pump, beat and the watchers use.
registry = Registry()


def import_installed(modules: Iterable[str]) -> list[ModuleType]:
    """Import each of ``modules`` (dotted names) and return those that are installed: a module that
    is itself missing (a domain or provider not installed) is skipped, an ``ImportError`` raised inside
    an installed module is raised."""
    found = []
    for name in modules:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    return found
