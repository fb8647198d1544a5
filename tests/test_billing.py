"""Counts that say what they are: the context as the provider would bill it in `stats`
(text and JSON), and `compress` deciding with it (ctxpack.calibration.bill)."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ctxpack
from ctxpack.breakdown import stats
from ctxpack.calibration import ANCHORED_ERROR, LEAST_ERROR, bill, least_billed, slope_of
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.config import load_config
from ctxpack.errors import CannotFit, UsageError
from ctxpack.models import TABLE, Calibration
from ctxpack.transcript import RecordedCall

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack as run_ctxpack

CLAUDE_CODE = SAMPLES / "coding-agent.claude-code.jsonl"


def last_billed_prompt(path: Path) -> int:
    """The prompt size of the last call the file records, read here without ctxpack."""
    sizes = [sum(u.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                      "cache_read_input_tokens"))
             for line in path.read_text().splitlines() if line.strip()
             for r in [json.loads(line)] if r.get("type") == "assistant"
             and (u := r["message"].get("usage"))]
    return sizes[-1]


def test_an_exact_count_is_the_bill_and_nothing_is_outside_the_file() -> None:
    s = stats(SAMPLES / "support-chat.openai.jsonl", cache=False)
    assert s.context is not None and s.context.kind == "exact"
    assert s.context.tokens == s.tokens and s.context.not_in_file == 0
    assert s.context.error == 0.0
    assert s.context_ratio == round(s.tokens / s.context_window, 4)


def calls_since_compaction(path: Path, into: Path, since: bool = True) -> Path:
    """`path` with the usage of every reply before its newest compaction taken out: its
    only calls those made on the context as it stands (not `since`: the usage of every
    reply after it taken out, its only calls those made before it)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cut = max(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    for r in records[:cut] if since else records[cut:]:
        if isinstance(r.get("message"), dict):
            r["message"].pop("usage", None)
    out = into / path.name
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def test_a_claude_code_session_is_anchored_on_its_last_recorded_call(tmp_path: Path) -> None:
    s = stats(CLAUDE_CODE, cache=False)
    c = s.context
    assert c is not None and c.kind == "anchored" and c.calls > 5
    # the reply of the last call is the newest assistant message, so the context is that
    # prompt plus the reply and what came after: a little more than the recorded size
    assert last_billed_prompt(CLAUDE_CODE) < c.tokens < last_billed_prompt(CLAUDE_CODE) + 2_000
    # the slope its own calls show (near the table's); not in the file: the overhead
    # `calibrate` fits the file, in the file the rest. That fit is of every context the
    # file holds, the calls before its compaction on the context they were made on too:
    # the bill of the file with only the calls since differs
    assert c.after is not None and abs(c.after - slope_of("claude-opus-4-6")) < 0.15
    fitted = json.loads(run_ctxpack("calibrate", str(CLAUDE_CODE), "--json").out)[0]
    assert (c.after, c.not_in_file) == (fitted["slope"], fitted["overhead"])
    since = stats(calls_since_compaction(CLAUDE_CODE, tmp_path), cache=False).context
    assert since is not None and since.kind == "anchored" and since.after != c.after
    assert c.not_in_file == c.tokens - c.visible > 5 * s.tokens  # most is not in the file
    # other messages are billed on the line from that overhead through the bill
    assert c.overhead == c.not_in_file and c(c.counted) == c.tokens
    assert s.context_ratio == round(c.tokens / s.context_window, 4)
    assert 0 <= c.error < 0.02


def test_a_loaded_transcript_is_compressed_on_the_bill_of_its_file() -> None:
    # the compacted sample, calls made since its compaction: the bill's fit reads those
    # made before it too, whether compress is given the file or the Transcript loaded from
    # it, so a budget worked out from either is the one compress then meets
    c = stats(CLAUDE_CODE, cache=False).context
    assert c is not None and c.after is not None  # split by the file's own fit
    budget = c.not_in_file + c.visible // 2
    _, of_file = ctxpack.compress(CLAUDE_CODE, budget=budget, cache=False)
    _, of_loaded = ctxpack.compress(ctxpack.load(CLAUDE_CODE), budget=budget, cache=False)
    assert of_loaded.billed == of_file.billed
    assert of_loaded.billed["tokens_before"] == c.tokens
    assert of_loaded.billed["not_in_file"] == c.not_in_file


def test_usage_of_another_model_than_the_one_named_is_not_used(tmp_path: Path) -> None:
    # the same session with no usage recorded, as the bill for another model must be
    bare = tmp_path / "bare.jsonl"
    records = [json.loads(line) for line in CLAUDE_CODE.read_text().splitlines()]
    for r in records:
        if isinstance(r.get("message"), dict):
            r["message"].pop("usage", None)
    bare.write_text("".join(json.dumps(r) + "\n" for r in records))

    def context(path: Path, model: str) -> dict:
        done = run_ctxpack("stats", "--json", "-m", model, str(path))
        assert done.code == 0, done.err
        return json.loads(done.out)["files"][0]["context"]

    other, none = context(CLAUDE_CODE, "gpt-4o"), context(bare, "gpt-4o")
    assert other["kind"] != "anchored" and other["calls"] == 0
    assert other["tokens"] == none["tokens"] and other["usage_of_another_model"] == \
        "claude-opus-4-6" and none["usage_of_another_model"] == ""
    said = " ".join(run_ctxpack("stats", "-m", "gpt-4o", str(CLAUDE_CODE)).out.split())
    assert ("recorded usage not used: it is of claude-opus-4-6, the model that made the "
            "calls, not gpt-4o") in said
    # the model that made them, named, is anchored on them (a dated name is that model)
    for same in ("claude-opus-4-6", "claude-opus-4-6-20260101", "CLAUDE-OPUS-4-6@20260101",
                 "us.anthropic.claude-opus-4-6-v1:0"):
        own = context(CLAUDE_CODE, same)
        assert own["kind"] == "anchored" and own["usage_of_another_model"] == ""
    # a name the calls' model begins with is another model, though one table entry
    # (claude-opus-4) bills both; and so is a later one the calls' name begins
    for named in ("claude-opus-4", "claude-opus-4-20250514", "claude-opus-4-6-1"):
        shorter = context(CLAUDE_CODE, named)
        assert shorter["kind"] == "calibrated" and shorter["calls"] == 0
        assert shorter["usage_of_another_model"] == "claude-opus-4-6"
    # compress decides with the same bill
    report = compress_file(CLAUDE_CODE, Options(), model="gpt-4o", cache=False).report
    assert report.billed["kind"] == other["kind"]
    assert report.billed["tokens_before"] == other["tokens"]
    assert ("the recorded usage is of claude-opus-4-6, the model that made the calls, not "
            "gpt-4o: not used; billed as with no usage recorded") in report.warnings


def test_a_claude_model_without_recorded_usage_is_calibrated() -> None:
    s = stats(SAMPLES / "multi-round.anthropic.jsonl", cache=False)
    c = s.context
    assert c is not None and c.kind == "calibrated" and not s.exact
    assert c.tokens == round(slope_of("claude") * s.tokens) == c.visible
    assert c.error == 0.05


def test_a_model_nothing_calibrates_is_estimated() -> None:
    s = stats(SAMPLES / "multi-round.anthropic.jsonl", "gemini-2.0-flash", cache=False)
    assert s.context is not None and s.context.kind == "estimated"
    assert s.context.tokens == s.tokens and s.context.error is None


def test_stats_json_and_text_say_the_kind_and_both_parts(tmp_path: Path) -> None:
    run = run_ctxpack("stats", str(CLAUDE_CODE), "--json")
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert doc["schema_version"] == 5
    c = doc["files"][0]["context"]
    assert c["kind"] == "anchored"
    assert c["tokens"] == c["visible"] + c["not_in_file"]
    assert "not_in_file_tokens" not in doc["files"][0]["usage"]
    text = run_ctxpack("stats", str(CLAUDE_CODE))
    assert f"context as billed: {c['tokens']:,} of 200,000" in text.out.replace("\n", " ")
    assert f"not in the file {c['not_in_file']:,}" in text.out.replace("\n", " ")


def test_a_reply_whose_thinking_is_stored_empty_counts_at_its_output(tmp_path: Path) -> None:
    def line(kind: str, n: int, parent: str | None, content: object, **more: object) -> str:
        message = {"role": kind, "content": content, **more}
        return json.dumps({"type": kind, "uuid": f"{kind}{n}", "parentUuid": parent,
                           "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z",
                           "message": message}) + "\n"

    think = [{"type": "thinking", "thinking": "", "signature": "x"},
             {"type": "text", "text": "done"}]
    path = tmp_path / "s.jsonl"
    path.write_text(
        line("user", 1, None, "go")
        + line("assistant", 1, "user1", think, id="m1", model="claude-opus-4-7",
               usage={"input_tokens": 30_000, "output_tokens": 900}))
    s = stats(path, cache=False)
    # the reply counts at its recorded output in the headline and the bill alike (the
    # count its 900 recorded tokens are billed at), what the file does not hold of it
    # under `reasoning`; the bill adds those 900 tokens to the prompt recorded
    assert s.context is not None and s.context.counted == s.tokens
    reply = round(900 / s.context.slope)
    assert reply - 20 <= s.by_role["reasoning"] < reply
    assert abs(s.context.tokens - 30_000 - 900) <= 2, s.context


calls = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 300_000),
                           st.booleans(), st.integers(0, 5_000)), max_size=6)


