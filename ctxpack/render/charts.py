"""Pictures of where a transcript's context went, as inline SVG: the context's size over
the run by role, the largest tools and the largest messages. Each bar links to its
message: in the transcript below the pictures (`convert --to html`), or, where the page
holds no transcript (`stats --html`), in a list of the messages the bars measure.

The numbers are the ones `stats` counts: a message's tokens split by row as its
`MessageStat.shares` says (tool results under `tool`, reasoning under `reasoning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from html import escape

from ..breakdown import (
    REASONING,
    MessageStat,
    add_hidden,
    by_tool,
    context_counts,
    counted,
    message_stat,
)
from ..calibration import Bill, billed_points, hidden_counts_of, recorded_sizes
from ..tokens import REPLY_PRIMING, TokenCounter
from ..transcript import Transcript
from . import shortened

# bottom to top in the stacked picture; any other role goes on top in grey
ROWS = ("system", "developer", "user", "assistant", REASONING, "tool")
COLOURS = {"system": "#8e44ad", "developer": "#b57edc", "user": "#2e9e4f",
           "assistant": "#2a7fd4", REASONING: "#9aa5b1", "tool": "#e0a020"}
OTHER = "#c0c0c0"
UNLOGGED = "#d9d9d9"  # the part of the bill not in the file, under the roles
MAX_COLUMNS = 240
TOP = 10
WIDTH, HEIGHT, PAD = 880, 200, 48
LABEL_CHARS = 48  # the most of a bar's label that fits left of it


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar of a ranking: what it is, its tokens, the message it points at."""

    label: str
    tokens: int
    index: int
    where: str  # the message's line, or its place in a one-line document
    role: str


@dataclass
class Charts:
    """The three pictures of one transcript, ready to draw."""

    name: str
    link: bool  # bars link to #msg-N in the same page
    context: list[tuple[int, str, dict[str, int]]]  # (message index, where, context by row)
    tools: list[Bar]
    largest: list[Bar]
    stats: list[MessageStat] = field(default_factory=list)  # of each message, by index
    anchor: str = "msg-"  # bars link to #{anchor}N
    # the context as billed (stats' `context`): the picture over the run is drawn in its
    # tokens, the part not in the file a band under the roles; None: as counted
    bill: Bill | None = None
    # the prompt size the provider recorded of each call the bill rests on, by the message
    # index of the point it was made on (see calibration.recorded_sizes): drawn as
    # recorded, the points after one anchored on it (calibration.billed_points)
    recorded: dict[int, int] = field(default_factory=dict)
    # the messages are the whole log (`convert --all`), not what was sent: the picture over
    # the run is of the log's size as counted, no bill
    whole: bool = False

    def svg(self) -> str:
        link = self.anchor if self.link else None
        return (f'<div class="charts">{self._over_the_run()}'
                f'{_ranking("Largest tools (calls and results)", self.tools, link)}'
                f'{_ranking("Largest messages", self.largest, link)}</div>')

    def measured(self) -> str:
        """The messages the bars point at, each with its anchor (`stats --html`, where the
        page holds no transcript for the bars to link to)."""
        shown = sorted({i for i, _, _ in _columns(self.context)}
                       | {b.index for b in (*self.tools, *self.largest)})
        rows = []
        for i in shown:
            s = self.stats[i]
            rows.append(f'<tr id="{self.anchor}{i}"><td>{escape(s.where)}</td>'
                        f'<td>{escape(s.role)}</td><td>{escape(s.tool or "")}</td>'
                        f'<td class="n">{s.tokens:,}</td><td>{escape(s.preview)}</td></tr>')
        if not rows:
            return ""
        return (f'<details class="measured"><summary>The {len(rows):,} messages the bars '
                f'measure</summary><table><tr><th>where</th><th>role</th><th>tool</th>'
                f'<th>tokens</th><th>preview</th></tr>{"".join(rows)}</table></details>')

    def _over_the_run(self) -> str:
        if not self.context:
            return "<p>No messages in the model's context.</p>"
        columns = _columns(self.context)
        # each point as the provider billed the call made on it, where one is recorded,
        # else as the bill anchors on the call before it (before any, the bill's line), so
        # that the last is stats' figure; of which `unlogged` is not in the file
        unlogged = self.bill.not_in_file if self.bill is not None else 0
        if self.bill is None:
            billed = [sum(rows.values()) for _, _, rows in columns]
        else:
            every = billed_points([sum(rows.values()) + REPLY_PRIMING
                                   for _, _, rows in self.context], self.recorded, self.bill)
            billed = [every[index] for index, _, _ in columns]
        peak = max(billed) or 1
        step = (WIDTH - PAD) / len(columns)
        bars = []
        for n, ((index, where, rows), total) in enumerate(zip(columns, billed, strict=True)):
            x, y = PAD + n * step, float(HEIGHT)
            count = sum(rows.values())
            band = min(unlogged, total)
            if total - band < count:
                # (a point billed below what the bill finds is sent besides the messages and
                # their count, as a call early in a run can be: the messages keep their
                # share at the bill's slope, the band is the rest)
                slope = self.bill.slope if self.bill is not None else 1.0
                band = min(band, max(total - round(slope * count), 0))
            # the roles share the rest as they share ctxpack's count
            scale = (total - band) / count if count else 0
            rects = []
            for tokens, fill in [(band, UNLOGGED)] + [
                    (rows[role] * scale, COLOURS.get(role, OTHER)) for role in _ordered(rows)]:
                if not tokens:
                    continue
                h = tokens / peak * (HEIGHT - 20)
                y -= h
                rects.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(step - 0.5, 0.5):.1f}" '
                             f'height="{h:.1f}" fill="{fill}"/>')
            roles = ", ".join(f"{role} {rows[role]:,}" for role in _ordered(rows))
            billed_as = " as the provider recorded the call made on it" \
                if index in self.recorded else " as billed"
            tip = f"{where}: {total:,} tokens in " + \
                ("the log so far" if self.whole else "context") + (
                f"{billed_as}, {band:,} of them not in the file; counted in it: {roles}"
                if self.bill is not None else f" ({roles})")
            bars.append(_linked("".join(rects), tip, index,
                                self.anchor if self.link else None))
        axis = (f'<text x="{PAD - 4}" y="24" text-anchor="end">{_short(peak)}</text>'
                f'<text x="{PAD - 4}" y="{HEIGHT}" text-anchor="end">0</text>'
                f'<line x1="{PAD}" y1="{HEIGHT}" x2="{WIDTH}" y2="{HEIGHT}" stroke="#888"/>')
        keys = [(r, COLOURS[r]) for r in ROWS if any(r in rows for _, _, rows in columns)]
        if unlogged:
            keys.insert(0, ("not in the file", UNLOGGED))
        legend = "".join(f'<span class="key"><i style="background:{colour}"></i>{escape(r)}'
                         f'</span>' for r, colour in keys)
        how = "" if self.bill is None else f", as billed ({self.bill.kind})"
        hidden = f", {unlogged:,} of it not in the file (sent but not logged)" if unlogged \
            else ""
        drawn = sum(index in self.recorded for index, _, _ in columns)
        if drawn:
            hidden += f"; {drawn:,} point{'' if drawn == 1 else 's'} at the prompt size the " \
                "provider recorded of the call made on it, those after it anchored on it"
        what = "The whole log's size over the run by role, as counted (what was sent and " \
            "what was not: no bill)" if self.whole else f"Context size over the run by role{how}"
        return (f'<figure class="chart"><figcaption>{what}: '
                f'peak {peak:,} tokens{hidden}</figcaption>'
                f'<svg role="img" aria-label="context size over the run" '
                f'viewBox="0 0 {WIDTH} {HEIGHT + 4}" width="{WIDTH}" height="{HEIGHT + 4}">'
                f'{axis}{"".join(bars)}</svg><div class="legend">{legend}</div></figure>')


