"""What compress reads: the transcript's context messages, their counts, what is known of
each tool output, and how to get back what was set aside while reading.

Compress needs the whole text of few outputs: those it may truncate (the newest steps')
and those the summary reads (the newest archived steps'). Outputs older than the newest
`HOLD` characters keep only what compress must know of them (an `Output`); a plan that
needs one of them whole after all has it read again from the file (`Input.originals`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .. import formats
from ..archive import item_id
from ..bulk import StreamCounter
from ..calibration import Bill, Earlier, bill_for, message_counts_with_hidden
from ..errors import InputError, UsageError
from ..formats.base import Editor, naming
from ..jsonl import LineIndex, Snapshot, Source, reopenable
from ..loader import PathOrFile, Scanner
from ..models import ModelTable
from ..tokens import REPLY_PRIMING, MessageCount, TokenCounter, model_and_window
from ..transcript import META_KEY, Image, Message, Text, ToolResult, Transcript
from ..workers import Ahead, Workers, here
from .cutting import line_count, utf8_size
from .facts import Facts, extract_all
from .failures import looks_failed
from .masking import is_masked, masked_failure
from .units import Unit, cuts, head_end, units_of

HOLD = 64 << 20  # characters of tool output kept whole, the newest
WHOLE_RECORDS = ("json-messages", "openai-conversations")  # a record holds conversations


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


@dataclass(eq=False)
class Input:
    """A transcript as compress read it; stages read it, none changes it. (What is
    derived from it — cuts, units, line ids, outputs read again, facts — is remembered
    once worked out: the same question always has the same answer.)

    `transcript.messages` are the context messages, some without the text of their tool
    outputs (read them whole with `originals`); `counts` and `outputs` are per message,
    as read (a reply whose thinking the file stores empty counted at its recorded
    output: see ctxpack.calibration). `bill` says what the provider bills for a count:
    compress's trigger, target and limit are in billed tokens. `item` is set where a
    record holds whole conversations and is written again whole: the id of all its
    changes. `facts` finds the facts of texts (see `workers`)."""

    transcript: Transcript
    counter: TokenCounter
    editor: Editor
    counts: Sequence[MessageCount]
    outputs: Sequence[tuple[Output, ...]]
    fetch: Callable[[set[int]], dict[int, Message]] = field(repr=False)
    model: str  # the model it is reported under, and its context window (as stats says)
    window: int
    bill: Bill
    item: str | None = None
    facts: Ahead[str, Facts] = field(default_factory=lambda: here(extract_all), repr=False)
    _ids: dict[tuple[int, str], str] = field(default_factory=dict, repr=False)

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.transcript.messages

    @property
    def total(self) -> int:
        """The prompt's tokens as read."""
        return sum(c.total for c in self.counts) + REPLY_PRIMING

    @cached_property
    def cuts(self) -> list[int]:
        """Where the messages may be cut (see units.cuts)."""
        return cuts(self.messages)

    @cached_property
    def _units(self) -> list[Unit]:
        return units_of(self.messages, self.cuts, 0)

    def units(self, start: int = 0) -> list[Unit]:
        """The units from `start` (an allowed cut) on."""
        from bisect import bisect_left

        return self._units[bisect_left(self.cuts, start):]

    @cached_property
    def head(self) -> int:
        """Where the kept head (system prompts, the task) ends."""
        return head_end(self.messages, self.cuts)

    def originals(self, indexes: Iterable[int]) -> dict[int, Message]:
        """The messages at `indexes` as read, whole."""
        wanted = set(indexes)
        return self.fetch(wanted) if wanted else {}

    def result_part(self, i: int, j: int) -> int:
        """Where the j-th tool result of message i sits among its parts."""
        return [k for k, p in enumerate(self.messages[i].parts) if isinstance(p, ToolResult)][j]

    def result_tokens(self, i: int, j: int) -> int:
        """Tokens of the j-th tool result of message i, as read."""
        return self.counts[i].parts[self.result_part(i, j)]

    def line_id(self, i: int, kind: str = "o") -> str:
        """The id that names what compress does to message i's line (or, where records
        hold conversations, to the whole record)."""
        if self.item is not None:
            return self.item
        found = self._ids.get((i, kind))
        if found is None:
            line = self.messages[i].line
            found = self._ids[i, kind] = item_id(kind, line,
                                                 self.transcript.records[line - 1].raw)
        return found

    def part(self, indexes: list[int], item: str | None) -> Input:
        """The input of one conversation of a file that holds many, its messages at
        `indexes`; its changes are all named `item` (where records hold conversations),
        or each by its line (None: a conversation of lines, as a Gemini CLI run)."""
        t = self.transcript
        part = Transcript(t.format, t.path, t.records, tuple(t.messages[i] for i in indexes),
                          model=t.model, document=t.document)

        def fetch(wanted: set[int]) -> dict[int, Message]:
            found = self.fetch({indexes[k] for k in wanted})
            return {k: found[indexes[k]] for k in wanted}

        return replace(self, transcript=part, counts=[self.counts[i] for i in indexes],
                       outputs=[self.outputs[i] for i in indexes], fetch=fetch, item=item,
                       _ids={})



