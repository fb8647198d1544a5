"""Compression: truncate big tool outputs, mask old ones, summarize old history.

`compress_file` runs the pipeline on a transcript file and returns the new lines
and a `Report`; `compress` is the same for an agent loop's list of messages.
`ctxpack.archive` undoes it.
"""

from __future__ import annotations

import gc
import io
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any

import orjson

from .. import formats
from ..archive import Archiver, split_lines
from ..errors import UsageError
from ..jsonl import dumps
from ..loader import PathOrFile, load
from ..models import DEFAULT_MODEL, TABLE, ModelTable
from ..tokens import TokenCounter
from ..transcript import Transcript
from .pipeline import StepReport, Work, limit, run, target, trigger
from .settings import Options

if TYPE_CHECKING:
    from .scan import Scanned

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
    llm: dict[str, Any] | None = None  # what the llm summarizer did and cost, if asked
    archive: str = "inline"
    warnings: list[str] = field(default_factory=list)
    changed: bool = False
    conversations: int = 1
    schema_version: int = REPORT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Compressed:
    """A compress's report, and its output, made piece by piece as `chunks` is read
    (the input is read again meanwhile), or all at once through `data` and `lines`."""

    def __init__(self, report: Report, chunks: Iterable[bytes],
                 close: Callable[[], None] = lambda: None) -> None:
        self.report = report
        self._chunks: Iterable[bytes] | None = chunks
        self._close = close
        self._data: bytes | None = None

    def chunks(self) -> Iterator[bytes]:
        """The output in pieces; it can be read once (the input is closed after)."""
        if self._data is not None:
            yield self._data
            return
        pieces, self._chunks = self._chunks, None
        if pieces is None:
            raise RuntimeError("the output of this compress was read already")
        try:
            yield from pieces
        finally:
            self.close()

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self.chunks())
        return self._data

    @property
    def lines(self) -> list[bytes]:
        return split_lines([self.data])

    def close(self) -> None:
        """Let go of the input (when the output is not wanted, as in a dry run)."""
        self._chunks = None
        self._close()


