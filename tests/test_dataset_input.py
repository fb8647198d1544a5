"""What a dataset's rows are called in what is said of them, and a Parquet dataset given
where its bytes would be read as lines (stdin)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import assert_clean_error
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
