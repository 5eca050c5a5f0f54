"""The objects the APIGateway controller manages, as desired manifests (pure).

- The Kyma Gateway (api-gateway's ``internal/reconciliations/gateway``): the Istio Gateway
  ``kyma-system/kyma-gateway`` for ``*.<domain>`` (HTTPS with ``kyma-gateway-certs``, HTTP redirecting
  to HTTPS), the VirtualService ``istio-system/istio-healthz``, and the TLS material: on Gardener a
  Certificate ``istio-system/kyma-tls-cert`` and a DNSEntry ``kyma-system/kyma-gateway`` for the ingress
  gateway's load balancer; elsewhere a self-signed Secret ``istio-system/kyma-gateway-certs``.
- Ory Oathkeeper (``internal/reconciliations/oathkeeper``), in the original's order: the Rule CRD
  ``rules.oathkeeper.ory.sh``, the maester (PeerAuthentication ``ory-oathkeeper-maester-metrics``
  admitting plain-text scrapes of port 8080, ServiceAccount, ClusterRole and binding), the JWKS Secret,
  the config ConfigMap, the HorizontalPodAutoscaler ``ory-oathkeeper`` (3 to 10 replicas at 80 % CPU;
  production clusters only), the ServiceAccount ``ory-oathkeeper``, the api, maester-metrics and proxy
  Services, the Deployment (PodAntiAffinity: spread over nodes, then zones) and its PodDisruptionBudget.
- The module's NetworkPolicy ``kyma-system/kyma-project.io--api-gateway-allow``
  (``internal/networkpolicy``): DNS, the API server (443), the webhook (9443) and metrics scrapes (8080)
  for the module's Pods, while ``spec.networkPoliciesEnabled``; labelled with the owning APIGateway.

Every object carries ``kyma-project.io/module: api-gateway`` and the original's "managed by Kyma"
disclaimer annotation. Secrets whose content is generated (the self-signed certificate, the JWKS)
are described here with ``data: None``; the controller generates the data when it creates them and
never replaces existing data.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from importlib import resources as package_data
from typing import Any

import yaml

from kube import resources
from kube.resources import Resource
from tasks.apigateway import model

NAMESPACE = "kyma-system"
DISCLAIMER_ANNOTATION = "apigateways.operator.kyma-project.io/managed-by-disclaimer"
DISCLAIMER = ("DO NOT EDIT - This resource is managed by Kyma.\nAny modifications are discarded and the resource is "
              "reverted to the original state.")
MODULE_LABELS = {"kyma-project.io/module": "api-gateway"}
OPERATOR_LABELS = {
    "app.kubernetes.io/name": "api-gateway-operator",
    "app.kubernetes.io/instance": "api-gateway-operator-default",
    "app.kubernetes.io/component": "operator",
    "app.kubernetes.io/part-of": "api-gateway",
}

KYMA_GATEWAY = ("kyma-system", "kyma-gateway")
KYMA_GATEWAY_REF = "kyma-system/kyma-gateway"
HEALTHZ_VIRTUAL_SERVICE = ("istio-system", "istio-healthz")
CERTIFICATE = ("istio-system", "kyma-tls-cert")
DNS_ENTRY = ("kyma-system", "kyma-gateway")
CERT_SECRET = ("istio-system", "kyma-gateway-certs")
INGRESS_SERVICE = ("istio-system", "istio-ingressgateway")
SHOOT_INFO = ("kube-system", "shoot-info")
NON_GARDENER_DOMAIN = "local.kyma.dev"
LEGACY_UI_CONFIG_MAPS = (
    (NAMESPACE, "api-gateway-apirule-v1beta1-ui.operator.kyma-project.io"),
    (NAMESPACE, "api-gateway-apirule-v2alpha1-ui.operator.kyma-project.io"),
)
IP_STACK_ANNOTATION = "dns.gardener.cloud/ip-stack"

OATHKEEPER = "ory-oathkeeper"
OATHKEEPER_CONFIG = "ory-oathkeeper-config"
OATHKEEPER_JWKS = "ory-oathkeeper-jwks-secret"
OATHKEEPER_API = "ory-oathkeeper-api"
OATHKEEPER_PROXY = "ory-oathkeeper-proxy"
MAESTER_ACCOUNT = "oathkeeper-maester-account"
MAESTER_ROLE = "oathkeeper-maester-role"
MAESTER_BINDING = "oathkeeper-maester-role-binding"
MAESTER_PEER_AUTHENTICATION = "ory-oathkeeper-maester-metrics"
MAESTER_METRICS = "ory-oathkeeper-maester-metrics"
OATHKEEPER_ACCOUNT = "ory-oathkeeper"
ORY_RULE_CRD = "rules.oathkeeper.ory.sh"
#: The HPA's bounds and CPU target (api-gateway's ``oathkeeper/hpa.yaml``).
HPA_MIN_REPLICAS = 3
HPA_MAX_REPLICAS = 10
HPA_CPU_UTILIZATION = 80
NETWORK_POLICY = (NAMESPACE, "kyma-project.io--api-gateway-allow")
#: Label naming the APIGateway CR that owns the NetworkPolicy (cluster-scoped owner: no ownerReference).
NETWORK_POLICY_OWNER_LABEL = "api-gateway.kyma-project.io/managed-by"
OATHKEEPER_SELECTOR = {"app.kubernetes.io/instance": "ory", "app.kubernetes.io/name": "oathkeeper"}

PEER_AUTHENTICATION = Resource("security.istio.io", "v1beta1", "peerauthentications", "PeerAuthentication", True)
NETWORK_POLICY_RESOURCE = resources.NETWORK_POLICY


def _kind(kind: model.Kind) -> Resource:
    return Resource(kind.group, kind.version, kind.plural, kind.kind, True)


#: The resource of every kind the controller writes, by ``kind``.
RESOURCES: dict[str, Resource] = {
    "Gateway": Resource("networking.istio.io", "v1alpha3", "gateways", "Gateway", True),
    "VirtualService": _kind(model.VIRTUAL_SERVICE),
    "Certificate": _kind(model.CERTIFICATE),
    "DNSEntry": _kind(model.DNS_ENTRY),
    "Secret": resources.SECRET,
    "ConfigMap": resources.CONFIGMAP,
    "Service": resources.SERVICE,
    "ServiceAccount": resources.SERVICE_ACCOUNT,
    "Deployment": resources.DEPLOYMENT,
    "PodDisruptionBudget": resources.PDB,
    "ClusterRole": resources.CLUSTER_ROLE,
    "ClusterRoleBinding": resources.CLUSTER_ROLE_BINDING,
    "HorizontalPodAutoscaler": resources.HPA,
    "PeerAuthentication": PEER_AUTHENTICATION,
    "NetworkPolicy": NETWORK_POLICY_RESOURCE,
    "CustomResourceDefinition": resources.CRD,
}


@dataclass(frozen=True)
class Images:
    """Container images of the Oathkeeper Deployment (environment ``RECONCILERY_OATHKEEPER_IMAGE``,
    ``RECONCILERY_OATHKEEPER_MAESTER_IMAGE``, ``RECONCILERY_BUSYBOX_IMAGE``, read by
    :mod:`tasks.apigateway.settings`)."""

    oathkeeper: str = "oryd/oathkeeper:v0.38.25-beta.1"
    maester: str = "oryd/oathkeeper-maester:v0.1.10"
    busybox: str = "busybox:1.36"


def _meta(name: str, namespace: str | None, labels: dict[str, str] | None = None,
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**(labels or {}), **MODULE_LABELS}
    meta["annotations"] = {DISCLAIMER_ANNOTATION: DISCLAIMER, **(annotations or {})}
    return meta


def kyma_gateway(domain: str) -> dict[str, Any]:
    """``kyma-system/kyma-gateway``: HTTPS 443 (TLS SIMPLE, ``kyma-gateway-certs``) and HTTP 80 redirecting
    to HTTPS, both for ``*.<domain>``, on the default ingress gateway."""
    hosts = [f"*.{domain}"]
    return {
        "apiVersion": "networking.istio.io/v1alpha3", "kind": "Gateway",
        "metadata": _meta(KYMA_GATEWAY[1], KYMA_GATEWAY[0], OPERATOR_LABELS),
        "spec": {
            "selector": {"app": "istio-ingressgateway", "istio": "ingressgateway"},
            "servers": [
                {"port": {"number": 443, "name": "https", "protocol": "HTTPS"},
                 "tls": {"mode": "SIMPLE", "credentialName": CERT_SECRET[1]}, "hosts": list(hosts)},
                {"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "tls": {"httpsRedirect": True},
                 "hosts": list(hosts)},
            ],
        },
    }


def healthz_virtual_service(domain: str) -> dict[str, Any]:
    """``istio-system/istio-healthz``: ``healthz.<domain>/healthz/ready`` → the ingress gateway's status port."""
    return {
        "apiVersion": model.VIRTUAL_SERVICE.api_version, "kind": "VirtualService",
        "metadata": _meta(HEALTHZ_VIRTUAL_SERVICE[1], HEALTHZ_VIRTUAL_SERVICE[0], OPERATOR_LABELS),
        "spec": {
            "hosts": [f"healthz.{domain}"],
            "gateways": [KYMA_GATEWAY_REF],
            "http": [{"match": [{"uri": {"exact": "/healthz/ready"}}],
                      "route": [{"destination": {"port": {"number": 15021},
                                                 "host": "istio-ingressgateway.istio-system.svc.cluster.local"}}]}],
        },
    }


