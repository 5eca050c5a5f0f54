import datetime as dt
from typing import Any

import pytest

from kube.events import MAX_MESSAGE_LENGTH, bump_event, event_name, new_event

POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                                                       "resourceVersion": "7"}}
NODE: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u2"}}
T0 = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


def test_new_event_shape() -> None:
    ev = new_event(POD, "Synced", "all good", "Normal", now=T0, instance="host-1")
    assert ev["metadata"]["namespace"] == "ns"
    assert ev["metadata"]["name"].startswith("p.")
    assert ev["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p",
                                    "uid": "u1", "resourceVersion": "7"}
    assert ev["source"] == {"component": "reconcilery", "host": "host-1"}
    assert ev["count"] == 1
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2024-05-01T12:00:00Z"


def test_cluster_scoped_objects_get_default_namespace() -> None:
    assert new_event(NODE, "R", "m")["metadata"]["namespace"] == "default"


def test_name_is_the_aggregation_key() -> None:
    base = event_name(POD, "R", "m", "Normal")
    assert base == event_name({**POD, "metadata": {**POD["metadata"], "resourceVersion": "8"}}, "R", "m", "Normal")
    other_uid = {**POD, "metadata": {**POD["metadata"], "uid": "u9"}}
    assert len({base, event_name(POD, "R2", "m", "Normal"), event_name(POD, "R", "m2", "Normal"),
                event_name(POD, "R", "m", "Warning"), event_name(other_uid, "R", "m", "Normal")}) == 5


def test_bump() -> None:
    ev = new_event(POD, "R", "m", now=T0)
    later = bump_event(ev, now=T0 + dt.timedelta(seconds=5))
    assert later["count"] == 2
    assert later["lastTimestamp"] == "2024-05-01T12:00:05Z"
    assert later["firstTimestamp"] == "2024-05-01T12:00:00Z"
    assert ev["count"] == 1


def test_long_messages_are_cut_and_bad_types_refused() -> None:
    assert len(new_event(POD, "R", "x" * 5000)["message"]) == MAX_MESSAGE_LENGTH
    with pytest.raises(ValueError):
        new_event(POD, "R", "m", "Error")
    with pytest.raises(ValueError):
        new_event({"kind": "Pod", "metadata": {}}, "R", "m")
