"""The API Gateway's part of ``reconcilery up`` (:class:`workers.domains.Local`): on the dev API server its
CRDs (and Istio's), the APIRule conversion webhook and the v1beta1 admission webhook (one listener; the
latter registered as a ValidatingWebhookConfiguration); the summary rows of APIRules, APIGateways and
RateLimits, and a ``Migration`` row per applied APIRule that was migrating from Ory Rules to Istio."""

from __future__ import annotations

import base64
import os
import time
from typing import Any

from kube import Resource, ResourceMissing, resources
from tasks.apigateway import certificate, model
from tasks.apigateway.certificate_controller import ensure_certificate
from tasks.apigateway.install import install_crds
from tasks.apigateway.settings import ApiGatewaySettings
from tasks.apigateway.webhook import SERVICE_PORT, ConversionWebhook, v1beta1_webhook_configuration
from webhooks import ThreadedListener
from workers.domains import Local, Row

#: Applied kinds whose ``status.state`` the summary shows (and ``--once`` waits for).
STATUS_KINDS = ("APIRule", "APIGateway", "RateLimit", "ExternalGateway")
SETTLED_STATES = ("Ready", "OK", "Error", "Warning", "Migrated")  # not an ExternalGateway's Processing
MIGRATION_STEP = "gateway.kyma-project.io/migration-step"
OWNER_LABELS = ("apirule.gateway.kyma-project.io/name", "apirule.gateway.kyma-project.io/namespace")


