"""Cutting one oversized tool output down to its limits (what the truncate stage does to each).

Runs of identical lines fold first; what is still over keeps its head, tail or both
around one `[ctxpack: ...]` marker line that says what was cut and where the full text
is archived. Error lines from the cut region are kept right after the marker.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, compress, islice
from operator import add, eq

from ..errors import UsageError
from ..render import counted
from ..settings import SETTINGS, TRUNCATE_MODES
from .failures import error_spans

MODES = TRUNCATE_MODES  # what the truncate_mode setting may be
MARKER = "[ctxpack: "  # how every marker line starts: an output holding one was cut already
_BUDGETS = ("max_lines", "max_bytes", "max_tokens")
# Head and tail keep at most this share of each budget while error lines wait to be
# rescued, so a long traceback cannot crowd out both ends; unused room flows back.
ENDS_SHARE = 3 / 4
Count = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Limits:
    """How big one tool output may be; None switches a kind of limit off. The defaults
    are the settings' (ctxpack.settings), which allow no limit to be off."""

    max_lines: int | None = SETTINGS["max_lines"].default
    max_bytes: int | None = SETTINGS["max_bytes"].default  # UTF-8 bytes
    max_tokens: int | None = SETTINGS["max_tokens"].default
    mode: str = SETTINGS["truncate_mode"].default  # one of MODES

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"unknown truncate mode {self.mode!r}",
                             f"use one of {', '.join(MODES)}")
        for name in _BUDGETS:
            if (getattr(self, name) or 0) < 0:
                raise UsageError(f"{name} must not be negative", "use 0 or more, or no limit")

    def over(self, text: str, count: Count) -> bool:
        """True when text passes any limit (count tokens only when needed: cheap checks first)."""
        return self.passed(line_count(text), utf8_size(text, self.max_bytes),
                           lambda: count(text))

    def passed(self, lines: int, size: int, tokens: Callable[[], int]) -> bool:
        """True when a text of `lines` lines, `size` UTF-8 bytes and `tokens()` tokens
        passes any limit (the tokens are asked for last, as they cost most)."""
        if self.max_lines is not None and lines > self.max_lines:
            return True
        if self.max_bytes is not None and size > self.max_bytes:
            return True
        return self.max_tokens is not None and tokens() > self.max_tokens


@dataclass(frozen=True, slots=True)
class Truncated:
    """A cut tool output and what the cut took away."""

    text: str  # the new output the model sees, marker line included
    lines_before: int  # lines of the original text
    lines_cut: int  # original lines not shown (rescued error lines count as shown)
    tokens_before: int
    tokens_after: int
    errors_kept: int  # error lines rescued from the cut region
    repeats_collapsed: int  # lines removed by collapsing identical runs (in rows shown)


def line_count(text: str) -> int:
    """Lines in text; a final newline ends the last line rather than starting another."""
    if not text:
        return 0
    return text.count("\n") + (not text.endswith("\n"))


def utf8_size(text: str, cap: int | None = None) -> int:
    """Bytes of `text` in UTF-8; past `cap` characters it is over `cap` in any case, and
    only its length in characters is told."""
    # UTF-8 needs at least a byte per character, so a long text is over without encoding
    if (cap is not None and len(text) > cap) or text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def cut(text: str, limits: Limits, count: Count, reference: str | None) -> Truncated | None:
    """The cut version of `text`, or None when it is within every limit; the marker names
    `reference`, where the full output is archived (None: it is not kept).

    The result is always within `limits`. Limits with no room even for the marker get
    a shorter one, then `[ctxpack: cut]`, and past that the empty text (the one case
    where a final newline is not kept).
    """
    if not text:
        return None
    cheaply_over = replace(limits, max_tokens=None).over(text, count)
    if not cheaply_over and limits.max_tokens is None:
        return None
    tokens = count(text)  # needed for the Truncated anyway, so the token check reuses it
    if not cheaply_over and tokens <= limits.max_tokens:
        return None
    job = _Job(text, tokens, limits, count, reference)
    n = len(job.rows)  # when folding the repeats is enough, the marker goes where cuts would
    whole = _Layout(tail=n) if limits.mode == "tail" else _Layout(head=n)
    if n < line_count(text) and job.fits(whole, limits):
        return job.settle(whole)
    return job.settle(job.choose())


@dataclass(frozen=True, slots=True)
class _Layout:
    """Which rows (folded lines) show: whole ones at each end, else characters of the end rows."""

    head: int = 0
    tail: int = 0
    head_chars: int = 0  # used only when no whole row fits
    tail_chars: int = 0
    rescued: tuple[int, ...] = ()  # error rows shown right after the marker


