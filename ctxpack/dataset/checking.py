"""Stats and validate of each row of a table: the per-transcript stats and checks, run
on each row's messages, as one row of results per row."""

from __future__ import annotations

from typing import Any

from ..errors import CtxpackError
from ..jsonl import dumps
from .rows import Row, Rows, read_rows, table_of, transcript_of


def _row_stats(row: Row, rows: Rows) -> dict[str, Any]:
    """Tokens of one row, by role and by tool, its largest message, whether it is valid."""
    from ..breakdown import stats
    from ..checks import validate

    t = transcript_of(row, rows)
    s = stats(t, rows.model, top=1, table=rows.models, cache=rows.cache)
    problems = validate(t)
    big = s.largest[0] if s.largest else None
    return {"tokens": s.tokens, "messages": s.messages, "model": s.model,
            "by_role": dumps(s.by_role).decode(),
            "by_tool": dumps({k: v.tokens for k, v in s.by_tool.items()}).decode(),
            "largest_tokens": big.tokens if big else 0,
            "largest_role": big.role if big else None,
            "largest_tool": big.tool if big else None,
            "context_ratio": s.context_ratio,
            "valid": not problems,
            "problems": [f"message {p.line}: {p.message}" for p in problems]}


STATS_SCHEMA = (("row", "int64"), ("id", "string"), ("tokens", "int64"),
                ("messages", "int64"), ("model", "string"), ("by_role", "string"),
                ("by_tool", "string"), ("largest_tokens", "int64"), ("largest_role", "string"),
                ("largest_tool", "string"), ("context_ratio", "float64"), ("valid", "bool"),
                ("problems", "list<string>"), ("error", "string"))

VALIDATE_SCHEMA = (("row", "int64"), ("id", "string"), ("line", "int64"), ("where", "string"),
                   ("valid", "bool"), ("problems", "list<string>"), ("error", "string"))


def stats_table(table: Any, **settings: Any) -> Any:
    """One row of stats per row of `table` (see STATS_SCHEMA); `settings` are the fields
    of `Rows` (column, format, id_column, name, start, model, models, cache). A row
    that cannot be read has its `error` and no counts."""
    from ..cache import held

    rows = Rows(**settings)
    out = []
    with held():  # the token cache opened once for the batch, not once a row
        for row in read_rows(table, rows):
            entry: dict[str, Any] = {"row": row.index, "id": row.id}
            try:
                if row.problem is not None:
                    raise row.problem
                entry.update(_row_stats(row, rows))
            except CtxpackError as exc:
                entry.update(valid=False, error=str(exc))
            out.append(entry)
    return table_of(out, STATS_SCHEMA)


def validate_table(table: Any, **settings: Any) -> Any:
    """Whether each row would be accepted by its provider: row, id, line (of JSONL rows),
    where (the row's name in what is said of it), valid, problems, error."""
    from ..checks import validate

    rows = Rows(**settings)
    out = []
    for row in read_rows(table, rows):
        entry: dict[str, Any] = {"row": row.index, "id": row.id, "line": row.line,
                                 "where": row.where}
        try:
            if row.problem is not None:
                raise row.problem
            problems = validate(transcript_of(row, rows))
            entry.update(valid=not problems,
                         problems=[f"message {p.line}: {p.message}" for p in problems])
        except CtxpackError as exc:
            entry.update(valid=False, problems=[], error=str(exc))
        out.append(entry)
    return table_of(out, VALIDATE_SCHEMA)
