"""Reading a transcript file: lines, parsing, format detection, and the reader.

`Scanner` streams: it yields messages as the format reader completes them and
keeps raw lines only when asked (for `load`, which must write them back). Bad
lines raise `InputError` naming file and line, or are skipped and counted.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import chain, islice
from typing import IO, Any

import orjson

from . import formats
from .atomic import write_atomic
from .errors import InputError, UsageError
from .formats.base import Format, Layout, RecordError, Records, naming
from .formats.unknown import first_step, looks_binary, looks_like, looks_like_text
from .jsonl import (
    BOM,
    LineIndex,
    ParsedRecords,
    Source,
    item_lines,
    iter_lines,
    line_in,
    open_source,
    parse_document,
    parse_line,
)
from .models import TABLE, ModelTable, model_name
from .recorded import SetAside, alone, believed, believed_usage, most_held, unsized
from .transcript import (
    META_KEY,
    BadLine,
    Message,
    Record,
    RecordedCall,
    Transcript,
    compress_wrote,
    opens_with_summary,
)

SNIFF_RECORDS = 50
HEADLESS_LINES = 500  # lines a text without its opening line is judged from
DEFAULT_FORMAT = "openai"
PROGRESS_STEP = 1 << 20  # bytes read between two calls of a progress callback

PathOrFile = str | os.PathLike[str] | IO[Any]


class Scanner:
    """One pass over a transcript. Iterate `messages()`; then read the attributes.

    `keep_records` keeps every line's bytes in `records`; `index` instead notes where
    each line lies in a seekable source, so its bytes can be read again later; `on_line`
    is given each line's number and bytes as they are read; `session` picks one session
    of a file of many (an OpenCode database) for a reader that has a `session` to set;
    `loose` is the format records no format claims surely are read as (else the one that
    claims them loosely); `only`, the formats detection may take (None: any): records
    another format claims, and `loose` does not take, are refused, naming it.
    """

    def __init__(self, source: PathOrFile | Source, format: str | None = None, *,
                 skip_invalid: bool = False, keep_records: bool = False,
                 index: LineIndex | None = None,
                 progress: Callable[[int], None] | None = None,
                 on_line: Callable[[int, bytes], None] | None = None,
                 session: str | None = None, loose: str | None = None,
                 only: Sequence[str] | None = None) -> None:
        self._source = source
        self.session = session
        self._forced = formats.get(format) if format else None
        self._loose = formats.get(loose) if loose else None
        self._only = only
        self.skip_invalid = skip_invalid
        self.keep_records = keep_records
        self.index = index
        self.progress = progress
        self.on_line = on_line
        self.path = ""
        self.size: int | None = None
        self.format: Format | None = self._forced
        self.layout: Layout | None = None
        self.compacted: bool | int = False  # a line compress wrote is in the file
        self.carried_slope: float | None = None  # the slope of the bill compress carried
        self.carried_converted: float | None = None  # and the one it converted hidden output at
        self.carried_model: str | None = None  # and the model it billed as
        self.starts: list[int] = []  # the line each message handed out starts on
        # of a document, each message's place in it and the line its item starts on
        self.places: list[tuple[str, int]] = []
        self.conversations: list[int] = []  # and the conversation it is of
        self.sizes: list[int] = []  # and the most tokens it may be (recorded.most_held)
        # the bytes read through each line of a text file (none of a binary one): what the
        # file holds between two lines (see ctxpack.recorded)
        self.ends = array("Q")
        self.boundary = 0  # the last line compress wrote
        self.records: list[Record] = []
        self.skipped: list[BadLine] = []
        self.lines = 0
        self.bytes_read = 0
        self._reader: Any = None
        self._fed = False  # a record was read by the reader
        self._data: bytes | None = None  # the bytes of a whole-file JSON document
        self.whole = False  # the file is one document (no line of it can be skipped)
        # why the format was taken without a record that marks it ("" when one did)
        self.unsure = ""

    def model_of(self, conversation: int) -> str | None:
        """The model conversation `conversation` has named so far, where its reader tells
        one (a reader of joined sessions, each session's; else the reader's, of the first);
        of the first, else the one compress billed the file as (see `_stale_calls`)."""
        if hasattr(self._reader, "model_of"):
            named = self._reader.model_of(conversation)
        elif conversation == 0:
            named = getattr(self._reader, "model", None)
        else:
            return None
        return named or (self.carried_model if conversation == 0 else None)

    def usual_model(self) -> str | None:
        """The format's usual model (for files that name none), once the format is known."""
        return None if self.format is None else formats.usual_model(self.format.name)

    def messages(self) -> Iterator[Message]:
        """Yield messages in the order the reader completes them."""
        src = open_source(self._source, self.session)
        self.path, self.size = src.name, src.size
        try:
            yield from self._run(src)
        finally:
            src.close()

    def _run(self, src: Any) -> Iterator[Message]:
        yield from self._from(self._lines(src))

    def _from(self, lines: Iterator[tuple[int, bytes]],
              sniffed: bool = False) -> Iterator[Message]:
        """The messages of the file's lines (`sniffed`: its first lines were already
        tried as a text format's without their opening line, and were not)."""
        for number, raw in lines:
            binary = formats.sniff_magic(raw) if number == 1 else None
            if binary is not None and self._forced in (None, binary):
                yield from self._document(number, raw, lines, binary)
                return
            magic = getattr(self._forced, "magic", None)
            if number == 1 and magic and (kind := looks_binary(magic)) is not None:
                name = self._forced.name  # type: ignore[union-attr]
                raise InputError(self.path, None, f"not {kind[0]}, which --format {name} "
                                 "reads", "without --format ctxpack detects the file's format")
            if number == 1:
                from .dataset.rows import not_from_stdin

                not_from_stdin(self.path, raw)  # a Parquet dataset: read by its path only
            if number == 1 and (kind := looks_binary(raw)) is not None:
                what, advice = kind[0], first_step(*kind, self.path)
                known = f"ctxpack reads: {', '.join(formats.FORMATS)}"
                raise InputError(self.path, None, f"not a transcript ctxpack reads: this is "
                                 f"{what}", f"{advice}; {known}" if advice else known)
            text = formats.sniff_text(raw) if self._forced is None else (
                self._forced if getattr(self._forced, "text", False) else None)
            if text is not None and raw.strip():
                headless = getattr(text, "headless", None)
                if text is not self._forced or text.sniff_text(raw) or headless is None:
                    yield from self._document(number, raw, lines, text)
                    return
                # a text format forced on a file whose opening line is cut off: read as
                # the format reads such a file, if its first lines are one (else refused)
                head = [(number, raw), *islice(lines, HEADLESS_LINES)]
                yield from self._document(number, raw, chain(head[1:], lines), text,
                                          headless=bool(headless(b"".join(r for _, r in head))))
                return
            # (a byte order mark opening the file is no part of its JSON; raw keeps it)
            opening = raw[len(BOM):] if number == 1 and raw.startswith(BOM) else raw
            if _opens_document(opening, self._forced):
                yield from self._document(number, raw, lines)
                return
            if opening.lstrip()[:1] == b"{":
                after, lines = _peek(lines)
                whole = self._whole_object(raw, number) if after is None else None
                if whole is not None:
                    yield from self._document(number, raw, lines, parsed=whole)
                    return
                if after is not None and self._opens_pretty(opening, after[1]):
                    if self._forced is not None and not getattr(self._forced, "document",
                                                                False):
                        raise InputError(self.path, number,
                                         "one JSON document over many lines, not the one "
                                         f"record a line --format {self._forced.name} reads",
                                         "drop --format: ctxpack tells a document's format "
                                         "itself")
                    yield from self._document(number, raw, lines)
                    return
            if self._forced is None and not sniffed and _not_json(raw):
                head = [(number, raw), *islice(lines, HEADLESS_LINES)]
                fmt, self.unsure = formats.sniff_headless(b"".join(r for _, r in head))
                if fmt is not None:
                    yield from self._document(number, raw, chain(head[1:], lines), fmt,
                                              headless=True)
                    return
                if self.skip_invalid:  # each line then skipped, or read if it is a record
                    yield from self._from(chain(head, lines), sniffed=True)
                    return
                what = looks_like_text(self.path, raw)
                raise InputError(self.path, number, f"this is not JSON: it looks like {what}",
                                 f"ctxpack reads: {', '.join(formats.FORMATS)}")
            record = self._parse(raw, number)
            if record is not None:
                yield from self._records(chain([(number, record)], self._parsed(lines)))
                return
        if not self.skipped:
            raise InputError(self.path, None, EMPTY)
        yield from self._records(iter(()))

    def _whole_object(self, raw: bytes, number: int) -> tuple[Format, Any] | None:
        """The format and value of this object, the file's only line, if it is read as a
        whole document (a minified .traj or Gemini session) rather than as a file of one
        JSONL record; None if not. It is when a format that reads documents claims it at
        least as surely as a line format; when both claim it as surely, `unsure` says
        which was taken and why. A file named as JSONL (convert's one request body, say)
        is read as such."""
        if self._forced is not None:
            if not getattr(self._forced, "document", False):
                return None
            return self._forced, parse_document(raw, self.path, number)
        if self.path.lower().endswith(JSONL_NAMES):
            return None
        try:
            value = parse_line(raw, self.path, number)
        except InputError:
            return None  # read as a line, whose problem is then said (or skipped)
        doc, score = formats.sniff(value, document=True, path=self.path)
        line, line_score = formats.sniff(value)
        if doc is None or score < line_score:
            return None
        if doc is line and getattr(doc, "one_record", None) and doc.one_record(value):
            return None
        self._judge(doc, score, value)
        if score >= 2 and line is not None and line is not doc and line_score == score:
            self.unsure = (f"one JSON object on one line: read as a whole {doc.name} "
                           f"document, though as a one-line JSONL file it fits {line.name}")
        return doc, value

    def _opens_pretty(self, raw: bytes, after: bytes) -> bool:
        """Does this first line open a document pretty-printed from its first line on
        (`{"messages": [`), rather than begin a JSONL file? It does when the line is JSON
        that runs out at its end and the next line is no whole record (a JSONL file whose
        first line was cut goes on with whole ones). A file named as JSONL is read as such."""
        if self.path.lower().endswith(JSONL_NAMES):
            return False
        try:
            orjson.loads(raw)
            return False  # a whole value: a JSONL record
        except orjson.JSONDecodeError:
            pass
        try:  # where it breaks
            json.loads(raw.decode("utf-8", "replace"))
            return False
        except RecursionError:  # nested too deep to say: read as a line, as before
            return False
        except json.JSONDecodeError as exc:
            if exc.doc[exc.pos:].strip():  # a mistake within the line
                return False
        goes_on = after.lstrip()[:1]
        if raw.rstrip().endswith(b"{") and goes_on not in (b'"', b"}"):
            return False  # an object opened goes on with a key or closes: `{` then `{` is none
        try:
            return not isinstance(orjson.loads(after), dict)
        except orjson.JSONDecodeError:  # a document goes on with JSON, not with garbage
            return goes_on in _JSON_GOES_ON

    def _parsed(self, lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, dict[str, Any]]]:
        for number, raw in lines:
            record = self._parse(raw, number)
            if record is not None:
                yield number, record

    def _records(self, numbered: Iterator[tuple[int, dict[str, Any]]]) -> Iterator[Message]:
        """The messages of records (with their line numbers): the format sniffed from the
        first ones unless forced, each record fed to its reader."""
        pending: list[tuple[int, dict[str, Any]]] = []
        reader = self._start(self._forced) if self._forced else None
        # the format that claims the records seen most surely, how surely, and the first
        # record it claims so
        best: tuple[Format | None, int, Any] = (None, 0, None)
        for number, record in numbered:
            if reader is None:
                pending.append((number, record))
                fmt, score = formats.sniff(record)
                if score > best[1]:
                    best = (fmt, score, record)
                if best[1] < 2 and len(pending) < SNIFF_RECORDS:
                    continue
                reader = self._choose(best, pending)
                for n, r in pending:
                    yield from self._feed(reader, n, r)
                pending.clear()
                continue
            yield from self._feed(reader, number, record)
        if reader is None:
            reader = self._choose(best, pending)
            for n, r in pending:
                yield from self._feed(reader, n, r)
        if self.progress is not None:
            self.progress(self.bytes_read)
        rest, self.layout = reader.finish()
        _named(self.layout)
        self._stale_calls(rest)
        self._believed()
        self._none_read(None, "none of the file's records is a message")
        yield from _not_summaries(rest)

    def _lines(self, src: Any) -> Iterator[tuple[int, bytes]]:
        told = 0
        for number, raw in enumerate(iter_lines(src.stream, src.size), 1):
            self.lines = number
            self.bytes_read += len(raw)
            self.ends.append(self.bytes_read)
            if self.keep_records:
                self.records.append(Record(number, raw))
            elif self.index is not None:
                self.index.add(len(raw))
            if self.on_line is not None:
                self.on_line(number, raw)
            if self.progress is not None and self.bytes_read >= told + PROGRESS_STEP:
                told = self.bytes_read
                self.progress(told)
            yield number, raw

    def _document(self, first: int, raw: bytes, rest: Iterator[tuple[int, bytes]],
                  text: Format | None = None, headless: bool = False,
                  parsed: tuple[Format, Any] | None = None) -> Iterator[Message]:
        """The whole input is one JSON value (a .traj file, a list of runs), for a `text`
        format one text (a Markdown log; `headless`: cut above its opening line, as the
        format's `headless` found), or for a format with a `magic` a binary file its
        reader opens from the path (a database): read it at once. `parsed` is the format
        and value of a document already parsed (one on a single line)."""
        data = b"".join([raw, *(r for _, r in rest)])
        self.whole = True
        if getattr(text, "magic", None):  # a binary file (a database) its reader opens
            value: Any = None
            fmt = text
        elif text is not None:
            value = _decoded(data, self.path, first)
            fmt = text
        elif parsed is not None:
            fmt, value = parsed
        else:
            value = parse_document(data, self.path, first)
            fmt = self._forced
            if fmt is None:
                fmt, score = formats.sniff(value, document=True, path=self.path)
                if fmt is None:
                    raise _unknown(self.path, first, value)
                self._judge(fmt, score, value)
        self._start(fmt)
        self._data = data if text is None else None  # (a JSON document)
        if headless:
            self._reader.headless = True
        if hasattr(self._reader, "located"):  # it reads lines or files beside this one
            self._reader.located(self.path, data, first)
        read = self._feed(self._reader, first, value)
        if self.progress is not None:
            self.progress(self.bytes_read)
        rest_messages, self.layout = self._reader.finish()
        _named(self.layout)
        self._stale_calls(rest_messages)
        # each message's place in the document, which a call set aside is named by
        emitted = placed([*read, *rest_messages], value, self._data, first)
        self.places = [(m.place, m.item_line) for m in emitted]
        self._believed()
        self._none_read(first, "none of the file's text is a message" if text is not None
                        else "the file is an empty JSON array" if value == [] else
                        "the file is a JSON object whose message list is empty")
        yield from [*emitted[:len(read)], *_not_summaries(emitted[len(read):])]

    def _choose(self, best: tuple[Format | None, int, Any],
                pending: list[tuple[int, dict[str, Any]]]) -> Any:
        fmt, score, claimed = best
        if fmt is None:
            if pending:
                raise _unknown(self.path, pending[0][0], pending[0][1])
            fmt = self._loose or formats.get(DEFAULT_FORMAT)
        elif score < 2 and self._loose is not None:
            self._judge(fmt, score, claimed)
            fmt = self._loose
        elif self._only is not None and fmt.name not in self._only:
            line = next(n for n, r in pending if r is claimed)
            raise InputError(self.path, line, f"not an {' or '.join(self._only)} message "
                             f"but a record of the {fmt.name} format")
        else:
            self._judge(fmt, score, claimed)
        return self._start(fmt)

    def _judge(self, fmt: Format, score: int, claimed: Any) -> None:
        """Say why the format taken is unsure (`unsure`) where the evidence is thin: it
        claimed the file only loosely, or by a mark that another kind of file could
        carry as well (its `doubt` of the record, or document, it claimed)."""
        if score < 2:  # (what else it may be, where the format can say)
            self.unsure = hasattr(fmt, "doubt") and fmt.doubt(claimed) or LOOSE
        elif hasattr(fmt, "doubt") and not (hasattr(fmt, "sniff_place")
                                             and fmt.sniff_place(claimed, self.path)):
            # (a file where its agent keeps such files is sure by its place)
            self.unsure = fmt.doubt(claimed) or self.unsure

    def _start(self, fmt: Format) -> Any:
        """The reader of `fmt`, told the session to read if one was asked for."""
        self.format, self._reader = fmt, fmt.reader()
        if self.session is not None:
            if not hasattr(self._reader, "session"):
                raise InputError(self.path, None, f"a session ({self.session}) is picked "
                                 f"only in a file of many: this {fmt.name} file holds one",
                                 "--session is for OpenCode's opencode.db or storage folder")
            self._reader.session = self.session
        return self._reader

    def _parse(self, raw: bytes, number: int) -> dict[str, Any] | None:
        try:
            return parse_line(raw, self.path, number)
        except InputError as exc:
            if not self.skip_invalid:
                raise
            self.skipped.append(BadLine(number, exc.problem))
            return None

    def _none_read(self, line: int | None, what: str) -> None:
        """A file taken for a format on thin evidence (only loosely, or by a mark another
        log may carry: see `unsure`), with no message in it either (`[]`,
        `{"messages": []}`, notices alone), is no transcript: refused as an empty file is."""
        if not self.starts and self.unsure:
            raise InputError(self.path, line,
                             f"no messages: {what}, no transcript of any format")

    def _stale_calls(self, rest: list[Message]) -> None:
        """A file ctxpack compressed keeps records whose recorded prompt sizes were of the
        context before: none of those is taken to describe the context (each keeps only
        what it says of hidden content, billed 0). What compress found was sent besides the
        messages (`not_in_file_tokens` of the lines it wrote) stands for them, as a call
        before any message (see calibration.prompts_of) — until the session goes on: where
        compress restates the usage of the records it keeps (the format's
        `restates_usage`), calls whose replies start after the last line it wrote were made
        on the context as it is, and the newest of them anchors. The model compress billed
        as (`billed_model`) is the file's where no reply kept names one."""
        if self.layout is not None and self.layout.model is None:
            self.layout.model = self.carried_model
        self.starts += [m.lines[0] if m.lines else self.lines for m in rest]
        self.conversations += [m.conversation for m in rest]
        self.sizes += map(most_held, rest)
        if self.compacted is not False and self.layout is not None:
            carried, context = self.compacted, self.layout.context
            # (what compress carried)
            self.layout.earlier, self.layout.earlier_calls, self.layout.older = [], [], []
            restates = getattr(self.format, "restates_usage", False)

            def after(c: RecordedCall) -> bool:
                """Whether `c`'s reply and usage both come after the last line compress
                wrote (an older Codex CLI writes a call's usage before its reply: one
                compress restated is of no call made since)."""
                if c.prompt >= len(context) or context[c.prompt] >= len(self.starts):
                    return False
                start = self.starts[context[c.prompt]]
                return min(start, c.at or start) > self.boundary

            since = [c for c in self.layout.calls if restates and c.billed > 0 and after(c)]
            kept = [replace(c, billed=0) for c in self.layout.calls
                    if (c.hidden or c.reasoning) and c not in since]
            if since:
                self.layout.calls = sorted([*kept, *since], key=lambda c: c.prompt)
                return
            self.layout.calls = kept if carried is True else \
                [RecordedCall(0, carried, None, None, slope=self.carried_slope,
                              converted=self.carried_converted), *kept]

    def _believed(self) -> None:
        """Set aside the recorded calls that cannot be true (see ctxpack.recorded), before
        anything bills with them."""
        layout = self.layout
        if layout is None:
            return

        def lines(places: list[int]) -> list[int]:
            return [self.starts[n] if n < len(self.starts) else 0 for n in places]

        def conversations(places: list[int]) -> list[int]:
            return [self.conversations[n] if n < len(self.conversations) else -1
                    for n in places]

        def span(first: int, last: int) -> int | None:
            binary = getattr(self.format, "magic", None)
            if binary or not 1 <= first <= last <= len(self.ends):
                return None
            return self.ends[last - 1] - (self.ends[first - 2] if first > 1 else 0)

        def places(at: list[int]) -> list[tuple[str, int]]:
            return [self.places[n] if n < len(self.places) else ("", 0) for n in at]

        def sizes(at: list[int]) -> list[int]:
            return [self.sizes[n] for n in at] if all(n < len(self.sizes) for n in at) else []

        def judged(calls: list[RecordedCall], at: list[int]
                   ) -> tuple[list[RecordedCall], list[SetAside], list[SetAside]]:
            """The calls made on the messages `at` that are believed, those set aside, and
            those kept whose reply's size is unknown, named where their usage is."""
            kept, gone = believed(calls, lines(at), conversations(at), span, places(at),
                                  sizes(at))
            return kept, gone, unsized(kept, lines(at), places(at))

        layout.calls, aside, now = judged(layout.calls, layout.context)
        layout.earlier_calls, before, then = judged(layout.earlier_calls, layout.earlier)
        older = [(held, judged(calls, held)) for held, calls in layout.older]
        layout.older = [(held, kept) for held, (kept, _, _) in older]
        before += [x for _, (_, out, _) in older for x in out]
        alone_aside = alone(layout.unbilled_calls)
        before += alone_aside
        # a reader's own (usage it could not read) with those of the calls it read
        layout.set_aside = sorted([*layout.set_aside, *before, *aside], key=lambda x: x.line)
        gone = {id(x.call) for x in alone_aside}
        layout.unsized = sorted([*now, *then, *(x for _, (*_, named) in older for x in named),
                                 *unsized([c for c in layout.unbilled_calls
                                           if id(c) not in gone])], key=lambda x: x.line)
        layout.usage = believed_usage(layout.usage, aside, layout.calls, before)

    def _fits_forced(self, record: Any) -> None:
        """A record is not read as the format `--format` names where another format claims
        it surely and the named one does not claim it (or only loosely, and the other by
        its mark), or the named one does not claim it and it has a shape ctxpack knows of:
        a reader takes what it can of any record and would read such a file as nonsense
        (empty messages, or none, or tool calls as text) without a word."""
        forced = self._forced
        if forced is None:
            return
        where = self.path if self.whole else ""
        fits = formats.claims(forced, record, where)
        if fits >= 2:
            return
        other, score = formats.sniff(record, document=self.whole, path=where)
        what = f"{other.name} ({other.description})" if other is not None and \
            score - fits >= 2 else None if fits else looks_like(record)
        if what:
            raise RecordError(f"this {'file' if self.whole else 'line'} looks like {what}")

    def _feed(self, reader: Any, number: int, record: dict[str, Any]) -> list[Message]:
        meta = record.get(META_KEY) if isinstance(record, dict) else None
        if compress_wrote(meta):  # a line compress wrote (a rewind's is not: see its kind)
            carried = meta.get("not_in_file_tokens")
            self.carried_slope = _slope(meta.get("billed_slope")) or self.carried_slope
            self.carried_converted = _slope(meta.get("converted_slope")) or \
                self.carried_converted
            if isinstance(meta.get("billed_model"), str) and meta["billed_model"]:
                self.carried_model = meta["billed_model"]
            self.compacted = carried if isinstance(carried, int) and \
                not isinstance(carried, bool) and carried >= 0 else \
                (True if self.compacted is False else self.compacted)
        try:
            self._fits_forced(record)
            out = _not_summaries(reader.feed(number, record))
            self._fed = True
        except RecordError as exc:
            if getattr(reader, "items", None) is not None:  # it was reading an item
                exc = reader.items.placed(exc)
            line = exc.line or (self._data is not None and exc.at and
                                line_in(self._data, number, exc.at)) or number
            name = self.format.name if self.format else "?"
            if self._forced is None and not self.skip_invalid and (
                    looks_like(record) or self.unsure and not self._fed):
                # the format was only guessed, and this record shows the guess wrong
                raise _unknown(self.path, line, record, f"read as {name}: {exc}") from None
            problem = f"not read as {name}: {exc}"
            if not self.skip_invalid:
                raise InputError(self.path, line, problem, None if self.whole else (
                    "--format picks another format; --skip-invalid skips such lines"
                    if self._forced else "--skip-invalid skips such lines")) from None
            self.skipped.append(BadLine(number, problem))
            return []
        if not self.whole and (len(out) > 1 or out and out[0].place) and all(
                m.line == number and m.raw is not record for m in out):
            # a line of many messages (an OpenHands instance, a Gemini API request): each
            # at its place in it (the reader's, if it gave one and the line holds no other)
            out = [replace(m, place=f"line {number:,} {m.place}") if m.place else m
                   for m in placed(out, record)]
        self.starts += [m.lines[0] if m.lines else number for m in out]
        self.conversations += [m.conversation for m in out]
        self.sizes += map(most_held, out)
        if compress_wrote(meta):
            self.boundary = number
        return out


