"""Compression: truncate big tool outputs, mask old ones, summarize old history.

`compress_file` reads a transcript file (`reading`), plans the compression stage by stage
(`pipeline`) and returns a `Compressed`: the report, and the output made as it is read
(`writer`; `documents` for files whose records hold whole conversations). `compress` is
the same for an agent loop's list of messages. `ctxpack.undo` takes it back.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from ..archive import Archiver, split_lines
from ..calibration import reported
from ..errors import UsageError
from ..loader import PathOrFile, load, load_values
from ..models import TABLE, ModelTable
from ..transcript import Transcript
from ..workers import Workers, collector_paused
from .pipeline import run
from .plan import Plan
from .reading import WHOLE_RECORDS, Input, Opened, of_transcript, read
from .report import Report, report_of
from .settings import Options
from .summary import likely_texts

__all__ = ["Compressed", "Options", "Report", "compress", "compress_file"]

AHEAD_CHARS = 1 << 20  # of text whose facts are wanted: below this, finding them here is quick
AHEAD_TASK = 256 << 10  # text per task: a plan that needs no summary waits at most one


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
            with collector_paused():  # the plan's objects are all alive still
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


@collector_paused()
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
    options = replace(options or Options(), **({"archive": False} if strip_metadata else {}))
    with Workers() as workers:
        opened = read(source, format, model=model, table=table, skip_invalid=skip_invalid,
                      cache=cache, workers=workers, progress=progress)
        try:
            made = _made(opened.input, options, strip_metadata, dry_run, cache)
        except BaseException:
            opened.close()
            raise
    return Compressed(made.report, _checked(made.chunks(), opened), opened.close)


def _made(given: Input, options: Options, strip: bool = False, dry_run: bool = False,
          cache: bool = True) -> Compressed:
    """Plan the compression of `given`, and its output (made as it is read, where the
    records are lines of their own)."""
    from .documents import apart, conversation_indexes
    from .writer import keeping_bom, output

    archiver = Archiver(options.archive_dir, options.archive)
    if given.transcript.format in WHOLE_RECORDS:
        from .documents import compress_records

        lines, plans = compress_records(
            given.transcript, lambda indexes, item: run(given.part(indexes, item), options,
                                                        dry_run=dry_run, cache=cache),
            archiver, now_iso(), strip)
        return Compressed(report_of(given, plans, archiver, strip),
                          keeping_bom(given.transcript.records, lines))
    runs = conversation_indexes(given.transcript)
    if len(runs) > 1 and apart(given.transcript, runs):
        # runs of one file, each its own prompt (Gemini CLI's stream-json); runs whose
        # lines interleave (a session resumed after another's run) are planned as one,
        # since a summary's span must not cover another plan's lines
        plans = [run(given.part(runs[k], None), options, dry_run=dry_run, cache=cache)
                 for k in sorted(runs)]
    else:
        given.facts.start(likely_texts(Plan(given, options)), len, AHEAD_TASK, AHEAD_CHARS)
        plans = [run(given, options, dry_run=dry_run, cache=cache)]
    return Compressed(report_of(given, plans, archiver, strip),
                      keeping_bom(given.transcript.records,
                                  output(plans, archiver, now_iso(), strip)))


def _checked(chunks: Iterator[bytes], opened: Opened) -> Iterator[bytes]:
    """The output, then a check that the input was not rewritten while it was made (its
    untouched lines are copied from the file as it is now)."""
    yield from chunks
    opened.check_unchanged()


def compress(source: list[dict[str, Any]] | Transcript | PathOrFile, *,
             model: str | None = None, budget: int | None = None, format: str | None = None,
             table: ModelTable = TABLE, usage: Any = None, cache: bool = True,
             **settings: Any) -> tuple[Any, Report]:
    """Compress inside an agent loop: returns the new messages and the report.

    `usage` is what the provider reported of the last call (the one whose reply is the
    last assistant message): `response.usage` as the API returned it, or the prompt size.
    The count is then anchored on it, so that the budget, the trigger and the target are
    of what the provider bills (the system prompt and tools the caller sends included).
    It is held to a file's recorded calls' rules: a prompt no call of the model can hold
    is refused (UsageError), and one far below the count is passed over, the report's
    `warnings` saying so.

    A list of message dicts (Chat Completions or Anthropic Messages) comes back as an
    API-ready list of dicts: the messages it keeps as they were given (the same objects),
    and no archive (the caller holds the originals). A Transcript or a file comes back as
    a Transcript whose records carry the archive (write it with `ctxpack.write`).
    `cache`: counts and llm summaries may be kept across runs (`--no-cache` is False).
    `settings` are the config keys (`keep_steps=4`, `strategy="structured"`, ...).
    """
    from .settings import from_keywords
    from .writer import records_out

    options = from_keywords({**settings, "budget": budget})
    if usage is not None and not isinstance(source, (list, Transcript)):
        raise UsageError("usage is for messages or a Transcript: a file records its own")
    if isinstance(source, list):
        t = load_values(source, format, model=model, table=table)
        given = of_transcript(t if usage is None else reported(t, usage, model or t.model),
                              model, table, cache)
        options = replace(options, archive=False)
        if given.transcript.format in WHOLE_RECORDS:  # a list of whole conversations
            from .documents import conversations_out

            records, plans = conversations_out(given.transcript, lambda indexes, item: run(
                given.part(indexes, item), options, cache=cache))
            return records, report_of(given, plans, Archiver(enabled=False))
        plan = run(given, options, cache=cache)
        made_report = report_of(given, [plan], Archiver(enabled=False))
        return records_out(plan, now_iso()), made_report
    if isinstance(source, Transcript):
        t = source if usage is None else reported(source, usage, model or source.model)
        made = _made(of_transcript(t, model, table, cache), options, cache=cache)
        compressed = load(io.BytesIO(made.data), source.format)
    else:
        made = compress_file(source, options, model=model, format=format, table=table,
                             cache=cache)
        compressed = load(io.BytesIO(made.data), format or made.report.format)
    return replace(compressed, path=made.report.path), made.report
