"""How far ctxpack's count of a prompt is from what the provider billed for it, per call,
on every corpus file that records two or more calls' usage (see ctxpack.calibration).

For each file: the calls it records; the error of the plain count (naive); of the
calibrated count, its overhead fitted on the first half of the calls and scored on the
second; and of the anchored count (the previous call's billed size plus the calibrated
count of what came since). Errors are |count - billed| / billed; median and worst.

The shipped table's slopes are read off these very files (`--slopes`), so the calibrated
column is held out in its overhead only. The `held out` column fits the slope too without
the file: the `--slopes` median of the other files' steps under the same table entry (5
or more), else of their family's (claude, gpt-5), else 1:1 — what the table would say of
a file it had never seen.

    PYTHONPATH=. python bench/bench_calibration.py [FILES...]
    PYTHONPATH=. python bench/bench_calibration.py --slopes   # fit a slope per model
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.calibration import (  # noqa: E402
    Fit,
    anchored,
    by_conversation,
    calls_of,
    fit,
    prompt_sizes,
)
from ctxpack.errors import CtxpackError  # noqa: E402
from ctxpack.formats import model_of  # noqa: E402
from ctxpack.loader import load  # noqa: E402
from ctxpack.models import TABLE  # noqa: E402
from ctxpack.tokens import TokenCounter  # noqa: E402
from ctxpack.transcript import RecordedCall, Transcript  # noqa: E402
from tests.helpers import CORPUS  # noqa: E402


def errors(predicted: list[int], billed: list[int]) -> list[float]:
    return [abs(p - b) / b for p, b in zip(predicted, billed, strict=True) if b > 0]


def measure(path: Path) -> list[dict]:
    """A row per conversation of the file that records two or more calls (each
    conversation of a file of several is sent apart: `[n]` after the name)."""
    try:
        t = load(path)
    except CtxpackError:
        return []
    runs = by_conversation(t, calls_of(t))
    return [{**_measure(t, calls, path.name[:38] + f" [{n}]" if len(runs) > 1 else path.name),
             "path": path} for n, calls in enumerate(runs, 1) if len(calls) >= 2]


def _measure(t: Transcript, calls: list[RecordedCall], name: str) -> dict:
    # the model its calls name most, else the file's as stats and calibrate read it (the
    # one it names, else the one its format assumes: shown as such, as calibrate shows it)
    named = Counter(c.model for c in calls if c.model)
    model = named.most_common(1)[0][0] if named else model_of(t.model, t.format)
    assumed = not named and t.model is None and model is not None
    # (a model the table does not know is counted as ctxpack counts it: with its default)
    counted = prompt_sizes(t, calls, TokenCounter(model if model and TABLE.find(model)
                                                  else None))
    billed = [c.billed for c in calls]
    half = max(1, len(calls) // 2)
    f = fit(model, counted[:half], billed[:half])
    tail = range(half, len(calls))
    # the calls fitted on billed below slope × their count: the file holds more than was
    # sent (or the model splits its text more tightly), and nothing is fitted outside it
    under = all(b < f.slope * c for c, b in zip(counted[:half], billed[:half], strict=True))
    return {
        "file": name, "model": model, "calls": len(calls),
        "label": f"{model} (assumed)" if assumed else model or "?",
        "naive": errors(counted, billed),
        "calibrated": errors([f(counted[k]) for k in tail], [billed[k] for k in tail]),
        "anchored": errors([anchored(f.slope, billed[k - 1], counted[k - 1], counted[k])
                            for k in range(1, len(calls))], billed[1:]),
        "overhead": f.overhead, "slope": f.slope, "under": under,
        "points": list(zip(counted, billed, strict=True)),
    }


def steps(row: dict) -> list[float]:
    """The growth in billed tokens per counted token between the row's consecutive calls
    whose counts differ by more than 500 (growth big enough to read a ratio from)."""
    return [(b1 - b0) / (c1 - c0) for (c0, b0), (c1, b1) in itertools.pairwise(row["points"])
            if c1 - c0 > 500]


def slopes(rows: list[dict]) -> dict[str, list[float]]:
    """Per model, the steps of its rows: what `--slopes` prints the median of, and what
    the shipped table's slopes are read from (BENCHMARKS.md)."""
    by_model: dict[str, list[float]] = {}
    for r in rows:
        if found := steps(r):
            by_model.setdefault(r["label"], []).extend(found)
    return by_model


