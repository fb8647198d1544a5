"""Reading a transcript for compress: each message counted as it streams in, and the
text of old tool outputs set aside, so that a file of any size fits in memory.

Compress needs the whole text of few outputs: those it may truncate (the newest steps')
and those the summary reads (the newest archived steps'). Outputs older than the newest
`WINDOW` characters keep only what compress must know of them (an `Output`); if a plan
needs one of them whole after all, `Scanned.fetch` reads the file again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..archive import item_id
from ..bulk import StreamCounter
from ..errors import InputError
from ..jsonl import LineIndex, Snapshot, Source, reopenable
from ..loader import PathOrFile, Scanner
from ..models import ModelTable
from ..tokens import MessageCount, TokenCounter
from ..transcript import META_KEY, Image, Message, Text, ToolResult, Transcript
from .facts import looks_failed
from .mask import is_masked, masked_failure
from .truncate import line_count, utf8_size

WINDOW = 64 << 20  # characters of tool output kept whole, the newest
WHOLE_RECORDS = ("json-messages", "openai-conversations")  # a record holds conversations
# Lines shorter than this get their output id when a plan asks for it: they cost little
# to read again, and a file of many short lines would hold an id for each.
ID_BYTES = 1 << 10


@dataclass(frozen=True, slots=True)
class Output:
    """What compress knows of one tool output, whether or not its text is at hand."""

    lines: int  # as truncate counts them (a final newline ends the last line)
    bytes: int  # of its text, in UTF-8
    size: int  # characters of its text and image data: what holding it costs
    text_only: bool  # all its parts are text (only such outputs are truncated)
    failed: bool  # it reports an error (flagged, an exit code, error lines)
    masked: bool  # it is a mask placeholder


def observe(result: ToolResult) -> Output:
    text = result.text
    images = sum(len(p.data or "") for p in result.parts if isinstance(p, Image))
    return Output(line_count(text), utf8_size(text), len(text) + images,
                  all(isinstance(p, Text) for p in result.parts),
                  result.is_error or masked_failure(text) or looks_failed(text), is_masked(text))


def set_aside(message: Message) -> Message:
    """The message without the content of its tool outputs (and without its raw record,
    which holds them too, but for its `ctxpack` object)."""
    parts = [ToolResult(p.call_id, (), p.is_error) if isinstance(p, ToolResult) else p
             for p in message.parts]
    raw = message.raw
    kept = {META_KEY: raw[META_KEY]} if isinstance(raw, dict) and META_KEY in raw else None
    return replace(message, parts=parts, raw=kept)


@dataclass
class Scanned:
    """A transcript read for compress: its context messages, their counts and outputs."""

    transcript: Transcript  # records are a LineIndex: their bytes are read when needed
    counter: TokenCounter
    counts: list[MessageCount]  # per context message
    outputs: list[tuple[Output, ...]]  # per context message, one per tool result
    source: Source = field(repr=False)
    skip_invalid: bool = False
    order: list[int] = field(default_factory=list)  # emission index of each context message
    aside: set[int] = field(default_factory=set)  # context messages set aside
    workers: Any = None  # the counting's worker processes, kept for other work (or None)
    seen: Snapshot | None = None  # the file when it was opened
    ids: dict[int, str] = field(default_factory=dict)  # long line -> its item_id("o"), as read

    def fetch(self, wanted: Iterable[int]) -> dict[int, Message]:
        """The whole messages at these context indexes, reading the file again for those
        set aside (each is also put back in the transcript)."""
        wanted = set(wanted)
        missing = {self.order[i]: i for i in wanted & self.aside}
        if missing:
            scanner = Scanner(self.source, self.transcript.format,
                              skip_invalid=self.skip_invalid)
            for n, message in enumerate(scanner.messages()):
                i = missing.get(n)
                if i is not None:
                    self.transcript.messages[i] = message
            self.aside -= wanted
        return {i: self.transcript.messages[i] for i in wanted}

    def check_unchanged(self) -> None:
        """Raise if the file was rewritten since it was opened: the output, made from its
        lines as read then and as read now, would mix two versions. (Lines appended are
        no harm: the output is the file as it was when opened.)"""
        if self.seen is not None and self.source.rewritten(self.seen):
            raise InputError(self.transcript.path, None,
                             "changed while it was being compressed (not only appended to)",
                             "compress it again once whatever writes it is done")

    def take_workers(self) -> Any:
        """The worker processes (a ProcessPoolExecutor), now the caller's to shut down."""
        workers, self.workers = self.workers, None
        return workers

    def close(self) -> None:
        if self.workers is not None:
            self.take_workers().shutdown(wait=True, cancel_futures=True)
        self.source.close()


