"""What a dataset's rows are called in what is said of them, and a Parquet dataset given
where its bytes would be read as lines (stdin)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxpack

from .conftest import SAMPLES
from .helpers import assert_clean_error, records_of
from .helpers import ctxpack as run_ctxpack
from .test_dataset import evals, table_of, write

pa = pytest.importorskip("pyarrow", reason="datasets need pyarrow (pip install 'ctxpack[data]')")


@pytest.mark.parametrize("args", [[], ["--messages-column", "messages"]])
@pytest.mark.parametrize("command", ["stats", "validate"])
def test_a_parquet_dataset_on_stdin_is_refused_in_one_line(
        tmp_path: Path, command: str, args: list[str]) -> None:
    data = write(table_of(evals()[:3], "json", bad=False), tmp_path / "data.parquet")
    run = run_ctxpack(command, "-", *args, input=data.read_bytes())
    assert_clean_error(run, 2, "a Parquet dataset cannot be read from stdin; give its path")
    assert run.out == ""


def test_jsonl_rows_are_named_by_their_line_and_by_an_id_only_where_they_have_one(
        tmp_path: Path) -> None:
    good = json.dumps({"task_id": "t0", "messages": evals()[0]})
    lines = [good, "", "not json at all", "[1, 2]", json.dumps({"messages": "nope"}),
             json.dumps({"task_id": "t5", "messages": 7})]
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(lines) + "\n")
    run = run_ctxpack("validate", str(data), "--messages-column", "messages")
    assert run.code == 1, run.err
    assert run.out.splitlines() == [
        f"{data}:3: the line is not JSON",
        f"{data}:4: the line is not a JSON object (a row's keys and values)",
        f"{data}:5: messages are not a list of message objects",
        f"{data}:6 (id t5): messages are not a list of message objects"]
    run = run_ctxpack("stats", str(data), "--messages-column", "messages")
    assert f"error: {data}:3: the line is not JSON" in run.err


def test_a_rule_problem_of_a_jsonl_row_is_named_by_its_line_as_a_read_error_is(
        tmp_path: Path) -> None:
    orphan = [{"role": "tool", "tool_call_id": "call_9", "content": "orphan"}]
    problem = "message 1: tool result for call 'call_9', which no earlier assistant message made"
    lines = [json.dumps({"messages": evals()[0]}), "",
             json.dumps({"messages": orphan}), json.dumps({"task_id": "t3", "messages": orphan})]
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(lines) + "\n")
    run = run_ctxpack("validate", str(data), "--messages-column", "messages")
    assert run.code == 1, run.err
    assert run.out.splitlines() == [f"{data}:3: {problem}", f"{data}:4 (id t3): {problem}"]
    run = run_ctxpack("validate", str(data), "--messages-column", "messages", "--json")
    assert [(r["line"], r["id"]) for r in json.loads(run.out)["rows"]] == [(3, "1"), (4, "t3")]


AGENT_LOGS = {"claude-code": "coding-agent.claude-code.jsonl", "codex": "refactor.codex.jsonl",
              "gemini-stream": "todo-table.gemini-stream.jsonl",
              "anthropic-events": "export-timeout.anthropic-events.jsonl"}
MESSAGE_FILES = {"openai": "support-chat.openai.jsonl", "anthropic": "multi-round.anthropic.jsonl"}


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_a_row_of_an_agents_own_records_is_named_not_read_as_that_agents_log(
        tmp_path: Path, kind: str) -> None:
    """A dataset's column holds messages: rows of Chat Completions or Anthropic messages
    are read as their files are, and a row holding an agent's log (records its format
    marks surely) is that row's problem in stats, validate and compress alike."""
    pq = pytest.importorskip("pyarrow.parquet")
    files = {**MESSAGE_FILES, **AGENT_LOGS}
    ids = list(files)
    trajectories = [records_of(SAMPLES / name) for name in files.values()]
    if kind == "parquet":
        data = tmp_path / "rows.parquet"
        pq.write_table(pa.table({"id": ids, "messages": [json.dumps(t) for t in trajectories]}),
                       data)
        where = [f"{data} row {i} (id {name})" for i, name in enumerate(ids)]
        flags: list[str] = []
    else:
        data = tmp_path / "rows.jsonl"
        data.write_text("".join(json.dumps({"id": name, "messages": t}) + "\n"
                                for name, t in zip(ids, trajectories, strict=True)))
        where = [f"{data}:{i + 1} (id {name})" for i, name in enumerate(ids)]
        flags = ["--messages-column", "messages"]
    refused = {name: f"{where[i]}: message 1: not an openai or anthropic message but a record "
               f"of the {name} format" for i, name in enumerate(ids) if name in AGENT_LOGS}

    per_row = tmp_path / "per-row.parquet"
    run = run_ctxpack("stats", str(data), "--per-row", str(per_row), "--json", *flags)
    assert run.code == 1, run.err
    assert json.loads(run.out)["datasets"][0]["rows_failed"] == len(AGENT_LOGS)
    rows = {r["id"]: r for r in pq.read_table(per_row).to_pylist()}
    for name, file in MESSAGE_FILES.items():
        assert rows[name]["error"] is None, rows[name]["error"]
        assert rows[name]["tokens"] == ctxpack.stats(str(SAMPLES / file)).tokens
    assert {name: rows[name]["error"] for name in AGENT_LOGS} == refused
    assert [line for line in run.err.splitlines() if line.startswith("error:")] == \
        [f"error: {line}" for line in refused.values()]

    run = run_ctxpack("validate", str(data), *flags)
    assert run.code == 1, run.err
    assert run.out.splitlines() == list(refused.values())

    out = tmp_path / f"small.{kind}"
    run = run_ctxpack("compress", str(data), "-o", str(out), "--budget", "3000", *flags)
    assert run.code == 1, run.err
    written = pq.read_table(out).to_pylist() if kind == "parquet" else \
        [json.loads(line) for line in out.read_text().splitlines()]
    errors = {r["id"]: r["ctxpack_error"] for r in written}
    assert {name: errors[name] for name in AGENT_LOGS} == refused
    assert errors["openai"] is None and errors["anthropic"] is None
    for row, t in zip(written, trajectories, strict=True):
        if row["id"] in AGENT_LOGS:  # left as it was
            messages = row["messages"]
            assert (json.loads(messages) if isinstance(messages, str) else messages) == t
