"""The ctxpack command line: each command parses, calls the library, renders, maps errors.

Data goes to stdout, talk to stderr. Library errors become one red line and the
documented exit code (0 ok, 1 check failed, 2 usage or input error, 3 cannot
fit, 130 interrupted); no traceback reaches the user.
"""

from __future__ import annotations

import glob
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .errors import EXIT_CHECK_FAILED, EXIT_USAGE, CtxpackError, UsageError

app = typer.Typer(
    name="ctxpack",
    help="Inspect and compress LLM agent transcripts (JSONL).",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    # plain help: Rich-formatted help costs ~100 ms of imports on every start
    rich_markup_mode=None,
)

OUTPUT_FORMATS = ("table", "json", "csv", "markdown")
TRANSCRIPT_SUFFIXES = (".jsonl",)

FormatOpt = Annotated[str | None, typer.Option(
    "--format", metavar="FORMAT",
        help="Transcript format to force (default: detect from the first records).")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", "-m", metavar="MODEL", help="Model whose tokenizer and context window to use "
    "(default: the model named in the transcript, else gpt-4o).")]
SkipOpt = Annotated[bool, typer.Option(
    "--skip-invalid", help="Skip lines that cannot be read, and count them, instead of failing.")]
ConfigOpt = Annotated[str | None, typer.Option(
    "--config", metavar="PATH",
        help="Config file (default: $CTXPACK_CONFIG, ./ctxpack.yaml, user config dir).")]


def _stderr() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print one red line on stderr and exit with `code`."""
    from rich.markup import escape

    _stderr().print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code)


def warn(message: str) -> None:
    from rich.markup import escape

    _stderr().print(f"[yellow]warning:[/yellow] {escape(message)}")


def expand_paths(args: list[str]) -> list[str]:
    """Files, folders (their *.jsonl, recursively), globs and `-`, in a stable order."""
    out: list[str] = []
    for arg in args:
        if arg == "-" or os.path.isfile(arg):
            out.append(arg)
        elif os.path.isdir(arg):
            found = sorted(str(p) for p in Path(arg).rglob("*") if p.is_file()
                           and p.suffix in TRANSCRIPT_SUFFIXES)
            if not found:
                raise UsageError(f"{arg}: no *.jsonl files in this folder")
            out += found
        elif glob.has_magic(arg):
            matches = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not matches:
                raise UsageError(f"{arg}: no file matches this pattern")
            out += matches
        else:
            raise UsageError(f"{arg}: no such file")
    return out


def _config(path: str | None) -> Any:
    from .config import load_config

    return load_config(path)


def _split_formats(values: list[str]) -> tuple[str, str | None]:
    """stats --format takes an output format, a transcript format, or one of each."""
    from . import formats

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
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON (schema_version 1).")]
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
            help="Exit 1 when any file's context is over this many tokens.")] = None,
    max_ratio: Annotated[float | None, typer.Option(
        "--max-ratio", metavar="R",
            help="Exit 1 when any file uses more than this share of its window.")]
    = None,
    skip_invalid: SkipOpt = False,
    no_cache: NoCacheOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Show where the tokens of a transcript went."""
    from .render import stats as render
    from .stats import stats as compute

    output, transcript_format = _split_formats(format or [])
    if json_out:
        output = "json"
    cfg = _config(config)
    paths = expand_paths(files)
    results = []
    from .render.progress import FileProgress

    with FileProgress(paths, _stderr()) as advance:
        for path in paths:
            results.append(compute(path, model, format=transcript_format,
                                   skip_invalid=skip_invalid, top=top, table=cfg.models,
                                   progress=advance(path), cache=not no_cache))
    _warn_estimates(results)
    if output == "json":
        sys.stdout.buffer.write(render.to_json(results))
    elif output == "csv":
        sys.stdout.write(render.to_csv(results))
    elif output == "markdown":
        sys.stdout.write(render.to_markdown(results))
    else:
        from rich.console import Console

        render.print_tables(Console(), results)
    _gate(results, max_tokens, max_ratio)


