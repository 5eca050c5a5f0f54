"""The watch engine and each domain's watch registrations (``watchers/<domain>.py``)."""

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
