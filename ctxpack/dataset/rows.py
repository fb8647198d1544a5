"""The rows of a dataset table: which column holds the messages, which names the rows,
and each row's messages read into dicts and then into a transcript, or the one problem
that keeps them from being read (a row's problem stays in its row)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import CtxpackError, InputError, UsageError
from ..jsonl import loads
from ..models import TABLE, ModelTable

MESSAGES = "messages"
ID_COLUMNS = ("id", "instance_id", "trajectory_id", "task_id")  # the first present names rows
DIALECTS = ("openai", "anthropic")
# Tables read from JSONL rows carry, besides their columns, the rest of each line's object
# (JSON text, to write the row back; None for a line that is not an object) and the
# line's number in the file, which names the row in what is said of it.
RECORD = "_ctxpack_record"
LINE = "_ctxpack_line"
PARQUET_MAGIC = b"PAR1"  # how a Parquet file begins


def pyarrow() -> Any:
    """The pyarrow module; without it, a UsageError that says how to get it."""
    try:
        import pyarrow as pa
    except ImportError:
        raise UsageError("reading and writing datasets needs pyarrow",
                         "pip install 'ctxpack[data]'") from None
    return pa


@dataclass(frozen=True)
class Rows:
    """How a table's rows are read: its messages column, their dialect (None: the one
    their messages mark, else the API that serves `model`, as `ctxpack.compress` reads a
    list of messages; a row of another format's records is refused), the id column
    (None: the first of ID_COLUMNS present, else rows are named by their number), the
    name used in problems, and the number of the batch's first row."""

    column: str = MESSAGES
    format: str | None = None
    id_column: str | None = None
    name: str = "<table>"
    start: int = 0
    model: str | None = None
    models: ModelTable = TABLE
    cache: bool = True

    def __post_init__(self) -> None:
        if self.format is not None and self.format not in DIALECTS:
            raise UsageError(f"unknown messages dialect {self.format!r}",
                             f"a dataset's messages are one of: {', '.join(DIALECTS)}")


@dataclass
class Row:
    """One row as read: where it is, its id, and its messages or why they cannot be read."""

    index: int
    id: str
    where: str  # how it is named: FILE:LINE (JSONL rows) or FILE row N, and (id X)
    line: int | None = None  # its line in JSONL rows
    messages: list[dict[str, Any]] | None = None
    problem: CtxpackError | None = None


def id_column(table: Any, rows: Rows) -> str | None:
    """The column that names rows: the one asked for (which must exist), else the first
    of ID_COLUMNS the table has."""
    if rows.id_column is not None:
        if rows.id_column not in table.column_names:
            raise UsageError(f"{rows.name}: no column {rows.id_column!r}",
                             f"columns: {', '.join(table.column_names)}")
        return rows.id_column
    return next((c for c in ID_COLUMNS if c in table.column_names), None)


def messages_column(table: Any, rows: Rows) -> Any:
    """The messages column: JSON text, or a list of messages (structs); a column of
    another type is the dataset's one problem, not one of each row."""
    if rows.column not in table.column_names:
        raise UsageError(f"{rows.name}: no column {rows.column!r}",
                         f"columns: {', '.join(table.column_names)}; --messages-column picks one")
    column = table.column(rows.column)
    pa = pyarrow()
    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or (pa.types.is_list(kind) or pa.types.is_large_list(kind))
            and pa.types.is_struct(kind.value_type)):
        raise InputError(rows.name, None, f"column {rows.column!r} holds {kind}, not messages "
                         "(JSON text, or a list of message structs)")
    return column


def read_rows(table: Any, rows: Rows) -> Iterator[Row]:
    """The rows of `table`, each with its messages as dicts, or the problem reading them.
    A row is named by its number (by its line, in JSONL rows), and its id where it has
    one."""
    values = messages_column(table, rows).to_pylist()
    key = id_column(table, rows)
    ids = table.column(key).to_pylist() if key else [None] * len(values)
    lines = table.column(LINE).to_pylist() if LINE in table.column_names else None
    records = table.column(RECORD).to_pylist() if lines is not None else None
    for i, (value, ident) in enumerate(zip(values, ids, strict=True)):
        n = rows.start + i
        name = str(n) if ident is None else str(ident)
        where = (f"{rows.name}:{lines[i]}" if lines is not None else f"{rows.name} row {n}") \
            + (f" (id {name})" if ident is not None else "")
        row = Row(n, name, where, lines[i] if lines is not None else None)
        try:
            if records is not None and records[i] is None:
                raise InputError(where, None, _not_an_object(value))
            row.messages = messages_of(value, where)
        except InputError as exc:
            row.problem = exc
        yield row


def _not_an_object(line: str) -> str:
    """What is wrong with a line of JSONL rows that holds no row object."""
    try:
        loads(line.encode("utf-8", "surrogatepass"))
    except ValueError:
        return "the line is not JSON"
    return "the line is not a JSON object (a row's keys and values)"


def not_from_stdin(name: str, head: bytes) -> None:
    """Refuse a Parquet file read as a stream of lines: it is read by its path (its
    footer first), and a stream of its bytes is no rows."""
    if head.startswith(PARQUET_MAGIC):
        if name in ("-", "<stdin>"):
            raise UsageError("a Parquet dataset cannot be read from stdin; give its path")
        raise UsageError(f"{name}: a Parquet file; ctxpack reads one by a name that ends "
                         "in .parquet or .pq")


def messages_of(value: Any, where: str) -> list[dict[str, Any]]:
    """A row's messages: JSON text of a list of messages, or the list itself (nulls of a
    struct's absent fields left out, as if the field were not there)."""
    if isinstance(value, str):
        try:
            value = loads(value.encode("utf-8", "surrogatepass"))
        except ValueError as exc:
            raise InputError(where, None, f"messages are not JSON: {exc}") from None
    else:
        value = _without_nulls(value)
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise InputError(where, None, "messages are not a list of message objects")
    return value


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def transcript_of(row: Row, rows: Rows) -> Any:
    """The row's messages read as a transcript file of one message a line would be (of
    the run's model, whose API reads messages that mark none). They are messages of one
    of DIALECTS: a row of an agent's own records (a Claude Code or Codex log) is refused,
    not read as that agent's file."""
    from ..loader import load_values

    assert row.messages is not None
    try:
        return load_values(row.messages, rows.format, name=row.where, model=rows.model,
                           table=rows.models, only=DIALECTS)
    except InputError as exc:  # the reader names the message: say which row holds it
        raise InputError(row.where, None, f"message {exc.line}: {exc.problem}") from None


def table_of(entries: list[dict[str, Any]], schema: tuple[tuple[str, str], ...]) -> Any:
    pa = pyarrow()
    types = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string(),
             "bool": pa.bool_(), "list<string>": pa.list_(pa.string())}
    return pa.table({k: pa.array([e.get(k) for e in entries], type=types[t])
                     for k, t in schema})
