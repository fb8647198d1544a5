"""stats, validate, compress and restore of trajectory datasets (a .parquet file, or a
JSONL file of rows with --messages-column or --per-row): each reads the dataset by
batches, runs the library's table function on each, and renders or writes the result.
A row that fails is reported and counted; the run then exits 1, its output complete."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import EXIT_CHECK_FAILED, EXIT_USAGE, CtxpackError, UsageError
from ..render import counted, percent
from .common import error, plain, stderr, use_cores, warn

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
    "(default: $RAY_ADDRESS, else a Ray started here; auto: the one `ray start` runs on "
    "this machine).")]


def refuse(kind: str, flags: dict[str, Any]) -> None:
    """The first of `flags` (name: value) given, refused in one line: it is not for `kind`
    (datasets, or transcripts) and would otherwise be dropped without a word."""
    other = "transcripts" if kind == "datasets" else "datasets"
    for name, value in flags.items():
        if value is not None and value is not False:
            raise UsageError(f"{name} is for {other}, not {kind}")


def wanted(files: list[str], column: str | None, per_row: str | None = None) -> bool:
    """Are these inputs datasets: Parquet files (or folders and globs of them), or JSONL
    read as rows?"""
    parquet = [f for f in files if _parquet_arg(f)]
    if parquet and len(parquet) != len(files):
        raise UsageError("datasets (.parquet) and transcripts go in separate runs")
    return bool(parquet) or column is not None or per_row is not None


def _parquet_arg(arg: str) -> bool:
    """A Parquet file, a glob of them, or a folder that holds some."""
    from ..dataset.files import is_parquet

    if os.path.isdir(arg):
        return any(is_parquet(str(p)) for p in Path(arg).rglob("*") if p.is_file())
    return is_parquet(arg)


def dataset_files(args: list[str]) -> Any:
    """The datasets named by files, folders (their .parquet files, recursively; where
    there are none, their .jsonl files) and globs; one not found is said and left out."""
    from ..dataset.files import is_parquet
    from .read import Files

    def in_folder(folder: str) -> list[str]:
        found = sorted(str(p) for p in Path(folder).rglob("*") if p.is_file())
        return [p for p in found if is_parquet(p)] or [p for p in found
                                                        if p.endswith(".jsonl")]

    return Files(args, in_folder, "datasets (.parquet or .jsonl files)", urls=True)


def rows_of(column: str | None, id_column: str | None, format: str | None,
            model: str | None, models: Any, cache: bool) -> Any:
    from ..dataset import MESSAGES, Rows
    from ..models import TABLE

    return Rows(column=column or MESSAGES, format=format, id_column=id_column,
                model=model, models=TABLE if models is None else models, cache=cache)


def engine_of(name: str, address: str | None, jobs: int | None = None) -> Any:
    """The engine rows run on: None for this process (on `jobs` cores, default every
    one), else a Ray engine."""
    if name == "local":
        if address is not None:
            raise UsageError("--ray-address needs --engine ray")
        if jobs is not None:  # the local engine's workers are as many as ctxpack's
            use_cores(jobs)
        return None
    if name != "ray":
        raise UsageError(f"unknown engine {name!r}", "engines: local, ray")
    if jobs is not None:
        raise UsageError("-j is for the local engine", "on Ray, the cluster's CPUs do the rows")
    from ..dataset.on_ray import RayEngine

    return RayEngine(address)


def stats(files: list[str], rows: Any, engine: Any, per_row: str | None,
          max_tokens: int | None, output: str, max_ratio: float | None = None) -> int:
    """Stats of each dataset, their per-row table written to `per_row`; the exit code."""
    from ..dataset import stats_table
    from ..dataset.files import results, written
    from ..dataset.totals import DatasetStats
    from ..render import dataset as render

    inputs = dataset_files(files)
    if not inputs.paths:  # each said why already
        return EXIT_USAGE
    files = inputs.paths
    if per_row is not None and len(files) != 1:
        raise UsageError("--per-row takes one dataset")
    if per_row is not None:
        from .guard import Writes

        Writes(files).output(per_row, "--per-row")
    if output not in ("table", "json"):
        raise UsageError(f"a dataset's stats print as table or json, not {output}")
    done = []
    with render.RowProgress(files, stderr()) as advance:
        for path in files:
            totals = DatasetStats(path, max_tokens=max_tokens, max_ratio=max_ratio)
            try:
                with written(per_row) if per_row is not None else nullcontext(None) as add:
                    for table in results(path, rows, stats_table, engine):
                        totals.add(table)
                        advance(path, table.num_rows)
                        if add is not None:
                            add(table)
            except (CtxpackError, OSError) as exc:  # said, and the others still counted
                inputs.not_read(path, exc)
                continue
            done.append(totals)
    total = DatasetStats.across(done)
    if output == "json":
        sys.stdout.buffer.write(render.to_json(done, total, inputs.unread))
    else:
        from rich.console import Console

        for totals in done + ([total] if len(done) > 1 else []):
            render.print_stats(Console(), totals)
    for totals in done:
        for problem in totals.errors:
            error(problem)
        _over_budget(totals)
    failed = any(t.failed for t in done)
    over = any(t.over or t.over_ratio for t in done)
    return EXIT_USAGE if inputs.unread else EXIT_CHECK_FAILED if failed or over else 0


def _over_budget(totals: Any) -> None:
    """Say how many of a dataset's rows are over --max-tokens and over --max-ratio."""
    from rich.markup import escape

    for count, limit in ((totals.over, f"--max-tokens {totals.max_tokens or 0:,}"),
                         (totals.over_ratio,
                          f"--max-ratio {totals.max_ratio} ({percent(totals.max_ratio or 0)})")):
        if count:
            stderr().print(f"[red]over budget:[/red] {escape(plain(totals.path))}: "
                           f"{counted(count, 'row')} over {limit}", highlight=False)


