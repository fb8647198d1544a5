"""Fitting a summary to its token budget: the least `Condensing` that fits.

Oldest detail goes first: the least folding is found first, then the least dropping
of facts, then the least trimming, then the largest list cap the rest allows. The
search counts line by line on memoized counts; exact counts settle the result.
"""

from __future__ import annotations

from collections.abc import Callable

from . import Count
from ._layout import TRIMMED_CAP, Condensing, Doc, render


def fit(doc: Doc, max_tokens: int, count: Count) -> str:
    """The rendered `doc`, condensed oldest first until it fits `max_tokens` if it can."""
    texts: dict[Condensing, str] = {}

    def text(cut: Condensing) -> str:
        if cut not in texts:
            texts[cut] = render(doc, cut)
        return texts[cut]

    at = [Condensing().fold, *doc.positions()]  # at[0]: nothing condensed
    # The estimates are calibrated on one exact count: of every line bare (the text least
    # costly to render), then of what a search on that found, which renders about as the
    # answer will. A long summary is never rendered whole: it would cost the most.
    cut = Condensing(at[0], at[-1], at[-1])
    for _ in range(2):
        estimate = _LineCounter(count, count(text(cut)), text(cut))
        cut = _search(doc, at, lambda c, e=estimate: e(text(c)) <= max_tokens)
    # every line still shows its facts: the whole text may fit after all (the estimates
    # are near, not exact), and costs about as much to render as what was found
    if cut.drop == at[0] and count(text(Condensing())) <= max_tokens:
        return text(Condensing())
    return text(_settle(cut, at, lambda c: count(text(c)) <= max_tokens))


def _search(doc: Doc, at: list[int], fits: Callable[[Condensing], bool]) -> Condensing:
    """The least condensing cut that `fits` (by estimate), found dimension by dimension."""
    n = len(at) - 1
    fold = _first(0, n, lambda i: fits(Condensing(at[i], at[n], at[n])))
    drop = _first(fold, n, lambda i: fits(Condensing(at[fold], at[i], at[n])))
    trim = _first(drop, n, lambda i: fits(Condensing(at[fold], at[drop], at[i])))
    cut = Condensing(at[fold], at[drop], at[trim])
    if trim > drop:  # the trimmed lines may show more of their lists than the least
        most = max(len(ln.facts) for s in doc.sections for ln in s.lines)
        cap = most - _first(0, most - TRIMMED_CAP,
                            lambda j: fits(Condensing(cut.fold, cut.drop, cut.trim, most - j)))
        cut = Condensing(cut.fold, cut.drop, cut.trim, cap)
    return cut


def _settle(cut: Condensing, at: list[int], ok: Callable[[Condensing], bool]) -> Condensing:
    """Condense a little more, by exact counts, while the estimate was too kind."""
    index = {pos: i for i, pos in enumerate(at)}
    last = at[-1]
    while not ok(cut) and cut.fold < last:
        if cut.cap > TRIMMED_CAP:
            cut = Condensing(cut.fold, cut.drop, cut.trim, max(TRIMMED_CAP, cut.cap * 3 // 4))
        elif cut.trim < last:
            cut = Condensing(cut.fold, cut.drop, at[index[cut.trim] + 1], cut.cap)
        elif cut.drop < last:
            cut = Condensing(cut.fold, at[index[cut.drop] + 1], last, cut.cap)
        else:
            cut = Condensing(at[index[cut.fold] + 1], last, last, cut.cap)
    return cut


class _LineCounter:
    """Token estimates from memoized per-line counts, calibrated on one exact count."""

    def __init__(self, count: Count, exact: int, text: str) -> None:
        self.count = count
        self.memo: dict[str, int] = {}
        self.scale = exact / max(1, self._raw(text))

    def __call__(self, text: str) -> float:
        return self._raw(text) * self.scale

    def _raw(self, text: str) -> int:
        total = 0
        for line in text.split("\n"):
            n = self.memo.get(line)
            if n is None:
                n = self.memo[line] = self.count(line) if line else 0
            total += n + 1
        return total


def _first(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The smallest i in [lo, hi] with ok(i), by bisection; hi when there is none."""
    low, high = lo, hi
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    # counts are nearly but not strictly monotone (facts move when others drop)
    while low < hi and not ok(low):
        low += 1
    return low
