"""Transcripts made for the compress tests, and what the tests read back of an output.

Budgets are never numbers found by hand: they are shares of what a transcript counts
(`tokens`, or `fitted` after truncation and masking), so that every test means the same
on tiktoken's exact counts and on the estimating counter of a machine without them.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson

from ctxpack.compression import compress_file
from ctxpack.compression.plan import Plan
from ctxpack.compression.reading import of_transcript
from ctxpack.compression.settings import Options
from ctxpack.loader import load
from ctxpack.models import TABLE
from ctxpack.transcript import SUMMARY_HEADING, Transcript

Source = Path | bytes


def agent_run(steps: int, task_words: int = 40, reuse_ids: bool = False) -> bytes:
    """A Chat Completions run: a task, then `steps` bash steps whose outputs hold facts."""
    lines: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing build. " + "Details follow. " * task_words}]
    for k in range(steps):
        call_id = f"call_{k % 3 if reuse_ids else k}"
        arguments = orjson.dumps({"command": f"make target_{k}"}).decode()
        lines.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": arguments}}]})
        lines.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(
            [f"building src/pkg_{k}/main_{k}.c", f"see https://ci.example.org/runs/{k}",
             *(f"cc -O2 -c unit_{k}_{j}.c" for j in range(12)), f"error: step {k} failed"])})
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def opened(source: Source) -> Any:
    return io.BytesIO(source) if isinstance(source, bytes) else source


def tokens(source: Source) -> int:
    """The prompt's tokens as compress counts them (as `stats` does)."""
    return compress_file(opened(source), Options(truncate=False, mask=False,
                                                 summarize=False)).report.tokens_after


def billed(source: Source, counted: int) -> int:
    """The budget, in the billed tokens compress takes, that leaves the messages of
    `source` `counted` tokens of ctxpack's count (the same figure where the count is
    exact and the file holds the whole prompt; see Input.bill)."""
    return of_transcript(load(opened(source)), None, TABLE, cache=False).bill(counted)


def fitted(source: Source, **settings: Any) -> int:
    """The tokens left once truncation and masking (at their defaults, or `settings`) did
    all they could, as they do under a budget no masking can meet: a budget below this
    needs a summary."""
    from ctxpack.compression.pipeline import stages
    from ctxpack.compression.plan import apply

    options = Options(**{"summarize": False, **settings, "budget": 1})
    plan = plan_of(source, options)
    for stage in stages(options):
        plan = apply(plan, stage.run(plan))
    return plan.total


def squeezed(source: Source, **settings: Any) -> Options:
    """Settings under which masking masks all it may: a budget one token under what
    truncation (as `settings` have it) leaves, and a target no masking reaches."""
    cut = fitted(source, **{**settings, "mask": False})
    return Options(**{"budget": cut - 1, "target": 1, **settings})


def plan_of(source: Source, options: Options | None = None, model: str | None = None) -> Plan:
    """The empty plan of a transcript, for a stage to be called on alone."""
    t = load(opened(source))
    return Plan(of_transcript(t, model, TABLE, cache=False), options or Options())


def records(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def summary_texts(t: Transcript) -> list[str]:
    return [p.text for m in t.messages for p in m.parts
            if getattr(p, "text", "").startswith(SUMMARY_HEADING)]