def _warn_estimates(results: list[Any]) -> None:
    from .tokens import ESTIMATE_NOTE

    notes = {r.note for r in results if ESTIMATE_NOTE in r.note}
    for note in notes:
        warn(note)


def _gate(results: list[Any], max_tokens: int | None, max_ratio: float | None) -> None:
    over = []
    for r in results:
        if max_tokens is not None and r.tokens > max_tokens:
            over.append(f"{r.path}: {r.tokens:,} tokens > --max-tokens {max_tokens:,}")
        if max_ratio is not None and r.context_ratio is not None and r.context_ratio > max_ratio:
            over.append(f"{r.path}: {r.context_ratio:.1%} of the {r.context_window:,}-token "
                        f"window > --max-ratio {max_ratio}")
    if over:
        for line in over:
            _stderr().print(f"[red]over budget:[/red] {line}", highlight=False)
        raise typer.Exit(EXIT_CHECK_FAILED)


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
    config: ConfigOpt = None,
    pager: Annotated[bool | None, typer.Option(
        "--pager/--no-pager", help="Page the output (default: when stdout is a terminal).")]
    = None,
) -> None:
    """Print a transcript for reading: rounds, steps, tool calls, token counts."""
    from .render.show import show as render
    from .view import view_file

    view = view_file(file, model, format=format, skip_invalid=skip_invalid,
                     table=_config(config).models, full=full, round=round_, grep=grep)
    render(view, pager=sys.stdout.isatty() if pager is None else pager)


