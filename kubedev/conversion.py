"""CRD conversion webhooks: custom objects read or written in a version other than the storage version.

For a CRD with ``spec.conversion.strategy: Webhook`` the store keeps objects in the storage version
(the version with ``storage: true``) and every request in another served version goes through the
CRD's webhook, as the real API server does: GET, LIST and WATCH convert what they answer (a LIST is one
ConversionReview); POST, PUT and PATCH take the object in the request's version (PATCH applies the
patch to the converted current object and retries on conflicts, like ``GuaranteedUpdate``), validate
it against that version's schema (:mod:`kubedev.customresources`), convert it to the storage version,
store it and answer it converted back. CRDs with ``strategy: None`` keep the old behaviour (the
object is relabelled, nothing else changes).

The webhook is ``clientConfig.url``, or ``clientConfig.service`` resolved through the Service's
Endpoints in the store (the dev server has no cluster network: a Service with an Endpoints object
pointing at ``127.0.0.1`` is how a local webhook is registered; the TLS server name stays
``<service>.<namespace>.svc``, as the API server verifies it). ``caBundle`` is trusted; the review is
``apiextensions.k8s.io/v1`` or ``v1beta1`` (the first of ``conversionReviewVersions`` the server
knows). The answer is checked as the API server checks it (uid, one object per request, the desired
apiVersion, unchanged kind/name/namespace/uid); a failure is a 500 ``conversion webhook for
<group>/<version>, Kind=<Kind> failed: ...``.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp

from kubedev import errors
from kubedev.admission import ssl_context, webhook_target
from kubedev.errors import ApiError
from kubedev.patching import apply_patch
from kubedev.resources import ResourceType
from kubedev.store import Store

__all__ = ["Converter", "conversion_review", "webhook_of"]

log = logging.getLogger("kubedev.conversion")

Obj = dict[str, Any]
REVIEW_VERSIONS = ("v1", "v1beta1")
_TIMEOUT = 30.0  # the API server's conversion webhook timeout
_PATCH_ATTEMPTS = 5


def webhook_of(crd: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The ``spec.conversion.webhook`` of a CRD whose strategy is ``Webhook`` (else ``None``)."""
    conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
    if not isinstance(conversion, Mapping) or conversion.get("strategy") != "Webhook":
        return None
    webhook = conversion.get("webhook")
    return webhook if isinstance(webhook, Mapping) else {}


