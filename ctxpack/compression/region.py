"""What a summary reads of the messages it archives: their units (a step with its
calls and results, or a lone message), the newest whole and the older ones without
the text of their outputs, and the earlier summary they continue.
"""

from __future__ import annotations

import io

from ..archive import unpack
from ..errors import CtxpackError
from ..loader import load
from ..transcript import META_KEY, Message, Text, ToolResult
from ..transcript import SUMMARY_HEADING as HEADING
from . import units as cutting
from .facts import looks_failed
from .pipeline import OBSERVATIONS, Work
from .summarizers import Region, Unit


def summary_region(work: Work, start: int, end: int) -> tuple[Region, int]:
    """What the summarizer gets of messages [start, end), and how many of them it reads
    whole: the newest units', as many as a summary could show a line of; the older ones
    come without the text of their outputs (only whether each failed)."""
    previous, spans = _region(work, start, end)
    split = _shown_from(work, spans, previous)
    older = tuple(_unit(work, u, _results(work, u, {})) for u in spans[:split])
    audited = sum(u.end - u.start for u in spans[split:])
    task = next((m.text for m in work.messages[:start] if m.human), None)
    return Region(_whole(work, spans[split:]), previous, older, work.options.archive,
                  task), audited


def whole_units(work: Work, start: int, end: int) -> tuple[Unit, ...]:
    """The units of messages [start, end) that `summary_region` reads whole."""
    previous, spans = _region(work, start, end)
    return _whole(work, spans[_shown_from(work, spans, previous):])


def _region(work: Work, start: int, end: int) -> tuple[str | None, list[cutting.Unit]]:
    """The earlier summary that messages [start, end) continue, and their units but those
    that are one (an earlier summary is merged, never summarized again)."""
    previous: str | None = None
    for m in work.messages[:start]:
        previous = summary_text(m) or previous
    spans = []
    for u in work.units(start):
        if u.start >= end:
            break
        group = work.messages[u.start:u.end]
        if len(group) == 1 and (text := summary_text(group[0])):
            previous = text
        else:
            spans.append(u)
    return previous, spans


def _whole(work: Work, spans: list[cutting.Unit]) -> tuple[Unit, ...]:
    whole = work.originals(i for u in spans for i in range(u.start, u.end)
                           if work.messages[i].tool_results)
    return tuple(_unit(work, u, _results(work, u, whole)) for u in spans)


def _results(work: Work, u: cutting.Unit, whole: dict[int, Message]
             ) -> tuple[ToolResult, ...]:
    """The results of unit `u`, whole where `whole` has their message, else without their
    text; flagged `is_error` when they failed, as the scan found (see `Unit`). Outputs an
    earlier compress masked or cut are read from its archive, as they first were."""
    out = []
    for i in range(u.start, u.end):
        m = whole.get(i)
        first = _first_read(work, m) if m is not None else None
        if first is not None:
            out += [ToolResult(r.call_id, r.parts, r.is_error or looks_failed(r.text))
                    for r in first.tool_results]
            continue
        results = (m or work.messages[i]).tool_results
        out += [ToolResult(r.call_id, r.parts if m else (), o.failed)
                for r, o in zip(results, work.outputs[i], strict=True)]
    return tuple(out)


def _first_read(work: Work, m: Message) -> Message | None:
    """The message as it was before an earlier compress masked or cut its outputs, from
    that compress's archive; None when it was not, or the archive is not at hand."""
    meta = m.raw.get(META_KEY) if isinstance(m.raw, dict) else None
    if not isinstance(meta, dict) or meta.get("kind") != OBSERVATIONS \
            or not isinstance(meta.get("archive"), dict):
        return None
    try:
        raw = unpack(meta["archive"], work.transcript.path, work.options.archive_dir)
        t = load(io.BytesIO(raw), work.transcript.format)
    except CtxpackError:
        return None  # dropped (--no-archive) or elsewhere: the placeholder must do
    found = [x for x in t.messages if x.tool_results]
    if len(found) != 1 or len(found[0].tool_results) != len(m.tool_results):
        return None
    return found[0]


def _unit(work: Work, u: cutting.Unit, results: tuple[ToolResult, ...]) -> Unit:
    group = work.messages[u.start:u.end]
    calls = tuple(c for m in group for c in m.tool_calls)
    texts = [p.text for m in group if m.role == "assistant" or not m.tool_results
             for p in m.parts if isinstance(p, Text)]
    role = "assistant" if u.step else group[0].role
    return Unit(role, "\n".join(texts), calls, results, u.human)


def _shown_from(work: Work, spans: list[cutting.Unit], previous: str | None) -> int:
    """The oldest unit a summary could show a line of: the lines of the newer ones, even
    bare, fill max_summary_tokens. (The summary folds its oldest lines first.)"""
    from .summarizers._merge import last_step, parse
    from .summarizers._steps import bare_line

    number = last_step(parse(previous)) + sum(u.step for u in spans)
    room = work.options.max_summary_tokens
    for n in range(len(spans) - 1, -1, -1):
        unit = _unit(work, spans[n], _results(work, spans[n], {}))  # bare: no output text
        room -= work.counter.text(bare_line(unit, number)) + 1
        if room < 0:
            return n
        number -= unit.is_step
    return 0


def summary_text(m: Message) -> str | None:
    for p in m.parts:
        if isinstance(p, Text) and p.text.startswith(HEADING):
            return p.text
    return None
