"""The commands that read transcripts: stats, show, validate, count, models and
calibrate."""

from __future__ import annotations

import glob
import os
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer

from ..errors import EXIT_CHECK_FAILED, EXIT_USAGE, CtxpackError, InputError, UsageError
from ..render import counted, percent, shortened
from . import datasets
from .common import (
    ConfigOpt,
    FormatOpt,
    ModelOpt,
    NoCacheOpt,
    SessionOpt,
    SkipOpt,
    app,
    error,
    plain,
    problem_of,
    read_config,
    stderr,
    use_cores,
    warn,
)

OUTPUT_FORMATS = ("table", "json", "csv", "markdown")
TRANSCRIPT_SUFFIXES = (".jsonl",)
# what a folder gives a transcript command, named where it gives none
TRANSCRIPTS_BELOW = ("*.jsonl files, Gemini CLI chats/ folders (session-*.json), Cline tasks "
                     "or OpenCode storage trees")
# what `calibrate` takes of a folder besides: the JSON documents that record their calls'
# usage (Cline / Roo Code tasks, OpenCode exports)
RECORDING_SUFFIXES = (*TRANSCRIPT_SUFFIXES, ".json")
R = TypeVar("R")


class Files:
    """The files a many-file command was given: files, folders (their *.jsonl,
    recursively), globs and `-`, in a stable order. One that is missing or cannot be read
    is said in one line and left out; the others are still done, and `exit_if_any_failed`
    then ends the run with exit 2, so that a gate over a folder keeps its good files'
    results and still fails."""

    def __init__(self, args: list[str], in_folder: Callable[[str], list[str]] | None = None,
                 kind: str = TRANSCRIPTS_BELOW, urls: bool = False,
                 session: str | None = None) -> None:
        """`in_folder` lists the inputs a folder holds (default: its transcripts, of an
        OpenCode storage folder its sessions, only `session` if given), `kind` names them
        when there are none; with `urls`, an argument that is a URL
        (`s3://bucket/x.parquet`) is one input as it is, for its reader to open."""
        self.paths: list[str] = []
        self.below: dict[str, str] = {}  # each file's path below what named it
        # each input that could not be read, as the JSON outputs list it: `path`, `line`
        # (null where the problem is the file's, not a line's) and `problem`
        self.unread: list[dict[str, Any]] = []
        for arg in args:
            try:
                found = [arg] if urls and URL.match(arg) else \
                    expand(arg, in_folder or (lambda d: _transcripts(d, session)), kind)
            except CtxpackError as exc:
                self.not_read(arg, exc)
                continue
            for path in found:
                if path not in self.below:
                    self.paths.append(path)
                    self.below[path] = _below(arg, path)

    def each(self, work: Callable[[str], R]) -> Iterator[R]:
        """`work(path)` of every file that it does not fail on."""
        for path in self.paths:
            try:
                yield work(path)
            except (CtxpackError, OSError) as exc:
                self.not_read(path, exc)

    def exit_if_any_failed(self) -> None:
        if self.unread:
            raise typer.Exit(EXIT_USAGE)

    def not_read(self, path: str, exc: CtxpackError | OSError) -> None:
        """Say that `path` could not be read, and keep why for the JSON outputs."""
        line = problem_of(exc)[1]
        error(line)
        if isinstance(exc, InputError):
            self.unread.append({"path": exc.path, "line": exc.line, "problem": exc.problem})
        else:
            self.unread.append({"path": path, "line": None,
                                "problem": line.removeprefix(f"{path}: ")})


URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")  # an object store's, or file://


def _below(arg: str, path: str) -> str:
    """Where `path` sits below the argument `arg` that named it: below a folder, its path
    in it; a file or a glob's match, its own relative path (its name if that would leave
    the current folder)."""
    if path == "-":
        return "-"
    if URL.match(arg):
        return path.rsplit("/", 1)[-1]
    if os.path.isdir(arg):
        return os.path.relpath(path, arg)
    relative = os.path.normpath(path)
    if os.path.isabs(relative) or relative.split(os.sep)[0] == os.pardir:
        return os.path.basename(path)
    return relative


