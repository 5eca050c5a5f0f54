"""The watch engine: list + watch per registration, map events to keys, enqueue them. Each domain keeps
its own registrations (``tasks/<domain>/watches.py``); this package imports no domain."""

from informers.store import Store, Stores
from watchers.engine import WatchEvent, WatchManager, WatchRegistration, select_registrations
from watchers.health import HealthServer
from watchers.runner import run

__all__ = [
    "HealthServer",
    "Store",
    "Stores",
    "WatchEvent",
    "WatchManager",
    "WatchRegistration",
    "run",
    "select_registrations",
]
