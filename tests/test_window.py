"""The window and the bill where a file's own calls say more than the tables: a window at
least as large as the largest call the file records, the overhead measured before a
compaction carried past it, and the not-in-file part split with the file's own slope."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ctxpack.breakdown import stats
from ctxpack.calibration import bill, slope_of
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.config import load_config
from ctxpack.loader import load
from ctxpack.models import TABLE
from ctxpack.transcript import RecordedCall

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack as run_ctxpack

MANAGED = CORPUS / "anthropic-agent-events" / "open-hai__context-than-location__transcript.jsonl"


def claude_code_line(kind: str, n: int, parent: str | None, content: object,
                     **message: object) -> str:
    """One Claude Code record of a user or assistant message."""
    return json.dumps({"type": kind, "uuid": f"{kind}{n}", "parentUuid": parent,
                       "isSidechain": False, "sessionId": "s",
                       "timestamp": "2026-01-01T00:00:00Z",
                       "message": {"role": kind, "content": content, **message}}) + "\n"


def usage(prompt: int, output: int) -> dict[str, int]:
    return {"input_tokens": 2, "cache_read_input_tokens": prompt - 2,
            "cache_creation_input_tokens": 0, "output_tokens": output}


def large_session(tmp_path: Path, prompt: int = 230_000, output: int = 500) -> Path:
    """A Claude Code session whose one call's prompt is past the window the table gives
    its model (most of it not in the file, as a long session's cached prefix)."""
    path = tmp_path / "large.jsonl"
    path.write_text(
        claude_code_line("user", 1, None, "go on")
        + claude_code_line("assistant", 1, "user1", [{"type": "text", "text": "Done."}],
                           id="m1", model="claude-opus-4-6", usage=usage(prompt, output)))
    return path


def test_the_window_is_at_least_the_largest_call_the_file_records(tmp_path: Path) -> None:
    path = large_session(tmp_path)
    table = TABLE.find("claude-opus-4-6")
    assert table is not None and table.context_window == 200_000
    s = stats(path, cache=False)
    assert s.context is not None and s.context.kind == "anchored"
    # the model took a prompt of 230,000 and wrote 500 back: its window holds both
    assert s.context_window == 230_500 and s.window_assumed == 200_000
    assert s.context_ratio == round(s.context.tokens / 230_500, 4) <= 1.0
    # compress decides against the same window
    report = compress_file(path, Options(), cache=False).report
    assert report.context_window == 230_500


def test_stats_says_the_window_was_raised_and_why(tmp_path: Path) -> None:
    path = large_session(tmp_path)
    text = run_ctxpack("stats", str(path), "--top", "0")
    assert text.code == 0, text.err
    said = " ".join(text.out.split())
    assert "of 230,500 (" in said
    assert ("window 230,500: the largest call the file records (prompt and reply), more "
            "than the 200,000 assumed for claude-opus-4-6") in said
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    assert (doc["context_window"], doc["context_window_assumed"]) == (230_500, 200_000)


def with_tail(path: Path, words: int) -> Path:
    """`path` with a message of the person's, `words` words long, after its last reply."""
    with path.open("a") as out:
        out.write(claude_code_line("user", 2, "assistant1", "more " * words))
    return path


@pytest.mark.parametrize(("prompt", "words", "why"), [
    (230_000, 2_000, "the window is the least the model's can be (the largest call "
                     "recorded), and the bill adds what came after the last call's prompt "
                     "as counted"),
    (150_000, 60_000, "the next call would not fit")])
def test_a_bill_over_the_window_says_so(tmp_path: Path, prompt: int, words: int,
                                        why: str) -> None:
    path = with_tail(large_session(tmp_path, prompt=prompt), words)
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    over = doc["context"]["tokens"] - doc["context_window"]
    assert over > 0 and doc["context_ratio"] > 1
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert f"over the window by {over:,}: {why}" in said
    # a bill within the window says nothing of it
    within = " ".join(run_ctxpack("stats", str(large_session(tmp_path, prompt=prompt)),
                                  "--top", "0").out.split())
    assert "over the window" not in within


def test_a_call_within_the_window_leaves_it_as_assumed(tmp_path: Path) -> None:
    s = stats(large_session(tmp_path, prompt=150_000), cache=False)
    assert s.context_window == 200_000 and s.window_assumed is None
    doc = json.loads(run_ctxpack("stats", str(large_session(tmp_path, prompt=150_000)),
                                 "--json").out)["files"][0]
    assert doc["context_window_assumed"] is None
    assert "the largest call" not in run_ctxpack("stats", str(tmp_path / "large.jsonl")).out


def test_model_asks_of_that_models_own_window(tmp_path: Path) -> None:
    # `--model` measures the context against the model named, whatever the file ran on
    s = stats(large_session(tmp_path), "claude-opus-4-6", cache=False)
    assert s.context_window == 200_000 and s.window_assumed is None


@pytest.mark.corpus
def test_the_managed_agent_session_is_not_over_a_window_it_ran_within() -> None:
    if not MANAGED.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    # the prompt sizes the file records, read here without ctxpack
    sizes = []
    for line in MANAGED.read_text().splitlines():
        raw = json.loads(line).get("raw", {})
        if raw.get("type") == "span.model_request_end":
            u = raw["model_usage"]
            sizes.append(u["input_tokens"] + u["cache_creation_input_tokens"]
                         + u["cache_read_input_tokens"])
    assert max(sizes) > 200_000  # past the window assumed for "claude"
    s = stats(MANAGED, cache=False)
    assert s.window_assumed == 200_000 and s.context_window is not None
    assert s.context_window >= max(sizes)
    assert s.context_ratio is not None and s.context_ratio <= 1.0


def test_the_split_uses_the_slope_the_files_own_calls_show() -> None:
    # each call's prompt grows exactly as the count (a slope of 1.0, where the table says
    # 1.21 for the model) over 6,000 tokens sent but not logged
    counts = [1_000] * 20
    calls = [RecordedCall(k, 1_000 * k + 3 + 6_000, None, "claude-opus-4-6")
             for k in range(1, 20)]
    b = bill(counts, calls, model="claude-opus-4-6", format="claude-code", exact=False,
             estimated=False)
    assert b.kind == "anchored" and b.slope == pytest.approx(1.0, abs=0.005)
    assert b.slope != slope_of("claude-opus-4-6")
    assert b.not_in_file == pytest.approx(6_000, abs=100)
    assert b.visible + b.not_in_file == b.tokens == round(b.slope * b.counted + b.overhead)


def test_a_file_whose_calls_show_no_slope_keeps_the_tables() -> None:
    # two calls, too close together to read a slope off: the table's stands
    calls = [RecordedCall(1, 20_100, None, "claude-opus-4-6"),
             RecordedCall(3, 20_300, None, "claude-opus-4-6")]
    b = bill([100, 100, 100, 100], calls, model="claude-opus-4-6", format="claude-code",
             exact=False, estimated=False)
    assert b.slope == slope_of("claude-opus-4-6")


def fitted_for(path: Path) -> dict:
    run = run_ctxpack("calibrate", str(path), "--json")
    assert run.code == 0, run.err
    # the fit of the model that made most of the calls (edgerunner switches models for
    # its last 3): the one whose steps the bill's own fit reads
    return max(json.loads(run.out), key=lambda fit: fit["calls"])


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["codex/edgerunner__codex-session.jsonl",
                                  "codex/rtchess__exported-session.jsonl",
                                  "claude-code/solsmile__claude-session.jsonl"])