def validate(files: list[str], rows: Any, engine: Any, json_out: bool) -> int:
    """Problems of each row, one line each (or JSON); exit 1 if any row has one."""
    from ..dataset import validate_table
    from ..dataset.files import results
    from ..jsonl import dumps

    inputs = dataset_files(files)
    if not inputs.paths:  # each said why already
        return EXIT_USAGE
    bad = 0
    docs = []
    for path in inputs.paths:
        counts = {"rows": 0, "invalid": 0}
        try:
            for table in results(path, rows, validate_table, engine):
                for r in table.to_pylist():
                    counts["rows"] += 1
                    if r["valid"]:
                        continue
                    counts["invalid"] += 1
                    if json_out:
                        docs.append({"path": path, "row": r["row"], "line": r["line"],
                                     "id": r["id"], "problems": r["problems"],
                                     "error": r["error"]})
                    elif r["error"] is not None:  # it names the file and the row
                        print(plain(r["error"]))
                    else:  # named as its read error would be: FILE:LINE or FILE row N
                        for p in r["problems"]:
                            print(plain(f"{r['where']}: {p}"))
        except (CtxpackError, OSError) as exc:  # said, and the others still checked
            inputs.not_read(path, exc)
            continue
        bad += counts["invalid"]
        if not json_out:
            stderr().print(f"{path}: {counted(counts['rows'], 'row')}, {counts['invalid']:,} with "
                           "problems", highlight=False)
    if json_out:
        sys.stdout.buffer.write(dumps({"schema_version": 1, "rows": docs,
                                       "unread": inputs.unread}, indent=2) + b"\n")
    return EXIT_USAGE if inputs.unread else EXIT_CHECK_FAILED if bad else 0


def _destination(file: str, output: str | None) -> str:
    """Where one dataset's result goes: a file of the input's own kind."""
    from ..dataset.files import is_parquet, output_kind

    kind = "parquet" if is_parquet(file) else "jsonl"
    if output in (None, "-") or output_kind(output) != kind:
        raise UsageError(f"a dataset is written as its input is ({kind})",
                         f"pass -o OUT.{kind}" + (", or --out-dir DIR" if output is None
                                                  else ""))
    return output