def now_iso() -> str:
    """The time stamped on summaries; `SOURCE_DATE_EPOCH` pins it for reproducible output."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (datetime.fromtimestamp(int(pinned), timezone.utc) if pinned and pinned.isdigit()
              else datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Compress makes millions of objects that live until it returns and free no cycles:
    the cyclic garbage collector would walk them again and again (a second of a big
    file's planning), so it rests meanwhile, and is then set back as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_collector_paused()
def compress_file(source: PathOrFile, options: Options | None = None, *,
                  model: str | None = None, format: str | None = None,
                  skip_invalid: bool = False, table: ModelTable = TABLE,
                  strip_metadata: bool = False, cache: bool = True,
                  dry_run: bool = False,
                  progress: Callable[[int], None] | None = None) -> Compressed:
    """Compress a transcript file; the input is not touched (the caller writes the output).

    With `cache`, token counts persist across runs (see ctxpack.cache), as for stats,
    and so do the llm summarizer's per-step lines. With `strip_metadata` the output
    keeps no archive, as with `archive=False`. A `dry_run` plans without asking an
    LLM endpoint anything (its report tells the extractive summary's numbers).
    `progress`, if given, is told how many bytes of the input are read, as it is read."""
    from .ahead import FactsAhead
    from .history import summarize
    from .scan import WHOLE_RECORDS, scan
    from .writer import output

    options = options or Options()
    if strip_metadata:
        options = replace(options, archive=False)
    # where the archive may be compressed ahead (see _prepack): made before the scan forks
    # its worker processes, so that they have it open too
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - the prepack's to close, or closed here
    try:
        scanned = scan(source, format, model=model, table=table, skip_invalid=skip_invalid,
                       cache=cache, progress=progress)
    except BaseException:
        spool.close()
        raise
    try:
        t = scanned.transcript
        fmt = formats.get(t.format)
        if not hasattr(fmt, "editor"):
            raise UsageError(f"{t.path}: compress cannot write {t.format} files")
        editor = fmt.editor(t)
        archiver = Archiver(options.archive_dir, options.archive)

        def work_of(indexes: list[int], item: str | None = None) -> Work:
            part = t if item is None else Transcript(
                t.format, t.path, t.records, [t.messages[i] for i in indexes], model=t.model)
            return Work(part, scanned.counter, editor, options, list(part.messages),
                        [scanned.counts[i] for i in indexes],
                        [scanned.outputs[i] for i in indexes],
                        lambda wanted: _by_index(scanned.fetch(indexes[k] for k in wanted),
                                                 indexes, wanted),
                        item=item, dry_run=dry_run, cache=cache, read=scanned.ids)

        if t.format in WHOLE_RECORDS:
            from .documents import compress_records

            lines, works = compress_records(
                t, lambda indexes, item: run(work_of(indexes, item), summarize), archiver,
                now_iso(), strip_metadata)
            scanned.close()
            spool.close()
            return Compressed(_report(works, t, archiver), lines)
        work = work_of(list(range(len(t.messages))))
        work.ahead = FactsAhead.start(work, scanned.take_workers())
        prepack = _prepack(work, archiver, strip_metadata, spool)
        try:
            run(work, summarize)
        except BaseException:
            if prepack is not None:
                prepack.close()
            raise
        finally:
            if work.ahead is not None:
                work.ahead.close()
        if prepack is not None and work.summary is None:  # nothing to archive whole
            prepack.close()
            prepack = None

        def close() -> None:
            scanned.close()
            if prepack is not None:
                prepack.close()

        return Compressed(_report([work], t, archiver),
                          _checked(output(work, archiver, now_iso(), strip_metadata, prepack),
                                   scanned), close)
    except BaseException:
        scanned.close()
        spool.close()
        raise


def _checked(chunks: Iterator[bytes], scanned: Scanned) -> Iterator[bytes]:
    """The output, then a check that the input was not rewritten while it was made (its
    untouched lines are copied from the file as it is now)."""
    yield from chunks
    scanned.check_unchanged()


PREPACK_BYTES = 32 << 20  # below this, the archive is compressed fast enough when written


def _prepack(work: Work, archiver: Archiver, strip: bool, spool: IO[bytes]) -> Any:
    """Compress the file ahead into `spool` while the plan is made, when a summary (and so
    an archive of most of a big file) is to be expected: in the worker processes that find
    the summary's facts, once those are in (the archive is wanted only when the output is
    written), else on a thread. The spool is closed if it is not wanted."""
    from ..archive import Prepack
    from ..jsonl import LineIndex

    records = work.transcript.records
    likely = (work.options.summarize and work.total > trigger(work) and archiver.enabled
              and archiver.folder is None and not strip)
    if not (likely and isinstance(records, LineIndex) and records.size >= PREPACK_BYTES
            and Prepack.possible()):
        spool.close()
        return None
    prepack = Prepack(records, spool)
    if work.ahead is not None:
        work.ahead.prepack = prepack
    else:
        prepack.start()
    return prepack


def _by_index(found: dict[int, Any], indexes: list[int], wanted: Iterable[int]) -> dict[int, Any]:
    """`found` (by index in the whole transcript) by index in a part of it."""
    return {k: found[indexes[k]] for k in wanted}


def compress(source: list[dict[str, Any]] | Transcript | PathOrFile, *,
             model: str | None = None, budget: int | None = None, format: str | None = None,
             table: ModelTable = TABLE, **settings: Any) -> tuple[Any, Report]:
    """Compress inside an agent loop: returns the new messages and the report.

    A list of message dicts (Chat Completions or Anthropic Messages) comes back as
    an API-ready list of dicts; a Transcript or a file comes back as a Transcript
    whose records carry the archive (write it with `ctxpack.write`). `settings`
    are the config keys (`keep_steps=4`, `strategy="structured"`, ...).
    """
    from .settings import from_keywords

    options = from_keywords({**settings, "budget": budget})
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
        summary=_summaries(works), llm=_llm(works), archive=archive,
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
    return {"strategy": s.strategy, "start": s.start, "end": s.end,
            "conversations": len(done), "messages": sum(s.end - s.start for _, s in done),
            "audited_messages": sum(s.audited for _, s in done),
            "archived_tokens": sum(s.archived_tokens for _, s in done),
            "archived_tokens_read": sum(s.read_tokens for _, s in done),
            "tokens": sum(s.tokens for _, s in done),
            "max_tokens": sum(s.max_tokens for _, s in done),
            "cap_tokens": sum(s.cap for _, s in done),
            "squeezed": any(s.squeezed for _, s in done), "retention": retention}


def _llm(works: list[Work]) -> dict[str, Any] | None:
    """What the llm summarizer did over a file's conversations: numbers summed, the
    first fallback reason told."""
    done = [s.llm for w in works if (s := w.summary) is not None and s.llm is not None]
    if not done:
        return None
    out = dict(done[0])
    for more in done[1:]:
        for name, value in more.items():
            if name == "redacted":
                out[name] = dict(Counter(out.get(name) or {}) + Counter(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                out[name] = out.get(name, 0) + value
        out["used"] = out["used"] and more["used"]
        out["fallback"] = out["fallback"] or more["fallback"]
    return out