def test_sessions_split_as_calibrate_fits_them(name: str) -> None:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    fitted = fitted_for(path)
    c = stats(path, cache=False).context
    assert c is not None and c.kind == "anchored"
    # the slope the split is made with is the one calibrate reads off the file, not the
    # table's
    assert c.after is not None and round(c.after, 3) == fitted["slope"]
    assert c.after != slope_of(load(path).calls[-1].model)
    assert 0 < c.not_in_file == c.tokens - c.visible == c(0) and c(c.counted) == c.tokens
    # what the file does not hold is the system prompt and tool schemas the agent sends:
    # within 15% of the overhead calibrate fits. (solsmile, a resumed session, steps up
    # more steeply than its prompts grow as a whole: the last call's gap, 5,815, took the
    # slope's error over the whole prompt off it, where its first call shows 21,523)
    assert c.not_in_file == pytest.approx(fitted["overhead"], rel=0.15)


SPOTTER = CORPUS / "claude-code" / "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
UNLOGGED = 12_000  # what this agent sends besides the messages (the table assumes 25,000)
WORDS = "the parser reads each record and counts its tokens once " * 12


def steps(n: int, billed: Callable[[int], int]) -> list[str]:
    """A Claude Code session of `n` calls, each a request and a short reply, the call
    billed `billed` of a rough count of its prompt."""
    out, parent, rough = [], None, 3
    for k in range(1, n + 1):
        out.append(claude_code_line("user", k, parent, f"step {k}: {WORDS}"))
        rough += len(WORDS) // 5 + 8
        out.append(claude_code_line(
            "assistant", k, f"user{k}", [{"type": "text", "text": f"done {k}"}],
            id=f"m{k}", model="claude-opus-4-6", usage=usage(billed(rough), 10)))
        rough += 8
        parent = f"assistant{k}"
    return out