def _ordered(rows: dict[str, int]) -> list[str]:
    return [r for r in ROWS if rows.get(r)] + sorted(r for r in rows if r not in ROWS and rows[r])


def _columns(points: list[tuple[int, str, dict[str, int]]]
             ) -> list[tuple[int, str, dict[str, int]]]:
    """At most MAX_COLUMNS points: of each run of messages, the one with the most context."""
    if len(points) <= MAX_COLUMNS:
        return points
    size = -(-len(points) // MAX_COLUMNS)
    return [max(points[i:i + size], key=lambda p: sum(p[2].values()))
            for i in range(0, len(points), size)]


def _short(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n:,}"


def _linked(content: str, tip: str, index: int, anchor: str | None) -> str:
    inner = f"<title>{escape(tip)}</title>{content}"
    return f'<a href="#{anchor}{index}">{inner}</a>' if anchor else f"<g>{inner}</g>"


def _ranking(title: str, bars: list[Bar], link: str | None) -> str:
    if not bars:
        return ""
    row, label_width = 22, 300
    top = max(b.tokens for b in bars) or 1
    height = row * len(bars)
    out = []
    for n, b in enumerate(bars):
        y = n * row
        w = max(b.tokens / top * (WIDTH - label_width - 90), 1)
        label = shortened(b.label, LABEL_CHARS)
        drawn = (f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end">'
                 f'{escape(label)}</text>'
                 f'<rect x="{label_width}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" '
                 f'fill="{COLOURS.get(b.role, OTHER)}"/>'
                 f'<text x="{label_width + w + 6:.1f}" y="{y + 15}">{b.tokens:,}</text>')
        out.append(_linked(drawn, f"{b.where}: {b.label}, {b.tokens:,} tokens",
                           b.index, link))
    return (f'<figure class="chart"><figcaption>{escape(title)}</figcaption>'
            f'<svg role="img" aria-label="{escape(title, quote=True)}" '
            f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">'
            f'{"".join(out)}</svg></figure>')


def charts_of(t: Transcript, counter: TokenCounter, *, link: bool,
              flagged: bool = False, bill: Bill | None = None, whole: bool = False) -> Charts:
    """The pictures of `t`'s model-visible messages, counted with `counter` as stats
    counts them (`flagged`: `--model` named its model), what a reply's record says it held
    but the file does not among them; the context over the run as `bill` (stats'
    `context` of `t`) bills it, where given. `whole`: `t`'s messages are its whole log
    (`convert --all`), drawn as counted, not as a context."""
    counts = context_counts(t, counter, flagged)
    stats = [counted(m, c) for m, c in zip(t.messages, counts, strict=True)]
    add_hidden(stats, [c.total for c in hidden_counts_of(t, counts, counter, flagged)])
    # also names the tool each result message answers
    tools = by_tool(stats, [message_stat(m) for m in t.outside])
    context: list[tuple[int, str, dict[str, int]]] = []
    running: dict[int, dict[str, int]] = {}  # each conversation's context so far
    for i, (m, s) in enumerate(zip(t.messages, stats, strict=True)):
        rows = running.setdefault(m.conversation, {})
        for role, n in s.shares().items():
            rows[role] = rows.get(role, 0) + n
        context.append((i, s.where, dict(rows)))
    tool_bars = []
    for name, tool in list(tools.items())[:TOP]:
        where = max((i for i, s in enumerate(stats) if s.tool == name),
                    key=lambda i: stats[i].tokens, default=0)
        calls = f"{tool.calls:,} call" + ("" if tool.calls == 1 else "s")
        tool_bars.append(Bar(f"{name} ({calls})", tool.tokens, where,
                             stats[where].where if stats else "", "tool"))
    biggest = sorted(range(len(stats)), key=lambda i: -stats[i].tokens)[:TOP]
    numbers = {c: n for n, c in enumerate(running, 1)}  # conversations, in file order
    largest = []
    for i in biggest:
        s = stats[i]
        where = s.where if len(numbers) < 2 else \
            f"conversation {numbers[t.messages[i].conversation]:,}"
        largest.append(Bar(f"{where} · {s.role}" + (f" · {s.tool}" if s.tool else ""),
                           s.tokens, i, s.where, s.role))
    # (each conversation of a file of several is billed apart: the points of one are not
    # the context `bill` is of)
    recorded = recorded_sizes(t.calls, bill) if bill is not None and len(numbers) < 2 else {}
    return Charts(t.path, link, context, tool_bars, largest, stats, bill=bill,
                  recorded=recorded, whole=whole)


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.3em;word-break:break-all}h2{font-size:1.1em;border-top:1px solid #ccc;
padding-top:.6em;margin-top:1.6em}h2 .tokens,h4 .tokens{font-weight:normal;color:#666;
float:right;font-size:.9em}h4{margin:.2em 0;display:flex;justify-content:space-between}
pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0;background:#f6f6f6;padding:.4em;
border-radius:3px}.text{white-space:pre-wrap;word-break:break-word}
.msg{border-left:4px solid #ccc;padding:.3em .8em;margin:.8em 0}
.role-user{border-color:#2e9e4f}.role-assistant{border-color:#2a7fd4}
.role-system,.role-developer{border-color:#8e44ad}.role-tool{border-color:#e0a020}
.fold{color:#777;font-style:italic}.thinking pre{color:#555;font-style:italic}
.result.error pre{background:#fdecea}.note{color:#666}.call b{color:#a06a00}
figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}
svg text{font:11px system-ui,sans-serif;fill:#333}svg a:hover rect{opacity:.75}
.legend .key{margin-right:1em;font-size:.9em}.legend i{display:inline-block;width:.8em;
height:.8em;margin-right:.3em;vertical-align:middle}
.msg:target,tr:target{background:#fff8dc}
.measured table{border-collapse:collapse;font-size:.9em}.measured td,.measured th{
padding:.1em .5em;text-align:left;vertical-align:top}.measured .n{text-align:right}
"""


def page(title: str, body: str) -> str:
    """A whole HTML page around `body`: inline style, nothing fetched from anywhere."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{escape(title)}</title><style>{STYLE}</style></head>\n'
            f'<body>\n{body}\n</body></html>\n')


def stats_page(files: list[tuple[list[str], Charts]]) -> str:
    """The pictures of many files on one page, each under its stats summary lines."""
    body = ["<h1>Where the context went</h1>"]
    for n, (summary, charts) in enumerate(files, 1):
        head, *rest = summary
        body.append(f'<h2 id="file-{n}">{escape(head)}</h2>')
        body += [f'<p class="note">{escape(line)}</p>' for line in rest]
        charts = replace(charts, link=True, anchor=f"file-{n}-msg-")
        body += [charts.svg(), charts.measured()]
    return page("ctxpack stats", "\n".join(body))