def readable_file(arg: str) -> bool:
    """Is `arg` one input: `-`, a file, or a pipe or device (`<(cmd)`), not a folder?"""
    return arg == "-" or (os.path.exists(arg) and not os.path.isdir(arg))


def _transcripts(folder: str, session: str | None = None,
                 suffixes: tuple[str, ...] = TRANSCRIPT_SUFFIXES) -> list[str]:
    from ..formats.cline import task_file
    from ..formats.gemini import chat_recordings
    from ..formats.opencode_storage import session_files

    sessions = session_files(folder, session)
    if sessions is not None:  # an OpenCode storage tree: its sessions' info files
        if not sessions:
            raise UsageError(f"{folder}: an OpenCode storage folder that holds no session")
        return sessions
    found: set[str] = set()
    for below, folders, names in os.walk(folder):
        # a folder that is a transcript: a Cline task (Cline's `tasks/<id>/`, or the folder
        # given), an OpenCode storage tree (its sessions); nothing inside it is another
        task = task_file(below)
        within = [task] if task is not None else session_files(below)
        if within is not None:
            found.update(within)
            folders.clear()
            continue
        # a Gemini CLI chats/ folder: its recordings that are one JSON document each
        found.update(chat_recordings(below))
        found.update(os.path.join(below, n) for n in names if os.path.splitext(n)[1] in suffixes)
    return sorted(found)


def _recordings(folder: str) -> list[str]:
    """The files below `folder` that may record their calls' usage: its transcripts and
    JSON documents, less a Cline task's ui_messages.json where the
    api_conversation_history.json beside it is taken (which reads the same calls from it)."""
    from ..formats.cline import UI_SIBLING

    found = _transcripts(folder, suffixes=RECORDING_SUFFIXES)
    taken = set(found)
    return [p for p in found if os.path.basename(p) != UI_SIBLING or os.path.join(
        os.path.dirname(p), "api_conversation_history.json") not in taken]


def one_file(arg: str, session: str | None) -> str:
    """The input of a one-file command: a folder that is one transcript stands for it (a
    Cline task for its file; an OpenCode storage folder for its session `session`, else
    its most recently updated one)."""
    if os.path.isdir(arg):
        from ..formats import folder_transcript

        return folder_transcript(arg, session) or arg
    return arg


def expand(arg: str, in_folder: Callable[[str], list[str]] = _transcripts,
           kind: str = TRANSCRIPTS_BELOW) -> list[str]:
    """The inputs one argument names: itself, a folder's (`in_folder`), a glob's matches;
    a folder or a pattern that gives none is refused, saying so."""
    if readable_file(arg):
        return [arg]
    if os.path.isdir(arg):
        found = in_folder(arg)
        if not found:
            readable = _documents_read(arg)
            raise UsageError(f"{arg}: no {kind} in this folder" + (
                f"; of the JSON files it holds, which a folder does not give, ctxpack reads "
                f"{', '.join(readable)}" if readable else ""),
                             f"a folder gives the {kind} below it: name other files "
                             "themselves, or a quoted glob such as "
                             f"'{os.path.join(arg, '**', '*' + _most_held(arg))}'")
        return found
    if glob.has_magic(arg):
        matches = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
        if not matches:
            raise UsageError(f"{arg}: no file matches this pattern")
        return matches
    raise UsageError(f"{arg}: no such file")


DOCUMENTS_LOOKED_AT = 20  # of a folder that gives no transcript, its JSON files read


def _documents_read(folder: str) -> list[str]:
    """The JSON documents below `folder` (its first few) that a reader takes by their
    content, each as `name (format)`: a folder gives them by their names only."""
    from .. import formats
    from ..jsonl import loads

    paths = sorted(os.path.join(below, n) for below, _, names in os.walk(folder)
                   for n in names if n.endswith(".json"))[:DOCUMENTS_LOOKED_AT]
    out = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                value = loads(f.read())
        except (OSError, ValueError, RecursionError):
            continue
        fmt, score = formats.sniff(value, document=True)
        if fmt is not None and score >= 2:
            out.append(f"{os.path.relpath(path, folder)} ({fmt.name})")
    return out


