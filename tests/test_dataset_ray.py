"""Datasets on Ray: a local Ray of 2 CPUs runs the same table functions, with results
equal to the local engine's row for row, and the command line joins it by address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SAMPLES
from .helpers import ctxpack as run_ctxpack

pa = pytest.importorskip("pyarrow", reason="datasets need pyarrow (pip install 'ctxpack[data]')")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ctxpack[ray]')")

from ctxpack.dataset import (  # noqa: E402 - after the skips
    Rows,
    compress_table,
    restore_table,
    stats_table,
    validate_table,
)
from ctxpack.dataset.files import results  # noqa: E402
from ctxpack.dataset.on_ray import RayEngine  # noqa: E402
from ctxpack.dataset.packing import compress_batch  # noqa: E402

pytestmark = pytest.mark.ray


PINNED = {"SOURCE_DATE_EPOCH": "1795000000"}  # the time stamp of archives, here and there


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray of 2 CPUs for this module; its address, for other processes to join."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SOURCE_DATE_EPOCH", PINNED["SOURCE_DATE_EPOCH"])
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, runtime_env={"env_vars": PINNED})
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        patch.undo()


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """The eval conversations of samples/ as rows (one made long), in row groups of 4,
    and a row that cannot be read."""
    rows = [json.loads(line)["messages"]
            for line in (SAMPLES / "evals.openai-conversations.jsonl").open()]
    rows[5] = rows[5] * 8
    texts = [json.dumps(r) for r in rows] + ["not json"]
    table = pa.table({"instance_id": [f"i{n}" for n in range(len(texts))], "messages": texts,
                      "split": ["test"] * len(texts)})
    pq.write_table(table, tmp_path / "data.parquet", row_group_size=4)
    return tmp_path / "data.parquet"


def both(path: Path, work: Any, **settings: Any) -> tuple[Any, Any]:
    """`work` over the dataset here and on Ray, each as one table."""
    rows = Rows()
    here = pa.concat_tables(results(str(path), rows, work, None, **settings))
    there = pa.concat_tables(results(str(path), rows, work, RayEngine(), **settings))
    return here, there


@pytest.mark.parametrize("work", [stats_table, validate_table])
def test_ray_reads_rows_as_the_local_engine_does(cluster: str, dataset: Path, work: Any) -> None:
    here, there = both(dataset, work)
    assert there.num_rows == 18
    assert there.equals(here)


def test_ray_compresses_as_the_local_engine_and_restores(cluster: str, dataset: Path) -> None:
    here, there = both(dataset, compress_table, budget=1500)
    assert there.column("ctxpack").to_pylist()[5] is not None
    assert there.equals(here)
    assert restore_table(there).equals(pq.read_table(dataset))


def test_ray_gives_what_the_local_engine_does_of_row_groups_of_no_rows(
        cluster: str, dataset: Path, tmp_path: Path) -> None:
    """A row group of no rows gives nothing of its own, and a dataset of no rows one
    result of no rows (with the work's columns): compress's tables come with their
    warnings, as here."""
    table = pq.read_table(dataset)
    gapped, empty = tmp_path / "gapped.parquet", tmp_path / "empty.parquet"
    with pq.ParquetWriter(gapped, table.schema) as writer:
        for part in (table.slice(0, 4), table.slice(0, 0), table.slice(4)):
            writer.write_table(part)
    with pq.ParquetWriter(empty, table.schema) as writer:
        writer.write_table(table.slice(0, 0))
    for path, rows, batches in ((gapped, 18, 2), (empty, 0, 1)):
        here, there = both(path, stats_table)
        assert there.num_rows == rows and there.equals(here)
        # (a target above the budget: a warning each row with a plan gives)
        settings = {"budget": 1500, "target": 2000}
        here_pairs = list(results(str(path), Rows(), compress_batch, None, **settings))
        there_pairs = list(results(str(path), Rows(), compress_batch, RayEngine(), **settings))
        assert len(there_pairs) == len(here_pairs) == batches
        for (mine, warned), (theirs, said) in zip(here_pairs, there_pairs, strict=True):
            assert theirs.equals(mine) and said == warned
        assert all(said for _, said in there_pairs) == bool(rows)
    # a share of the row groups that holds only the one of no rows (the second of three)
    # gives one result of no rows, here as there
    for shard in ((0, 3), (1, 3), (2, 3)):
        here = list(results(str(gapped), Rows(), stats_table, None, shard))
        there = list(results(str(gapped), Rows(), stats_table, RayEngine(), shard))
        assert len(here) == len(there) >= 1
        assert pa.concat_tables(there).equals(pa.concat_tables(here))
        assert (pa.concat_tables(here).num_rows == 0) == (shard == (1, 3))


def test_the_command_line_joins_a_running_ray(cluster: str, dataset: Path,
                                              tmp_path: Path) -> None:
    out, back = tmp_path / "small.parquet", tmp_path / "back.parquet"
    run = run_ctxpack("compress", str(dataset), "-o", str(out), "--budget", "1500",
                      "--engine", "ray", "--ray-address", cluster)
    assert run.code == 1, run.err  # the row that cannot be read
    assert "18 rows, 1 compressed, 1 failed" in run.err
    run = run_ctxpack("restore", str(out), "-o", str(back), "--engine", "ray",
                      "--ray-address", cluster)
    assert run.code == 0, run.err
    assert pq.read_table(back).equals(pq.read_table(dataset))


def test_ray_runs_jsonl_rows_as_the_local_engine_does(cluster: str, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (SAMPLES / "evals.openai-conversations.jsonl").open()]
    rows[2]["messages"] = rows[2]["messages"] * 8
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    for work, settings in ((stats_table, {}), (compress_table, {"budget": 1500})):
        here, there = both(data, work, **settings)
        assert there.num_rows == 18
        assert there.equals(here)
    assert there.column("ctxpack").to_pylist()[2] is not None


def test_a_dataset_problem_raised_on_ray_is_its_one_line(cluster: str, tmp_path: Path) -> None:
    data = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "messages": pa.array([1, 2])}), data)
    run = run_ctxpack("stats", str(data), "--engine", "ray", "--ray-address", cluster)
    assert run.code == 2, run.err
    assert [line for line in run.err.splitlines() if line.strip()] == \
        [f"error: {data}: column 'messages' holds int64, not messages (JSON text, or a list "
         "of message structs)"]


# A process of its own starts a Ray (address "local": a new one, never a Ray another
# program on this machine runs) through the engine, as the command does without an
# address, and says its own niceness and that of a task's worker.
STARTS_ITS_OWN = """
import os, ray
from ctxpack.dataset.on_ray import RayEngine
RayEngine("local").start()
print(os.nice(0), ray.get(ray.remote(lambda: os.nice(0)).remote()))
"""


def test_a_ray_started_here_runs_its_workers_at_the_commands_priority(tmp_path: Path) -> None:
    """Ray's own default puts them at niceness 15, where any other busy process of the
    same user takes their CPU; the local engine's workers run at the command's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_worker_niceness")}
    done = subprocess.run([sys.executable, "-c", STARTS_ITS_OWN], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    command, worker = done.stdout.split()[-2:]
    assert worker == command