@app.command()
def validate(
    files: Annotated[list[str], typer.Argument(metavar="FILE",
        help="Transcripts: files, folders, globs or -.")],
    format: FormatOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print problems as JSON.")] = False,
    skip_invalid: SkipOpt = False,
) -> None:
    """Check that the provider would accept a transcript; exit 1 on any problem."""
    import orjson

    from .loader import load
    from .validate import validate as check

    report = []
    for path in expand_paths(files):
        t = load(path, format, skip_invalid=skip_invalid)
        report.append((t, check(t)))
    if json_out:
        doc = {"schema_version": 1, "files": [
            {"path": t.path, "format": t.format, "messages": len(t.messages), "valid": not p,
             "problems": [x.to_dict() for x in p]} for t, p in report]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        for t, problems in report:
            for p in problems:
                print(f"{t.path}:{p.line}: {p.message}")
            verdict = "ok" if not problems else f"{len(problems)} problem(s)"
            _stderr().print(f"{t.path}: {t.format}, {len(t.messages)} messages: {verdict}")
    if any(p for _, p in report):
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command()
def count(
    words: Annotated[list[str] | None, typer.Argument(metavar="[TEXT|-]",
        help="Text to count (several words are joined by spaces); - or nothing reads stdin.")]
    = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print the number of tokens of plain text (no chat overhead)."""
    from .tokens import TokenCounter

    text = " ".join(words) if words else None
    if text is None or text == "-":
        if sys.stdin.isatty():
            raise UsageError("no text given", "pass TEXT, or pipe it in: echo hi | ctxpack count")
        text = sys.stdin.buffer.read().decode("utf-8", "replace")
    counter = TokenCounter(model, _config(config).models)
    n = counter.text(text)
    if counter.estimated:
        warn(counter.note)
    print(n)


@app.command()
def models(
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """List known models, their encodings and context windows."""
    table = _config(config).models.all()
    if json_out:
        import orjson

        rows = [{"name": m.name, "encoding": m.encoding, "context_window": m.context_window,
                 "exact": m.exact, "provider": m.provider, "note": m.note} for m in table]
        sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n")
        return
    from rich.console import Console
    from rich.table import Table

    out = Table("model (prefix)", "provider", "encoding", "context window", "tokens")
    for m in table:
        out.add_row(m.name, m.provider, m.encoding, f"{m.context_window:,}",
                    "exact" if m.exact else "approximate")
    Console().print(out)


RECENT_SECONDS = 5.0  # a file written this recently may still be open in an agent

NoCacheOpt = Annotated[bool, typer.Option(
    "--no-cache", help="Do not use the persistent token cache.")]
OutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="PATH", help="Write here (- for stdout; default stdout).")]
InPlaceOpt = Annotated[bool, typer.Option(
    "--in-place", help="Replace the input atomically, keeping the original as FILE.bak.")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="With --in-place: go ahead even if the file was modified a moment ago.")]
ArchiveDirOpt = Annotated[str | None, typer.Option(
    "--archive-dir", metavar="DIR",
    help="Keep originals in this content-addressed folder instead of inline.")]
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
        age = time.time() - os.stat(file).st_mtime
        if age < RECENT_SECONDS and not force:
            raise UsageError(f"{file} was modified {age:.1f} s ago; an agent may still be "
                             "writing it", "wait, or pass --force")
        return file
    if output not in (None, "-") and file != "-" and os.path.exists(output) \
            and os.path.samefile(file, output):
        raise UsageError("--output is the input file", "use --in-place to replace it")
    return output or "-"


def _write_result(dest: str, source: str, chunks: Iterable[bytes],
                  seen: os.stat_result | None) -> None:
    """Write to `dest` (`-` is stdout). In place (`seen` is the input's state when it was
    read), keep FILE.bak and replace FILE only if nothing changed it since."""
    from .jsonl import write_atomic

    if dest == "-":
        out = sys.stdout.buffer
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return
    check = None
    if seen is not None:
        import shutil

        shutil.copy2(source, source + ".bak")

        def check() -> None:
            now = os.stat(source)
            if (now.st_size, now.st_mtime_ns) != (seen.st_size, seen.st_mtime_ns):
                raise UsageError(f"{source} changed while it was being rewritten; it is left "
                                 "as it is now", "run again once its writer is done")
    write_atomic(dest, chunks, check)


@app.command()
def compress(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript file, or - for stdin.")],
    output: OutputOpt = None,
    in_place: InPlaceOpt = False,
    force: ForceOpt = False,
    model: ModelOpt = None,
    format: FormatOpt = None,
    budget: Annotated[int | None, typer.Option(
        "--budget", metavar="N", help="Summarize above N tokens, and never write more than N "
        "(per conversation, in a file of many; default: --threshold x the model's window).")]
    = None,
    target: Annotated[int | None, typer.Option(
        "--target", metavar="N", help="Summarize down to N tokens (default: half the window, "
        "or 5/8 of --budget if less).")]
    = None,
    threshold: Annotated[float | None, typer.Option(
        "--threshold", metavar="R", help="Summarize above this share of the window (0.8).")]
    = None,
    strategy: Annotated[str | None, typer.Option(
        "--strategy", metavar="NAME",
        help="Summarizer: extractive (default), structured, or llm (a chat endpoint).")]
    = None,
    truncate: Annotated[bool | None, typer.Option(
        "--truncate/--no-truncate", help="Cut tool outputs over the limits (on).")] = None,
    max_lines: Annotated[int | None, typer.Option(
        "--max-lines", metavar="N", help="Truncate outputs over N lines (300).")] = None,
    max_bytes: Annotated[int | None, typer.Option(
        "--max-bytes", metavar="N", help="Truncate outputs over N bytes (30000).")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", metavar="N", help="Truncate outputs over N tokens (6000).")] = None,
    truncate_mode: Annotated[str | None, typer.Option(
        "--truncate-mode", metavar="MODE", help="Keep head, tail or head_tail (default).")]
    = None,
    mask: Annotated[bool | None, typer.Option(
        "--mask/--no-mask", help="Mask outputs older than the newest steps (on).")] = None,
    keep_observations: Annotated[int | None, typer.Option(
        "--keep-observations", metavar="K", help="Steps whose outputs stay unmasked (10).")]
    = None,
    summarize: Annotated[bool | None, typer.Option(
        "--summarize/--no-summarize", help="Summarize old history when over the trigger (on).")]
    = None,
    keep_rounds: Annotated[int | None, typer.Option(
        "--keep-rounds", metavar="N", help="Newest rounds always kept in full (0).")] = None,
    keep_steps: Annotated[int | None, typer.Option(
        "--keep-steps", metavar="N", help="Newest steps always kept in full (2).")] = None,
    max_summary_tokens: Annotated[int | None, typer.Option(
        "--max-summary-tokens", metavar="N",
        help="Condense the summary above N tokens (10000).")] = None,
    summary_ratio: Annotated[int | None, typer.Option(
        "--summary-ratio", metavar="N",
        help="Keep the summary within 1/N of the tokens it archives (5; 1 for no limit).")]
    = None,
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", metavar="NAME", help="llm: the model to ask (gpt-4o-mini).")] = None,
    llm_base_url: Annotated[str | None, typer.Option(
        "--llm-base-url", metavar="URL", help="llm: an OpenAI-compatible endpoint (OpenAI's; "
        "e.g. http://localhost:11434/v1 for Ollama).")] = None,
    llm_api_key_env: Annotated[str | None, typer.Option(
        "--llm-api-key-env", metavar="VAR",
        help="llm: the environment variable holding the API key (OPENAI_API_KEY).")] = None,
    llm_timeout: Annotated[float | None, typer.Option(
        "--llm-timeout", metavar="S", help="llm: seconds to wait for an answer (60).")] = None,
    llm_retries: Annotated[int | None, typer.Option(
        "--llm-retries", metavar="N",
        help="llm: retries on 429, 5xx, timeouts, lost connections (3).")] = None,
    llm_max_tokens: Annotated[int | None, typer.Option(
        "--llm-max-tokens", metavar="N", help="llm: the most tokens an answer may take "
        "(2000).")] = None,
    llm_concurrency: Annotated[int | None, typer.Option(
        "--llm-concurrency", metavar="N", help="llm: requests in flight at once (4).")] = None,
    llm_context: Annotated[int | None, typer.Option(
        "--llm-context", metavar="N", help="llm: the summarizer model's window, for chunking "
        "(the model table's, else 8192).")] = None,
    llm_per_step: Annotated[bool | None, typer.Option(
        "--llm-per-step/--no-llm-per-step",
        help="llm: a line per step, cached across runs, instead of sections (off).")] = None,
    redact: Annotated[bool | None, typer.Option(
        "--redact/--no-redact",
        help="llm: replace secrets by typed placeholders before sending (on).")] = None,
    archive_dir: ArchiveDirOpt = None,
    no_archive: Annotated[bool, typer.Option(
        "--no-archive", help="Drop the originals: restore cannot bring them back.")] = False,
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
) -> None:
    """Shrink a transcript to fit its model; originals are archived for restore."""
    from .compress import compress_file
    from .compress.options import from_env, resolve

    dest = _destination(file, output, in_place, force)
    seen = os.stat(file) if in_place else None
    if strip_metadata and in_place:
        raise UsageError("--strip-metadata would drop the archive from the only copy",
                         "write it elsewhere with --output")
    if report_json == "-" and dest == "-" and not dry_run:
        raise UsageError("--report-json - and the transcript cannot both go to stdout")
    cfg = _config(config)
    flags = {"budget": budget, "target": target, "threshold": threshold, "strategy": strategy,
             "truncate": truncate, "max_lines": max_lines, "max_bytes": max_bytes,
             "max_tokens": max_tokens, "truncate_mode": truncate_mode, "mask": mask,
             "keep_observations": keep_observations, "summarize": summarize,
             "keep_rounds": keep_rounds, "keep_steps": keep_steps,
             "max_summary_tokens": max_summary_tokens, "summary_ratio": summary_ratio,
             "archive_dir": archive_dir, "archive": False if no_archive else None,
             "llm_model": llm_model, "llm_base_url": llm_base_url,
             "llm_api_key_env": llm_api_key_env, "llm_timeout": llm_timeout,
             "llm_retries": llm_retries, "llm_max_tokens": llm_max_tokens,
             "llm_concurrency": llm_concurrency, "llm_context": llm_context,
             "llm_per_step": llm_per_step, "redact": redact}
    options = resolve(cfg.compress, from_env(dict(os.environ)), flags)
    result = compress_file(file, options, model=model, format=format,
                           skip_invalid=skip_invalid, table=cfg.models,
                           strip_metadata=strip_metadata, cache=not no_cache, dry_run=dry_run)
    _compress_report(result.report, quiet, dry_run, report_json)
    if result.report.changed and strip_metadata:
        warn("--strip-metadata: the output holds no archive; keep the input to have the "
             "replaced originals")
    elif result.report.changed and not options.archive:
        warn("--no-archive: the replaced originals are not kept; restore cannot bring them back")
    if dry_run:
        result.close()
    else:
        _write_result(dest, file, result.chunks(), seen)


def _compress_report(report: Any, quiet: bool, dry_run: bool, json_path: str | None) -> None:
    from .render import compress as render

    if not report.exact and "tiktoken" in report.model_note:
        warn(report.model_note)
    if json_path == "-":
        sys.stdout.buffer.write(render.to_json(report))
    elif json_path:
        from .jsonl import write_atomic

        write_atomic(json_path, [render.to_json(report)])
    if not quiet:
        render.print_report(_stderr(), report, dry_run=dry_run)
    elif report.warnings:
        for w in report.warnings:
            warn(w)


@app.command()
def restore(
    file: Annotated[str, typer.Argument(metavar="FILE",
        help="A compressed transcript, or - for stdin.")],
    output: OutputOpt = None,
    in_place: InPlaceOpt = False,
    force: ForceOpt = False,
    only: Annotated[str | None, typer.Option(
        "--only", metavar="ID", help="Expand just this item (ids are in the markers and --list).")]
    = None,
    list_: Annotated[bool, typer.Option(
        "--list", help="List the compressed items (id, kind, line) instead of restoring.")]
    = False,
    archive_dir: ArchiveFromOpt = None,
) -> None:
    """Undo compress: give back the original transcript, byte for byte."""
    from .restore import items, restoring

    dest = _destination(file, output, in_place, force)
    if list_:
        for item in items(file):
            print("\t".join(str(x) for x in item))
        return
    seen = os.stat(file) if in_place else None
    with restoring(file, only=only, folder=archive_dir) as restored:
        if restored.layers == 0:
            warn(f"{restored.name}: nothing to restore (no ctxpack items); writing it unchanged")
        _write_result(dest, file, restored.chunks(), seen)


def main() -> None:
    """Entry point: run the app, turning every failure into one line and an exit code."""
    import signal

    if hasattr(signal, "SIGPIPE"):
        # `ctxpack stats big.jsonl | head`: stop quietly when the reader goes away
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code = app(standalone_mode=False)
        # without standalone mode, an Exit inside a command comes back as its code
        if isinstance(code, int) and code:
            sys.exit(code)
    except CtxpackError as exc:
        _exit_with(str(exc), exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _stderr().print("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one boundary: no traceback for users
        # typer's own usage errors know how to show themselves
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        if os.environ.get("CTXPACK_DEBUG"):
            raise
        _exit_with(f"internal error: {type(exc).__name__}: {exc} "
                   "(set CTXPACK_DEBUG=1 for a traceback, and please report it)", EXIT_USAGE)


def _exit_with(message: str, code: int) -> NoReturn:
    try:
        fail(message, code)
    except typer.Exit:
        sys.exit(code)
