"""The commands that write transcripts: compress and restore, to a file, stdout, or
the input itself (atomically, keeping a backup, and only if nothing changed it)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from ..errors import EXIT_USAGE, CtxpackError, UsageError
from . import datasets
from .batch import many_inputs, not_in_place, single, the_one_input
from .common import (
    ConfigOpt,
    ForceOpt,
    FormatOpt,
    InPlaceOpt,
    ModelOpt,
    NoCacheOpt,
    OutputOpt,
    SkipOpt,
    app,
    plain,
    read_config,
    stderr,
    use_cores,
    warn,
)
from .flags import given, with_settings
from .guard import refuse_overwrites

RECENT_SECONDS = 5.0  # a file written this recently may still be open in an agent

ArchiveFromOpt = Annotated[str | None, typer.Option(
    "--archive-dir", metavar="DIR",
    help="Read originals from this folder (where compress --archive-dir put them, if "
    "moved since).")]


def _destination(file: str, output: str | None, in_place: bool, force: bool) -> str:
    """Where the result goes, with the conflicts and the in-place guard checked first."""
    if in_place:
        if output is not None:
            raise UsageError("--in-place and --output cannot be used together")
        if file == "-":
            raise UsageError("--in-place needs a file, not stdin")
        if force:
            return file
        age = time.time() - os.stat(file).st_mtime
        if age < RECENT_SECONDS:
            raise UsageError(f"{file} was modified {age:.1f} s ago; an agent may still be "
                             "writing it", "wait, or pass --force")
        from ..atomic import open_for_writing

        if writers := open_for_writing(file):
            raise UsageError(f"{file} is open for writing in {', '.join(writers)}",
                             "stop it first, or pass --force")
        return file
    if output in (None, "-"):
        return "-"
    if os.path.isdir(output):
        raise UsageError(f"{output}: is a folder", "--output takes a file name")
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"{output}: its folder does not exist")
    return output


def _write_result(dest: str, source: str, chunks: Iterable[bytes],
                  seen: os.stat_result | None, changed: bool = True) -> str | None:
    """Write to `dest` (`-` is stdout; its folder is made if need be). In place (`seen` is
    the input's state when it was read), replace FILE only if the run `changed` anything
    and nothing changed FILE since, keeping the original file itself as FILE.bak (or the
    next free name): that name is returned."""
    from ..atomic import replace_keeping, write_atomic

    if seen is not None and not changed:
        return None  # nothing done: the file is left as it is, with no backup
    if dest == "-":
        out = sys.stdout.buffer
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return None
    if seen is None:
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        write_atomic(dest, chunks)
        return None

    def check() -> None:
        now = os.stat(source)
        if (now.st_size, now.st_mtime_ns) != (seen.st_size, seen.st_mtime_ns):
            raise UsageError(f"{source} changed while it was being rewritten; it is left "
                             "as it is now", "run again once its writer is done")

    return replace_keeping(dest, chunks, check)


def _say_kept(backup: str | None) -> None:
    if backup is not None:
        from rich.markup import escape

        stderr().print(escape(f"the original is kept as {backup}: whatever still writes to "
                              "the file it had open writes there"))


FilesArg = Annotated[list[str], typer.Argument(
    metavar="FILE...", help="Transcripts: a file or - for stdin; or many files, folders "
    "(their *.jsonl) and globs, with --out-dir or --in-place.")]
OutDirOpt = Annotated[str | None, typer.Option(
    "--out-dir", metavar="DIR", help="With many inputs: write each below DIR, at the path "
    "it has below the folder (or as the file) given.")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", metavar="N", min=1,
    help="With many inputs: files at a time; with one big file, its workers; with "
    "datasets, the cores the local engine uses (default: every core).")]
SKIP_EXISTING = "Skip an input whose output is newer than it (a killed run resumes)"
SkipExistingOpt = Annotated[bool, typer.Option(
    "--skip-existing", help=f"{SKIP_EXISTING}; not with --in-place.")]
ShardOpt = Annotated[str | None, typer.Option(
    "--shard", metavar="I/N", help="With many inputs: only the I-th of N shares of the "
    "files (I from 0 to N-1), the same share whoever runs it; with a dataset, of its row "
    "groups.")]
# a batch's report and table (compress reports on one file too: its options differ)
ManyReportOpt = Annotated[str | None, typer.Option(
    "--report-json", metavar="PATH",
    help="With many inputs: what became of each file, as JSON (- for stdout).")]
ManyQuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="With many inputs: no table of the files on stderr.")]


@dataclass(frozen=True)
class _CompressJob:
    """What every file of a many-file compress is compressed with."""

    options: Any
    model: str | None
    format: str | None
    skip_invalid: bool
    table: Any
    strip_metadata: bool
    cache: bool
    dry_run: bool
    in_place: bool
    force: bool


def compress_one(job: Any, how: _CompressJob, alone: bool) -> Any:
    """One file of a many-file compress (run in a worker process when `alone`)."""
    from ..compression import compress_file
    from ..compression.limiting import of_report
    from .batch import Outcome, failed

    if alone:
        os.environ["CTXPACK_WORKERS"] = "1"  # the other cores have files of their own
    try:
        if how.in_place:
            _destination(job.source, None, True, how.force)
        seen = os.stat(job.source) if how.in_place else None
        result = compress_file(job.source, how.options, model=how.model, format=how.format,
                               skip_invalid=how.skip_invalid, table=how.table,
                               strip_metadata=how.strip_metadata, cache=how.cache,
                               dry_run=how.dry_run)
        backup = None
        try:
            r = result.report
            status = "planned" if how.dry_run else "written" if r.changed else "unchanged"
            if not how.dry_run:
                backup = _write_result(job.dest, job.source, result.chunks(), seen, r.changed)
        finally:
            result.close()
        return Outcome(job.source, job.dest, status, tokens_before=r.tokens_before,
                       tokens_after=r.tokens_after, backup=backup,
                       warnings=(*(w for w in (_estimated(r), _dropped(
                           r, how.options.archive, how.strip_metadata)) if w),
                           *of_report(r, how.options)))
    except (CtxpackError, OSError) as exc:
        return failed(job, exc)


@app.command()
@with_settings(after="format")
def compress(
    files: FilesArg,
    output: OutputOpt = None,
    in_place: InPlaceOpt = False,
    force: ForceOpt = False,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = None,
    skip_existing: SkipExistingOpt = False,
    shard: ShardOpt = None,
    model: ModelOpt = None,
    format: FormatOpt = None,
    strip_metadata: Annotated[bool, typer.Option(
        "--strip-metadata", help="Write API-ready records without ctxpack metadata (and so "
        "without the archive).")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Report what would be done; write nothing.")] = False,
    report_json: Annotated[str | None, typer.Option(
        "--report-json", metavar="PATH", help="Write the report as JSON here (- for stdout).")]
    = None,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No report table on stderr (warnings still show).")] = False,
    skip_invalid: SkipOpt = False,
    no_cache: NoCacheOpt = False,
    config: ConfigOpt = None,
    messages_column: datasets.MessagesColumnOpt = None,
    id_column: datasets.IdColumnOpt = None,
    engine: datasets.EngineOpt = "local",
    ray_address: datasets.RayAddressOpt = None,
    **flags: Any,
) -> None:
    """Shrink a transcript (or each row of a dataset) to fit its model; originals are
    archived for restore.

    --budget, --target, the --threshold share of the window and the hard limit are in
    the model's billed tokens, as `stats` gives the context as billed (what the agent
    sends but does not log included, calibrated where the model has no public
    tokenizer), not ctxpack's count of the file."""
    if datasets.wanted(files, messages_column):
        datasets.refuse("datasets", {"--dry-run": dry_run, "--strip-metadata": strip_metadata,
                                     "--in-place": in_place, "--force": force,
                                     "--skip-invalid": skip_invalid})
        raise typer.Exit(_compress_dataset(files, output, out_dir, model, format,
                                           messages_column, id_column,
                                           datasets.engine_of(engine, ray_address, jobs),
                                           no_cache, config, flags, quiet, report_json, shard,
                                           skip_existing))
    datasets.refuse("transcripts", {"--id-column": id_column, "--engine": engine != "local",
                                    "--ray-address": ray_address})
    not_in_place(in_place, skip_existing, "drop --skip-existing: a file already compressed "
                 "to its limits is left as it is")
    file = the_one_input(files, out_dir)
    if file is None:
        if output is not None:
            raise many_inputs(files)
        _check_outputs(in_place, strip_metadata)
        cfg, options = _settings(config, flags)
        how = _CompressJob(options, model, format, skip_invalid, cfg.models, strip_metadata,
                           not no_cache, dry_run, in_place, force)
        raise typer.Exit(_many(files, out_dir, in_place, not dry_run, jobs, skip_existing,
                               shard, compress_one, how, quiet, report_json,
                               also={"--archive-dir": options.archive_dir}))
    from ..compression import compress_file
    from ..render.progress import FileProgress

    if jobs is not None:  # one big file's workers
        use_cores(jobs)
    dest = _destination(file, output, in_place, force)
    _check_outputs(in_place, strip_metadata)
    cfg, options = _settings(config, flags)
    refuse_overwrites(file, None if dry_run else dest, in_place,
                       {"--report-json": report_json, "--archive-dir": options.archive_dir})
    if single(file, dest, skip_existing, shard, quiet, report_json):
        return
    seen = os.stat(file) if in_place else None
    with FileProgress([file], stderr()) as advance:  # a big file, on a terminal
        result = compress_file(file, options, model=model, format=format,
                               skip_invalid=skip_invalid, table=cfg.models,
                               strip_metadata=strip_metadata, cache=not no_cache,
                               dry_run=dry_run, progress=advance(file))
    _compress_report(result.report, quiet, dry_run, report_json)
    _warn_if_dropped(result.report, options.archive, strip_metadata)
    try:
        if not dry_run:
            _say_kept(_write_result(dest, file, result.chunks(), seen, result.report.changed))
    finally:
        result.close()