def _write_files(transcript: Transcript, fmt: Any, dest: PathOrFile) -> None:
    """Write a transcript kept as many files into the folder `dest` (see `write`): all of
    them read before any is written."""
    folder = None if hasattr(dest, "write") else os.fspath(dest)
    if folder is None or folder == "-" or os.path.isfile(folder):
        raise UsageError(f"{transcript.path}: cannot write {transcript.format} as one file: "
                         f"{fmt.spread}", naming("give a folder to write them into, or "
                                                 "`ctxpack convert FILE --to openai -o "
                                                 "run.jsonl` to write its context as one file",
                                                 transcript.path))
    files = fmt.files(transcript)
    for name, data in files:
        path = os.path.join(folder, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{os.path.dirname(path)}: cannot make this folder: "
                             f"{exc.strerror or exc}") from None
        write_atomic(path, [data])


# what a line of a JSON document pretty-printed over many lines opens with
_JSON_GOES_ON = {bytes([b]) for b in b'"{}[],-0123456789tfn'}

EMPTY = "the file is empty (nothing but blank space): no transcript of any format"

JSONL_NAMES = (".jsonl", ".ndjson")  # a file named so is read line by line

LOOSE = ("no record carries a mark of its format: plain {role, content} messages fit "
         "several readers")


def _unknown(path: str, line: int, record: Any, tried: str = "") -> InputError:
    """The error for input no reader takes: what it looks like (else, if given, how the
    reader it seemed to fit failed), and what ctxpack reads."""
    what = looks_like(record)
    problem = (f"this looks like {what}" if what
               else f"this fits no transcript format ctxpack reads ({tried})" if tried
               else "this fits no transcript format ctxpack reads")
    known = ", ".join(formats.FORMATS)
    return InputError(path, line, problem, f"ctxpack reads: {known}")


