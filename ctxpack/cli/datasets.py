"""stats, validate, compress and restore of trajectory datasets (a .parquet file, or a
JSONL file of rows with --messages-column or --per-row): each reads the dataset by
batches, runs the library's table function on each, and renders or writes the result.
A row that fails is reported and counted; the run then exits 1, its output complete."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from ..errors import EXIT_CHECK_FAILED, UsageError
from .common import error, plain, stderr

MessagesColumnOpt = Annotated[str | None, typer.Option(
    "--messages-column", metavar="NAME", help="Read a dataset of one trajectory a row "
    "(.parquet, or JSONL rows): the column that holds each row's messages (default "
    "messages).")]
IdColumnOpt = Annotated[str | None, typer.Option(
    "--id-column", metavar="NAME", help="A dataset's column that names its rows (default: "
    "the first of id, instance_id, trajectory_id, task_id present).")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", metavar="ENGINE", help="A dataset's rows run here (local) or on Ray (ray; "
    "needs ctxpack[ray]).")]
RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", metavar="ADDRESS", help="With --engine ray: the cluster to join "
    "(default: $RAY_ADDRESS, else a Ray started here).")]


def wanted(files: list[str], column: str | None, per_row: str | None = None) -> bool:
    """Are these inputs datasets: Parquet files, or JSONL read as rows?"""
    from ..dataset.files import is_parquet

    parquet = [f for f in files if is_parquet(f)]
    if parquet and len(parquet) != len(files):
        raise UsageError("datasets (.parquet) and transcripts go in separate runs")
    return bool(parquet) or column is not None or per_row is not None


def rows_of(column: str | None, id_column: str | None, format: str | None,
            model: str | None, models: Any, cache: bool) -> Any:
    from ..dataset import MESSAGES, Rows
    from ..models import TABLE

    return Rows(column=column or MESSAGES, format=format or "openai", id_column=id_column,
                model=model, models=TABLE if models is None else models, cache=cache)


def engine_of(name: str, address: str | None) -> Any:
    """The engine rows run on: None for this process, else a Ray engine."""
    if name == "local":
        if address is not None:
            raise UsageError("--ray-address needs --engine ray")
        return None
    if name != "ray":
        raise UsageError(f"unknown engine {name!r}", "engines: local, ray")
    from ..dataset.on_ray import RayEngine

    return RayEngine(address)


def stats(files: list[str], rows: Any, engine: Any, per_row: str | None,
          max_tokens: int | None, output: str) -> int:
    """Stats of each dataset, their per-row table written to `per_row`; the exit code."""
    from ..dataset import stats_table
    from ..dataset.files import results, written
    from ..dataset.totals import DatasetStats
    from ..render import dataset as render

    if per_row is not None and len(files) != 1:
        raise UsageError("--per-row takes one dataset")
    if per_row is not None:
        _not_the_input(files[0], per_row, "--per-row")
    if output not in ("table", "json"):
        raise UsageError(f"a dataset's stats print as table or json, not {output}")
    done = []
    for path in files:
        totals = DatasetStats(path, max_tokens=max_tokens)
        if per_row is not None:
            with written(per_row) as add:
                for table in results(path, rows, stats_table, engine):
                    totals.add(table)
                    add(table)
        else:
            for table in results(path, rows, stats_table, engine):
                totals.add(table)
        done.append(totals)
    if output == "json":
        sys.stdout.buffer.write(render.to_json(done))
    else:
        from rich.console import Console

        for totals in done:
            render.print_stats(Console(), totals)
    for totals in done:
        for problem in totals.errors:
            error(problem)
        if max_tokens is not None and totals.over:
            from rich.markup import escape

            stderr().print(f"[red]over budget:[/red] {escape(plain(totals.path))}: "
                           f"{totals.over:,} rows over --max-tokens {max_tokens:,}",
                           highlight=False)
    failed = any(t.failed for t in done)
    over = max_tokens is not None and any(t.over for t in done)
    return EXIT_CHECK_FAILED if failed or over else 0


def validate(files: list[str], rows: Any, engine: Any, json_out: bool) -> int:
    """Problems of each row, one line each (or JSON); exit 1 if any row has one."""
    import orjson

    from ..dataset import validate_table
    from ..dataset.files import results

    bad = 0
    docs = []
    for path in files:
        counts = {"rows": 0, "invalid": 0}
        for table in results(path, rows, validate_table, engine):
            for r in table.to_pylist():
                counts["rows"] += 1
                if r["valid"]:
                    continue
                counts["invalid"] += 1
                if json_out:
                    docs.append({"path": path, "row": r["row"], "id": r["id"],
                                 "problems": r["problems"], "error": r["error"]})
                elif r["error"] is not None:  # it names the file and the row
                    print(plain(r["error"]))
                else:
                    named = f" (id {r['id']})" if r["id"] != str(r["row"]) else ""
                    for p in r["problems"]:
                        print(plain(f"{path} row {r['row']}{named}: {p}"))
        bad += counts["invalid"]
        if not json_out:
            stderr().print(f"{path}: {counts['rows']:,} rows, {counts['invalid']:,} with "
                           "problems", highlight=False)
    if json_out:
        sys.stdout.buffer.write(orjson.dumps({"schema_version": 1, "rows": docs},
                                             option=orjson.OPT_INDENT_2) + b"\n")
    return EXIT_CHECK_FAILED if bad else 0


def _destination(file: str, output: str | None) -> str:
    from ..dataset.files import is_parquet

    if output in (None, "-") or not is_parquet(output):
        raise UsageError("a dataset is written as a Parquet file", "pass -o OUT.parquet")
    _not_the_input(file, output, "--output")
    return output


def _not_the_input(file: str, output: str, flag: str) -> None:
    if output == file or os.path.exists(output) and os.path.exists(file) \
            and os.path.samefile(output, file):
        raise UsageError(f"{flag} is the input file", "write it elsewhere")


def _up_to_date(file: str, dest: str) -> bool:
    """Is `dest` there already, newer than `file` (a run that was done, for --skip-existing)?"""
    try:
        return os.stat(dest).st_mtime_ns >= os.stat(file).st_mtime_ns
    except OSError:
        return False


def compress(file: str, output: str | None, rows: Any, engine: Any, settings: dict[str, Any],
             quiet: bool, report_json: str | None, shard: tuple[int, int] | None = None,
             skip_existing: bool = False) -> int:
    """Compress a dataset (or the share `shard` of its rows) to `output`; the exit code."""
    from ..dataset import compress_table
    from ..dataset.files import results, written
    from ..dataset.totals import DatasetCompressed
    from ..render import dataset as render

    dest = _destination(file, output)
    if skip_existing and _up_to_date(file, dest):
        if not quiet:
            stderr().print(plain(f"{dest} is newer than {file}: skipped"), markup=False,
                           highlight=False)
        return 0
    done = DatasetCompressed(file, dest)
    with written(dest) as add:
        for table in results(file, rows, compress_table, engine, shard, **settings):
            done.add(table)
            add(table)
    if report_json is not None:
        from ..atomic import write_atomic

        text = render.to_json([done])
        sys.stdout.buffer.write(text) if report_json == "-" else write_atomic(report_json,
                                                                              [text])
    if not quiet:
        render.print_compressed(stderr(), done)
    for problem in done.errors:
        error(problem)
    return EXIT_CHECK_FAILED if done.failed else 0


def restore(file: str, output: str | None, archive_dir: str | None, engine: Any) -> int:
    from ..dataset import Rows
    from ..dataset.files import results, written

    dest = _destination(file, output)
    with written(dest) as add:
        for table in results(file, Rows(), _restore_batch, engine, archive_dir=archive_dir):
            add(table)
    return 0


def _restore_batch(table: Any, *, name: str, start: int, archive_dir: str | None = None,
                   **rows: Any) -> Any:
    from ..dataset import restore_table

    return restore_table(table, archive_dir=archive_dir, name=name, start=start)