def _compress_dataset(files: list[str], output: str | None, out_dir: str | None,
                      model: str | None, format: str | None, column: str | None,
                      id_column: str | None, engine: Any,
                      no_cache: bool, config: str | None, flags: dict[str, Any], quiet: bool,
                      report_json: str | None, shard: str | None, skip_existing: bool) -> int:
    from ..compression.settings import settings_of
    from .batch import parse_shard

    cfg, options = _settings(config, flags)
    rows = datasets.rows_of(column, id_column, format, model, cfg.models, not no_cache)
    return datasets.compress(files, output, out_dir, rows,
                             engine, settings_of(options), quiet,
                             report_json, parse_shard(shard), skip_existing)


def _many(files: list[str], out_dir: str | None, in_place: bool, writes: bool,
          jobs: int | None, skip_existing: bool, shard: str | None, task: Any, how: Any,
          quiet: bool, report_json: str | None, suffix: str | None = None,
          session: str | None = None, also: dict[str, str | None] | None = None) -> int:
    """Run `task` on every file given (each output's name ending in `suffix`, if one is
    given; of an OpenCode storage folder, only its `session` if one is given; `also`: the
    other files the options name that the run writes); the run's exit code."""
    from ..workers import worker_count
    from . import batch
    from .read import Files

    if in_place and out_dir is not None:
        raise UsageError("--in-place and --out-dir cannot be used together")
    inputs = Files(files, session=session)
    if not inputs.paths:  # each said why already
        return EXIT_USAGE
    todo, fresh = batch.jobs_of(inputs, out_dir, in_place, writes, batch.parse_shard(shard),
                                skip_existing, suffix,
                                {"--report-json": report_json, **(also or {})})
    outcomes = batch.run(todo, task, how, jobs or worker_count()) if todo else []
    code = batch.finish(outcomes, fresh, quiet, report_json)
    return max(code, EXIT_USAGE if inputs.unread else 0)


