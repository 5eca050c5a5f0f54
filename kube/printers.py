"""Printing what ``render`` and status commands found, as kubectl does: a table for people by default,
``-o yaml`` or ``-o json`` for machines (kubectl's ``cli-runtime`` printers; :mod:`kube.manifests`
reads the input side).

A command builds a :class:`Listing` (its documents and its table rows: data, no formatting) and hands
it to :func:`echo` with the ``-o`` value it took through :data:`OUTPUT`; :func:`format_listing` is the
pure part. An unknown ``-o`` value never reaches a command: typer rejects it with exit code 2.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

__all__ = ["OUTPUT", "Listing", "Output", "echo", "format_listing"]


class Output(StrEnum):
    """The values of ``-o``: ``table`` for people, ``yaml`` and ``json`` for machines."""

    TABLE = "table"
    YAML = "yaml"
    JSON = "json"


#: The ``-o/--output`` option every render and status command declares (a choice: typer exits 2 on others).
OUTPUT: Any = typer.Option(Output.TABLE, "--output", "-o",
                           help="table (for people), yaml (a YAML stream) or json (an array), as kubectl's -o.")


@dataclass(frozen=True)
class Listing:
    """What a command found.

    ``documents``: the machine form, JSON-able values in order (``-o yaml``: a YAML stream, one document
    each; ``-o json``: one JSON array). ``columns``: the table's headers (upper case, kubectl's habit).
    ``rows``: one per object the command is about, one string per column (``\\n`` breaks a cell into
    lines). ``comments``: per document, one line printed as ``# ...`` above it under ``-o yaml``
    (empty or shorter than ``documents``: the rest have none).
    """

    documents: Sequence[Any] = ()
    columns: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()
    comments: Sequence[str] = ()


def _yaml(listing: Listing) -> str:
    if not listing.comments:  # kubectl's -o yaml never wraps a line: width 1000
        return yaml.safe_dump_all(listing.documents, sort_keys=False, default_flow_style=False, width=1000) \
            if listing.documents else ""
    parts = []
    for i, doc in enumerate(listing.documents):
        comment = listing.comments[i] if i < len(listing.comments) else ""
        parts.append((f"# {comment}\n" if comment else "")
                     + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000))
    return "---\n".join(parts)


def _table(listing: Listing) -> str:
    if not listing.rows:  # kubectl prints nothing on stdout for no objects
        return ""
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 3, 0, 0), header_style="",
                  highlight=False)
    for column in listing.columns:
        table.add_column(column, no_wrap=True, overflow="ignore")
    for row in listing.rows:
        table.add_row(*row)
    # never wrap or cut a cell: lay the table out at its natural width, as kubectl's tabwriter does
    measure = Console(file=io.StringIO(), width=1 << 20, color_system=None)
    out = io.StringIO()
    Console(file=out, width=Measurement.get(measure, measure.options, table).maximum, color_system=None,
            markup=False, emoji=False, highlight=False).print(table)
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


def format_listing(listing: Listing, output: Output) -> str:
    """The text ``-o output`` prints for ``listing`` (empty, or ending in a newline). Pure.

    Table: the columns aligned, three spaces apart, nothing for no rows; YAML: the documents as a
    stream (``---`` between them; nothing for none); JSON: one array, indented by 2."""
    if output is Output.JSON:
        return json.dumps(list(listing.documents), indent=2) + "\n"
    if output is Output.YAML:
        return _yaml(listing)
    return _table(listing)


def echo(listing: Listing, output: Output) -> None:
    """Write :func:`format_listing` to stdout."""
    typer.echo(format_listing(listing, output), nl=False)
