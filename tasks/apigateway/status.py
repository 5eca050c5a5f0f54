"""The APIRule v2 status the controller writes: ``Ready``, ``Error`` or ``Warning`` with a description.

Texts are api-gateway's (``internal/processing/status``): "Reconciled successfully"; "Validation
errors: " followed by at most three ``Attribute '<path>': <message>`` lines and "N more error(s)...";
``<Kind>Errors: e1, e2`` lines when applying subresources fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

READY = "Ready"
ERROR = "Error"
WARNING = "Warning"
RECONCILED = "Reconciled successfully"
MAX_VALIDATION_LINES = 3


@dataclass(frozen=True)
class Status:
    """``status.state`` and ``status.description``."""

    state: str
    description: str

    def to_dict(self) -> dict[str, Any]:
        """``state`` and ``description`` as the ``status`` body says them."""
        return {"state": self.state, "description": self.description}


def ready() -> Status:
    return Status(READY, RECONCILED)


def validation_failed(failures: Sequence[object]) -> Status:
    """``Error`` listing the first three failures (``str(failure)`` = ``Attribute '<p>': <m>``)."""
    lines = [str(f) for f in failures[:MAX_VALIDATION_LINES]]
    description = "Validation errors: " + "\n".join(lines)
    if len(failures) > MAX_VALIDATION_LINES:
        description += f"\n{len(failures) - MAX_VALIDATION_LINES} more error(s)..."
    return Status(ERROR, description)


def attribute_error(attribute_path: str, message: str) -> Status:
    """``Error`` "Validation errors: Attribute '<path>': <message>" for one failure found before validation."""
    return Status(ERROR, f"Validation errors: Attribute '{attribute_path}': {message}")


def missing_dependency(crd: str) -> Status:
    """``Warning`` for a CRD the v2 pipeline needs."""
    return Status(WARNING, f"CRD {crd} is not present. Make sure to install required dependencies for the component")


def apply_failed(errors: Mapping[str, Sequence[str]]) -> Status:
    """``Error`` with one ``<Kind>Errors: e1, e2`` line per kind that failed (``{"VirtualService": [...]}``)."""
    lines = [f"{kind}Errors: {', '.join(messages)}" for kind, messages in errors.items() if messages]
    return Status(ERROR, "\n".join(lines))


#: Event reasons on the APIRule, one per kind of state change.
REASON_RECONCILED = "Reconciled"
REASON_VALIDATION_FAILED = "ValidationFailed"
REASON_APPLY_FAILED = "ApplyFailed"
REASON_WARNING = "Warning"


def event_for(status: Status) -> tuple[str, str]:
    """``(type, reason)`` of the Kubernetes Event announcing ``status``: ``Ready`` → Normal
    ``Reconciled``; ``Error`` from validation → Warning ``ValidationFailed``; any other ``Error`` (a
    write the API server refused) → Warning ``ApplyFailed``; ``Warning`` → Warning ``Warning``."""
    if status.state == READY:
        return "Normal", REASON_RECONCILED
    if status.state == ERROR:
        failed_validation = status.description.startswith("Validation errors")
        return "Warning", REASON_VALIDATION_FAILED if failed_validation else REASON_APPLY_FAILED
    return "Warning", REASON_WARNING


#: The words of the API server's optimistic-concurrency conflict (``apierrors.NewConflict`` with
#: ``registry.OptimisticLockErrorMsg``), which api-gateway's controller matches.
OBJECT_MODIFIED = "the object has been modified"


def object_modified(status: int, reason: str, message: str, details: Mapping[str, Any] | None) -> bool:
    """Whether a failed write is a conflict on the APIRule itself because it changed since it was read:
    HTTP 409 ``Conflict`` (not ``AlreadyExists``) naming ``apirules`` in its details, with the API
    server's "the object has been modified" (api-gateway ``internal/controller/gateway/
    apirule_controller.go`` counts exactly those in ``api_gateway_api_rule_object_modified_errors_total``:
    a status write that lost the race). A conflict on a generated object is not counted."""
    kind = (details or {}).get("kind")
    return status == 409 and reason == "Conflict" and kind == "apirules" and OBJECT_MODIFIED in message


#: ``status.state`` values the APIRule gauge names; anything else is ``Other``, no status yet ``None``.
STATES = (READY, WARNING, ERROR, "Processing", "Deleting")


def state_label(apirule: Mapping[str, Any] | None) -> str:
    """The bounded ``state`` label of an APIRule (any manifest, untrusted): its ``status.state`` when it is
    one of :data:`STATES`, ``None`` without one, ``Other`` for any other value."""
    status = (apirule or {}).get("status")
    state = status.get("state") if isinstance(status, Mapping) else None
    if not state:
        return "None"
    return state if isinstance(state, str) and state in STATES else "Other"
