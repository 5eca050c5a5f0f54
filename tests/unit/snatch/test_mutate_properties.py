"""Property tests: any Pod shape is answered without raising, and a patch always applies cleanly."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.snatch.mutate import (
    MANAGED_BY_LABEL,
    ClusterContext,
    Reason,
    admission_review,
    affinity_term,
    decide,
    parse_review,
    review_response,
)

POOL = "cpu-worker-0"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
expression = st.fixed_dictionaries({
    "key": st.sampled_from(["worker.gardener.cloud/pool", "topology.kubernetes.io/zone"]),
    "operator": st.sampled_from(["In", "NotIn", "Exists"]),
    "values": st.lists(st.sampled_from([POOL, "customer-gpu", "eu-west-1a"]), max_size=2),
})
term = st.fixed_dictionaries({
    "weight": st.integers(min_value=0, max_value=100),
    "preference": st.fixed_dictionaries({"matchExpressions": st.lists(expression, min_size=1, max_size=2)}),
}) | st.just(affinity_term(POOL))
preferred = st.lists(term, max_size=4) | json_values
node_affinity = st.fixed_dictionaries({}, optional={PREF: preferred, "requiredDuringSchedulingIgnoredDuringExecution":
                                                    json_values}) | json_values
affinity = st.fixed_dictionaries({}, optional={"nodeAffinity": node_affinity, "podAffinity": json_values,
                                               "podAntiAffinity": json_values}) | json_values
spec = st.fixed_dictionaries({"containers": st.just([{"name": "c", "image": "x"}])},
                             optional={"affinity": affinity, "nodeName": st.sampled_from(["", "node-1"]),
                                       "nodeSelector": st.dictionaries(st.text(max_size=5), st.text(max_size=5),
                                                                       max_size=2)}) | json_values
pods = st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                              "metadata": st.just({"name": "p", "namespace": "kyma-system"})},
                             optional={"spec": spec}) | json_values


def _preferred_terms(obj: Any) -> list[Any] | None:
    try:
        value = obj["spec"]["affinity"]["nodeAffinity"][PREF]
    except (KeyError, TypeError, IndexError):
        return None
    return value if isinstance(value, list) else None


@settings(max_examples=400, deadline=None)
@given(pod=pods, present=st.booleans(), managed=st.booleans())
def test_any_pod_shape(pod: Any, present: bool, managed: bool) -> None:
    review = admission_review({"metadata": {"namespace": "kyma-system"}})
    review["request"]["object"] = pod
    request = parse_review(json.dumps(review).encode())
    labels = {MANAGED_BY_LABEL: "kyma"} if managed else {}
    decision = decide(request, ClusterContext(POOL, present, labels))
    response = review_response(request, decision)["response"]
    assert response["allowed"] is True
    if not decision.patch:
        assert decision.reason is not Reason.MUTATED
        return
    assert present and managed and decision.reason is Reason.MUTATED
    patched = jsonpatch.apply_patch(pod, decision.patch, in_place=False)
    before, after = _preferred_terms(pod), _preferred_terms(patched)
    assert after is not None
    assert after[: len(before or [])] == (before or [])  # existing terms kept, in order
    assert after[len(before or []):] == [affinity_term(POOL)]  # exactly one term appended
    assert after.count(affinity_term(POOL)) == 1
    # nothing outside spec.affinity.nodeAffinity.preferred... changes
    for key in ("requiredDuringSchedulingIgnoredDuringExecution",):
        old_na = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
        if key in old_na:
            assert patched["spec"]["affinity"]["nodeAffinity"][key] == old_na[key]
    for key in ("podAffinity", "podAntiAffinity"):
        if key in (pod["spec"].get("affinity") or {}):
            assert patched["spec"]["affinity"][key] == pod["spec"]["affinity"][key]
    assert {k: v for k, v in patched["spec"].items() if k != "affinity"} == \
        {k: v for k, v in pod["spec"].items() if k != "affinity"}
    # admitting the patched Pod again adds nothing (idempotent)
    review["request"]["object"] = patched
    again = decide(parse_review(json.dumps(review).encode()), ClusterContext(POOL, True, labels))
    assert again.patch == []
