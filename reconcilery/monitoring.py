"""The monitoring component's artefacts (``deploy/components/monitoring``): PromQL metric names, and the
PrometheusRule generated from the plain rules file (pure functions; file I/O in :func:`names_used` and
:func:`main` only).

The plain Prometheus rules file ``rules/reconcilery.rules.yaml`` is the one source of the alerts: promtool
checks and tests it, the compose Prometheus loads it, and ``prometheusrule.yaml`` (for the Prometheus
Operator) is generated from it::

    python -m reconcilery.monitoring          # regenerate prometheusrule.yaml
    python -m reconcilery.monitoring --check  # exit 1 when it is stale
    python -m reconcilery.monitoring --dashboard-rules > q.yaml && promtool check rules q.yaml  # panel PromQL

``tests/unit/test_monitoring.py`` checks that the generated file is current and that every metric a
dashboard panel or an alert names (:func:`names_used`) is one the processes export.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "COMPONENT",
    "DASHBOARDS",
    "PROMETHEUS_RULE_FILE",
    "RULES_FILE",
    "dashboard_queries",
    "dashboard_rules",
    "exported_names",
    "family",
    "main",
    "metric_names",
    "names_used",
    "prometheus_rule",
    "queries",
    "render_prometheus_rule",
    "rule_queries",
]

#: ``deploy/components/monitoring`` of a source checkout (the wheel does not ship deploy/).
COMPONENT = Path(__file__).resolve().parents[1] / "deploy" / "components" / "monitoring"
RULES_FILE = COMPONENT / "rules" / "reconcilery.rules.yaml"
PROMETHEUS_RULE_FILE = COMPONENT / "prometheusrule.yaml"
DASHBOARDS = COMPONENT / "dashboards"

#: PromQL words that look like metric names but are not: aggregations, binary and set operators,
#: modifiers, and the special float values (functions are recognised by the ``(`` that follows them).
KEYWORDS = frozenset({
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "limitk", "limit_ratio", "by", "without", "on", "ignoring", "group_left", "group_right",
    "bool", "and", "or", "unless", "atan2", "offset", "start", "end", "inf", "nan",
})

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
#: ``label_values(metric_or_query, label)`` of a Grafana template variable: the label is not a metric.
_LABEL_VALUES = re.compile(r"\blabel_values\s*\((.*),\s*[a-zA-Z_]\w*\s*\)\s*$", re.S)
_TOKEN = re.compile(r"0x[0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])*|[a-zA-Z_:][\w:]*")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def family(name: str) -> str:
    """The metric family of a series name as the contract writes it: a histogram's (or summary's)
    ``_bucket``/``_sum``/``_count`` stripped; a counter keeps its exposed ``_total``."""
    for suffix in _HISTOGRAM_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def metric_names(query: str) -> set[str]:
    """The metric names PromQL ``query`` selects (series names, suffixes kept): its identifiers that are
    not functions, keywords, label names (in ``{}`` matchers or by/without/on/ignoring lists), label
    values, durations or numbers. Grafana variables (``$__rate_interval``, ``${datasource}``) and
    ``label_values(query, label)`` are understood. Pure; never raises on malformed text (it finds less)."""
    text = _STRING.sub(" ", query)
    text = _GRAFANA_VARIABLE.sub(" ", text)
    found = _LABEL_VALUES.search(text)
    if found:
        text = found.group(1)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    names: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if not (token[0].isalpha() or token[0] in "_:") or token.lower() in KEYWORDS:
            continue
        if text[match.end():].lstrip().startswith("("):  # a function call
            continue
        names.add(token)
    return names


def _panels(panels: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])  # a collapsed row keeps its panels inside


def dashboard_queries(dashboard: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(where, PromQL)`` of every panel target and query template variable of a Grafana dashboard
    (JSON model as a mapping); ``where`` is ``panel <title>`` or ``variable <name>``."""
    out: list[tuple[str, str]] = []
    for panel in _panels(list(dashboard.get("panels") or [])):
        for target in panel.get("targets") or []:
            if target.get("expr"):
                out.append((f"panel {panel.get('title', '?')}", str(target["expr"])))
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        if variable.get("type") == "query":
            query = variable.get("query")
            text = query.get("query", "") if isinstance(query, Mapping) else query
            if text:
                out.append((f"variable {variable.get('name', '?')}", str(text)))
    return out


