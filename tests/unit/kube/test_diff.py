from typing import Any

import pytest

from kube.diff import (
    is_subset,
    label_selector,
    label_value,
    needs_update,
    owner_reference,
    prepare_replace,
)

RULE: dict[str, Any] = {"apiVersion": "gateway.kyma-project.io/v2", "kind": "APIRule",
        "metadata": {"name": "r", "namespace": "ns", "uid": "u"}}


def test_label_selector_is_sorted() -> None:
    assert label_selector({"b": "2", "a": "1"}) == "a=1,b=2"


@pytest.mark.parametrize("value", ["", "a", "a.b-c_d", "x" * 63])
def test_label_value_keeps_valid_values(value: str) -> None:
    assert label_value(value) == value


@pytest.mark.parametrize("value", ["x" * 64, "a" * 200 + ".example.com", "-bad-", "with space"])
def test_label_value_shortens_and_hashes_invalid_values(value: str) -> None:
    out = label_value(value)
    assert len(out) <= 63 and out[0].isalnum() and out[-1].isalnum()
    assert out == label_value(value)
    assert out != label_value(value + "z")


def test_owner_reference() -> None:
    assert owner_reference(RULE) == {"apiVersion": "gateway.kyma-project.io/v2", "kind": "APIRule", "name": "r",
                                     "uid": "u", "controller": True, "blockOwnerDeletion": True}
    with pytest.raises(ValueError, match="uid"):
        owner_reference({**RULE, "metadata": {"name": "r"}})


@pytest.mark.parametrize(
    ("desired", "actual", "subset"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2], "c": 3}}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": [1]}, {"a": [1, 1]}, False),
        ({"ports": [{"port": 80}]}, {"ports": [{"port": 80, "protocol": "TCP"}]}, True),
        ({"a": None}, {}, True),
        ({"a": {}}, {}, True),
        ({"a": []}, {"a": None}, True),
        ({"a": None}, {"a": 1}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": {"b": 1}}, {"a": "x"}, False),
    ],
)
def test_is_subset(desired: dict, actual: dict, subset: bool) -> None:
    assert is_subset(desired, actual) is subset


def test_needs_update() -> None:
    desired: dict[str, Any] = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "s", "labels": {"app": "x"}, "annotations": {"a": "1"}},
               "spec": {"ports": [{"port": 80}]}}
    actual: dict[str, Any] = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "s", "uid": "u", "resourceVersion": "5", "labels": {"app": "x", "extra": "y"},
                           "annotations": {"a": "1", "other": "2"}},
              "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "clusterIP": "10.0.0.1"},
              "status": {"loadBalancer": {}}}
    assert needs_update(desired, None)
    assert not needs_update(desired, actual)
    assert needs_update(desired, {**actual, "metadata": {**actual["metadata"], "labels": {"app": "y"}}})
    assert needs_update(desired, {**actual, "metadata": {**actual["metadata"], "annotations": {}}})
    assert needs_update(desired, {**actual, "spec": {"ports": [{"port": 81}]}})
    assert needs_update({"kind": "ConfigMap", "data": {"k": "v"}}, {"kind": "ConfigMap", "data": {"k": "w"}})
    assert not needs_update({"kind": "X", "status": {"a": 1}}, {"kind": "X", "status": {"a": 2}})


def test_prepare_replace_keeps_what_others_own() -> None:
    desired = {"metadata": {"name": "s", "labels": {"app": "x"}}, "spec": {"a": 1}}
    actual = {"metadata": {"name": "s", "resourceVersion": "9", "labels": {"app": "old", "team": "t"},
                           "finalizers": ["f"], "ownerReferences": [{"uid": "o"}]}, "spec": {"a": 0}}
    body = prepare_replace(desired, actual)
    assert body == {"metadata": {"name": "s", "resourceVersion": "9", "labels": {"app": "x", "team": "t"},
                                 "finalizers": ["f"], "ownerReferences": [{"uid": "o"}]}, "spec": {"a": 1}}
    assert desired["metadata"] == {"name": "s", "labels": {"app": "x"}}