def _ends(mode: str, amount: int) -> tuple[int, int]:
    # head_tail halves the budget: the start says what ran, the end how it finished
    if mode == "head":
        return amount, 0
    if mode == "tail":
        return 0, amount
    return (amount + 1) // 2, amount // 2


def _largest(fits: Callable[[int], bool], hi: int) -> int:
    """Largest x in [0, hi] with fits(x) for a fits that only turns False as x grows."""
    lo, step = 0, 1
    while step <= hi and fits(step):  # gallop, so probes stay within twice the answer
        lo, step = step, step * 2
    high = min(step, hi + 1)
    while high - lo > 1:
        mid = (lo + high) // 2
        lo, high = (mid, high) if fits(mid) else (lo, mid)
    return lo


def _fold(lines: list[str]) -> tuple[list[str], list[int]]:
    """Rows with runs of 3+ identical lines folded into one, and the lines before each row."""
    runs: list[list[int]] = []  # [first, last] line of each run of equal lines
    for i in compress(range(1, len(lines)), map(eq, lines, islice(lines, 1, None))):  # at C speed
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i - 1, i])
    rows: list[str] = []
    starts: list[int] = []
    done = 0
    for first, last in (run for run in runs if run[1] - run[0] >= 2):
        rows += lines[done:first]
        starts += range(done, first + 1)
        rows.append(f"{lines[first]}  [repeated {last - first + 1:,} times]")
        done = last + 1
    rows += lines[done:]
    starts += range(done, len(lines) + 1)
    return rows, starts


def _error_rows(rows: list[str]) -> list[int]:
    """Indexes of the rows that report an error, as `failures` tells error lines."""
    block = "\n".join(rows)
    ends = list(map(add, accumulate(map(len, rows)), range(len(rows))))  # each row's "\n"
    return sorted({bisect_left(ends, start) for start, _ in error_spans(block)})


