"""The row every ``reconcilery render <kind>`` answers per manifest (pure): what the controllers would
decide for it offline. A kind's render module derives its row from :class:`Rendered`, adding what its
table shows (the KCP objects, the provider's plan, a CIDR, ...)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tasks.cloud import names

__all__ = ["Rendered"]


@dataclass(frozen=True)
class Rendered:
    """One manifest's outcome: its ``name`` and ``kind``, ``state`` (``Ready`` when it would be provisioned,
    else ``Error``, or a kind's own such as ``Skipped``) and ``outcome`` (the words the table shows)."""

    name: str
    kind: str
    state: str = names.STATE_READY
    outcome: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The row as plain data (``-o json|yaml``)."""
        return asdict(self)
