"""`ctxpack show` on a Rich console: round rules, coloured roles, folded bodies, a pager.

Transcript text only ever enters Rich as `Text` objects, never as markup, so brackets in
a transcript print literally. Colour reaches a terminal only; in a pipe the same calls
give plain text, and NO_COLOR is honoured by Rich itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.segment import Segment as Cell
from rich.table import Table
from rich.text import Text

from ..view import Entry, Fold, RoundView, Segment, View
from . import counted

ROLE_STYLES = {"system": "bold magenta", "developer": "bold magenta", "user": "bold green",
               "assistant": "bold cyan", "tool": "bold yellow"}
ERROR = "bold red"
FOLD = "dim italic"
THINKING = "dim italic"
CALL = "yellow"
MATCH = "reverse"
INDENT = 4


class Indented:
    """A renderable shifted right, wrapped lines included, with no trailing padding
    (Rich's Padding fills lines to the width, which leaves spaces in a pipe)."""

    def __init__(self, renderable: RenderableType, indent: int) -> None:
        self.renderable = renderable
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Cell]:
        width = max(options.max_width - self.indent, 20)
        pad = Cell(" " * self.indent)
        for line in console.render_lines(self.renderable, options.update_width(width),
                                         pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip(" "):
                line.pop()
            if line and not line[-1].control:
                last = line[-1]
                line[-1] = Cell(last.text.rstrip(" "), last.style)
            if line:
                yield pad
                yield from line
            yield Cell.line()


def show(view: View, *, pager: bool) -> None:
    """Print the view to stdout, through the system pager when asked (colours kept)."""
    console = Console(highlight=False)
    if not pager:
        print_view(console, view)
        return
    less = os.environ.get("LESS")
    if less is None:  # quit at once when it fits one screen, keep colours and the screen
        os.environ["LESS"] = "-FRX"
    elif "R" not in less and "r" not in less:
        os.environ["LESS"] = less + " -R"
    with console.pager(styles=True):
        print_view(console, view)


def print_view(console: Console, view: View) -> None:
    """The whole view: header, then each round under a rule and its messages."""
    console.print(header(view))
    for r in view.rounds:
        console.print()
        console.rule(style="dim")
        console.print(round_header(r))
        for entry in r.entries:
            console.print()
            if entry.conversation is not None:
                console.print(Text(f"conversation {entry.conversation}", style="bold"))
            console.print(entry_header(entry, view.header.exact))
            body = entry_body(entry, view)
            if body is not None:
                console.print(Indented(body, INDENT))


def header(view: View) -> Text:
    h = view.header
    exact = "exact" if h.exact else "approximate"
    out = Text.assemble((h.path, "bold"), f"\n{h.format} · model ", (h.model, "bold"),
                        f" ({h.encoding}, {exact})\n", (_tokens(h.tokens, h.exact), "bold"),
                        f" in {counted(h.messages, 'message')}, {counted(h.rounds, 'round')}, "
                        f"{counted(h.steps, 'step')}")
    if h.note:
        out.append(f"\ntokens: {h.note}", style="dim")
    if hidden := h.hidden("`ctxpack convert --all` shows them"):
        out.append("\nnot shown: " + "; ".join(hidden), style="dim")
    if view.pattern is not None:
        out.append(f"\n--grep {view.pattern.pattern!r}: {view.matches:,} of {h.messages:,} "
                   "messages match", style="bold")
    return out


def round_header(r: RoundView) -> Table:
    """Round number and first line on the left; its size on the right."""
    left = Text.assemble((f"round {r.number}", "bold"), "  ", (r.title, "italic"))
    right = f"{counted(r.messages, 'message')} · {counted(r.steps, 'step')} · {r.tokens:,} tokens"
    return _row(left, Text(right, style="bold"))


def entry_header(e: Entry, exact: bool = True) -> Table:
    """Line number, role (and tool, step) on the left; the token count on the right."""
    # a message that only carries tool output is coloured as tool output, whatever its role
    results = bool(e.segments) and all(s.kind in ("tool_result", "image") for s in e.segments) \
        and any(s.kind == "tool_result" for s in e.segments)
    role = ROLE_STYLES["tool"] if results else ROLE_STYLES.get(e.role, "bold")
    left = Text.assemble((f"{e.where}  ", "dim"), (e.role, role))
    if e.name and e.name != e.tool:
        left.append(f" ({e.name})")
    errored = any(s.is_error for s in e.segments)
    if e.tool:
        left.append(f" · {e.tool}", style=ERROR if errored else CALL)
    if errored:
        left.append(" · error", style=ERROR)
    if e.step is not None:
        left.append(f"  step {e.step}", style="dim")
    return _row(left, Text(_tokens(e.tokens, exact), style="dim"))


def _row(left: Text, right: Text) -> Table:
    """One line: `left` cut to fit, `right` flush with the right edge."""
    grid = Table.grid(expand=True, padding=(0, 0, 0, 2))
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    grid.add_column(justify="right", no_wrap=True)
    grid.add_row(left, right)
    return grid


def entry_body(e: Entry, view: View) -> RenderableType | None:
    labels = sum(s.kind == "tool_result" for s in e.segments) > 1
    parts: list[RenderableType] = []
    for i, s in enumerate(e.segments):
        if i and e.segments[i - 1].kind == "thinking":
            parts.append(Text())  # a blank line between the thinking and what it led to
        parts.append(segment(s, view, label=labels))
    return Group(*parts) if e.segments else None


def segment(s: Segment, view: View, *, label: bool = False) -> RenderableType:
    """One segment; tool results get a label line when a message holds several."""
    if s.kind == "tool_call":
        return _labelled(Text.assemble(("→ ", CALL), (s.tool or "?", "bold " + CALL)),
                         body(s.body, view))
    if s.kind == "image":
        return Text.assemble(("[image: ", "magenta"), s.body[0] if s.body else "",
                             (f", {counted(s.tokens, 'token')}]", "magenta"))
    if s.kind == "thinking":
        if not s.body:
            return Text("thinking (no readable text)", style=THINKING)
        return Group(Text("thinking", style="bold " + THINKING),
                     body(s.body, view, style=THINKING))
    if s.kind == "tool_result" and label:
        colour = ERROR if s.is_error else CALL
        head = Text.assemble(("← ", colour), (s.tool or "?", "bold " + colour),
                             (" · error" if s.is_error else "", ERROR),
                             (f"  {counted(s.tokens, 'token')}", "dim"))
        return _labelled(head, body(s.body, view))
    return body(s.body, view, style=ERROR if s.is_error else "")


def _labelled(head: Text, content: Text) -> RenderableType:
    return Group(head, Indented(content, 2)) if content.plain else head


def body(lines: tuple[str | Fold, ...], view: View, *, style: str = "") -> Text:
    """Shown lines and fold markers; --grep matches highlighted."""
    out = Text(style=style)
    for i, item in enumerate(lines):
        if isinstance(item, Fold):
            if not item.chars:
                out.append("\n" if i else "")
            out.append(item.label if item.lines else " " + item.label, style=FOLD)
        else:
            out.append(("\n" if i else "") + item)
    if view.pattern is not None:
        out.highlight_regex(view.pattern, MATCH)
    return out


def _tokens(n: int, exact: bool) -> str:
    return f"{'' if exact else '~'}{n:,} tokens"