def rule_queries(rules: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(where, PromQL)`` of every alerting and recording rule of a Prometheus rules document
    (``{"groups": [...]}``); ``where`` is ``alert <name>`` or ``record <name>``."""
    out: list[tuple[str, str]] = []
    for group in rules.get("groups") or []:
        for rule in group.get("rules") or []:
            where = f"alert {rule['alert']}" if "alert" in rule else f"record {rule.get('record', '?')}"
            out.append((where, str(rule["expr"])))
    return out


def names_used(dashboards_dir: Path | str, rules_file: Path | str) -> dict[str, set[str]]:
    """``{metric family: {where it is used}}`` over every ``*.json`` dashboard of ``dashboards_dir`` and
    the rules file ``rules_file`` (families as :func:`family`; ``where``: ``<file>: panel <title>``,
    ``<file>: alert <name>``). Raises ``OSError``/``ValueError`` for a missing or malformed file."""
    used: dict[str, set[str]] = {}
    sources: list[tuple[str, list[tuple[str, str]]]] = []
    for path in sorted(Path(dashboards_dir).glob("*.json")):
        sources.append((path.name, dashboard_queries(json.loads(path.read_text()))))
    rules_path = Path(rules_file)
    sources.append((rules_path.name, rule_queries(yaml.safe_load(rules_path.read_text()))))
    for source, queries in sources:
        for where, query in queries:
            for name in metric_names(query):
                used.setdefault(family(name), set()).add(f"{source}: {where}")
    return used


#: Grafana's interval variables, as a range a rules file accepts.
_GRAFANA_INTERVAL = re.compile(r"\$\{?(?:__rate_interval|__interval|__range)\b\}?")


def dashboard_rules(dashboards_dir: Path | str) -> dict[str, Any]:
    """A Prometheus rules document with one recording rule per dashboard panel query (Grafana's interval
    variables as ``5m``), for ``promtool check rules`` to check every query's PromQL. Record names:
    ``dashboard:<file stem>:panel<id>_<refId>``. Raises ``OSError``/``ValueError`` for a bad file."""
    groups = []
    for path in sorted(Path(dashboards_dir).glob("*.json")):
        stem = re.sub(r"\W", "_", path.stem)
        rules = []
        for panel in _panels(list(json.loads(path.read_text()).get("panels") or [])):
            for target in panel.get("targets") or []:
                if target.get("expr"):
                    rules.append({"record": f"dashboard:{stem}:panel{panel.get('id')}_{target.get('refId', 'A')}",
                                  "expr": _GRAFANA_INTERVAL.sub("5m", str(target["expr"]))})
        groups.append({"name": f"dashboard-{path.stem}", "rules": rules})
    return {"groups": groups}


def queries(dashboards_dir: Path | str, rules_file: Path | str,
            interval: str = "1m") -> list[tuple[str, str]]:
    """``(where, PromQL)`` of every dashboard panel target and template variable query of ``dashboards_dir``
    and every rule of ``rules_file``, as Prometheus's query API takes them: Grafana's interval variables
    as ``interval``; a ``label_values(selector, label)`` variable as its ``selector``. ``where`` as in
    :func:`names_used`. Raises ``OSError``/``ValueError`` for a missing or malformed file."""
    out: list[tuple[str, str]] = []
    for path in sorted(Path(dashboards_dir).glob("*.json")):
        for where, query in dashboard_queries(json.loads(path.read_text())):
            values = _LABEL_VALUES.match(query.strip())
            query = values.group(1) if values else query
            out.append((f"{path.name}: {where}", _GRAFANA_INTERVAL.sub(interval, query)))
    rules_path = Path(rules_file)
    out.extend((f"{rules_path.name}: {where}", query)
               for where, query in rule_queries(yaml.safe_load(rules_path.read_text())))
    return out


def exported_names(typed: Mapping[str, str]) -> set[str]:
    """Contract-style names of scraped families ``{family: type}`` (prometheus-client's parser, e.g.
    ``tests/fixtures/scrape.py``): a counter's family with ``_total`` (the parser drops it), every other
    family as is; comparable with the keys of :func:`names_used`."""
    return {f"{name}_total" if type_ == "counter" else name for name, type_ in typed.items()}


def prometheus_rule(rules: Mapping[str, Any], name: str = "reconcilery",
                    namespace: str = "reconcilery") -> dict[str, Any]:
    """The Prometheus Operator ``PrometheusRule`` carrying the rule groups of a plain rules document."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"groups": list(rules["groups"])}}


HEADER = """\
# GENERATED from rules/reconcilery.rules.yaml by `python -m reconcilery.monitoring`: edit that file, not this one
# (tests/unit/test_monitoring.py fails when they differ).
"""


class _Dumper(yaml.SafeDumper):
    """Block scalars for multi-line strings (the expressions stay readable), no sorting."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render_prometheus_rule(rules_text: str) -> str:
    """The text of ``prometheusrule.yaml`` for the plain rules file text ``rules_text``. Raises
    ``yaml.YAMLError`` or ``KeyError`` (no ``groups``) for a malformed rules file."""
    body = yaml.dump(prometheus_rule(yaml.safe_load(rules_text)), Dumper=_Dumper, sort_keys=False,
                     default_flow_style=False, width=4096, allow_unicode=True)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) ``prometheusrule.yaml``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m reconcilery.monitoring", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when prometheusrule.yaml is stale")
    parser.add_argument("--dashboard-rules", action="store_true",
                        help="print every dashboard query as a recording rule (for promtool check rules)")
    args = parser.parse_args(argv)
    if args.dashboard_rules:
        print(yaml.safe_dump(dashboard_rules(DASHBOARDS), sort_keys=False, width=4096), end="")
        return 0
    wanted = render_prometheus_rule(RULES_FILE.read_text())
    current = PROMETHEUS_RULE_FILE.read_text() if PROMETHEUS_RULE_FILE.exists() else ""
    if args.check:
        if current != wanted:
            print(f"{PROMETHEUS_RULE_FILE} is stale: run python -m reconcilery.monitoring", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        PROMETHEUS_RULE_FILE.write_text(wanted)
        print(f"wrote {PROMETHEUS_RULE_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