def entry(model: str | None) -> str | None:
    """The name of the table's calibration entry `model` takes its slope from, if any."""
    found = TABLE.calibration(model)
    return found.name if found is not None else None


def family(name: str) -> str:
    return "claude" if name.startswith("claude") else "gpt-5" if name.startswith("gpt-5") \
        else name


def held_out_slope(row: dict, rows: list[dict]) -> float:
    """The slope the table would give the row's model without its file's steps (see the
    module's note): 1:1 for a model the table lists no entry for."""
    mine = entry(row["model"])
    if mine is None or row["label"].endswith("(assumed)"):
        return 1.0 if mine is None else TABLE.calibration(mine).slope
    others = [r for r in rows if r["path"] != row["path"] and not r["label"].endswith(
        "(assumed)")]
    same = [x for r in others if entry(r["model"]) == mine for x in steps(r)]
    if len(same) >= 5:
        return statistics.median(same)
    kin = [x for r in others if (e := entry(r["model"])) and family(e) == family(mine)
           for x in steps(r)]
    return statistics.median(kin) if kin else 1.0


def held_out(row: dict, slope: float) -> list[float]:
    """The calibrated errors of the row's second half at `slope`, its overhead fitted on
    the first half as `fit` fits it."""
    counted, billed = zip(*row["points"], strict=True)
    half = max(1, len(counted) // 2)
    f = Fit(slope, max(0.0, statistics.median(
        [b - slope * c for c, b in zip(counted[:half], billed[:half], strict=True)])))
    tail = range(half, len(counted))
    return errors([f(counted[k]) for k in tail], [billed[k] for k in tail])


def cell(values: list[float]) -> str:
    if not values:
        return "      -       "
    return f"{statistics.median(values):6.1%} {max(values):6.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--slopes", action="store_true",
                        help="also fit a slope per model on the growth between calls")
    args = parser.parse_args()
    # every corpus file: those that record fewer than two calls' usage are passed over
    files = args.files or sorted(p for p in CORPUS.rglob("*")
                                 if p.is_file() and p.name != "MANIFEST.md")
    rows = [r for path in files for r in measure(path)]
    for r in rows:
        r["held_slope"] = held_out_slope(r, rows)
        r["held out"] = held_out(r, r["held_slope"])
    print(f"{'file':44} {'model':18} {'calls':>5}  {'naive med/worst':>14}  "
          f"{'calibrated':>14}  {'anchored':>14}  overhead  {'held out':>14} slope")
    for r in rows:
        print(f"{r['file'][:44]:44} {r['label'][:18]:18} {r['calls']:5}  "
              f"{cell(r['naive'])}  {cell(r['calibrated'])}  {cell(r['anchored'])}  "
              f"{r['overhead']:8,.0f}{' *' if r['under'] else '  '}  {cell(r['held out'])} "
              f"{r['held_slope']:.3f}")
    if any(r["under"] for r in rows):
        print("* the calls fitted on were billed below the model's slope × their count (the "
              "file holds more than was sent, or the model splits it more tightly): no "
              "overhead")
    many = [r for r in rows if r["calls"] >= 10]
    for kind in ("naive", "calibrated", "anchored", "held out"):
        medians = [statistics.median(r[kind]) for r in many if r[kind]]
        if not medians:
            continue
        print(f"files with >= 10 calls, {kind}: median of medians "
              f"{statistics.median(medians):.1%}, worst median {max(medians):.1%}")
    if args.slopes:
        for model, ratios in sorted(slopes(rows).items()):
            print(f"slope {model}: median {statistics.median(ratios):.3f} "
                  f"over {len(ratios)} steps")


if __name__ == "__main__":
    main()
