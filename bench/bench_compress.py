"""Measure `compress`: what its summaries keep of real transcripts, and what it costs on a big one.

Quality: first what the model sees (see `seen`): every corpus transcript compressed at
--budget 20000 and at 40% of its tokens, the share of its distinct paths, URLs and error
lines that the output read back still shows, the budget used, and keeping the newest
text of the same size for a baseline. Then every corpus transcript is compressed with
a budget that forces a summary (not with --seen-only), and
the report's retention audit says how many distinct paths, URLs and error lines of the
archived region the summary still holds. Speed: `compress_file` and `stats` of the big
benchmark transcript, and restore of compress's output, each in a fresh child process,
timed in the same run; read the ratios, the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import bench_stats  # noqa: E402
import make_transcript  # noqa: E402
import seen  # noqa: E402

from tests.helpers import CORPUS  # noqa: E402

MB = 1e6
MODEL = "gpt-4o"
# The corpus folders of Claude Code, Codex, Anthropic Messages and OpenAI tool-calling
# runs (Chat Completions message lists: mini-swe-agent and tau-bench, SWE-agent trajectories).
FORMATS = ("claude-code", "codex", "anthropic-messages", "anthropic-agent-events", "openai-chat",
           "swe-agent")
SUFFIXES = (".jsonl", ".json", ".traj")
BAR = ("paths", "urls", "errors")  # the fact kinds the quality bar names
BAR_RETENTION = 0.9
BAR_RATIO = 5.0
BAR_TIME = 1.5
BAR_MEMORY = 2.0
# Budgets as shares of the file's tokens: up when the budget cannot be met or leaves the
# summary less room than its own caps (that measures the budget, not the summarizer),
# down when truncating and masking alone meet it (no summary is written then).
SHARES_UP = (0.4, 0.6, 0.8, 0.9)
SHARES_DOWN = (0.25, 0.15, 0.1)
SEEN_BUDGET, SEEN_SHARE = 20_000, 0.4  # the budgets what the model sees is measured at


# -- quality ---------------------------------------------------------------------------


@dataclass
class Quality:
    """One compress of one corpus file, as its report tells it."""

    name: str
    strategy: str
    share: float
    before: int
    after: int
    region: int  # the archived messages' tokens as the input has them
    archived: int  # the same messages' tokens after truncate and mask (the report's figure)
    summary: int
    messages: int
    retention: dict[str, dict[str, Any]]
    note: str = ""

    def kept(self, kinds: Iterable[str] = BAR) -> tuple[int, int]:
        """(kept, total) distinct facts of these kinds."""
        kinds = list(kinds)
        return (sum(self.retention[k]["kept"] for k in kinds),
                sum(self.retention[k]["total"] for k in kinds))

    @property
    def ratio(self) -> float:
        """How much smaller the summary is than the region it replaces, as the input had it."""
        return self.region / self.summary if self.summary else 0.0

    @property
    def ratio_after_mask(self) -> float:
        return self.archived / self.summary if self.summary else 0.0

    @property
    def meets(self) -> bool:
        kept, total = self.kept()
        return (not total or kept / total >= BAR_RETENTION) and self.ratio >= BAR_RATIO


def corpus_files(corpus: Path) -> list[Path]:
    return [p for fmt in FORMATS for p in sorted((corpus / fmt).glob("*"))
            if p.suffix in SUFFIXES]


def first_summary(path: Path, tokens: int, strategy: str) -> tuple[float, Any, list[str]]:
    """The first budget on the share ladder that gives a summary: (share, report, notes)."""
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options
    from ctxpack.errors import CannotFit

    notes: list[str] = []
    up, down = iter(SHARES_UP[1:]), iter(SHARES_DOWN)
    share: float | None = SHARES_UP[0]
    squeezed = None
    while share is not None:
        options = Options(budget=max(1, int(tokens * share)), strategy=strategy)
        try:
            report = compress_file(path, options).report
        except CannotFit:
            notes.append(f"{share:.0%} cannot fit")
            share = next(up, None)
            continue
        s = report.summary
        if s is not None and s["squeezed"]:
            notes.append(f"{share:.0%} squeezes the summary to {s['max_tokens']:,} tokens")
            squeezed = squeezed or (share, report)
            share = next(up, None)
            continue
        if s is not None:
            return share, report, notes
        notes.append(f"{share:.0%} no summary")
        share = next(down, None)
    if squeezed is not None:  # no budget gives the summary its room: the tightest one
        return squeezed[0], squeezed[1], notes
    return 0.0, None, notes


def measure_quality(path: Path, corpus: Path, strategy: str) -> Quality | str:
    """The compress of one file, or why there is none."""
    from ctxpack.errors import CtxpackError

    name = str(path.relative_to(corpus))
    try:
        tokens = largest_conversation(path)
        share, report, notes = first_summary(path, tokens, strategy)
    except CtxpackError as e:
        return f"{name}: skipped, {type(e).__name__}: {str(e).splitlines()[0][:100]}"
    if report is None:
        return (f"{name} ({tokens:,} tokens): skipped, no budget gives a summary "
                f"({'; '.join(notes)})")
    s = report.summary
    return Quality(name, strategy, share, report.tokens_before, report.tokens_after,
                   s["archived_tokens_read"], s["archived_tokens"], s["tokens"],
                   s["messages"], s["retention"], "; ".join(notes))


def largest_conversation(path: Path) -> int:
    """The tokens of the file's largest conversation: a file of many is compressed one
    conversation at a time, the budget applying to each (most files hold one)."""
    from collections import Counter

    from ctxpack import load
    from ctxpack.tokens import TokenCounter

    t = load(path)
    counter = TokenCounter(t.model)
    sizes: Counter[int] = Counter()
    for m in t.messages:
        sizes[m.conversation] += counter.message(m).total
    return max(sizes.values(), default=0)


def pct(kept: int, total: int) -> str:
    return f"{kept / total:4.0%}" if total else "   —"


def fraction(kept: int, total: int) -> str:
    return f"{kept}/{total}" if total else "—"


def kept_over(results: list[Quality], kinds: Iterable[str] = BAR) -> tuple[int, int]:
    """(kept, total) summed over files."""
    pairs = [q.kept(kinds) for q in results]
    return sum(k for k, _ in pairs), sum(t for _, t in pairs)


def quality_row(q: Quality, width: int) -> str:
    cut = 1 - q.after / q.before if q.before else 0.0
    kinds = "  ".join(f"{fraction(*q.kept([k])):>7}" for k in BAR)
    kept, total = q.kept()
    note = f"  ({q.note})" if q.note else ""
    return (f"{q.name:<{width}} {q.share:4.0%} {q.before:>8,} → {q.after:>7,} {cut:4.0%}"
            f"  {q.region:>7,} ({q.archived:>7,}) → {q.summary:>6,} {q.ratio:5.1f}x "
            f"({q.ratio_after_mask:4.1f}x)  {kinds}  {kept:>4}/{total:<4} {pct(kept, total)}"
            f"  {'met' if q.meets else 'MISSED'}{note}")


def quality_lines(results: list[Quality], skipped: list[str], strategy: str,
                  show_dropped: int) -> list[str]:
    width = max([len(q.name) for q in results] + [4])
    lines = [f"strategy {strategy}; bar: >= {BAR_RETENTION:.0%} of distinct paths, URLs and "
             f"error lines of the archived region kept, region compressed >= {BAR_RATIO:g}x",
             "region = the archived messages as the input has them (in brackets: after "
             "truncate and mask, the report's archived_tokens); ratio = region / summary",
             f"{'file':<{width}} {'budget':>4} {'tokens before → after':>20} {'cut':>4}"
             f"  {'region (masked) → summary':>27} {'ratio (masked)':>14}  {'paths':>7}  "
             f"{'urls':>7}  {'errors':>7}  {'kept (3 kinds)':>14}  bar"]
    for q in results:
        lines.append(quality_row(q, width))
        if show_dropped and not q.meets:
            for k in BAR:
                dropped = q.retention[k]["dropped"][:show_dropped]
                if dropped:
                    lines.append(f"    dropped {k}: " + " | ".join(d[:90] for d in dropped))
    lines += [f"  {s}" for s in skipped]
    return lines + quality_totals(results)


def quality_totals(results: list[Quality]) -> list[str]:
    if not results:
        return ["no file gave a summary"]
    kept, total = kept_over(results)
    each = ", ".join(f"{k} {fraction(*kept_over(results, [k]))}" for k in BAR)
    ratios = [q.ratio for q in results]
    masked = [q.ratio_after_mask for q in results]
    kept_ok = sum(not t or k / t >= BAR_RETENTION for k, t in (q.kept() for q in results))
    return [f"total: {kept}/{total} distinct paths, URLs and error lines kept "
            f"({pct(kept, total).strip()}: {each}); {kept_ok} of {len(results)} files keep "
            f">= {BAR_RETENTION:.0%}",
            f"       region compression median {statistics.median(ratios):.1f}x, min "
            f"{min(ratios):.1f}x (after mask: median {statistics.median(masked):.1f}x, min "
            f"{min(masked):.1f}x); {sum(r >= BAR_RATIO for r in ratios)} of {len(results)} "
            f"files >= {BAR_RATIO:g}x ({sum(r >= BAR_RATIO for r in masked)} after mask)",
            f"       {sum(q.meets for q in results)} of {len(results)} files meet the whole bar"]


def run_quality(args: argparse.Namespace) -> list[str]:
    files = corpus_files(args.corpus)
    if not files:
        return [f"no transcripts under {args.corpus}/{{{','.join(FORMATS)}}} (see --corpus)"]
    lines = [f"corpus {args.corpus}: {len(files)} files"]
    for budget, share, label in ((SEEN_BUDGET, None, f"--budget {SEEN_BUDGET:,}"),
                                 (None, SEEN_SHARE, f"budget {SEEN_SHARE:.0%} of each file")):
        found = [seen.measure(p, str(p.relative_to(args.corpus)), budget, share, MODEL)
                 for p in files]
        lines += ["", *seen.lines(found, label)]
    if args.seen_only:
        return lines
    for strategy in args.strategies.split(","):
        results, skipped = [], []
        for path in files:
            q = measure_quality(path, args.corpus, strategy)
            (results if isinstance(q, Quality) else skipped).append(q)
        lines += ["", *quality_lines(results, skipped, strategy, args.show_dropped)]
    return lines


# -- speed -----------------------------------------------------------------------------


def child(kind: str, path: str, budget: int, keep: str | None = None) -> dict[str, Any]:
    """One timed call in this (fresh) process; what it measured, as JSON for the parent
    (`keep`: where compress's output is kept, for restore to read). `compress-base` is
    compress as the tree on PYTHONPATH has it (see --base), which may name its modules
    as they were before 2026-11-25."""
    try:  # an older tree first: an editable install may offer this tree's modules too
        from ctxpack.compress import compress_file  # type: ignore[import-not-found]
        from ctxpack.compress.options import Options  # type: ignore[import-not-found]
        from ctxpack.restore import restoring  # type: ignore[import-not-found]
        from ctxpack.stats import stats  # type: ignore[import-not-found]
    except ImportError:
        from ctxpack.breakdown import stats
        from ctxpack.compression import compress_file
        from ctxpack.compression.settings import Options
        from ctxpack.undo import restoring
    from ctxpack.tokens import TokenCounter

    start = time.perf_counter()
    if kind == "floor":  # what any run holds before reading the file
        TokenCounter(MODEL).text("load the encoding")
        return {"seconds": time.perf_counter() - start}
    if kind in ("stats", "stats-cache"):
        found = stats(path, MODEL, cache=kind == "stats-cache")
        return {"seconds": time.perf_counter() - start, "tokens": found.tokens}
    if kind == "restore":  # `path` is compress's output
        with restoring(path) as restored, tempfile.TemporaryFile() as out:
            written = sum(out.write(chunk) for chunk in restored.chunks())
        return {"seconds": time.perf_counter() - start, "out_bytes": written}
    result = compress_file(path, Options(budget=budget), model=MODEL)
    planned = time.perf_counter() - start
    written = 0
    with open(keep, "wb") if keep else tempfile.TemporaryFile() as out:  # as the CLI writes
        for chunk in result.chunks():
            written += out.write(chunk)
    seconds = time.perf_counter() - start
    r = result.report
    return {"seconds": seconds, "planned": planned, "out_bytes": written,
            "tokens_before": r.tokens_before, "tokens_after": r.tokens_after,
            "limit": r.limit, "target": r.target, "truncated": r.truncated, "masked": r.masked,
            "summary": {k: v for k, v in (r.summary or {}).items() if k != "retention"}}


@dataclass
class Timed:
    """A child's run: the call's own time (from inside) and the process's (from outside)."""

    call: float
    run: bench_stats.Run
    out: dict[str, Any]


BASE: Path | None = None  # the tree `compress-base` runs (see --base)


def timed(kind: str, path: Path, budget: int = 0, sample: bool = False,
          keep: Path | None = None) -> Timed:
    """`kind` in a fresh child process with an empty persistent cache of its own; with
    `sample`, for its memory (the sampling slows it: such runs are not timed)."""
    cmd = [sys.executable, __file__, "--child", kind, "--file", str(path), "--budget", str(budget)]
    if keep is not None:
        cmd += ["--keep", str(keep)]
    with tempfile.TemporaryDirectory() as cache:
        env = {"CTXPACK_CACHE_DIR": cache}
        if kind == "compress-base" and BASE is not None:
            env["PYTHONPATH"] = str(BASE)
        run = bench_stats.measure(cmd, env, sample=sample)
    out = json.loads(run.out)
    return Timed(out["seconds"], run, out)


def speed_round(path: Path, budget: int | None, compressed: Path) -> dict[str, Timed]:
    """One run of each kind; compress's output is kept in `compressed` for restore."""
    runs = {"stats": timed("stats", path)}
    budget = budget or runs["stats"].out["tokens"] // 2
    runs["stats-cache"] = timed("stats-cache", path)
    if BASE is not None:  # before this tree's compress, so that its output is restored
        runs["compress-base"] = timed("compress-base", path, budget)
    runs["compress"] = timed("compress", path, budget, keep=compressed)
    runs["restore"] = timed("restore", compressed)
    return runs


NAMES = {"floor": "floor: python, ctxpack, o200k loaded", "stats": "stats, cache=False",
         "stats-cache": "stats, empty cache", "compress": "compress and write, empty cache",
         "compress-base": "the same, --base's compress",
         "restore": "restore compress's output and write"}


def speed_row(kind: str, t: Timed, size: float, pss: float) -> str:
    return (f"  {NAMES[kind]:<38} {t.call:7.2f} s {t.run.seconds:7.2f} s {t.run.cpu:7.1f} s "
            f"{t.run.max_rss_mb:7.0f} MB {t.run.max_rss_mb * MB / size:4.2f}x "
            f"{pss:7.0f} MB {pss * MB / size:4.2f}x")


def speed_lines(path: Path, meta: dict, rounds: list[dict[str, Timed]], floor: Timed,
                pss: dict[str, float]) -> list[str]:
    size = float(meta["bytes"])
    best = {k: min((r[k] for r in rounds), key=lambda t: t.call) for k in rounds[0]}
    c, s = best["compress"].out, best["compress"].out["summary"]
    lines = [bench_stats.describe(path, meta), bench_stats.machine(),
             f"model {MODEL}: {best['stats'].out['tokens']:,} tokens; compress budget "
             f"{rounds[0]['stats'].out['tokens'] // 2:,} (half), which the window caps: limit "
             f"{c['limit']:,}, target {c['target']:,}",
             f"compress: truncated {c['truncated']:,} outputs, masked {c['masked']:,}, archived "
             f"{s.get('messages', 0):,} messages ({s.get('archived_tokens', 0):,} tokens after "
             f"truncate and mask) into a {s.get('tokens', 0):,}-token summary; "
             f"{c['tokens_before']:,} → {c['tokens_after']:,} tokens, "
             f"{c['out_bytes'] / MB:.1f} MB written; of the call, planning took "
             f"{c['planned']:.2f} s and writing {c['seconds'] - c['planned']:.2f} s", "",
             f"best of {len(rounds)} round(s); call = the library call timed inside the child, "
             "wall = the child process; tree PSS from one more run of each, sampled (sampling "
             "slows a run)",
             f"  {'run':<38} {'call':>9} {'wall':>9} {'CPU':>9} {'max RSS':>10} {'/in':>5} "
             f"{'tree PSS':>10} {'/in':>5}",
             speed_row("floor", floor, size, pss["floor"])]
    lines += [speed_row(k, best[k], size, pss[k])
              for k in ("stats", "stats-cache", "compress", "compress-base", "restore")
              if k in best]
    return lines + speed_verdicts(best, rounds, size, floor, pss["compress"] * MB / size)


def speed_verdicts(best: dict[str, Timed], rounds: list[dict[str, Timed]], size: float,
                   floor: Timed, pss: float) -> list[str]:
    def ratio(r: dict[str, Timed], base: str) -> float:
        return r["compress"].call / r[base].call

    def each(base: str) -> str:
        ratios = [ratio(r, base) for r in rounds]
        listed = ", ".join(f"{x:.2f}x" for x in ratios)
        return f"{listed}; median {statistics.median(ratios):.2f}x" if len(ratios) > 2 else listed

    wall = best["compress"].run.seconds / best["stats"].run.seconds
    time_ok = ratio(best, "stats") <= BAR_TIME
    rss = best["compress"].run.max_rss_mb * MB / size
    rss_above = (best["compress"].run.max_rss_mb - floor.run.max_rss_mb) * MB / size
    stats_above = (best["stats"].run.max_rss_mb - floor.run.max_rss_mb) * MB / size
    mem_ok = max(rss, pss) <= BAR_MEMORY
    back = best["restore"]
    assert back.out["out_bytes"] == size, "restore did not give the input's size back"
    base = []
    if "compress-base" in best:
        ratios = [r["compress"].call / r["compress-base"].call for r in rounds]
        base = [f"--base's compress / stats: best "
                f"{best['compress-base'].call / best['stats'].call:.2f}x; this tree's compress / "
                f"--base's, round by round: {', '.join(f'{x:.2f}x' for x in ratios)}; median "
                f"{statistics.median(ratios):.2f}x"]
    return [f"compress / stats (cache=False), call time: best {ratio(best, 'stats'):.2f}x "
            f"(round by round {each('stats')}); wall {wall:.2f}x", *base,
            f"compress / stats (empty cache, the cache work compress also does): best "
            f"{ratio(best, 'stats-cache'):.2f}x (round by round {each('stats-cache')})",
            f"compress peak memory: largest process {rss:.2f}x the input, whole tree (PSS) "
            f"{pss:.2f}x; above the floor's {floor.run.max_rss_mb:.0f} MB: {rss_above:.2f}x "
            f"(stats: {stats_above:.2f}x)",
            f"restore of compress's output: {back.call:.2f} s "
            f"({back.call / best['stats'].call:.2f}x stats), largest process "
            f"{back.run.max_rss_mb * MB / size:.2f}x the original it gives back", "",
            f"target: compress at most {BAR_TIME:g}x the time of stats: "
            f"{'met' if time_ok else 'MISSED'}",
            f"target: compress peak memory within {BAR_MEMORY:g}x the input size: "
            f"{'met' if mem_ok else 'MISSED'}"]


def run_speed(args: argparse.Namespace) -> list[str]:
    path, meta = make_transcript.ensure(args.size_mb, args.seed, args.format)
    floor = timed("floor", path)
    with tempfile.TemporaryDirectory() as folder:
        compressed = Path(folder) / "compressed.jsonl"
        rounds = [speed_round(path, args.budget, compressed) for _ in range(args.repeat)]
        budget = args.budget or rounds[0]["stats"].out["tokens"] // 2
        pss = {k: timed(k, compressed if k == "restore" else path, budget,
                        sample=True).run.tree_pss_mb for k in rounds[0]} \
            | {"floor": timed("floor", path, sample=True).run.tree_pss_mb}
    return speed_lines(path, meta, rounds, floor, pss)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", action="store_true", help="only the corpus part")
    parser.add_argument("--speed", action="store_true", help="only the big-file part")
    parser.add_argument("--seen-only", action="store_true",
                        help="--quality: only what the model sees, not the summary ladder")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help=f"holds {', '.join(FORMATS)} folders (default: %(default)s)")
    parser.add_argument("--strategies", default="extractive",
                        help="comma-separated: extractive,structured")
    parser.add_argument("--show-dropped", type=int, default=0, metavar="N",
                        help="under each file that misses the bar, N dropped facts of each kind")
    parser.add_argument("--size-mb", type=float, default=210)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--format", choices=("openai", "claude-code"), default="openai")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each counts")
    parser.add_argument("--budget", type=int, default=0,
                        help="compress budget for --speed (default: half the file's tokens)")
    parser.add_argument("--base", metavar="COMMIT",
                        help="--speed: also time compress as COMMIT had it, round by round")
    parser.add_argument("--child", choices=tuple(NAMES), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--keep", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.file, args.budget, args.keep)))
        return 0
    both = not (args.quality or args.speed)
    if args.quality or both:
        with tempfile.TemporaryDirectory() as cache:  # counts stay out of the user's cache
            saved = os.environ.get("CTXPACK_CACHE_DIR")
            os.environ["CTXPACK_CACHE_DIR"] = cache
            try:
                print("\n".join(run_quality(args)), flush=True)
            finally:
                os.environ.pop("CTXPACK_CACHE_DIR")
                if saved is not None:
                    os.environ["CTXPACK_CACHE_DIR"] = saved
    if args.speed or both:
        if both:
            print()
        with tempfile.TemporaryDirectory() as folder:
            if args.base:
                global BASE
                from identity import export

                BASE = Path(folder) / "base"
                export(args.base, BASE)
            print("\n".join(run_speed(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
