"""A transcript as a document a person reads: markdown, or one self-contained HTML page.

Both are made from the view `show` prints (rounds, steps, tool calls, outputs folded to
their first and last lines), so the three agree. The HTML page opens with the pictures
of `ctxpack.render.charts`, drawn inline, and every bar links to its message below;
it loads nothing from anywhere.
"""

from __future__ import annotations

import re
from functools import cache
from html import escape, unescape
from typing import Any

from ..view import Entry, Fold, Header, RoundView, Segment, View
from . import counted
from .charts import Charts, page

ALL_HINT = "--all to include them"  # of what the document leaves out

FENCE = re.compile(r"`{3,}")


def _summary(h: Header) -> str:
    exact = "exact" if h.exact else "approximate"
    return (f"{h.format} · model {h.model} ({h.encoding}, {exact}) · "
            f"{'' if h.exact else '~'}{h.tokens:,} tokens in {counted(h.messages, 'message')}, "
            f"{counted(h.rounds, 'round')}, {counted(h.steps, 'step')}")


def _round_facts(r: RoundView) -> str:
    return f"{counted(r.messages, 'message')} · {counted(r.steps, 'step')} · {r.tokens:,} tokens"


def _entry_title(e: Entry) -> str:
    title = f"{e.where} · {e.role}"
    if e.name and e.name != e.tool:
        title += f" ({e.name})"
    if e.tool:
        title += f" · {e.tool}"
    if any(s.is_error for s in e.segments):
        title += " · error"
    if e.step is not None:
        title += f" · step {e.step}"
    return title


def _lines(body: tuple[str | Fold, ...]) -> list[str]:
    """Shown lines with each fold marker as a line (a cut line's marker joins it)."""
    out: list[str] = []
    for item in body:
        if isinstance(item, Fold) and item.chars and out:
            out[-1] += " " + item.label
        else:
            out.append(item.label if isinstance(item, Fold) else item)
    return out


# -- markdown ----------------------------------------------------------------------------

def _fenced(lines: list[str], info: str = "") -> list[str]:
    longest = max((len(m) for line in lines for m in FENCE.findall(line)), default=2)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *lines, fence]


def _md_segment(s: Segment, labels: bool) -> list[str]:
    lines = _lines(s.body)
    if s.kind == "tool_call":
        return [f"**→ {_no_html(s.tool or '?')}**", *(_fenced(lines) if lines else [])]
    if s.kind == "image":
        what = _no_html(s.body[0]) if s.body else ""
        return [f"*[image: {what}, {counted(s.tokens, 'token')}]*"]
    if s.kind == "thinking":
        return ["*thinking*", "", *(f"> {_no_html(line)}" if line else ">" for line in lines)]
    head = []
    if s.kind == "tool_result" and labels:
        head = [f"**← {_no_html(s.tool or '?')}**{' · error' if s.is_error else ''} · "
                f"{counted(s.tokens, 'token')}"]
    if s.kind == "tool_result":
        return [*head, *_fenced(lines)] if lines else head
    return _prose(lines)


PROBE = "ctxpack-end-of-message"  # a paragraph after a message's text: is it still one?
_MAY_OPEN = ("#", "`", "~", "<")  # how a line that may open a block or a heading starts


def _prose(lines: list[str]) -> list[str]:
    """Message text as markdown (CommonMark, parsed by markdown-it-py): it stays the
    message's own, and text. Its raw HTML (`<script>`, `<img onerror=...>`) is escaped
    outside code, so that it is shown, never run or hidden; a heading in it must not look
    like one of the document's, so its `#` is escaped; and a block it leaves open must not
    run on over the rest of the document (a reply cut off mid-code): an open fence is
    closed where the message ends. Should anything still run on, the message is shown as
    code."""
    lines = list(lines)
    if not any(line.lstrip(" ").startswith(_MAY_OPEN) for line in lines):
        return _marked(lines, [])
    code: set[int] = set()  # the lines in code, as the text with its HTML escaped has it
    for _ in range(len(lines) + 4):
        shown = [line if n in code else _no_html(line) for n, line in enumerate(lines)]
        tokens = _blocks(shown)
        now = _code(tokens)
        if now != code:  # (escaping a line can open or close code after it)
            code = now
            continue
        if not _runs_on(tokens):
            return _marked(shown, tokens)
        last = [t for t in tokens if t.level == 0 and t.map is not None][-1]
        if last.type != "fence":
            break
        lines.append(last.markup)  # a fence is closed by its own marks (or more)
    return _fenced([_folded(line) for line in lines])


