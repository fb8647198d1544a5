"""The readable view of a transcript that `ctxpack show` prints: pure data, no rich.

`build_view` walks a loaded transcript round by round, counts every message, names the
tool each result answers, pretty-prints tool arguments, and folds long text to its first
and last lines with a marker that says exactly how many lines and tokens it hid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from . import images
from .breakdown import UNKNOWN_TOOL, context_counts, transcript_models
from .calibration import hidden_counts_of
from .errors import UsageError
from .formats import usual_model
from .formats.agent_text import round_title
from .formats.base import OUTSIDE_WHY
from .jsonl import LONE
from .loader import PathOrFile, load
from .models import TABLE, ModelTable
from .render import counted, shortened
from .tokens import REPLY_PRIMING, MessageCount, TokenCounter, reported_model
from .transcript import (
    Image,
    Message,
    Part,
    Round,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
)

FOLD_LINES = 12  # lines kept of a long tool output, argument list, system prompt or thinking
PROSE_LINES = 36  # lines kept of a long user or assistant message
LINE_CHARS = 400  # a longer single line of output is cut here (prose: five times as long)
PROSE_CHARS = 5
LINE_SLACK = 100  # ...unless cutting it would hide fewer characters than this
MIN_FOLD = 3  # hiding fewer lines than this is not worth a marker
PROSE_ROLES = ("user", "assistant")

# Terminal control sequences in tool outputs (colours, cursor moves, titles) and other
# control characters would act on the reader's terminal; they are removed or made visible.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Fold:
    """What a fold marker hides: whole lines, or (chars > 0) the rest of one very long line."""

    lines: int
    tokens: int
    chars: int = 0

    @property
    def label(self) -> str:
        if self.chars:
            return f"… {self.chars:,} more characters, {self.tokens:,} tokens cut (--full to show)"
        unit = "line" if self.lines == 1 else "lines"
        return f"… {self.lines:,} {unit}, {self.tokens:,} tokens folded (--full to show) …"


# A body is its shown lines in order; a Fold with lines stands for the lines it hides, a
# Fold with chars continues the line just before it.
Body = tuple[str | Fold, ...]


@dataclass(frozen=True, slots=True)
class Segment:
    """One part of a message as shown: text, thinking, tool_call, tool_result or image."""

    kind: str
    body: Body = ()
    tool: str | None = None
    call_id: str | None = None
    is_error: bool = False
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Entry:
    """One message: where it is, who sent it, what it costs, and its segments."""

    line: int
    role: str
    tokens: int
    segments: tuple[Segment, ...]
    name: str | None = None
    tool: str | None = None  # the tool(s) a result message answers
    step: int | None = None  # the step this message opens, counted within its round
    human: bool = False
    conversation: int | None = None  # set on the first message of each conversation (1-based)
    where: str = ""  # the message's line, or its place in a one-line document


@dataclass(frozen=True, slots=True)
class RoundView:
    number: int
    title: str
    line: int
    messages: int
    steps: int
    tokens: int
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Header:
    """The facts about the whole transcript, whatever part of it is shown."""

    path: str
    format: str
    model: str
    encoding: str
    exact: bool
    note: str
    tokens: int
    messages: int
    rounds: int
    steps: int
    outside: int
    sidechain: int
    skipped: int
    outside_why: str = ""
    failed: int = 0  # requests the file records as failed, with no reply

    def hidden(self, bring_in: str = "") -> list[str]:
        """What is not shown, a phrase each; `bring_in` (how to show them) is said of the
        messages an option brings in."""
        more = f"; {bring_in}" if bring_in else ""
        out = []
        if self.outside:
            out.append(f"{counted(self.outside, 'message')} outside the model's context "
                       f"({self.outside_why or OUTSIDE_WHY}{more})")
        if self.sidechain:
            out.append(f"{self.sidechain:,} sub-agent (sidechain) messages"
                       + (f" ({bring_in})" if bring_in else ""))
        if self.skipped:
            out.append(f"{self.skipped:,} invalid lines skipped")
        if self.failed:
            out.append(f"{counted(self.failed, 'failed request')}, with no reply (`ctxpack "
                       "validate` says why)")
        return out


@dataclass(frozen=True, slots=True)
class View:
    header: Header
    rounds: tuple[RoundView, ...]
    pattern: re.Pattern[str] | None = None
    matches: int | None = None


def view_file(source: PathOrFile, model: str | None = None, *, format: str | None = None,
              skip_invalid: bool = False, table: ModelTable = TABLE, full: bool = False,
              round: int | None = None, grep: str | None = None,
              session: str | None = None) -> View:
    """Load a transcript (of an OpenCode database, its session `session` if given) and
    build its view, counting for `model` (else the one it names)."""
    compile_grep(grep)  # a bad pattern fails before the file is read
    transcript = load(source, format, skip_invalid=skip_invalid, session=session)
    counter = TokenCounter(model or table.choose(transcript_models(transcript)), table)
    return build_view(transcript, counter, full=full, round=round, grep=grep,
                      flagged=model is not None)


def build_view(transcript: Transcript, counter: TokenCounter, *, flagged: bool,
               full: bool = False, round: int | None = None, grep: str | None = None,
               fold_lines: int = FOLD_LINES, prose_lines: int = PROSE_LINES,
               line_chars: int = LINE_CHARS) -> View:
    """The transcript as a person reads it, narrowed to one round and/or to matching messages.
    `flagged`: the counter's model was asked for (`--model`), not found in the file (no
    default: a caller that forgets it would report the file's model over the one asked for)."""
    pattern = compile_grep(grep)
    messages = transcript.messages
    # (a reply the file holds only part of counted as stats and compress count it)
    counts = hidden_counts_of(transcript, context_counts(transcript, counter, flagged),
                              counter, flagged)
    rounds = transcript.rounds()
    header = _header(transcript, counter, rounds, counts, flagged)
    folder = _Folder(counter, not full, fold_lines, prose_lines, line_chars, pattern)
    tools = _tool_names([*messages, *transcript.outside])  # a result's call may be cut
    starts = _conversation_starts(messages)
    shown: list[RoundView] = []
    matches = 0
    for r in pick_round(rounds, round):
        keep = [i for i in r.indexes if pattern is None or pattern.search(messages[i].text)]
        matches += len(keep)
        if not keep:
            continue
        steps = {s.action: n for n, s in enumerate(r.steps, 1)}
        entries = tuple(_entry(messages[i], counts[i], tools, folder, steps.get(i),
                               starts.get(i)) for i in keep)
        first = messages[r.start]
        shown.append(RoundView(r.number, round_title(first, clean), first.line,
                               r.end - r.start, len(r.steps),
                               sum(counts[i].total for i in r.indexes), entries))
    return View(header, tuple(shown), pattern, matches if pattern else None)


