"""What a summary reads of the messages it archives: their pieces (a step with its calls
and results, or a lone message), the newest whole and the older ones without the text of
their outputs, and the earlier summary they continue.
"""

from __future__ import annotations

import io
import re
from dataclasses import replace

from ..archive import unpack
from ..errors import CtxpackError
from ..loader import load
from ..transcript import META_KEY, Message, Text, ToolResult
from ..transcript import SUMMARY_HEADING as HEADING
from .failures import looks_failed
from .plan import Plan
from .summarizers import Piece, Region
from .summarizers._digest import CONTEXT, bare_line, source_text
from .units import Unit

OBSERVATIONS = "observations"  # the kind of a line whose outputs were masked or cut


def summary_region(plan: Plan, start: int, end: int) -> tuple[Region, int]:
    """What the summarizer gets of messages [start, end), and how many of them it reads
    whole: the newest units', as many as a summary could show a line of; the older ones
    come without the text of their outputs (only whether each failed)."""
    previous, spans = _region(plan, start, end)
    split = _shown_from(plan, spans, previous)
    older = tuple(_piece(plan, u, _results(plan, u, {})) for u in spans[:split])
    audited = sum(u.end - u.start for u in spans[split:])
    task = next((m.text for m in plan.read.messages[:start] if m.human), None)
    return Region(_whole(plan, spans[split:]), previous, older, plan.options.archive,
                  task, pinned(plan, start, end), plan.options.focus,
                  focused(plan, spans)), audited


FOCUS_FACTS = 40  # facts a Focus section lists at most
_WORD = re.compile(r"[\w./\-]{3,}")


def focused(plan: Plan, spans: list[Unit]) -> tuple[str, ...]:
    """The facts of `spans` (their outputs read whole) that name a word of `--focus`:
    error lines, paths, URLs, identifiers, commands; newest first."""
    focus = plan.options.focus
    if not focus:
        return ()
    words = {w.lower() for w in _WORD.findall(focus)}
    pieces = _whole_pieces(plan, spans)
    found: dict[str, None] = {}
    for facts in reversed(plan.read.facts([source_text(p) for p in pieces])):
        for kind in ("errors", "paths", "urls", "identifiers", "commands"):
            for fact in getattr(facts, kind):
                if len(found) < FOCUS_FACTS and any(w in fact.lower() for w in words):
                    found.setdefault(fact)
    return tuple(found)


def pinned(plan: Plan, start: int, end: int) -> tuple[str, ...]:
    """The messages of [start, end) whose text `--pin` matches (case-insensitive), as
    `role: text`; their tool outputs are not read."""
    pin = plan.options.pin
    if not pin:
        return ()
    found = re.compile(pin, re.IGNORECASE).search
    out = []
    for m in plan.read.messages[start:end]:
        text = "\n".join(p.text for p in m.parts if isinstance(p, Text))
        if text and summary_text(m) is None and found(text):
            out.append(f"{m.role}: {text}")
    return tuple(out)


def whole_texts(plan: Plan, start: int, end: int) -> list[str]:
    """The texts of the pieces of messages [start, end) that `summary_region` reads whole,
    as their facts are found (without reading any output the input set aside)."""
    previous, spans = _region(plan, start, end)
    return [source_text(p) for p in _whole_pieces(plan, spans[_shown_from(plan, spans,
                                                                         previous):])]


def out_of_sight(plan: Plan, start: int, end: int) -> list[str]:
    """The texts a summary of messages [start, end) takes out of sight: every unit's,
    its outputs read whole (as first read, where an earlier compress masked or cut
    them), and the text of the earlier summary it continues, which it replaces."""
    previous, spans = _region(plan, start, end)
    texts = [source_text(p) for p in _whole_pieces(plan, spans)]
    return texts + ([previous] if previous is not None else [])


def _region(plan: Plan, start: int, end: int) -> tuple[str | None, list[Unit]]:
    """The earlier summary that messages [start, end) continue, and their units but those
    that are one (an earlier summary is merged, never summarized again)."""
    messages = plan.read.messages
    previous: str | None = None
    for m in messages[:start]:
        previous = summary_text(m) or previous
    spans = []
    for u in plan.read.units(start):
        if u.start >= end:
            break
        if u.end - u.start == 1 and (text := summary_text(messages[u.start])):
            previous = text
        else:
            spans.append(u)
    return previous, spans


