"""Snatch's part of ``reconcilery up`` (:class:`workers.domains.Local`): the admission webhook in ``up``'s
process (registered with the dev API server), and a summary row per applied Pod."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from kube import resources
from tasks.snatch.mutate import POOL_LABEL, ClusterContext, admission_review, decide, parse_review
from tasks.snatch.webhook import dev_webhook_configuration, start_dev_webhook
from workers.domains import Local, Row

SNATCH_POOL = "cpu-worker-0"  # the Kyma worker pool of the local run (examples/snatch)


class SnatchLocal(Local):
    """The Snatch webhook on loopback; on the dev API server also its MutatingWebhookConfiguration."""

    def start(self) -> None:
        """Run the Snatch webhook in this process; on the dev API server also register it (a
        MutatingWebhookConfiguration with the dev CA as caBundle) so Pods are mutated as in a cluster."""
        run = self.run
        url, ca_path, stop = start_dev_webhook(run.state_dir, run.kubeconfig, SNATCH_POOL)
        run.on_stop(stop)
        run.endpoints.update(webhook=url, webhook_ca=ca_path)
        run.env["RECONCILERY_SNATCH_CERT_DIR"] = str(Path(ca_path).parent)
        run.log(f"[green]✓[/green] Snatch webhook at {url}")
        if run.dev:  # never register a loopback webhook on a real cluster
            config = dev_webhook_configuration(url)
            for hook in config["webhooks"]:
                hook["clientConfig"]["caBundle"] = base64.b64encode(Path(ca_path).read_bytes()).decode()
            run.kube().create(resources.MUTATING_WEBHOOK_CONFIGURATION, config)
            run.log(f"[green]✓[/green] MutatingWebhookConfiguration {config['metadata']['name']} "
                    "(the dev API server calls it)")

    def rows(self) -> list[Row]:
        """One row per applied Pod: ``mutated`` when it carries Snatch's preferred pool term, else
        ``unchanged`` with the reason Snatch would give for the applied manifest now."""
        pods = [o for o in self.run.applied if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
        if not pods:
            return []
        kube = self.run.kube()
        pool_present = bool(kube.list(resources.NODE, label_selector=f"{POOL_LABEL}={SNATCH_POOL}"))
        rows: list[Row] = []
        for obj in pods:
            meta = obj["metadata"]
            current: dict[str, Any] = kube.get(resources.POD, meta["name"], meta["namespace"]) or {}
            terms = (((current.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution") or []
            if any(e.get("key") == POOL_LABEL for t in terms if isinstance(t, dict)
                   for e in (t.get("preference") or {}).get("matchExpressions") or [] if isinstance(e, dict)):
                rows.append(("Pod", f"{meta['namespace']}/{meta['name']}", "mutated",
                             f"preferred node affinity {POOL_LABEL} In [{SNATCH_POOL}]"))
                continue
            original = next((d for d in self.run.documents if d.get("kind") == "Pod"
                             and (d.get("metadata") or {}).get("name") == meta["name"]
                             and (d.get("metadata") or {}).get("namespace", "default") == meta["namespace"]), obj)
            namespace = kube.get(resources.NAMESPACE, meta["namespace"]) or {}
            labels = (namespace.get("metadata") or {}).get("labels") or {}
            review = admission_review({**original, "metadata": {**original.get("metadata", {}),
                                                                 "namespace": meta["namespace"]}})
            decision = decide(parse_review(review, None), ClusterContext(SNATCH_POOL, pool_present, labels))
            detail = decision.message if not decision.mutated else "not mutated at admission (webhook not called)"
            rows.append(("Pod", f"{meta['namespace']}/{meta['name']}", "unchanged", detail))
        return rows