_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what opens an HTML tag, comment or block
_TICKS = re.compile(r"`+")


def _no_html(line: str) -> str:
    """`line` with each `<` that could open HTML written `&lt;` (which shows as `<`), and
    each link to a URL a browser would run written as text, but in its code spans, which
    show their text as it is."""
    out, at = [], 0
    for start, end in _spans(line):
        out += [_inert(line[at:start]), line[start:end]]
        at = end
    return "".join([*out, _inert(line[at:])])


# where a link's destination follows its text: an inline link or image `[text](url)`, a
# reference definition `[label]: url`
_DESTINATION = re.compile(r"\](?=[(:])")
# URLs a browser runs or opens as a page of their own (a link of a transcript's text must
# never be one), by their scheme, written in any case
_SCRIPTED = ("javascript:", "vbscript:", "data:")


def _inert(text: str) -> str:
    """`text` (none of it code) with no HTML tag and no link to a `_SCRIPTED` URL: the
    `]` that would close such a link's text is escaped (it shows as `]`), so the link is
    text. A destination is judged as a renderer reads it: past blanks and `<`, its
    entities and backslash escapes resolved, blanks inside the scheme dropped (browsers
    drop them); one on the next line is taken to be such a URL."""
    text = _TAG.sub("&lt;", text)
    out, at = [], 0
    for found in _DESTINATION.finditer(text):
        start = found.start()
        escaped = (start - len(text[:start].rstrip("\\"))) % 2
        rest = unescape(text[start + 2:start + 200]).lstrip(" \t<").replace("\\", "")
        scheme = "".join(ch for ch in rest if ch > " ").lower()
        if not escaped and (not scheme or scheme.startswith(_SCRIPTED)):
            out += [text[at:start], "\\"]
            at = start
    return "".join([*out, text[at:]])


def _spans(line: str) -> list[tuple[int, int]]:
    """Where the code spans of one line are: a run of backticks (not escaped) up to the
    next run of as many. (A span over two lines is not seen: its HTML is escaped, shown
    as `&lt;`, never run.)"""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    out, k = [], 0
    while k < len(runs):
        start, end = runs[k]
        slashes = len(line[:start]) - len(line[:start].rstrip("\\"))
        start += slashes % 2  # an escaped backtick is text
        close = next((j for j in range(k + 1, len(runs))
                      if runs[j][1] - runs[j][0] == end - start), None)
        if start == end or close is None:
            k += 1
            continue
        out.append((start, runs[close][1]))
        k = close + 1
    return out


def _blocks(lines: list[str]) -> list[Any]:
    """The block tokens of the message's text followed by the PROBE paragraph."""
    return _parser().parse("\n".join([*lines, "", PROBE]))


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline"])  # blocks are all it needs


def _runs_on(tokens: list[Any]) -> bool:
    """Did a block of the message take in the paragraph that follows it?"""
    end = tokens[-3:]
    return [t.type for t in end] != ["paragraph_open", "inline", "paragraph_close"] \
        or end[0].level != 0 or end[1].content != PROBE


def _code(tokens: list[Any]) -> set[int]:
    """The lines in code (fenced or indented) of parsed text."""
    return {n for t in tokens if t.map is not None and t.type in ("fence", "code_block")
            for n in range(*t.map)}


def _marked(lines: list[str], tokens: list[Any]) -> list[str]:
    """The lines outside code with their HTML escaped, a `#` that opens them escaped (a
    heading, or what a reader of the plain text could take for one), and fold markers in
    italics."""
    code = _code(tokens)
    out = []
    for n, line in enumerate(lines):
        if n not in code:
            line = _folded(_no_html(line))
            if line.lstrip().startswith("#"):
                line = line.replace("#", "\\#", 1)
        out.append(line)
    return out


