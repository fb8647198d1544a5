"""Compress and restore each row of a table, through the pipeline and archive that
compress and restore a transcript file.

A changed row gets its new messages, written back as the column's own type (JSON text,
or a list of structs), and a `ctxpack` object (JSON text) whose archive holds the
original value; restore puts that value back and drops the columns compress added, so
the table comes back value for value. A row that cannot be read, or cannot be brought
under the budget, keeps its messages and says why in `ctxpack_error`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import CtxpackError, InputError, UsageError
from ..jsonl import dumps, loads
from ..undo import MAX_GROWTH
from .rows import Row, Rows, messages_column, pyarrow, read_rows, transcript_of

META = "ctxpack"  # the column of each changed row's archive
ADDED = ("ctxpack_tokens_before", "ctxpack_tokens_after", "ctxpack_done", "ctxpack_error", META)
VERSION = 1


def split_settings(settings: dict[str, Any]) -> tuple[Rows, dict[str, Any]]:
    """How rows are read (the fields of Rows), and the compress settings (the rest)."""
    names = {f.name for f in fields(Rows)}
    return (Rows(**{k: v for k, v in settings.items() if k in names}),
            {k: v for k, v in settings.items() if k not in names})


@dataclass
class Outcome:
    """What became of one row: its messages column's value and the added columns."""

    value: Any
    tokens_before: int | None = None
    tokens_after: int | None = None
    done: str = ""
    error: str | None = None
    meta: str | None = None
    # what the run says once (the settings' own: see limiting.of_settings)
    warnings: tuple[str, ...] = ()


def compress_table(table: Any, **settings: Any) -> Any:
    """`table` with each row's messages compressed and the added columns (ADDED) after the
    others. `settings` are the fields of Rows (column, format, model, ...) and the
    compress settings (`budget=`, `keep_steps=`, `archive_dir=`, ... as for
    `ctxpack.compress`)."""
    return compress_batch(table, **settings)[0]


def compress_batch(table: Any, **settings: Any) -> tuple[Any, tuple[str, ...]]:
    """`compress_table` of `table`, and what its rows warn of that a run says once
    (what the settings warn of: a budget asked for above a row's window, a target not
    below the trigger), each once."""
    from ..archive import Archiver
    from ..cache import held
    from ..compression.settings import from_keywords

    pa = pyarrow()
    rows, rest = split_settings(settings)
    if META in table.column_names:
        raise UsageError(f"{rows.name}: already compressed (it has a {META!r} column)",
                         "restore it first, or compress the original")
    options = from_keywords(rest)
    archiver = Archiver(options.archive_dir, options.archive)
    column = messages_column(table, rows)
    values = column.to_pylist()
    with held():  # the token cache opened once for the batch, not once a row
        outcomes = [_compress_row(row, values[row.index - rows.start], column.type, rows,
                                  rest, archiver, options)
                    for row in read_rows(table, rows)]
    # the column's own field: its type, nullability and metadata stay as they were
    out = table.set_column(table.column_names.index(rows.column), table.schema.field(rows.column),
                           pa.array([o.value for o in outcomes], type=column.type))
    added = {"ctxpack_tokens_before": ([o.tokens_before for o in outcomes], pa.int64()),
             "ctxpack_tokens_after": ([o.tokens_after for o in outcomes], pa.int64()),
             "ctxpack_done": ([o.done for o in outcomes], pa.string()),
             "ctxpack_error": ([o.error for o in outcomes], pa.string()),
             META: ([o.meta for o in outcomes], pa.string())}
    for name, (data, kind) in added.items():
        out = out.append_column(name, pa.array(data, type=kind))
    return out, tuple(dict.fromkeys(w for o in outcomes for w in o.warnings))


