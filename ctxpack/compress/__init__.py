"""Compression: truncate big tool outputs, mask old ones, summarize old history.

`compress_file` runs the pipeline on a transcript file and returns the new lines
and a `Report`; `compress` is the same for an agent loop's list of messages.
`ctxpack.archive` undoes it.
"""

from __future__ import annotations

import io
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson

from .. import formats
from ..archive import Archiver, strip
from ..errors import UsageError
from ..jsonl import dumps
from ..loader import PathOrFile, load
from ..model import Transcript
from ..models import DEFAULT_MODEL, TABLE, ModelTable
from ..tokens import TokenCounter
from .options import Options
from .pipeline import StepReport, Work, limit, run, target, trigger

REPORT_VERSION = 1


@dataclass
class Report:
    """What a compress did, as the table on stderr and `--report-json` show it."""

    path: str
    format: str
    model: str
    exact: bool
    model_note: str
    context_window: int
    trigger: int
    target: int
    limit: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    steps: list[StepReport] = field(default_factory=list)
    truncated: int = 0
    masked: int = 0
    summary: dict[str, Any] | None = None
    archive: str = "inline"
    warnings: list[str] = field(default_factory=list)
    changed: bool = False
    schema_version: int = REPORT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Compressed:
    """The output lines of a compress and its report."""

    lines: list[bytes]
    report: Report

    @property
    def data(self) -> bytes:
        return b"".join(self.lines)


def now_iso() -> str:
    """The time stamped on summaries; `SOURCE_DATE_EPOCH` pins it for reproducible output."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (datetime.fromtimestamp(int(pinned), timezone.utc) if pinned and pinned.isdigit()
              else datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def compress_file(source: PathOrFile, options: Options | None = None, *,
                  model: str | None = None, format: str | None = None,
                  skip_invalid: bool = False, table: ModelTable = TABLE,
                  strip_metadata: bool = False) -> Compressed:
    """Compress a transcript file; the input is not touched (the caller writes the lines)."""
    from .history import summarize
    from .writer import output_lines

    options = options or Options()
    transcript = load(source, format, skip_invalid=skip_invalid)
    fmt = formats.get(transcript.format)
    if not hasattr(fmt, "editor") or transcript.format == "json-messages":
        raise UsageError(f"{transcript.path}: compress cannot write {transcript.format} files yet",
                         "supported: openai, anthropic, claude-code, codex")
    if model is not None and table.find(model) is None:
        TokenCounter(model, table)  # raises the unknown-model error with its hint
    chosen = table.choose([model, transcript.model, formats.usual_model(transcript.format)])
    counter = TokenCounter(chosen or DEFAULT_MODEL, table)
    work = run(transcript, counter, fmt.editor(transcript), options, summarize)
    archiver = Archiver(options.archive_dir, options.archive)
    lines = output_lines(work, archiver, now_iso())
    if strip_metadata:
        lines = [strip(line) for line in lines]
    return Compressed(lines, _report(work, archiver))


def compress(source: list[dict[str, Any]] | Transcript | PathOrFile, *,
             model: str | None = None, budget: int | None = None, format: str | None = None,
             table: ModelTable = TABLE, **settings: Any) -> tuple[Any, Report]:
    """Compress inside an agent loop: returns the new messages and the report.

    A list of message dicts (Chat Completions or Anthropic Messages) comes back as
    an API-ready list of dicts; a Transcript or a file comes back as a Transcript
    whose records carry the archive (write it with `ctxpack.write`). `settings`
    are the config keys (`keep_steps=4`, `strategy="structured"`, ...).
    """
    from .options import SETTINGS, resolve

    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise UsageError(f"unknown compress setting(s): {', '.join(unknown)}",
                         f"known: {', '.join(SETTINGS)}")
    options = resolve(settings, {"budget": budget})
    if isinstance(source, list):
        data = b"".join(dumps(m) + b"\n" for m in source)
        result = compress_file(io.BytesIO(data), options, model=model, format=format,
                               table=table, strip_metadata=True)
        return [orjson.loads(line) for line in result.lines if line.strip()], result.report
    if isinstance(source, Transcript):
        format = format or source.format
        source = io.BytesIO(b"".join(r.raw for r in source.records))
    result = compress_file(source, options, model=model, format=format, table=table)
    transcript = load(io.BytesIO(result.data), format or result.report.format)
    transcript.path = result.report.path
    return transcript, result.report


def _report(work: Work, archiver: Archiver) -> Report:
    t, s = work.transcript, work.summary
    actions = [item["action"] for items in work.items.values() for item in items]
    summary = None
    if s is not None:
        summary = {"strategy": work.options.strategy, "start": s.start, "end": s.end,
                   "messages": s.end - s.start, "archived_tokens": s.archived_tokens,
                   "tokens": s.tokens, "retention": s.retention}
    after = len(t.messages) - (s.end - s.start) + (0 if s.merged else 1) if s else len(t.messages)
    before = work.steps[0].tokens_before if work.steps else work.total
    archive = ("none" if not archiver.enabled else
               "inline" if archiver.folder is None else f"dir:{archiver.folder}")
    return Report(
        path=t.path, format=t.format, model=work.counter.model, exact=work.counter.exact,
        model_note=work.counter.note,
        context_window=work.counter.info.context_window, trigger=trigger(work),
        target=target(work), limit=limit(work), tokens_before=before, tokens_after=work.total,
        messages_before=len(t.messages), messages_after=after, steps=work.steps,
        truncated=actions.count("truncated"), masked=actions.count("masked"), summary=summary,
        archive=archive, warnings=work.warnings, changed=bool(work.texts) or s is not None)