@given(st.lists(st.integers(0, 5_000), min_size=1, max_size=40), calls,
       st.sampled_from(["claude-opus-4-6", "gpt-5.4", "gpt-4o", "gemini-2.0", None]),
       st.sampled_from(["claude-code", "codex", "openai"]), st.booleans())
def test_nothing_not_in_the_file_is_ever_negative(counts: list[int], drawn: list, model: str,
                                                  format: str, estimated: bool) -> None:
    places = sorted({min(p, len(counts) - 1) for p, *_ in drawn})
    recorded = [RecordedCall(p, b, out, model, hidden)
                for p, (_, b, hidden, out) in zip(places, drawn, strict=False)]
    info = TABLE.find(model or "gpt-4o")
    b = bill(counts, recorded, model=model, format=format,
             exact=bool(info and info.exact), estimated=estimated)
    assert b.kind in ("exact", "calibrated", "anchored", "estimated")
    assert b.not_in_file >= 0 and b.tokens <= b.visible + b.not_in_file
    assert b.counted >= sum(counts)
    assert b(b.counted) == b.tokens or abs(b(b.counted) - b.tokens) <= 1
    assert b(b.counted_at(b.tokens)) <= b.tokens
    # and it is the most: a budget of what a context is billed holds that context
    for budget in (b.tokens, b(b.counted), b(sum(counts))):
        assert b(b.counted_at(budget)) <= budget < b(b.counted_at(budget) + 1) \
            or b.counted_at(budget) == 0


@given(st.lists(st.integers(1, 5_000), min_size=5, max_size=30), st.integers(1, 3),
       st.integers(0, 20_000), st.sampled_from(["claude-opus-4-6", "gpt-5.4"]))
def test_calls_far_below_the_count_after_the_last_sane_one_never_move_the_bill(
        counts: list[int], tail: int, overhead: int, model: str) -> None:
    # sane calls: the calibrated count of each prompt plus what is sent unlogged (never
    # below the count: passed-over calls leave no ratio below the table's to take)
    slope = slope_of(model)
    sane = [RecordedCall(p, math.ceil(slope * (sum(counts[:p]) + 3)) + overhead, None, model)
            for p in range(1, len(counts) - tail)]
    made_up = [RecordedCall(p, 1, None, model) for p in range(len(counts) - tail, len(counts))]
    honest = bill(counts, sane, model=model, format="claude-code", exact=False,
                  estimated=False)
    # (where the last sane call falls just below the slope the file's calls fit, rounding
    # being what it is, the honest bill takes that call's own ratio and puts nothing outside
    # the file; with calls passed over after it, by design, it does not: the bill errs on
    # acting. Nor where it records less than the messages of the first call passed over:
    # Claude Code is known to send more besides them, so usage that did not grow with the
    # messages is no prompt size (test_recorded). Those draws are not what this test is
    # about.)
    assume(honest.overhead > 0)
    assume(sane[-1].billed >= least_billed(slope, sum(counts[:len(sane) + 1]) + 3, 1))
    b = bill(counts, sane + made_up, model=model, format="claude-code", exact=False,
             estimated=False)
    assert honest.kind == b.kind == "anchored" and b.below == 0
    assert (b.tokens, b.slope, b.overhead) == (honest.tokens, honest.slope, honest.overhead)
    assert b.passed == tuple((c.prompt, 1) for c in made_up)
    assert b.calls == len(sane) + len(made_up)
    # with no sane call left the bill is what no usage gives, and says what it passed over
    alone = bill(counts, made_up, model=model, format="claude-code", exact=False,
                 estimated=False)
    none = bill(counts, [], model=model, format="claude-code", exact=False, estimated=False)
    assert (alone.kind, alone.tokens, alone.not_in_file) == \
        (none.kind, none.tokens, none.not_in_file) and alone.below == 1
    assert alone.passed == b.passed


def test_compress_of_a_claude_code_session_acts_at_its_billed_size() -> None:
    counted = stats(CLAUDE_CODE, cache=False)
    c = counted.context
    assert c is not None
    # a budget far above what the file holds, below what the provider bills
    budget = c.tokens - c.visible // 2
    report = compress_file(CLAUDE_CODE, Options(budget=budget)).report
    assert report.summary is not None  # it acted; by the file's own count it had no cause
    assert report.tokens_before < budget < report.billed["tokens_before"]
    assert report.billed["tokens_after"] <= budget
    assert report.billed["kind"] == "anchored" and report.trigger == budget
    # the trigger is a share of the window in billed tokens: 15% of it acts here (the
    # file holds about 2% of the window)
    assert compress_file(CLAUDE_CODE, Options(threshold=0.15)).report.summary is not None
    assert counted.tokens < 0.03 * counted.context_window