def compacted_session(tmp_path: Path, after: int | None = None) -> Path:
    """A Claude Code session of four calls, each billed its prompt (slope × a rough count
    of it) plus `UNLOGGED`, then Claude Code's compaction: a boundary and its summary, and
    (`after`) one call recorded on the new context, billed that."""
    slope = slope_of("claude-opus-4-6")
    out = steps(4, lambda rough: round(slope * rough) + UNLOGGED)
    out.append(json.dumps({
        "parentUuid": None, "logicalParentUuid": "assistant4", "isSidechain": False,
        "sessionId": "s", "type": "system", "subtype": "compact_boundary",
        "content": "Conversation compacted", "uuid": "boundary",
        "timestamp": "2026-01-01T00:00:00Z",
        "compactMetadata": {"trigger": "auto", "preTokens": 20_000}}) + "\n")
    summary = json.loads(claude_code_line("user", 5, "boundary", "This session is being "
                                          "continued: the parser was written. " + WORDS))
    summary["isCompactSummary"] = True
    out.append(json.dumps(summary) + "\n")
    if after is not None:
        out.append(claude_code_line("assistant", 5, "user5", [{"type": "text", "text": "ok"}],
                                    id="m5", model="claude-opus-4-6", usage=usage(after, 5)))
    path = tmp_path / "compacted.jsonl"
    path.write_text("".join(out))
    return path


def test_after_a_compaction_the_overhead_measured_before_it_stands(tmp_path: Path) -> None:
    path = compacted_session(tmp_path)
    s = stats(path, cache=False)
    c = s.context
    assert c is not None and s.outside["messages"] == 8  # the four calls, compacted
    # no call since the compaction: the calls before it said what is sent unlogged
    assert c.kind == "calibrated" and abs(c.overhead - UNLOGGED) < 300
    assert c.tokens == round(c.slope * c.counted + c.overhead)
    assert c.not_in_file == round(c.overhead)
    # a loaded transcript, and compress, bill it the same
    assert stats(load(path), cache=False).to_dict() == s.to_dict()
    report = compress_file(path, Options(), cache=False).report
    assert report.billed["tokens_before"] == c.tokens
    text = " ".join(run_ctxpack("stats", str(path)).out.split())
    assert f"context as billed: {c.tokens:,} of" in text
    assert f"+ {round(c.overhead):,} sent but not logged (measured on the 4 calls before " \
        "the compaction)" in text, text


