"""tiktoken against the accelerated tokenizer (the `fast` extra, bpe-openai) in one run.

1. Speed: the same texts counted by both, the time of each, their ratio, and any text
   they count differently. Texts: every message of samples/ and, where it is beside the
   checkout, of the shared corpus's Claude Code and Codex sessions.
2. Hand-over: what loading the accelerated one costs in a fresh process that has
   tiktoken's (import, tables, parity check), and the text over which that pays for
   itself at the speeds of (1): where `tokens.FAST_AFTER_CHARS` comes from.
3. Start-up: `ctxpack stats --no-cache` of a small sample and of the largest corpus file
   in fresh processes, counting with tiktoken only, with the accelerated one from the
   first text, and as ctxpack does (handing over after FAST_AFTER_CHARS); each time and
   its ratio against tiktoken only.
4. Long runs: texts with a run of more than 8,192 characters (`tokens.PIECE_LIMIT`),
   which ctxpack counts in parts cut between tiktoken's pieces, timed and counted
   beside tiktoken's own count of them whole.

    PYTHONPATH=. python bench/bench_tokenizer.py [--rounds N] [--encoding NAME]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.errors import CtxpackError  # noqa: E402
from ctxpack.loader import load  # noqa: E402
from ctxpack.tokens import FAST_AFTER_CHARS, accelerated, encode_count  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
SMALL = ROOT / "samples" / "coding-agent.claude-code.jsonl"

# A fresh process that has tiktoken's encoding times loading the accelerated one.
HAND_OVER = """
import sys, time, tiktoken
from ctxpack.tokens import accelerated
reference = tiktoken.get_encoding(sys.argv[1]); reference.encode_ordinary("warm")
start = time.perf_counter()
assert accelerated(sys.argv[1], reference) is not None
print(time.perf_counter() - start)
"""
# `ctxpack stats` with the hand-over set: {} never, None as shipped, else at once.
STATS = """
import sys
from ctxpack import tokens
policy = sys.argv.pop(1)
if policy == "tiktoken":
    tokens.FAST_AFTER_CHARS.clear()
elif policy == "at-once":
    tokens.FAST_AFTER_CHARS.update(dict.fromkeys(tokens.FAST_AFTER_CHARS, 0))
from ctxpack.cli import main
main()
"""


def texts() -> list[str]:
    paths = [*sorted((ROOT / "samples").glob("*.jsonl")),
             *sorted(p for d in ("claude-code", "codex") for p in (CORPUS / d).glob("*.jsonl"))]
    found: set[str] = set()
    for path in paths:
        try:
            found |= {m.text for m in load(path).messages if m.text}
        except CtxpackError:
            continue
    return sorted(found)


def timed(enc: object, corpus: list[str], rounds: int) -> tuple[float, list[int]]:
    best, counts = float("inf"), []
    for _ in range(rounds):
        start = time.perf_counter()
        counts = [encode_count(enc, t) for t in corpus]
        best = min(best, time.perf_counter() - start)
    return best, counts


def long_runs() -> dict[str, str]:
    """Texts of one long run each: of short pieces (exact), and one long piece (cut)."""
    rnd = random.Random(5)
    bits = ["function(a,b){return a+b}", "var q=[1,2,3];", "if(x.length>0){x.pop()}", "=>"]
    return {"digits 50k": "1234567890" * 5000,
            "minified code 80k": "".join(rnd.choice(bits) for _ in range(8000))[:80_000],
            "letters 1M (one piece)": "".join(rnd.choice("etaoinshrdlu")
                                              for _ in range(1_000_000)),
            "spaces 300k (one piece)": " " * 300_000}


def run(code: str, *args: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                          capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encoding", default="o200k_base")
    args = parser.parse_args()
    import tiktoken

    reference = tiktoken.get_encoding(args.encoding)
    fast = accelerated(args.encoding, reference)
    if fast is None:
        sys.exit("no accelerated tokenizer that passes parity is installed (pip install "
                 "'ctxpack[fast]')")
    corpus = texts()
    chars = sum(map(len, corpus))
    slow_s, slow = timed(reference, corpus, args.rounds)
    fast_s, quick = timed(fast, corpus, args.rounds)
    mismatches = sum(a != b for a, b in zip(slow, quick, strict=True))
    print(f"{len(corpus):,} texts, {chars:,} characters, {sum(slow):,} tokens "
          f"({args.encoding}), best of {args.rounds}")
    print(f"tiktoken     {slow_s:8.3f} s  {chars / slow_s / 1e6:6.2f} M chars/s")
    print(f"bpe-openai   {fast_s:8.3f} s  {chars / fast_s / 1e6:6.2f} M chars/s")
    print(f"ratio        {slow_s / fast_s:.2f}x; texts counted differently: {mismatches}")

    load_s = min(float(run(HAND_OVER, args.encoding)[1]) for _ in range(args.rounds))
    saved = (slow_s - fast_s) / chars  # seconds a character
    even = f"{load_s / saved / 1e6:,.1f} M characters" if saved > 0 else "never"
    shipped = FAST_AFTER_CHARS.get(args.encoding)
    print(f"hand-over    {load_s:8.3f} s to load it (best of {args.rounds}); it pays for "
          f"itself after {even} (shipped: "
          f"{'never' if shipped is None else f'{shipped / 1e6:,.1f} M'})")

    for what, text in long_runs().items():
        ours_s, (ours,) = timed(reference, [text], args.rounds)
        whole_s = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            try:
                whole = f"{len(reference.encode_ordinary(text)):9,} tokens"
            except BaseException as exc:  # noqa: BLE001 - a Rust panic is no Exception
                whole = f"fails ({type(exc).__name__})"
            whole_s = min(whole_s, time.perf_counter() - start)
        print(f"{what:24} ctxpack {ours_s * 1e3:7.1f} ms {ours:9,} tokens; tiktoken whole "
              f"{whole_s * 1e3:7.1f} ms {whole}")

    files = [SMALL, *sorted((CORPUS / "claude-code").glob("*.jsonl"),
                            key=lambda p: p.stat().st_size)[-1:]]
    model = "gpt-4o" if args.encoding == "o200k_base" else "gpt-4"
    for path in files:
        best = {}
        for _ in range(args.rounds):  # interleaved, so a busy spell falls on all three
            for policy in ("tiktoken", "at-once", "shipped"):
                took = run(STATS, policy, "stats", "--no-cache", "-m", model, str(path))[0]
                best[policy] = min(best.get(policy, took), took)
        base = best["tiktoken"]
        print(f"stats {path.name} ({path.stat().st_size / 1e6:.2f} MB), best of "
              f"{args.rounds}: tiktoken {base:.2f} s; bpe-openai at once "
              f"{best['at-once']:.2f} s ({base / best['at-once']:.2f}x); as shipped "
              f"{best['shipped']:.2f} s ({base / best['shipped']:.2f}x)")


if __name__ == "__main__":
    main()
