"""Trajectory datasets: tables with one agent trajectory a row (Parquet, or JSONL rows).

Each row's messages column (JSON text, or a list of structs, in the openai or anthropic
dialect) is read by the same format reader, counted by the same stats, checked by the
same validate and compressed by the same pipeline as a transcript file. The functions
here take and return a `pyarrow.Table` (one batch of rows), so the same code serves
the command line, `datasets.map(batched=True)` and a Ray pipeline; pyarrow comes with
the `data` extra. A row that cannot be read or fit is reported in its own row.
"""

from __future__ import annotations

from .checking import stats_table, validate_table
from .packing import ADDED, META, compress_table, restore_table
from .rows import MESSAGES, Rows

__all__ = ["ADDED", "MESSAGES", "META", "Rows", "compress_table", "restore_table",
           "stats_table", "validate_table"]
