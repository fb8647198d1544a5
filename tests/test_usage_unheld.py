"""Recorded usage nothing else in the file checks: a last call's reply, which no later
prompt resends, is held to its model's window; a part of a count to its whole; a null
count is no count; and what came after the last call widens the expected error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxpack.breakdown import stats
from ctxpack.calibration import CALIBRATED_ERROR
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack as run_ctxpack
from .test_window import large_session

CLAUDE = SAMPLES / "coding-agent.claude-code.jsonl"
CODEX = SAMPLES / "refactor.codex.jsonl"
PROMPT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def edited(source: Path, tmp_path: Path, mark: str, change: Callable[[dict], None]) -> tuple[
        Path, int, dict]:
    """`source` with its last line holding `mark` changed by `change` (given the record);
    the copy, that line's number and the record as changed."""
    lines = source.read_text().splitlines()
    at = max(n for n, text in enumerate(lines) if mark in text)
    record = json.loads(lines[at])
    change(record)
    lines[at] = json.dumps(record)
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n")
    return path, at + 1, record


def claude_usage(tmp_path: Path, **fields: int | None) -> tuple[Path, int, dict]:
    """The Claude Code sample, its last call's usage given `fields`."""
    return edited(CLAUDE, tmp_path, '"usage"',
                  lambda r: r["message"]["usage"].update(fields))


def codex_usage(tmp_path: Path, **fields: int | None) -> tuple[Path, int, dict]:
    """The Codex sample, its last call's `last_token_usage` given `fields`."""
    return edited(CODEX, tmp_path, '"last_token_usage"',
                  lambda r: r["payload"]["info"]["last_token_usage"].update(fields))


def prompt_of(usage: dict) -> int:
    return sum(usage.get(f) or 0 for f in PROMPT)


def test_a_last_reply_the_window_cannot_hold_after_its_prompt_is_set_aside(
        tmp_path: Path) -> None:
    honest = stats(CLAUDE, cache=False)
    assert honest.context is not None
    record = json.loads([t for t in CLAUDE.read_text().splitlines() if '"usage"' in t][-1])
    prompt = prompt_of(record["message"]["usage"])
    # the whole window, prompt and reply: a reply the model could have written
    path, _, _ = claude_usage(tmp_path, output_tokens=200_000 - prompt)
    assert run_ctxpack("validate", str(path)).code == 0
    # one token more: no call of the file shows the model served with a larger window
    path, line, _ = claude_usage(tmp_path, output_tokens=200_001 - prompt)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.startswith(
        f"{path}:{line}: recorded reply of {200_001 - prompt:,} tokens cannot be true: with "
        f"its prompt of {prompt:,} it is more than the 200,000-token window of "
        "claude-opus-4-6"), checked.out
    s = stats(path, cache=False)
    # the window is the model's, not grown to the call, and the bill anchors on the call
    # before it
    assert s.context_window == 200_000 and s.window_assumed is None
    assert s.context is not None and s.context.calls == honest.context.calls - 1
    assert abs(s.context.tokens - honest.context.tokens) < 0.01 * honest.context.tokens
    assert [x["line"] for x in s.set_aside] == [line]


def test_a_reply_a_larger_window_in_use_can_hold_is_believed(tmp_path: Path) -> None:
    # a prompt past the table's window shows the model served with more (Claude's 1M):
    # the reply after it is not judged by the table's window
    path = large_session(tmp_path, prompt=250_000, output=30_000)
    assert run_ctxpack("validate", str(path)).code == 0
    assert stats(path, cache=False).context_window == 280_000


X402 = CORPUS / "claude-code" / "privacy-x402__claude-session.jsonl"


@pytest.mark.skipif(not X402.exists(), reason="corpus not found beside the checkout")
def test_a_last_thinking_reply_stored_empty_is_counted_only_if_the_window_holds_it(
        tmp_path: Path) -> None:
    # opus-4-7 stores its thinking empty: the reply is counted at its recorded output,
    # which nothing after it checks; 150,000 cannot follow a prompt of its size
    honest = stats(X402, cache=False)
    path, _, record = edited(X402, tmp_path, '"usage"',
                             lambda r: r["message"]["usage"].update(output_tokens=150_000))
    # (its pieces, thinking first, each a line with the reply's usage: named at the first)
    pieces = [(n, json.loads(text)) for n, text in enumerate(path.read_text().splitlines(), 1)
              if record["message"]["id"] in text]
    assert any(b.get("type") == "thinking" and not b.get("thinking")
               for _, piece in pieces for b in piece["message"]["content"])
    line = pieces[0][0]
    assert f"{path}:{line}: recorded reply of 150,000" in run_ctxpack("validate", str(path)).out
    s = stats(path, cache=False)
    assert s.context is not None and honest.context is not None
    assert s.context_window == 200_000 and s.context.tokens < 0.5 * s.context_window
    assert s.context.tokens < honest.context.tokens * 1.05
    # compress has nothing to summarize below its trigger
    report = compress_file(path, Options(), cache=False).report
    assert report.context_window == 200_000 and report.summary is None


