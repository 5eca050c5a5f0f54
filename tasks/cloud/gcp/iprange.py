"""The KCP IpRange on GCP: one turn is read → pure plan → the planned call → Outcome, the recipe of every
Cloud kind (docs/cloud.md), as AWS's.

Contract::

    step = reconcile(iprange, scope, client)          # -> kube.toolkit.Outcome

- ``iprange``: the KCP ``cloud-control.kyma-project.io/v1beta1`` IpRange as a dict; ``scope``: the KCP
  Scope (``spec.scope.gcp.project`` and ``.vpcNetwork``); ``client``: a
  :class:`tasks.cloud.gcp.client.GcpClient` (or anything with the methods of :class:`IpRangeClient`).
- :func:`read` asks the client for what the plan looks at, one request at a time in the plan's (the
  original's) order, until the plan needs nothing more (:func:`tasks.cloud.calls.read_as_needed`):
  the pending operation first (so what it did is seen by the reads after it), the address
  ``cm-<name>`` (else the legacy name), the PSA connections and, when creating with a connection, the
  VPC's addresses. A turn waiting on an operation reads only the operation, an invalid CIDR nothing.
  A refused read is data (:class:`~tasks.cloud.calls.Refused`), never an exception. All reads come
  before the write.
- :func:`~tasks.cloud.gcp.iprange_plan.plan` (pure; the flow, reasons and messages are documented
  there) answers at most one write and the Outcome it leads to; :func:`apply` makes it.

The Outcome (status merge patch with ``state``, ``cidr``, ``id``, ``opIdentifier``, ``conditions``; when to
come back; on deletion whether the finalizer may go) is carried out by the KCP controller
(:func:`kube.toolkit.execute`), which returns ``step.as_result()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kube.clock import now_rfc3339
from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import Refused, make_calls, read_as_needed
from tasks.cloud.gcp import iprange_plan
from tasks.cloud.gcp.client import GcpApiError, network_filter
from tasks.cloud.gcp.iprange_plan import (
    ANOTHER_VPC_MESSAGE,
    DELETE_ADDRESS,
    DELETE_PSA_CONNECTION,
    DESCRIPTION,
    PSA_STATES,
    READY_MESSAGE,
    REASON_GCP_ERROR,
    REASON_INVALID_CIDR,
    RETRY_WAIT,
    SYNC_ADDRESS,
    SYNC_PSA_CONNECTION,
    Plan,
    Read,
    address_name,
    is_psa,
    legacy_name,
    parse_cidr,
    target,
)

__all__ = ["ANOTHER_VPC_MESSAGE", "DELETE_ADDRESS", "DELETE_PSA_CONNECTION", "DESCRIPTION", "READY_MESSAGE",
           "REASON_GCP_ERROR", "REASON_INVALID_CIDR", "RETRY_WAIT", "SYNC_ADDRESS", "SYNC_PSA_CONNECTION",
           "IpRangeClient", "address_name", "apply", "is_psa", "parse_cidr", "read", "reconcile", "refused",
           "retry_wait_from_env"]


def retry_wait_from_env() -> float:
    """``GCP_RETRY_WAIT_DURATION`` (Go duration such as ``5s``/``500ms``, or seconds), default
    :data:`RETRY_WAIT`, from this process's settings (:mod:`tasks.cloud.settings`)."""
    from tasks.cloud import settings

    return settings.current().gcp_retry_wait


class IpRangeClient(Protocol):
    """What this flow needs of :class:`tasks.cloud.gcp.client.GcpClient`."""

    def get_global_address(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_global_addresses(self, project: str, filter: str = "") -> list[dict[str, Any]]: ...
    def insert_global_address(self, project: str, vpc: str, name: str, description: str, address: str,
                              prefix_length: int) -> str: ...
    def delete_global_address(self, project: str, name: str) -> str: ...
    def get_global_operation(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_service_connections(self, project: str, vpc: str) -> list[dict[str, Any]]: ...
    def create_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def patch_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def delete_service_connection(self, project: str, vpc: str) -> str: ...
    def get_service_networking_operation(self, name: str) -> dict[str, Any] | None: ...


def refused(err: GcpApiError) -> Refused:
    """A client error as the plan's plain data."""
    return Refused(err.status, err.message, str(err))


def read(client: IpRangeClient, iprange: Mapping[str, Any], scope: Mapping[str, Any],
         needs: Callable[[Read], str | None]) -> Read:
    """What the plan ``needs``, read one request at a time in its order (see the module doc); a
    refused read is a :class:`~tasks.cloud.calls.Refused`. Raises ``ValueError`` for a Scope without a
    GCP project and VPC, ``fencing.FenceError`` when the reconcile must stop."""
    project, vpc = target(scope)
    status = iprange.get("status") or {}
    op_name = str(status.get("opIdentifier") or "")
    name = str(iprange["metadata"]["name"])
    fetch: dict[str, Callable[[], Any]] = {
        "operation": lambda: client.get_service_networking_operation(op_name) if status.get("state") in PSA_STATES
        else client.get_global_operation(project, op_name),
        "address": lambda: client.get_global_address(project, address_name(name)),
        "legacy": lambda: client.get_global_address(project, legacy_name(iprange)),
        "connections": lambda: client.list_service_connections(project, vpc),
        "addresses": lambda: client.list_global_addresses(project, network_filter(project, vpc)),
    }
    return read_as_needed(Read(), needs, fetch, GcpApiError, refused)


def apply(client: IpRangeClient, plan: Plan) -> Outcome:
    """Make the plan's call; the Outcome it leads to (a refused call's Error)."""
    return make_calls(client, plan, GcpApiError, refused)


def reconcile(iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, *,
              now: str | None = None, retry_wait: float | None = None) -> Outcome:
    """One turn of a KCP IpRange on GCP: :func:`read` → :func:`~tasks.cloud.gcp.iprange_plan.plan` →
    :func:`apply`. ``now``: the turn's time (RFC 3339; default: the clock), for the conditions;
    ``retry_wait``: seconds to wait for an operation (default ``GCP_RETRY_WAIT_DURATION``).

    Never raises for cloud errors (they become conditions); raises ``fencing.FenceError`` when the
    reconcile must stop writing, ``ValueError`` for a Scope without a GCP project and VPC, and
    ``KeyError`` when ``iprange`` has no ``metadata.name``.
    """
    wait = retry_wait_from_env() if retry_wait is None else retry_wait
    now = now or now_rfc3339()

    def decide(found: Read) -> Plan:
        return iprange_plan.plan(iprange, scope, found, wait, now)

    return apply(client, decide(read(client, iprange, scope, lambda found: decide(found).need)))