PLACE_DEPTH = 4  # how deep in a document messages are looked for (`[0].traj[5]`)


def placed(messages: list[Message], document: Any, data: bytes | None = None,
           first: int = 1) -> list[Message]:
    """The messages of a document, each given its place in it (`history[3]`) when they all
    share one line (a document written on one line, or read as one): a line number would
    tell them apart no more than "line 1" does; a place its reader gave it (an OpenHands
    `event 3`, in an output.jsonl line as in a trajectory) stays. Given the document's
    bytes `data` (from line `first`) over many lines, each also gets the line its item
    starts on."""
    if len(messages) < 2 or len({m.line for m in messages}) > 1:
        return messages
    paths: dict[int, tuple[str, tuple[str | int, ...]]] = {}
    todo: list[tuple[Any, str, tuple[str | int, ...], int]] = [(document, "", (), 0)]
    while todo:
        value, path, at, depth = todo.pop()
        if isinstance(value, dict):
            paths.setdefault(id(value), (path or "the document", at))
            items: Any = ((f"{path}.{k}" if path else str(k), (*at, k), v)
                          for k, v in value.items())
        elif isinstance(value, list):
            paths.setdefault(id(value), (path or "the document", at))
            items = ((f"{path}[{i}]", (*at, i), v) for i, v in enumerate(value))
        else:
            continue
        if depth < PLACE_DEPTH:
            todo += [(v, p, a, depth + 1) for p, a, v in items if isinstance(v, (dict, list))]
    # pretty-printed: the items' own lines
    lines = item_lines(data, first, [paths[id(m.raw)][1] for m in messages
                                     if id(m.raw) in paths])
    return [replace(m, place=m.place or paths[id(m.raw)][0],
                    item_line=lines.get(paths[id(m.raw)][1], 0))
            if id(m.raw) in paths else m for m in messages]


