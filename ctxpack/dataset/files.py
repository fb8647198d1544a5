"""Dataset files in and out: a Parquet file read by row batches (or a JSONL file of rows,
one trajectory a line), each batch run through one of the table functions, and the
results written as they come (Parquet, or CSV for per-row stats), so memory holds one
batch, never the dataset. An output is complete or not there at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..errors import InputError, UsageError
from ..jsonl import dumps, iter_lines, loads, open_source
from .packing import ADDED, META
from .rows import ID_COLUMNS, LINE, MESSAGES, RECORD, Rows, not_from_stdin, pyarrow

BATCH_ROWS = 64  # rows per batch: a trajectory may be megabytes, so a batch stays small
Batch = tuple[Any, Rows]  # a table of rows, and how to read them (their first row's number)


def is_parquet(path: str) -> bool:
    return path.endswith((".parquet", ".pq"))


def batches(path: str, rows: Rows, size: int = BATCH_ROWS,
            shard: tuple[int, int] | None = None) -> Iterator[Batch]:
    """The rows of the dataset at `path`, a batch at a time, each with its Rows; with
    `shard` (i, n), only the i-th of n shares: of the row groups of a Parquet file, of
    the batches of a JSONL file (rows keep their numbers in the whole)."""
    pa = pyarrow()
    rows = replace(rows, name=path)
    if is_parquet(path):
        yield from _parquet(path, rows, size, shard)
        return
    start, empty = 0, True
    for n, table in enumerate(_jsonl(path, rows, size)):
        if shard is None or n % shard[1] == shard[0]:
            empty = False
            yield table, replace(rows, start=start)
        start += table.num_rows
    if empty:
        yield pa.table({rows.column: pa.array([], pa.string())}), rows


def archived(path: str) -> bool:
    """Has the dataset at `path` an archive to restore from: a `ctxpack` column (Parquet),
    or a row with a `ctxpack` value (JSONL rows)?"""
    if is_parquet(path):
        pa = pyarrow()  # first: without pyarrow, the hint that names the extra
        import pyarrow.parquet as pq

        try:
            return META in pq.ParquetFile(path).schema_arrow.names
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(path, None, f"not a Parquet file ({exc})") from None
    probe = f'"{META}":'.encode()
    src = open_source(path)
    try:
        for raw in iter_lines(src.stream, src.size):
            if probe in raw:
                try:
                    record = loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get(META) is not None:
                    return True
        return False
    finally:
        src.close()


def rows_in(path: str) -> int:
    """How many rows the dataset at `path` has, as its metadata says (a Parquet file) or
    by its lines (JSONL rows, blank ones counted); 0 where it cannot be read."""
    try:
        if is_parquet(path):
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except Exception:  # noqa: BLE001 - a bar's total; the run itself says what is wrong
        return 0


def _parquet(path: str, rows: Rows, size: int,
             shard: tuple[int, int] | None) -> Iterator[Batch]:
    pa = pyarrow()
    import pyarrow.parquet as pq

    try:
        data = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, None, f"not a Parquet file ({exc})") from None
    schema = data.schema_arrow
    start, empty = 0, True
    for group in range(data.metadata.num_row_groups):
        count = data.metadata.row_group(group).num_rows
        if shard is None or group % shard[1] == shard[0]:
            at = start
            for batch in data.iter_batches(batch_size=size, row_groups=[group]):
                yield (pa.Table.from_batches([batch]).replace_schema_metadata(schema.metadata),
                       replace(rows, start=at))
                at += batch.num_rows
                empty = False
        start += count
    if empty:  # no rows (in the share): a table of no rows, with the columns
        yield schema.empty_table(), rows


def _jsonl(path: str, rows: Rows, size: int) -> Iterator[Any]:
    """A JSONL file of rows as tables of the id column, the messages as JSON text, the
    archive (`ctxpack`) where there is one, the rest of each line's object (RECORD,
    JSON text) for writing the row back, and its line number (LINE); a line that is not
    a JSON object keeps its text, which its row then reports."""
    pa = pyarrow()
    src = open_source(path)
    key = rows.id_column
    try:
        ids: list[Any] = []
        texts: list[str] = []
        metas: list[Any] = []
        records: list[Any] = []
        lines: list[int] = []
        for number, raw in enumerate(iter_lines(src.stream, src.size), 1):
            if number == 1:
                not_from_stdin(src.name, raw)
            if not raw.strip():
                continue
            lines.append(number)
            try:
                record = loads(raw)
            except ValueError:
                record = None
            if isinstance(record, dict):
                key = key or next((c for c in ID_COLUMNS if c in record), None)
                value = record.get(rows.column)
                ids.append(None if key is None or record.get(key) is None
                           else str(record[key]))
                texts.append(dumps(value).decode() if value is not None else "null")
                meta = record.get(META)
                metas.append(meta if isinstance(meta, str) or meta is None
                             else dumps(meta).decode())
                rest = {k: (None if k == rows.column else v) for k, v in record.items()
                        if k not in ADDED}
                records.append(dumps(rest).decode())
            else:
                ids.append(None)
                texts.append(raw.decode("utf-8", "replace").strip())
                metas.append(None)
                records.append(None)
            if len(texts) == size:
                yield _rows_table(pa, key, ids, texts, metas, records, lines, rows.column)
                ids, texts, metas, records, lines = [], [], [], [], []
        if texts:
            yield _rows_table(pa, key, ids, texts, metas, records, lines, rows.column)
    finally:
        src.close()


def _rows_table(pa: Any, key: str | None, ids: list[Any], texts: list[str],
                metas: list[Any], records: list[Any], lines: list[int], column: str) -> Any:
    data = {column: pa.array(texts, pa.string())}
    if key is not None:
        data = {key: pa.array(ids, pa.string()), **data}
    if any(m is not None for m in metas):
        data[META] = pa.array(metas, pa.string())
    data[RECORD] = pa.array(records, pa.string())
    data[LINE] = pa.array(lines, pa.int64())
    return pa.table(data)


def jsonl_lines(table: Any, column: str) -> Iterator[bytes]:
    """The rows of a table read from JSONL rows as lines again: each line's object with
    its messages (as the table has them now) and the columns compress added; a line
    that was not an object, as it was."""
    values = table.column(column).to_pylist()
    added = [(c, table.column(c).to_pylist()) for c in ADDED if c in table.column_names]
    for i, rest in enumerate(table.column(RECORD).to_pylist()):
        if rest is None:
            yield values[i].encode("utf-8", "surrogatepass") + b"\n"
            continue
        record = loads(rest.encode("utf-8", "surrogatepass"))
        if column in record:
            record[column] = loads(values[i].encode("utf-8", "surrogatepass"))
        record.update((c, v[i]) for c, v in added)
        yield dumps(record) + b"\n"


def results(path: str, rows: Rows, work: Callable[..., Any], engine: Any = None,
            shard: tuple[int, int] | None = None, **settings: Any) -> Iterator[Any]:
    """`work(batch, **rows, **settings)` of each batch of the dataset (or of its `shard`),
    in row order: on this machine's cores, or by `engine` (see ctxpack.dataset.on_ray)."""
    if engine is not None:
        yield from engine.map(path, rows, work, settings, shard)
        return
    from ..workers import Workers, in_order

    ray = sys.modules.get("ray")  # a process that runs Ray must not fork: its threads
    alone = ray is not None and getattr(ray, "is_initialized", lambda: False)()
    with Workers(1 if alone else None) as workers:  # batches a core, where there are cores
        yield from in_order(run_batch, ((work, table, at, settings)
                                        for table, at in batches(path, rows, shard=shard)),
                            workers)