def test_a_call_after_the_compaction_anchors_the_bill_again(tmp_path: Path) -> None:
    s = stats(compacted_session(tmp_path, after=40_000), cache=False)
    c = s.context
    assert c is not None and c.kind == "anchored" and c.calls == 1
    assert 40_000 < c.tokens < 40_000 + 100  # the prompt recorded, and its short reply


def test_compress_of_a_file_billed_below_its_count_is_billed_as_it_said(
        tmp_path: Path) -> None:
    # every call billed below the calibrated count of its prompt, of an agent a config
    # says sends nothing besides the messages (of Claude Code as the table knows it, which
    # sends 25,000, such usage is no prompt size: test_recorded): the file's own ratio
    # bills it, none of it outside the file; what compress wrote is billed so again, not
    # as a file with no usage
    path, written = tmp_path / "below.jsonl", tmp_path / "out.jsonl"
    path.write_text("".join(steps(8, lambda rough: rough)))
    config = tmp_path / "config.yaml"
    config.write_text("calibration:\n  - {name: claude-opus-4-6, slope: 1.21, overhead: 0}\n")
    table = load_config(str(config)).models
    before = stats(path, cache=False, table=table).context
    assert before is not None and before.kind == "anchored" and before.not_in_file == 0
    assert before.slope < slope_of("claude-opus-4-6")
    said = " ".join(run_ctxpack("stats", str(path), "--config", str(config)).out.split())
    assert "none of it counted as not in the file: the last call anchored on was billed " \
        "below the calibrated count of its prompt" in said
    run = run_ctxpack("compress", str(path), "--budget", str(before.tokens // 2), "-o",
                      str(written), "--config", str(config))
    assert run.code == 0, run.err
    after = stats(written, cache=False, table=table).context
    assert after is not None and (after.kind, after.not_in_file) == ("anchored", 0)
    assert after.error is not None
    assert f"-> {after.tokens:,} tokens (anchored; expected error ±{after.error:.1%}), 0 of " \
        "them sent but not in the file" in " ".join(run.err.split())


CODEX_UNLOGGED = 6_300  # what this Codex session sends besides its messages (tool schemas)
TASK = "Rates with more than two decimals are rounded wrong in parse_rate; find why and fix it."
# each step: a command, what it printed, and the prompt size the provider recorded for the
# call that asked for it (1.01 × its prompt as counted, plus CODEX_UNLOGGED, give or take)
CODEX_STEPS = [
    ("rg -n 'def parse_rate' src", "\n".join(
        f"src/rates/module_{k}.py:{10 + k}: def parse_rate(value: str) -> Decimal:"
        for k in range(40)), 6_781),
    ("sed -n 1,160p src/rates/parse.py", "\n".join(
        f"    {k:>3}  amount = Decimal(raw[{k}]).quantize(Decimal('0.01'))  # rule {k}"
        for k in range(160)), 7_630),
    ("python -m pytest tests/test_parse.py -q", "\n".join(
        f"tests/test_parse.py::test_case_{k} PASSED" for k in range(120)), 11_905),
    ("git diff --stat", "\n".join(f" src/rates/module_{k}.py | {k % 7 + 1} +-"
                                  for k in range(60)), 13_399),
    ("cat docs/rates.md", "\n".join(f"Rates are read from the feed at step {k}; a missing "
                                     "value keeps the last one." for k in range(150)), 14_180),
]


def codex_session(tmp_path: Path, compacted: bool, spans: Sequence[int | None] = (0,),
                  name: str = "") -> Path:
    """A Codex rollout (CLI 0.128, gpt-5.4) of five shell steps, each call's usage in its
    `token_count` event; `compacted`: then the CLI's compaction (a `compacted` line whose
    replacement history is the task and a summary, `context_compacted`, a new turn) and
    the person's next message, with no call recorded since. `spans`: the steps are made
    once a span, each span after a compaction and the person's next message, the prompts
    recorded for a span's calls `spans[k]` tokens above CODEX_STEPS' (None: it makes no
    call)."""
    def line(kind: str, payload: object) -> dict:
        return {"timestamp": "2026-03-02T10:00:00.000Z", "type": kind, "payload": payload}

    def message(role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    def counts(prompt: int, total: int) -> dict:
        def one(n: int) -> dict:
            return {"input_tokens": n, "cached_input_tokens": max(0, n - 900),
                    "output_tokens": 120, "reasoning_output_tokens": 0,
                    "total_tokens": n + 120}
        return line("event_msg", {"type": "token_count", "info": {
            "total_token_usage": one(total), "last_token_usage": one(prompt),
            "model_context_window": 258_400}})

    turn = {"cwd": "/home/dev/rates", "approval_policy": "on-request", "model": "gpt-5.4"}

    def compaction(k: int, asked: str) -> list[dict]:
        summary = (f"parse_rate quantizes to Decimal('0.01') in src/rates/parse.py; the tests "
                   f"pass (pass {k}). Next: round half-even.")
        return [line("compacted", {"message": summary, "replacement_history": [
                    message("user", TASK), message("user", summary)]}),
                line("event_msg", {"type": "context_compacted"}),
                line("turn_context", {"turn_id": f"t{k + 1}", **turn}),
                line("response_item", message("user", asked))]

    records = [
        line("session_meta", {"id": "019c2f6e-7d1a", "cwd": "/home/dev/rates",
                              "originator": "codex_cli_rs", "cli_version": "0.128.0",
                              "base_instructions": {"text": "You are Codex, a coding agent "
                                                    "based on GPT-5.\n" * 30}}),
        line("turn_context", {"turn_id": "t1", **turn}),
        line("response_item", message("user", "<environment_context>\n  <cwd>/home/dev/rates"
                                              "</cwd>\n</environment_context>")),
        line("response_item", message("user", TASK)),
        line("event_msg", {"type": "user_message", "message": TASK}),
        line("event_msg", {"type": "token_count", "info": None})]
    total = 0
    for s, offset in enumerate(spans):
        if s:
            records += compaction(s, "Check the other parsers for the same rounding.")
        for k, (command, printed, billed) in enumerate(CODEX_STEPS if offset is not None
                                                       else ()):
            total += billed + (offset or 0)
            records += [
                line("response_item", message("assistant", f"Running `{command}`.")),
                line("response_item", {"type": "function_call", "name": "shell_command",
                                       "arguments": json.dumps({"command": command}),
                                       "call_id": f"call_{s}_{k}"}),
                counts(billed + (offset or 0), total),
                line("response_item", {"type": "function_call_output",
                                       "call_id": f"call_{s}_{k}",
                                       "output": f"Exit code: 0\nOutput:\n{printed}"})]
    if compacted:
        records += compaction(len(spans), "Make it round half-even, with a test.")
    path = tmp_path / (name or f"rollout{'-compacted' * compacted}.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_after_a_codex_compaction_the_overhead_measured_before_it_stands(
        tmp_path: Path) -> None:
    before = stats(codex_session(tmp_path, compacted=False), cache=False).context
    assert before is not None and before.kind == "anchored"
    path = codex_session(tmp_path, compacted=True)
    s = stats(path, cache=False)
    c = s.context
    assert c is not None and s.outside["messages"] == 16  # the steps, compacted (the
    # task the replacement history states again is held, as the first time: not outside)
    # no call since the compaction: the five before it said what is sent unlogged (the
    # table's 5,500 for Codex is not this agent's), as they split the bill before it
    assert c.kind == "calibrated" and abs(c.not_in_file - CODEX_UNLOGGED) < 100
    assert abs(c.not_in_file - before.not_in_file) <= 2
    assert c.tokens == round(c.slope * c.counted + c.overhead) < before.tokens
    # a loaded transcript (its system prompt in both contexts), and compress, bill it the same
    assert stats(load(path), cache=False).to_dict() == s.to_dict()
    assert compress_file(path, Options(), cache=False).report.billed["tokens_before"] == \
        c.tokens


def context_of(path: Path) -> dict:
    """What `ctxpack stats --json` says of the context as billed."""
    said = run_ctxpack("stats", "--json", str(path))
    assert said.code == 0, said
    return json.loads(said.out)["files"][0]["context"]


def test_a_codex_session_compacted_twice_is_billed_on_the_newest_context_with_calls(
        tmp_path: Path) -> None:
    """The context before the newest compaction that had calls made on it says what is
    sent besides the messages: a compaction with no call before it leaves the one before
    standing (not the table's 5,500), and calls made between two compactions take its
    place."""
    first = context_of(codex_session(tmp_path, False, name="first.jsonl"))
    quiet = context_of(codex_session(tmp_path, True, spans=(0, None), name="quiet.jsonl"))
    assert first["kind"] == "anchored" and quiet["kind"] == "calibrated"
    assert abs(quiet["not_in_file"] - first["not_in_file"]) <= 2
    assert abs(quiet["not_in_file"] - CODEX_UNLOGGED) < 100
    # the calls between the compactions sent 3,000 more unlogged (tools an MCP server added)
    second = context_of(codex_session(tmp_path, False, spans=(0, 3_000), name="second.jsonl"))
    busy = context_of(codex_session(tmp_path, True, spans=(0, 3_000), name="busy.jsonl"))
    assert second["kind"] == "anchored" and busy["kind"] == "calibrated"
    assert busy["not_in_file"] - quiet["not_in_file"] > 2_500
    # an anchored bill's split is the file's own fit, of the calls on every context it
    # holds, as calibrate fits the file: the calls before the first compaction, which
    # sent 3,000 less, are in it
    fitted = json.loads(run_ctxpack("calibrate", str(tmp_path / "second.jsonl"), "--json").out)
    assert second["not_in_file"] == fitted[0]["overhead"]
    assert quiet["not_in_file"] < second["not_in_file"] < busy["not_in_file"]


@pytest.mark.parametrize(("field", "bad", "named"), [
    ("cached_input_tokens", "5881",
     "recorded usage cannot be true: last_token_usage.cached_input_tokens '5881' (a token "
     "count is a whole number, zero or more)"),
    ("input_tokens", 5_000_000_000, "recorded usage cannot be true: last_token_usage."
     "input_tokens 5,000,000,000 (more than 2,097,152"),
], ids=["no-count", "past-the-window"])
def test_a_codex_call_before_an_older_compaction_that_cannot_be_true_is_set_aside(
        tmp_path: Path, field: str, bad: object, named: str) -> None:
    """A call made before a compaction older than the newest with calls bills nothing, but
    its usage is in the table: one that cannot be true is named and taken out of it, as a
    call of the context is (it was neither, and its share stayed in the totals)."""
    honest = codex_session(tmp_path, True, spans=(0, 0), name="honest.jsonl")
    lines = honest.read_text().splitlines()
    at = next(n for n, text in enumerate(lines)
              if (json.loads(text)["payload"].get("info") or {}).get("last_token_usage"))
    record = json.loads(lines[at])
    usage = record["payload"]["info"]["last_token_usage"]
    was = dict(usage)
    usage[field] = bad
    lines[at] = json.dumps(record)
    poisoned = tmp_path / "bad.jsonl"
    poisoned.write_text("\n".join(lines) + "\n")
    assert run_ctxpack("validate", str(honest)).code == 0
    said = run_ctxpack("validate", str(poisoned))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    problems = [x for x in said.out.splitlines() if x.startswith(f"{poisoned}:")]
    assert len(problems) == 1 and problems[0].startswith(f"{poisoned}:{at + 1}: {named}"), \
        said.out
    h, b = (json.loads(run_ctxpack("stats", "--json", str(p)).out)["files"][0]
            for p in (honest, poisoned))
    assert [x["line"] for x in b["usage_set_aside"]] == [at + 1] and not h["usage_set_aside"]
    hu, bu = h["usage"], b["usage"]
    assert bu["calls"] == hu["calls"] - 1 and bu["calls_set_aside"] == 1
    assert bu["input_tokens"] == hu["input_tokens"] - was["input_tokens"]
    assert bu["output_tokens"] == hu["output_tokens"] - was["output_tokens"]
    # it billed nothing either way
    assert b["context"] == h["context"]


@pytest.mark.corpus
def test_a_cut_spotter_session_is_billed_near_its_next_recorded_prompt(tmp_path: Path) -> None:
    if not SPOTTER.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    lines = SPOTTER.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:1589]))  # after the compaction, before its next call
    nxt = json.loads(lines[1589])
    assert nxt["type"] == "assistant" and not nxt["isSidechain"]
    u = nxt["message"]["usage"]
    recorded = (u["input_tokens"] + u["cache_creation_input_tokens"]
                + u["cache_read_input_tokens"])
    c = stats(cut, cache=False).context
    assert c is not None and c.kind == "calibrated" and c.error is not None
    assert recorded == 32_015
    # (with the table's 25,000 it was 29,363: 8.3% low, outside the error it states)
    assert abs(c.tokens - recorded) / recorded <= c.error