def _not_summaries(messages: list[Message]) -> list[Message]:
    """A summary compress wrote is never a person's request, whatever its role."""
    for i, m in enumerate(messages):
        if m.human and opens_with_summary(m):
            messages[i] = replace(m, human=False)
    return messages


def _decoded(data: bytes, path: str, first: int) -> str:
    """A text document as a string; bytes that are not UTF-8 name the line they are on."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first + data.count(b"\n", 0, exc.start)
        raise InputError(path, line, f"not valid UTF-8: byte 0x{data[exc.start]:02x}") from None


def _slope(value: Any) -> float | None:
    """A slope a line compress wrote says (a number above 0), else None."""
    return float(value) if isinstance(value, float | int) and not isinstance(value, bool) \
        and value > 0 else None


def _not_json(raw: bytes) -> bool:
    """Is this first non-blank line of a file plainly no JSON (text, a table, Markdown)?
    One that opens an object or array is JSON cut or broken; any other is text unless it
    is a JSON value whole (a CSV row may open with a digit or a quote)."""
    head = raw.strip().removeprefix(BOM)
    if not head or head[:1] in b"{[":
        return False
    try:
        orjson.loads(head)
    except orjson.JSONDecodeError:
        return True
    return False


def _peek(lines: Iterator[tuple[int, bytes]]
          ) -> tuple[tuple[int, bytes] | None, Iterator[tuple[int, bytes]]]:
    """The next line that is not blank (None at the end) and the lines again, unread."""
    seen: list[tuple[int, bytes]] = []
    for item in lines:
        seen.append(item)
        if item[1].strip():
            return item, chain(seen, lines)
    return None, iter(seen)


def _opens_document(raw: bytes, forced: Format | None) -> bool:
    """Does this first line open a multi-line JSON document rather than a JSONL record?"""
    if forced is not None and not getattr(forced, "document", False):
        return False
    head = raw.strip()
    return head in (b"{", b"[") or head.startswith(b"[")


def load(source: PathOrFile, format: str | None = None, *,
         skip_invalid: bool = False, session: str | None = None) -> Transcript:
    """Read a whole transcript, keeping every line so that `write` gives it back exactly
    (of an OpenCode database, its session `session` if given)."""
    scanner = Scanner(source, format, skip_invalid=skip_invalid, keep_records=True,
                      session=session)
    return _transcript(scanner, list(scanner.messages()), tuple(scanner.records))


def load_values(values: Sequence[Any], format: str | None = None,
                name: str = "<messages>", model: str | None = None,
                table: ModelTable = TABLE, only: Sequence[str] | None = None
                ) -> Transcript:
    """A transcript of records given as values (a list of message dicts, as an agent loop
    holds them), read as a file of one record a line would be: of the format its records
    mark (an agent's records, Claude Code's or Codex's, are that agent's; with `only`,
    records of a format not in it are refused), else, where none marks one, the API
    `model` is served by (`unmarked_format`)."""
    for n, value in enumerate(values, 1):
        if not isinstance(value, dict):
            raise InputError(name, n, f"expected a message object, found {type(value).__name__}")
    scanner = Scanner(None, format, loose=unmarked_format(model, table), only=only)
    scanner.path = name
    messages = list(scanner._records(enumerate(values, 1)))
    return _transcript(scanner, messages, ParsedRecords(values))


def _named(layout: Layout) -> None:
    """Every model name a reader gives its layout (the file's, each recorded call's) read
    as `model_name` reads it, before anything bills, fits or shows them: a call of an
    empty name is one of no model named, billed as the file's."""
    layout.model = model_name(layout.model)
    for field in ("calls", "earlier_calls", "unbilled_calls"):
        calls = getattr(layout, field)
        if any(c.model is not None and model_name(c.model) is None for c in calls):
            setattr(layout, field, [c if model_name(c.model) is not None else
                                    replace(c, model=None) for c in calls])


