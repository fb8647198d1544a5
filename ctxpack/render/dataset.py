"""A dataset's stats and compress totals as Rich tables and JSON, from the same objects."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import plain

TOP_TOOLS = 10


def to_json(results: list[Any]) -> bytes:
    doc = {"schema_version": 1, "datasets": [r.to_dict() for r in results]}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def print_stats(console: Console, s: Any) -> None:
    """Totals, tokens per row, and where the tokens went, of one dataset."""
    d = s.to_dict()
    dist = d["tokens_per_row"]
    head = Table(title=escape(plain(s.path)), show_header=False, title_justify="left")
    head.add_column(style="bold")
    head.add_column(justify="right")
    head.add_row("rows", f"{s.rows:,}")
    head.add_row("messages", f"{s.messages:,}")
    head.add_row("tokens", f"{s.tokens:,}")
    head.add_row("tokens per row p50 / p90 / max",
                 f"{dist['p50']:,} / {dist['p90']:,} / {dist['max']:,}")
    if s.max_tokens is not None:
        head.add_row(f"rows over {s.max_tokens:,}", f"{s.over:,}")
    head.add_row("rows failing validate", f"{s.invalid:,}")
    head.add_row("rows not read", f"{s.failed:,}")
    head.add_row("models", escape(plain(", ".join(f"{m} ({n:,})"
                                                  for m, n in s.models.most_common()))))
    console.print(head)
    _shares(console, "role", d["by_role"], s.tokens)
    _shares(console, "tool", dict(list(d["by_tool"].items())[:TOP_TOOLS]), s.tokens)


def _shares(console: Console, what: str, counts: dict[str, int], total: int) -> None:
    if not counts:
        return
    table = Table(what, "tokens", "share")
    for name, n in counts.items():
        table.add_row(escape(plain(name)), f"{n:,}", f"{n / total:.1%}" if total else "")
    console.print(table)


def print_compressed(console: Console, c: Any) -> None:
    saved = c.tokens_before - c.tokens_after
    share = f" ({saved / c.tokens_before:.1%})" if c.tokens_before else ""
    console.print(escape(plain(
        f"{c.path} -> {c.dest}: {c.rows:,} rows, {c.changed:,} compressed, {c.failed:,} "
        f"failed; tokens {c.tokens_before:,} -> {c.tokens_after:,}{share}")))
