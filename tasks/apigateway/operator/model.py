"""The APIGateway CR (``operator.kyma-project.io/v1alpha1``, cluster-scoped) as a typed value, and which
of several CRs is the one that reconciles the module (the oldest)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.apigateway.parsing import Metadata, ValidationFailure, open_manifest


@dataclass(frozen=True)
class APIGateway:
    """An APIGateway CR. ``enable_kyma_gateway``: ``spec.enableKymaGateway`` (absent = no, as the original);
    ``network_policies``: ``spec.networkPoliciesEnabled``. ``failures``: fields of the wrong type."""

    name: str
    uid: str
    finalizers: tuple[str, ...]
    deleting: bool
    creation_timestamp: str
    enable_kyma_gateway: bool
    network_policies: bool
    failures: tuple[ValidationFailure, ...]
    raw: dict[str, Any]

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> APIGateway:
        """Read an APIGateway manifest. Never raises."""
        raw, meta, r, spec = open_manifest(obj, default_namespace="")
        enable = r.boolean(spec.get("enableKymaGateway"), ".spec.enableKymaGateway")
        policies = r.boolean(spec.get("networkPoliciesEnabled"), ".spec.networkPoliciesEnabled")
        return cls(name=meta.name, uid=meta.uid, finalizers=meta.finalizers,
                   deleting=meta.deleting, creation_timestamp=meta.creation_timestamp,
                   enable_kyma_gateway=enable is True, network_policies=policies is True,
                   failures=tuple(r.failures), raw=raw)


def oldest_apigateway(items: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The APIGateway CR that reconciles the module: the smallest ``creationTimestamp``; on a tie the
    later one in list order (api-gateway's ``GetOldestAPIGatewayCR``). ``None`` when there is none."""
    oldest: Mapping[str, Any] | None = None
    for item in items:
        if oldest is None or not Metadata.parse(oldest).creation_timestamp < Metadata.parse(item).creation_timestamp:
            oldest = item
    return dict(oldest) if oldest is not None else None