def _most_held(folder: str) -> str:
    """The ending most of the files below `folder` have (.json where none has one)."""
    endings = Counter(os.path.splitext(n)[1] for _, _, names in os.walk(folder)
                      for n in names)
    endings.pop("", None)
    return endings.most_common(1)[0][0] if endings else ".json"


def _split_formats(values: list[str]) -> tuple[str, str | None]:
    """stats --format takes an output format, a transcript format, or one of each."""
    from .. import formats

    output, transcript = "table", None
    for v in values:
        if v in OUTPUT_FORMATS:
            output = v
        elif v in formats.FORMATS:
            transcript = v
        else:
            raise UsageError(
                f"unknown format {v!r}", f"output formats: {', '.join(OUTPUT_FORMATS)}; "
                f"transcript formats: {', '.join(formats.FORMATS)}")
    return output, transcript


@app.command()
def stats(
    files: Annotated[list[str], typer.Argument(metavar="FILE",
        help="Transcripts: files, folders, globs or -.")],
    model: ModelOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON (see README, JSON output).")]
    = False,
    format: Annotated[list[str] | None, typer.Option(
        "--format", "-f", metavar="FORMAT",
            help="Output format: table, json, csv or markdown; or a transcript "
        "format to force (openai, anthropic, claude-code, codex, ...). May be given twice.")]
    = None,
    top: Annotated[int, typer.Option("--top", metavar="N",
        help="How many of the largest messages to list.")]
    = 10,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", metavar="N",
            help="Exit 1 when any file's context, as billed, is over this many tokens.")]
    = None,
    max_ratio: Annotated[float | None, typer.Option(
        "--max-ratio", metavar="R",
            help="Exit 1 when any file (or any one conversation of a file of many, any "
            "row of a dataset) uses more than this share of its window.")]
    = None,
    html: Annotated[str | None, typer.Option(
        "--html", metavar="PATH", help="Also write a page of pictures of where each file's "
        "context went (inline SVG, readable offline).")] = None,
    skip_invalid: SkipOpt = False,
    session: SessionOpt = None,
    no_cache: NoCacheOpt = False,
    config: ConfigOpt = None,
    messages_column: datasets.MessagesColumnOpt = None,
    id_column: datasets.IdColumnOpt = None,
    per_row: Annotated[str | None, typer.Option(
        "--per-row", metavar="FILE", help="A dataset's stats of each row (id, tokens, by "
        "role, by tool, largest message, valid) written to FILE (.parquet or .csv).")] = None,
    engine: datasets.EngineOpt = "local",
    ray_address: datasets.RayAddressOpt = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", metavar="N", min=1,
        help="Cores to count on: a big file's workers, a dataset's local engine (default: "
        "every core).")] = None,
) -> None:
    """Show where the tokens of a transcript (or of each row of a dataset) went."""
    from ..breakdown import stats as compute
    from ..loader import load
    from ..render import stats as render

    output, transcript_format = _split_formats(format or [])
    if json_out:
        output = "json"
    cfg = read_config(config)
    if datasets.wanted(files, messages_column, per_row):
        datasets.refuse("datasets", {"--session": session, "--html": html,
                                     "--skip-invalid": skip_invalid})
        rows = datasets.rows_of(messages_column, id_column, transcript_format, model,
                                cfg.models, not no_cache)
        raise typer.Exit(datasets.stats(files, rows,
                                        datasets.engine_of(engine, ray_address, jobs),
                                        per_row, max_tokens, output, max_ratio))
    datasets.refuse("transcripts", {"--id-column": id_column, "--engine": engine != "local",
                                    "--ray-address": ray_address})
    if jobs is not None:  # a big transcript's workers
        use_cores(jobs)
    inputs = Files(files, session=session)
    page = _page_target(html, inputs.paths)
    from ..render.progress import FileProgress

    pictures: list[tuple[list[str], Any]] = []

    def measured(path: str, progress: Any) -> Any:
        if page is None:  # streamed: the messages are not kept
            return compute(path, model, format=transcript_format, skip_invalid=skip_invalid,
                           top=top, table=cfg.models, progress=progress,
                           cache=not no_cache, session=session)
        # the pictures need the transcript whole: read once, for them and the tables
        t = load(path, transcript_format, skip_invalid=skip_invalid, session=session)
        result = compute(t, model, top=top, table=cfg.models, cache=not no_cache)
        pictures.append(_pictures(t, result, model, cfg.models))
        return result

    with FileProgress(inputs.paths, stderr()) as advance:
        results = list(inputs.each(lambda path: measured(path, advance(path))))
    if not results:
        inputs.exit_if_any_failed()
    _warn_estimates(results)
    if page is not None:
        from ..render.charts import stats_page
        from .write import _write_result

        _write_result(page, "-", [stats_page(pictures).encode("utf-8", "replace")], None)
    if output == "json":
        sys.stdout.buffer.write(render.to_json(results, inputs.unread))
    elif output == "csv":
        sys.stdout.write(render.to_csv(results))
    elif output == "markdown":
        sys.stdout.write(render.to_markdown(results))
    else:
        from rich.console import Console

        render.print_tables(Console(), results)
    over = _gate(results, max_tokens, max_ratio)
    inputs.exit_if_any_failed()
    if over:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _page_target(html: str | None, inputs: list[str]) -> str | None:
    """Where `stats --html` writes its page, refused before any work if it cannot be
    written: stdin is among the inputs (read once, it cannot be read again for the
    pictures), or it would be written over an input, the tables on stdout or a file that
    is not a page (see guard.Writes)."""
    if html is None:
        return None
    if "-" in inputs:
        raise UsageError("--html reads each file again for its pictures, and stdin can be "
                         "read only once", "save it to a file first")
    from .guard import Writes
    from .write import _destination

    target = _destination("-", html, in_place=False, force=False)
    outputs = Writes(inputs)
    outputs.output("-", "the tables")
    outputs.output(target, "--html", page=True, hint="write the page elsewhere")
    return target