def test_codex_reasoning_more_than_the_output_it_is_part_of_is_set_aside(
        tmp_path: Path) -> None:
    honest = stats(CODEX, cache=False)
    path, line, record = codex_usage(tmp_path, reasoning_output_tokens=190_000)
    output = record["payload"]["info"]["last_token_usage"]["output_tokens"]
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and (
        f"{path}:{line}: recorded usage cannot be true: last_token_usage."
        f"reasoning_output_tokens 190,000 (more than the last_token_usage.output_tokens "
        f"{output:,} it is part of)") in checked.out
    s = stats(path, cache=False)
    assert s.context is not None and honest.context is not None
    assert s.context.calls == honest.context.calls - 1
    assert abs(s.context.tokens - honest.context.tokens) < 0.02 * honest.context.tokens


def test_a_null_prompt_count_leaves_the_call_out_and_is_named(tmp_path: Path) -> None:
    honest = stats(CLAUDE, cache=False)
    path, line, _ = claude_usage(tmp_path, input_tokens=None, cache_read_input_tokens=None)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.startswith(
        f"{path}:{line}: recorded usage with no prompt size: message.usage.input_tokens "
        "null, message.usage.cache_read_input_tokens null (a null is no count)")
    s = stats(path, cache=False)
    # not a call recording a prompt of what the other field says, passed over
    assert s.context is not None and honest.context is not None
    assert s.context.calls == honest.context.calls - 1 and not s.passed_over
    assert [x["line"] for x in s.unread] == [line]
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert f"recorded usage that cannot be read, not counted (`ctxpack validate` says why): " \
           f"line {line}" in said


def test_both_cache_counts_null_are_a_response_that_reported_no_cache(tmp_path: Path
                                                                     ) -> None:
    # as the Anthropic SDK dumps a response whose usage has no cache fields
    path, _, _ = claude_usage(tmp_path, input_tokens=73_000,
                                   cache_creation_input_tokens=None,
                                   cache_read_input_tokens=None)
    assert run_ctxpack("validate", str(path)).code == 0
    s = stats(path, cache=False)
    assert s.usage["last_input_tokens"] == 73_000 and not s.unread


def test_a_null_output_count_is_named_and_the_prompt_still_anchors(tmp_path: Path) -> None:
    honest = stats(CLAUDE, cache=False)
    path, line, _ = claude_usage(tmp_path, output_tokens=None)
    checked = run_ctxpack("validate", str(path))
    assert checked.out == (f"{path}:{line}: recorded usage with no output size: "
                           "message.usage.output_tokens null (a null is no count); the "
                           "reply's size is unknown\n")
    s = stats(path, cache=False)
    assert s.context is not None and honest.context is not None
    assert s.context.calls == honest.context.calls and not s.unread


def test_a_null_output_count_is_worded_alike_in_codex_and_claude_code(tmp_path: Path
                                                                      ) -> None:
    # one phrase for a reply's null count, whichever format wrote it: only the field's
    # name differs, and the call is kept in both (its prompt size is known)
    said = {}
    for name, (path, line, _) in (
            ("message.usage.", claude_usage(tmp_path, output_tokens=None)),
            ("last_token_usage.", codex_usage(tmp_path, output_tokens=None))):
        checked = run_ctxpack("validate", str(path))
        assert checked.code == 1, checked.out
        prefix = f"{path}:{line}: "
        assert checked.out.startswith(prefix) and checked.out.count("\n") == 1
        said[name] = checked.out[len(prefix):].replace(name, "")
    assert said["message.usage."] == said["last_token_usage."] == (
        "recorded usage with no output size: output_tokens null (a null is no count); the "
        "reply's size is unknown\n")
    honest, kept = stats(CODEX, cache=False), stats(path, cache=False)
    assert kept.context is not None and honest.context is not None
    assert kept.context.calls == honest.context.calls and not kept.unread


def test_a_codex_null_prompt_count_is_named(tmp_path: Path) -> None:
    honest = stats(CODEX, cache=False)
    path, line, _ = codex_usage(tmp_path, input_tokens=None)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out == (
        f"{path}:{line}: recorded usage with no prompt size: last_token_usage.input_tokens "
        "null (a null is no count); left out\n")
    s = stats(path, cache=False)
    assert s.context is not None and honest.context is not None
    assert s.context.calls == honest.context.calls - 1


def test_the_expected_error_grows_with_what_came_after_the_last_call(tmp_path: Path) -> None:
    honest = stats(CLAUDE, cache=False)
    lines = CLAUDE.read_text().splitlines()
    last = json.loads(lines[-1])
    words = " ".join(("invoice rounding test", "delta money ledger")[n % 2] for n in range(6_000))
    tail = {"parentUuid": last["uuid"], "isSidechain": False, "type": "user",
            "sessionId": last["sessionId"], "uuid": "tail-0001",
            "timestamp": last["timestamp"], "message": {"role": "user", "content": words}}
    path = tmp_path / "tail.jsonl"
    path.write_text("\n".join([*lines, json.dumps(tail)]) + "\n")
    s = stats(path, cache=False)
    assert s.context is not None and honest.context is not None
    assert s.context.kind == "anchored" and s.context.calls == honest.context.calls
    grown = s.context.tokens - honest.context.tokens
    assert grown > 15_000
    # the tail is counted, not recorded: the error covers a calibrated count's share of it
    assert s.context.error is not None and honest.context.error is not None
    assert s.context.error * s.context.tokens >= CALIBRATED_ERROR * grown
    assert s.context.error > 10 * honest.context.error
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert f"expected error ±{s.context.error:.1%})" in said