def compile_grep(grep: str | None) -> re.Pattern[str] | None:
    """The --grep pattern, case-insensitive; a bad one is a usage error that names it."""
    if grep is None:
        return None
    try:
        return re.compile(grep, re.IGNORECASE)
    except re.error as exc:
        raise UsageError(f"--grep {grep!r} is not a valid regular expression: {exc}",
                         "it is a Python regex: put \\ before ( [ . * + ? to match them "
                         "literally") from None


def pick_round(rounds: list[Round], number: int | None) -> list[Round]:
    """All rounds, or only round `number`; an unknown number names the valid range."""
    if number is None:
        return rounds
    for r in rounds:
        if r.number == number:
            return [r]
    if not rounds:
        raise UsageError(f"--round {number}: this transcript has no messages to show")
    first, last = rounds[0].number, rounds[-1].number
    span = f"round {first}" if first == last else f"rounds {first} to {last}"
    raise UsageError(f"--round {number} is out of range: this transcript has {span}")


def _header(t: Transcript, counter: TokenCounter, rounds: list[Round],
            counts: list[MessageCount], flagged: bool) -> Header:
    conversations = len({m.conversation for m in t.messages})
    model, exact, note = reported_model(counter, t.model, usual_model(t.format), flagged)
    return Header(clean(t.path), t.format, clean(model), counter.encoding_name, exact,
                  note, sum(c.total for c in counts) + REPLY_PRIMING * conversations,
                  len(t.messages), len(rounds), sum(len(r.steps) for r in rounds),
                  len(t.outside), len(t.sidechain), len(t.skipped), t.outside_why,
                  len(t.failed))


def _conversation_starts(messages: Sequence[Message]) -> dict[int, int]:
    """Index -> conversation number (1-based) of each conversation's first message, when a
    file holds several (rounds run on across them, as stats counts them)."""
    firsts = {m.conversation: i for i, m in reversed(list(enumerate(messages)))}
    if len(firsts) < 2:
        return {}
    return {i: n for n, i in enumerate(sorted(firsts.values()), 1)}


def _tool_names(messages: Sequence[Message]) -> dict[str, str]:
    return {c.id: clean(c.name) for m in messages for c in m.tool_calls if c.id}


def _tool_of(result: ToolResult, tools: dict[str, str]) -> str:
    """The tool a result answers: its call's, else the one the file names with it."""
    return tools.get(result.call_id or "") or clean(result.name) or UNKNOWN_TOOL


def _entry(m: Message, count: MessageCount, tools: dict[str, str], folder: _Folder,
           step: int | None, conversation: int | None) -> Entry:
    segments: list[Segment] = []
    for part, tokens in zip(m.parts, count.parts, strict=True):
        segments.extend(_segments(part, tokens, m.role, tools, folder))
    answered = [_tool_of(r, tools) for r in m.tool_results]
    tool = ", ".join(dict.fromkeys(answered)) or None
    # a message of tool results only is tool output whatever its role, as stats counts it
    return Entry(m.line, "tool" if m.result_only else clean(m.role), count.total, tuple(segments),
                 clean(m.name) if m.name else m.name, tool, step, m.human, conversation,
                 clean(m.where))


