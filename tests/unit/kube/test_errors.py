import json

import pytest

from kube import ApiError, Conflict, Gone, NotFound, ResourceMissing
from kube.errors import error_for


def status(code: int, reason: str, message: str, details: dict | None = None) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message, "details": details or {}}).encode()


OBJECT_404 = status(404, "NotFound", 'apirules.gateway.kyma-project.io "r" not found',
                    {"name": "r", "group": "gateway.kyma-project.io", "kind": "apirules"})
KIND_404 = status(404, "NotFound", "the server could not find the requested resource")


@pytest.mark.parametrize(
    ("code", "raw", "name", "cls", "reason"),
    [
        (404, OBJECT_404, "r", NotFound, "NotFound"),
        (404, KIND_404, "r", ResourceMissing, "NotFound"),
        (404, b"404 page not found\n", "r", ResourceMissing, "NotFound"),
        (404, status(404, "NotFound", "gone", {}), None, ResourceMissing, "NotFound"),
        (404, status(404, "NotFound", 'namespaces "x" not found', {"name": "x", "kind": "namespaces"}), None,
         NotFound, "NotFound"),
        (409, status(409, "AlreadyExists", "exists"), "r", Conflict, "AlreadyExists"),
        (409, status(409, "Conflict", "modified"), "r", Conflict, "Conflict"),
        (410, status(410, "Expired", "too old resource version"), None, Gone, "Expired"),
        (422, status(422, "Invalid", "spec.x: Required value"), "r", ApiError, "Invalid"),
        (500, b"boom", None, ApiError, "InternalError"),
    ],
)
def test_error_for(code: int, raw: bytes, name: str | None, cls: type, reason: str) -> None:
    err = error_for(code, raw, name)
    assert type(err) is cls
    assert err.status == code
    assert err.reason == reason
    assert err.message


def test_resource_missing_is_a_not_found() -> None:
    assert issubclass(ResourceMissing, NotFound)
    assert not issubclass(Conflict, NotFound)
