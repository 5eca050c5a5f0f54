"""The review skeleton (pure): parse, decide, answer with the request's uid; a failing decision is a failed
review, never a 500; malformed bodies are answered as reviews with a failed status and their 4xx."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webhooks.review import (
    ADMISSION,
    CONVERSION,
    MalformedReview,
    Review,
    ReviewKind,
    conversion_request,
    parse,
    respond,
)


def body(kind: ReviewKind, request: Any, api_version: str | None = None) -> bytes:
    return json.dumps({"apiVersion": api_version or kind.api_versions[0], "kind": kind.kind,
                       "request": request}).encode()


def test_answer_echoes_uid_and_api_version() -> None:
    status, answer = respond(body(CONVERSION, {"uid": "c-1", "desiredAPIVersion": "a/v1", "objects": []},
                                  "apiextensions.k8s.io/v1beta1"), CONVERSION, lambda review: {"x": 1})
    assert (status, answer) == (200, {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                                      "response": {"uid": "c-1", "x": 1}})


def test_a_failing_decision_is_a_failed_review() -> None:
    def boom(review: Review) -> dict[str, Any]:
        raise RuntimeError("bug")

    status, answer = respond(body(ADMISSION, {"uid": "a-1"}), ADMISSION, boom)
    assert status == 200 and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "a-1" and response["allowed"] is False
    assert response["status"]["code"] == 500 and "bug" in response["status"]["message"]
    status, answer = respond(body(CONVERSION, {"uid": "c-1"}), CONVERSION, boom)
    assert status == 200 and answer["response"]["uid"] == "c-1"
    assert answer["response"]["result"]["status"] == "Failure" and "bug" in answer["response"]["result"]["message"]


MALFORMED = [
    ("empty", b"", 400, "empty"),
    ("not json", b"{", 400, "not JSON"),
    ("array", b"[]", 400, "JSON object"),
    ("other kind", json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(), 400, "expected apiVersion"),
    ("no request", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), 400,
     "no request"),
    ("no uid", body(ADMISSION, {"uid": ""}), 400, "uid"),
    ("too large", b" " * (ADMISSION.max_body_bytes + 1), 413, "exceeds"),
]


@pytest.mark.parametrize(("name", "raw", "code", "fragment"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_bodies(name: str, raw: bytes, code: int, fragment: str) -> None:
    with pytest.raises(MalformedReview) as caught:
        parse(raw, ADMISSION)
    assert caught.value.status == code and fragment in caught.value.message
    status, answer = respond(raw, ADMISSION, lambda review: {})
    assert status == code  # answered as a review with a failed status, not a Status
    assert answer["kind"] == "AdmissionReview" and answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["response"]["allowed"] is False and answer["response"]["status"]["code"] == code
    assert fragment in answer["response"]["status"]["message"]


def test_content_type_is_checked_when_given() -> None:
    raw = body(ADMISSION, {"uid": "a"})
    assert parse(raw, ADMISSION, "application/json; charset=utf-8").uid == "a"
    with pytest.raises(MalformedReview, match="contentType"):
        parse(raw, ADMISSION, "text/plain")


def test_conversion_request_needs_desired_version_and_objects() -> None:
    for request in ({"uid": "u", "objects": []}, {"uid": "u", "desiredAPIVersion": "a/v1", "objects": {}}):
        with pytest.raises(MalformedReview):
            conversion_request(parse(body(CONVERSION, request), CONVERSION))
    assert conversion_request(parse(body(CONVERSION, {"uid": "u", "desiredAPIVersion": "a/v1", "objects": [1]}),
                                    CONVERSION)) == ("a/v1", [1])
    status, _ = respond(body(CONVERSION, {"uid": "u"}), CONVERSION, lambda review: dict(zip(
        ("desired", "objects"), conversion_request(review), strict=True)))
    assert status == 400