def _check_outputs(in_place: bool, strip_metadata: bool) -> None:
    """Refuse what would lose the archive, before any work."""
    if strip_metadata and in_place:
        raise UsageError("--strip-metadata would drop the archive from the only copy",
                         "write it elsewhere with --output")


def _settings(config: str | None, flags: dict[str, Any]) -> tuple[Any, Any]:
    """The config file, and the compress Options from it, CTXPACK_* variables and flags
    (later ones win); what the file may not set, and a variable that looks like a
    misspelt setting, are warned of."""
    from ..compression.settings import resolve
    from ..settings import from_env, misspelt

    cfg = read_config(config)
    for message in [*cfg.warnings, *misspelt(os.environ)]:
        warn(message)
    return cfg, resolve(cfg.compress, from_env(os.environ), given(flags))


def _warn_if_dropped(report: Any, archive: bool, strip_metadata: bool) -> None:
    """Say so when what compress replaced is kept nowhere."""
    if message := _dropped(report, archive, strip_metadata):
        warn(message)


def _dropped(report: Any, archive: bool, strip_metadata: bool) -> str | None:
    if report.changed and strip_metadata:
        return ("--strip-metadata: the output holds no archive; keep the input to have the "
                "replaced originals")
    if report.changed and not archive:
        return "--no-archive: the replaced originals are not kept; restore cannot bring them back"
    return None


def _estimated(report: Any) -> str | None:
    """The note that counts are estimates, for want of tiktoken's files."""
    return report.model_note if not report.exact and "tiktoken" in report.model_note else None