def scan(source: PathOrFile, format: str | None, *, model: str | None, table: ModelTable,
         skip_invalid: bool = False, cache: bool = True,
         progress: Callable[[int], None] | None = None) -> Scanned:
    """Read and count a transcript; the file stays open for writing the output.
    `progress` is told the bytes read so far, as the reading goes."""
    src = reopenable(source)
    try:
        seen = src.snapshot()
        scanned = _scan(src, format, model, table, skip_invalid, cache, progress)
        scanned.seen = seen
        return scanned
    except BaseException:
        src.close()
        raise


def _scan(src: Source, format: str | None, model: str | None, table: ModelTable,
          skip_invalid: bool, cache: bool, progress: Callable[[int], None] | None) -> Scanned:
    index = LineIndex(src.stream)
    ids: dict[int, str] = {}

    def identify(line: int, raw: bytes) -> None:
        # the id a mask or cut of this line's output will name (see pipeline.line_id):
        # made here, where the line is at hand, not read again for it later
        if len(raw) >= ID_BYTES:
            ids[line] = item_id("o", line, raw)

    scanner = Scanner(src, format, skip_invalid=skip_invalid, index=index, progress=progress,
                      on_line=identify)
    emitted: list[Message] = []
    outputs: list[tuple[Output, ...]] = []
    counts: list[MessageCount | None] = []
    held: deque[tuple[int, int]] = deque()  # (emission index, size) of outputs at hand
    held_size = 0
    aside: set[int] = set()

    def deliver(i: int, count: MessageCount) -> None:
        counts[i] = count

    counting: StreamCounter[int] = StreamCounter(
        model, table, lambda: [scanner.named_model, scanner.usual_model], deliver, cache=cache)
    try:
        for message in scanner.messages():
            n = len(emitted)
            emitted.append(message)
            counts.append(None)
            outputs.append(tuple(observe(r) for r in message.tool_results))
            counting.add(message, n)
            size = sum(o.size for o in outputs[n])
            if not size:
                continue
            held.append((n, size))
            held_size += size
            while held_size > WINDOW and len(held) > 1 and _may_set_aside(scanner):
                old, old_size = held.popleft()
                held_size -= old_size
                emitted[old] = set_aside(emitted[old])
                aside.add(old)
        counter = counting.done(keep_workers=True)
        workers = counting.hand_over_workers()
    finally:
        counting.close()
    layout = scanner.layout
    assert layout is not None and scanner.format is not None
    context = layout.context
    where = {n: i for i, n in enumerate(context)}
    transcript = Transcript(
        format=scanner.format.name, path=scanner.path, records=index,
        messages=[emitted[n] for n in context], model=layout.model, usage=layout.usage,
        skipped=scanner.skipped)
    found = [counts[n] for n in context]
    assert all(c is not None for c in found)
    return Scanned(transcript, counter, found, [outputs[n] for n in context],  # type: ignore[misc]
                   src, skip_invalid, list(context), {where[n] for n in aside if n in where},
                   workers, ids=ids)


def _may_set_aside(scanner: Scanner) -> bool:
    # a record that holds whole conversations is written again whole, from its messages
    return scanner.format is not None and scanner.format.name not in WHOLE_RECORDS

