"""What botocore's service models say about faults, for the conformance tests of the AWS stand-ins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

__all__ = ["faults", "refused"]


def faults(service: str) -> dict[str, tuple[str, int]]:
    """Fault shape -> (code, HTTP status) as botocore's model of ``service`` documents them (a shape
    without a status: 500 for a server fault, else 400, botocore's rule)."""
    model = botocore.session.get_session().get_service_model(service)
    out = {}
    for shape in model.error_shapes:
        meta = shape.metadata
        error = meta.get("error") or {}
        out[shape.name] = (str(error.get("code") or shape.name),
                           int(error.get("httpStatusCode") or (500 if meta.get("fault") else 400)))
    return out


def refused(model: Mapping[str, tuple[str, int]], shape: str, call: Callable[[], Any]) -> str:
    """Run ``call``; it must fail with ``model``'s code and status of the fault ``shape``. Returns the
    message."""
    with pytest.raises(ClientError) as exc:
        call()
    code, status = model[shape]
    got = exc.value.response
    assert (got["Error"]["Code"], got["ResponseMetadata"]["HTTPStatusCode"]) == (code, status), got["Error"]
    return str(got["Error"].get("Message") or "")
