"""Which SKR IpRange a consumer uses, as cloud-manager's ``pkg/skr/common/defaultiprange`` (pure).

A consumer names an IpRange in ``spec.ipRange.name``, or names none and uses the SKR's default IpRange
``default`` (cluster-scoped; the original's ``kyma-system/default`` reading of it). :func:`decide` takes
what was read (the consumer, the IpRange it names or the default) and answers an :class:`IpRangeUse`:

* a named IpRange that does not exist: Error ``IpRangeNotFound`` ``Specified IpRange <name> does not
  exist``, forget (the consumer is reconciled again when it or the IpRange changes);
* no reference and no default: the default IpRange to create (no CIDR, the labels of
  :data:`tasks.cloud.names.DEFAULT_IPRANGE_LABELS`), then wait for it;
* an IpRange that is not Ready=True yet: wait (requeue);
* while the consumer is being deleted nothing is created or waited for, and a missing IpRange does not
  block the deletion (the original stops a deleting consumer with ``IpRangeNotFound`` for ever when
  its named IpRange is gone: fixed);
* ownership before use (:func:`owned`, issue 27): the SKR IpRange's ``status.id`` is tenant-written, so
  the KCP IpRange it names is used only when it carries this SKR's kyma label and the SKR IpRange's
  remote name (the labels :func:`tasks.cloud.ownership.foreign` checks for every mirror). Else Error
  ``NotOwned`` ``IpRange <name> id names no KCP IpRange of this IpRange`` (the same words whether that
  KCP IpRange is another tenant's, missing or the id no UUID: the message names and reveals no other
  tenant). The original takes the id unchecked: with another SKR's IpRange UUID a consumer landed in
  that SKR's subnets and kept its IpRange from being deleted.

The default IpRange is never deleted when its consumers go away (as the original).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.outcome import Outcome, deleting
from tasks.cloud import names
from tasks.cloud.ownership import REASON_NOT_OWNED, foreign, invalid_id
from tasks.cloud.step import StepBuilder

__all__ = ["DEFAULT_NAME", "REASON_IPRANGE_NOT_FOUND", "REASON_NOT_OWNED", "WAIT_READY", "IpRangeUse", "blocked",
           "decide", "default_manifest", "owned", "reference", "wanted"]

#: Name of the SKR's default IpRange.
DEFAULT_NAME = "default"
REASON_IPRANGE_NOT_FOUND = "IpRangeNotFound"
#: Seconds (scaled by ``settings.t``) a consumer waits for its IpRange to become Ready.
WAIT_READY = 10.0


def reference(consumer: Mapping[str, Any]) -> str:
    """The consumer's ``spec.ipRange.name`` (``""``: none, the default is used)."""
    return str(((consumer.get("spec") or {}).get("ipRange") or {}).get("name") or "")


def wanted(consumer: Mapping[str, Any]) -> str:
    """The name of the IpRange the consumer uses: its reference, else :data:`DEFAULT_NAME`."""
    return reference(consumer) or DEFAULT_NAME


def default_manifest() -> dict[str, Any]:
    """The default SKR IpRange as the original creates it: name ``default``, no CIDR, its labels."""
    return {"apiVersion": names.SKR_IPRANGE.api_version, "kind": names.SKR_IPRANGE.kind,
            "metadata": {"name": DEFAULT_NAME, "labels": dict(names.DEFAULT_IPRANGE_LABELS)}, "spec": {}}


@dataclass(frozen=True)
class IpRangeUse:
    """The decision.

    Attributes:
        iprange: the IpRange the consumer uses (``None`` while deleting without one, or when missing).
        create: the default IpRange to create first (then ``wait``).
        missing: the Error message when the named IpRange does not exist (reason ``IpRangeNotFound``).
        wait: the IpRange is not Ready yet: the consumer comes back later.
        not_owned: the Error message when the IpRange's id names no KCP IpRange of this IpRange
            (reason ``NotOwned``, :func:`owned`).
    """

    iprange: Mapping[str, Any] | None
    create: dict[str, Any] | None = None
    missing: str | None = None
    wait: bool = False
    not_owned: str | None = None

    @property
    def ready(self) -> bool:
        """Whether the consumer may go on (an IpRange that is Ready and its own, or a deletion)."""
        return self.missing is None and self.not_owned is None and not self.wait and self.create is None

    @property
    def name(self) -> str:
        """The SKR IpRange's name (``""`` when none)."""
        return str(((self.iprange or {}).get("metadata") or {}).get("name") or "")

    @property
    def kcp_name(self) -> str:
        """The KCP IpRange's name: the SKR IpRange's ``status.id`` (``""`` when none)."""
        return str(((self.iprange or {}).get("status") or {}).get("id") or "")


def decide(consumer: Mapping[str, Any], found: Mapping[str, Any] | None) -> IpRangeUse:
    """The IpRange use of ``consumer`` given ``found``: the SKR IpRange named :func:`wanted` as read
    (``None`` when it does not exist). See the module doc."""
    going = deleting(consumer)
    ref = reference(consumer)
    if found is None:
        if going:
            return IpRangeUse(None)
        if ref:
            return IpRangeUse(None, missing=f"Specified IpRange {ref} does not exist")
        return IpRangeUse(None, create=default_manifest(), wait=True)
    if going:
        return IpRangeUse(found)
    ready = cond.is_true([dict(c) for c in (found.get("status") or {}).get("conditions") or []], names.COND_READY)
    return IpRangeUse(found, wait=not ready)


def owned(use: IpRangeUse, kcp_iprange: Mapping[str, Any] | None, kyma: str) -> IpRangeUse:
    """``use`` checked against ``kcp_iprange``, the KCP IpRange named by its :attr:`~IpRangeUse.kcp_name`
    as read (``None``: missing, or never read because the id is not a UUID): unchanged when that KCP
    IpRange is the mirror of this SKR IpRange (kyma ``kyma``, remote name = the SKR IpRange's name, no
    remote namespace), else with :attr:`~IpRangeUse.not_owned` set (one message for every case: it
    reveals nothing about other tenants' objects).

    An IpRange still waited for (not Ready) whose mirror is missing is left waiting (its own turn creates
    the mirror; a quota-exceeded one never gets one); one whose id is no UUID or names another object's
    KCP IpRange is refused at once (its own turn refuses it too, so waiting would never end). A use
    without an IpRange id (none yet, missing, being created) is returned as is."""
    if use.iprange is None or not use.kcp_name or use.missing is not None or use.create is not None:
        return use
    valid = invalid_id(use.kcp_name) is None
    if valid and kcp_iprange is not None and foreign(kcp_iprange, kyma, use.name, "") is None:
        return use
    if use.wait and valid and kcp_iprange is None:
        return use
    return replace(use, not_owned=f"IpRange {use.name} id names no KCP IpRange of this IpRange")


def blocked(use: IpRangeUse, run: StepBuilder, t: Callable[[float], float]) -> Outcome | None:
    """The consumer's Outcome while ``use`` does not let it go on (``None`` once the IpRange is Ready with
    an id): Error ``IpRangeNotFound`` (forget), Error ``NotOwned`` (forget: the next connect looks
    again), else come back after :data:`WAIT_READY` seconds scaled by ``t`` (the IpRange's own reconcile
    makes it Ready)."""
    if use.missing is not None:
        return run.fail(REASON_IPRANGE_NOT_FOUND, use.missing)
    if use.not_owned is not None:
        return run.fail(REASON_NOT_OWNED, use.not_owned)
    if not use.ready or not use.kcp_name:
        return run.step(requeue_after=t(WAIT_READY))
    return None
