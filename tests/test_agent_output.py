"""What an agent reads back from a compressed session of its own: Claude Code and Codex
resume from compress's output as from their own compaction, without compacting again.

Claude Code: the usage of kept assistant records states the smaller context (it compacts
when the last one is over its threshold), titles and the resume picker's records stay,
the boundary's `compactMetadata` says what was done. Codex: the events its session index
reads (the first `user_message`, the thread's name) stay, the last `turn_context` and a
fresh `token_count` follow the `compacted` line, later `token_count` events are restated.
And every output still restores byte for byte. (tests/test_agents.py runs the real CLIs.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.formats.claude_code import ClaudeCodeEditor
from ctxpack.formats.codex import CodexEditor
from ctxpack.undo import restore

from .compression.transcripts import billed, fitted
from .conftest import SAMPLES, corpus_params

CLAUDE_KEPT = ("ai-title", "custom-title", "summary", "last-prompt", "permission-mode")
CODEX_KEPT = ("user_message", "thread_name_updated", "thread_settings_applied")


def lines(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def bare(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "ctxpack"}


def summarized(path: Path) -> bytes:
    """`path` compressed with a summary: a budget under what masking leaves (the lowest
    of three that it fits), or skip."""
    left = billed(path, fitted(path))  # what masking leaves, in the billed tokens of a budget
    for share in (0.5, 0.75, 0.9):
        try:
            return compress_file(path, Options(budget=max(int(left * share), 1))).data
        except CannotFit as exc:
            why = exc
    pytest.skip(f"{path.name} cannot be summarized under {left} tokens: {why}")


def masked(path: Path) -> bytes:
    """`path` compressed by masking old outputs only (no summary)."""
    return compress_file(path, Options(summarize=False, keep_observations=1)).data


def newest(records: list[dict[str, Any]], kind: str, sub: bool = False) -> Any:
    found = [bare(r) for r in records
             if (r.get("payload", {}).get("type") if sub else r.get("type")) == kind]
    return found[-1] if found else None


def stated(records: list[dict[str, Any]], editor: Any) -> list[int]:
    """The context size each usage record states, in file order (sidechain records aside)."""
    return [n for r in records if not r.get("isSidechain")
            if (n := editor.recorded(r)) is not None]


def masked_restated(path: Path, editor: Any
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int], list[int]]:
    """`path` masked: its records before and after, and what each one's usage records
    state (`stated`); on the way, the output restores byte for byte, and its usage records
    are the same ones, none stating more."""
    data = masked(path)
    before, after = lines(path.read_bytes()), lines(data)
    assert restore([data]) == path.read_bytes()
    old, new = stated(before, editor), stated(after, editor)
    assert len(old) == len(new)  # no record appears or goes
    assert all(b <= a for a, b in zip(old, new, strict=True))  # none grows
    return before, after, old, new


# --- Claude Code --------------------------------------------------------------------


CLAUDE = [SAMPLES / "coding-agent.claude-code.jsonl",
          *corpus_params("claude-code", pattern="*.jsonl")]


@pytest.mark.corpus
@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: getattr(p, "name", "none"))
def test_claude_code_summary_keeps_what_the_agent_reads_and_restates_usage(path: Path) -> None:
    before = lines(path.read_bytes())
    data = summarized(path)
    after = lines(data)
    if not any(r.get("subtype") == "compact_boundary" and "ctxpack" in r for r in after):
        pytest.skip(f"{path.name}: nothing to summarize")
    assert restore([data]) == path.read_bytes()
    at = next(i for i, r in enumerate(after)
              if r.get("subtype") == "compact_boundary" and "ctxpack" in r)
    boundary = after[at]
    meta = boundary["compactMetadata"]
    assert 0 < meta["postTokens"] < meta["preTokens"]
    summary = next(r for r in after if r.get("ctxpack", {}).get("kind") == "archived_summary")
    # the agent's own figures are of the whole prompt it sends, as billed: more than
    # ctxpack's count of the messages in the file
    assert meta["postTokens"] > summary["ctxpack"]["tokens_after"]
    assert meta["preTokens"] > summary["ctxpack"]["original_tokens"]
    for kind in CLAUDE_KEPT:  # the newest title, prompt, mode... is the same record
        assert newest(after, kind) == newest(before, kind), kind
    editor = ClaudeCodeEditor()
    old, new = stated(before, editor), stated(after[at:], editor)
    if not new:
        return  # nothing kept after the summary states a call
    # the last call's context shrank by what compress took out before it, less the
    # summary, in the provider's tokens: ctxpack's count at the slope compress billed with
    meta = summary["ctxpack"]
    taken = meta.get("billed_slope", 1) * (meta["original_tokens"] - meta["tokens_after"])
    assert new[-1] < old[-1]
    assert abs((old[-1] - new[-1]) - taken) <= max(taken / 20, 200), (old[-1] - new[-1], taken)
    # each restated record keeps its original in its archive; the first call after the
    # boundary had nothing in the prompt cache, later ones the call before them
    usage = [r for r in after[at:] if r.get("ctxpack", {}).get("kind") == "usage"
             or r.get("ctxpack", {}).get("usage")]
    assert usage and all("archive" in r["ctxpack"] for r in usage)
    first = next(r for r in after[at:] if r.get("type") == "assistant")["message"]["usage"]
    assert first["cache_read_input_tokens"] == 0


@pytest.mark.corpus
@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: getattr(p, "name", "none"))
def test_claude_code_masking_restates_the_usage_after_the_first_change(path: Path) -> None:
    _, after, old, new = masked_restated(path, ClaudeCodeEditor())
    if any("ctxpack" in r and r["ctxpack"]["kind"] == "observations" for r in after) and old:
        assert new[-1] < old[-1]  # outputs masked before the last call: it shrank


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code", pattern="*agent-a*.jsonl"),
                         ids=lambda p: getattr(p, "name", "none"))
def test_a_sub_agent_file_stays_one(path: Path) -> None:
    data = summarized(path)
    after = lines(data)
    assert restore([data]) == path.read_bytes()
    written = [r for r in after if "ctxpack" in r and "uuid" in r]
    assert written and all(r.get("isSidechain") is True and r.get("agentId") for r in written)


def test_usage_is_stated_for_the_calls_only() -> None:
    editor = ClaudeCodeEditor()
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 1000,
             "cache_read_input_tokens": 40000, "output_tokens": 300,
             "cache_creation": {"ephemeral_5m_input_tokens": 1000,
                                "ephemeral_1h_input_tokens": 0}}
    record = {"type": "assistant", "message": {"role": "assistant", "usage": usage}}
    assert editor.recorded(record) == 41305
    assert editor.recorded({"type": "user", "message": {"usage": usage}}) is None
    assert editor.recorded({"type": "assistant", "message": {"usage": {
        "input_tokens": 0, "output_tokens": 0}}}) is None  # a synthetic reply
    new = editor.resized(record, 20000, 15000)["message"]["usage"]
    assert sum(new[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                "cache_read_input_tokens", "output_tokens")) == 20000
    assert new["cache_read_input_tokens"] == 15000 and new["output_tokens"] == 300
    assert new["cache_creation"] == {"ephemeral_5m_input_tokens": 4695,
                                     "ephemeral_1h_input_tokens": 0}
    assert record["message"]["usage"] is usage and usage["input_tokens"] == 5  # a copy


# --- Codex --------------------------------------------------------------------------


CODEX = [SAMPLES / "refactor.codex.jsonl", *corpus_params("codex", pattern="*.jsonl")]


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX, ids=lambda p: getattr(p, "name", "none"))
def test_codex_summary_keeps_the_index_and_states_the_new_size(path: Path) -> None:
    before = lines(path.read_bytes())
    data = summarized(path)
    after = lines(data)
    at = [i for i, r in enumerate(after) if r.get("type") == "compacted" and "ctxpack" in r]
    if not at:
        pytest.skip(f"{path.name}: nothing to summarize")
    assert restore([data]) == path.read_bytes()
    # the session index lists a thread by its first user message, and its name
    for kind in CODEX_KEPT:
        first = [bare(r) for r in before if r.get("payload", {}).get("type") == kind]
        kept = [bare(r) for r in after if r.get("payload", {}).get("type") == kind]
        assert first[:1] == kept[:1] and newest(after, kind, True) == newest(before, kind, True)
    # the turn state, then the size, right after the compacted line
    end = at[-1]
    group = after[end + 1:]
    state = [r for r in group if r.get("type") == "turn_context"]
    old_states = [r for r in before if r.get("type") == "turn_context"]
    if old_states:
        assert state and bare(state[-1]) == bare(old_states[-1]) or \
            bare(group[0]) in [bare(r) for r in old_states]
    editor = CodexEditor()
    fresh = next(r for r in group if editor.recorded(r) is not None)
    assert fresh.get("ctxpack", {}).get("id") == after[end]["ctxpack"]["id"]  # its group
    meta = after[end]["ctxpack"]
    old = stated(before, editor)
    new = stated(after[end:], editor)
    assert new[0] <= max(old[-1], meta["tokens_after"]) if old else new[0] > 0
    if old:
        assert new[-1] < old[-1]


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX, ids=lambda p: getattr(p, "name", "none"))
def test_codex_masking_restates_token_counts(path: Path) -> None:
    editor = CodexEditor()
    before, after, _, _ = masked_restated(path, editor)
    totals = [r["payload"]["info"]["total_token_usage"] for r in after
              if editor.recorded(r) is not None]
    assert totals == [r["payload"]["info"]["total_token_usage"] for r in before
                      if editor.recorded(r) is not None]  # what was spent stays


def test_codex_token_count_restated() -> None:
    editor = CodexEditor()
    last = {"input_tokens": 90000, "cached_input_tokens": 80000, "output_tokens": 500,
            "reasoning_output_tokens": 200, "total_tokens": 90500}
    total = {**last, "total_tokens": 1_000_000}
    record = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": total, "last_token_usage": last, "model_context_window": 258400}}}
    assert editor.recorded(record) == 90500
    assert editor.recorded({"type": "event_msg", "payload": {"type": "token_count",
                                                             "info": None}}) is None
    assert editor.recorded({"type": "event_msg", "payload": "text"}) is None
    new = editor.resized(record, 30000, 10000)["payload"]["info"]
    assert new["last_token_usage"] == {"input_tokens": 29500, "cached_input_tokens": 10000,
                                       "output_tokens": 500, "reasoning_output_tokens": 200,
                                       "total_tokens": 30000}
    assert new["total_token_usage"] is total and new["model_context_window"] == 258400


# --- what comes after: compress again, append, restore ------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("path", [SAMPLES / "coding-agent.claude-code.jsonl",
                                  SAMPLES / "refactor.codex.jsonl"], ids=lambda p: p.name)
def test_compress_twice_then_append_restores_original_plus_appended(path: Path,
                                                                    tmp_path: Path) -> None:
    once = tmp_path / "once.jsonl"
    once.write_bytes(compress_file(path, Options(summarize=False, keep_observations=1)).data)
    twice = tmp_path / "twice.jsonl"
    try:
        budget = billed(once, fitted(once) * 3 // 4)  # 3/4 of what masking leaves
        twice.write_bytes(compress_file(once, Options(budget=budget)).data)
    except CannotFit as exc:
        pytest.skip(f"cannot summarize {path.name}: {exc}")
    assert restore(twice) == path.read_bytes()
    # the agent resumed and wrote on: restore gives the original and what it appended
    more = path.read_bytes().splitlines(keepends=True)[-2:]
    with twice.open("ab") as f:
        f.writelines(more)
    assert restore(twice) == path.read_bytes() + b"".join(more)


@pytest.mark.corpus
@pytest.mark.parametrize("path", CLAUDE[1:], ids=lambda p: getattr(p, "name", "none"))
def test_restated_usage_goes_back_with_its_summary(path: Path) -> None:
    data = summarized(path)
    metas = [r["ctxpack"] for r in lines(data) if "ctxpack" in r]
    usage = [m for m in metas if m["kind"] == "usage" or m.get("usage")]
    if not usage:
        pytest.skip(f"{path.name}: no usage restated")
    summary = next(m["id"] for m in metas if m["kind"] == "archived_summary")
    assert all(m["follows"] == summary for m in usage)
    back = [r.get("ctxpack", {}) for r in lines(restore([data], only=summary))]
    assert not any(m.get("kind") == "usage" or m.get("usage") for m in back)


def test_records_of_odd_shapes_are_neither_kept_nor_restated() -> None:
    odd: list[dict[str, Any]] = [
        {"type": ["event_msg"], "payload": {}}, {"type": "event_msg", "payload": [1]},
        {"type": "event_msg", "payload": {"type": {"user_message": 1}}},
        {"type": {"a": 1}}, {"type": "assistant", "message": {"usage": [1, 2]}},
        {"type": "assistant", "message": "text"},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"total_tokens": "many"}}}},
    ]
    for editor in (ClaudeCodeEditor(), CodexEditor()):
        assert not any(editor.keeps(r) for r in odd)
        assert all(editor.recorded(r) is None for r in odd)
