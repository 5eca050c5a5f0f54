"""The v1beta1 APIRule admission decision (pure): CREATE, UPDATE and DELETE refused without v1beta1 access.

Ported from api-gateway 3.4.0's ``internal/webhook/gateway/v1beta1/apirule_webhook.go`` (a
controller-runtime ``CustomValidator`` at ``/validate-gateway-kyma-project-io-v1beta1-apirule``):

- ``CREATE``, ``UPDATE``, ``DELETE``: the operation's counter moves on every request, allowed or not
  (``api_gateway_apirule_v1beta1_{create,update,delete}_actions_total``, "APIRule v1beta1 ... actions
  received"); the request is refused with :data:`NOT_SUPPORTED` unless v1beta1 access is allowed. The
  original fails closed: an error while checking access refuses too, so does ours (:func:`decide` is
  given the decision as a boolean; the caller passes ``False`` when it cannot tell);
- ``CONNECT``: allowed, nothing counted (controller-runtime's validator does not validate it);
- any other operation: refused with HTTP code 400 ``unknown operation "<op>"`` (controller-runtime's
  ``Errored(http.StatusBadRequest, ...)``), nothing counted.

A refusal is controller-runtime's ``admission.Denied``: ``allowed: false`` with ``status`` code 403,
reason ``Forbidden`` and the message; an allowed answer carries ``status`` code 200. The access decision
is the controller's (``RECONCILERY_APIRULE_V1BETA1_ACCESS``, standing for the signed ConfigMap of the
original's ``internal/access``): the webhook never refuses what the controller would reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The path of the original's validating webhook.
PATH = "/validate-gateway-kyma-project-io-v1beta1-apirule"
#: The original's refusal, word for word.
NOT_SUPPORTED = "v1beta1 APIRule version is no longer supported, please use v2 instead"
#: Operations the webhook validates (each has its counter).
VALIDATED = ("CREATE", "UPDATE", "DELETE")


@dataclass(frozen=True)
class Verdict:
    """The decision on one admission request.

    Attributes:
        allowed: the request may proceed.
        code: the ``status.code`` of the answer (200 allowed, 403 refused, 400 unknown operation).
        message: the refusal's message (``""`` when allowed).
        counted: the operation whose counter moves (``"create"``, ``"update"``, ``"delete"``), or ``None``.
    """

    allowed: bool
    code: int
    message: str = ""
    counted: str | None = None

    def response(self) -> dict[str, Any]:
        """The AdmissionReview ``response`` fields (without ``uid``) as controller-runtime answers them."""
        if self.allowed:
            return {"allowed": True, "status": {"metadata": {}, "code": self.code}}
        reason = "Forbidden" if self.code == 403 else "BadRequest"
        return {"allowed": False, "status": {"metadata": {}, "code": self.code, "reason": reason,
                                             "message": self.message}}


def decide(operation: Any, access: bool) -> Verdict:
    """The verdict on an admission request's ``operation`` (``request.operation``, untrusted: any JSON
    value) given whether v1beta1 access is allowed (module doc)."""
    if operation == "CONNECT":
        return Verdict(True, 200)
    if not isinstance(operation, str) or operation not in VALIDATED:
        shown = operation if isinstance(operation, str) and len(operation) <= 64 else "?"
        return Verdict(False, 400, f'unknown operation "{shown}"')
    counted = operation.lower()
    if access:
        return Verdict(True, 200, counted=counted)
    return Verdict(False, 403, NOT_SUPPORTED, counted)


def decide_request(request: Mapping[str, Any], access: bool) -> Verdict:
    """:func:`decide` for an AdmissionReview's ``request`` object."""
    return decide(request.get("operation"), access)