def _pictures(t: Any, result: Any, model: str | None, table: Any) -> tuple[list[str], Any]:
    """`stats --html`: one file's headline and pictures, for the page of them all."""
    from ..breakdown import transcript_models
    from ..render.charts import charts_of
    from ..render.stats import summary_lines
    from ..tokens import TokenCounter

    counter = TokenCounter(model or table.choose(transcript_models(t)), table)
    return summary_lines(result), charts_of(t, counter, link=True, flagged=model is not None,
                                            bill=result.context)


def _warn_estimates(results: list[Any]) -> None:
    from ..tokens import ESTIMATE_NOTE

    notes = {r.note for r in results if ESTIMATE_NOTE in r.note}
    for note in notes:
        warn(note)


def _gate(results: list[Any], max_tokens: int | None, max_ratio: float | None) -> bool:
    """Say which files are over the limits given; are any?"""
    from ..render.stats import billed as billed_of

    over = []
    for r in results:
        billed = billed_of(r)
        if max_tokens is not None and billed > max_tokens:
            over.append(f"{r.path}: context billed {billed:,} > --max-tokens {max_tokens:,}")
        if max_ratio is not None and r.context_ratio is not None and r.context_ratio > max_ratio:
            largest = r.largest_conversation
            which = "" if largest is None else \
                f" (conversation {largest['number']:,} at {largest['place']})"
            over.append(f"{r.path}{which}: {percent(r.context_ratio)} of the "
                        f"{r.context_window:,}-token window > --max-ratio {max_ratio} "
                        f"({percent(max_ratio)})")
    for line in over:
        stderr().print(f"[red]over budget:[/red] {line}", highlight=False)
    return bool(over)


@app.command()
def show(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript file, or - for stdin.")],
    format: FormatOpt = None,
    model: ModelOpt = None,
    full: Annotated[bool, typer.Option(
        "--full", help="Show long outputs whole instead of folded to their first and last lines.")]
    = False,
    round_: Annotated[int | None, typer.Option(
        "--round", metavar="N", help="Show round N only (stats lists the rounds).")] = None,
    grep: Annotated[str | None, typer.Option(
        "--grep", metavar="PATTERN",
        help="Show only messages matching this Python regex (case-insensitive).")]
    = None,
    skip_invalid: SkipOpt = False,
    session: SessionOpt = None,
    config: ConfigOpt = None,
    pager: Annotated[bool | None, typer.Option(
        "--pager/--no-pager", help="Page the output (default: when stdout is a terminal).")]
    = None,
) -> None:
    """Print a transcript for reading: rounds, steps, tool calls, token counts."""
    from ..render.show import show as render
    from ..view import view_file

    view = view_file(one_file(file, session), model, format=format, skip_invalid=skip_invalid,
                     table=read_config(config).models, full=full, round=round_, grep=grep,
                     session=session)
    render(view, pager=sys.stdout.isatty() if pager is None else pager)


