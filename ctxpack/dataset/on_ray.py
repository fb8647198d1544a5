"""Datasets on Ray: the same table functions, run by Ray Data actors instead of here.

Each task is one row group of the Parquet file, read by the actor itself (a local path
on one machine; on a cluster, a path every node sees or an object-store URL pyarrow
reads), so data goes from storage to the workers, and only results come back, in row
order, to be written here. An actor loads the tokenizer once and counts with one
process (its CPU is its share). Rows keep their numbers, so the results equal the local
engine's row for row. Needs the `ray` extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from .files import BATCH_ROWS, is_parquet
from .rows import Rows, pyarrow


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

        import ray.data  # noqa: F401 - it sets up its own loggers when imported

        ray = self.ray
        for name in ("ray", "ray.data"):  # their notes would bury the results
            logging.getLogger(name).setLevel(logging.ERROR)
        if not ray.is_initialized():
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False,
                     include_dashboard=False, configure_logging=False)
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # results in row order
        context.enable_progress_bars = False

    def map(self, path: str, rows: Rows, work: Callable[..., Any], settings: dict[str, Any],
            shard: tuple[int, int] | None = None) -> Iterator[Any]:
        """`work` of every row group of the Parquet file at `path` (or of the i-th of n
        shares of them), in row order."""
        if not is_parquet(path):
            raise UsageError("--engine ray reads Parquet datasets", "convert JSONL rows first")
        groups = [(g, start) for g, start in row_groups(path)
                  if shard is None or g % shard[1] == shard[0]]
        self.start()
        if not groups:  # no rows: the columns a result of no rows has
            import pyarrow.parquet as pq

            empty = pq.ParquetFile(path).schema_arrow.empty_table()
            yield work(empty, **vars(replace(rows, name=path)), **settings)
            return
        cpus = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        items = self.ray.data.from_items(
            [{"group": g, "start": start} for g, start in groups],
            override_num_blocks=len(groups))
        done = items.map_batches(
            RowGroupWorker, batch_size=1, batch_format="pyarrow", num_cpus=1,
            compute=self.ray.data.ActorPoolStrategy(size=min(cpus, len(groups))),
            fn_constructor_kwargs={"path": path, "rows": replace(rows, name=path),
                                   "work": work, "settings": settings})
        for table in done.iter_batches(batch_size=None, batch_format="pyarrow"):
            if table.num_rows:
                yield table


def row_groups(path: str) -> list[tuple[int, int]]:
    """Each row group of the file and the number of its first row."""
    import pyarrow.parquet as pq

    pa = pyarrow()
    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError) as exc:
        from ..errors import InputError

        raise InputError(path, None, f"not a Parquet file ({exc})") from None
    out, start = [], 0
    for g in range(meta.num_row_groups):
        out.append((g, start))
        start += meta.row_group(g).num_rows
    return out


class RowGroupWorker:
    """A Ray actor: reads the row groups it is given and runs `work` on their rows."""

    def __init__(self, path: str, rows: Rows, work: Callable[..., Any],
                 settings: dict[str, Any]) -> None:
        os.environ["CTXPACK_WORKERS"] = "1"  # the actor's CPU is its share: no pool inside
        import pyarrow.parquet as pq

        from ..tokens import TokenCounter

        TokenCounter(rows.model, rows.models).encoding()  # loaded once, for every row
        self.file = pq.ParquetFile(path)
        self.schema = self.file.schema_arrow
        self.rows, self.work, self.settings = rows, work, settings

    def __call__(self, task: Any) -> Iterator[Any]:
        """The results of the row group, a batch at a time (so an actor holds one)."""
        pa = pyarrow()
        group, start = task.column("group")[0].as_py(), task.column("start")[0].as_py()
        empty = True
        for batch in self.file.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
            table = pa.Table.from_batches([batch]).replace_schema_metadata(self.schema.metadata)
            yield self.work(table, **vars(replace(self.rows, start=start)), **self.settings)
            start += table.num_rows
            empty = False
        if empty:  # a row group of no rows
            yield self.work(self.schema.empty_table(), **vars(replace(self.rows, start=start)),
                            **self.settings)
