"""What became of each file of a many-file run: one table on stderr."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import counted, plain


def print_outcomes(console: Console, outcomes: list[Any]) -> None:
    """A row a file (input, output, what became of it, tokens before and after), then
    the counts of each outcome."""
    with_counts = any(o.tokens_before is not None for o in outcomes)  # compress counts; restore not
    table = Table(show_edge=False)
    for name in ("input", "output", "status"):
        table.add_column(name, overflow="fold")
    if with_counts:
        table.add_column("tokens before", justify="right")
        table.add_column("tokens after", justify="right")
    for o in outcomes:
        numbers = [_number(o.tokens_before), _number(o.tokens_after)] if with_counts else []
        dest = o.dest if o.backup is None else f"{o.dest} (original kept as {o.backup})"
        # a file done in part (a dataset with rows that failed) says what is left out
        status = f"{o.status}: {o.problem}" if o.problem and o.status != "failed" else o.status
        table.add_row(escape(plain(o.source)), escape(plain(dest)), escape(plain(status)),
                      *numbers)
    console.print(table)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    console.print(counted(len(outcomes), "file") + ": "
                  + ", ".join(f"{n:,} {status}" for status, n in counts.items()))


def _number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"