def _folded(line: str) -> str:
    """A fold marker (`… N lines …`) in italics; any other line as it is."""
    return f"*{line}*" if line.startswith("… ") and line.endswith("…") else line


def to_markdown(view: View) -> str:
    """The view as GitHub-flavoured markdown: a section per round, one per message."""
    h = view.header
    # (what the file names, in headings and labels, is text too: its HTML escaped)
    blocks: list[list[str]] = [[f"# {_no_html(h.path)}"], [_no_html(_summary(h))]]
    if hidden := h.hidden(ALL_HINT):
        blocks.append([f"- not shown: {_no_html(line)}" for line in hidden])
    for r in view.rounds:
        blocks += [[f"## Round {r.number}: {_no_html(r.title)}"], [f"*{_round_facts(r)}*"]]
        for e in r.entries:
            if e.conversation is not None:
                blocks.append([f"## Conversation {e.conversation}"])
            blocks.append([f"### {_no_html(_entry_title(e))} — {e.tokens:,} tokens"])
            labels = sum(s.kind == "tool_result" for s in e.segments) > 1
            blocks += [lines for s in e.segments if (lines := _md_segment(s, labels))]
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


# -- HTML --------------------------------------------------------------------------------

def _html_body(body: tuple[str | Fold, ...]) -> str:
    out = []
    for item in body:
        if isinstance(item, Fold):
            marker = f'<span class="fold">{escape(item.label)}</span>'
            out.append((" " + marker) if item.chars else "\n" + marker)
        else:
            out.append("\n" + escape(item))
    return "".join(out).lstrip("\n")


def _html_segment(s: Segment, labels: bool) -> str:
    if s.kind == "tool_call":
        args = f"<pre>{_html_body(s.body)}</pre>" if s.body else ""
        return f'<div class="call"><b>→ {escape(s.tool or "?")}</b>{args}</div>'
    if s.kind == "image":
        what = escape(s.body[0]) if s.body else ""
        return f'<p class="image">[image: {what}, {counted(s.tokens, "token")}]</p>'
    if s.kind == "thinking":
        return f'<div class="thinking"><b>thinking</b><pre>{_html_body(s.body)}</pre></div>'
    if s.kind == "tool_result":
        error = " error" if s.is_error else ""
        head = ""
        if labels:
            head = (f'<b>← {escape(s.tool or "?")}{" · error" if s.is_error else ""}</b> '
                    f'<span class="tokens">{counted(s.tokens, "token")}</span>')
        return f'<div class="result{error}">{head}<pre>{_html_body(s.body)}</pre></div>'
    return f'<div class="text">{_html_body(s.body)}</div>'


def _html_entry(e: Entry, index: int) -> str:
    labels = sum(s.kind == "tool_result" for s in e.segments) > 1
    results = bool(e.segments) and all(s.kind in ("tool_result", "image") for s in e.segments)
    role = "tool" if results else e.role
    parts = "".join(_html_segment(s, labels) for s in e.segments)
    conversation = "" if e.conversation is None else \
        f'<h2 class="conversation">Conversation {e.conversation}</h2>'
    return (f'{conversation}<section class="msg role-{escape(role, quote=True)}" '
            f'id="msg-{index}"><h4><span>{escape(_entry_title(e))}</span>'
            f'<span class="tokens">{e.tokens:,} tokens</span></h4>{parts}</section>')


def to_html(view: View, charts: Charts) -> str:
    """The view as one HTML page, the pictures of where the context went first."""
    h = view.header
    body = [f"<h1>{escape(h.path)}</h1>", f"<p>{escape(_summary(h))}</p>"]
    body += [f'<p class="note">not shown: {escape(line)}</p>'
             for line in h.hidden(ALL_HINT)]
    body.append(charts.svg())
    index = 0
    for r in view.rounds:
        body.append(f'<h2 id="round-{r.number}">Round {r.number}: {escape(r.title)} '
                    f'<span class="tokens">{escape(_round_facts(r))}</span></h2>')
        for e in r.entries:
            body.append(_html_entry(e, index))
            index += 1
    return page(h.path, "\n".join(body))