def certificate(domain: str) -> dict[str, Any]:
    """Gardener's Certificate ``istio-system/kyma-tls-cert`` for ``*.<domain>`` into ``kyma-gateway-certs``."""
    labels = {**OPERATOR_LABELS, **MODULE_LABELS}
    return {
        "apiVersion": model.CERTIFICATE.api_version, "kind": "Certificate",
        "metadata": _meta(CERTIFICATE[1], CERTIFICATE[0], OPERATOR_LABELS),
        "spec": {"secretName": CERT_SECRET[1], "commonName": f"*.{domain}", "issuerRef": {"name": "garden"},
                 "privateKey": {"size": 4096}, "secretLabels": labels},
    }


def dns_entry(domain: str, targets: list[str], ip_stack: str) -> dict[str, Any]:
    """Gardener's DNSEntry ``kyma-system/kyma-gateway``: ``*.<domain>`` → the ingress gateway's load
    balancer (``targets``); the ip-stack annotation for IPv6 and dual-stack Services."""
    annotations = {"dns.gardener.cloud/class": "garden"}
    if ip_stack in ("ipv6", "dual-stack"):
        annotations[IP_STACK_ANNOTATION] = ip_stack
    return {
        "apiVersion": model.DNS_ENTRY.api_version, "kind": "DNSEntry",
        "metadata": _meta(DNS_ENTRY[1], DNS_ENTRY[0], OPERATOR_LABELS, annotations),
        "spec": {"dnsName": f"*.{domain}", "ttl": 600, "targets": list(targets)},
    }