def _whole(plan: Plan, spans: list[Unit]) -> tuple[Piece, ...]:
    """The pieces of `spans` with the whole text of their outputs, and their facts."""
    pieces = _whole_pieces(plan, spans)
    facts = plan.read.facts([source_text(p) for p in pieces])
    return tuple(replace(p, facts=f) for p, f in zip(pieces, facts, strict=True))


def _whole_pieces(plan: Plan, spans: list[Unit]) -> list[Piece]:
    messages = plan.read.messages
    whole = plan.read.originals(i for u in spans for i in range(u.start, u.end)
                                if messages[i].tool_results)
    return [_piece(plan, u, _results(plan, u, whole)) for u in spans]


def _results(plan: Plan, u: Unit, whole: dict[int, Message]) -> tuple[ToolResult, ...]:
    """The results of unit `u`, whole where `whole` has their message, else without their
    text; flagged `is_error` when they failed, as the input found (see `Piece`). Outputs
    an earlier compress masked or cut are read from its archive, as they first were."""
    out = []
    for i in range(u.start, u.end):
        m = whole.get(i)
        first = _first_read(plan, m) if m is not None else None
        if first is not None:
            out += [ToolResult(r.call_id, r.parts, r.is_error or looks_failed(r.text))
                    for r in first.tool_results]
            continue
        results = (m or plan.read.messages[i]).tool_results
        out += [ToolResult(r.call_id, r.parts if m else (), o.failed)
                for r, o in zip(results, plan.read.outputs[i], strict=True)]
    return tuple(out)


def _first_read(plan: Plan, m: Message) -> Message | None:
    """The message as it was before an earlier compress masked or cut its outputs, from
    that compress's archive; None when it was not, or the archive is not at hand."""
    meta = m.raw.get(META_KEY) if isinstance(m.raw, dict) else None
    if not isinstance(meta, dict) or meta.get("kind") != OBSERVATIONS \
            or not isinstance(meta.get("archive"), dict):
        return None
    try:
        raw = unpack(meta["archive"], plan.read.transcript.path, plan.options.archive_dir)
        t = load(io.BytesIO(raw), plan.read.transcript.format)
    except CtxpackError:
        return None  # dropped (--no-archive) or elsewhere: the placeholder must do
    found = [x for x in t.messages if x.tool_results]
    if len(found) != 1 or len(found[0].tool_results) != len(m.tool_results):
        return None
    return found[0]


def _piece(plan: Plan, u: Unit, results: tuple[ToolResult, ...]) -> Piece:
    group = plan.read.messages[u.start:u.end]
    calls = tuple(c for m in group for c in m.tool_calls)
    texts = [p.text for m in group if m.role == "assistant" or not m.tool_results
             for p in m.parts if isinstance(p, Text)]
    role = "assistant" if u.step else group[0].role
    return Piece(role, "\n".join(texts), calls, results, u.human)


def bare_sizes(plan: Plan, start: int) -> tuple[list[int], list[int]]:
    """The least a summary of messages [start, end) shows of them, for the ends of its
    units: each unit's bare line (its head, without facts) and a newline, added up from
    `start` until they pass max_summary_tokens (later ends show at least as much)."""
    from .summarizers._merge import last_step, parse

    previous, spans = _region(plan, start, len(plan.read.messages))
    number = last_step(parse(previous))
    count = plan.read.counter.text
    ends: list[int] = []
    sizes: list[int] = []
    total = 0
    for u in spans:
        piece = _piece(plan, u, _results(plan, u, {}))
        number += piece.is_step
        line = bare_line(piece, number)
        if not line.startswith(f"* {CONTEXT}"):  # injected context shows only its facts
            total += count(line) + 1
        ends.append(u.end)
        sizes.append(total)
        if total > plan.options.max_summary_tokens:
            break
    return ends, sizes


def _shown_from(plan: Plan, spans: list[Unit], previous: str | None) -> int:
    """The oldest unit a summary could show a line of: the lines of the newer ones, even
    bare, fill max_summary_tokens. (The summary folds its oldest lines first.)"""
    from .summarizers._merge import last_step, parse

    number = last_step(parse(previous)) + sum(u.step for u in spans)
    room = plan.options.max_summary_tokens
    count = plan.read.counter.text
    for n in range(len(spans) - 1, -1, -1):
        piece = _piece(plan, spans[n], _results(plan, spans[n], {}))  # bare: no output text
        room -= count(bare_line(piece, number)) + 1
        if room < 0:
            return n
        number -= piece.is_step
    return 0


def summary_text(m: Message) -> str | None:
    for p in m.parts:
        if isinstance(p, Text) and p.text.startswith(HEADING):
            return p.text
    return None