def run_batch(work: Callable[..., Any], table: Any, rows: Rows,
              settings: dict[str, Any]) -> Any:
    """`work` of one batch (in a worker process, or here)."""
    return work(table, **vars(rows), **settings)


def output_kind(dest: str) -> str:
    """What a dataset output is written as, by its name: parquet, csv or jsonl."""
    return "parquet" if is_parquet(dest) else "csv" if dest.endswith(".csv") else "jsonl"


@contextmanager
def written(dest: str, column: str = MESSAGES) -> Iterator[Callable[[Any], None]]:
    """A function that appends tables to the file `dest` (Parquet, CSV or JSONL rows by
    its name; JSONL rows need the tables read from JSONL rows, whose messages are in
    `column`), which is there complete once the block ends, or not at all if it breaks."""
    from ..atomic import temporary

    folder = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(folder):
        raise UsageError(f"{dest}: its folder does not exist")
    if os.path.isdir(dest):
        raise UsageError(f"{dest}: is a folder", "give a file name")
    kind = output_kind(dest)
    with temporary(folder) as draft:
        writer: Any = None

        def add(table: Any) -> None:
            nonlocal writer
            if kind == "jsonl":
                if table.num_rows:
                    draft.file.writelines(jsonl_lines(table, column))
                return
            table = _flat(table) if kind == "csv" else table
            if writer is None:
                writer = _writer(draft.file, table.schema, kind == "csv")
            writer.write_table(table)

        try:
            yield add
        finally:
            if writer is not None:
                writer.close()
        if writer is None and kind != "jsonl":  # no rows at all: a file of no columns
            _writer(draft.file, pyarrow().schema([]), kind == "csv").close()
        draft.publish(dest)


def _writer(sink: Any, schema: Any, csv: bool) -> Any:
    if csv:
        import pyarrow.csv as pcsv

        return pcsv.CSVWriter(sink, schema)
    import pyarrow.parquet as pq

    return pq.ParquetWriter(sink, schema)


def _flat(table: Any) -> Any:
    """A table CSV can hold: lists joined into one text (problems, one after another)."""
    pa = pyarrow()
    for i, name in enumerate(table.column_names):
        if pa.types.is_list(table.column(i).type):
            joined = [" | ".join(v) if v is not None else None
                      for v in table.column(i).to_pylist()]
            table = table.set_column(i, name, pa.array(joined, pa.string()))
    return table