class _Job:
    """One truncation: the folded rows, the budget, and the search for a layout that fits."""

    def __init__(self, text: str, tokens: int, limits: Limits, count: Count,
                 reference: str | None):
        self.trailing = text.endswith("\n")
        lines = (text[:-1] if self.trailing else text).split("\n")
        self.rows, self.starts = _fold(lines)  # starts[-1] is the number of lines
        self.limits, self.count = limits, count
        self.kept = f"full output archived as {reference}" if reference else \
            "full output not kept"
        self.tokens_before = tokens

    def render(self, lay: _Layout, marker: str | None) -> str:
        rows, n = self.rows, len(self.rows)
        parts = rows[: lay.head] + ([rows[0][: lay.head_chars]] if lay.head_chars else [])
        parts += [marker] if marker is not None else []
        parts += [rows[i] for i in lay.rescued]
        parts += [rows[-1][len(rows[-1]) - lay.tail_chars :]] if lay.tail_chars else []
        parts += rows[n - lay.tail :] if lay.tail else []
        return "\n".join(parts) + ("\n" if self.trailing else "")

    def hidden(self, lay: _Layout) -> tuple[int, int]:
        """The rows [lo, hi) not shown at either end."""
        return lay.head + (lay.head_chars > 0), len(self.rows) - lay.tail - (lay.tail_chars > 0)

    def tally(self, lay: _Layout) -> tuple[int, int, int, int]:
        """Original lines cut, lines folded among those shown, characters cut, rows cut in part."""
        rows, starts = self.rows, self.starts
        lo, hi = self.hidden(lay)
        hi = max(hi, lo)
        lines_cut = starts[hi] - starts[lo] - sum(starts[i + 1] - starts[i] for i in lay.rescued)
        shown_rows = len(rows) - (hi - lo) + len(lay.rescued)
        partial = {i for i, kept in ((0, lay.head_chars), (len(rows) - 1, lay.tail_chars)) if kept}
        chars = sum(len(rows[i]) for i in partial) - lay.head_chars - lay.tail_chars
        return lines_cut, starts[-1] - lines_cut - shown_rows, chars, len(partial)

    def marker(self, lay: _Layout, tokens_cut: int) -> str:
        lines_cut, folded, chars_cut, partial = self.tally(lay)
        what = [f"{lines_cut:,} of {counted(self.starts[-1], 'line')}"] if lines_cut else []
        if chars_cut:
            what.append(f"{counted(chars_cut, 'character')} of {counted(partial, 'long line')}")
        clauses = [f"cut {' and '.join(what)} here"] if what else []
        if lay.rescued:
            clauses.append(f"kept {counted(len(lay.rescued), 'error line')} from them below")
        if folded:
            clauses.append(f"folded {counted(folded, 'repeated line')}")
        clauses += [f"{counted(tokens_cut, 'token')} left out", self.kept]
        return f"{MARKER}{'; '.join(clauses)}]"

    def fits(self, lay: _Layout, limits: Limits) -> bool:
        # the marker claims every original token as cut (and a plural): the final is no longer
        text = self.render(lay, self.marker(lay, max(self.tokens_before, 2)))
        return not limits.over(text, self.count)

    def plain_len(self, i: int) -> int:
        """Characters row i may show in part: none if it is folded, as its tag must not split."""
        i %= len(self.rows)
        return len(self.rows[i]) if self.starts[i + 1] - self.starts[i] == 1 else 0

    def with_ends(self, amount: int, by_chars: bool, errors: Sequence[int]) -> _Layout:
        """The layout keeping `amount` rows (or characters) at the ends, plus the errors."""
        head, tail = _ends(self.limits.mode, amount)
        if by_chars:
            head, tail = min(head, self.plain_len(0)), min(tail, self.plain_len(-1))
            lay = _Layout(head_chars=head, tail_chars=tail)
        else:
            lay = _Layout(head=head, tail=tail)
        lo, hi = self.hidden(lay)
        return replace(lay, rescued=tuple(i for i in errors if lo <= i < hi))

    def fit_ends(self, limits: Limits, errors: Sequence[int]) -> _Layout:
        """The most of the ends that fits `limits` beside `errors`; characters if no row does."""
        rows = self.rows

        def rows_fit(k: int) -> bool:
            return self.fits(self.with_ends(k, False, errors), limits)

        cap = len(rows) - 1  # at least one row goes, or the text would have fitted
        if limits.max_lines is not None:  # often the line limit binds: try it before searching
            cap = min(cap, max(0, limits.max_lines - 1))
        k = cap if limits.max_lines is not None and rows_fit(cap) else _largest(rows_fit, cap)
        if k:
            return self.with_ends(k, False, errors)
        # one row alone may exceed the budget; a character cut must leave something out
        room = self.plain_len(0) + self.plain_len(-1) if len(rows) > 1 else self.plain_len(0) - 1
        room = room if limits.max_bytes is None else min(room, limits.max_bytes)
        c = _largest(lambda c: self.fits(self.with_ends(c, True, errors), limits), room)
        return self.with_ends(c, True, errors)

    def rescuable(self, lay: _Layout, error_rows: list[int]) -> list[int]:
        """Error rows hidden by `lay`, in order, each distinct line once."""
        lo, hi = self.hidden(lay)
        first: dict[str, int] = {}
        for i in error_rows[bisect_left(error_rows, lo) : bisect_left(error_rows, hi)]:
            first.setdefault(self.rows[i], i)
        return list(first.values())

    def choose(self) -> _Layout:
        """The layout to keep: the ends, and the error lines that fit beside them."""
        base = self.fit_ends(self.limits, ())
        error_rows = _error_rows(self.rows)
        if not self.rescuable(base, error_rows):
            return base
        budgets = {name: getattr(self.limits, name) for name in _BUDGETS}
        shares = {k: v if v is None else int(v * ENDS_SHARE) for k, v in budgets.items()}
        ends = self.fit_ends(replace(self.limits, **shares), ())
        errors = self.rescuable(ends, error_rows)
        m = _largest(lambda m: self.fits(replace(ends, rescued=tuple(errors[:m])), self.limits),
                     len(errors))
        return self.fit_ends(self.limits, errors[:m])  # the ends take back unused room

    def settle(self, lay: _Layout) -> Truncated:
        """The Truncated for `lay` with its true figures, shrinking it if those no longer fit."""
        while True:
            body_tokens = self.count(self.render(lay, None))
            text = self.render(lay, self.marker(lay, max(0, self.tokens_before - body_tokens)))
            if not self.limits.over(text, self.count):
                return self.cut(text, lay)
            if lay == _Layout():
                return self.bare_marker()
            lay = _Layout(lay.head // 2, lay.tail // 2, lay.head_chars // 2, lay.tail_chars // 2)

    def bare_marker(self) -> Truncated:
        """The smallest honest result, for limits with no room even for the marker."""
        for marker in (f"{MARKER}output cut; {self.kept}]",
                       "[ctxpack: cut]"):
            text = marker + "\n" * self.trailing
            if not self.limits.over(text, self.count):
                return self.cut(text, _Layout())
        return self.cut("", _Layout())

    def cut(self, text: str, lay: _Layout) -> Truncated:
        lines_cut, folded, _, _ = self.tally(lay)
        return Truncated(text=text, lines_before=self.starts[-1], lines_cut=lines_cut,
                   tokens_before=self.tokens_before, tokens_after=self.count(text),
                   errors_kept=len(lay.rescued), repeats_collapsed=folded)