def long_chat() -> list[dict[str, str]]:
    """A chat of 20 long rounds (some 114,000 gpt-4o tokens), ending on the user's turn."""
    messages = [{"role": "system", "content": "You help."}]
    for k in range(20):
        messages += [{"role": "user", "content": f"Part {k}: go on with the plan. " * 300},
                     {"role": "assistant", "content": f"Step {k} of the plan is done. " * 300}]
    return [*messages, {"role": "user", "content": "Go on."}]


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_the_default_target_is_under_the_trigger_at_any_threshold(threshold: float) -> None:
    """The target is 5/8 of the trigger where that is under half the window: a low
    --threshold does not leave the context above the trigger it set."""
    messages = long_chat()
    _, report = ctxpack.compress(messages, model="gpt-4o", threshold=threshold)
    window = report.context_window
    assert report.trigger == int(threshold * window) < report.tokens_before
    assert report.target == min(window // 2, round(report.trigger * 5 / 8))
    assert report.tokens_after <= report.target < report.trigger, report
    assert not report.warnings


def test_a_target_asked_for_at_or_above_the_trigger_is_warned_of() -> None:
    messages = long_chat()
    _, report = ctxpack.compress(messages, model="gpt-4o", threshold=0.3, target=60_000)
    assert report.target >= report.trigger
    assert f"the target asked for ({report.target:,} billed tokens) is not below the " \
        f"trigger ({report.trigger:,})" in " ".join(report.warnings)
    _, report = ctxpack.compress(messages, model="gpt-4o", threshold=0.3, target=20_000)
    assert not report.warnings


def test_compress_help_says_its_figures_are_billed_tokens() -> None:
    said = " ".join(run_ctxpack("compress", "--help").out.split())
    assert ("--budget, --target, the --threshold share of the window and the hard limit are "
            "in the model's billed tokens") in said
    assert "not ctxpack's count of the file" in said


def test_the_compress_report_shows_the_visible_and_the_billed_figures(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run = run_ctxpack("compress", str(CLAUDE_CODE), "--threshold", "0.15", "-o", str(out))
    assert run.code == 0, run.err
    said = " ".join(run.err.split())
    before = stats(CLAUDE_CODE, cache=False).context
    assert before is not None and before.error is not None
    assert f"billed: {before.tokens:,} (anchored; expected error ±{before.error:.1%}) -> " \
        in said, said
    # the figures after are what stats says of the output: its bill, its kind and expected
    # error (its own: most of the prompt is then the part not in the file, carried by the
    # lines compress writes; the rest counted), and the part of it not in the file
    c = stats(out, cache=False).context
    assert c is not None and c.error is not None and c.error > before.error
    assert f"-> {c.tokens:,} tokens ({c.kind}; expected error ±{c.error:.1%}), " \
        f"{c.not_in_file:,} of them sent but not in the file" in said, said
    report = json.loads(run_ctxpack("compress", str(CLAUDE_CODE), "--threshold", "0.15", "-o",
                                    str(tmp_path / "again.jsonl"), "--report-json", "-",
                                    "-q").out)["billed"]
    assert (report["kind"], report["error"]) == (before.kind, before.error)
    assert (report["kind_after"], report["error_after"], report["tokens_after"]) == \
        (c.kind, c.error, c.tokens)


def _split_by_its_fit() -> list:
    """Files whose bill stats splits by the file's own fit, where the line through the last
    call would leave another overhead: the Claude Code and Codex samples, a resumed corpus
    session whose steps grow steeper than its prompts as a whole (1.34 and 1.18), and a
    Codex session of an older CLI, which writes a call's usage before its reply (compress
    restates the usage of the records it keeps). And a file of every other format compress
    writes whose calls record their usage: a JSON document (mini-swe-agent, whose record
    compress writes whole), Anthropic messages one a line (stream-json), Gemini CLI, the
    managed-agent events."""
    corpus = [CORPUS / "claude-code" / "solsmile__claude-session.jsonl",
              CORPUS / "codex" / "rtchess__exported-session.jsonl",
              CORPUS / "openai-chat" / "mini-swe-agent__deepseek-chat__django-13265.traj.json"]
    return [CLAUDE_CODE, SAMPLES / "refactor.codex.jsonl",
            SAMPLES / "bugfix.mini-swe-agent.traj.json", SAMPLES / "stream.anthropic.jsonl",
            SAMPLES / "plateau-fix.gemini-cli.jsonl",
            SAMPLES / "export-timeout.anthropic-events.jsonl",
            *(pytest.param(p, id=p.name.split("__")[0], marks=pytest.mark.skipif(
                not p.is_file(), reason="corpus not found beside the checkout"))
              for p in corpus),
            # its last 5 calls' usage made up small: passed over, and the calls compress
            # keeps of them were made on the context before, not since
            pytest.param((CLAUDE_CODE, 5), id="last-5-calls-made-up")]


def last_calls_made_up(path: Path, calls: int, to: Path) -> Path:
    """`path` (Claude Code) with the usage of its last `calls` calls set to 7 tokens, at
    `to`."""
    lines = path.read_text().splitlines()
    records = [json.loads(x) for x in lines]
    ids = list(dict.fromkeys(r["message"]["id"] for r in records
                             if "usage" in r.get("message", {})))
    for n, r in enumerate(records):
        if r.get("message", {}).get("id") in ids[-calls:] and "usage" in r["message"]:
            r["message"]["usage"].update(input_tokens=7, cache_creation_input_tokens=0,
                                         cache_read_input_tokens=0)
            lines[n] = json.dumps(r)
    to.write_text("\n".join(lines) + "\n")
    return to


@pytest.mark.parametrize("path", _split_by_its_fit())
def test_compress_leaves_what_is_not_in_the_file_as_stats_splits_the_input(
        tmp_path: Path, path: Path | tuple[Path, int]) -> None:
    def context(of: Path) -> dict:
        run = run_ctxpack("stats", str(of), "--json")
        assert run.code == 0, run.err
        return json.loads(run.out)["files"][0]["context"]

    if isinstance(path, tuple):
        path = last_calls_made_up(*path, tmp_path / "made-up.jsonl")
    before = context(path)
    assert before["kind"] == "anchored" and before["overhead"] == before["not_in_file"] > 0
    out, report = tmp_path / f"out{path.suffix}", tmp_path / "report.json"
    budget = before["not_in_file"] + before["visible"] // 2
    run = run_ctxpack("compress", str(path), "--budget", str(budget), "-o", str(out),
                      "--report-json", str(report))
    assert run.code == 0, run.err
    billed = json.loads(report.read_text())["billed"]
    after = context(out)
    # what compress says it started from and wrote is what stats says of each file, and
    # what is not in the file is the same in all three (reasoning held encrypted is
    # converted in the output at the slope the input's bill converted it at)
    assert billed["tokens_before"] == before["tokens"] and billed["tokens_after"] == \
        after["tokens"] < before["tokens"]
    assert billed["not_in_file"] == after["not_in_file"] == before["not_in_file"]
    # and each figure's kind and expected error are those stats gives each file
    assert (billed["kind"], billed["error"]) == (before["kind"], before["error"])
    assert (billed["kind_after"], billed["error_after"]) == (after["kind"], after["error"])
    assert billed["as_stats"] is True
    assert f"{billed['tokens_after']:,} tokens ({after['kind']}; expected error " \
        f"±{after['error']:.1%}), {before['not_in_file']:,} of them sent but not in the " \
        "file" in " ".join(run.err.split())


def _compressed_and_stats(path: Path, out: Path, *flags: str) -> tuple[dict, dict]:
    """compress `path` to `out` (to a budget half way from what is not in the file to its
    bill) with `flags`: its JSON report, and stats --json of the output's context."""
    before = json.loads(run_ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    budget = before["not_in_file"] + before["visible"] // 2
    run = run_ctxpack("compress", str(path), "--budget", str(budget), "-o", str(out),
                      "--report-json", "-", "-q", *flags)
    assert run.code == 0, run.err
    after = json.loads(run_ctxpack("stats", "--json", str(out)).out)["files"][0]["context"]
    return json.loads(run.out), after


def test_a_stripped_output_that_keeps_no_recorded_call_is_reported_as_stats_bills_it(
        tmp_path: Path) -> None:
    """Anthropic messages one a line, whose early calls alone record usage: compress
    summarizes them all. Written with `ctxpack` objects, the output carries what the calls
    showed is sent besides the messages; written without them, nothing does, and the
    report says what stats of the output will say (its kind and figure), and why."""
    records = [json.loads(x) for x in (SAMPLES / "stream.anthropic.jsonl").read_text()
               .splitlines()]
    for r in records[13:]:
        if r.get("type") == "assistant":
            r["message"].pop("usage", None)
    early = tmp_path / "early.jsonl"
    early.write_text("".join(json.dumps(r) + "\n" for r in records))
    report, after = _compressed_and_stats(early, tmp_path / "kept.jsonl")
    billed = report["billed"]
    assert (billed["kind_after"], billed["tokens_after"], billed["not_in_file"]) == \
        (after["kind"], after["tokens"], after["not_in_file"])
    assert after["kind"] == "anchored" and after["not_in_file"] > 10_000
    report, after = _compressed_and_stats(early, tmp_path / "bare.jsonl", "--strip-metadata")
    billed = report["billed"]
    assert after["kind"] == "calibrated" and after["not_in_file"] == 0
    assert (billed["kind_after"], billed["error_after"], billed["not_in_file"]) == \
        (after["kind"], after["error"], 0)
    assert billed["as_stats"] is True  # (kind, error and split as stats says them)
    (said,) = [w for w in report["warnings"] if w.startswith("--strip-metadata")]
    assert "in anthropic files it has no place but compress's `ctxpack` objects" in said
    assert f"it keeps no recorded call: `stats` of it bills it calibrated " \
        f"({after['tokens']:,}), as a file that records none, not the " \
        f"{billed['tokens_after']:,} billed here" in said


def test_a_stripped_output_that_keeps_recorded_calls_says_stats_anchors_on_them(
        tmp_path: Path) -> None:
    """mini-swe-agent: the replies compress keeps state the usage of the context before,
    and a document written without its `ctxpack` object has nothing else: stats of it
    anchors on that usage (the kind the report says), and the report says why its figure
    is not the one compress billed. Claude Code and Codex restate that usage: stats of
    the output bills within the two errors, and the warning says which figures differ."""
    report, after = _compressed_and_stats(SAMPLES / "bugfix.mini-swe-agent.traj.json",
                                          tmp_path / "out.json", "--strip-metadata")
    billed = report["billed"]
    assert billed["kind_after"] == after["kind"] == "anchored"
    assert after["tokens"] > billed["tokens_after"]
    (said,) = [w for w in report["warnings"] if w.startswith("--strip-metadata")]
    assert "recorded calls it keeps state usage of the context before: `stats` of it " \
        f"bills it anchored on that, not the {billed['tokens_after']:,} billed here" in said
    for path in (CLAUDE_CODE, SAMPLES / "refactor.codex.jsonl"):
        report, after = _compressed_and_stats(path, tmp_path / f"out{path.suffix}",
                                              "--strip-metadata")
        billed = report["billed"]
        assert billed["kind_after"] == after["kind"] == "anchored"
        assert abs(after["tokens"] - billed["tokens_after"]) <= \
            (billed["error_after"] + after["error"]) * billed["tokens_after"]
        # the JSON says its figures after are not those stats of the output gives
        assert billed["as_stats"] is False
        assert (after["tokens"], after["error"]) != (billed["tokens_after"],
                                                     billed["error_after"])
        (said,) = [w for w in report["warnings"] if w.startswith("--strip-metadata")]
        assert f"anchors on the usage compress restates, so its bill is within the two " \
            f"expected errors of the {billed['tokens_after']:,} billed here" in said
        # (the Claude Code sample's replies hide nothing; the Codex one's hold reasoning)
        assert ("hidden output" in said) == path.name.endswith("codex.jsonl")


def with_hidden_thinking(path: Path, to: Path, hidden: int = 3_000) -> Path:
    """`path` (Claude Code) with every other reply since its compaction holding its
    thinking stored empty, `hidden` more output tokens recorded for it, and every later
    call's prompt that much larger (the provider sends it back), as opus-4-7 writes."""
    records = [json.loads(x) for x in path.read_text().splitlines()]
    cut = max(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    ids = list(dict.fromkeys(r["message"]["id"] for r in records[cut:]
                             if r.get("type") == "assistant"))
    thinks = set(ids[1:-1:2])
    grown = {i: hidden * len(thinks & set(ids[:k])) for k, i in enumerate(ids)}
    for r in records[cut:]:
        if r.get("type") != "assistant":
            continue
        m = r["message"]
        m["usage"]["cache_read_input_tokens"] += grown[m["id"]]
        if m["id"] in thinks:
            m["usage"]["output_tokens"] += hidden
            if not any(b.get("type") == "thinking" for b in m["content"]):
                m["content"].insert(0, {"type": "thinking", "thinking": "", "signature": "s"})
    to.write_text("".join(json.dumps(r) + "\n" for r in records))
    return to


def test_a_stripped_output_keeping_hidden_output_says_its_count_differs(
        tmp_path: Path) -> None:
    """Claude Code whose replies store thinking empty: with `ctxpack` objects, stats of
    the output converts what they hide at the slope the input's bill did (count and bill
    as the report's); written without them, the slope is nowhere in the file, stats
    converts it at the one the restated calls show, and the report says which figures
    will differ: the count, what is not in the file, their error; the bill within both
    errors."""
    path = with_hidden_thinking(CLAUDE_CODE, tmp_path / "thinks.jsonl")
    kept, after = _compressed_and_stats(path, tmp_path / "kept.jsonl")
    billed = kept["billed"]
    assert (kept["tokens_after"], billed["tokens_after"], billed["not_in_file"]) == \
        (after["counted"], after["tokens"], after["not_in_file"])
    assert not [w for w in kept["warnings"] if w.startswith("--strip-metadata")]
    written = {float(x) for x in re.findall(
        r'"billed_slope": ?([0-9.e+-]+)', (tmp_path / "kept.jsonl").read_text())}
    assert written == {billed["slope"]}  # the slope the report priced with, unrounded
    report, bare = _compressed_and_stats(path, tmp_path / "bare.jsonl", "--strip-metadata")
    billed = report["billed"]
    assert bare["counted"] != report["tokens_after"]
    assert abs(bare["tokens"] - billed["tokens_after"]) <= \
        (billed["error_after"] + bare["error"]) * billed["tokens_after"]
    (said,) = [w for w in report["warnings"] if w.startswith("--strip-metadata")]
    hidden = re.search(r"the ([0-9,]+) tokens of hidden output the replies kept hold", said)
    assert hidden and int(hidden[1].replace(",", "")) >= 3_000, said
    assert "its token count differs" in said


TAU_BENCH = CORPUS / "openai-chat" / "tau-bench__gpt-4o-airline.json"


@pytest.mark.skipif(not TAU_BENCH.is_file(), reason="corpus not found beside the checkout")
def test_a_document_of_many_conversations_is_billed_by_stats_as_its_report_says(
        tmp_path: Path) -> None:
    """tau-bench: each conversation is its own prompt, compressed on its own; the report's
    figure after is of them all, as stats of the output gives it (`file_tokens`)."""
    out, report = tmp_path / "out.json", tmp_path / "report.json"
    run = run_ctxpack("compress", str(TAU_BENCH), "--budget", "5000", "-o", str(out),
                      "--report-json", str(report))
    assert run.code == 0, run.err
    billed, doc = json.loads(report.read_text()), json.loads(
        run_ctxpack("stats", "--json", str(out)).out)["files"][0]
    assert billed["changed"] and billed["conversations"] > 1
    after = doc["context"]
    assert (billed["billed"]["kind_after"], billed["billed"]["error_after"]) == \
        (after["kind"], after["error"])
    assert billed["billed"]["tokens_after"] == after["file_tokens"] < \
        billed["billed"]["tokens_before"]


def test_compress_of_a_session_with_no_call_since_its_compaction_bills_as_stats_of_it(
        tmp_path: Path) -> None:
    # the sample with no usage recorded after its compaction: billed on what the calls
    # before it measured; compress's output keeps that, as it keeps what calls since show
    path = calls_since_compaction(CLAUDE_CODE, tmp_path, since=False)
    before = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]["context"]
    assert before["kind"] == "calibrated" and before["earlier_calls"] > 0
    out, budget = tmp_path / "out.jsonl", before["not_in_file"] + before["visible"] // 2
    run = run_ctxpack("compress", str(path), "--budget", str(budget), "-o", str(out), "-q",
                      "--report-json", "-")
    assert run.code == 0, run.err
    billed = json.loads(run.out)["billed"]
    after = json.loads(run_ctxpack("stats", str(out), "--json").out)["files"][0]["context"]
    assert billed["tokens_before"] == before["tokens"]
    assert billed["tokens_after"] == after["tokens"] < budget
    assert billed["not_in_file"] == after["not_in_file"] == before["not_in_file"]
    assert (billed["kind_after"], billed["error_after"]) == (after["kind"], after["error"])


def streamed_session(path: Path, steps: int = 14, slope: float | None = None) -> Path:
    """A Claude Code session of `steps` calls with the usage a real one records
    (`with_real_usage`, at `slope` if given), each response written in two pieces, a
    text then its tool call, the first piece stating the output streamed so far (as
    Claude Code writes it: the pieces of one call agree on its prompt, not on its
    output), at `path`."""
    from .helpers import with_real_usage
    from .test_format_claude_code import answer, calls, piece, said, user

    records = [user("u0", None, "Move the billing jobs off the old scheduler. " * 20)]
    for k in range(steps):
        parent = records[-1]["uuid"]
        records += [piece(f"t{k}", parent, f"msg_{k}", said(f"Step {k}: looking at it.")),
                    piece(f"a{k}", f"t{k}", f"msg_{k}", calls(f"toolu_{k}")),
                    answer(f"r{k}", f"a{k}", f"toolu_{k}",
                           "".join(f"jobs/job_{k}_{j}.py: scheduled hourly\n" for j in range(60)))]
    records = with_real_usage(records, slope)
    for r in records:
        if r["uuid"].startswith("t"):
            r["message"]["usage"]["output_tokens"] = 2
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_calibrate_finds_the_agent_the_fixtures_stand_for(tmp_path: Path) -> None:
    # the fixtures' usage is tiktoken's own count of each call's prompt at a stated slope
    # and overhead, not ctxpack's: calibrate, reading the prompts as ctxpack counts them,
    # finds those figures again (a prompt counted a message short or long is hundreds
    # of tokens off)
    from .helpers import FIXTURE_SLOPE, FIXTURE_UNLOGGED

    run = run_ctxpack("calibrate", str(streamed_session(tmp_path / "s.jsonl")), "--json")
    assert run.code == 0, run.err
    (fitted,) = json.loads(run.out)
    assert fitted["calls"] == 14 and abs(fitted["slope"] - FIXTURE_SLOPE) < 0.02
    assert abs(fitted["overhead"] - FIXTURE_UNLOGGED) < 100, fitted
    assert fitted["error"] < 0.002


def _resumed() -> list:
    """Claude Code sessions compress keeps recorded calls of: a made one and the corpus's."""
    return [pytest.param(None, id="streamed-pieces"),
            *(pytest.param(p, id=p.stem, marks=pytest.mark.corpus)
              for p in sorted((CORPUS / "claude-code").glob("*.jsonl"))
              if (CORPUS / "claude-code").is_dir())]


@pytest.mark.parametrize("path", _resumed())
def test_the_usage_compress_restates_bills_as_its_report_says(tmp_path: Path,
                                                              path: Path | None) -> None:
    # compress restates the usage of each call it keeps for the smaller context, in the
    # provider's tokens: written without ctxpack's objects (--strip-metadata, what an
    # agent resumes from), nothing tells stats what compress did, and it anchors on the
    # last call restated. Its bill and compress's own are each within their expected
    # error of the truth, so within the two errors of each other.
    made = path is None
    path = streamed_session(tmp_path / "session.jsonl") if path is None else path
    before = stats(path, cache=False).context
    assert before is not None
    if before.kind != "anchored":
        pytest.skip(f"{path.name}: no recorded call to restate")
    budget = before.not_in_file + before.visible // 2
    try:
        result = compress_file(path, Options(budget=budget), strip_metadata=True)
    except ctxpack.CannotFit:
        assert not made
        pytest.skip(f"{path.name}: cannot fit {budget:,}")
    billed = result.report.billed
    after = stats(io.BytesIO(result.data), cache=False).context
    assert after is not None
    if after.kind != "anchored":
        # every reply with usage summarized: nothing restated is left to anchor on
        assert not made, after
        pytest.skip(f"{path.name}: no recorded call kept")
    assert billed["tokens_after"] < billed["tokens_before"]
    # the calls restated agree with each other as the input's did: the pieces of one
    # response state one prompt (each field of a call is read as its largest over them)
    assert billed["error"] is not None and after.error is not None
    assert after.error <= max(before.error or 0, ANCHORED_ERROR), after
    allowed = (billed["error"] + after.error) * billed["tokens_after"]
    assert abs(after.tokens - billed["tokens_after"]) <= allowed, (after, billed)


def test_the_library_anchors_on_the_usage_it_is_told() -> None:
    messages = [{"role": "system", "content": "You help."},
                {"role": "user", "content": "Summarize the plan. " * 200},
                {"role": "assistant", "content": "The plan has three parts. " * 150},
                {"role": "user", "content": "And the risks? " * 200},
                {"role": "assistant", "content": "Mostly schedule. " * 150},
                {"role": "user", "content": "Go on."}]
    _, plain = ctxpack.compress(messages, model="gpt-4o", budget=13_500)
    assert plain.summary is None  # the messages alone fit 13,500 well
    usage = {"prompt_tokens": 14_000, "completion_tokens": 700}  # the tools sent besides
    out, told = ctxpack.compress(messages, model="gpt-4o", budget=13_500, usage=usage)
    assert told.billed["kind"] == "anchored" and told.billed["tokens_before"] > 13_500
    assert told.summary is not None and told.billed["tokens_after"] <= 13_500
    assert out[0] == messages[0]
    # what the provider billed besides the dicts (the tools, the system prompt the caller
    # sends on its own): the reported prompt less the count of the messages it held (all
    # but the last reply and the turn after it), carried into the figures before and
    # after; the prompt size alone, as a number, says the same
    _, prompt = ctxpack.compress(messages[:4], model="gpt-4o")
    besides = 14_000 - prompt.tokens_before
    assert told.billed["not_in_file"] == besides > 10_000
    assert told.billed["tokens_before"] == plain.tokens_before + besides
    assert told.billed["tokens_after"] == told.tokens_after + besides
    _, sized = ctxpack.compress(messages, model="gpt-4o", budget=13_500, usage=14_000)
    assert sized.billed == told.billed
    # a budget not above what is sent besides is refused, naming the calls it was told of
    # (there is no file to speak of)
    with pytest.raises(CannotFit) as refused:
        ctxpack.compress(messages, model="gpt-4o", budget=besides, usage=usage)
    said = str(refused.value)
    assert f"the {besides:,} tokens sent besides" in said and "recorded calls show" in said
    assert "file" not in said
    # the list returned has no place for it: compressed again with no usage, it is
    # billed as the messages alone (the caller passes the next call's usage)
    _, again = ctxpack.compress(out, model="gpt-4o", budget=13_500)
    assert again.billed["not_in_file"] == 0 and again.billed["kind"] == "exact"
    with pytest.raises(UsageError):
        ctxpack.compress(messages, model="gpt-4o", usage={"prompt_tokens": "many"})
    with pytest.raises(UsageError, match="cannot be true"):
        ctxpack.compress(messages, model="gpt-4o", usage={"prompt_tokens": 10**12})
    # Gemini's usage_metadata, as the SDK gives it and as its REST JSON spells it
    for gemini in ({"prompt_token_count": 14_000, "candidates_token_count": 700},
                   {"promptTokenCount": 14_000, "candidatesTokenCount": 700}):
        _, same = ctxpack.compress(messages, model="gpt-4o", budget=13_500, usage=gemini)
        assert same.billed == told.billed


def test_the_library_passes_over_usage_far_below_the_count_and_says_so() -> None:
    """A usage the caller gives that is far below the count of what was sent (made up, or
    a field mixed up) is passed over as stats passes over such a recorded call: the bill is
    what no usage gives, and the report says why rather than billing it without a word."""
    messages = [{"role": "system", "content": "You help."},
                {"role": "user", "content": "Summarize the plan. " * 200},
                {"role": "assistant", "content": "The plan has three parts. " * 150},
                {"role": "user", "content": "Go on."}]
    _, plain = ctxpack.compress(messages, model="claude-opus-4-6", budget=100_000)
    assert plain.billed["kind"] == "calibrated" and not any("far below" in w
                                                            for w in plain.warnings)
    _, told = ctxpack.compress(messages, model="claude-opus-4-6", budget=100_000, usage=5)
    assert told.billed == plain.billed
    assert any(w.startswith("the usage of the last call (5 tokens) is far below the count")
               and "passed over" in w for w in told.warnings), told.warnings
    # the agent loop bills it alike, and says so in the same words
    warned = [w for w in told.warnings if "far below" in w]
    ctx = ctxpack.Context("claude-opus-4-6", budget=100_000)
    ctx.extend(messages[:3])
    assert ctx.record_usage(5) == warned
    ctx.append(messages[3])
    assert ctx.billed == plain.billed["tokens_before"]
    loop = ctxpack.Context("claude-opus-4-6", budget=100_000)
    loop.extend(messages[:2])
    assert loop.append(messages[2], usage={"input_tokens": 5}) == warned
    assert loop.append(messages[3]) == []
    assert ctxpack.Context("claude-opus-4-6").append(messages[0]) == []
    # and each compress of it says it again, as compress(usage=) does
    more = [{"role": "assistant", "content": f"Part {k} of it is this. " * 150} if k % 2 == 0
            else {"role": "user", "content": "And then? " * 50} for k in range(8)]
    small = ctxpack.Context("claude-opus-4-6", budget=ctx.billed)
    small.extend(messages[:2])
    small.append(messages[2], usage=5)
    small.extend([messages[3], *more])
    event = small.compress()
    assert event is not None and event.warnings[0] == warned[0]
    assert event.warnings == event.report.warnings
    # a usage that is not far below warns of nothing
    sane = ctxpack.Context("claude-opus-4-6", budget=100_000)
    sane.extend(messages[:2])
    assert sane.append(messages[2], usage=plain.billed["tokens_before"]) == []


SENDS = "below the count of the messages alone, where the agent is known to send"


def test_the_library_reads_and_bills_messages_as_the_cli_reads_a_file_of_them() -> None:
    # Claude Code's records given to the library are Claude Code's, as `stats` reads the
    # file: what that agent is known to send besides the messages (25,000) sets the line
    # a usage must reach, in compress(usage=) and a Context alike
    records = [json.loads(line) for line in CLAUDE_CODE.read_text().splitlines()]
    _, told = ctxpack.compress(records, usage=4_000, budget=150_000)
    assert told.format == "claude-code"
    assert any(f"{SENDS} 25,000 besides" in w for w in told.warnings), told.warnings
    loop = ctxpack.Context(budget=150_000)  # (a loop holds the messages alone)
    loop.extend(r for r in records if r.get("type") in ("user", "assistant"))
    assert any(f"{SENDS} 25,000 besides" in w for w in loop.record_usage(4_000))
    # messages no record of which marks its API are read as the API that serves the
    # model (they were read, and billed, as Chat Completions whatever the model)
    plain = [{"role": "user", "content": "Summarize the plan. " * 200},
             {"role": "assistant", "content": "The plan has three parts. " * 150}]
    assert ctxpack.compress(plain, model="claude-opus-4-6")[1].format == "anthropic"
    assert ctxpack.compress(plain, model="gpt-4o")[1].format == "openai"
    assert ctxpack.compress(plain)[1].format == "openai"
    marked = [{"role": "system", "content": "You help."}, *plain]  # (no Messages role)
    assert ctxpack.compress(marked, model="claude-opus-4-6")[1].format == "openai"
    # an agent of the caller's own is known to send what its model's entry says (as
    # `calibrate --write-config` writes it): the same line, for the file API and a loop
    table = TABLE.extend([], [Calibration("claude-opus-4-6", 1.21, 20_000)])
    prompt = ctxpack.Context("claude-opus-4-6")
    prompt.append(plain[0])
    low = round(least_billed(1.21, prompt.tokens, 1)) - 5  # under the messages alone
    assert low > 0.6 * 1.21 * prompt.tokens  # (above the line of an agent sending nothing)
    for entries in (TABLE, table):
        _, report = ctxpack.compress(plain, model="claude-opus-4-6", usage=low, table=entries)
        loop = ctxpack.Context("claude-opus-4-6", table=entries)
        loop.extend(plain[:1])
        said = loop.append(plain[1], usage=low)
        if entries is TABLE:
            assert report.warnings == said == [] and report.billed["kind"] == "anchored"
        else:
            assert any(f"{SENDS} 20,000 besides" in w for w in report.warnings)
            assert said and f"{SENDS} 20,000 besides" in said[0]


def test_compress_says_when_it_passes_over_a_files_last_call(tmp_path: Path) -> None:
    """The file's last calls made up small are passed over by compress's bill as by
    stats', and compress says so as the library does. (Two, the second agreeing with the
    first: one alone fell by more than the prompt before it held of the file, and is set
    aside where the calls are judged.)"""
    lines = CLAUDE_CODE.read_text().splitlines()
    records = [json.loads(x) for x in lines]
    ids = list(dict.fromkeys(r["message"]["id"] for r in records
                             if "usage" in r.get("message", {})))
    small = {ids[-2]: 10, ids[-1]: 12}
    for n, r in enumerate(records):
        if r.get("message", {}).get("id") in small:
            r["message"]["usage"].update(input_tokens=small[r["message"]["id"]],
                                         cache_creation_input_tokens=0,
                                         cache_read_input_tokens=0)
            lines[n] = json.dumps(r)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = stats(path, cache=False)
    c = s.context
    assert c is not None and c.kind == "anchored" and len(c.passed) == 2 and not s.set_aside
    said = " ".join(run_ctxpack("compress", "--dry-run", str(path)).err.split())
    assert "warning: the usage of the last 2 calls (12 tokens, the last) is below the count " \
        "of the messages alone, where the agent is known to send 25,000 besides" in said \
        and f"passed over; anchored on call {c.calls - 2} of {c.calls}" in said, said


@pytest.mark.parametrize("part", ["input_tokens", "cache_read_input_tokens",
                                  "cache_creation_input_tokens"])
@pytest.mark.parametrize("value", [-3, -29_000, 1.5, "900"])
def test_every_part_of_a_usage_is_judged_as_a_files_is(tmp_path: Path, part: str,
                                                       value: object) -> None:
    model = "claude-opus-4-6"
    messages = [{"role": "user", "content": "Hello there."},
                {"role": "assistant", "content": "Hi. What shall we build?"}]
    usage = {"input_tokens": 40_000, "output_tokens": 9, part: value}
    said = f"{part} {value!r} (a token count is a whole number, zero or more)"
    # refused by the library, as a prompt that part made smaller (or no number) would mislead
    with pytest.raises(UsageError, match=re.escape(said)):
        ctxpack.compress(messages, model=model, usage=usage)
    ctx = ctxpack.Context(model)
    ctx.extend(messages)
    with pytest.raises(UsageError, match=re.escape(said)):
        ctx.record_usage(usage)
    plain = ctxpack.Context(model)
    plain.extend(messages)
    assert ctx.billed == plain.billed  # (nothing taken of it)
    # and set aside in a file, named in the same words
    reply = {**messages[1], "model": model, "usage": usage}
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in (messages[0], reply)) + "\n")
    checked = run_ctxpack("validate", "--format", "anthropic", str(path))
    assert checked.code == 1 and f"{path}:2: " in checked.out and said in checked.out


def test_the_library_bounds_usage_by_the_models_window_as_a_file_is(tmp_path: Path) -> None:
    """One bound for a prompt size, the library's `usage=` and a file's recorded calls
    alike: five times the model's window (claude-opus-4-6: 200,000), not the largest any
    model has."""
    model = "claude-opus-4-6"
    messages = [{"role": "user", "content": "Hello there."},
                {"role": "assistant", "content": "Hi. What shall we build?"}]
    most = 5 * TABLE.find(model).context_window
    bound = f"more than {most:,}, 5 times the 200,000-token window the table gives {model}"
    for usage in (most + 1, {"input_tokens": most + 1, "output_tokens": 9}):
        with pytest.raises(UsageError, match=bound):
            ctxpack.compress(messages, model=model, usage=usage)
    ctx = ctxpack.Context(model)
    ctx.extend(messages)
    with pytest.raises(UsageError, match=bound):
        ctx.record_usage(most + 1)
    ctx.record_usage(most - 9)  # (what a call of it can hold is taken)
    assert ctx.billed >= most - 9
    # a file's recorded call of that size is set aside by the same bound
    reply = {**messages[1], "model": model, "usage": {"input_tokens": most + 1,
                                                      "output_tokens": 9}}
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in (messages[0], reply)) + "\n")
    said = run_ctxpack("validate", "--format", "anthropic", str(path))
    assert said.code == 1 and f"{path}:2: " in said.out and bound in said.out, said.out