def test_calls_whose_prompts_do_not_grow_keep_the_tables_slope() -> None:
    # usage made up (the same every call) while the messages grow: no slope to read off,
    # and the bill errs on the side of acting, never below the table's count
    counts = [600] * 20
    calls = [RecordedCall(k, 1_000, None, "claude-opus-4-6") for k in range(1, 20)]
    b = bill(counts, calls, model="claude-opus-4-6", format="claude-code", exact=False,
             estimated=False)
    assert b.slope == slope_of("claude-opus-4-6")
    assert b.tokens >= round(b.slope * b.counted)


def test_a_compressed_file_is_billed_with_the_slope_its_calls_showed(tmp_path: Path) -> None:
    sample = SAMPLES / "refactor.codex.jsonl"
    before = stats(sample, cache=False).context
    assert before is not None and before.slope != slope_of("gpt-5.1-codex")  # its own
    budget = before.tokens - before.visible // 3
    done = compress_file(sample, Options(budget=budget), cache=False)
    out = tmp_path / "compressed.jsonl"
    out.write_bytes(done.data)
    after = stats(out, cache=False).context
    # the calls it keeps are of the context before: the slope they showed is carried
    assert after is not None and after.calls == 1
    assert after.slope == pytest.approx(before.slope, abs=1e-6)
    # and the slope the input's bill converted reasoning held encrypted at
    assert after.converted == before.converted
    assert after.tokens == done.report.billed["tokens_after"]
    # so compress of its output, with the same budget, bills it as it did: no change
    assert compress_file(out, Options(budget=budget), cache=False).data == done.data