def storage_version(crd: Mapping[str, Any]) -> str:
    """The version with ``storage: true``."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(version, Mapping) and version.get("storage"):
            return str(version.get("name"))
    return ""


def conversion_review(objects: list[Obj], desired_api_version: str, review_version: str = "v1",
                      uid: str | None = None) -> Obj:
    """A ConversionReview request (``apiextensions.k8s.io/<review_version>``)."""
    return {"apiVersion": f"apiextensions.k8s.io/{review_version}", "kind": "ConversionReview",
            "request": {"uid": uid or str(uuid.uuid4()), "desiredAPIVersion": desired_api_version,
                        "objects": objects}}


class ConversionFailure(Exception):
    """The webhook could not be called or answered something unusable."""


def check_response(review: Any, uid: str, sent: list[Obj], desired: str) -> list[Obj]:
    """The converted objects of a ConversionReview answer, checked as the API server does.

    Raises :class:`ConversionFailure` with the API server's wording.
    """
    if not isinstance(review, Mapping) or not isinstance(review.get("response"), Mapping):
        raise ConversionFailure("conversion webhook response was absent")
    response = review["response"]
    if response.get("uid") != uid:
        raise ConversionFailure(f"expected response uid {uid}, got {response.get('uid')}")
    result = response.get("result") if isinstance(response.get("result"), Mapping) else {}
    if result.get("status") != "Success":
        raise ConversionFailure(f"conversion webhook returned failure: {result.get('message') or 'unknown'}")
    converted = response.get("convertedObjects")
    if not isinstance(converted, list) or len(converted) != len(sent):
        raise ConversionFailure(f"returned {len(converted) if isinstance(converted, list) else 0} objects, "
                                f"expected {len(sent)}")
    out: list[Obj] = []
    for before, after in zip(sent, converted, strict=True):
        if not isinstance(after, dict):
            raise ConversionFailure("converted object is not an object")
        if after.get("apiVersion") != desired:
            raise ConversionFailure(f"invalid converted object: expected apiVersion {desired!r}, got "
                                    f"{after.get('apiVersion')!r}")
        if after.get("kind") != before.get("kind"):
            raise ConversionFailure(f"invalid converted object: expected kind {before.get('kind')!r}, got "
                                    f"{after.get('kind')!r}")
        old_meta, new_meta = before.get("metadata") or {}, after.get("metadata") or {}
        for key in ("name", "namespace", "uid"):
            if old_meta.get(key) != new_meta.get(key):
                raise ConversionFailure(f"invalid metadata of converted object: must not change metadata.{key}")
        # only labels and annotations may change; everything else of metadata is the API server's
        after = {**after, "metadata": {**old_meta, "labels": new_meta.get("labels"),
                                       "annotations": new_meta.get("annotations")}}
        for key in ("labels", "annotations"):
            if after["metadata"][key] is None:
                del after["metadata"][key]
        out.append(after)
    return out


class Converter:
    """Serves requests for custom versions that need the CRD's conversion webhook (one per app)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ---- lookups ---------------------------------------------------------------------------

    def _crd(self, rt: ResourceType) -> Obj | None:
        return self.store.crd_for(rt)

    def needed(self, rt: ResourceType) -> bool:
        """Whether requests for ``rt`` go through a conversion webhook."""
        crd = self._crd(rt)
        return crd is not None and webhook_of(crd) is not None and storage_version(crd) not in ("", rt.version)

    def storage_type(self, rt: ResourceType) -> ResourceType:
        """The resource type of the storage version."""
        crd = self._crd(rt) or {}
        version = storage_version(crd)
        return self.store.registry.lookup(rt.group, version, rt.plural) or dataclasses.replace(rt, version=version)

    # ---- calling the webhook --------------------------------------------------------------

    def _target(self, client_config: Mapping[str, Any]) -> tuple[str, str | None]:
        """``(url, server_hostname)`` of a ``clientConfig`` (a Service resolves through its Endpoints)."""
        try:
            return webhook_target(self.store, client_config)
        except LookupError as exc:
            raise ConversionFailure(str(exc).replace("the webhook", "the conversion webhook")) from None

    async def convert(self, rt: ResourceType, objects: list[Obj], desired_api_version: str) -> list[Obj]:
        """``objects`` as ``desired_api_version`` (those already in it unchanged); raises the 500."""
        todo = [i for i, o in enumerate(objects) if o.get("apiVersion") != desired_api_version]
        if not todo:
            return objects
        crd = self._crd(rt)
        webhook = webhook_of(crd) or {}
        sent = [objects[i] for i in todo]
        gvk = f"{rt.group}/{(sent[0].get('apiVersion') or '').rpartition('/')[2]}, Kind={rt.kind}"
        try:
            converted = await self._call(webhook, sent, desired_api_version)
        except ConversionFailure as exc:
            log.warning("event=conversion_failed resource=%s desired=%s error=%s", rt.qualified,
                        desired_api_version, exc)
            message = f"conversion webhook for {gvk} failed: {exc}"
            raise ApiError(500, "InternalError", f"Internal error occurred: {message}",
                           {"causes": [{"message": message}]}) from exc
        out = list(objects)
        for i, obj in zip(todo, converted, strict=True):
            out[i] = obj
        return out

    async def _call(self, webhook: Mapping[str, Any], sent: list[Obj], desired: str) -> list[Obj]:
        client_config = webhook.get("clientConfig") if isinstance(webhook.get("clientConfig"), Mapping) else {}
        versions = [str(v) for v in webhook.get("conversionReviewVersions") or ["v1"]]
        review_version = next((v for v in versions if v in REVIEW_VERSIONS), None)
        if review_version is None:
            raise ConversionFailure(f"no supported conversionReviewVersions in {versions} (the server supports "
                                    f"{list(REVIEW_VERSIONS)})")
        url, server_hostname = self._target(client_config or {})
        if not url.startswith("https://"):
            raise ConversionFailure(f'webhook URL "{url}" is not https')
        review = conversion_review(sent, desired, review_version)
        try:
            context = ssl_context((client_config or {}).get("caBundle"))
        except ValueError as exc:
            raise ConversionFailure(str(exc)) from exc
        post = f'Post "{url}"'
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_TIMEOUT)) as session, \
                    session.post(url, json=review, ssl=context, server_hostname=server_hostname,
                                 headers={"Accept": "application/json"}) as resp:
                if resp.status != 200:
                    text = (await resp.text())[:300]
                    raise ConversionFailure(f"{post}: the server responded with the status code {resp.status}: "
                                            f"{text}")
                answer = await resp.json(content_type=None)
        except TimeoutError as exc:
            raise ConversionFailure(f"{post}: context deadline exceeded") from exc
        except aiohttp.ClientError as exc:
            raise ConversionFailure(f"{post}: {exc or type(exc).__name__}") from exc
        except ValueError as exc:
            raise ConversionFailure(f"the response of the webhook is not JSON: {exc}") from exc
        return check_response(answer, review["request"]["uid"], sent, desired)

    # ---- requests -------------------------------------------------------------------------

    async def to_request_version(self, rt: ResourceType, objects: list[Obj]) -> list[Obj]:
        """Stored objects as ``rt``'s version (for GET/LIST/WATCH answers)."""
        return await self.convert(rt, objects, rt.api_version)

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None, subresource: str | None) -> Obj:
        crd = self._crd(rt)
        return self.store.schemas.admit(crd, rt, obj, old, subresource) if crd is not None else obj

    async def create(self, rt: ResourceType, namespace: str | None, body: Any, dry_run: bool) -> Obj:
        """POST in ``rt``'s version: validate there, store converted, answer converted back."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        obj = {**body, "apiVersion": rt.api_version, "kind": rt.kind}
        meta = dict(obj.get("metadata") or {})
        if rt.namespaced and namespace:
            meta["namespace"] = namespace
        obj["metadata"] = meta
        if rt.has_status:
            obj.pop("status", None)
        obj = self._validate(rt, obj, None, None)
        storage = self.storage_type(rt)
        stored = self.store.create(storage, namespace, (await self.convert(rt, [obj], storage.api_version))[0],
                                   dry_run, validated=True)
        return (await self.to_request_version(rt, [stored]))[0]

    async def replace(self, rt: ResourceType, namespace: str | None, name: str, body: Any,
                      subresource: str | None, dry_run: bool) -> Obj:
        """PUT in ``rt``'s version (``metadata.resourceVersion`` in the body is the precondition)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        storage = self.storage_type(rt)
        current = self.store.get(storage, namespace, name)
        current_v = (await self.to_request_version(rt, [current]))[0]
        return await self._write(rt, storage, namespace, name, current, current_v, body, subresource, dry_run)

    async def patch(self, rt: ResourceType, namespace: str | None, name: str, patch_type: str, patch: Any,
                    subresource: str | None, dry_run: bool) -> tuple[Obj, bool]:
        """PATCH in ``rt``'s version: the patch applies to the converted current object; a conflict
        with a concurrent write is retried unless the patch names a resourceVersion."""
        if patch_type == "strategic":
            raise errors.unsupported_media_type("application/strategic-merge-patch+json")
        storage = self.storage_type(rt)
        for attempt in range(1, _PATCH_ATTEMPTS + 1):
            try:
                current = self.store.get(storage, namespace, name)
            except ApiError as exc:
                if exc.code == 404 and patch_type == "apply" and not subresource and isinstance(patch, dict):
                    body = {**patch, "metadata": {**(patch.get("metadata") or {}), "name": name}}
                    return await self.create(rt, namespace, body, dry_run), True
                raise
            current_v = (await self.to_request_version(rt, [current]))[0]
            patched = apply_patch(current_v, patch_type, patch, strategic=False)
            explicit_rv = (patched.get("metadata") or {}).get("resourceVersion") not in (
                None, "", current["metadata"]["resourceVersion"])
            patched["metadata"] = {**(patched.get("metadata") or {}),
                                   "resourceVersion": (patched.get("metadata") or {}).get("resourceVersion")
                                   or current["metadata"]["resourceVersion"]}
            try:
                return await self._write(rt, storage, namespace, name, current, current_v, patched, subresource,
                                         dry_run), False
            except ApiError as exc:
                if exc.code != 409 or explicit_rv or attempt == _PATCH_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _write(self, rt: ResourceType, storage: ResourceType, namespace: str | None, name: str,
                     current: Obj, current_v: Obj, body: Obj, subresource: str | None, dry_run: bool) -> Obj:
        new_v = copy.deepcopy(body)
        new_v.update(apiVersion=rt.api_version, kind=rt.kind)
        if subresource == "status":
            new_v = {**current_v, "status": body.get("status"),
                     "metadata": {**current_v["metadata"],
                                  "resourceVersion": (body.get("metadata") or {}).get("resourceVersion")}}
            if new_v["status"] is None:
                del new_v["status"]
        elif rt.has_status:
            new_v.pop("status", None)
            if "status" in current_v:
                new_v["status"] = current_v["status"]
        meta = dict(new_v.get("metadata") or {})
        for key in ("uid", "creationTimestamp", "namespace", "name", "generation"):
            if key in current_v.get("metadata", {}):
                meta[key] = current_v["metadata"][key]
        new_v["metadata"] = meta
        new_v = self._validate(rt, new_v, current_v, subresource)
        new_s = (await self.convert(rt, [new_v], storage.api_version))[0]
        if subresource != "status" and rt.has_status:
            new_s.pop("status", None)  # the store keeps the stored status on the main resource
        stored = self.store.replace(storage, namespace, name, new_s, subresource, dry_run, validated=True)
        return (await self.to_request_version(rt, [stored]))[0]