def _segments(part: Part, tokens: int, role: str, tools: dict[str, str],
              folder: _Folder) -> Iterator[Segment]:
    if isinstance(part, Text):
        yield Segment("text", folder.fold(part.text, prose=role in PROSE_ROLES), tokens=tokens)
    elif isinstance(part, Thinking):
        yield Segment("thinking", folder.fold(part.text), tokens=tokens)
    elif isinstance(part, ToolCall):
        yield Segment("tool_call", folder.fold(pretty_arguments(part.arguments)),
                      clean(part.name), part.id, tokens=tokens)
    elif isinstance(part, ToolResult):
        yield Segment("tool_result", folder.fold(part.text), _tool_of(part, tools),
                      part.call_id, part.is_error, tokens)
        for p in part.parts:
            if isinstance(p, Image):
                yield _image(p, folder.counter.image(p))
    elif isinstance(part, Image):
        yield _image(part, tokens)


def _image(part: Image, tokens: int) -> Segment:
    size = images.size_from_base64(part.data) if part.data else None
    facts = [part.media_type or "image"]
    if size:
        facts.append(f"{size[0]}×{size[1]}")
    elif part.data and images.not_base64(part.data):
        facts.append("not base64: no picture")
    if part.url and not part.url.startswith("data:"):
        facts.append(shortened(part.url, 100))
    return Segment("image", (clean(", ".join(facts)),), tokens=tokens)


def pretty_arguments(arguments: str) -> str:
    """JSON arguments indented; free text (apply_patch, shell scripts) as it is."""
    try:
        value = json.loads(arguments)
        if isinstance(value, dict | list):
            return json.dumps(value, indent=2, ensure_ascii=False) if value else ""
    except (ValueError, RecursionError):  # nested too deep to indent: shown as written
        pass
    return arguments


def clean(line: str) -> str:
    """A line safe to print: escape sequences dropped, control characters made visible,
    a lone surrogate (no Unicode text) as U+FFFD."""
    if "\r" in line:  # progress bars redraw with CR: show what the terminal would
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    line = _CONTROLS.sub(lambda m: chr(0x2400 + ord(m.group())) if m.group() != "\x7f"
                         else "\u2421", _ESCAPES.sub("", line))
    return LONE.sub("\ufffd", line)


class _Folder:
    """Folds long text to its head and tail (plus lines matching --grep), counting what it hides."""

    def __init__(self, counter: TokenCounter, enabled: bool, keep: int, prose: int,
                 line_chars: int, pattern: re.Pattern[str] | None) -> None:
        self.counter = counter
        self.enabled = enabled
        self.keep, self.prose, self.line_chars = keep, prose, line_chars
        self.pattern = pattern

    def fold(self, text: str, *, prose: bool = False) -> Body:
        text = text.replace("\r\n", "\n").rstrip("\n")
        if not text:
            return ()
        lines = text.split("\n")
        if not self.enabled:
            return tuple(clean(line) for line in lines)
        out: list[str | Fold] = []
        chars = self.line_chars * (PROSE_CHARS if prose else 1)
        for start, end, shown in _runs(self._shown(lines, self.prose if prose else self.keep)):
            if shown:
                for line in lines[start:end]:
                    out.extend(self._cut(line, chars))
            else:
                out.append(Fold(end - start, self.counter.text("\n".join(lines[start:end]))))
        return tuple(out)

    def _shown(self, lines: list[str], keep: int) -> list[bool]:
        n = len(lines)
        if n < keep + MIN_FOLD:
            return [True] * n
        head = max(keep * 2 // 3, 1)
        shown = [i < head or i >= n - (keep - head) for i in range(n)]
        if self.pattern is not None:  # matching lines stay visible, with one line around each
            for i, line in enumerate(lines):
                if self.pattern.search(line):
                    for j in range(max(i - 1, 0), min(i + 2, n)):
                        shown[j] = True
        for start, end, flag in _runs(shown):  # a gap too small for a marker is shown instead
            if not flag and end - start < MIN_FOLD:
                shown[start:end] = [True] * (end - start)
        return shown

    def _cut(self, line: str, chars: int) -> list[str | Fold]:
        if len(line) < chars + LINE_SLACK:
            return [clean(line)]
        rest = line[chars:]
        return [clean(line[:chars]), Fold(0, self.counter.text(rest), len(rest))]


def _runs(flags: list[bool]) -> Iterator[tuple[int, int, bool]]:
    """(start, end, flag) for each run of equal flags."""
    start = 0
    while start < len(flags):
        end = start + 1
        while end < len(flags) and flags[end] == flags[start]:
            end += 1
        yield start, end, flags[start]
        start = end
