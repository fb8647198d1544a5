"""Datasets on Ray: the same table functions, run by Ray tasks instead of here.

Each task of a Parquet dataset is one row group, read by the task itself (a local path on
one machine; on a cluster, a path every node sees or an object-store URL pyarrow reads),
so data goes from storage to the workers and only results come back, a batch at a time
(a streaming task), in row order, to be written here. JSONL rows are read here and their
batches sent to the tasks. Tasks run in Ray's pooled worker processes, which stay up from
task to task: a worker imports ctxpack and loads the tokenizer once, with its first task,
and counts with one process (its CPU is its share). Rows keep their numbers, so the
results equal the local engine's row for row. Needs the `ray` extra.

Why tasks and not Ray Data's actor pool: each run started its actors afresh (a process,
Ray, ctxpack and the tokenizer each), and Ray Data planned the job, some 3 to 8 s that a
run on a few thousand rows could not win back; see BENCHMARKS.md.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..errors import CtxpackError, InputError, UsageError
from .files import BATCH_ROWS, batches, is_parquet
from .rows import Rows, pyarrow

IN_FLIGHT = 2  # tasks a CPU has queued, so that none waits for the next while one is read


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray", "pip install 'ctxpack[ray]'") from None
    return ray


class RayEngine:
    """Runs a dataset's batches on the Ray at `address` ($RAY_ADDRESS, else one started
    here with every core); a Ray already started in this process is used as it is."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.ray = ray_module()

    def start(self) -> None:
        import logging

        ray = self.ray
        logging.getLogger("ray").setLevel(logging.ERROR)  # its notes would bury the results
        if not ray.is_initialized():
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False,
                     include_dashboard=False, configure_logging=False)

    def map(self, path: str, rows: Rows, work: Callable[..., Any], settings: dict[str, Any],
            shard: tuple[int, int] | None = None) -> Iterator[Any]:
        """`work` of every batch of the dataset at `path` (or of the i-th of n shares of
        it), in row order."""
        rows = replace(rows, name=path)
        if is_parquet(path):
            groups = [(g, start) for g, start in row_groups(path)
                      if shard is None or g % shard[1] == shard[0]]
            if not groups:  # no rows: the columns a result of no rows has
                import pyarrow.parquet as pq

                yield work(pq.ParquetFile(path).schema_arrow.empty_table(), **vars(rows),
                           **settings)
                return
            calls = ((row_group, (path, g, replace(rows, start=start), work, settings))
                     for g, start in groups)
        else:  # JSONL rows are read here: a task is a batch
            calls = ((one_batch, (table, at, work, settings))
                     for table, at in batches(path, rows, shard=shard))
        self.start()
        yield from self._in_order(calls)

    def _in_order(self, calls: Iterator[tuple[Callable[..., Any], tuple[Any, ...]]]
                  ) -> Iterator[Any]:
        """The tables each call's task yields, call after call, with IN_FLIGHT tasks a CPU
        under way (so results wait in the object store for a few tasks at most)."""
        ray = self.ray
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = {}
        pending: deque[Any] = deque()

        def submit() -> bool:
            call = next(calls, None)
            if call is None:
                return False
            fn, args = call
            if fn not in remote:
                remote[fn] = ray.remote(num_cpus=1, num_returns="streaming")(fn)
            pending.append(remote[fn].remote(*args))
            return True

        while len(pending) < IN_FLIGHT * cpus and submit():
            pass
        while pending:
            for ref in pending.popleft():
                table = self._get(ref)
                if table.num_rows or not pending:
                    yield table
            submit()

    def _get(self, ref: Any) -> Any:
        """The table of `ref`; a task's CtxpackError raised here as itself (its one line)."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, CtxpackError):
                raise exc.cause from None
            raise


def row_groups(path: str) -> list[tuple[int, int]]:
    """Each row group of the file and the number of its first row."""
    import pyarrow.parquet as pq

    pa = pyarrow()
    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, None, f"not a Parquet file ({exc})") from None
    out, start = [], 0
    for g in range(meta.num_row_groups):
        out.append((g, start))
        start += meta.row_group(g).num_rows
    return out


def row_group(path: str, group: int, rows: Rows, work: Callable[..., Any],
              settings: dict[str, Any]) -> Iterator[Any]:
    """A Ray task: `work` of the rows of one row group, a batch at a time (so a worker
    holds one batch)."""
    import pyarrow.parquet as pq

    _one_core()
    pa = pyarrow()
    file = pq.ParquetFile(path)
    meta, start, empty = file.schema_arrow.metadata, rows.start, True
    for batch in file.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
        table = pa.Table.from_batches([batch]).replace_schema_metadata(meta)
        yield work(table, **vars(replace(rows, start=start)), **settings)
        start += table.num_rows
        empty = False
    if empty:  # a row group of no rows
        yield work(file.schema_arrow.empty_table(), **vars(rows), **settings)


def one_batch(table: Any, rows: Rows, work: Callable[..., Any],
              settings: dict[str, Any]) -> Iterator[Any]:
    """A Ray task: `work` of one batch of rows sent to it."""
    _one_core()
    yield work(table, **vars(rows), **settings)


def _one_core() -> None:
    """The task's CPU is its share: no pool of processes inside it; the tokenizer is
    loaded with the worker's first task and kept by the process for the next."""
    os.environ["CTXPACK_WORKERS"] = "1"
