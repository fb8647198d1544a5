"""Test helpers: the real command line in a subprocess, checks shared by format tests, the
usage a real Claude Code session records, and the benchmark's transcript generator."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ctxpack.transcript import Message

ROOT = Path(__file__).resolve().parent.parent
# the real transcripts of others, beside the checkout unless CTXPACK_SHARED says where
SHARED = Path(os.environ.get("CTXPACK_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"


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


def leaves(value: Any) -> Iterator[Any]:
    """Every value of a JSON value that is no object or array, at any depth."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    else:
        yield value


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, at any depth (its keys left out)."""
    return (v for v in leaves(value) if isinstance(v, str))


def corpus_strings(folder: Path) -> list[str]:
    """Every string of every transcript below `folder` (none where it is absent): JSONL
    files line by line, JSON files whole; a line or file that is not JSON is passed over."""
    out: list[str] = []
    for path in sorted([*folder.rglob("*.jsonl"), *folder.rglob("*.json")]):
        data = path.read_bytes()
        for raw in [data] if path.suffix == ".json" else data.splitlines():
            try:
                out.extend(strings(orjson.loads(raw)))
            except orjson.JSONDecodeError:
                continue
    return out


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


# The agent the Claude Code fixtures stand for, as the corpus measured Claude Code (see
# BENCHMARKS.md): what it sends besides the messages (system prompt, tool definitions), and
# its tokens per cl100k_base token, by model (any other: FIXTURE_SLOPE). Stated here, so
# that the usage a fixture records does not come from the code it tests.
FIXTURE_UNLOGGED = 25_000
FIXTURE_SLOPE = 1.21
FIXTURE_SLOPES = {"claude-haiku-4-5": 1.17, "claude-opus-4-5": 1.27, "claude-opus-4-7": 1.45}
# A message's framing (role, separators) and the reply's priming, in cl100k_base tokens
FRAMING, PRIMING = 3, 3


@functools.cache
def _cl100k() -> Any:
    """tiktoken's cl100k_base, or None where its file cannot be had (counts are then
    estimated at 4 characters a token, as ctxpack estimates them)."""
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001 - offline, no encoding file
        return None


def fixture_tokens(text: str) -> int:
    """cl100k_base's count of `text`, read with tiktoken directly."""
    enc = _cl100k()
    return len(enc.encode(text, disallowed_special=())) if enc else (len(text) + 3) // 4


def _texts(value: Any) -> list[str]:
    """What the model reads of a Claude Code message's content or an attachment: every
    text, thinking, tool input (as JSON), tool name and result; images not counted."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if not isinstance(value, dict):
        return []
    kind = value.get("type")
    if kind == "tool_use":
        return [str(value.get("name", "")), json.dumps(value.get("input"))]
    if kind == "image":
        return []
    return [t for k, v in value.items() if k not in ("type", "id", "tool_use_id", "signature")
            for t in _texts(v)]


def _message(record: dict[str, Any]) -> dict[str, Any]:
    message = record.get("message")
    return message if isinstance(message, dict) else {}


def _seen(record: dict[str, Any]) -> int:
    """cl100k_base tokens of what one user, assistant or attachment record sends."""
    content = _message(record).get("content") if "message" in record \
        else record.get("attachment")
    return FRAMING + sum(fixture_tokens(t) for t in _texts(content))


def _prompt(records: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The records the call whose reply is `records[k]` was sent, in file order: its chain
    back by `parentUuid` (to the file's start or a compaction), the other pieces of each
    response on it (parallel calls share a `message.id`) and the results of their calls."""
    before = records[:k]
    by_uuid = {r["uuid"]: r for r in before if isinstance(r.get("uuid"), str)}
    on: set[str] = set()
    at = records[k].get("parentUuid")
    while isinstance(at, str) and at in by_uuid and at not in on:
        on.add(at)
        at = by_uuid[at].get("parentUuid")
    ids = {_message(by_uuid[u]).get("id") for u in on if by_uuid[u].get("type") == "assistant"}
    pieces = {id(r): r for r in before
              if r.get("type") == "assistant" and _message(r).get("id") in ids - {None}}
    asked = {b.get("id") for r in pieces.values() for b in _message(r).get("content") or []
             if isinstance(b, dict) and b.get("type") == "tool_use"}

    def answers(r: dict[str, Any]) -> bool:
        content = _message(r).get("content") if r.get("type") == "user" else None
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("tool_use_id") in asked for b in content)

    return [r for r in before if r.get("type") in ("user", "assistant", "attachment")
            and (r.get("uuid") in on or id(r) in pieces or answers(r))]


def with_real_usage(records: Sequence[dict[str, Any]], slope: float | None = None
                    ) -> list[dict[str, Any]]:
    """Claude Code `records` (a copy), each API response written without usage given the
    usage a real session records for it: a prompt of what the agent sends besides the
    messages (FIXTURE_UNLOGGED) plus the model's slope (FIXTURE_SLOPES) × tiktoken's
    cl100k_base count of the messages the call was sent (see `_prompt`), each with its
    framing, and the reply's priming; as output, the slope × the reply's count. Every
    piece of one response carries its usage, and the prompt cache holds the call before.
    Usage given is kept (tests of how a reader tallies it). `slope`: that slope for every
    model instead (usage no model has, say)."""
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
        rate = slope or FIXTURE_SLOPES.get(message.get("model"), FIXTURE_SLOPE)
        counted = sum(map(_seen, _prompt(out, k))) + PRIMING
        prompt = FIXTURE_UNLOGGED + round(rate * counted)
        read = sent if sent + 3 <= prompt else 0
        given[message["id"]] = message["usage"] = {
            "input_tokens": 3, "cache_creation_input_tokens": prompt - 3 - read,
            "cache_read_input_tokens": read, "output_tokens": round(rate * _seen(record))}
        sent = prompt
    return out


def unnamed_openhands() -> str:
    """The OpenHands sample with every `model` it names taken out (a format that assumes
    no model)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "model"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    lines = (ROOT / "samples" / "openhands" / "env-flags.openhands.jsonl").read_text().splitlines()
    return "".join(json.dumps(strip(json.loads(line))) + "\n" for line in lines if line.strip())


def person_after_results(joined: bool) -> list[dict]:
    """The multi-round sample with the person's words after each tool result: sent in the
    result's message (as the Messages API's alternation makes an agent send them), or as
    a message of their own."""
    out: list[dict] = []
    said = 0
    for line in (ROOT / "samples" / "multi-round.anthropic.jsonl").read_text().splitlines():
        record = json.loads(line)
        out.append(record)
        content = record["content"]
        if isinstance(content, list) and content[0]["type"] == "tool_result":
            said += 1
            words = {"type": "text", "text": f"Good. Now step {said}, please."}
            if joined:
                out[-1] = {**record, "content": [*content, words]}
            else:
                out.append({"role": "user", "content": [words]})
    return out