def _compress_report(report: Any, quiet: bool, dry_run: bool, json_path: str | None) -> None:
    from ..render import compress as render

    if note := _estimated(report):
        warn(note)
    if json_path == "-":
        sys.stdout.buffer.write(render.to_json(report))
    elif json_path:
        from ..atomic import write_atomic

        write_atomic(json_path, [render.to_json(report)])
    if not quiet:
        render.print_report(stderr(), report, dry_run=dry_run)
    elif report.warnings:
        for w in report.warnings:
            warn(w)


def restore_one(job: Any, how: tuple[str | None, int, bool, bool], alone: bool) -> Any:
    """One file of a many-file restore (`how`: the archive folder, the growth limit, in
    place, and --force)."""
    from ..undo import restoring
    from .batch import Outcome, failed

    folder, max_growth, in_place, force = how
    try:
        if in_place:
            _destination(job.source, None, True, force)
        seen = os.stat(job.source) if in_place else None
        backup = None
        with restoring(job.source, folder=folder, max_growth=max_growth) as restored:
            status = "written" if restored.layers else "unchanged"
            backup = _write_result(job.dest, job.source, restored.chunks(), seen,
                                   bool(restored.layers))
        return Outcome(job.source, job.dest, status, backup=backup,
                       warnings=() if restored.layers else (_nothing(restored.name, in_place),))
    except (CtxpackError, OSError) as exc:
        return failed(job, exc)


def _nothing(name: str, in_place: bool) -> str:
    """The warning for a file restore finds nothing to undo in."""
    return (f"{name}: nothing to restore (no ctxpack items); "
            + ("it is left as it is" if in_place else "writing it unchanged"))


@app.command()
def restore(
    files: FilesArg,
    output: OutputOpt = None,
    in_place: InPlaceOpt = False,
    force: ForceOpt = False,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = None,
    skip_existing: SkipExistingOpt = False,
    shard: ShardOpt = None,
    only: Annotated[str | None, typer.Option(
        "--only", metavar="ID", help="Expand just this item (ids are in the markers and --list).")]
    = None,
    list_: Annotated[bool, typer.Option(
        "--list", help="List the compressed items (id, kind, line) instead of restoring.")]
    = False,
    archive_dir: ArchiveFromOpt = None,
    max_growth: Annotated[int | None, typer.Option(
        "--max-growth", metavar="N", min=1,
        help="Refuse to write more than N times the bytes given (default 2000: far above "
        "what compress makes; archives crafted to expand stop there).")] = None,
    quiet: ManyQuietOpt = False,
    report_json: ManyReportOpt = None,
    messages_column: datasets.MessagesColumnOpt = None,
    engine: datasets.EngineOpt = "local",
    ray_address: datasets.RayAddressOpt = None,
) -> None:
    """Undo compress: give back the original transcript, byte for byte (a dataset's
    messages column, value for value)."""
    from ..undo import MAX_GROWTH, items, restoring

    if datasets.wanted(files, messages_column):
        datasets.refuse("datasets", {"--only": only, "--list": list_, "--in-place": in_place,
                                     "--force": force})
        from .batch import parse_shard

        rows = datasets.rows_of(messages_column, None, None, None, None, False)
        raise typer.Exit(datasets.restore(files, output, out_dir, rows, archive_dir,
                                          datasets.engine_of(engine, ray_address, jobs),
                                          quiet, report_json, skip_existing,
                                          parse_shard(shard), max_growth))
    datasets.refuse("transcripts", {"--engine": engine != "local",
                                    "--ray-address": ray_address})
    not_in_place(in_place, skip_existing, "drop --skip-existing: a file already restored is "
                 "left as it is")
    file = the_one_input(files, out_dir)
    if file is None:
        if output is not None or only is not None or list_:
            raise many_inputs(files, "-o" if output is not None else
                              "--only" if only is not None else "--list")
        raise typer.Exit(_many(files, out_dir, in_place, True, jobs, skip_existing, shard,
                               restore_one, (archive_dir, max_growth or MAX_GROWTH, in_place,
                                             force), quiet, report_json))
    dest = _destination(file, output, in_place, force)
    refuse_overwrites(file, None if list_ else dest, in_place, {"--report-json": report_json})
    if single(file, dest, skip_existing, shard, quiet, report_json):
        return
    if list_:
        for item in items(file):
            print("\t".join(plain(str(x)) for x in item))
        return
    seen = os.stat(file) if in_place else None
    with restoring(file, only=only, folder=archive_dir,
                   max_growth=max_growth or MAX_GROWTH) as restored:
        if restored.layers == 0:
            warn(_nothing(restored.name, in_place))
        _say_kept(_write_result(dest, file, restored.chunks(), seen, bool(restored.layers)))