@dataclass(eq=False)
class Opened:
    """A transcript file read for compress, kept open: its untouched lines are copied from
    it when the output is written. `seen` is the file when it was opened."""

    input: Input
    source: Source
    seen: Snapshot | None

    def check_unchanged(self) -> None:
        """Raise if the file was rewritten since it was opened: the output, made from its
        lines as read then and as read now, would mix two versions. (Lines appended are
        no harm: the output is the file as it was when opened.)"""
        if self.seen is not None and self.source.rewritten(self.seen):
            raise InputError(self.input.transcript.path, None,
                             "changed while it was being compressed (not only appended to)",
                             "compress it again once whatever writes it is done")

    def close(self) -> None:
        self.source.close()


def read(source: PathOrFile, format: str | None, *, model: str | None, table: ModelTable,
         skip_invalid: bool = False, cache: bool = True, workers: Workers | None = None,
         progress: Callable[[int], None] | None = None, hold: int = HOLD) -> Opened:
    """Read and count a transcript for compress; the file stays open (see `Opened`).
    `progress` is told the bytes read so far, as the reading goes; outputs older than
    the newest `hold` characters are set aside."""
    src = reopenable(source)
    try:
        seen = src.snapshot()
        return Opened(_read(src, format, model, table, skip_invalid, cache, workers, progress,
                            hold), src, seen)
    except BaseException:
        src.close()
        raise


class _Emitted:
    """The messages of a file as its reader emits them, each with what is known of its
    outputs; once the outputs held pass `hold` characters, the oldest are set aside
    (None: never)."""

    def __init__(self, hold: int | None) -> None:
        self.messages: list[Message] = []
        self.outputs: list[tuple[Output, ...]] = []
        self.aside: set[int] = set()
        self._held: deque[tuple[int, int]] = deque()  # (index, size) of outputs at hand
        self._held_size = 0
        self._hold = hold

    def add(self, message: Message) -> None:
        n = len(self.messages)
        self.messages.append(message)
        self.outputs.append(tuple(observe(r) for r in message.tool_results))
        size = sum(o.size for o in self.outputs[n])
        if not size:
            return
        self._held.append((n, size))
        self._held_size += size
        while self._hold is not None and self._held_size > self._hold \
                and len(self._held) > 1:
            old, old_size = self._held.popleft()
            self._held_size -= old_size
            self.messages[old] = _set_aside(self.messages[old])
            self.aside.add(old)


def _read(src: Source, format: str | None, model: str | None, table: ModelTable,
          skip_invalid: bool, cache: bool, workers: Workers | None,
          progress: Callable[[int], None] | None, hold: int) -> Input:
    index = LineIndex(src.stream)
    scanner = Scanner(src, format, skip_invalid=skip_invalid, index=index, progress=progress)
    counts: list[MessageCount | None] = []
    counting: StreamCounter[int] = StreamCounter(
        model, table, scanner.model_of, scanner.usual_model, counts.__setitem__,
        cache=cache, workers=workers)
    emitted: _Emitted | None = None
    try:
        for message in scanner.messages():
            # (the format is known once a message is out: a record that holds whole
            # conversations is written again whole, from its messages)
            emitted = emitted or _Emitted(
                None if scanner.format.name in WHOLE_RECORDS else hold)
            counts.append(None)
            counting.add(message, len(emitted.messages))
            emitted.add(message)
        counter = counting.done()
    finally:
        counting.close()
    emitted = emitted or _Emitted(None)
    layout, fmt = scanner.layout, scanner.format
    assert layout is not None and fmt is not None
    context = layout.context
    transcript = Transcript(
        format=fmt.name, path=scanner.path, records=index,
        messages=tuple(emitted.messages[n] for n in context), model=layout.model,
        models=tuple(layout.models),
        usage=layout.usage, skipped=tuple(scanner.skipped), calls=tuple(layout.calls),
        set_aside=tuple(layout.set_aside), failed=tuple(layout.failed),
        problems=tuple(layout.problems), document=scanner.whole,
        conversations=layout.held_conversations())
    where = {n: i for i, n in enumerate(context)}
    fetch = _refetch(src, transcript, skip_invalid, list(context),
                     {where[n] for n in emitted.aside if n in where})
    return _input(transcript, counter, [counts[n] for n in context],  # type: ignore[misc]
                  [emitted.outputs[n] for n in context], fetch, model is not None,
                  earlier=([counts[n].total for n in layout.earlier],  # type: ignore[union-attr]
                           layout.earlier_calls),
                  facts=workers.ahead(extract_all) if workers else here(extract_all))


