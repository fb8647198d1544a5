"""Measure `ctxpack.Context` in an agent loop, against the file API in the same run.

The conversation: a real Codex session of the corpus (rtchess, gpt-5.1-codex-max building a
chess variant), as Chat Completions messages (`ctxpack.request_bodies`), cut at the last
step that starts under 77,000 tokens.

1. Compress, warm: at budgets 20,000 and 40,000, `Context.compress()` of a Context holding
   the conversation, in a process that compressed it before (the tokenizer loaded, the
   outputs' facts remembered: a loop that compresses again, or rewinds and goes on); the
   first compress of the process is shown apart. The baseline is the library's file
   API, `ctxpack.compress(messages, budget=...)`, its second call in the process (its
   counts and facts found anew on each call). Target 150 ms.
2. Per append: what `Context.append` costs a message (counted anew: a fresh Context, whose
   token counter has not seen it), mean and worst. Target 5 ms.
3. Replay: the whole session appended message by message, compressed whenever
   `needs_compress` says so, and at every model call (before each assistant message) the
   prompt compared with the one before: does it start with it, byte for byte (the
   provider's prompt cache then keeps working)? The baseline is a window that drops the
   oldest messages (after the system prompt) to stay under the budget. `compressing`:
   the time of the replay's compressions (CPU time with --cpu), and the slowest.

    PYTHONPATH=. python bench/bench_loop.py --repeat 5 [--cpu]

On a loaded machine, `--cpu` times compress and append by this process's CPU time (it
runs on one thread: only the waits of a busy machine are left out).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSION = Path("corpus") / "codex" / "rtchess__exported-session.jsonl"
TOKENS = 77_000
BUDGETS = (20_000, 40_000)
MODEL = "gpt-4o"


def conversation(shared: Path) -> list[dict[str, Any]]:
    import ctxpack

    return ctxpack.request_bodies(ctxpack.load(shared / SESSION), "openai")[0]["messages"]


def first_tokens(messages: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """The messages before the last step (an assistant message after one that is not)
    that starts under `most` tokens."""
    from ctxpack import Context

    ctx = Context(MODEL)
    cut = 0
    for i, m in enumerate(messages):
        if ctx.tokens > most:
            break
        if m["role"] == "assistant" and i and messages[i - 1]["role"] != "assistant":
            cut = i
        ctx.append(m)
    return messages[:cut]


def best(times: list[float]) -> float:
    return min(times) * 1000


def compress_warm(messages: list[dict[str, Any]], repeat: int) -> list[dict[str, Any]]:
    import ctxpack
    from ctxpack import Context

    rows = []
    for budget in BUDGETS:
        _timed_context(messages, budget)  # once, not timed
        loop = [_timed_context(messages, budget) for _ in range(repeat)]
        ctxpack.compress(messages, model=MODEL, budget=budget)
        files = [_timed(lambda b=budget: ctxpack.compress(messages, model=MODEL, budget=b))
                 for _ in range(repeat)]
        out, report = ctxpack.compress(messages, model=MODEL, budget=budget)
        ctx = Context(MODEL, budget)
        ctx.extend(messages)
        ctx.compress()
        assert ctx.messages == out, "the loop API keeps what the file API keeps"
        rows.append({"budget": budget, "loop_ms": best(loop),
                     "loop_median_ms": statistics.median(loop) * 1000, "file_ms": best(files),
                     "file_median_ms": statistics.median(files) * 1000,
                     "tokens_after": report.tokens_after})
    return rows


def _timed_context(messages: list[dict[str, Any]], budget: int) -> float:
    from ctxpack import Context

    ctx = Context(MODEL, budget)
    ctx.extend(messages)
    return _timed(ctx.compress)


def _timed(fn: Any) -> float:
    """Seconds `fn()` took: wall time, or with --cpu this process's CPU time (free of
    what other processes of a loaded machine take from it)."""
    clock = time.process_time if CPU else time.perf_counter
    start = clock()
    fn()
    return clock() - start


CPU = False


def per_append(messages: list[dict[str, Any]]) -> dict[str, float]:
    from ctxpack import Context

    ctx = Context(MODEL, 20_000)
    ctx.append(messages[0])  # the tokenizer loaded
    times, sizes = [], []
    for m in messages[1:]:
        tokens = ctx.tokens
        times.append(_timed(lambda m=m: ctx.append(m)))
        sizes.append(ctx.tokens - tokens)
    worst = max(range(len(times)), key=times.__getitem__)
    return {"messages": len(times), "mean_ms": statistics.mean(times) * 1000,
            "worst_ms": times[worst] * 1000, "worst_tokens": sizes[worst],
            "p99_ms": sorted(times)[int(len(times) * 0.99)] * 1000,
            "under_5ms": sum(t <= 0.005 for t in times),
            "tokens_per_ms": sum(sizes) / (sum(times) * 1000)}


def replay(messages: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """Model calls whose prompt starts with the prompt before, in a loop on a Context and
    in a window dropping the oldest messages."""
    import orjson

    from ctxpack import Context

    ctx = Context(MODEL, budget)
    window: list[tuple[dict[str, Any], int]] = []  # (message, its tokens)
    turns = stable = window_stable = 0
    before = window_before = None
    compressing: list[float] = []  # each compress's time (CPU time with --cpu)
    start = time.perf_counter()
    for m in messages:
        if m["role"] == "assistant" and ctx.messages:  # the model is called here
            if ctx.needs_compress:
                compressing.append(_timed(ctx.compress))
            prompt = b"".join(orjson.dumps(x) for x in ctx.messages)
            sent = b"".join(orjson.dumps(x) for x, _ in window)
            if before is not None:
                turns += 1
                stable += prompt.startswith(before)
                window_stable += sent.startswith(window_before)
            before, window_before = prompt, sent
        tokens = ctx.tokens
        ctx.append(m)
        window.append((m, ctx.tokens - tokens))
        while sum(n for _, n in window) > budget and len(window) > 2:
            del window[1]  # the oldest after the system prompt
    return {"budget": budget, "messages": len(messages), "calls": turns, "stable": stable,
            "compressions": sum(e.kind == "compress" for e in ctx.history),
            "window_stable": window_stable, "seconds": time.perf_counter() - start,
            "compress_s": sum(compressing), "slowest_ms": max(compressing, default=0) * 1000,
            "restored": ctx.restore() == messages}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared",
                        help="the folder holding corpus/")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu", action="store_true",
                        help="time by this process's CPU time instead of the wall clock")
    args = parser.parse_args(argv)
    global CPU
    CPU = args.cpu
    if not (args.shared / SESSION).is_file():
        print(f"the corpus session {SESSION} is not under {args.shared}", file=sys.stderr)
        return 2
    from ctxpack import Context

    whole = conversation(args.shared)
    messages = first_tokens(whole, TOKENS)
    ctx = Context(MODEL)
    ctx.extend(messages)
    print(f"conversation: {len(messages)} messages, {ctx.tokens:,} tokens "
          f"(of {len(whole)} in the session)\n")
    print(f"the first compress of the process (budget {BUDGETS[0]:,}): "
          f"{_timed_context(messages, BUDGETS[0]) * 1000:.0f} ms\n")
    print(f"compress, warm (best of the repeats, median in brackets; "
          f"{'CPU' if CPU else 'wall'} time)")
    print(f"{'budget':>8} {'Context':>16} {'file API':>16} {'ratio':>6} "
          f"{'tokens after':>12}")
    for r in compress_warm(messages, args.repeat):
        print(f"{r['budget']:>8,} {r['loop_ms']:>6.0f}ms "
              f"({r['loop_median_ms']:>4.0f}ms) {r['file_ms']:>6.0f}ms "
              f"({r['file_median_ms']:>4.0f}ms) {r['file_ms'] / r['loop_ms']:>5.1f}x "
              f"{r['tokens_after']:>12,}")
    a = per_append(messages)
    print(f"\nper append ({a['messages']} messages, each counted anew): mean "
          f"{a['mean_ms']:.2f} ms, p99 {a['p99_ms']:.2f} ms, worst {a['worst_ms']:.2f} ms "
          f"(a message of {a['worst_tokens']:,} tokens); {a['under_5ms']} of "
          f"{a['messages']} within 5 ms; {a['tokens_per_ms']:,.0f} tokens a ms")
    print(f"\nreplay of the whole session ({len(whole)} messages), model calls whose prompt "
          "starts with the one before")
    print(f"{'budget':>8} {'calls':>6} {'Context':>10} {'compressions':>12} "
          f"{'drop-oldest':>12} {'seconds':>8} {'restore':>8} {'compressing':>12} "
          f"{'slowest':>8}")
    for budget in BUDGETS:
        r = replay(whole, budget)
        print(f"{budget:>8,} {r['calls']:>6} {r['stable']:>10} {r['compressions']:>12} "
              f"{r['window_stable']:>12} {r['seconds']:>8.1f} "
              f"{'exact' if r['restored'] else 'DIFFERS':>8} {r['compress_s']:>11.2f}s "
              f"{r['slowest_ms']:>6.0f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
