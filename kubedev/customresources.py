"""Custom objects on write: the CRD version's schema pruned, defaulted and enforced (the store's hook).

:class:`SchemaAdmission` keeps one compiled :class:`kubedev.schema.Schema` per CRD version (rebuilt
when the CRD's resourceVersion changes) and is called by :class:`kubedev.store.Store` on every create
and update of a custom object, in the version of the request (as the API server validates in the
request's version). A failure is the API server's 422::

    APIRule.gateway.kyma-project.io "x" is invalid: [spec.rules: Required value, ...]

with ``details.causes[]`` of ``{reason, message, field}``. A status update validates the status
against the status schema; a main-resource update of a kind with a status subresource never changes
the status, so only the rest is validated (ratcheting skips what did not change).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from kubedev import errors
from kubedev.resources import ResourceType
from kubedev.schema import FieldError, Schema, aggregate

__all__ = ["SchemaAdmission", "invalid_error"]

Obj = dict[str, Any]


def invalid_error(rt: ResourceType, name: str, found: list[FieldError]) -> errors.ApiError:
    """The 422 ``Invalid`` answer for ``found`` (non-empty), as ``apierrors.NewInvalid``."""
    causes = [{"reason": e.reason, "message": e.body, "field": e.field} for e in found]
    return errors.invalid_causes(rt.group, rt.kind, name, causes, aggregate(found))


class SchemaAdmission:
    """Compiled schemas of the served CRD versions; :meth:`admit` is the one entry point."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[str, dict[str, Schema | None]]] = {}

    def schema(self, crd: Mapping[str, Any], version: str) -> Schema | None:
        """The compiled schema of ``version`` of ``crd`` (``None`` when the version has none)."""
        meta = crd.get("metadata") or {}
        ident = (str(meta.get("name", "")), str(meta.get("uid", "")))
        rv = str(meta.get("resourceVersion", ""))
        with self._lock:
            cached = self._cache.get(ident)
            if cached is None or cached[0] != rv:
                cached = (rv, {})
                self._cache[ident] = cached
            schemas = cached[1]
            if version not in schemas:
                schemas[version] = _compile(crd, version)
            return schemas[version]

    def forget(self, crd_name: str) -> None:
        """Drop the compiled schemas of a deleted CRD."""
        with self._lock:
            for ident in [i for i in self._cache if i[0] == crd_name]:
                del self._cache[ident]

    def admit(self, crd: Mapping[str, Any], rt: ResourceType, new: Obj, old: Obj | None,
              subresource: str | None = None) -> Obj:
        """``new`` pruned and defaulted, or raises the 422 of its errors.

        ``old`` is the stored object on an update (``None`` on create); ``subresource="status"``
        validates the status only.
        """
        schema = self.schema(crd, rt.version)
        if schema is None:
            return new
        normalized, _pruned = schema.normalize(new)
        only = ("status",) if subresource == "status" else None
        found = schema.validate(normalized, old, only=only)
        if found:
            raise invalid_error(rt, str((new.get("metadata") or {}).get("name", "")), found)
        return normalized


#: Compiled schemas by their OpenAPI text, shared by every store of the process: a server with thousands
#: of clusters holding the same CRDs (the SKR fleet bench) compiles each schema once (~3 ms each).
_COMPILED: OrderedDict[str, Schema] = OrderedDict()
_COMPILED_MAX = 512
_compiled_lock = threading.Lock()


def _compile(crd: Mapping[str, Any], version: str) -> Schema | None:
    spec = crd.get("spec") or {}
    for entry in spec.get("versions") or []:
        if isinstance(entry, Mapping) and entry.get("name") == version:
            openapi = (entry.get("schema") or {}).get("openAPIV3Schema")
            if not isinstance(openapi, Mapping):
                return None
            text = json.dumps(openapi, sort_keys=True, separators=(",", ":"), default=str)
            with _compiled_lock:
                found = _COMPILED.get(text)
                if found is not None:
                    _COMPILED.move_to_end(text)
                    return found
            found = Schema.compile(openapi)  # compiled schemas are read-only: safe to share
            with _compiled_lock:
                _COMPILED[text] = found
                while len(_COMPILED) > _COMPILED_MAX:
                    _COMPILED.popitem(last=False)
            return found
    return None