def _each(files: list[str], output: str | None, out_dir: str | None, skip_existing: bool,
          quiet: bool, report_json: str | None, one: Any,
          shard: tuple[int, int] | None = None, archive_dir: str | None = None) -> int:
    """`one(source, dest, advance)` of each dataset: with `-o`, of the one given; with
    --out-dir, of every dataset the files, folders and globs name, written to the same
    path below DIR, one after another (each on all cores), a bad one said and skipped,
    and a row a dataset in the summary; `shard` (i, n) takes the i-th of n shares of
    the datasets; `archive_dir`, where compress keeps originals. `one` returns an
    Outcome; the exit code."""
    from ..render.dataset import RowProgress
    from .batch import failed, finish, jobs_of, one_input, skipped, write_report
    from .guard import refuse_overwrites

    also = {"--report-json": report_json, "--archive-dir": archive_dir}
    if out_dir is None:
        if not one_input(files, out_dir):
            raise UsageError("more than one dataset (or a folder of them) needs --out-dir DIR",
                             "-o takes one dataset")
        dest = _destination(files[0], output)
        refuse_overwrites(files[0], dest, False, also, hint="write it elsewhere")
        if skipped(files[0], dest, skip_existing, quiet, report_json):
            return 0
        with RowProgress(files, stderr()) as advance:
            outcome = one(files[0], dest, advance)
        for message in outcome.warnings:  # (said once for the run, as of many datasets)
            warn(message)
        if report_json is not None:
            write_report([outcome], report_json)
        return outcome.code
    if output is not None:
        raise UsageError("-o and --out-dir cannot be used together")
    inputs = dataset_files(files)
    if not inputs.paths:  # each said why already
        return EXIT_USAGE
    todo, fresh = jobs_of(inputs, out_dir, False, True, shard, skip_existing, also=also)
    outcomes = []
    with RowProgress([j.source for j in todo], stderr()) as advance:
        for job in todo:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(job.dest)), exist_ok=True)
                outcomes.append(one(job.source, _destination(job.source, job.dest), advance))
            except (CtxpackError, OSError) as exc:
                outcomes.append(failed(job, exc))
                error(outcomes[-1].problem)
    code = finish(outcomes, fresh, quiet, report_json)
    return max(code, EXIT_USAGE if inputs.unread else 0)


def compress(files: list[str], output: str | None, out_dir: str | None, rows: Any,
             engine: Any, settings: dict[str, Any], quiet: bool, report_json: str | None,
             shard: tuple[int, int] | None = None, skip_existing: bool = False) -> int:
    """Compress each dataset; the exit code. `shard` takes a share of the datasets with
    --out-dir (each job then writes files of its own), of the one's row groups with -o."""
    from ..dataset.files import results, written
    from ..dataset.packing import compress_batch
    from ..dataset.totals import DatasetCompressed
    from ..render import dataset as render
    from .batch import Outcome

    one_file = out_dir is None
    of_rows = shard if one_file else None

    def one(file: str, dest: str, advance: Any) -> Any:
        done = DatasetCompressed(file, dest)
        said: dict[str, None] = {}
        with written(dest, rows.column) as add:
            for table, warnings in results(file, rows, compress_batch, engine, of_rows,
                                           **settings):
                done.add(table)
                add(table)
                said.update(dict.fromkeys(warnings))
                advance(file, table.num_rows)
        for problem in done.errors:
            error(problem)
        if one_file and not quiet:
            render.print_compressed(stderr(), done)
        return Outcome(file, dest, "written" if done.changed else "unchanged",
                       EXIT_CHECK_FAILED if done.failed else 0,
                       render.failed_rows(done.failed) if done.failed else "",
                       done.tokens_before, done.tokens_after, warnings=tuple(said),
                       rows=done.rows, rows_compressed=done.changed, rows_failed=done.failed)

    return _each(files, output, out_dir, skip_existing, quiet, report_json, one,
                 None if one_file else shard, settings.get("archive_dir"))


def restore(files: list[str], output: str | None, out_dir: str | None, rows: Any,
            archive_dir: str | None, engine: Any, quiet: bool = False,
            report_json: str | None = None, skip_existing: bool = False,
            shard: tuple[int, int] | None = None, max_growth: int | None = None) -> int:
    """Restore each dataset; one that was never compressed is written as it is, with a
    warning (as a transcript is). `shard` is taken as compress takes it; no row's
    original may come to more than `max_growth` times the row (see undo.MAX_GROWTH)."""
    from ..dataset.files import archived, results, written
    from .batch import Outcome
    of_rows = shard if out_dir is None else None

    def one(file: str, dest: str, advance: Any) -> Any:
        nothing = not archived(file)
        if nothing:
            warn(f"{file}: nothing to restore (no ctxpack column); writing it unchanged")
        count = 0
        with written(dest, rows.column) as add:
            for table in results(file, rows, _restore_batch, engine, of_rows,
                                 archive_dir=archive_dir, max_growth=max_growth):
                add(table)
                advance(file, table.num_rows)
                count += table.num_rows
        return Outcome(file, dest, "unchanged" if nothing else "written", rows=count)

    return _each(files, output, out_dir, skip_existing, quiet, report_json, one,
                 None if out_dir is None else shard)


def _restore_batch(table: Any, *, name: str, start: int, archive_dir: str | None = None,
                   max_growth: int | None = None, **rows: Any) -> Any:
    from ..dataset import restore_table
    from ..undo import MAX_GROWTH

    return restore_table(table, archive_dir=archive_dir, name=name, start=start,
                         max_growth=max_growth or MAX_GROWTH)
