"""The reconcile toolkit: what every controller of every domain does around its pure plan.

A reconcile is read → pure plan → apply → status (docs/engine.md). The domains write the plan; this
package writes everything around it once:

==================  =====================================================================
:mod:`kube.clock`    ``now_rfc3339`` — the one way Kubernetes timestamps are written
:mod:`.conditions`   ``metav1.Condition`` dicts: build, set, find, exclusive sets (pure)
:mod:`.actions`      the writes of a plan: :class:`Action` (a Kubernetes write) and :class:`Call` (a
                     provider call), pure data
:mod:`.outcome`      :class:`Outcome`, the one thing every plan answers (writes, status patch, Event,
                     finalizer, requeue/error); the pure predicates :func:`has_finalizer`,
                     :func:`deleting`, :func:`status_changed`
:mod:`.execute`      :func:`execute`, the one executor of an Outcome (the client errors classified by
                     :class:`kube.refusal.Failure`)
:mod:`.finalizers`   add / remove a finalizer with a resourceVersion precondition
:mod:`.status`       write ``.status`` only when it changed
:mod:`.update`       :func:`update_on_conflict`: GET → pure update → PUT, again on 409 (client-go's
                     ``RetryOnConflict``), for a field kept in an object the controller does not own
:mod:`.metrics`      Prometheus collectors registered once per process, through public API only
==================  =====================================================================

Lower layer: imports ``kube`` and ``fencing`` only, never a domain.
"""

from kube.clock import now_rfc3339
from kube.refusal import Failure, Refusal
from kube.toolkit import conditions
from kube.toolkit.actions import Action, Call, Write
from kube.toolkit.conditions import Condition, condition, set_condition, set_exclusive
from kube.toolkit.execute import Executed, execute
from kube.toolkit.finalizers import add_finalizer, remove_finalizer, set_finalizers
from kube.toolkit.metrics import counter, gauge, histogram
from kube.toolkit.outcome import Event, Outcome, at_end, deleting, has_finalizer, status_changed, status_patch
from kube.toolkit.status import StatusWriter, write_status
from kube.toolkit.update import update_on_conflict

__all__ = [
    "Action",
    "Call",
    "Condition",
    "Event",
    "Executed",
    "Failure",
    "Outcome",
    "Refusal",
    "StatusWriter",
    "Write",
    "add_finalizer",
    "at_end",
    "condition",
    "conditions",
    "counter",
    "deleting",
    "execute",
    "gauge",
    "has_finalizer",
    "histogram",
    "now_rfc3339",
    "remove_finalizer",
    "set_condition",
    "set_exclusive",
    "set_finalizers",
    "status_changed",
    "status_patch",
    "update_on_conflict",
    "write_status",
]
