"""deploy/snatch: the webhook configuration matches what the server and the controller expect."""

from __future__ import annotations

from pathlib import Path

import yaml

from tasks.snatch.controller import WEBHOOK_CONFIG_NAME
from tasks.snatch.mutate import MANAGED_BY_LABEL
from tasks.snatch.webhook import MUTATE_PATH

DEPLOY = Path(__file__).parents[3] / "deploy" / "snatch"


def _objects() -> dict[tuple[str, str], dict]:
    out = {}
    for f in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc and doc.get("kind") != "Kustomization":
                out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_mutating_webhook_configuration() -> None:
    objs = _objects()
    mwc = objs[("MutatingWebhookConfiguration", WEBHOOK_CONFIG_NAME)]
    (hook,) = mwc["webhooks"]
    assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
    assert hook["timeoutSeconds"] <= 5
    assert hook["namespaceSelector"]["matchLabels"] == {MANAGED_BY_LABEL: "kyma"}
    assert {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]} in \
        hook["namespaceSelector"]["matchExpressions"]
    assert hook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods"], "scope": "Namespaced"}]
    svc_ref = hook["clientConfig"]["service"]
    assert svc_ref["path"] == MUTATE_PATH
    service = objs[("Service", svc_ref["name"])]
    deployment = objs[("Deployment", "kim-snatch-controller-manager")]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    # the webhook's own Pods are excluded by the objectSelector
    (expr,) = hook["objectSelector"]["matchExpressions"]
    assert pod_labels[expr["key"]] in expr["values"] and expr["operator"] == "NotIn"


def test_rbac_covers_the_calls() -> None:
    objs = _objects()
    rules = objs[("ClusterRole", "kim-snatch-manager-role")]["rules"]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    assert {("nodes", "list"), ("namespaces", "list"), ("namespaces", "get"),
            ("mutatingwebhookconfigurations", "get"), ("mutatingwebhookconfigurations", "update")} <= granted
    binding = objs[("ClusterRoleBinding", "kim-snatch-manager-rolebinding")]
    sa = objs[("ServiceAccount", "kim-snatch-controller-manager")]
    assert binding["subjects"][0]["name"] == sa["metadata"]["name"]
