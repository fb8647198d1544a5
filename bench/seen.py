"""What the model sees after a compress: the share of an input's distinct paths, URLs and
error lines still shown by the output, read back from `--strip-metadata` output.

The input and the output are both read as a model is given them (every message's text,
calls and results), their facts found the same way, and each input fact looked for
verbatim in the output's text. A keep-the-newest baseline shows what simply keeping the
newest messages that fit in the output's size would have shown.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

KINDS = ("paths", "urls", "errors")


@dataclass
class Seen:
    """One compress of one file at one budget (of its messages, as ctxpack counts them)."""

    name: str
    budget: int
    billed: int  # the same budget as the provider bills it: what compress is given
    before: int  # tokens of the input's largest conversation (what the budget applies to)
    after: int  # tokens of the output's largest conversation
    kept: dict[str, tuple[int, int]]  # kind: (seen, total)
    baseline: dict[str, tuple[int, int]]  # the same, keeping the newest text of that size
    note: str = ""

    def share(self, which: str = "kept") -> tuple[int, int]:
        counts = getattr(self, which)
        return sum(counts[k][0] for k in KINDS), sum(counts[k][1] for k in KINDS)


def conversations(messages: list) -> dict[int, list]:
    out: dict[int, list] = {}
    for m in messages:
        out.setdefault(m.conversation, []).append(m)
    return out


def seen_text(messages: list) -> str:
    return "\n".join(m.text for m in messages)


def newest(messages: list, counts: list[int], tokens: int) -> list:
    """The newest messages whose tokens add up to at most `tokens`."""
    taken, used = [], 0
    for m, c in zip(reversed(messages), reversed(counts), strict=True):
        if used + c > tokens:
            break
        taken.append(m)
        used += c
    return taken[::-1]


def tally(facts, text: str) -> dict[str, tuple[int, int]]:
    from ctxpack.compression.audit import retention

    found = retention(facts, text)
    return {k: (found[k].kept, found[k].total) for k in KINDS}


def measure(path: Path, name: str, budget: int | None, share: float | None = None,
            model: str = "gpt-4o") -> Seen | str:
    """Compress `path` at `budget` (or `share` of its largest conversation's tokens).

    The budget is of the file's messages: compress is given it as billed (see
    ctxpack.calibration), so that what an agent sends and does not log (its system
    prompt, its tools) is not taken from it."""
    from ctxpack import load
    from ctxpack.calibration import bill_for
    from ctxpack.compression import compress_file
    from ctxpack.compression.facts import extract
    from ctxpack.compression.settings import Options
    from ctxpack.errors import CtxpackError
    from ctxpack.tokens import TokenCounter

    try:
        t = load(path)
    except CtxpackError as e:
        return f"{name}: skipped, {type(e).__name__}: {str(e).splitlines()[0][:100]}"
    counter = TokenCounter(model)
    given = conversations(t.messages)
    counts = {c: [counter.message(m).total for m in ms] for c, ms in given.items()}
    largest = max((sum(c) for c in counts.values()), default=0)
    budget = budget or max(1, int(largest * (share or 1)))
    every = [n for c in counts.values() for n in c]
    billed = bill_for(every, t.calls, t.model, counter, t.format, True, len(given))(budget)
    try:
        made = compress_file(path, Options(budget=billed), model=model, strip_metadata=True)
        data = made.data
    except CtxpackError as e:
        return f"{name} at {budget:,}: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
    out = conversations(load(io.BytesIO(data), made.report.format).messages)
    sizes: Counter[int] = Counter()
    kept: Counter = Counter()
    base: Counter = Counter()
    # the output's conversations are the input's, in order (a summary never joins two)
    for (c, ms), shown in zip(given.items(), out.values(), strict=True):
        size = sum(counter.message(m).total for m in shown)
        sizes[c] = size
        facts = extract(seen_text(ms))
        for k, (a, b) in tally(facts, seen_text(shown)).items():
            kept[k, 0] += a
            kept[k, 1] += b
        for k, (a, _) in tally(facts, seen_text(newest(ms, counts[c], size))).items():
            base[k, 0] += a
    return Seen(name, budget, billed, largest, max(sizes.values(), default=0),
                {k: (kept[k, 0], kept[k, 1]) for k in KINDS},
                {k: (base[k, 0], kept[k, 1]) for k in KINDS},
                "" if made.report.changed else "unchanged")


def pct(kept: int, total: int) -> str:
    return f"{kept / total:4.0%}" if total else "   —"


def lines(results: list[Seen | str], label: str) -> list[str]:
    done = [r for r in results if isinstance(r, Seen)]
    width = max((len(r.name) for r in done), default=10)
    out = [f"what the model sees, {label}: distinct paths, URLs and error lines of the input "
           "still in the output (read back from --strip-metadata output); newest = keeping "
           "the newest messages of the output's size; billed = the budget given to "
           "compress, as the provider bills it (with what the file does not hold)",
           f"{'file':<{width}} {'budget':>7} {'billed':>7} {'tokens → out':>17} {'used':>5}  "
           f"{'paths':>9} {'urls':>9} {'errors':>9}  {'seen':>5} {'newest':>6}"]
    for r in done:
        each = " ".join(f"{r.kept[k][0]:>4}/{r.kept[k][1]:<4}" for k in KINDS)
        used = f"{r.after / r.budget:5.0%}" if r.after < r.before else "    —"
        out.append(f"{r.name:<{width}} {r.budget:>7,} {r.billed:>7,} {r.before:>8,} → "
                   f"{r.after:>6,} {used}  {each}  {pct(*r.share()):>5} "
                   f"{pct(*r.share('baseline')):>6}"
                   + (f"  ({r.note})" if r.note else ""))
    out += [f"  {r}" for r in results if isinstance(r, str)]
    squeezed = [r for r in done if r.before > r.budget]
    if squeezed:
        kept = [sum(x) for x in zip(*(r.share() for r in squeezed), strict=True)]
        base = [sum(x) for x in zip(*(r.share("baseline") for r in squeezed), strict=True)]
        worst = min(squeezed, key=lambda r: r.share()[0] / max(1, r.share()[1]))
        over = [r.name for r in squeezed if r.after > r.budget]
        used = sorted(r.after / r.budget for r in squeezed)
        out.append(f"total over the {len(squeezed)} files over the budget: "
                   f"{kept[0]}/{kept[1]} seen ({pct(*kept).strip()}), newest baseline "
                   f"{base[0]}/{base[1]} ({pct(*base).strip()}); lowest file "
                   f"{pct(*worst.share()).strip()} ({worst.name}); budget used median "
                   f"{used[len(used) // 2]:.0%}, min {used[0]:.0%}; over budget: "
                   f"{', '.join(over) or 'none'}")
    return out
