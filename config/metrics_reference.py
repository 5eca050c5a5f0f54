"""The metrics reference (docs/metrics.md), generated from the modules that define metrics.

``python -m config.metrics_reference [MODULE...]`` imports the modules (default: every module of the
runtime packages that defines a metric, :func:`discover`) and prints one Markdown table of the
Prometheus collectors they hold at module level: name as exposed (``_total`` on counters), type,
labels, help, the processes that export it and the defining module. ``tests/unit/config`` checks that
docs/metrics.md is its output.

Discovery is by source text, so a metric another change adds is documented without editing a list:
a module of :data:`PACKAGES` is a metric module when it calls a collector constructor
(``counter(``/``Counter(``, ``gauge``, ``histogram``, ``Summary``) with a literal name. The
processes come from :data:`PROCESSES` (module, or a prefix of it), else :func:`processes_of`'s rule.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: The runtime packages searched for metric modules (the embedded harness, kubedev and the stand-ins
#: only run under ``reconcilery up`` and are left out).
PACKAGES = ("fencing", "kube", "informers", "workers", "watchers", "webhooks", "tasks", "reconcilery")

#: Processes whose ``/metrics`` carry a metric's samples (a module imported elsewhere shows there only as
#: ``# HELP``/``# TYPE`` or a zero). Keys are exposed metric names (first), else module names or dotted
#: prefixes, the longest match wins; modules without an entry follow :func:`processes_of`'s rule.
PROCESSES: dict[str, tuple[str, ...]] = {
    "workqueue_adds_total": ("worker", "watch"),  # watch: the keys it enqueues; workers: requeues, resyncs
    "reconcilery_informer_reads_total": ("worker",),  # reconciles' reads
    "reconcilery_apigateway_apirules": ("watch",),  # counted from the watcher's APIRule events
    "reconcilery_informer_sync_wait_seconds_total": ("worker",),
    "workers.metrics": ("worker",),
    "workers.beat": ("beat",),
    "informers.metrics": ("watch", "worker"),  # reflectors: the watchers', and the workers' informers
    "watchers": ("watch",),
    "webhooks": ("webhook",),
    "tasks.snatch.metrics": ("webhook",),
    "tasks.cloud.skr.listener": ("skr-listener",),
}

#: A collector constructor called with a literal name: ``counter("x"``, ``Counter(\n    "x"``.
_DEFINES = re.compile(r"\b(?:counter|gauge|histogram|Counter|Gauge|Histogram|Summary|"
                      r"(?:Gauge|Counter|Histogram)MetricFamily)\(\s*[\"']")

HEADER = """# Metrics reference

Generated from the modules that define metrics by `python -m config.metrics_reference > docs/metrics.md`
(see tests/unit/config). Every process serves Prometheus text on `/metrics`: a worker and beat on
`RECONCILERY_METRICS_PORT`, the watchers on their `--health-port`, the webhook and the skr-listener on
their metrics port; under `reconcilery up` every process does, on a loopback port listed in
`.reconcilery/endpoints.json` (`"metrics"`), and `up`'s own process (`up`: the in-process webhooks)
exports the webhook column's metrics. Flower serves its own `flower_*` metrics on its `/metrics`; every
process adds prometheus-client's `process_*` and `python_*` series.

Names are as exposed (a counter gains `_total`; a histogram is `_bucket`, `_sum` and `_count`). Label
values are bounded: kinds, providers, states, reasons, controllers, hosts of the operator's own
configuration, HTTP codes; never an SKR, object name, namespace or key.
"""


@dataclass(frozen=True)
class MetricDoc:
    """One documented collector: ``name`` as exposed, prometheus ``type``, ``labels``, ``help``,
    ``processes`` exporting it and the ``module`` defining it."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str
    processes: tuple[str, ...]
    module: str


def discover(root: Path | None = None, packages: Iterable[str] = PACKAGES) -> list[str]:
    """The dotted names of the modules under ``packages`` (in ``root``, default the checkout this
    file is in) whose source defines a metric, sorted."""
    base = root or Path(__file__).resolve().parents[1]
    found = []
    for package in packages:
        for path in sorted((base / package).rglob("*.py")):
            if path.name == "__init__.py" or path.parts[-3:] == ("kube", "toolkit", "metrics.py"):
                continue  # kube/toolkit/metrics.py defines the helpers, not metrics
            if _DEFINES.search(path.read_text(encoding="utf-8")):
                found.append(".".join(path.relative_to(base).with_suffix("").parts))
    return sorted(found)