def _compress_row(row: Row, value: Any, kind: Any, rows: Rows, settings: dict[str, Any],
                  archiver: Any, options: Any) -> Outcome:
    from ..compression import compress, now_iso
    from ..compression.limiting import of_report

    try:
        if row.problem is not None:
            raise row.problem
        assert row.messages is not None
        # the dialect as stats and validate read the row (an agent's records refused)
        dialect = rows.format or transcript_of(row, rows).format
        try:
            new, report = compress(row.messages, model=rows.model, format=dialect,
                                   table=rows.models, cache=rows.cache, **settings)
        except InputError as exc:  # the reader names the message: say which row holds it
            raise InputError(row.where, None, f"message {exc.line}: {exc.problem}") from None
        warnings = tuple(of_report(report, options))
        if not report.changed:
            return Outcome(value, report.tokens_before, report.tokens_after, warnings=warnings)
        written = dumps(new).decode("utf-8") if isinstance(value, str) else new
        _check_fits(written, kind, row)
        original = value.encode("utf-8", "surrogatepass") if isinstance(value, str) \
            else dumps(value)
        meta = {"id": f"row-{row.index}", "kind": "row", "version": VERSION,
                "column": rows.column, "compressed_at": now_iso(),
                "archive": archiver.pack(original)}
        return Outcome(written, report.tokens_before, report.tokens_after, done_of(report),
                       meta=dumps(meta).decode(), warnings=warnings)
    except CtxpackError as exc:  # the row's problem, said with where it is
        said = str(exc)
        return Outcome(value, error=said if said.startswith(row.where) else
                       f"{row.where}: {said}")


def _check_fits(written: Any, kind: Any, row: Row) -> None:
    """A list of structs takes only the fields and types it has: new messages that do not
    fit it (a summary where content is a list of parts) leave the row as it was."""
    if isinstance(written, str):
        return
    pa = pyarrow()
    try:
        pa.array([written], type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise InputError(row.where, None, f"compressed messages do not fit the column's "
                         f"type ({exc}); the row is left as it was") from None


def done_of(report: Any) -> str:
    """What compress did to a row, in a few words."""
    done = []
    if report.truncated:
        done.append(f"truncated {report.truncated}")
    if report.masked:
        done.append(f"masked {report.masked}")
    if report.summary:
        done.append(f"summarized {report.summary['messages']} ({report.summary['strategy']})")
    return ", ".join(done)


def restore_table(table: Any, *, archive_dir: str | None = None, name: str = "<table>",
                  start: int = 0, max_growth: int = MAX_GROWTH) -> Any:
    """The table compress_table was given: each changed row's original value back in its
    messages column, the added columns gone (a table without the archive column was
    never compressed, and comes back as it is). No row's original may come to more than
    `max_growth` times the row's messages and archive (see undo.MAX_GROWTH)."""
    pa = pyarrow()
    if META not in table.column_names:  # never compressed: nothing to put back
        return table.drop_columns([c for c in ADDED if c in table.column_names])
    metas = table.column(META).to_pylist()
    column = next((_meta(m, name)["column"] for m in metas if m is not None), None)
    out = table.drop_columns([c for c in ADDED if c in table.column_names])
    if column is None:  # no row was changed
        return out
    if column not in out.column_names:
        raise InputError(name, None, f"the archive names column {column!r}, which is gone")
    kind = out.column(column).type
    values = out.column(column).to_pylist()
    for i, m in enumerate(metas):
        if m is not None:
            where = f"{name} row {start + i}"
            given = len(m) + (len(values[i]) if isinstance(values[i], str)
                              else len(dumps(values[i])))
            original = _unpacked(_meta(m, name)["archive"], where, archive_dir, given,
                                 max_growth)
            values[i] = _value_of(original, kind, pa, where)
    return out.set_column(out.column_names.index(column), out.schema.field(column),
                          pa.array(values, type=kind))


def _unpacked(ref: dict[str, Any], where: str, folder: str | None, given: int,
              growth: int) -> bytes:
    """The original a row's archive holds, stopped once it passes `growth` times the
    `given` bytes of the row (and of the original, when it is read from a folder), as a
    transcript's restore is stopped."""
    from ..archive import unpack_pieces
    from ..undo import too_large

    if not ref.get("inline") and type(ref.get("bytes")) is int and ref["bytes"] > 0:
        given += ref["bytes"]  # on disk already, not expanded
    most = growth * max(given, 1)
    pieces, size = [], 0
    for piece in unpack_pieces(ref, where, folder):
        size += len(piece)
        if size > most:
            raise too_large(where, growth)
        pieces.append(piece)
    return b"".join(pieces)


def _meta(text: str, name: str) -> dict[str, Any]:
    try:
        meta = loads(text.encode("utf-8"))
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not isinstance(meta.get("archive"), dict) \
            or not isinstance(meta.get("column"), str):
        raise InputError(name, None, f"a {META!r} value is damaged")
    return meta


def _value_of(original: bytes, kind: Any, pa: Any, where: str) -> Any:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return original.decode("utf-8", "surrogatepass")
    try:
        return loads(original)
    except ValueError:
        raise InputError(where, None, "the archived messages are not JSON") from None