def _input(t: Transcript, counter: TokenCounter, counts: list[MessageCount],
           outputs: list[tuple[Output, ...]], fetch: Callable[[set[int]], dict[int, Message]],
           flagged: bool, earlier: Earlier | None = None, **more: Any) -> Input:
    """The Input of a transcript read and counted: its bill worked out (`earlier` as
    calibration.bill takes it), and the count of each reply that hides its thinking raised
    to its recorded output."""
    # (the bill raises them itself: it is given the counts as read, so that hidden
    # content is added once; see breakdown for stats, which does the same)
    billed = bill_for([c.total for c in counts], t.calls, t.model, counter, t.format, flagged,
                      earlier=earlier)
    counts = message_counts_with_hidden(counts, t.calls, billed)
    model, window, _ = model_and_window(counter, t.model, t.usage, flagged, t.calls)
    return Input(t, counter, editor_of(t), counts, outputs, fetch, model, window, billed,
                 **more)


def editor_of(t: Transcript) -> Editor:
    """How compress writes a transcript of this format."""
    fmt = formats.get(t.format)
    if not hasattr(fmt, "editor"):
        raise UsageError(f"{t.path}: compress cannot write {t.format} files",
                         naming(getattr(fmt, "why_not_written", None), t.path))
    return fmt.editor(t)  # type: ignore[no-any-return]


def _set_aside(message: Message) -> Message:
    """The message without the content of its tool outputs (and without its raw record,
    which holds them too, but for its `ctxpack` object)."""
    parts = tuple(ToolResult(p.call_id, (), p.is_error) if isinstance(p, ToolResult) else p
                  for p in message.parts)
    raw = message.raw
    kept = {META_KEY: raw[META_KEY]} if isinstance(raw, dict) and META_KEY in raw else None
    return replace(message, parts=parts, raw=kept)


def _refetch(src: Source, t: Transcript, skip_invalid: bool, order: list[int],
             aside: set[int]) -> Callable[[set[int]], dict[int, Message]]:
    """How to have context messages whole: those set aside are read from the file again
    (all at once: a pass over the file for each would cost more), and kept."""
    whole: dict[int, Message] = {}

    def fetch(wanted: set[int]) -> dict[int, Message]:
        missing = {order[i]: i for i in wanted & aside if i not in whole}
        if missing:
            scanner = Scanner(src, t.format, skip_invalid=skip_invalid)
            for n, message in enumerate(scanner.messages()):
                i = missing.get(n)
                if i is not None:
                    whole[i] = message
        return {i: whole.get(i, t.messages[i]) for i in wanted}

    return fetch


def of_transcript(t: Transcript, model: str | None, table: ModelTable,
                  cache: bool = True, counted: tuple[TokenCounter, Sequence[MessageCount]]
                  | None = None, **more: Any) -> Input:
    """A loaded transcript (or one of values: see `loader.load_values`) as compress's
    input: every message is whole already; each is counted as a file's would be, or
    was counted so already (`counted`: the counter and each message's count, as an agent
    loop keeps them; see ctxpack.loop). `more` are Input's own fields (`facts`)."""
    from ..formats import usual_model

    outputs = [tuple(observe(r) for r in m.tool_results) for m in t.messages]
    if counted is not None:
        counter, known = counted
        return _input(t, counter, list(known), outputs,
                      lambda wanted: {i: t.messages[i] for i in wanted}, model is not None,
                      **more)
    counts: list[MessageCount | None] = [None] * len(t.messages)
    counting: StreamCounter[int] = StreamCounter(
        model, table, t.model_of, lambda: usual_model(t.format), counts.__setitem__,
        cache=cache)
    try:
        for i, m in enumerate(t.messages):
            counting.add(m, i)
        counter = counting.done()
    finally:
        counting.close()
    # (the context before the newest compaction and its calls: the bill's fit is of them
    # too, calls since or not, as a file read is billed)
    every = (*t.messages, *t.sidechain, *t.outside)
    earlier = ([counter.message(every[k]).total for k in t.earlier], t.earlier_calls)
    return _input(t, counter, counts, outputs,  # type: ignore[arg-type]
                  lambda wanted: {i: t.messages[i] for i in wanted}, model is not None,
                  earlier=earlier, **more)
