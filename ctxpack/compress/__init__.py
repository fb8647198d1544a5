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
WHOLE_RECORDS = ("json-messages", "openai-conversations")  # a record holds conversations


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
    conversations: int = 1
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
    if not hasattr(fmt, "editor"):
        raise UsageError(f"{transcript.path}: compress cannot write {transcript.format} files")
    if model is not None and table.find(model) is None:
        TokenCounter(model, table)  # raises the unknown-model error with its hint
    chosen = table.choose([model, transcript.model, formats.usual_model(transcript.format)])
    counter = TokenCounter(chosen or DEFAULT_MODEL, table)
    editor = fmt.editor(transcript)
    archiver = Archiver(options.archive_dir, options.archive)
    if transcript.format in WHOLE_RECORDS:
        from .documents import compress_records

        def plan(part: Transcript, item: str) -> Work:
            return run(part, counter, editor, options, summarize, item)

        lines, works = compress_records(transcript, plan, archiver, now_iso(), strip_metadata)
        return Compressed(lines, _report(works, transcript, archiver))
    work = run(transcript, counter, editor, options, summarize)
    lines = output_lines(work, archiver, now_iso())
    if strip_metadata:
        lines = [strip(line) for line in lines]
    return Compressed(lines, _report([work], transcript, archiver))


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


def _report(works: list[Work], t: Transcript, archiver: Archiver) -> Report:
    """One report over the plans of a file's conversations (most files have one)."""
    first = works[0] if works else None
    counter = first.counter if first else TokenCounter(DEFAULT_MODEL)
    before = sum(w.steps[0].tokens_before if w.steps else w.total for w in works)
    after = sum(w.total for w in works)
    removed = sum(s.end - s.start - (0 if s.merged else 1) for w in works if (s := w.summary))
    steps = _steps(works)
    done = {s.name: s.items for s in steps}
    archive = ("none" if not archiver.enabled else
               "inline" if archiver.folder is None else f"dir:{archiver.folder}")
    return Report(
        path=t.path, format=t.format, model=counter.model, exact=counter.exact,
        model_note=counter.note, context_window=counter.info.context_window,
        trigger=trigger(first) if first else 0, target=target(first) if first else 0,
        limit=limit(first) if first else 0, tokens_before=before, tokens_after=after,
        messages_before=len(t.messages), messages_after=len(t.messages) - removed,
        steps=steps, truncated=done.get("truncate", 0), masked=done.get("mask", 0),
        summary=_summaries(works), archive=archive,
        warnings=[x for w in works for x in w.warnings],
        changed=any(w.texts or w.summary for w in works), conversations=len(works))


def _steps(works: list[Work]) -> list[StepReport]:
    """Each step's numbers summed over conversations."""
    out: dict[str, StepReport] = {}
    for w in works:
        for s in w.steps:
            total = out.setdefault(s.name, StepReport(s.name, 0, 0))
            total.tokens_before += s.tokens_before
            total.tokens_after += s.tokens_after
            total.items += s.items
            total.note = total.note or s.note
    return list(out.values())


def _summaries(works: list[Work]) -> dict[str, Any] | None:
    """The summaries written, as one: sizes summed, the retention audit merged."""
    done = [(w, s) for w in works if (s := w.summary) is not None]
    if not done:
        return None
    retention: dict[str, dict[str, Any]] = {}
    for _, s in done:
        for name, r in s.retention.items():
            total = retention.setdefault(name, {"total": 0, "kept": 0, "dropped": []})
            total["total"] += r["total"]
            total["kept"] += r["kept"]
            total["dropped"] += r["dropped"]
    w, s = done[0]
    return {"strategy": w.options.strategy, "start": s.start, "end": s.end,
            "conversations": len(done), "messages": sum(s.end - s.start for _, s in done),
            "archived_tokens": sum(s.archived_tokens for _, s in done),
            "tokens": sum(s.tokens for _, s in done), "retention": retention}
