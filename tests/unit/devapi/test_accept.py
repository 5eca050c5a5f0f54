"""Which answer a list's Accept header asks the dev API server for: a ``PartialObjectMetadataList`` of
``meta.k8s.io`` (client-go's metadata client) or plain JSON."""

from __future__ import annotations

import pytest

from kubedev.server import _metadata_list_version


@pytest.mark.parametrize(("accept", "expected"), [
    ("", None),
    ("application/json", None),
    ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "v1"),
    ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1,application/json", "v1beta1"),
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
     "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "v1"),  # protobuf is passed over
    ("application/json;as=Table;g=meta.k8s.io;v=v1,application/json", None),  # tables are not served: JSON
    ("application/json;as=PartialObjectMetadataList;g=example.com;v=v1", None),
    ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2", None),
    ("application/json, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", None),
])
def test_the_first_range_it_can_answer_decides(accept: str, expected: str | None) -> None:
    assert _metadata_list_version(accept) == expected
