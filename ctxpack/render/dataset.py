"""A dataset's stats and compress totals as Rich tables and JSON, from the same objects."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..jsonl import dumps
from . import counted, percent, plain

TOP_TOOLS = 10


def to_json(results: list[Any], total: Any, unread: list[dict[str, Any]]) -> bytes:
    """`stats --json` of datasets: each one's stats, `total`'s (all of them), and the
    datasets that could not be read (`path`, `line`, `problem`)."""
    summed = {k: v for k, v in total.to_dict().items()
              if k not in ("schema_version", "path", "errors")}
    doc = {"schema_version": 1, "datasets": [r.to_dict() for r in results],
           "total": {"datasets": len(results), **summed}, "unread": unread}
    return dumps(doc, indent=2) + b"\n"


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
    if s.max_ratio is not None:
        head.add_row(f"rows over {percent(s.max_ratio)} of the window", f"{s.over_ratio:,}")
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
    left_out = f", {failed_rows(c.failed)}" if c.failed else ""
    console.print(escape(plain(
        f"{c.path} -> {c.dest}: {counted(c.rows, 'row')}, {c.changed:,} compressed, {c.failed:,} "
        f"failed; tokens {c.tokens_before:,} -> {c.tokens_after:,}{share}{left_out}")))


def failed_rows(count: int) -> str:
    """What the tokens of a compress leave out: the rows that failed, which were not
    counted (a row that cannot be read has no count)."""
    return f"{counted(count, 'failed row')} not counted"


class RowProgress:
    """A bar on stderr while datasets are worked through, on a terminal only: rows done
    of all, megabytes, time left. Entering gives `advance(path, rows)`, said as each
    batch of a dataset is done. It has no thread of its own (it is drawn as batches come
    in), so worker processes can start while it is shown."""

    def __init__(self, paths: list[str], console: Console) -> None:
        from ..dataset.files import rows_in

        self.console = console
        self.enabled = console.is_terminal
        self.rows = {p: rows_in(p) for p in paths} if self.enabled else {}
        self.sizes = {p: _size(p) for p in self.rows}
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return lambda path, rows: None
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.completed:,.0f}/{task.total:,.0f} rows"),
                            BarColumn(), TextColumn("{task.fields[done]}"),
                            TimeRemainingColumn(), console=self.console, transient=True,
                            auto_refresh=False)
        self.bar.start()
        task = self.bar.add_task("rows", total=sum(self.rows.values()), done="")
        total = sum(self.sizes.values())
        seen = dict.fromkeys(self.rows, 0)

        def advance(path: str, rows: int) -> None:
            seen[path] = seen.get(path, 0) + rows
            done = sum(self.sizes[p] * min(1.0, n / self.rows[p])
                       for p, n in seen.items() if self.rows.get(p))
            self.bar.update(task, advance=rows,
                            done=f"{done / 2**20:,.1f}/{total / 2**20:,.1f} MB")
            self.bar.refresh()

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
