"""The reconcile toolkit: what every controller of every domain does around its pure plan.

A reconcile is read → pure plan → apply → status (DESIGN.md). The domains write the plan; this
package writes everything around it once:

==================  =====================================================================
:mod:`kube.clock`    ``now_rfc3339`` — the one way Kubernetes timestamps are written
:mod:`.conditions`   ``metav1.Condition`` dicts: build, set, find, exclusive sets (pure)
:mod:`.step`         :class:`Step`, the pure outcome of a plan (status patch, Event, finalizer,
                     requeue/error), and :func:`status_patch` (pure)
:mod:`.finalizers`   add / remove a finalizer with a resourceVersion precondition
:mod:`.status`       write ``.status`` only when it changed; :func:`carry_out` applies a Step
:mod:`.apply`        :class:`Action` (create / update / delete) and :func:`apply_actions`
:mod:`.update`       :func:`update_on_conflict`: GET → pure update → PUT, again on 409 (client-go's
                     ``RetryOnConflict``), for a field kept in an object the controller does not own
:mod:`.metrics`      Prometheus collectors registered once per process, through public API only
==================  =====================================================================

Lower layer: imports ``kube`` and ``fencing`` only, never a domain.
"""

from kube.clock import now_rfc3339
from kube.toolkit import conditions
from kube.toolkit.actions import Action
from kube.toolkit.apply import ApplyError, apply_actions
from kube.toolkit.conditions import Condition, condition, set_condition, set_exclusive
from kube.toolkit.finalizers import add_finalizer, deleting, has_finalizer, remove_finalizer, set_finalizers
from kube.toolkit.metrics import counter, gauge, histogram
from kube.toolkit.status import StatusWriter, carry_out, write_status
from kube.toolkit.step import Event, Step, status_patch
from kube.toolkit.update import update_on_conflict

__all__ = [
    "Action",
    "ApplyError",
    "Condition",
    "Event",
    "StatusWriter",
    "Step",
    "add_finalizer",
    "apply_actions",
    "carry_out",
    "condition",
    "conditions",
    "counter",
    "deleting",
    "gauge",
    "has_finalizer",
    "histogram",
    "now_rfc3339",
    "remove_finalizer",
    "set_condition",
    "set_exclusive",
    "set_finalizers",
    "status_patch",
    "update_on_conflict",
    "write_status",
]