def test_the_config_extends_the_calibration(tmp_path: Path) -> None:
    config = tmp_path / "ctxpack.yaml"
    config.write_text("calibration:\n  - {name: claude-opus-4-6, slope: 1.5, overhead: 9000}\n")
    table = load_config(str(config)).models
    assert slope_of("claude-opus-4-6-20260101", table) == 1.5
    assert slope_of("claude-opus-4-5", table) == slope_of("claude-opus-4-5")
    s = stats(SAMPLES / "multi-round.anthropic.jsonl", "claude-opus-4-6", table=table,
              cache=False)
    assert s.context is not None and s.context.tokens == round(1.5 * s.tokens + 9000)
    assert orjson.loads(orjson.dumps(s.context.to_dict()))["overhead"] == 9000


def test_calibrate_run_again_on_its_own_config_fits_the_same(tmp_path: Path) -> None:
    # a fit written to the config is not the next fit's prior: run after run, the same
    # file gives the same figures (the Codex sample's encrypted reasoning is converted at
    # the slope, so a fit made against its own last value would drift)
    config = tmp_path / "config.yaml"
    config.write_text("# the team's\n")
    rows = []
    for _ in range(3):
        run = run_ctxpack("calibrate", str(SAMPLES / "refactor.codex.jsonl"), "--json",
                          "--config", str(config), "--write-config", str(config))
        assert run.code == 0, run.err
        rows.append(json.loads(run.out))
    assert rows[0] == rows[1] == rows[2]
    assert slope_of("gpt-5.1-codex", load_config(str(config)).models) == rows[0][0]["slope"]


