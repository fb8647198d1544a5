"""The commands that write transcripts: compress and restore, to a file, stdout, or
the input itself (atomically, keeping a backup, and only if nothing changed it)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from ..errors import UsageError
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
    read_config,
    stderr,
    warn,
)

RECENT_SECONDS = 5.0  # a file written this recently may still be open in an agent

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
    from ..jsonl import write_atomic

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
    from ..compression import compress_file
    from ..compression.settings import resolve
    from ..settings import from_env

    dest = _destination(file, output, in_place, force)
    seen = os.stat(file) if in_place else None
    if strip_metadata and in_place:
        raise UsageError("--strip-metadata would drop the archive from the only copy",
                         "write it elsewhere with --output")
    if report_json == "-" and dest == "-" and not dry_run:
        raise UsageError("--report-json - and the transcript cannot both go to stdout")
    cfg = read_config(config)
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
    from ..render.progress import FileProgress

    with FileProgress([file], stderr()) as advance:  # a big file, on a terminal
        result = compress_file(file, options, model=model, format=format,
                               skip_invalid=skip_invalid, table=cfg.models,
                               strip_metadata=strip_metadata, cache=not no_cache,
                               dry_run=dry_run, progress=advance(file))
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
    from ..render import compress as render

    if not report.exact and "tiktoken" in report.model_note:
        warn(report.model_note)
    if json_path == "-":
        sys.stdout.buffer.write(render.to_json(report))
    elif json_path:
        from ..jsonl import write_atomic

        write_atomic(json_path, [render.to_json(report)])
    if not quiet:
        render.print_report(stderr(), report, dry_run=dry_run)
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
    from ..undo import items, restoring

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