def processes_of(module: str, table: dict[str, tuple[str, ...]] = PROCESSES, metric: str = "") -> tuple[str, ...]:
    """The processes exporting ``metric`` (exposed name) of ``module``: ``table``'s entry for ``metric``,
    else its longest entry that is ``module`` or a dotted prefix of it; else ``webhook`` for a
    ``webhook``/``conversion`` module of a domain, ``worker`` for the rest (reconciles run in workers)."""
    if metric in table:
        return table[metric]
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        hit = table.get(".".join(parts[:n]))
        if hit is not None:
            return hit
    if module.startswith("tasks.") and any(w in parts[-1] for w in ("webhook", "conversion")):
        return ("webhook",)
    return ("worker",)


def _collectors(module: ModuleType) -> Iterator[Any]:
    """The prometheus-client collectors ``module`` holds at top level (or in a top-level dict/tuple)."""
    from prometheus_client.metrics import MetricWrapperBase

    for value in vars(module).values():
        values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple | list) else (value,)
        for item in values:
            if isinstance(item, MetricWrapperBase):
                yield item


def _exposed(name: str, type_: str) -> str:
    return f"{name}_total" if type_ == "counter" else name


def collect(modules: Iterable[str], table: dict[str, tuple[str, ...]] = PROCESSES) -> list[MetricDoc]:
    """Import ``modules`` and describe each collector they define, sorted by name. A collector held by
    several modules (re-exported) is attributed to the module it was first found in, in ``modules``'
    order. Raises ``ValueError`` when one exposed name is defined twice with another type or labels."""
    docs: dict[str, MetricDoc] = {}

    def add(collector: Any, name: str) -> None:
        for family in collector.describe():
            # labels: the one attribute prometheus-client keeps them in (no public accessor), on the
            # collector (Counter, Gauge, ...) or on the family a custom collector describes
            labels = tuple(getattr(collector, "_labelnames", ()) or getattr(family, "_labelnames", ()))
            exposed = _exposed(family.name, family.type)
            doc = MetricDoc(exposed, family.type, labels, " ".join(family.documentation.split()),
                            processes_of(name, table, exposed), name)
            known = docs.get(doc.name)
            if known is not None and (known.type, known.labels) != (doc.type, doc.labels):
                raise ValueError(f"metric {doc.name} defined in {known.module} and {name} differently")
            docs.setdefault(doc.name, doc)

    names = list(modules)
    for name in names:
        for collector in _collectors(importlib.import_module(name)):
            add(collector, name)
    # custom collectors (read at scrape time, e.g. from Redis) register on import; they are attributed
    # to the module of their class
    for collector in _custom_collectors():
        module = type(collector).__module__
        if module.split(".")[0] in PACKAGES:
            add(collector, module)
    return sorted(docs.values(), key=lambda d: d.name)


def _custom_collectors() -> list[Any]:
    """The collectors on the default registry that are not prometheus-client's metric wrappers."""
    from prometheus_client import REGISTRY
    from prometheus_client.metrics import MetricWrapperBase

    # the registry's one map of its collectors (no public accessor)
    registered = list(getattr(REGISTRY, "_collector_to_names", {}))
    return [c for c in registered if not isinstance(c, MetricWrapperBase) and hasattr(c, "describe")]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "\\<")


def markdown(docs: Iterable[MetricDoc]) -> str:
    """:data:`HEADER` and one table: Metric | Type | Labels | Help | Processes | Module."""
    rows = ["| Metric | Type | Labels | Help | Processes | Module |", "|---|---|---|---|---|---|"]
    for d in docs:
        labels = ", ".join(f"`{label}`" for label in d.labels) or "(none)"
        rows.append(f"| `{d.name}` | {d.type} | {labels} | {_cell(d.help)} | {', '.join(d.processes)} | "
                    f"`{d.module}` |")
    return HEADER + "\n" + "\n".join(rows) + "\n"


def main(modules: list[str]) -> None:
    """Print the reference of the metrics ``modules`` define (default: :func:`discover`'s)."""
    sys.stdout.write(markdown(collect(modules or discover())))


if __name__ == "__main__":
    main(sys.argv[1:])