@app.command()
def validate(
    files: Annotated[list[str], typer.Argument(metavar="FILE",
        help="Transcripts: files, folders, globs or -.")],
    format: FormatOpt = None,
    model: ModelOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print problems as JSON.")] = False,
    skip_invalid: SkipOpt = False,
    session: SessionOpt = None,
    config: ConfigOpt = None,
    messages_column: datasets.MessagesColumnOpt = None,
    id_column: datasets.IdColumnOpt = None,
    engine: datasets.EngineOpt = "local",
    ray_address: datasets.RayAddressOpt = None,
) -> None:
    """Check that the provider would accept a transcript; exit 1 on any problem (a note
    tells what is so of the file without making it wrong). -m and --config are for a
    dataset: its rows of messages that mark no API are read as the model's API."""
    from ..checks import notes
    from ..checks import validate as check
    from ..jsonl import dumps
    from ..loader import load

    if datasets.wanted(files, messages_column):
        datasets.refuse("datasets", {"--session": session, "--skip-invalid": skip_invalid})
        rows = datasets.rows_of(messages_column, id_column, format, model,
                                read_config(config).models, False)
        raise typer.Exit(datasets.validate(files, rows, datasets.engine_of(engine, ray_address),
                                           json_out))
    # a file's records are read as they mark, whatever the model: -m picks the API of a
    # dataset's messages that mark none
    datasets.refuse("transcripts", {"--model": model, "--config": config,
                                    "--id-column": id_column, "--engine": engine != "local",
                                    "--ray-address": ray_address})
    inputs = Files(files, session=session)

    def checked(path: str) -> tuple[Any, list[Any]]:
        t = load(path, format, skip_invalid=skip_invalid, session=session)
        return t, check(t)

    report = list(inputs.each(checked))
    if not report:
        inputs.exit_if_any_failed()
    if json_out:
        doc = {"schema_version": 1, "files": [
            {"path": t.path, "format": t.format, "messages": len(t.messages), "valid": not p,
             "problems": [x.to_dict() for x in p],
             **({"notes": [x.to_dict() for x in told]} if (told := notes(t)) else {})}
            for t, p in report], "unread": inputs.unread}
        sys.stdout.buffer.write(dumps(doc, indent=2) + b"\n")
    else:
        for t, problems in report:
            for p in problems:
                print(f"{p.file or t.path}:{p.line}: {p.message}")
            told = notes(t)
            for p in told:
                print(f"{p.file or t.path}:{p.line}: note: {p.message}")
            verdict = ("ok" if not problems else counted(len(problems), "problem")) + (
                f" ({counted(len(told), 'note')})" if told else "")
            stderr().print(f"{t.path}: {t.format}, {counted(len(t.messages), 'message')}: "
                           f"{verdict}")
    inputs.exit_if_any_failed()
    if any(p for _, p in report):
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command()
def count(
    words: Annotated[list[str] | None, typer.Argument(metavar="[TEXT|-]",
        help="Text to count (several words are joined by spaces); - or nothing reads stdin.")]
    = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", metavar="MODEL", help="Model to count for (default: gpt-4o). Of a "
        "model with no public tokenizer the number is its calibrated estimate, and stderr "
        "says so.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Print the number of tokens of plain text (no chat overhead)."""
    from ..calibration import text_bill
    from ..render.stats import slope_text
    from ..tokens import TokenCounter

    text = " ".join(words) if words else None
    if text is None or text == "-":
        if sys.stdin.isatty():
            raise UsageError("no text given", "pass TEXT, or pipe it in: echo hi | ctxpack count")
        text = sys.stdin.buffer.read().decode("utf-8", "replace")
    counter = TokenCounter(model, read_config(config).models)
    n = counter.text(text)
    billed = text_bill(n, counter.model, exact=counter.exact, estimated=counter.estimated,
                       table=counter.table)
    if counter.estimated:
        warn(counter.note)
    elif billed.kind != "exact":  # (the bare number stays alone on stdout, for pipes)
        how = f"calibrated: {slope_text(billed.slope)} × " \
            if billed.kind == "calibrated" else "estimated, not calibrated: "
        error = "error unknown" if billed.error is None else \
            f"expected error ±{billed.error:.1%}"
        stderr().print(plain(f"{counter.model}: {billed.tokens:,} tokens, {how}{n:,} counted "
                             f"with {counter.encoding_name}, an approximation; {error}"),
                       markup=False, highlight=False)
    print(billed.tokens)


@app.command()
def models(
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """List known models, their encodings, context windows and the calibration each is
    billed with (shipped, or the config's)."""
    listed = read_config(config).models.listing()
    if json_out:
        from ..jsonl import dumps

        sys.stdout.buffer.write(dumps([m.to_dict() for m in listed], indent=2) + b"\n")
        return
    from rich.console import Console
    from rich.table import Table

    from ..calibration import CALIBRATED_ERROR, UNLOGGED
    from ..render.stats import slope_text

    table = Table("model (prefix)", "provider", "encoding", "context window", "tokens")
    entries: dict[str, Any] = {}  # the calibrations the models are billed with, by name
    for m in listed:
        i = m.info
        table.add_row(plain(m.name), *((plain(i.provider), plain(i.encoding),
                                        f"{i.context_window:,}",
                                        "exact" if i.exact else "approximate")
                                       if i is not None else ("-",) * 4))
        if m.calibration is not None:
            entries.setdefault(m.calibration.name, m)
    figures = Table("calibration", "slope", "overhead", "error", "from",
                    title="billed = slope × counted + overhead",
                    caption="a model is billed with the entry of its longest prefix, else "
                            "1:1; overhead -: what its agent is known to send ("
                            + ", ".join(f"{fmt} {n:,}" for fmt, n in UNLOGGED.items())
                            + f"), else 0; error -: {CALIBRATED_ERROR:.0%}")
    for name, m in sorted(entries.items()):
        c = m.calibration
        figures.add_row(plain(name), slope_text(c.slope),
                        "-" if c.overhead is None else f"{c.overhead:,}",
                        "-" if c.error is None else f"{c.error:.1%}",
                        "config file" if m.source == "config" else "shipped table")
    console = Console()
    console.print(table)
    console.print(figures)


# what each count of calls a fit leaves out says of them (`calibration.Fitted`), in the
# order the lines under the table give them; the calls made on no prompt the file holds
# (`no_prompt`) get a line for each reason (`Fitted.no_prompt_why`), "not used, " and it
LEFT_OUT = {
    "left_out": ("left out, as the bill passes them over: far below the count of their "
                 "prompts, below it where the agent is known to send more, or before such "
                 "calls without growing with the messages (made up, or of an agent that cut "
                 "old outputs itself)"),
    "no_prompt": "not used, ",
    "no_size": "not used, recording no prompt size (a prompt of 0 tokens)",
    "set_aside": ("set aside, their recorded usage cannot be true (validate names each at "
                  "its line)"),
}


@app.command()
def calibrate(
    files: Annotated[list[str], typer.Argument(metavar="FILE",
        help="Transcripts that record their calls' usage (Claude Code, Codex, "
             "stream-json, Cline, OpenCode...): files, folders (their .jsonl and .json), "
             "globs or -.")],
    write_config: Annotated[str | None, typer.Option(
        "--write-config", metavar="PATH",
        help="Add the fitted figures to this config file's `calibration:` list (created "
             "if missing), so that stats and compress count with them.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    skip_invalid: SkipOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Fit each model's slope and overhead on the usage transcripts record, with the
    error on held-out calls (each file's second half)."""
    from ..calibration import calibrate as fit_all
    from ..calibration import recorded_calls
    from ..loader import load

    def recorded(path: str) -> Any:
        t = load(path, skip_invalid=skip_invalid)
        if not recorded_calls(t):
            # (of a file counting its calls in its run's totals alone, as SWE-agent's
            # `model_stats`, how many: none of them is fitted)
            calls = t.usage.get("calls")
            totals = f", only its run's totals ({counted(calls, 'call')})" \
                if isinstance(calls, int) and calls > 0 else ""
            warn(f"{path}: records no call's own usage{totals}: skipped")
        return t

    cfg = read_config(config)
    inputs = Files(files, _recordings, "transcripts (*.jsonl, *.json)")
    if write_config is not None:
        from ..config import editable
        from .guard import Writes

        Writes(inputs.paths).output(write_config, "--write-config",
                                    hint="name the config file to add the figures to")
        editable(write_config)  # (refused before any fitting, and again as it is edited)
    # fitted against the shipped calibrations, not the config's: a fit written there
    # would be the next one's prior (and the slope hidden content is converted at), and
    # each run would move it further
    fitted = fit_all(inputs.each(recorded), cfg.models.shipped_calibrations())
    if not fitted:
        inputs.exit_if_any_failed()
        from ..formats import usage_recorders

        *most, last = usage_recorders()
        raise UsageError("no file records the usage of a call: nothing to fit",
                         f"{', '.join(most)} and {last} files record it")
    if json_out:
        from ..jsonl import dumps

        rows = [f.to_dict() for f in fitted]
        sys.stdout.buffer.write(dumps(rows, indent=2) + b"\n")
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        out = Table("model", "files", "calls", "slope", "overhead", "held-out error",
                    "worst", title="billed = slope × counted + overhead")
        # a long model name folds onto more lines rather than push the figures out of a
        # narrow terminal or pipe (80 columns), and is cut short past NAME_CHARS
        out.columns[0].overflow = "fold"
        for column in out.columns[1:]:
            column.no_wrap = True
        for f in fitted:
            error = "-" if f.error is None else f"{f.error:.1%}"
            worst = "-" if f.worst is None else f"{f.worst:.1%}"
            slope = f"{f.slope:g}" + ("" if f.steps and not f.refused else " (table)")
            out.add_row(Text(shortened(plain(f.label)) + (" *" if f.untrusted else "")),
                        str(f.files),
                        str(f.calls),
                        slope, f"{f.overhead:,}", error, worst)
        if any(f.untrusted for f in fitted):
            out.caption = "* not fit to stand as the model's entry (see below)"
        console = Console()
        console.print(out)
        # what the table does not hold, each call a file records that no fit took, by why:
        # wrapped to the terminal's width, as the table is
        notes = [f"{shortened(f.label)}: {counted(n, 'call')} {words}{reason}"
                 for why, words in LEFT_OUT.items() for f in fitted if getattr(f, why)
                 for reason, n in (f.no_prompt_why.items() if why == "no_prompt"
                                   else [("", getattr(f, why))])]
        if not write_config:  # (--write-config says it for each fit it does not write)
            notes += [f"* {shortened(f.label)}: {f.untrusted}" for f in fitted if f.untrusted]
        for note in notes:
            console.print(textwrap.fill(plain(note), console.width), markup=False,
                          highlight=False, soft_wrap=True)
    if write_config:
        from ..config import add_calibrations

        said_to = stderr()
        for f in fitted:
            if f.untrusted:  # (wrapped as the notes under the table are)
                said = f"not writing {shortened(f.label)}: {f.untrusted}"
                said_to.print(textwrap.fill(plain(said), said_to.width), markup=False,
                              highlight=False)
        trusted = [f for f in fitted if not f.untrusted]
        if trusted:
            add_calibrations(write_config, trusted)
            many = "" if len(trusted) == 1 else "s"
            said = f"wrote {len(trusted)} calibration{many} to {write_config}"
        else:  # (the fits shown are the command's result: exit 0, the file untouched)
            left = "is as it was" if os.path.lexists(write_config) else "was not created"
            said = ("nothing written: no fit can stand as a model's entry (the lines above "
                    f"say why); {write_config} {left}")
        stderr().print(plain(said), markup=False, highlight=False)
    inputs.exit_if_any_failed()
