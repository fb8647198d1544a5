"""stats counts alike in every format: tool results under `tool`, reasoning and the reply
priming as rows of their own (the rows add up to the total), and a file of many
conversations measured against the window one conversation at a time."""

from __future__ import annotations

import json

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings

from ctxpack import load, stats
from ctxpack.tokens import REPLY_PRIMING, TokenCounter

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack, person_after_results
from .strategies import openai_chat


def _write(tmp_path, records, name="t.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_claude_code_results_are_tool_not_user(exact_tokens):
    s = stats(SAMPLES / "coding-agent.claude-code.jsonl")
    t = load(SAMPLES / "coding-agent.claude-code.jsonl")
    counter = TokenCounter(s.model)
    typed = [m for m in t.messages if m.role == "user" and not m.result_only]
    assert s.by_role["user"] == sum(counter.message(m).total for m in typed)
    results = sum(r.result_tokens for r in s.by_tool.values())
    assert s.by_role["tool"] >= results > s.by_role["user"]
    assert sum(s.by_role.values()) == s.tokens


def test_anthropic_mixed_message_is_split(exact_tokens, tmp_path):
    """A user message holding a tool result and typed text counts each where it belongs:
    read as two turns of one message (the result's, then the person's)."""
    records = [
        {"role": "user", "content": "Read the file."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should read it first.", "signature": "x"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "alpha beta gamma " * 20},
            {"type": "text", "text": "And then stop."}]},
    ]
    path = _write(tmp_path, records)
    s = stats(path, "claude")
    t = load(path)
    counter = TokenCounter("claude")
    results, typed = t.messages[2:]
    assert (results.result_only, typed.joined, typed.human) == (True, True, True)
    (result,) = counter.message(results).parts
    assert s.by_tool["read"].result_tokens == result
    assert s.by_role["tool"] == counter.message(results).total
    assert s.by_role["user"] == counter.message(t.messages[0]).total + \
        counter.message(typed).total
    assert s.by_role["reasoning"] == counter.part(t.messages[1].parts[0])
    assert s.by_role["priming"] == REPLY_PRIMING
    assert sum(s.by_role.values()) == s.tokens


def test_a_joined_turn_pays_no_message_overhead(exact_tokens, tmp_path):
    """The person's words after a tool result in one message are read as a turn of their
    own (a round opens there), but billed as blocks of that one message: the file counts
    one message's overhead (3 tokens and the role's) less per such turn than the file
    that sends them apart, and every table still adds up to the total."""
    joined = _write(tmp_path, person_after_results(True), "joined.jsonl")
    apart = _write(tmp_path, person_after_results(False), "apart.jsonl")
    run = ctxpack("stats", "--json", str(joined), str(apart))
    assert run.code == 0, run.err
    one, two = json.loads(run.out)["files"]
    turns = sum(1 for m in load(joined).messages if m.joined)
    assert turns == 7 and one["messages"] == two["messages"]
    assert one["rounds"] == two["rounds"] == 12
    overhead = 3 + len(tiktoken.get_encoding(one["encoding"]).encode("user"))
    assert two["tokens"] - one["tokens"] == turns * overhead
    assert sum(one["by_role"].values()) == one["tokens"]
    assert sum(r["tokens"] for r in one["round_tokens"]) + REPLY_PRIMING == one["tokens"]
    assert one["by_tool"] == two["by_tool"]
    report = ctxpack("compress", "--dry-run", "--report-json", "-", str(joined))
    assert json.loads(report.out)["tokens_before"] == one["tokens"]
    squeezed = ctxpack("compress", str(joined), "-o", str(tmp_path / "out.jsonl"),
                       "--budget", "4000", "--target", "3000", "--report-json", "-")
    after = json.loads(squeezed.out)["tokens_after"]
    assert after == stats(tmp_path / "out.jsonl").tokens < one["tokens"]


def test_reasoning_content_is_its_own_row(exact_tokens, tmp_path):
    records = [{"role": "user", "content": "2+2?"},
               {"role": "assistant", "content": "4", "reasoning_content": "Two and two make four."}]
    s = stats(_write(tmp_path, records))
    assert s.by_role["reasoning"] == TokenCounter("gpt-4o").text("Two and two make four.")
    assert sum(s.by_role.values()) == s.tokens


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(chat=openai_chat())
def test_rows_add_up_to_the_header(exact_tokens, tmp_path_factory, chat):
    path = _write(tmp_path_factory.mktemp("rows"), chat)
    s = stats(path, cache=False)
    assert sum(s.by_role.values()) == s.tokens
    assert s.by_role.get("tool", 0) >= sum(t.result_tokens for t in s.by_tool.values())
    assert all(n >= 0 for n in s.by_role.values())
    assert stats(load(path), cache=False).by_role == s.by_role


