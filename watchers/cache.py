"""Informer-style caches of the watch engine: the stores live in :mod:`informers.store` (shared with
the workers' informers); re-exported here for the watchers and their map functions."""

from informers.store import ObjectKey, RawEvent, Store, Stores, object_key, relist_events, resource_version

__all__ = ["ObjectKey", "RawEvent", "Store", "Stores", "object_key", "relist_events", "resource_version"]