def test_calibrate_fits_a_slope_and_overhead_and_writes_them(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("calibration:\n  - {name: acme-coder, slope: 1.1}\n")
    run = run_ctxpack("calibrate", str(SAMPLES / "refactor.codex.jsonl"), "--json",
                      "--write-config", str(config))
    assert run.code == 0, run.err
    (row,) = json.loads(run.out)
    assert row["model"] == "gpt-5.1-codex" and row["calls"] == 24 and row["files"] == 1
    assert 0.5 < row["slope"] < 1.5 and row["overhead"] > 0 and row["error"] < 0.05
    table = load_config(str(config)).models
    assert slope_of("acme-coder", table) == 1.1  # what was there stays
    assert slope_of("gpt-5.1-codex", table) == row["slope"]
    # a file of that model that records no call of its own is now counted with what was
    # fitted, and one that records calls shows its own fit (as calibrate read it) beside
    # its bill whatever the table says
    b = bill([1_000, 2_000], [], model="gpt-5.1-codex", format="codex", exact=True,
             estimated=False, table=table)
    assert b.kind == "calibrated" and b.slope == row["slope"]
    s = stats(SAMPLES / "refactor.codex.jsonl", cache=False)
    assert s.context is not None and s.context.after is not None
    assert round(s.context.after, 3) == row["slope"] != slope_of("gpt-5.1-codex")


def test_calibrate_without_recorded_usage_says_so() -> None:
    run = run_ctxpack("calibrate", str(SAMPLES / "support-chat.openai.jsonl"))
    assert run.code == 2 and "no file records the usage of a call" in run.err
    assert "Traceback" not in run.err


@pytest.mark.parametrize("entry, fragment", [
    ("{name: x, slope: 0}", "slope 0 is outside 0.25 to 4"),
    ("{name: x, slope: .nan}", "slope must be a number from 0.25 to 4"),
    ("{name: x, slope: fast}", "slope must be a number from 0.25 to 4"),
    # a number above 0, but no tokenizer's ratio to another (a percentage, a window...)
    ("{name: x, slope: 1e308}", "slope 1e+308 is outside 0.25 to 4"),
    ("{name: x, slope: 50}", "slope 50 is outside 0.25 to 4"),
    ("{name: x, slope: 0.2}", "slope 0.2 is outside 0.25 to 4"),
    ("{name: x, slope: 1.2, overhead: 1048576}",
     "overhead 1,048,576 is outside 0 to 1,048,575 (tokens"),
    ("{name: x, slope: 1.2, overhead: 1e308}", "overhead 1e+308 is outside 0 to 1,048,575"),
    ("{slope: 1.2}", "needs a 'name'"),
    ("{name: 5, slope: 1.2}", "name must be a model's id, as text (quote it), not a number"),
    ("{name: [claude], slope: 1.2}", "not an array"),
    ("{name: x, slope: 1.2, overhead: 1.5}", "overhead must be a whole number of tokens, not 1.5"),
    ("{name: x}", "needs a 'slope'"),
    ("{name: x, slope: 1.2, overhead: -5}", "overhead -5 is outside 0 to 1,048,575 (tokens"),
    ("{name: x, slope: 1.2, overhead: lots}", "overhead must be a number from 0 to 1,048,575"),
    ("{name: x, slope: 1.2, sloap: 1}", "unknown key(s): sloap"),
    ("{name: x, slope: 1.2, error: 7}", "error must be a fraction from 0 to 1"),
    ("{name: x, slope: 1.2, error: -0.1}", "error must be a fraction from 0 to 1"),
    ("{name: x, slope: 1.2, error: '7'}", "error must be a fraction from 0 to 1"),
])
def test_a_bad_calibration_entry_is_named(tmp_path: Path, entry: str, fragment: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"calibration:\n  - {entry}\n")
    with pytest.raises(UsageError) as info:
        load_config(str(config))
    assert fragment in str(info.value) and f"{config}: calibration[0]" in str(info.value)


@pytest.mark.parametrize("models, entry, fragment", [
    # the overhead is bounded by the model's own window, not the largest of any model
    ("", "{name: claude-opus-4-6, slope: 1.2, overhead: 250000}",
     "overhead 250,000 is outside 0 to 199,999 (tokens, below the 200,000-token window the "
     "table gives claude-opus-4-6 (as claude-opus-4))"),
    ("", "{name: gpt-4o-2024-08-06, slope: 1, overhead: 128000}",
     "overhead 128,000 is outside 0 to 127,999 (tokens, below the 128,000-token window the "
     "table gives gpt-4o-2024-08-06 (as gpt-4o))"),
    # a model the config itself names, by the window it gives
    ("models:\n  - {name: acme-coder, context_window: 32000}\n",
     "{name: acme-coder, slope: 1.1, overhead: 40000}",
     "overhead 40,000 is outside 0 to 31,999 (tokens, below the 32,000-token window the "
     "table gives acme-coder)"),
])
def test_a_calibration_overhead_is_bounded_by_its_own_models_window(
        tmp_path: Path, models: str, entry: str, fragment: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"{models}calibration:\n  - {entry}\n")
    run = run_ctxpack("stats", str(SAMPLES / "support-chat.openai.jsonl"), "--config",
                      str(config))
    assert run.code != 0 and "Traceback" not in run.err
    assert run.err.strip().splitlines()[0].endswith(f"{config}: calibration[0]: {fragment}")
    config.write_text(f"{models}calibration:\n  - {entry.replace('000}', '}')}\n")
    assert run_ctxpack("stats", str(SAMPLES / "support-chat.openai.jsonl"), "--config",
                       str(config)).code == 0


def test_a_model_calibrated_twice_is_named(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("calibration:\n  - {name: gpt-5.4, slope: 1.1}\n"
                      "  - {name: openai/GPT-5.4, slope: 1.2}\n")
    with pytest.raises(UsageError) as info:
        load_config(str(config))
    assert f"{config}: calibration[1]: 'openai/GPT-5.4' is calibration[0]'s model again" \
        in str(info.value)


@pytest.mark.parametrize("entry", ["{name: x, slope: 0.25}", "{name: x, slope: 4}",
                                   "{name: x, slope: 1.2, overhead: 0}",
                                   "{name: x, slope: 1.2, overhead: 1048575}"])
def test_a_calibration_at_the_ends_of_its_range_is_taken(tmp_path: Path, entry: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"calibration:\n  - {entry}\n")
    assert load_config(str(config)).models.calibration("x") is not None


@pytest.mark.parametrize("name", ["export-timeout.anthropic-events.jsonl",
                                  "opencode/book-search.opencode.json",
                                  "cline-task/api_conversation_history.json",
                                  "cline-task/ui_messages.json",
                                  "plateau-fix.gemini-cli.jsonl"])
def test_formats_that_record_each_call_are_anchored_on_the_last(name: str) -> None:
    s = stats(SAMPLES / name, cache=False)
    c, last = s.context, s.usage["last_input_tokens"]
    # (every call the file records, but one whose reply was rewound: not of this context)
    assert c is not None and c.kind == "anchored" and 1 < c.calls <= s.usage["calls"]
    # the recorded prompt, plus its reply and what came after (a few hundred tokens here)
    assert last < c.tokens < last + 1_000
    assert c.visible + c.not_in_file == c.tokens


def test_a_bill_below_the_calibrated_count_takes_the_files_own_ratio() -> None:
    # a file whose text the model's tokenizer splits more tightly than the table says
    b = bill([400, 600, 500], [RecordedCall(1, 450, None, "claude-opus-4-6")],
             model="claude-opus-4-6", format="claude-code", exact=False, estimated=False)
    assert b.kind == "anchored" and b.not_in_file == 0
    assert b.slope == pytest.approx(450 / (400 + 3))
    assert b.slope < slope_of("claude-opus-4-6")
    # anchored: the recorded prompt plus the file's ratio times what came after it
    assert b.tokens == round(450 + b.slope * (1_500 + 3 - 403)) == b.visible


def test_a_session_that_goes_on_after_compress_anchors_on_its_newest_call(
        tmp_path: Path) -> None:
    c = stats(CLAUDE_CODE, cache=False).context
    assert c is not None
    done = compress_file(CLAUDE_CODE, Options(budget=c.tokens - c.visible // 2), cache=False)
    out = tmp_path / "compressed.jsonl"
    out.write_bytes(b"".join(done.chunks()))
    before = stats(out, cache=False).context
    assert before is not None and before.calls == 1  # what compress carried, none since
    # the agent goes on: one more call, its usage as the provider reports it
    lines = out.read_text().splitlines()
    last = json.loads(next(x for x in reversed(lines) if '"uuid"' in x))
    billed = before.tokens + 3_000  # (a new system reminder, say, not in the file)
    reply = {"parentUuid": last["uuid"], "isSidechain": False, "type": "assistant",
             "sessionId": last["sessionId"], "uuid": "after-compress-reply",
             "timestamp": "2026-03-10T09:30:00.000Z",
             "message": {"id": "msg_after_compress", "role": "assistant",
                         "model": "claude-opus-4-6", "type": "message",
                         "content": [{"type": "text", "text": "Done."}],
                         "usage": {"input_tokens": 10, "cache_read_input_tokens": billed - 10,
                                   "cache_creation_input_tokens": 0, "output_tokens": 3}}}
    out.write_text("\n".join([*lines, json.dumps(reply)]) + "\n")
    after = stats(out, cache=False).context
    assert after is not None and after.kind == "anchored"
    assert after.calls == 1 and billed < after.tokens < billed + 20  # + its short reply


def test_json_and_text_give_the_same_least_anchored_error() -> None:
    # calls growing exactly as the count: a median error of 0 is still shown as 0.1%
    # (nothing counted after the last call, whose share would widen it)
    counts = [1_000] * 5 + [0]
    calls = [RecordedCall(k, round(1.21 * (1_000 * k + 3)) + 20_000, None, "claude-opus-4-6")
             for k in (1, 3, 5)]
    b = bill(counts, calls, model="claude-opus-4-6", format="claude-code", exact=False,
             estimated=False)
    assert b.kind == "anchored" and b.error == b.to_dict()["error"] == LEAST_ERROR


def synthetic_but(path: Path, real: slice, to: Path) -> Path:
    """`path` (Claude Code) with every API response but the `real` ones (in file order)
    made `<synthetic>`, as Claude Code writes one it made up itself, at `to`."""
    lines = path.read_text().splitlines()
    records = [json.loads(x) for x in lines]
    ids = list(dict.fromkeys(r["message"]["id"] for r in records
                             if r.get("type") == "assistant"))
    for n, r in enumerate(records):
        if r.get("type") == "assistant" and r["message"]["id"] not in ids[real]:
            r["message"]["model"] = "<synthetic>"
            r["message"]["usage"] = dict.fromkeys(("input_tokens", "output_tokens",
                                                   "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"), 0)
            lines[n] = json.dumps(r)
    to.write_text("\n".join(lines) + "\n")
    return to


SOLSMILE = CORPUS / "claude-code" / "solsmile__claude-session.jsonl"


@pytest.mark.parametrize("source", [
    pytest.param(None, id="sample-its-last-replies-synthetic"),
    pytest.param(SOLSMILE, id="solsmile", marks=pytest.mark.skipif(
        not SOLSMILE.is_file(), reason="corpus not found beside the checkout"))])
def test_stats_of_compress_output_finds_the_model_compress_billed_as(
        tmp_path: Path, source: Path | None) -> None:
    """Where every reply that names the model is summarized (only `<synthetic>` ones
    kept), the output still names it: stats bills it as compress did."""
    # (the sample's 11 calls since its compaction, the last 3 made up, and those before)
    path = source or synthetic_but(CLAUDE_CODE, slice(-11, -3), tmp_path / "in.jsonl")

    def file_stats(of: Path) -> dict:
        run = run_ctxpack("stats", str(of), "--json")
        assert run.code == 0, run.err
        return json.loads(run.out)["files"][0]

    before = file_stats(path)
    assert before["model"].startswith("claude-opus-4-6")
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    budget = before["context"]["not_in_file"] + before["context"]["visible"] // 2
    run = run_ctxpack("compress", str(path), "--budget", str(budget), "-o", str(out),
                      "--report-json", str(report))
    assert run.code == 0, run.err
    said = json.loads(report.read_text())
    after = file_stats(out)
    assert said["summary"] is not None
    assert after["model"] == said["model"] == before["model"]
    assert after["context"]["tokens"] == said["billed"]["tokens_after"]


def replies_with_usage_after_the_compaction(data: bytes) -> int:
    """The calls a compressed Claude Code or Codex file records after its compaction, read
    without ctxpack: replies with usage after the `compact_boundary`, or `token_count`
    events after a reply that follows the `compacted` line (the one the compaction writes
    before any reply states the context it left, no call's)."""
    records = [json.loads(x) for x in data.splitlines() if x.strip()]
    start = max(n for n, r in enumerate(records)
                if r.get("subtype") == "compact_boundary" or r.get("type") == "compacted")
    calls, replied = 0, False
    for r in records[start + 1:]:
        usage = r.get("message", {}).get("usage") if r.get("type") == "assistant" else None
        calls += bool(usage and sum(v for v in usage.values() if isinstance(v, int)))
        payload = r.get("payload", {})
        replied |= r.get("type") == "response_item" and payload.get("role") != "user"
        calls += replied and payload.get("type") == "token_count"
    return calls


def _summarized_whole() -> list:
    """Sessions whose every real reply compress summarizes at a budget (a share of the
    bill, or what is not in the file and half the rest: `None`): the sample with its last
    replies made up by the agent, and the corpus's."""
    return [pytest.param(None, None, id="sample-its-last-replies-synthetic"),
            *(pytest.param(CORPUS / where, share, id=Path(where).stem, marks=pytest.mark.skipif(
                not (CORPUS / where).is_file(), reason="corpus not found beside the checkout"))
              for where, share in (("claude-code/solsmile__claude-session.jsonl", 0.6),
                                   ("claude-code/solsmile__claude-session.jsonl", None),
                                   ("claude-code/spotter__tool_heavy.jsonl", None),
                                   ("codex/beam_v1__codex-session.jsonl", 0.6),
                                   ("codex/beam_v1__codex-session.jsonl", None)))]


@pytest.mark.parametrize(("source", "share"), _summarized_whole())
def test_stats_of_a_stripped_output_that_keeps_no_call_bills_as_compress_said(
        tmp_path: Path, source: Path | None, share: float | None) -> None:
    # written without ctxpack's objects (what an agent resumes from), an output whose every
    # call was summarized keeps no usage of its own: the compaction states the context it
    # left, billed, and stats takes that (it billed the table's overhead, up to 12.7% off)
    path = source or synthetic_but(CLAUDE_CODE, slice(-11, -3), tmp_path / "in.jsonl")
    before = stats(path, cache=False).context
    assert before is not None and before.kind == "anchored"
    budget = round(share * before.tokens) if share else \
        before.not_in_file + before.visible // 2
    result = compress_file(path, Options(budget=budget), strip_metadata=True, cache=False)
    assert result.report.summary is not None
    assert replies_with_usage_after_the_compaction(result.data) == 0
    billed = result.report.billed
    after = stats(io.BytesIO(result.data), cache=False).context
    assert after is not None and after.kind == "anchored" and after.error is not None
    assert billed["tokens_after"] < billed["tokens_before"]
    assert abs(after.tokens - billed["tokens_after"]) <= after.error * billed["tokens_after"], \
        (after, billed)


def test_stats_of_a_stripped_output_says_it_rests_on_what_its_compaction_states(
        tmp_path: Path) -> None:
    # the sample with its last replies made up by the agent (`<synthetic>`), every real
    # reply summarized and ctxpack's own fields left out: no call is recorded in the
    # output, and nothing in it names the model the original did
    path = synthetic_but(CLAUDE_CODE, slice(-11, -3), tmp_path / "in.jsonl")
    before = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    budget = before["context"]["not_in_file"] + before["context"]["visible"] // 2
    out = tmp_path / "out.jsonl"
    run = run_ctxpack("compress", str(path), "--budget", str(budget), "-o", str(out),
                      "--strip-metadata", "-q", "--report-json", "-")
    assert run.code == 0, run.err
    assert replies_with_usage_after_the_compaction(out.read_bytes()) == 0
    assert before["model"] not in out.read_text()
    after = json.loads(run_ctxpack("stats", str(out), "--json").out)["files"][0]
    c = after["context"]
    assert c["kind"] == "anchored" and c["compaction_stated"] is True
    assert c["tokens"] == json.loads(run.out)["billed"]["tokens_after"]
    # the model it is billed as is said to be assumed, not passed off as the file's
    assert "assumed" in after["note"] and c["billed_model"] == after["model"]
    text = run_ctxpack("stats", str(out)).out
    assert "anchored on the size its compaction states it left (no call made since)" in \
        " ".join(text.split())
    assert "recorded call" not in text
    # the original, whose calls are recorded, is anchored on one of them
    assert before["context"]["compaction_stated"] is False


def test_a_codex_compaction_with_no_call_since_bills_the_size_it_states() -> None:
    # the CLI states the context a compaction left in a token_count event before any reply
    # (its total): that is the prompt of the next call, more the messages after it
    from .test_format_codex import line, meta, rollout, say

    def usage(total: int) -> dict:
        return {"input_tokens": total - 40, "cached_input_tokens": 0, "output_tokens": 40,
                "reasoning_output_tokens": 0, "total_tokens": total}

    stated = line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": usage(90_000), "last_token_usage": usage(12_000)}})
    head = [meta(), line("turn_context", {"model": "gpt-5.4", "cwd": "/repo"}),
            line("compacted", {"message": "", "replacement_history": [
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Summary: the tests pass. " * 50}]}]}),
            stated]
    left = stats(rollout(*head), cache=False).context
    assert left is not None and left.kind == "anchored" and left.calls == 1
    assert left.tokens == 12_000 and left.stated
    # a reply since, its usage not yet written: billed on top, as the same file without
    # the event bills it on top of the summary
    reply = say("assistant", "The release notes are written. " * 40)
    after = stats(rollout(*head, reply), cache=False).context
    bare, bare_reply = (stats(rollout(*head[:-1], *more), cache=False).context
                        for more in ((), (reply,)))
    assert after is not None and after.kind == "anchored"
    assert bare is not None and bare_reply is not None
    assert bare_reply.tokens > bare.tokens
    assert after.tokens - 12_000 == pytest.approx(bare_reply.tokens - bare.tokens, abs=2)


def test_cannot_fit_names_the_budget_as_the_command_and_the_library_take_it(
        tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "You help."},
                {"role": "user", "content": "Summarize the plan. " * 200}]
    with pytest.raises(ctxpack.CannotFit) as raised:
        ctxpack.compress(messages, model="gpt-4o", budget=100)
    assert "budget= in the library" in str(raised.value)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    run = run_ctxpack("compress", str(path), "--budget", "100", "-o", str(tmp_path / "o"))
    assert run.code == 3 and "raise the budget (--budget, or budget= in the library)" in \
        " ".join(run.err.split()), run.err


@pytest.mark.parametrize("name", ["coding-agent.claude-code.jsonl", "refactor.codex.jsonl",
                                  "support-chat.openai.jsonl"])
def test_the_json_gives_the_slope_the_text_gives_what_came_after(name: str) -> None:
    # an anchored bill's text says the slope of what came after its anchor; the JSON's
    # after_slope is that figure (null where no call anchors the bill)
    path = SAMPLES / name
    context = json.loads(run_ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    said = re.search(r"\+ ([0-9.]+) × the count of what came after",
                     " ".join(run_ctxpack("stats", str(path)).out.split()))
    if context["kind"] == "anchored":
        assert said is not None and float(said[1]) == round(context["after_slope"], 4)
    else:
        assert said is None and context["after_slope"] is None
