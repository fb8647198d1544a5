"""`ctxpack convert`: a transcript as API request bodies or as a document to read; many
transcripts (files, folders, globs) each to a file of its own below --out-dir, through
the runner compress and restore use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from ..errors import CtxpackError, InputError
from .batch import many_inputs, single, the_one_input
from .common import (
    ConfigOpt,
    FormatOpt,
    ModelOpt,
    OutputOpt,
    SessionOpt,
    SkipOpt,
    app,
    read_config,
    warn,
)
from .guard import refuse_overwrites
from .write import (
    SKIP_EXISTING,
    JobsOpt,
    ManyQuietOpt,
    ManyReportOpt,
    OutDirOpt,
    ShardOpt,
    _destination,
    _many,
    _write_result,
)

# (convert has no --in-place: what it writes is another format, not the input's to replace)
SkipExistingOpt = Annotated[bool, typer.Option("--skip-existing", help=f"{SKIP_EXISTING}.")]

TARGETS = ("openai", "anthropic", "markdown", "html")
SUFFIXES = {"openai": ".jsonl", "anthropic": ".jsonl", "markdown": ".md", "html": ".html"}


def _target(value: str) -> str:
    if value not in TARGETS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(TARGETS)}")
    return value


@dataclass(frozen=True)
class _ConvertJob:
    """What every file of a convert is converted with."""

    to: str
    all_: bool
    full: bool
    format: str | None
    model: str | None
    skip_invalid: bool
    session: str | None
    table: Any


def _converted(file: str, how: _ConvertJob) -> tuple[bytes, list[str]]:
    """The file as `how.to` has it, and what had to change (one line each)."""
    from ..loader import load

    transcript = load(file, how.format, skip_invalid=how.skip_invalid, session=how.session)
    if how.all_:
        from ..convert import whole_log

        transcript = whole_log(transcript)
    if not transcript.messages:
        from ..formats.base import no_input

        t = transcript
        raise InputError(t.path, None, "nothing to convert: "
                         + no_input(len(t.outside), len(t.sidechain), len(t.skipped),
                                    len(t.failed), t.format),
                         "--all converts the whole log" if t.outside or t.sidechain else None)
    # records its agent would read otherwise, or never writes (a part of no type), which
    # the conversion reads past: said, as a message may be missing
    odd = [f"{transcript.path}: {len(transcript.problems):,} "
           f"record{'s' if len(transcript.problems) > 1 else ''} read past or guessed at "
           "(`ctxpack validate` names each)"] if transcript.problems else []
    if how.to in ("openai", "anthropic"):
        from ..convert import Notes, request_bodies
        from ..jsonl import dumps

        notes = Notes()
        bodies = request_bodies(transcript, how.to, notes, how.model, keep_last_reply=how.all_)
        data = b"".join(dumps(body) + b"\n" for body in bodies)
        return data, [*odd, *(f"{transcript.path}: {line}" for line in notes.lines())]
    from ..breakdown import transcript_models
    from ..tokens import TokenCounter
    from ..view import build_view

    counter = TokenCounter(how.model or how.table.choose(transcript_models(transcript)),
                           how.table)
    view = build_view(transcript, counter, flagged=how.model is not None, full=how.full)
    if how.to == "markdown":
        from ..render.document import to_markdown

        text = to_markdown(view)
    else:
        from ..breakdown import stats
        from ..render.charts import charts_of
        from ..render.document import to_html

        # (the context over the run drawn as billed, as `stats --html` draws it; the whole
        # log, `--all`, is no context: drawn as counted)
        bill = None if how.all_ else stats(transcript, how.model, top=0,
                                           table=how.table).context
        text = to_html(view, charts_of(transcript, counter, link=True,
                                       flagged=how.model is not None, bill=bill,
                                       whole=how.all_))
    # the page shows a lone surrogate (no UTF-8 for it) as U+FFFD: said, as for the bodies
    from ..convert import LONE_REPLACED, Notes
    from ..jsonl import lone_count

    notes = Notes()
    # (of each record once: the turns a message is split in hold the same record)
    records = {id(m.raw): m.raw for m in transcript.messages}
    notes.add(LONE_REPLACED, sum(lone_count(raw) for raw in records.values()))
    return text.encode("utf-8"), [*odd, *(f"{transcript.path}: {line}" for line in notes.lines())]


def convert_one(job: Any, how: _ConvertJob, alone: bool) -> Any:
    """One file of a many-file convert (run in a worker process when `alone`)."""
    from .batch import Outcome, failed

    try:
        data, notes = _converted(job.source, how)
        _write_result(job.dest, job.source, [data], None)
        return Outcome(job.source, job.dest, "written", warnings=tuple(notes))
    except (CtxpackError, OSError) as exc:
        return failed(job, exc)


@app.command()
def convert(
    files: Annotated[list[str], typer.Argument(
        metavar="FILE...", help="Transcripts: a file or - for stdin; or many files, folders "
        "(their *.jsonl) and globs, with --out-dir.")],
    to: Annotated[str, typer.Option(
        "--to", metavar="TARGET", callback=_target,
        help="openai (Chat Completions {\"messages\"} a line per conversation), anthropic "
        "(Messages {\"system\", \"messages\"} a line per conversation), markdown or html.")],
    output: OutputOpt = None,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = None,
    skip_existing: SkipExistingOpt = False,
    shard: ShardOpt = None,
    all_: Annotated[bool, typer.Option(
        "--all", help="The whole log: also the messages before a compaction, off the "
        "branch, and of sub-agents, in file order, and for anthropic the replies it ends "
        "on (default: what the model sees, an Anthropic body ending on the user's turn).")]
    = False,
    full: Annotated[bool, typer.Option(
        "--full", help="markdown, html: long outputs whole instead of folded to their first "
        "and last lines.")] = False,
    format: FormatOpt = None,
    model: ModelOpt = None,
    skip_invalid: SkipOpt = False,
    report_json: ManyReportOpt = None,
    quiet: ManyQuietOpt = False,
    session: SessionOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write a transcript as API-ready messages or as a document a person reads."""
    how = _ConvertJob(to, all_, full, format, model, skip_invalid, session,
                      read_config(config).models)
    file = the_one_input(files, out_dir, session)
    if file is None:
        if output is not None:
            raise many_inputs(files)
        raise typer.Exit(_many(files, out_dir, False, True, jobs, skip_existing, shard,
                               convert_one, how, quiet, report_json, SUFFIXES[to], session))
    dest = _destination(file, output, in_place=False, force=False)
    refuse_overwrites(file, dest, False, {"--report-json": report_json}, page=to == "html",
                      hint="name another file with -o: the input stays as it is")
    if single(file, dest, skip_existing, shard, quiet, report_json):
        return
    data, notes = _converted(file, how)
    for line in notes:
        warn(line)
    _write_result(dest, file, [data], None)
