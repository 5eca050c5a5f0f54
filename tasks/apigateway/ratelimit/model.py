"""The RateLimit CR (``gateway.kyma-project.io/v1alpha1``) as a typed, read-only value.

Fields as api-gateway's ``apis/gateway/ratelimit/v1alpha1``. Parsing never raises: wrong JSON types
and missing required fields (which the CRD schema enforces when it is) become ``failures``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.apigateway.parsing import Reader, ValidationFailure, open_manifest


@dataclass(frozen=True)
class Bucket:
    """A token bucket: ``maxTokens``, ``tokensPerFill`` and ``fillInterval`` (nanoseconds)."""

    max_tokens: int
    tokens_per_fill: int
    fill_interval_ns: int

    @classmethod
    def parse(cls, raw: Any, path: str, r: Reader) -> Bucket | None:
        obj = r.opt_object(raw, path)
        if obj is None:
            if raw is None:
                r.fail(path, "is required")
            return None
        values = (r.integer(obj.get("maxTokens"), path + ".maxTokens"),
                  r.integer(obj.get("tokensPerFill"), path + ".tokensPerFill"),
                  r.duration(obj.get("fillInterval"), path + ".fillInterval"))
        for name, value in zip(("maxTokens", "tokensPerFill", "fillInterval"), values, strict=True):
            if value is None and obj.get(name) is None:
                r.fail(f"{path}.{name}", "is required")
        if any(v is None for v in values):
            return None
        return cls(*values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class BucketConfig:
    """``spec.local.buckets[i]``: requests matching ``path`` and every header get their own ``bucket``."""

    path: str | None
    headers: dict[str, str]
    bucket: Bucket | None


@dataclass(frozen=True)
class RateLimit:
    """A RateLimit CR. ``enforce`` defaults to true (the CRD's default), ``enableResponseHeaders`` to false."""

    name: str
    namespace: str
    uid: str
    api_version: str
    selector_labels: dict[str, str]
    default_bucket: Bucket | None
    buckets: tuple[BucketConfig, ...]
    enable_response_headers: bool
    enforce: bool
    deleting: bool
    failures: tuple[ValidationFailure, ...]
    raw: dict[str, Any]

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RateLimit:
        """Read a RateLimit manifest. Never raises."""
        raw, meta, r, spec = open_manifest(obj)
        raw_selector = spec.get("selectorLabels")
        selector = r.string_map(raw_selector, ".spec.selectorLabels")
        if raw_selector is None:
            r.fail(".spec.selectorLabels", "is required")
        elif raw_selector == {}:
            r.fail(".spec.selectorLabels", "must have at least 1 label")
        if spec.get("local") is None:
            r.fail(".spec.local", "is required")
        local = r.object(spec.get("local"), ".spec.local")
        has_local = isinstance(spec.get("local"), dict)
        default = Bucket.parse(local.get("defaultBucket"), ".spec.local.defaultBucket", r) if has_local else None
        buckets = []
        for i, item in r.objects(local.get("buckets"), ".spec.local.buckets"):
            at = f".spec.local.buckets[{i}]"
            path = r.string(item.get("path"), at + ".path")
            headers = r.string_map(item.get("headers"), at + ".headers")
            if item.get("path") is None and item.get("headers") is None:
                r.fail(at, "At least one of 'path' or 'headers' must be set")
            buckets.append(BucketConfig(path, headers, Bucket.parse(item.get("bucket"), at + ".bucket", r)))
        headers_flag = r.boolean(spec.get("enableResponseHeaders"), ".spec.enableResponseHeaders")
        enforce = r.boolean(spec.get("enforce"), ".spec.enforce")
        return cls(
            name=meta.name, namespace=meta.namespace, uid=meta.uid,
            api_version=str(raw.get("apiVersion") or ""), selector_labels=selector, default_bucket=default,
            buckets=tuple(buckets), enable_response_headers=headers_flag is True, enforce=enforce is not False,
            deleting=meta.deleting, failures=tuple(r.failures), raw=raw,
        )