class ApiGatewayLocal(Local):
    """CRDs, the conversion webhook in ``up``'s process, and the status rows of the applied CRs."""

    def start(self) -> None:
        if not self.run.dev:  # a real cluster brings its own CRDs (and Istio's) and webhook
            return
        install_crds(self.run.kube(), istio=True, conversion=True)
        # the dev cluster allows v1beta1 APIRules (so Ory → Istio migrations run, 2 s a step: no proxies
        # to wait for), and has no kubelet to start Oathkeeper's Pods; only the controllers read them
        for name, value in (("RECONCILERY_APIRULE_V1BETA1_ACCESS", "allow"),
                            ("RECONCILERY_APIRULE_MIGRATION_SECONDS", "2"),
                            ("RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS", "0")):
            self.run.default_env(name, value)
        self._start_conversion_webhook()

    def _start_conversion_webhook(self) -> None:
        """The APIRule conversion webhook in this process, as the dev API server reaches it: the
        certificate Secret and caBundle first (the original's init step; the ``apigateway-certificate``
        controller renews them later), then the listener, then the Service
        ``kyma-system/api-gateway-webhook-service`` with Endpoints on loopback."""
        kube = self.run.kube()
        if kube.get(resources.NAMESPACE, "kyma-system") is None:
            kube.create(resources.NAMESPACE, {"metadata": {"name": "kyma-system"}})
        ensure_certificate(kube)
        namespace, name = certificate.SECRET
        # the processes' v1beta1 access (up's default or the user's), not up's own environment's
        access = ApiGatewaySettings.load({**os.environ, **self.run.env}).v1beta1_access
        listener = ThreadedListener(ConversionWebhook(lambda: kube.get(resources.SECRET, name, namespace=namespace),
                                                      host="127.0.0.1", port=0, poll_interval=2.0,
                                                      v1beta1_access=access)).start()
        self.run.on_stop(listener.stop)
        webhook = listener.listener
        meta = {"name": certificate.SERVICE_NAME, "namespace": "kyma-system"}
        kube.create(resources.SERVICE, {"metadata": meta, "spec": {
            "ports": [{"name": "https-convert", "port": SERVICE_PORT, "targetPort": webhook.port}]}})
        kube.create(resources.ENDPOINTS, {"metadata": meta, "subsets": [{
            "addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https-convert", "port": webhook.port}]}]})
        deadline = time.monotonic() + 30
        while not webhook.ready and time.monotonic() < deadline:
            time.sleep(0.1)
        self.run.endpoints["conversion_webhook"] = webhook.url
        self.run.log(f"[green]✓[/green] APIRule conversion webhook at {webhook.url} "
                     f"(Service kyma-system/{certificate.SERVICE_NAME}; v1beta1, v2alpha1 and v2 served)")
        # deploy/'s configuration: the dev API server reaches the Service through its Endpoints above;
        # caBundle: the Secret's certificate (the apigateway-certificate controller keeps it current)
        cert_pem, _ = certificate.decode_secret_data(kube.get(resources.SECRET, name, namespace=namespace))
        config = v1beta1_webhook_configuration(base64.b64encode(cert_pem or b"").decode())
        kube.create(resources.VALIDATING_WEBHOOK_CONFIGURATION, config)
        self.run.endpoints["apirule_v1beta1_webhook"] = webhook.v1beta1_url
        self.run.log(f"[green]✓[/green] APIRule v1beta1 admission webhook at {webhook.v1beta1_url} "
                     f"(v1beta1 APIRules {'allowed' if access else 'refused'}: RECONCILERY_APIRULE_V1BETA1_ACCESS)")

    def rows(self) -> list[Row]:
        """(kind, namespace/name, state, detail) of every applied APIRule, APIGateway and RateLimit."""
        rows: list[Row] = []
        applied = [obj for obj in self.run.applied if obj.get("kind") in STATUS_KINDS]
        if not applied:
            return rows
        kube = self.run.kube()
        for obj in applied:
            group, _, version = obj["apiVersion"].rpartition("/")
            if obj["kind"] == "APIRule":
                version = "v2alpha1"  # the hub: its status has a state whatever version was applied
            namespaced = obj["kind"] != "APIGateway"
            res = Resource(group, version, f"{obj['kind'].lower()}s", obj["kind"], namespaced)
            meta = obj["metadata"]
            current: dict[str, Any] = kube.get(res, meta["name"], meta.get("namespace") if namespaced else None) or {}
            status = current.get("status") or {}
            detail = str(status.get("description", "")).splitlines()
            state = str(status.get("state", "Pending"))
            if obj["kind"] == "APIRule" and status.get("observedGeneration") != (current.get("metadata") or {}).get(
                    "generation"):
                state = f"{state} (reconciling)" if status else "Pending"
            ref = f"{meta['namespace']}/{meta['name']}" if namespaced else meta["name"]
            rows.append((obj["kind"], ref, state, detail[0] if detail else ""))
            if obj["kind"] == "APIRule" and MIGRATION_STEP in (meta.get("annotations") or {}):
                rows.append(self._migration_row(current, ref))
        return rows

    def _migration_row(self, apirule: dict[str, Any], ref: str) -> Row:
        """``Migration``: ``Migrated`` once the annotation and the Ory Rules are gone (else the step
        completed last), with the Ory Rules left, where the VirtualService routes and the policies."""
        kube = self.run.kube()
        namespace, _, name = ref.partition("/")
        selector = f"{OWNER_LABELS[0]}={name},{OWNER_LABELS[1]}={namespace}"

        def owned(kind: model.Kind) -> list[dict[str, Any]]:
            res = Resource(kind.group, kind.version, kind.plural, kind.kind, True)
            try:
                return kube.list(res, namespace, label_selector=selector)
            except ResourceMissing:  # e.g. the Rule CRD removed with Oathkeeper
                return []

        rules, services, policies = owned(model.ORY_RULE), owned(model.VIRTUAL_SERVICE), owned(
            model.AUTHORIZATION_POLICY)
        targets = sorted({f"{d['host']}:{d.get('port', {}).get('number')}" for vs in services
                          for http in (vs.get("spec") or {}).get("http") or []
                          for d in (r.get("destination") or {} for r in http.get("route") or [])})
        step = ((apirule.get("metadata") or {}).get("annotations") or {}).get(MIGRATION_STEP)
        state = "Migrated" if step is None and not rules else (f"step {step} done" if step else "not started")
        return ("Migration", ref, state, f"{len(rules)} Ory Rule(s); VirtualService → {', '.join(targets)}; "
                                         f"{len(policies)} AuthorizationPolicies")

    def settled(self) -> bool:
        """Every applied APIRule, APIGateway and RateLimit has a final state."""
        return all(row[2] in SETTLED_STATES for row in self.rows())

    def hints(self) -> list[str]:
        return [f"kubectl --kubeconfig {self.run.kubeconfig} get apirules,virtualservices -A"]