def test_an_overhead_that_fills_the_window_is_said_by_stats_and_refused_by_compress(
        tmp_path: Path) -> None:
    """A Claude Code file that records no call is billed what the table says the agent
    sends besides its messages: a config's window that this alone fills leaves no prompt
    room, as a config's own overhead past the window is refused. stats says so (text and
    JSON), compress stops at once (exit 3, nothing written), in the library as well."""
    from ctxpack.errors import CannotFit

    from .helpers import assert_clean_error

    bare = tmp_path / "bare.jsonl"
    records = [json.loads(line) for line in
               (SAMPLES / "coding-agent.claude-code.jsonl").read_text().splitlines()]
    for r in records:
        if isinstance(r.get("message"), dict):
            r["message"].pop("usage", None)
    bare.write_text("".join(json.dumps(r) + "\n" for r in records))

    def configured(window: int) -> dict[str, str]:
        config = tmp_path / f"w{window}.yaml"
        config.write_text(f"models: [{{name: claude-opus-4-6, context_window: {window}}}]\n")
        return {"CTXPACK_CONFIG": str(config)}

    small = configured(20_000)
    doc = json.loads(run_ctxpack("stats", "--json", str(bare), env=small).out)["files"][0]
    c = doc["context"]
    assert c["kind"] == "calibrated" and c["not_in_file"] >= doc["context_window"] == 20_000
    assert f"the {c['not_in_file']:,} tokens sent besides the messages" in c["no_room"]
    assert "not below the 20,000-token window of claude-opus-4-6" in c["no_room"]
    text = " ".join(run_ctxpack("stats", str(bare), env=small).out.split())
    assert f"no room for the messages: {c['no_room']}" in text
    out = tmp_path / "out.jsonl"
    assert_clean_error(run_ctxpack("compress", str(bare), "-o", str(out), env=small), 3,
                       "cannot fit the context window: ", c["no_room"])
    assert not out.exists()
    with pytest.raises(CannotFit, match="not below the 20,000-token window"):
        compress_file(bare, table=load_config(small["CTXPACK_CONFIG"]).models)
    # a window with room for them has nothing to say, nor has a file whose calls show what
    # is sent (its window is then at least its largest call)
    roomy = configured(40_000)
    doc = json.loads(run_ctxpack("stats", "--json", str(bare), env=roomy).out)["files"][0]
    assert doc["context"]["no_room"] == ""
    assert run_ctxpack("compress", str(bare), "-o", str(out), env=roomy).code == 0
    sample = SAMPLES / "coding-agent.claude-code.jsonl"
    doc = json.loads(run_ctxpack("stats", "--json", str(sample), env=small).out)["files"][0]
    assert doc["context"]["kind"] == "anchored" and doc["context"]["no_room"] == ""
    text = " ".join(run_ctxpack("stats", str(sample), env=small).out.split())
    assert f"not in the file {doc['context']['not_in_file']:,}" in text
    assert "no room" not in text and "none of it counted" not in text


