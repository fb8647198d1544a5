"""Trajectory datasets: Parquet (and JSONL) tables with one trajectory a row, counted,
checked, compressed and restored row by row with the transcript code, every other column
and the row order kept, a bad row reported in its row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack

from .conftest import CORPUS, SAMPLES
from .helpers import assert_clean_error, said
from .helpers import ctxpack as run_ctxpack

pa = pytest.importorskip("pyarrow", reason="datasets need pyarrow (pip install 'ctxpack[data]')")
pq = pytest.importorskip("pyarrow.parquet")

from ctxpack.dataset import (  # noqa: E402 - after the skip when pyarrow is absent
    ADDED,
    compress_table,
    restore_table,
    stats_table,
    validate_table,
)

BUDGET = 1500
PINNED = {"SOURCE_DATE_EPOCH": "1795000000"}
BAD_JSON = '[{"role": "user", "content": "cut off'


def chat() -> list[dict[str, Any]]:
    """The support chat of samples/ as one trajectory (a list of structs cannot hold it:
    one message's content is a list of parts, the others' text)."""
    return [json.loads(line) for line in (SAMPLES / "support-chat.openai.jsonl").open()]


def evals() -> list[list[dict[str, Any]]]:
    """Each conversation of the eval file of samples/, a trajectory each."""
    return [json.loads(line)["messages"]
            for line in (SAMPLES / "evals.openai-conversations.jsonl").open()]


def over_budget() -> list[list[dict[str, Any]]]:
    """The eval conversations, the fourth made over the budget."""
    trajectories = evals()
    trajectories[3] = trajectories[3] * 6
    return trajectories


def sample_rows(kind: str = "json") -> list[list[dict[str, Any]]]:
    """The eval conversations, then (as JSON text) the support chat."""
    return [*evals(), chat()] if kind == "json" else evals()


def table_of(trajectories: list[Any], kind: str, bad: bool = True) -> Any:
    """A dataset: an id column, the messages (JSON text or a list of structs), an extra
    column after them; with `bad`, a last row whose messages cannot be read."""
    ids = [f"traj-{i:03d}" for i in range(len(trajectories))]
    if kind == "json":
        messages = pa.array([json.dumps(t) for t in trajectories] + ([BAD_JSON] if bad else []),
                            pa.string())
    else:
        messages = pa.array(trajectories + ([None] if bad else []))
    n = len(trajectories) + bad
    return pa.table({"id": ids + (["traj-bad"] if bad else []), "messages": messages,
                     "reward": pa.array([i / 4 for i in range(n)], pa.float64())})


@pytest.fixture(params=["json", "struct"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def test_row_tokens_equal_the_stats_of_the_same_transcripts_read_as_files(kind: str) -> None:
    table = table_of(sample_rows(kind), kind)
    rows = stats_table(table).to_pylist()
    file = ctxpack.stats(str(SAMPLES / "evals.openai-conversations.jsonl"))
    assert sum(r["tokens"] for r in rows[:17]) == file.tokens
    assert sum(r["messages"] for r in rows[:17]) == file.messages
    by_role: dict[str, int] = {}
    for r in rows[:17]:
        for role, n in json.loads(r["by_role"]).items():
            by_role[role] = by_role.get(role, 0) + n
    assert by_role == file.by_role
    assert [r["id"] for r in rows] == table.column("id").to_pylist()
    assert rows[-1]["tokens"] is None and rows[-1]["valid"] is False
    assert f"row {len(rows) - 1} (id traj-bad)" in rows[-1]["error"]


def test_a_whole_chat_in_a_row_counts_as_its_file() -> None:
    row = stats_table(table_of([chat()], "json", bad=False)).to_pylist()[0]
    file = ctxpack.stats(str(SAMPLES / "support-chat.openai.jsonl"))
    assert row["tokens"] == file.tokens
    assert json.loads(row["by_role"]) == file.by_role
    assert json.loads(row["by_tool"]) == {k: v.tokens for k, v in file.by_tool.items()}
    assert (row["largest_tokens"], row["largest_role"]) == (file.largest[0].tokens,
                                                            file.largest[0].role)


def test_validate_reports_each_row(kind: str) -> None:
    broken = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]
    table = table_of([evals()[0], broken], kind)
    rows = validate_table(table).to_pylist()
    assert [r["valid"] for r in rows] == [True, False, False]
    assert rows[1]["problems"] == ["message 1: tool call 'call_1' (f) has no result in the "
                                    "transcript"]
    assert rows[2]["error"] is not None and rows[2]["problems"] == []


def test_compress_keeps_columns_and_order_and_restore_gives_the_table_back(kind: str) -> None:
    table = table_of(over_budget(), kind)
    out = compress_table(table, budget=BUDGET)
    assert out.column_names == [*table.column_names, *ADDED]
    assert out.column("messages").type == table.column("messages").type
    for name in ("id", "reward"):
        assert out.column(name).equals(table.column(name))
    before = out.column("ctxpack_tokens_before").to_pylist()
    after = out.column("ctxpack_tokens_after").to_pylist()
    done = out.column("ctxpack_done").to_pylist()
    assert before[3] > BUDGET >= after[3] and done[3]
    changed = [i for i, m in enumerate(out.column("ctxpack").to_pylist()) if m is not None]
    assert changed == [3]
    for i in set(range(table.num_rows - 1)) - set(changed):  # rows left alone: as given
        assert out.column("messages")[i].equals(table.column("messages")[i])
    assert out.column("ctxpack_error").to_pylist()[-1].startswith("<table> row 17")
    assert restore_table(out).equals(table)


def test_compressed_rows_read_back_as_messages_within_the_budget(kind: str) -> None:
    table = table_of([evals()[3] * 6], kind, bad=False)
    out = compress_table(table, budget=BUDGET)
    assert out.column("ctxpack").to_pylist()[0] is not None
    after = out.column("ctxpack_tokens_after").to_pylist()[0]
    assert after <= BUDGET
    assert stats_table(out).column("tokens").to_pylist()[0] == after


def test_an_anthropic_row_counts_as_the_anthropic_file() -> None:
    path = SAMPLES / "multi-round.anthropic.jsonl"
    table = pa.table({"messages": [path.read_text().replace("\n", ",").strip(",").join("[]")]})
    row = stats_table(table, format="anthropic").to_pylist()[0]
    assert row["error"] is None, row["error"]
    assert row["tokens"] == ctxpack.stats(str(path), format="anthropic").tokens


def test_a_claude_run_reads_rows_that_mark_no_api_as_the_messages_api(tmp_path: Path) -> None:
    """Rows of plain messages are read, checked and compressed as the API that serves the
    run's model (Anthropic's Messages for Claude), as the library reads such a list;
    rows that mark their API (Chat Completions tool calls) keep it; --format forces one."""
    model = "claude-opus-4-5"
    loose = [[m for m in t if m["role"] != "system"] for t in evals()[:2]]
    trajectories = [loose[0], loose[1][1:], loose[0] * 20, chat()]  # the second opens on a reply
    data = write(table_of(trajectories, "json", bad=False), tmp_path / "data.parquet")
    per_row = tmp_path / "rows.parquet"

    def checked(*flags: str) -> list[dict[str, Any]]:
        run = run_ctxpack("stats", str(data), "-m", model, "--per-row", str(per_row), *flags)
        assert run.code == 0, run.err
        return pq.read_table(per_row).to_pylist()

    rows = checked()
    for i, (row, t) in enumerate(zip(rows, trajectories, strict=True)):
        path = tmp_path / f"row-{i}.jsonl"
        path.write_text("".join(json.dumps(m) + "\n" for m in t))
        assert row["tokens"] == ctxpack.stats(str(path), model=model).tokens
    assert [r["problems"] for r in rows] == [[], ["message 1: the first message must have "
                                                  "role 'user'"], [], []]
    assert all(r["valid"] for r in checked("--format", "openai"))
    # validate reads them with the run's model as stats does: the reply that opens the
    # second row is a problem of the Messages API, not of Chat Completions
    run = run_ctxpack("validate", str(data), "-m", model)
    assert run.code == 1, run.err
    assert run.out.splitlines() == [f"{data} row 1 (id traj-001): message 1: the first "
                                    "message must have role 'user'"]
    run = run_ctxpack("validate", str(data))
    assert run.code == 0 and run.out == "", run.out

    small = tmp_path / "small.parquet"
    run = run_ctxpack("compress", str(data), "-m", model, "--budget", "3000", "-o", str(small))
    assert run.code == 0, run.err
    out = pq.read_table(small).to_pylist()
    for row, t in zip(out, trajectories, strict=True):
        new, report = ctxpack.compress(t, model=model, budget=3000)
        assert (row["ctxpack_tokens_before"], row["ctxpack_tokens_after"]) == \
            (report.tokens_before, report.tokens_after)
        assert json.loads(row["messages"]) == json.loads(json.dumps(new))
    assert out[2]["ctxpack_done"] and json.loads(out[2]["messages"])[0]["content"][1][
        "text"].startswith("## Archived Session Summary")  # joined to the task: one user turn


def test_a_compressed_table_is_not_compressed_again_and_a_plain_one_restores_as_it_is(
) -> None:
    out = compress_table(table_of(over_budget(), "json", bad=False), budget=BUDGET)
    with pytest.raises(ctxpack.UsageError, match="already compressed"):
        compress_table(out, budget=BUDGET)
    plain = table_of(evals(), "json")
    assert restore_table(plain).equals(plain)


message = st.one_of(
    st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["user", "assistant"]),
              st.text(min_size=0, max_size=400)),
    st.builds(lambda i, out: [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": out}],
        st.integers(0, 10**6), st.text(min_size=0, max_size=3000)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(message, min_size=1, max_size=12), min_size=1, max_size=4))
def test_restore_of_compress_is_the_table_given(drawn: list[list[Any]]) -> None:
    trajectories = [[m for item in t for m in (item if isinstance(item, list) else [item])]
                    for t in drawn]
    table = pa.table({"messages": [json.dumps(t) for t in trajectories],
                      "n": list(range(len(trajectories)))})
    out = compress_table(table, budget=300, keep_steps=1, max_tokens=50)
    assert restore_table(out).equals(table)
    for before, after, error in zip(*(out.column(c).to_pylist() for c in (
            "ctxpack_tokens_before", "ctxpack_tokens_after", "ctxpack_error")), strict=True):
        assert error is not None or after <= before


def write(table: Any, path: Path) -> Path:
    pq.write_table(table, path, row_group_size=5)  # several row groups: read in batches
    return path


def test_cli_stats_prints_the_distribution_and_writes_per_row_files(tmp_path: Path) -> None:
    data = write(table_of(evals(), "struct"), tmp_path / "data.parquet")
    run = run_ctxpack("stats", str(data), "--max-tokens", "600", "--per-row",
                      str(tmp_path / "rows.parquet"), "--json")
    assert run.code == 1, run.err  # a row could not be read
    doc = json.loads(run.out)["datasets"][0]
    direct = stats_table(table_of(evals(), "struct")).to_pylist()
    tokens = sorted(r["tokens"] for r in direct[:-1])
    assert doc["rows"] == 18 and doc["rows_failed"] == 1
    assert doc["tokens"] == sum(tokens)
    assert doc["tokens_per_row"]["max"] == tokens[-1]
    assert doc["rows_over"] == sum(t > 600 for t in tokens)
    assert [line for line in run.err.splitlines() if line.startswith("error:")] == \
        [f"error: {data} row 17 (id traj-bad): messages are not a list of message objects"]
    per_row = pq.read_table(tmp_path / "rows.parquet")
    assert per_row.to_pylist() == stats_table(table_of(evals(), "struct"),
                                              name=str(data)).to_pylist()
    run = run_ctxpack("stats", str(data), "--per-row", str(tmp_path / "rows.csv"))
    lines = (tmp_path / "rows.csv").read_text().splitlines()
    assert lines[0].startswith('"row","id","tokens"') and len(lines) == 19
    assert "tokens per row p50 / p90 / max" in run.out


def test_cli_compress_and_restore_a_parquet_file(tmp_path: Path) -> None:
    table = table_of(over_budget(), "json")
    data = write(table, tmp_path / "data.parquet")
    small, back = tmp_path / "small.parquet", tmp_path / "back.parquet"
    run = run_ctxpack("compress", str(data), "-o", str(small), "--budget", str(BUDGET),
                      env=PINNED)
    assert run.code == 1, run.err  # the bad row is reported; the others are done
    assert "18 rows, 1 compressed, 1 failed" in run.err
    assert pq.read_table(small).column("ctxpack_error").to_pylist()[-1].startswith(
        f"{data} row 17 (id traj-bad): messages are not JSON")
    run = run_ctxpack("restore", str(small), "-o", str(back))
    assert run.code == 0, run.err
    assert pq.read_table(back).equals(table)
    again = run_ctxpack("compress", str(data), "-o", str(tmp_path / "again.parquet"),
                        "--budget", str(BUDGET), env=PINNED)
    assert (tmp_path / "again.parquet").read_bytes() == small.read_bytes()  # deterministic
    assert again.code == 1


def test_cli_shards_split_the_row_groups_and_skip_existing_resumes(tmp_path: Path) -> None:
    table = table_of(over_budget() * 2, "json", bad=False)  # 34 rows: 7 row groups of 5
    data = write(table, tmp_path / "data.parquet")
    parts = [tmp_path / f"part-{i}.parquet" for i in range(3)]
    for i, part in enumerate(parts):
        run = run_ctxpack("compress", str(data), "-o", str(part), "--budget", str(BUDGET),
                          "--shard", f"{i}/3", env=PINNED)
        assert run.code == 0, run.err
    whole = tmp_path / "whole.parquet"
    assert run_ctxpack("compress", str(data), "-o", str(whole), "--budget", str(BUDGET),
                       env=PINNED).code == 0
    shares = [pq.read_table(p) for p in parts]
    assert [s.num_rows for s in shares] == [14, 10, 10]  # groups 0,3,6 / 1,4 / 2,5
    by_id = {r["id"]: r for s in shares for r in s.to_pylist()}
    assert [by_id[r["id"]] for r in pq.read_table(whole).to_pylist()] == \
        pq.read_table(whole).to_pylist()  # each row as the whole run made it
    back = []
    for i, part in enumerate(parts):
        assert run_ctxpack("restore", str(part), "-o", str(tmp_path / f"back-{i}.parquet")
                           ).code == 0
        back += pq.read_table(tmp_path / f"back-{i}.parquet").to_pylist()
    assert sorted(back, key=lambda r: r["id"]) == table.to_pylist()
    before = parts[0].stat().st_mtime_ns
    run = run_ctxpack("compress", str(data), "-o", str(parts[0]), "--budget", str(BUDGET),
                      "--shard", "0/3", "--skip-existing")
    assert run.code == 0 and "skipped" in run.err
    assert parts[0].stat().st_mtime_ns == before


def test_cli_validate_reports_rows(tmp_path: Path) -> None:
    broken = [{"role": "tool", "tool_call_id": "call_9", "content": "orphan"}]
    data = write(table_of([evals()[0], broken], "json"), tmp_path / "data.parquet")
    run = run_ctxpack("validate", str(data))
    assert run.code == 1
    assert run.out.splitlines() == [
        f"{data} row 1 (id traj-001): message 1: tool result for call 'call_9', which no "
        "earlier assistant message made",
        f"{data} row 2 (id traj-bad): messages are not JSON: Unterminated string starting at: "
        "line 1 column 30 (char 29)"]
    assert "3 rows, 2 with problems" in run.err


def test_jsonl_rows_read_as_a_dataset(tmp_path: Path) -> None:
    path = SAMPLES / "evals.openai-conversations.jsonl"
    run = run_ctxpack("stats", str(path), "--per-row", str(tmp_path / "rows.parquet"),
                      "--json")
    assert run.code == 0, run.err
    rows = pq.read_table(tmp_path / "rows.parquet").to_pylist()
    assert len(rows) == 17 and [r["row"] for r in rows] == list(range(17))
    assert sum(r["tokens"] for r in rows) == ctxpack.stats(str(path)).tokens
    assert json.loads(run.out)["datasets"][0]["tokens"] == ctxpack.stats(str(path)).tokens


def jsonl_rows(path: Path, trajectories: list[Any]) -> Path:
    """JSONL rows: an id, the messages, keys after them; a line that is not JSON, a blank
    line, and a row without messages."""
    lines = [json.dumps({"task_id": f"t{i}", "messages": t, "reward": i / 4, "tags": ["x"]})
             for i, t in enumerate(trajectories)]
    lines[1:1] = ["not json at all", "", json.dumps({"task_id": "empty", "reward": 0})]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_compresses_jsonl_rows_to_jsonl_rows_and_restores_them(tmp_path: Path) -> None:
    data = jsonl_rows(tmp_path / "rows.jsonl", over_budget())
    small, back = tmp_path / "small.jsonl", tmp_path / "back.jsonl"
    run = run_ctxpack("compress", str(data), "--messages-column", "messages", "-o", str(small),
                      "--budget", str(BUDGET), env=PINNED)
    assert run.code == 1, run.err  # the line that is not JSON, the row without messages
    assert "19 rows, 1 compressed, 2 failed" in run.err
    lines = small.read_text().splitlines()
    assert lines[1] == "not json at all"  # kept as it was
    given = [json.loads(line) for line in data.read_text().splitlines() if line.strip()
             and line != "not json at all"]
    got = [json.loads(line) for line in lines if line != "not json at all"]
    assert [list(r)[:4] for r in got if "messages" in r] == \
        [["task_id", "messages", "reward", "tags"]] * 17  # the keys in their order
    changed = [r for r in got if r["ctxpack"] is not None]
    assert [r["task_id"] for r in changed] == ["t3"]
    assert changed[0]["ctxpack_tokens_after"] <= BUDGET < changed[0]["ctxpack_tokens_before"]
    assert isinstance(changed[0]["messages"], list)  # messages as the input had them
    run = run_ctxpack("restore", str(small), "--messages-column", "messages", "-o", str(back))
    assert run.code == 0, run.err
    assert back.read_text().splitlines()[1] == "not json at all"
    assert [json.loads(line) for line in back.read_text().splitlines()
            if line != "not json at all"] == given


def test_restore_of_a_dataset_never_compressed_writes_it_as_it_is(tmp_path: Path) -> None:
    table = table_of(evals(), "json")
    data = write(table, tmp_path / "data.parquet")
    run = run_ctxpack("restore", str(data), "-o", str(tmp_path / "back.parquet"))
    assert run.code == 0
    assert said(run.err) == [f"warning: {data}: nothing to restore (no ctxpack column); "
                             "writing it unchanged"]
    assert pq.read_table(tmp_path / "back.parquet").equals(table)


def test_cli_compresses_a_folder_of_datasets_skipping_a_bad_one(tmp_path: Path) -> None:
    folder, out, back = tmp_path / "in", tmp_path / "out", tmp_path / "back"
    (folder / "part").mkdir(parents=True)
    one = write(table_of(over_budget(), "json", bad=False), folder / "a.parquet")
    two = write(table_of(over_budget()[:5], "struct"), folder / "part" / "b.parquet")
    (folder / "part" / "broken.parquet").write_bytes(b"PAR1 no footer")
    (folder / "notes.jsonl").write_text("not a dataset here: the folder has Parquet files\n")
    run = run_ctxpack("compress", str(folder), "--out-dir", str(out), "--budget", str(BUDGET),
                      "--report-json", str(tmp_path / "report.json"), env=PINNED)
    assert run.code == 2, run.err  # a file could not be read: the others are done
    assert f"error: {folder / 'part' / 'broken.parquet'}: not a Parquet file" in run.err
    assert f"error: {two} row 5 (id traj-bad): messages are not a list" in run.err
    files = {f["source"]: f for f in json.loads((tmp_path / "report.json").read_text())["files"]}
    assert {s: (f["dest"], f["status"], f["code"]) for s, f in files.items()} == {
        str(one): (str(out / "a.parquet"), "written", 0),
        str(two): (str(out / "part" / "b.parquet"), "written", 1),
        str(folder / "part" / "broken.parquet"):
            (str(out / "part" / "broken.parquet"), "failed", 2)}
    assert files[str(one)]["tokens_after"] < files[str(one)]["tokens_before"]
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["a.parquet", "b.parquet"]
    run = run_ctxpack("stats", str(out), str(tmp_path / "gone.parquet"), "--json")
    assert run.code == 2 and f"error: {tmp_path / 'gone.parquet'}: no such file" in run.err
    assert [(d["path"], d["rows"]) for d in json.loads(run.out)["datasets"]] == \
        [(str(out / "a.parquet"), 17), (str(out / "part" / "b.parquet"), 6)]
    assert json.loads(run.out)["unread"] == [
        {"path": str(tmp_path / "gone.parquet"), "line": None, "problem": "no such file"}]
    # a dataset that cannot be read is said, and the others are counted and checked
    (out / "0-broken.parquet").write_bytes(b"PAR1 no footer")
    run = run_ctxpack("stats", str(out), "--json")
    assert run.code == 2 and f"error: {out / '0-broken.parquet'}: not a Parquet file" in run.err
    assert [d["rows"] for d in json.loads(run.out)["datasets"]] == [17, 6]
    assert [u["path"] for u in json.loads(run.out)["unread"]] == [str(out / "0-broken.parquet")]
    run = run_ctxpack("validate", str(out), "--json")
    assert [u["path"] for u in json.loads(run.out)["unread"]] == [str(out / "0-broken.parquet")]
    run = run_ctxpack("validate", str(out))
    assert run.code == 2 and f"error: {out / '0-broken.parquet'}: not a Parquet file" in run.err
    assert f"{out / 'a.parquet'}: 17 rows" in run.err and "row 5 (id traj-bad)" in run.out
    (out / "0-broken.parquet").unlink()
    single = tmp_path / "single.parquet"  # each as the run of that one file makes it
    run_ctxpack("compress", str(one), "-o", str(single), "--budget", str(BUDGET), env=PINNED)
    assert (out / "a.parquet").read_bytes() == single.read_bytes()
    run = run_ctxpack("restore", str(tmp_path / "out" / "*.parquet"), str(out / "part"),
                      "--out-dir", str(back))
    assert run.code == 0, run.err
    assert pq.read_table(back / "a.parquet").equals(pq.read_table(one))
    assert pq.read_table(back / "b.parquet").equals(pq.read_table(two))
    again = run_ctxpack("compress", str(folder), "--out-dir", str(out), "--budget",
                        str(BUDGET), "--skip-existing", "--report-json", "-")
    assert [f["status"] for f in json.loads(again.out)["files"]] == \
        ["failed", "skipped", "skipped"]


@pytest.mark.parametrize("args, fragment", [
    (["compress", "{data}"], "pass -o OUT.parquet"),
    (["compress", "{data}", "-o", "{data}.jsonl"], "written as its input is (parquet)"),
    (["compress", "{data}", "{data}", "-o", "x.parquet"], "needs --out-dir DIR"),
    (["stats", "{data}", "--messages-column", "text"], "no column 'text'"),
    (["stats", "{data}", "--id-column", "nope"], "no column 'nope'"),
    (["stats", "{data}", "--format", "codex"], "unknown messages dialect 'codex'"),
    (["stats", "{data}", "--engine", "spark"], "unknown engine 'spark'"),
    (["stats", "{data}", str(SAMPLES / "support-chat.openai.jsonl")], "separate runs"),
    (["stats", "{data}", "--per-row", "{data}"], "is an input: --per-row would be written"),
    (["compress", "{data}", "-o", "{data}"], "data.parquet would be written over itself"),
    (["compress", "{data}", "-o", "{data}.x.parquet", "--report-json", "{data}"],
     "is an input: --report-json would be written over it"),
])
def test_cli_usage_errors_are_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    data = write(table_of(evals()[:2], "json", bad=False), tmp_path / "data.parquet")
    run = run_ctxpack(*(a.format(data=data) for a in args))
    assert_clean_error(run, 2, fragment)


def test_not_a_parquet_file_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"PAR1 but not really")
    assert_clean_error(run_ctxpack("stats", str(fake)), 2, f"{fake}: not a Parquet file")
    out = tmp_path / "out.parquet"
    assert_clean_error(run_ctxpack("compress", str(fake), "-o", str(out)), 2, "not a Parquet")
    assert not out.exists()


def test_without_pyarrow_the_hint_names_the_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = write(table_of(evals()[:1], "json", bad=False), tmp_path / "data.parquet")
    out = tmp_path / "out.parquet"
    for args in (["stats", str(data)], ["validate", str(data)],
                 ["compress", str(data), "-o", str(out)], ["restore", str(data), "-o", str(out)]):
        code = ("import sys; sys.modules['pyarrow'] = None; sys.argv = ['ctxpack', "
                f"*{args!r}]; from ctxpack.cli import main; main()")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.strip() == ("error: reading and writing datasets needs pyarrow "
                                       "(pip install 'ctxpack[data]')"), args
        assert not out.exists()


TAU = CORPUS / "openai-chat" / "tau-bench__gpt-4o-airline.json"


@pytest.mark.corpus
@pytest.mark.skipif(not TAU.is_file(), reason="corpus not found beside the checkout")
def test_corpus_runs_as_a_dataset_count_as_the_file_and_come_back(kind: str) -> None:
    runs = json.loads(TAU.read_text())
    table = table_of([r["traj"] for r in runs], kind, bad=False).append_column(
        "task_id", pa.array([r["task_id"] for r in runs]))
    rows = stats_table(table).to_pylist()
    assert sum(r["tokens"] for r in rows) == ctxpack.stats(str(TAU)).tokens
    out = compress_table(table, budget=3000)
    assert sum(e is None for e in out.column("ctxpack_error").to_pylist()) == len(runs)
    assert max(out.column("ctxpack_tokens_after").to_pylist()) <= 3000
    assert restore_table(out).equals(table)


def test_a_progress_bar_counts_rows_and_bytes_on_a_terminal_only(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from ctxpack.render.dataset import RowProgress

    data = write(table_of(evals(), "json"), tmp_path / "data.parquet")
    rows = jsonl_rows(tmp_path / "rows.jsonl", evals()[:3])
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with RowProgress([str(data), str(rows)], console) as advance:
        advance(str(data), 18)
        screen = out.getvalue()
    assert "18/24 rows" in screen  # 18 rows of the Parquet file, 6 lines of the JSONL
    megabytes = data.stat().st_size / 2**20
    assert f"{megabytes:,.1f}/{megabytes + rows.stat().st_size / 2**20:,.1f} MB" in screen
    quiet = io.StringIO()
    with RowProgress([str(data)], Console(file=quiet, force_terminal=False)) as advance:
        advance(str(data), 18)
    assert quiet.getvalue() == ""


def test_cli_compress_no_cache_leaves_no_database_and_the_same_rows(tmp_path: Path) -> None:
    data = write(table_of(over_budget(), "json", bad=False), tmp_path / "data.parquet")
    cached, uncached = tmp_path / "cached.parquet", tmp_path / "uncached.parquet"
    env = {**PINNED, "CTXPACK_CACHE_DIR": str(tmp_path / "cache")}
    run = run_ctxpack("compress", str(data), "-o", str(uncached), "--budget", str(BUDGET),
                      "--no-cache", env=env)
    assert run.code == 0, run.err
    assert not (tmp_path / "cache").exists()
    run = run_ctxpack("compress", str(data), "-o", str(cached), "--budget", str(BUDGET), env=env)
    assert run.code == 0, run.err
    assert (tmp_path / "cache").exists()
    assert pq.read_table(cached).equals(pq.read_table(uncached))


def test_the_messages_field_keeps_its_nullability_and_metadata() -> None:
    given = table_of(over_budget(), "json", bad=False)
    field = pa.field("messages", given.schema.field("messages").type, nullable=False,
                     metadata={b"source": b"ours"})
    table = given.set_column(given.column_names.index("messages"), field,
                             given.column("messages"))
    small = compress_table(table, budget=BUDGET)
    assert small.schema.field("messages") == field
    assert small.schema.field("messages").metadata == field.metadata
    back = restore_table(small)
    assert back.equals(table) and back.schema.field("messages").metadata == field.metadata


def test_a_dataset_named_by_a_url_is_read_by_every_command(tmp_path: Path) -> None:
    table = table_of(over_budget(), "json", bad=False)
    data = write(table, tmp_path / "data.parquet")
    url = data.as_uri()  # file://...: pyarrow opens object-store URLs the same way
    run = run_ctxpack("stats", url, "--json")
    assert run.code == 0, run.err
    assert [d["rows"] for d in json.loads(run.out)["datasets"]] == [table.num_rows]
    run = run_ctxpack("validate", url)
    assert run.code == 0 and f"{table.num_rows} rows, 0 with problems" in run.err, run.err
    run = run_ctxpack("compress", url, "--out-dir", str(tmp_path / "out"), "--budget",
                      str(BUDGET))
    assert run.code == 0, run.err
    assert pq.read_table(tmp_path / "out" / "data.parquet").num_rows == table.num_rows


def test_shards_of_a_folder_of_datasets_split_the_files_below_one_out_dir(tmp_path: Path) -> None:
    folder, out = tmp_path / "in", tmp_path / "out"
    (folder / "a").mkdir(parents=True)
    names = ["part-0.parquet", "part-1.parquet", "a/part-2.parquet", "a/part-3.parquet"]
    table = table_of(over_budget(), "json", bad=False)
    for name in names:
        write(table, folder / name)
    for i in range(2):
        run = run_ctxpack("compress", str(folder), "--out-dir", str(out), "--budget",
                          str(BUDGET), "--shard", f"{i}/2", env=PINNED)
        assert run.code == 0, run.err
    # every dataset written once, whole, by one of the jobs: none emptied by the other
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    assert written == sorted(names)
    for name in names:
        assert pq.read_table(out / name).num_rows == table.num_rows


def test_jobs_set_the_local_engines_cores_and_not_the_result(tmp_path: Path) -> None:
    data = write(table_of(over_budget() * 2, "json"), tmp_path / "data.parquet")
    outs = []
    for jobs in ("1", "2"):
        outs.append(tmp_path / f"j{jobs}.parquet")
        run = run_ctxpack("compress", str(data), "-o", str(outs[-1]), "--budget", str(BUDGET),
                          "-j", jobs, env=PINNED)
        assert run.code == 1, run.err  # the bad rows said, the others done
    assert outs[0].read_bytes() == outs[1].read_bytes()
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "r.parquet"), "-j", "2",
                      "--engine", "ray")
    assert_clean_error(run, 2, "-j is for the local engine")


def test_stats_takes_jobs_as_compress_does(tmp_path: Path) -> None:
    data = write(table_of(over_budget() * 2, "json"), tmp_path / "data.parquet")
    docs = []
    for jobs in ("1", "2"):
        run = run_ctxpack("stats", str(data), "-j", jobs, "--json")
        assert run.code == 1, run.err  # the bad rows said, the others counted
        docs.append(json.loads(run.out))
    assert docs[0] == docs[1] and docs[0]["datasets"][0]["rows"] == 35
    run = run_ctxpack("stats", str(SAMPLES / "refactor.codex.jsonl"), "-j", "1", "--json")
    assert run.code == 0, run.err  # a transcript's workers too
    assert_clean_error(run_ctxpack("stats", str(data), "-j", "2", "--engine", "ray"), 2,
                       "-j is for the local engine")


def test_a_messages_column_of_another_type_is_one_line_for_the_dataset(tmp_path: Path) -> None:
    numbers = write(pa.table({"id": [f"r{i}" for i in range(12)],
                              "messages": pa.array(range(12), pa.int64())}),
                    tmp_path / "numbers.parquet")
    good = write(table_of(evals()[:3], "json", bad=False), tmp_path / "good.parquet")
    problem = (f"error: {numbers}: column 'messages' holds int64, not messages (JSON text, or "
               "a list of message structs)")
    assert_clean_error(run_ctxpack("stats", str(numbers)), 2, problem)
    out = tmp_path / "out.parquet"
    assert_clean_error(run_ctxpack("compress", str(numbers), "-o", str(out)), 2, problem)
    assert not out.exists()
    run = run_ctxpack("validate", str(numbers), str(good))
    assert run.code == 2 and run.out == ""
    assert said(run.err) == [problem, f"{good}: 3 rows, 0 with problems"]


def test_a_row_is_named_by_id_whatever_its_id_column_is_called(tmp_path: Path) -> None:
    table = table_of(evals()[:2], "json").rename_columns(["trajectory_id", "messages", "reward"])
    data = write(table, tmp_path / "data.parquet")
    run = run_ctxpack("validate", str(data))
    assert run.out.startswith(f"{data} row 2 (id traj-bad): messages are not JSON")
    run = run_ctxpack("stats", str(data))
    assert f"error: {data} row 2 (id traj-bad): messages are not JSON" in run.err


def test_stats_of_several_datasets_adds_them_up_as_one_dataset_of_their_rows(
        tmp_path: Path) -> None:
    one, two = table_of(evals(), "json"), table_of(over_budget()[:5], "json", bad=False)
    a, b = write(one, tmp_path / "a.parquet"), write(two, tmp_path / "b.parquet")
    both = write(pa.concat_tables([one, two]), tmp_path / "both.parquet")
    run = run_ctxpack("stats", str(a), str(b), "--max-tokens", "600", "--json")
    assert run.code == 1, run.err  # a row could not be read, rows over the limit
    doc = json.loads(run.out)
    whole = json.loads(run_ctxpack("stats", str(both), "--max-tokens", "600", "--json").out)
    expected = {k: v for k, v in whole["datasets"][0].items()
                if k not in ("schema_version", "path", "errors")}
    assert doc["total"] == {"datasets": 2, **expected}
    assert doc["total"]["rows"] == sum(d["rows"] for d in doc["datasets"]) == 23
    table = run_ctxpack("stats", str(a), str(b)).out
    assert "total of 2 datasets" in table
    alone = run_ctxpack("stats", str(a)).out
    assert "total of" not in alone


def test_report_json_has_one_shape_for_one_dataset_or_many(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    data = write(table_of(over_budget(), "json"), folder / "data.parquet")
    single, many = tmp_path / "single.json", tmp_path / "many.json"
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "small.parquet"),
                      "--budget", str(BUDGET), "--report-json", str(single))
    assert run.code == 1, run.err  # the bad row
    assert "18 rows, 1 compressed, 1 failed; tokens" in run.err
    assert run.err.rstrip().endswith(", 1 failed row not counted")
    assert run_ctxpack("compress", str(folder), "--out-dir", str(tmp_path / "out"), "--budget",
                       str(BUDGET), "--report-json", str(many), "-q").code == 1
    [entry] = json.loads(single.read_text())["files"]
    [other] = json.loads(many.read_text())["files"]
    assert {**entry, "dest": None} == {**other, "dest": None}
    small = pq.read_table(tmp_path / "small.parquet")
    done = [b for b, e in zip(small.column("ctxpack_tokens_before").to_pylist(),
                              small.column("ctxpack_error").to_pylist(), strict=True)
            if e is None]
    assert (entry["status"], entry["code"], entry["rows"], entry["rows_compressed"],
            entry["rows_failed"], entry["tokens_before"], entry["problem"]) == \
        ("written", 1, 18, 1, 1, sum(done), "1 failed row not counted")
    back = tmp_path / "back.json"
    assert run_ctxpack("restore", str(tmp_path / "small.parquet"), "-o",
                       str(tmp_path / "back.parquet"), "--report-json", str(back)).code == 0
    assert [(e["status"], e["rows"]) for e in json.loads(back.read_text())["files"]] == \
        [("written", 18)]
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "small.parquet"),
                      "--skip-existing", "--report-json", "-")
    assert run.code == 0, run.err
    assert [e["status"] for e in json.loads(run.out)["files"]] == ["skipped"]


def on_a_terminal(*args: str) -> str:
    """What `ctxpack ARGS` writes to stderr when stderr is a terminal (a pseudo-terminal
    here), its stdout thrown away."""
    import os
    import subprocess
    import sys

    pty = pytest.importorskip("pty", reason="needs a pseudo-terminal (POSIX)")
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "ctxpack", *args], stdout=subprocess.DEVNULL,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        screen += chunk
    proc.wait(timeout=300)
    os.close(master)
    return screen.decode("utf-8", "replace")


def test_an_error_said_under_a_progress_bar_starts_a_line_of_its_own(tmp_path: Path) -> None:
    import re

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "c"):
        write(table_of(evals(), "json", bad=False), folder / f"{name}.parquet")
    write(table_of(evals()[:2], "json"), folder / "b.parquet")  # a row that cannot be read
    screen = on_a_terminal("compress", str(folder), "--out-dir", str(tmp_path / "out"),
                           "--budget", str(BUDGET))
    assert " rows " in screen and "MB" in screen  # the bar was drawn
    said_at = [m.start() for m in re.finditer("error:", screen)]
    assert said_at, screen
    for at in said_at:
        before = re.split(r"[\r\n]", screen[:at])[-1]  # what the line holds before it
        assert re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", before) == "", repr(screen[at - 200:at])


def test_jsonl_rows_are_not_written_under_a_parquet_name(tmp_path: Path) -> None:
    data = jsonl_rows(tmp_path / "rows.jsonl", evals()[:3])
    out = tmp_path / "small.parquet"
    run = run_ctxpack("compress", str(data), "--messages-column", "messages", "-o", str(out))
    assert_clean_error(run, 2, "a dataset is written as its input is (jsonl)", "OUT.jsonl")
    assert not out.exists()


def test_a_dataset_of_one_row_is_said_of_one_row(tmp_path: Path) -> None:
    data = write(table_of([evals()[0]], "json", bad=False), tmp_path / "one.parquet")
    run = run_ctxpack("validate", str(data))
    assert run.code == 0 and f"{data}: 1 row, 0 with problems" in run.err, run.err
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "out.parquet"))
    assert run.code == 0 and ": 1 row, 0 compressed, 0 failed" in run.err, run.err