def test_each_conversation_is_measured_against_the_window(exact_tokens):
    path = SAMPLES / "evals.openai-conversations.jsonl"
    s = stats(path)
    t = load(path)
    counter = TokenCounter("gpt-4o")
    sizes: dict[int, int] = {}
    for m in t.messages:
        sizes[m.conversation] = sizes.get(m.conversation, 0) + counter.message(m).total
    largest = max(sizes.values()) + REPLY_PRIMING
    assert s.conversations == len(sizes) > 1
    assert s.largest_conversation is not None
    assert s.largest_conversation["tokens"] == largest
    assert s.context_ratio == round(largest / s.context_window, 4)
    assert s.tokens == sum(sizes.values()) + REPLY_PRIMING * len(sizes)
    assert s.by_role["priming"] == REPLY_PRIMING * len(sizes)


def test_one_conversation_has_no_largest(exact_tokens, tmp_path):
    s = stats(_write(tmp_path, [{"role": "user", "content": "hi"}]))
    assert s.conversations == 1 and s.largest_conversation is None
    assert s.context_ratio == round(s.tokens / s.context_window, 4)


def test_max_ratio_gates_each_conversation(exact_tokens, tmp_path):
    path = SAMPLES / "evals.openai-conversations.jsonl"
    s = stats(path)
    ratio = s.context_ratio
    assert ratio is not None and ratio < s.tokens / s.context_window
    below = ctxpack("stats", str(path), "--max-ratio", str(ratio * 0.9))
    assert below.code == 1 and "conversation" in below.err and "over budget" in below.err
    above = ctxpack("stats", str(path), "--max-ratio", str(ratio * 1.1))
    assert above.code == 0, above.err
    assert f"the largest of {s.conversations} conversations" in above.out


def test_json_schema_2_and_totals(exact_tokens, tmp_path):
    one = _write(tmp_path, [{"role": "user", "content": "hi"}])
    run = ctxpack("stats", "--json", str(one), str(SAMPLES / "evals.openai-conversations.jsonl"))
    doc = json.loads(run.out)
    assert doc["schema_version"] == 5
    for f in doc["files"]:
        assert sum(f["by_role"].values()) == f["tokens"]
    many = doc["files"][1]
    assert doc["total"]["conversations"] == 1 + many["conversations"]
    assert doc["total"]["largest_conversation"] == max(
        doc["files"][0]["tokens"], many["largest_conversation"]["tokens"])


@pytest.mark.corpus
def test_tau_bench_is_measured_per_run(exact_tokens):
    path = CORPUS / "openai-chat" / "tau-bench__gpt-4o-airline.json"
    if not path.is_file():
        pytest.skip("tau-bench corpus file not found beside the checkout")
    s = stats(path)
    assert s.conversations == 200
    assert s.tokens > s.context_window  # all runs together would not fit one window...
    assert s.context_ratio is not None and s.context_ratio < 0.2  # ...but each run does
    assert sum(s.by_role.values()) == s.tokens


def test_csv_role_columns_add_up(exact_tokens):
    import csv
    import io

    files = [str(SAMPLES / "multi-round.anthropic.jsonl"),
             str(SAMPLES / "evals.openai-conversations.jsonl")]
    run = ctxpack("stats", "--format", "csv", *files)
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert len(rows) == 2
    for row in rows:
        roles = sum(int(v) for k, v in row.items() if k.startswith("tokens_"))
        assert roles == int(row["tokens"])
    assert int(rows[0]["tokens_reasoning"]) > 0 and int(rows[1]["tokens_priming"]) > 3


def test_csv_says_the_bill_as_the_json_does_and_the_readme_names_its_columns():
    """The CSV row of a file has the context as billed that the JSON has: its kind and
    size, the part in the file and the rest, and the expected error (empty where it is
    unknown); the README lists the columns as the header has them."""
    import csv
    import io
    import re

    from .conftest import ROOT

    files = [str(SAMPLES / name) for name in (
        "coding-agent.claude-code.jsonl", "multi-round.anthropic.jsonl",
        "support-chat.openai.jsonl", "todo-table.gemini-stream.jsonl",
        "evals.openai-conversations.jsonl")]
    run = ctxpack("stats", "--format", "csv", *files)
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    documents = json.loads(ctxpack("stats", "--json", *files).out)["files"]
    kinds = set()
    for row, doc in zip(rows, documents, strict=True):
        c = doc["context"]
        kinds.add(c["kind"])
        assert (row["billed_kind"], int(row["billed_tokens"]), int(row["billed_visible"]),
                int(row["billed_not_in_file"])) == \
            (c["kind"], c["tokens"], c["visible"], c["not_in_file"])
        assert int(row["billed_visible"]) + int(row["billed_not_in_file"]) == c["tokens"]
        assert row["billed_error"] == ("" if c["error"] is None else str(c["error"]))
        # (billed: of the largest conversation where the file holds several)
        assert int(row["conversations"]) == doc["conversations"]
    assert max(int(row["conversations"]) for row in rows) > 1
    assert kinds == {"anchored", "calibrated", "exact", "estimated"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"The CSV's columns are\s+`([^`]+)`", readme)
    assert listed is not None and listed.group(1) == run.out.splitlines()[0]