def unmarked_format(model: str | None, table: ModelTable = TABLE) -> str:
    """The format messages no record of which marks one are read and billed as: the API
    that serves `model` (Anthropic's Messages for a model of Anthropic's, by the table),
    else Chat Completions, as a file of them is read."""
    found = table.find(model) if model else None
    return "anthropic" if found is not None and found.provider == "anthropic" \
        else DEFAULT_FORMAT


def _transcript(scanner: Scanner, emitted: list[Message], records: Sequence[Record]
                ) -> Transcript:
    layout = scanner.layout
    assert layout is not None and scanner.format is not None
    seen = set(layout.context) | set(layout.sidechain)
    outside = [i for i in range(len(emitted)) if i not in seen]
    place = {n: k for k, n in enumerate([*layout.context, *layout.sidechain, *outside])}
    earlier = tuple(place[n] for n in layout.earlier if n in place)
    # (a context some message of which is not read is no prompt to fit on)
    older = tuple((tuple(place[n] for n in held), tuple(calls)) for held, calls in layout.older
                  if all(n in place for n in held))
    aside = {id(x.call) for x in layout.set_aside if x.call is not None}
    records_of = Records()
    for m in emitted:
        records_of.add(m)
    held = layout.held(records_of.keys.__getitem__)
    return Transcript(
        format=scanner.format.name,
        path=scanner.path,
        records=records,
        messages=tuple(emitted[i] for i in layout.context),
        sidechain=tuple(emitted[i] for i in layout.sidechain),
        outside=tuple(emitted[i] for i in outside),
        earlier=earlier,
        earlier_calls=tuple(layout.earlier_calls) if len(earlier) == len(layout.earlier)
        else (),
        older=older,
        unbilled_calls=tuple(c for c in layout.unbilled_calls if id(c) not in aside),
        model=layout.model,
        models=tuple(layout.models),
        usage=layout.usage,
        skipped=tuple(scanner.skipped),
        unsure=scanner.unsure,
        calls=tuple(layout.calls),
        set_aside=tuple(layout.set_aside),
        unsized=tuple(layout.unsized),
        failed=tuple(layout.failed),
        problems=tuple(layout.problems),
        notes=tuple(layout.notes),
        outside_why=layout.outside_why,
        copies=tuple(emitted[i] for i in sorted(
            {*(i for i in layout.copies if i not in seen),
             *({*layout.statements(), *layout.restated} - held.keys())})),
        held_first=tuple((emitted[n], emitted[first]) for n, first in held.items()),
        repeated=tuple(emitted[i] for i in sorted(layout.counted_once(held))),
        read=tuple(emitted),
        document=scanner.whole,
        conversations=layout.held_conversations(),
    )


def write(transcript: Transcript, dest: PathOrFile) -> None:
    """Write the file's records as read, byte for byte.

    A loaded Transcript is a read-only view of its file (its messages and parts are
    frozen), so there is nothing else to write: to change what a transcript holds,
    use `ctxpack.compress`, which writes through the format's editor. A transcript
    kept as many files (a format's `spread` says why) is written as those files into the
    folder `dest`, each byte for byte at its place below it (an OpenCode session: a
    storage/ tree of that session); one stream cannot hold it.
    """
    fmt = formats.get(transcript.format)
    if hasattr(fmt, "files"):
        _write_files(transcript, fmt, dest)
        return
    chunks = (r.raw for r in transcript.records)
    if hasattr(dest, "write"):
        out = getattr(dest, "buffer", dest)
        for chunk in chunks:
            out.write(chunk)
        return
    name = os.fspath(dest)
    if name == "-":
        import sys

        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    write_atomic(name, chunks)
