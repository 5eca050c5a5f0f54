"""Which namespace may use another's: the permission a Namespace's annotation grants (pure).

An APIRule writes its AuthorizationPolicies and RequestAuthentications into its Service's namespace,
and an ExternalGateway copies the CA of ``spec.caSecretRef`` from a Secret's namespace. Both are
allowed without asking in the object's own namespace; in another namespace only when that Namespace
says so in an annotation that only whoever may edit the Namespace (the cluster's admin, not a
namespace's users) can set:

- :data:`ALLOW_APIRULES` (``gateway.kyma-project.io/allow-apirules-from``) on the Service's Namespace;
- :data:`ALLOW_EXTERNALGATEWAYS` (``gateway.kyma-project.io/allow-externalgateways-from``) on the
  CA Secret's Namespace.

The value is a comma-separated list of namespace names (spaces around them ignored) or ``*`` (every
namespace). Not in the original: it writes into and reads from any namespace (issue 27).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.apigateway.model import APIRule
from tasks.apigateway.parsing import ValidationFailure
from tasks.apigateway.v1beta1.model import looks_v1beta1

#: Annotation of a Namespace: the namespaces whose APIRules may route to its Services (and write
#: their AuthorizationPolicies and RequestAuthentications into it).
ALLOW_APIRULES = "gateway.kyma-project.io/allow-apirules-from"
#: Annotation of a Namespace: the namespaces whose ExternalGateways may use its Secrets as their CA.
ALLOW_EXTERNALGATEWAYS = "gateway.kyma-project.io/allow-externalgateways-from"
#: The value (or one entry of it) that allows every namespace.
ANY = "*"


def allowed_sources(namespace: Mapping[str, Any] | None, annotation: str) -> frozenset[str]:
    """The entries of ``annotation`` on the Namespace manifest ``namespace`` (``None``: not found):
    namespace names, or :data:`ANY`. Empty when the Namespace or its annotation is missing or the
    value is no string. Linear in the value's length."""
    meta = (namespace or {}).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(annotation) if isinstance(annotations, dict) else None
    if not isinstance(value, str):
        return frozenset()
    return frozenset(e for e in (part.strip() for part in value.split(",")) if e)


def allows(target: str, source: str, namespace: Mapping[str, Any] | None, annotation: str) -> bool:
    """Whether an object of namespace ``source`` may use namespace ``target``: always when they are the
    same; otherwise only when ``namespace`` (the manifest of Namespace ``target``, ``None`` when not
    found) lists ``source`` or :data:`ANY` in ``annotation``."""
    if target == source:
        return True
    meta = (namespace or {}).get("metadata")
    if not isinstance(meta, dict) or meta.get("name") != target:
        return False
    entries = allowed_sources(namespace, annotation)
    return ANY in entries or source in entries


def foreign_service_namespaces(rule: APIRule) -> list[tuple[str, str]]:
    """``(attribute, namespace)`` of every Service namespace of ``rule`` other than its own, in rule
    order, each namespace once: the namespaces its AuthorizationPolicies and RequestAuthentications
    would be written into. v2 rules by ``rule.service`` → ``spec.service`` (``FindServiceNamespace``);
    v1beta1 rules (``original-version: v1beta1``, or a v1beta1 object) by their v1beta1 spec too."""
    found: dict[str, str] = {}

    def add(attribute: str, namespace: str) -> None:
        if namespace and namespace != rule.namespace and namespace not in found:
            found[namespace] = attribute

    for i, r in enumerate(rule.rules):
        own = r.service is not None and bool(r.service.namespace)
        add(f".spec.rules[{i}].service.namespace" if own else ".spec.service.namespace", rule.service_namespace(r))
    if rule.original_version == "v1beta1" or (rule.original_version is None and looks_v1beta1(rule.raw)):
        v1 = rule.v1beta1
        for i, r1 in enumerate(v1.rules):
            own = r1.service is not None and r1.service.namespace is not None
            add(f".spec.rules[{i}].service.namespace" if own else ".spec.service.namespace", v1.service_namespace(r1))
    return [(attribute, namespace) for namespace, attribute in found.items()]


def service_namespace_failures(rule: APIRule, namespaces: Mapping[str, Mapping[str, Any]]) -> list[
        ValidationFailure]:
    """A failure per Service namespace of ``rule`` other than its own whose Namespace (in
    ``namespaces``, by name; absent = not found) does not list the APIRule's namespace (or ``*``) in
    :data:`ALLOW_APIRULES`. The message is the same whether that Namespace exists or not, and names
    only what the APIRule's author wrote."""
    return [
        ValidationFailure(attribute, (
            f'Namespace "{namespace}" does not allow APIRules of namespace "{rule.namespace}": '
            f"its annotation {ALLOW_APIRULES} must list \"{rule.namespace}\" or \"{ANY}\""))
        for attribute, namespace in foreign_service_namespaces(rule)
        if not allows(namespace, rule.namespace, namespaces.get(namespace), ALLOW_APIRULES)
    ]
