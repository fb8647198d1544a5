"""Test helpers: the real command line in a subprocess, checks shared by format tests, the
usage a real Claude Code session records, and the benchmark's transcript generator."""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import os
import subprocess
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxpack.transcript import Message

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def bench_module(name: str) -> types.ModuleType:
    """bench/NAME.py (bench/ is not a package), imported once."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def bench_generator() -> types.ModuleType:
    """bench/make_transcript.py: big transcripts, made alike."""
    return bench_module("make_transcript")


@dataclass
class Run:
    code: int
    out: str
    err: str


def ctxpack(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None,
            cwd: str | None = None) -> Run:
    """Run `python -m ctxpack ARGS` and capture everything."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run([sys.executable, "-m", "ctxpack", *args], input=data,
                          capture_output=True, env=full_env, cwd=cwd, timeout=300)
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))


def assert_clean_error(run: Run, code: int, *fragments: str) -> None:
    """One-line error, the documented exit code, no traceback."""
    assert run.code == code, (run.code, run.out, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1, run.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def said(err: str) -> list[str]:
    """The lines a command wrote to stderr, but the warning that its counts are estimated
    (a machine without tiktoken's files says so wherever it counts)."""
    from ctxpack.tokens import ESTIMATE_NOTE

    return [line for line in err.splitlines() if line.strip() and ESTIMATE_NOTE not in line]


def records_of(path: Path) -> list[dict[str, Any]]:
    """Every JSON record of a JSONL file, read independently of ctxpack."""
    with path.open("rb") as f:
        return [json.loads(raw) for raw in f if raw.strip()]


def assert_tool_pairs(messages: Sequence[Message]) -> None:
    """Every result answers an earlier call, and every call is answered."""
    seen: set[str | None] = set()
    answered: set[str | None] = set()
    for m in messages:
        for r in m.tool_results:
            assert r.call_id in seen, f"line {m.line}: result for unknown call {r.call_id}"
            answered.add(r.call_id)
        seen.update(c.id for c in m.tool_calls)
    assert seen <= answered, f"calls without results: {seen - answered}"


def with_real_usage(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code `records` (a copy), each API response written without usage given the
    usage a real session records for it: a prompt of what the agent sends besides the
    messages (the format's unlogged figure, as the table has it) plus the model's slope ×
    ctxpack's count of the messages before the reply, in the file as it stood when the
    reply was written; as output, the slope × the reply's count. Every piece of one
    response carries its usage. Usage given is kept (tests of how a reader tallies it)."""
    from ctxpack.calibration import UNLOGGED, prompt_sizes, slope_of
    from ctxpack.loader import load
    from ctxpack.tokens import TokenCounter
    from ctxpack.transcript import RecordedCall

    out = json.loads(json.dumps(list(records)))
    given: dict[str, dict[str, int]] = {}
    sent = 0  # the last prompt, read from the cache by the next call
    for k, record in enumerate(out):
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict) \
                or "usage" in message:
            continue
        if message["id"] in given:
            message["usage"] = dict(given[message["id"]])
            continue
        t = load(io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in out[:k + 1])),
                 "claude-code")
        # the reply is the last message of its chain: the context, or a sub-agent's
        chain = next(c for c in (t.messages, t.sidechain, t.outside)
                     if any(m.id == message["id"] for m in c))
        reply = next(i for i, m in enumerate(chain) if m.id == message["id"])
        model = message.get("model")
        counter, slope = TokenCounter(model), slope_of(model)
        (counted,) = prompt_sizes(replace(t, messages=chain, calls=()),
                                  [RecordedCall(reply, 1, None, model)], counter, model)
        prompt = UNLOGGED["claude-code"] + round(slope * counted)
        read = sent if sent + 3 <= prompt else 0
        given[message["id"]] = message["usage"] = {
            "input_tokens": 3, "cache_creation_input_tokens": prompt - 3 - read,
            "cache_read_input_tokens": read,
            "output_tokens": round(slope * counter.message(chain[reply]).total)}
        sent = prompt
    return out