def test_a_budget_not_above_what_is_sent_besides_the_messages_is_refused_before_any_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample's calls show 25,914 tokens sent besides its messages: a budget of that or
    less leaves no prompt room, so compress says so at once (exit 3, one line, nothing
    written), before any stage: no summary is ever drafted. A token more is worked on."""
    import ctxpack
    from ctxpack.compression import summary
    from ctxpack.errors import CannotFit

    from .helpers import assert_clean_error

    sample = SAMPLES / "coding-agent.claude-code.jsonl"
    c = json.loads(run_ctxpack("stats", "--json", str(sample)).out)["files"][0]["context"]
    sent = c["not_in_file"]
    assert c["kind"] == "anchored" and sent > 20_000
    out = tmp_path / "out.jsonl"
    for budget in (sent, 1_000):
        said = (f"the {sent:,} tokens sent besides the messages (system prompt, tool "
                f"definitions: as the recorded calls show) are not below the budget of "
                f"{budget:,} tokens")
        run = run_ctxpack("compress", str(sample), "--budget", str(budget), "-o", str(out))
        assert_clean_error(run, 3, f"cannot fit the budget: {said}")
        assert not out.exists()

    def drafted(name: str) -> None:
        raise AssertionError(f"the {name} summarizer was asked for a summary")

    monkeypatch.setattr(summary, "summarizer", drafted)
    with pytest.raises(CannotFit, match=f"not below the budget of {sent:,} tokens"):
        ctxpack.compress(sample, budget=sent)
    with pytest.raises(AssertionError, match="summarizer was asked"):
        ctxpack.compress(sample, budget=sent + 1)
