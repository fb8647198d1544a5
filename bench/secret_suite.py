"""How much of the planted-secret suite `ctxpack.redact` catches, and what it redacts in
real transcripts.

The suite (tests/secrets_suite.py) holds synthetic secrets of many kinds, each in the
text it turns up in; a secret counts as caught when no piece of it is left. Each is
tried as it is and inside JSON text (a tool call's arguments, where a newline is `\\n`).
`--corpus` runs redaction over every string of the corpus transcripts and lists what
fired, by kind, each value shortened to its first characters and its length, to be
sorted by hand into secrets and false alarms.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_redact import CORPUS  # noqa: E402
from ctxpack.redact import redact  # noqa: E402
from tests.helpers import corpus_strings  # noqa: E402
from tests.secrets_suite import ACCEPTED_MISSES, SUITE, found_values, leaks  # noqa: E402


def suite() -> None:
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    missed = []
    for planted in SUITE:
        out, _ = redact(planted.text)
        escaped = json.dumps({"content": planted.text})
        out_json, _ = redact(escaped)
        caught = not leaks(planted.secret, out, planted.text)
        caught_json = not (leaks(planted.secret, out_json, escaped)
                           and leaks(json.dumps(planted.secret)[1:-1], out_json, escaped))
        row = per_kind[planted.kind]
        row[0] += caught
        row[1] += caught_json
        row[2] += 1
        if not caught:
            missed.append(f"{planted.kind} ({planted.form})"
                          + (" [accepted]" if (planted.kind, planted.form) in ACCEPTED_MISSES
                             else ""))
    width = max(map(len, per_kind))
    print(f"{'kind':{width}}  caught  in JSON  of")
    for kind, (caught, caught_json, total) in sorted(per_kind.items()):
        print(f"{kind:{width}}  {caught:6}  {caught_json:7}  {total:2}")
    caught = sum(r[0] for r in per_kind.values())
    caught_json = sum(r[1] for r in per_kind.values())
    total = len(SUITE)
    whole = sum(r[0] == r[2] for r in per_kind.values())
    print(f"\n{caught}/{total} caught ({caught / total:.1%}); in JSON text {caught_json}/{total} "
          f"({caught_json / total:.1%}); {whole} of {len(per_kind)} kinds whole")
    if missed:
        print("missed: " + "; ".join(missed))


def corpus(show: int) -> None:
    items = corpus_strings(CORPUS)
    if not items:
        raise SystemExit(f"no text found: the corpus is in {CORPUS}")
    counts: Counter[str] = Counter()
    seen: dict[str, list[str]] = defaultdict(list)
    for text in items:
        out, found = redact(text)
        if not found:
            continue
        counts.update(found)
        for kind, value in found_values(text, out):
            seen[kind].append(value)
    size = sum(map(len, items)) / 1e6
    print(f"{len(items):,} strings, {size:.1f} MB: {sum(counts.values())} redactions")
    for kind, n in counts.most_common():
        shown = ", ".join(f"{v[:show]}…({len(v)})" for v in sorted(set(seen[kind]))[:12])
        print(f"  {kind:16} {n:4}  {len(set(seen[kind])):4} distinct  {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="store_true",
                        help="list what fires in the corpus transcripts instead")
    parser.add_argument("--show", type=int, default=4,
                        help="how many characters of each value --corpus shows")
    args = parser.parse_args()
    corpus(args.show) if args.corpus else suite()


if __name__ == "__main__":
    main()
