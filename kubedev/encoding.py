"""The dev API server's JSON answers: compact JSON bytes, a CRD's ``spec`` encoded once.

A CRD is the largest object most clients read (an SKR connect's installer GETs each of its CRDs: 25 KB of
JSON for an AWS SKR's nine), its ``spec`` never changes in place (the store replaces objects, never
mutates them), and clusters seeded from one parsed CRD file share the same ``spec`` dict (the store's
create copies the object shallowly). :func:`dumps` therefore keeps the encoded bytes of CRD specs, keyed by
the dict's identity (the cache holds the dict, so the identity cannot be reused while cached), and
splices them into the answer. The bytes are exactly ``json.dumps(obj, separators=(",", ":"))``'s.
"""

from __future__ import annotations

import json
import threading
from typing import Any

__all__ = ["CRD_SPEC_CACHE_SIZE", "dumps", "dumps_list"]

#: CRD specs whose encoding is kept (the oldest is dropped first).
CRD_SPEC_CACHE_SIZE = 512
_CRD_KIND = "CustomResourceDefinition"
_encode = json.JSONEncoder(separators=(",", ":")).encode
_specs: dict[int, tuple[dict[str, Any], str]] = {}
_lock = threading.Lock()


def dumps(obj: Any) -> bytes:
    """``obj`` as compact JSON bytes (``json.dumps(obj, separators=(",", ":"))``, ASCII); a CRD's
    ``spec`` from the cache (module doc)."""
    return (_dumps_crd(obj) if _is_crd(obj) else _encode(obj)).encode()


def dumps_list(head: dict[str, Any], items: list[Any]) -> bytes:
    """A list answer: ``head`` (kind, apiVersion, metadata) with ``"items": items`` appended, as
    :func:`dumps` of ``{**head, "items": items}`` would give it (each CRD item's spec from the cache)."""
    if not items or not _is_crd(items[0]):
        return _encode({**head, "items": items}).encode()
    parts = [_dumps_crd(o) if _is_crd(o) else _encode(o) for o in items]
    head_text = _encode(head)
    sep = "," if len(head_text) > 2 else ""
    return (head_text[:-1] + sep + '"items":[' + ",".join(parts) + "]}").encode()


def _is_crd(obj: Any) -> bool:
    return (type(obj) is dict and obj.get("kind") == _CRD_KIND and type(obj.get("spec")) is dict
            and all(type(k) is str for k in obj))


def _dumps_crd(obj: dict[str, Any]) -> str:
    spec = obj["spec"]
    key = id(spec)
    hit = _specs.get(key)
    if hit is not None and hit[0] is spec:
        spec_text = hit[1]
    else:
        spec_text = _encode(spec)
        with _lock:
            while len(_specs) >= CRD_SPEC_CACHE_SIZE:
                _specs.pop(next(iter(_specs)))
            _specs[key] = (spec, spec_text)
    return "{" + ",".join(f"{_encode(k)}:{spec_text if k == 'spec' else _encode(v)}" for k, v in obj.items()) + "}"
