"""What the real Claude Code and Codex CLIs send when they resume a session, before and
after `ctxpack compress`.

For each corpus session of the two agents that compress can summarize (with a budget of
at most `--budget`, 55,000 billed tokens by default, and under what masking alone leaves, as the
agents tests compress), the CLI resumes the original and
then the compressed file, each under a temporary home, against the test suite's mock
provider on 127.0.0.1 (tests/agent_provider.py), with the CLI's default settings; the
provider records the request. The table gives, per session: the model requests the
resume made (more than one: the CLI compacted the session itself first; "failed": the
mock provider does not answer a compaction, so the CLI gave up), the bytes of the largest
request and the messages (Claude Code) or input items (Codex) it held, and the ratio
after/before. With `--low`, the low auto-compact thresholds of the tests
(CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50, model_auto_compact_token_limit=60000).

The CLIs come from PATH or the checkout's .agents/ folder (`npm install --prefix .agents
@anthropic-ai/claude-code @openai/codex`); the corpus from ../shared/corpus.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ctxpack.compression import compress_file  # noqa: E402
from ctxpack.compression.settings import Options  # noqa: E402
from ctxpack.errors import CannotFit  # noqa: E402
from tests.agent_provider import (  # noqa: E402
    Run,
    claude_resume,
    codex_resume,
    find,
    version,
)
from tests.helpers import CORPUS  # noqa: E402


def summarized(path: Path, most: int) -> tuple[int, bytes] | None:
    """The budget and output of a compress with a summary: under `most` and under what
    masking alone leaves (3/4 of it, else 9/10), as the agents tests compress."""
    # what masking alone leaves, in the billed tokens a budget is given in
    left = compress_file(path, Options(summarize=False)).report.billed["tokens_after"]
    for budget in (min(most, left * 3 // 4), min(most, left * 9 // 10)):
        try:
            data = compress_file(path, Options(budget=max(budget, 1))).data
        except CannotFit:
            continue
        if b'"archived_summary"' in data:
            return budget, data
    return None


def measure(run: Run, agent: str) -> dict[str, Any]:
    bodies = run.provider.messages if agent == "claude" else run.provider.responses
    if run.code != 0 and not bodies:
        return {"requests": 0, "bytes": 0, "items": 0, "failed": True}
    # the largest: where the CLI compacted first, the request that sent it the history
    size, n = max((size, n) for n, size in enumerate(run.provider.sizes))
    items = bodies[n].get("messages") if agent == "claude" else bodies[n].get("input")
    return {"requests": len(bodies), "bytes": size, "items": len(items or []),
            "failed": run.code != 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=55_000)
    parser.add_argument("--low", action="store_true", help="the tests' low thresholds")
    args = parser.parse_args()
    clis = {name: find(name) for name in ("claude", "codex")}
    missing = [n for n, c in clis.items() if c is None]
    if missing:
        raise SystemExit(f"not found: {', '.join(missing)} (npm install --prefix .agents "
                         "@anthropic-ai/claude-code @openai/codex)")
    for name, cli in clis.items():
        print(f"{name}: {version(cli)}")
    env = {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"} if args.low else {}
    options = ("-c", "model_auto_compact_token_limit=60000") if args.low else ()
    print(f"\ncompress --budget (at most {args.budget:,}); "
          f"{'low thresholds' if args.low else 'default settings'}\n")
    print("| session | CLI | --budget | requests before | request before | requests after "
          "| request after | after/before |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CTXPACK_CACHE_DIR"] = str(Path(tmp) / "cache")
        n = 0
        for agent, folder in (("claude", "claude-code"), ("codex", "codex")):
            for path in sorted((CORPUS / folder).glob("*.jsonl")):
                if "__subagents__" in path.name or "SYNTHETIC" in path.name:
                    continue
                done = summarized(path, args.budget)
                if done is None:
                    continue
                budget, data = done
                row = []
                for given in (path.read_bytes(), data):
                    n += 1
                    where = Path(tmp) / str(n)
                    run = claude_resume(clis[agent], given, where, env=env) \
                        if agent == "claude" else codex_resume(clis[agent], given, where,
                                                               *options)
                    row.append(measure(run, agent))
                before, after = row
                unit = "messages" if agent == "claude" else "items"

                def cell(m: dict[str, Any], unit: str = unit) -> str:
                    failed = " (failed)" if m["failed"] else ""
                    return f"{m['bytes'] / 1000:,.0f} KB / {m['items']} {unit}{failed}"

                ratio = after["bytes"] / before["bytes"] if before["bytes"] else float("nan")
                print(f"| {path.name} | {agent} | {budget:,} | {before['requests']} | "
                      f"{cell(before)} | "
                      f"{after['requests']} | {cell(after)} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
