"""The real Claude Code and Codex CLIs resume compressed corpus sessions.

Each test compresses a session, puts it where the CLI looks for sessions (under a
temporary home), resumes it non-interactively against a mock provider on 127.0.0.1
(tests/agent_provider.py) and checks what the CLI sent: the summary is there, the
archived turns are not, every tool call has its result, and the CLI made exactly one
model request, so it did not compact the session again, even at low thresholds.

The CLIs are not installed here: they are found on PATH or in the checkout's `.agents`
folder (`npm install --prefix .agents @anthropic-ai/claude-code @openai/codex`, as
.ci/run does); without them these tests skip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.transcript import SUMMARY_HEADING

from .agent_provider import PACKAGES, Run, claude_resume, codex_resume, find
from .compression.transcripts import billed, fitted
from .conftest import corpus_params

pytestmark = [pytest.mark.agents, pytest.mark.corpus]

# Thresholds under which the original sessions make the CLIs compact on their own.
CLAUDE_LOW = {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
CODEX_LOW = ("-c", "model_auto_compact_token_limit=60000")
# The most compress leaves, in the billed tokens compress takes (the agent's own
# prompts included): under each agent's threshold above (Claude Code's half of its
# window; Codex's 60,000), as the default target is under the default trigger (a session
# compress leaves over a threshold is compacted, rightly). Claude Code sends some 50k
# besides the messages of these sessions, so its budget leaves room for a summary.
BUDGETS = {"claude-code": 70_000, "codex": 55_000}


def budget_for(path: Path) -> int:
    return BUDGETS["claude-code" if "claude-code" in path.parts else "codex"]

CLAUDE_SESSIONS = corpus_params("claude-code", pattern="*.jsonl")
CODEX_SESSIONS = corpus_params("codex", pattern="*.jsonl")


def cli(name: str) -> str:
    found = find(name)
    if found is None:
        pytest.skip(f"{name} not found on PATH or in .agents/ "
                    f"(npm install --prefix .agents {PACKAGES[name]})")
    return found


def summarized(path: Path) -> bytes:
    """`path` compressed with a summary within its agent's budget, or skip."""
    if "SYNTHETIC" in path.name:
        pytest.skip("a schema fixture, not a session the CLI resumes")
    if "__subagents__" in path.name:
        pytest.skip("a sub-agent's file is not a session the CLI resumes")
    most = budget_for(path)
    left = billed(path, fitted(path))  # what masking leaves, as billed
    for budget in (min(most, left * 3 // 4), min(most, left * 9 // 10)):
        try:
            data = compress_file(path, Options(budget=max(budget, 1))).data
        except CannotFit:
            continue
        if b'"archived_summary"' in data:
            return data
    pytest.skip(f"compress cannot summarize {path.name} within {most} tokens")


def reworked(path: Path, how: str, where: Path) -> bytes:
    """`path` compressed another way: outputs masked only (no summary), or masked and then
    compressed again with a summary (a second compress of a compressed session)."""
    # masking as far as it goes: a target it cannot reach, a budget what it leaves
    masked = billed(path, fitted(path, keep_observations=2)) + 1
    once = compress_file(path, Options(summarize=False, keep_observations=2, budget=masked,
                                       target=1)).data
    if how == "masked":
        return once
    first = where / "once.jsonl"
    first.write_bytes(once)
    left = billed(first, fitted(first))
    return compress_file(first, Options(budget=min(budget_for(path), left * 3 // 4))).data


def expected(data: bytes, how: str) -> str:
    """What the request of a session compressed `how` must hold: the masked outputs'
    markers, or the second compress's summary."""
    return "ctxpack restore --only" if how == "masked" else summary_text(data)[:400]


def session(name: str, sessions: list[Any]) -> Path:
    found = [p.values[0] for p in sessions if p.values[0] is not None and name in p.values[0].name]
    if not found:
        pytest.skip(f"corpus session {name} not found")
    return found[0]


def summary_text(data: bytes) -> str:
    for line in data.splitlines():
        if b'"archived_summary"' in line:
            record = json.loads(line)
            text = record.get("payload", {}).get("message") or \
                record.get("message", {}).get("content")
            assert isinstance(text, str) and text.startswith(SUMMARY_HEADING)
            return text
    raise AssertionError("no summary in the output")


def archived_ids(original: bytes, data: bytes, pattern: bytes) -> set[str]:
    """Tool call ids of the original that the output holds no more (they are archived)."""
    ids = {m.decode() for m in re.findall(pattern, original)}
    return {i for i in ids if i.encode() not in data}


def only_request(run: Run, bodies: list[dict[str, Any]]) -> str:
    """The text of the one model request of a run (it made no other: no compaction of its
    own): every string the request holds, a line each."""
    assert run.code == 0, run.stderr[-2000:]
    assert len(bodies) == 1, f"{len(bodies)} model requests: the CLI compacted again"
    return "\n".join(strings(bodies[0]))


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in strings(v)] if isinstance(value, list) else []


def claude_pairs(body: dict[str, Any]) -> None:
    """Every tool_use has its tool_result in the next message, and the other way round."""
    messages = body["messages"]
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if calls:
            after = messages[i + 1]["content"] if i + 1 < len(messages) else []
            assert calls <= {b.get("tool_use_id") for b in after if isinstance(b, dict)}
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if results:
            before = messages[i - 1]["content"] if i else []
            assert results <= {b.get("id") for b in before if isinstance(b, dict)}


def codex_pairs(body: dict[str, Any]) -> None:
    items = body["input"]
    calls = {i["call_id"] for i in items if i.get("type") in ("function_call",
                                                               "custom_tool_call")}
    outputs = {i["call_id"] for i in items if i.get("type") in ("function_call_output",
                                                                 "custom_tool_call_output")}
    assert calls == outputs


# --- Claude Code --------------------------------------------------------------------


@pytest.mark.parametrize("path", CLAUDE_SESSIONS, ids=lambda p: getattr(p, "name", "none"))
def test_claude_code_resumes_the_summary_and_does_not_compact_again(path: Path,
                                                                     tmp_path: Path) -> None:
    claude = cli("claude")
    data = summarized(path)
    run = claude_resume(claude, data, tmp_path, env=CLAUDE_LOW)
    sent = only_request(run, run.provider.messages)
    assert summary_text(data)[:400] in sent
    gone = archived_ids(path.read_bytes(), data, rb'"tool_use_id":"([A-Za-z0-9_-]+)"')
    assert gone and not any(i in sent for i in gone)
    claude_pairs(run.provider.messages[0])


@pytest.mark.parametrize("how", ["masked", "twice"])
def test_claude_code_resumes_a_session_compressed_otherwise(how: str, tmp_path: Path) -> None:
    claude = cli("claude")
    path = session("8463c716", CLAUDE_SESSIONS)
    data = reworked(path, how, tmp_path)
    run = claude_resume(claude, data, tmp_path, env=CLAUDE_LOW)
    sent = only_request(run, run.provider.messages)
    assert expected(data, how) in sent
    claude_pairs(run.provider.messages[0])


def test_claude_code_continue_picks_the_compressed_session(tmp_path: Path) -> None:
    claude = cli("claude")
    path = session("8463c716", CLAUDE_SESSIONS)
    data = summarized(path)
    run = claude_resume(claude, data, tmp_path, latest=True, env=CLAUDE_LOW)
    sent = only_request(run, run.provider.messages)
    assert summary_text(data)[:400] in sent


def test_claude_code_compacts_the_original_at_the_low_threshold(tmp_path: Path) -> None:
    # the threshold bites: what the tests above show is compress's doing, not the setting's
    claude = cli("claude")
    path = session("8463c716", CLAUDE_SESSIONS)
    run = claude_resume(claude, path.read_bytes(), tmp_path, env=CLAUDE_LOW)
    assert len(run.provider.messages) > 1


# --- Codex --------------------------------------------------------------------------


@pytest.mark.parametrize("path", CODEX_SESSIONS, ids=lambda p: getattr(p, "name", "none"))
@pytest.mark.parametrize("how", ["id", "last"])
def test_codex_resumes_the_summary_and_does_not_compact_again(path: Path, how: str,
                                                               tmp_path: Path) -> None:
    codex = cli("codex")
    data = summarized(path)
    run = codex_resume(codex, data, tmp_path, *CODEX_LOW, latest=how == "last")
    sent = only_request(run, run.provider.responses)
    assert summary_text(data)[:400] in sent
    gone = archived_ids(path.read_bytes(), data, rb'"call_id":"([A-Za-z0-9_-]+)"')
    assert gone and not any(i in sent for i in gone)
    codex_pairs(run.provider.responses[0])


@pytest.mark.parametrize("how", ["masked", "twice"])
def test_codex_resumes_a_session_compressed_otherwise(how: str, tmp_path: Path) -> None:
    codex = cli("codex")
    path = session("raze", CODEX_SESSIONS)
    data = reworked(path, how, tmp_path)
    run = codex_resume(codex, data, tmp_path, *CODEX_LOW, latest=True)
    sent = only_request(run, run.provider.responses)
    assert expected(data, how) in sent
    codex_pairs(run.provider.responses[0])


def test_codex_compacts_the_original_at_the_low_threshold(tmp_path: Path) -> None:
    codex = cli("codex")
    path = session("raze", CODEX_SESSIONS)
    run = codex_resume(codex, path.read_bytes(), tmp_path, *CODEX_LOW)
    assert run.code != 0 or len(run.provider.responses) > 1  # it tried (our mock says no)

