"""Claude Code's compaction side-agent (`agent-acompact-*.jsonl`): what its file does not
hold is mostly the parent conversation it summarizes, and compress says so when that alone
puts the context over the trigger, rather than calling it within every limit."""

from __future__ import annotations

import json
from pathlib import Path

from ctxpack.breakdown import stats

from .conftest import SAMPLES
from .helpers import ctxpack as run_ctxpack

CLAUDE_CODE = SAMPLES / "coding-agent.claude-code.jsonl"
PARENT = 170_000  # the prompt the side-agent's one call is billed: the parent conversation


def side_agent(tmp_path: Path, agent: str = "acompact-1f2e3d") -> Path:
    """The sample's first exchange as the side-agent's file: one call, billed `PARENT`."""
    lines = []
    for line in CLAUDE_CODE.read_text().splitlines():
        r = {**json.loads(line), "isSidechain": True, "agentId": agent}
        if r.get("type") == "assistant" and r["message"].get("usage"):
            r["message"]["usage"] = {"input_tokens": PARENT, "output_tokens": 300}
            lines.append(json.dumps(r))
            break
        lines.append(json.dumps(r))
    path = tmp_path / f"agent-{agent}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_stats_names_the_parent_conversation_as_what_is_not_in_the_file(
        tmp_path: Path) -> None:
    run = run_ctxpack("stats", str(side_agent(tmp_path)))
    assert run.code == 0, run.err
    assert "parent conversation this agent summarizes" in run.out
    assert "system prompt" not in run.out.replace("not a system prompt", "")
    f = stats(side_agent(tmp_path), cache=False)
    assert f.context is not None and f.context.not_in_file > 150_000
    assert "parent conversation" in f.to_dict()["context"]["not_in_file_why"]
    # any other agent's file keeps the usual cause
    other = stats(side_agent(tmp_path, "a84377e"), cache=False)
    assert other.to_dict()["context"]["not_in_file_why"].startswith("system prompt")


def test_compress_over_the_trigger_with_nothing_to_cut_does_not_say_within_limits(
        tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run = run_ctxpack("compress", str(side_agent(tmp_path)), "-o", str(out))
    assert run.code == 0, run.err
    assert "within every limit" not in run.err + run.out
    assert "billed above the trigger (170,100 > 160,000)" in run.err
    assert "not in the file" in run.err