def certificate_secret() -> dict[str, Any]:
    """The self-signed ``istio-system/kyma-gateway-certs`` of clusters without Gardener (data generated
    by the controller when it creates the Secret)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": _meta(CERT_SECRET[1], CERT_SECRET[0], OPERATOR_LABELS), "data": None}


@functools.cache
def _ory_rule_crd() -> dict[str, Any]:
    text = package_data.files("tasks.apigateway").joinpath("crds", "oathkeeper", f"{ORY_RULE_CRD}.yaml").read_text()
    crd: dict[str, Any] = yaml.safe_load(text)
    return crd


def ory_rule_crd() -> dict[str, Any]:
    """The CRD ``rules.oathkeeper.ory.sh`` (package data ``crds/oathkeeper``, also what ``install`` applies)."""
    crd = copy.deepcopy(_ory_rule_crd())
    meta = crd["metadata"]
    crd["metadata"] = {**meta, **_meta(ORY_RULE_CRD, None, meta.get("labels"))}
    return crd


def hpa() -> dict[str, Any]:
    """HorizontalPodAutoscaler ``kyma-system/ory-oathkeeper``: the Deployment between 3 and 10 replicas at
    80 % average CPU utilisation (``oathkeeper/hpa.yaml``)."""
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(OATHKEEPER, NAMESPACE, {"app": "oathkeeper", **OATHKEEPER_SELECTOR}),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": OATHKEEPER},
            "minReplicas": HPA_MIN_REPLICAS, "maxReplicas": HPA_MAX_REPLICAS,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": HPA_CPU_UTILIZATION}}}],
        },
    }


def network_policy(owner: str) -> dict[str, Any]:
    """NetworkPolicy ``kyma-system/kyma-project.io--api-gateway-allow`` for the module's Pods (label
    ``kyma-project.io/module: api-gateway``): egress to DNS (kube-dns 8053, node-local-dns 53, any 53) and
    443, ingress to the webhook (9443) from anywhere and to metrics (8080) from scrapers and Kyma modules
    (``internal/networkpolicy/operator_networkpolicy.yaml``). ``owner``: the APIGateway CR's name."""
    dns = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    kube_system = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    labels = {"operator.kyma-project.io/managed-by": "kyma", NETWORK_POLICY_OWNER_LABEL: owner}
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": _meta(NETWORK_POLICY[1], NETWORK_POLICY[0], labels),
        "spec": {
            "podSelector": {"matchLabels": dict(MODULE_LABELS)},
            "policyTypes": ["Egress", "Ingress"],
            "egress": [
                {"ports": [{"port": 443, "protocol": "TCP"}]},
                {"ports": dns, "to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]},
                {"ports": [{"port": 8053, "protocol": "UDP"}, {"port": 8053, "protocol": "TCP"}],
                 "to": [{**kube_system, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]},
                {"ports": dns, "to": [{**kube_system, "podSelector": {"matchLabels": {"k8s-app": "node-local-dns"}}}]},
            ],
            "ingress": [
                {"ports": [{"port": 9443, "protocol": "TCP"}], "from": [{"namespaceSelector": {}}]},
                {"ports": [{"port": 8080, "protocol": "TCP"}], "from": [
                    {"podSelector": {"matchLabels": {"networking.kyma-project.io/metrics-scraping": "allowed"}},
                     "namespaceSelector": {}},
                    {"podSelector": {"matchExpressions": [{"operator": "Exists", "key": "kyma-project.io/module"}]},
                     "namespaceSelector": {}}]},
            ],
        },
    }


def oathkeeper(images: Images, replicas: int, autoscaled: bool = True) -> list[dict[str, Any]]:
    """Ory Oathkeeper's objects, in the original's apply order (the Deployment's dependencies first).
    ``autoscaled``: with the HorizontalPodAutoscaler (production clusters; evaluation clusters run one
    replica without it)."""
    labels = {"app": "oathkeeper", **OATHKEEPER_SELECTOR}
    config = (
        "serve:\n  api:\n    port: 4456\n  proxy:\n    port: 4455\n    timeout:\n      read: 120s\n"
        "access_rules:\n  repositories:\n  - file:///etc/rules/access-rules.json\n"
        "authenticators:\n  anonymous: {enabled: true}\n  noop: {enabled: true}\n  unauthorized: {enabled: true}\n"
        "  cookie_session: {enabled: true}\n  oauth2_client_credentials: {enabled: true}\n"
        "  oauth2_introspection: {enabled: true}\n  jwt: {enabled: true}\n"
        "authorizers:\n  allow: {enabled: true}\n"
        "mutators:\n  noop: {enabled: true}\n  header: {enabled: true}\n  cookie: {enabled: true}\n"
        "  id_token: {enabled: true, config: {issuer_url: https://oathkeeper.kyma-system.svc.cluster.local, "
        "jwks_url: file:///etc/secrets/jwks.json}}\n"
    )
    affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "oathkeeper"}},
                                            "topologyKey": key}}
        for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")]}}
    security = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "privileged": False,
                "runAsNonRoot": True}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _meta(OATHKEEPER, NAMESPACE, {"mode": "sidecar", **labels}),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(OATHKEEPER_SELECTOR)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"sidecar.istio.io/inject": "true", **OATHKEEPER_SELECTOR, **MODULE_LABELS},
                             "annotations": {"readiness.status.sidecar.istio.io/initialDelaySeconds": "10"}},
                "spec": {
                    "serviceAccountName": MAESTER_ACCOUNT,
                    "affinity": affinity,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "initContainers": [{"name": "init", "image": images.busybox,
                                        "command": ["sh", "-c", "touch /etc/rules/access-rules.json\n"
                                                    "chmod 666 /etc/rules/access-rules.json\n"],
                                        "securityContext": {**security, "runAsUser": 65534, "runAsGroup": 65534},
                                        "volumeMounts": [{"name": "oathkeeper-rules-volume",
                                                          "mountPath": "/etc/rules"}]}],
                    "containers": [
                        {"name": "oathkeeper", "image": images.oathkeeper,
                         "command": ["oathkeeper", "serve", "--config", "/etc/config/config.yaml"],
                         "env": [{"name": "MUTATORS_ID_TOKEN_CONFIG_JWKS_URL", "value": "file:///etc/secrets/jwks.json"}],
                         "ports": [{"name": "http-api", "containerPort": 4456, "protocol": "TCP"},
                                   {"name": "http-proxy", "containerPort": 4455, "protocol": "TCP"}],
                         "readinessProbe": {"httpGet": {"path": "/health/ready", "port": "http-api"},
                                            "initialDelaySeconds": 45, "periodSeconds": 10, "failureThreshold": 40},
                         "livenessProbe": {"httpGet": {"path": "/health/alive", "port": "http-api"},
                                           "periodSeconds": 10, "failureThreshold": 10},
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                       "limits": {"cpu": "10", "memory": "512Mi"}},
                         "securityContext": {**security, "runAsUser": 10000, "runAsGroup": 10001},
                         "volumeMounts": [
                             {"name": "oathkeeper-config-volume", "mountPath": "/etc/config", "readOnly": True},
                             {"name": "oathkeeper-rules-volume", "mountPath": "/etc/rules", "readOnly": True},
                             {"name": "oathkeeper-secrets-volume", "mountPath": "/etc/secrets", "readOnly": True}]},
                        {"name": "oathkeeper-maester", "image": images.maester, "command": ["/manager"],
                         "args": ["--metrics-addr=0.0.0.0:8080", "sidecar",
                                  "--rulesFilePath=/etc/rules/access-rules.json"],
                         "env": [{"name": "mutatorsAvailable", "value": "noop,id_token,header,cookie,hydrator"}],
                         "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                                       "limits": {"cpu": "400m", "memory": "1Gi"}},
                         "securityContext": {**security, "runAsUser": 10010, "runAsGroup": 10011},
                         "volumeMounts": [{"name": "oathkeeper-rules-volume", "mountPath": "/etc/rules"}]},
                    ],
                    "volumes": [
                        {"name": "oathkeeper-config-volume", "configMap": {"name": OATHKEEPER_CONFIG}},
                        {"name": "oathkeeper-rules-volume", "emptyDir": {}},
                        {"name": "oathkeeper-secrets-volume", "secret": {"secretName": OATHKEEPER_JWKS}},
                    ],
                },
            },
        },
    }

    def service(name: str, component: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": _meta(name, NAMESPACE, {**labels, "app.kubernetes.io/component": component}),
                "spec": {"type": "ClusterIP", "ports": ports, "selector": dict(OATHKEEPER_SELECTOR)}}

    maester_metrics = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": _meta(MAESTER_METRICS, NAMESPACE,
                          {**OATHKEEPER_SELECTOR, "app.kubernetes.io/name": "oathkeeper-maester", "mode": "sidecar"},
                          {"prometheus.io/port": "8080", "prometheus.io/scheme": "http",
                           "prometheus.io/scrape": "true"}),
        "spec": {"type": "ClusterIP", "selector": dict(OATHKEEPER_SELECTOR),
                 "ports": [{"name": "http-metrics", "port": 8080, "protocol": "TCP", "targetPort": 8080}]},
    }
    return [
        ory_rule_crd(),
        {"apiVersion": "security.istio.io/v1beta1", "kind": "PeerAuthentication",
         "metadata": _meta(MAESTER_PEER_AUTHENTICATION, NAMESPACE),
         "spec": {"selector": {"matchLabels": dict(OATHKEEPER_SELECTOR)},
                  "portLevelMtls": {"8080": {"mode": "PERMISSIVE"}}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(MAESTER_ACCOUNT, NAMESPACE)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": _meta(MAESTER_ROLE, None),
         "rules": [{"apiGroups": ["oathkeeper.ory.sh"], "resources": ["rules"], "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["oathkeeper.ory.sh"], "resources": ["rules/status"],
                    "verbs": ["get", "update", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": _meta(MAESTER_BINDING, None),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MAESTER_ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": MAESTER_ACCOUNT, "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": _meta(OATHKEEPER_JWKS, NAMESPACE),
         "data": None},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(OATHKEEPER_CONFIG, NAMESPACE),
         "data": {"config.yaml": config}},
        *([hpa()] if autoscaled else []),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(OATHKEEPER_ACCOUNT, NAMESPACE)},
        service(OATHKEEPER_API, "api", [{"name": "http", "port": 4456, "protocol": "TCP", "targetPort": "http-api"}]),
        maester_metrics,
        service(OATHKEEPER_PROXY, "proxy", [
            {"name": "http", "port": 4455, "protocol": "TCP", "targetPort": "http-proxy"},
            {"name": "tcp-status-port", "port": 15020, "protocol": "TCP", "targetPort": 15020}]),
        deployment,
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(OATHKEEPER, NAMESPACE),
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(OATHKEEPER_SELECTOR)}}},
    ]


def ref(obj: dict[str, Any]) -> tuple[str, str, str]:
    """``(kind, namespace, name)`` of a manifest (namespace ``""`` for cluster-scoped kinds)."""
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))


def oathkeeper_refs() -> list[tuple[str, str, str]]:
    """``(kind, namespace, name)`` of every Oathkeeper object (what to delete when it is not wanted)."""
    return [ref(o) for o in oathkeeper(Images(), 1, autoscaled=True)]


def network_policy_refs() -> list[tuple[str, str, str]]:
    """``(kind, namespace, name)`` of the module's NetworkPolicies."""
    return [("NetworkPolicy", *NETWORK_POLICY)]


def kyma_gateway_refs() -> list[tuple[str, str, str]]:
    """``(kind, namespace, name)`` of every Kyma Gateway object, Gardener's included."""
    return [("Gateway", *KYMA_GATEWAY), ("VirtualService", *HEALTHZ_VIRTUAL_SERVICE), ("Certificate", *CERTIFICATE),
            ("DNSEntry", *DNS_ENTRY), ("Secret", *CERT_SECRET)]
