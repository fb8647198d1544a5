"""A recorded usage that cannot be true is set aside: it neither anchors the bill nor raises
the window, `validate` names its line, and stats says it set it aside."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxpack.breakdown import stats
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.jsonl import json_kind
from ctxpack.recorded import HIDDEN_MARGIN, MARGIN, MOST, RISE, believed, unbelievable
from ctxpack.transcript import RecordedCall

from .conftest import CORPUS, SAMPLES, corpus_files, corpus_params
from .helpers import ctxpack as run_ctxpack
from .test_window import large_session

SAMPLE = SAMPLES / "coding-agent.claude-code.jsonl"
ABSURD = 999_999_999_999


def with_usage(tmp_path: Path, line: int, input_tokens: int, cached: int | None = None
               ) -> Path:
    """The Claude Code sample with one line's recorded `input_tokens` replaced (and both
    cache fields, where `cached` is given)."""
    lines = SAMPLE.read_text().splitlines()
    record = json.loads(lines[line - 1])
    record["message"]["usage"]["input_tokens"] = input_tokens
    if cached is not None:
        record["message"]["usage"].update(cache_creation_input_tokens=cached,
                                          cache_read_input_tokens=cached)
    lines[line - 1] = json.dumps(record)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def last_usage_line() -> int:
    """The line of the sample's last recorded usage (the call the bill anchors on)."""
    lines = SAMPLE.read_text().splitlines()
    return max(n for n, text in enumerate(lines, 1) if '"usage"' in text)


def test_an_absurd_last_usage_is_neither_the_window_nor_the_bill(tmp_path: Path) -> None:
    honest = stats(SAMPLE, cache=False)
    line = last_usage_line()
    s = stats(with_usage(tmp_path, line, ABSURD), cache=False)
    assert s.context_window == 200_000 and s.window_assumed is None
    assert s.context is not None and s.context.kind == "anchored"
    # anchored on the call before it: near the honest bill, not a trillion
    assert honest.context is not None
    assert abs(s.context.tokens - honest.context.tokens) < 0.01 * honest.context.tokens
    assert s.context.calls == honest.context.calls - 1
    assert [x["line"] for x in s.set_aside] == [line]


def test_validate_names_the_line_and_stats_says_it_set_it_aside(tmp_path: Path) -> None:
    line = last_usage_line()
    path = with_usage(tmp_path, line, ABSURD)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    # a count past what any call holds is named by its field
    assert checked.out.startswith(f"{path}:{line}: recorded usage cannot be true: "
                                  f"message.usage.input_tokens "
                                  f"{ABSURD:,} (more than 2,097,152, twice the largest window")
    assert "cannot be true" in checked.out and "set aside" in checked.out
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert "recorded usage set aside, as it cannot be true" in said and f"line {line}" in said
    # (the recorded usage table still shows what the file says, sums and all)
    assert "context as billed: 30," in said and "of 200,000 (15." in said
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    assert [x["line"] for x in doc["usage_set_aside"]] == [line]
    assert doc["context_window"] == 200_000
    assert run_ctxpack("validate", str(SAMPLE)).code == 0


def test_compress_decides_without_it(tmp_path: Path) -> None:
    report = compress_file(with_usage(tmp_path, last_usage_line(), ABSURD), Options(),
                           cache=False).report
    assert report.context_window == 200_000
    assert report.trigger == 160_000  # 0.8 of the window, not of a trillion


def test_an_earlier_absurd_usage_does_not_raise_the_window(tmp_path: Path) -> None:
    # a call before the compaction: not the anchor, but the window was raised to it
    s = stats(with_usage(tmp_path, 87, ABSURD), cache=False)
    assert s.context_window == 200_000 and s.window_assumed is None
    assert [x["line"] for x in s.set_aside] == [87]


def test_a_large_call_a_model_can_take_still_raises_the_window(tmp_path: Path) -> None:
    # Claude's largest window is 1,000,000, five times the table's: such a call is believed
    s = stats(large_session(tmp_path, prompt=999_000, output=1_000), cache=False)
    assert s.context_window == 1_000_000 and not s.set_aside
    s = stats(large_session(tmp_path, prompt=999_001, output=1_000), cache=False)
    assert s.context_window == 200_000 and len(s.set_aside) == 1


def test_the_rule_for_a_model_the_table_does_not_know() -> None:
    assert MOST == 2_097_152
    assert not unbelievable(RecordedCall(3, MOST, None, "some-local-model"))
    assert "twice the largest window" in unbelievable(RecordedCall(3, MOST + 1, None, None))
    # the reply counts: a call's prompt and reply were both in its window
    assert unbelievable(RecordedCall(3, 10, ABSURD, "claude-opus-4-6"))


def flat_usage(tmp_path: Path, said: int, last: int | None = None) -> tuple[Path, Path]:
    """The Claude Code sample with every call recording the same prompt `said` where the
    file grows to thousands (the last `last`, where given), and beside it the same file
    with no usage recorded at all."""
    low, bare = [], []
    lines = SAMPLE.read_text().splitlines()
    final = [json.loads(x)["message"]["id"] for x in lines if '"usage"' in x][-1]
    for text in lines:
        record, plain = json.loads(text), json.loads(text)
        usage = (record.get("message") or {}).get("usage") \
            if isinstance(record.get("message"), dict) else None
        if usage:
            mine = last if last and record["message"]["id"] == final else said
            usage.update(input_tokens=mine, cache_read_input_tokens=0,
                         cache_creation_input_tokens=0)
            del plain["message"]["usage"]
        low.append(json.dumps(record))
        bare.append(json.dumps(plain))
    path, none = tmp_path / "low.jsonl", tmp_path / "bare.jsonl"
    path.write_text("\n".join(low) + "\n")
    none.write_text("\n".join(bare) + "\n")
    return path, none


def context(path: Path, *args: str) -> dict:
    """stats' JSON `context` of `path`."""
    run = run_ctxpack("stats", str(path), "--json", *args)
    assert run.code == 0, run.err
    return json.loads(run.out)["files"][0]["context"]


# (Claude Code is known to send 25,000 besides the messages: a call recording less than
# 1.21 × the count of its messages is no prompt of it)
SENDS = "below the count of the messages alone, where the agent is known to send 25,000 besides"
FLAT = "its usage did not grow with the messages"


@pytest.mark.parametrize("said, last, why", [
    (300, None, f"all 11 recorded calls are {SENDS} (the last says 300)"),
    # even the first calls' small prompts count more than 1,000 at 1.21
    (1_000, None, f"all 11 recorded calls are {SENDS} (the last says 1,000)"),
    # the last call far below (7), the two before it below their count (3,000), and
    # the call before them, above its own count, below the next call's
    (3_000, 7, f"the last 3 of 11 recorded calls are {SENDS}, and call 8 before them says "
               f"3,000, below the count of call 9's prompt ({FLAT})"),
    # flat usage between the far-below line (0.6 of the count) and the count
    (4_000, None, f"the last 2 of 11 recorded calls are {SENDS}, and call 9 before them "
                  f"says 4,000, below the count of call 10's prompt ({FLAT})"),
])
def test_usage_made_up_small_bills_as_no_usage_would(tmp_path: Path, said: int,
                                                      last: int | None, why: str) -> None:
    path, none = flat_usage(tmp_path, said, last)
    c, n = context(path), context(none)
    # passed over, the usage leaves the bill where none would have put it: the calibrated
    # count with the table's overhead (30,138 here), not the bare count (5,138)
    assert c["kind"] == n["kind"] == "calibrated" and c["below"] == said and n["calls"] == 0
    assert [c[k] for k in ("tokens", "visible", "not_in_file", "error")] == \
        [n[k] for k in ("tokens", "visible", "not_in_file", "error")]
    assert c["not_in_file"] == 25_000 and c["tokens"] > 5 * c["counted"]
    assert c["passed_over_known_overhead"] == 25_000 and n["passed_over_known_overhead"] == 0
    text = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert "anchored" not in text and c["calls"] == 11
    assert (f"calibrated: 1.21 × the count + 25,000 sent but not logged, as with no usage "
            f"recorded: {why}, so none is used; expected error ±5.0%") in text
    # compress bills its output as it billed the input: the table's overhead outside it
    out = tmp_path / "small.jsonl"
    assert run_ctxpack("compress", str(path), "--budget", "29000", "-o", str(out)).code == 0
    after = stats(out, cache=False).context
    assert after is not None and after.not_in_file == c["not_in_file"]
    assert after.tokens < c["tokens"]


def test_flat_usage_is_the_files_ratio_only_of_an_agent_sending_nothing_besides(
        tmp_path: Path) -> None:
    # every call records 4,000 while the messages grow past what 4,000 holds. Of Claude
    # Code (the table: 25,000 sent besides the messages) that is no prompt size: billed as
    # no usage (above). Of an agent a config says sends nothing besides, it may be: a file
    # whose text the model splits more tightly, its own ratio the slope
    path, none = flat_usage(tmp_path, 4_000)
    config = tmp_path / "config.yaml"
    config.write_text("calibration:\n  - {name: claude-opus-4-6, slope: 1.21, overhead: 0}\n")
    c = context(path, "--config", str(config))
    assert c["kind"] == "anchored" and c["not_in_file"] == 0 and c["below"] == 0
    assert c["passed_over_known_overhead"] == 0 and c["passed_over"] == []
    assert 4_000 < c["tokens"] < context(none, "--config", str(config))["tokens"]
    assert context(path)["tokens"] == context(none)["tokens"]


def test_flat_usage_that_holds_the_messages_and_more_still_anchors(tmp_path: Path) -> None:
    # every call records 20,000: more than the messages (1.21 x 4,246) by some 15,000, an
    # overhead agents send (Codex 5-6k; no file tells it from a shorter system prompt than
    # the table's), so the bill rests on the last call, as with any usage that holds its
    # prompt; the rule is about usage that leaves no room besides the messages
    path, none = flat_usage(tmp_path, 20_000)
    c = context(path)
    assert c["kind"] == "anchored" and c["calls"] == 11 and c["passed_over"] == []
    assert 20_000 <= c["tokens"] < context(none)["tokens"]
    assert c["not_in_file"] > 10_000 and c["passed_over_known_overhead"] == 0


def test_calibrate_says_how_many_calls_it_left_out(tmp_path: Path) -> None:
    # the calls the bill passes over are left out of the fit, and counted per model: of
    # flat usage, every call (the bill uses none of it: see above), not only the last two
    # below the line
    # (each run of them: the 11 calls after the sample's compaction, and the 15 made on the
    # context before it)
    path, _ = flat_usage(tmp_path, 4_000)
    assert context(path)["calls"] == 11 and len(context(path)["passed_over"]) == 2
    (fit,) = json.loads(run_ctxpack("calibrate", "--json", str(path)).out)
    assert (fit["left_out"], fit["calls"], fit["error"]) == (26, 0, None)
    assert fit["recorded"] == stats(path, cache=False).usage["calls"] == 26
    said = run_ctxpack("calibrate", str(path))
    assert said.code == 0
    assert "claude-opus-4-6: 26 calls left out, as the bill passes them over" in \
        " ".join(said.out.split())
    # a model all of whose calls are far below is still shown, with nothing fitted
    (tmp_path / "low").mkdir()
    low, _ = flat_usage(tmp_path / "low", 300)
    (none,) = json.loads(run_ctxpack("calibrate", "--json", str(low)).out)
    assert (none["calls"], none["left_out"], none["error"]) == (0, 26, None)
    assert none["untrusted"] == "0 calls, fewer than 4"
    # and an honest file leaves none out, and says nothing of it
    (whole,) = json.loads(run_ctxpack("calibrate", "--json", str(SAMPLE)).out)
    assert whole["left_out"] == 0 and "left out" not in run_ctxpack("calibrate",
                                                                     str(SAMPLE)).out


def test_usage_the_bill_passes_over_moves_no_fit_beside_an_honest_file(
        tmp_path: Path) -> None:
    # fitted with the flat file's first calls (each above the line alone, but not growing
    # with the messages), the sample's fit erred 1,719% on its worst call held out: the
    # flat file's calls are left out as the bill leaves them, and the fit is the sample's
    path, _ = flat_usage(tmp_path, 4_000)
    alone = json.loads(run_ctxpack("calibrate", "--json", str(SAMPLE)).out)
    run = run_ctxpack("calibrate", "--json", str(path), str(SAMPLE))
    assert run.code == 0, run.err
    (both,) = json.loads(run.out)
    assert both["left_out"] == 26 and both["files"] == 1
    assert both["recorded"] == 2 * alone[0]["recorded"]
    assert {k: v for k, v in both.items() if k not in ("left_out", "recorded")} == \
        {k: v for k, v in alone[0].items() if k not in ("left_out", "recorded")}
    assert both["worst"] < 0.05


def test_made_up_small_last_usages_are_passed_over_not_the_calls_before_them(
        tmp_path: Path) -> None:
    # nine earlier calls record a believable prompt (~30k); the last two say 10 and 12
    # tokens (one alone, which fell by more than the prompt before it held of the file,
    # is set aside where calls are judged: test_a_last_prompt_that_collapsed_is_set_aside)
    honest = stats(SAMPLE, cache=False)
    path = with_prompts(tmp_path, {25: 10, 26: 12})
    s = stats(path, cache=False)
    c, h = s.context, honest.context
    assert c is not None and h is not None
    # anchored on the call before them, plus what came after: near the honest bill, not
    # the bare count (5,138)
    assert c.kind == "anchored" and c.below == 0 and c.calls == h.calls
    assert abs(c.tokens - h.tokens) < 0.01 * h.tokens and c.not_in_file > 5 * s.tokens
    passed = [{"line": 110, "billed": 10}, {"line": LAST_REPLY, "billed": 12}]
    assert s.passed_over == passed and not s.set_aside
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert (f"anchored on recorded call {c.calls - 2} of {c.calls}, passing over calls "
            f"{c.calls - 1} to {c.calls} ({SENDS})") in said
    assert f"passed over, as {SENDS}" in said and \
        f"line 110 (10 recorded), line {LAST_REPLY} (12 recorded)" in said, said
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]["context"]
    assert doc["passed_over"] == passed and doc["kind"] == "anchored"
    # compress decides with that bill: a budget under it makes it act
    out = tmp_path / "small.jsonl"
    done = run_ctxpack("compress", str(path), "--budget", "28000", "-o", str(out))
    assert done.code == 0 and "nothing to do" not in done.out + done.err
    assert stats(out, cache=False).messages < s.messages
    # (validate finds nothing wrong: an agent may cut old outputs itself)
    assert run_ctxpack("validate", str(path)).code == 0
    # calibrate fits without them, as the bill passes them over
    fitted, whole = (json.loads(run_ctxpack("calibrate", "--json", str(p)).out)
                     for p in (path, SAMPLE))
    assert [f["calls"] for f in fitted] == [whole[0]["calls"] - 2]
    assert fitted[0]["error"] < 0.05


def test_a_window_the_agent_records_that_no_model_has_is_not_taken(tmp_path: Path) -> None:
    # a Codex rollout records the window the agent gave itself; one of a trillion tokens
    # would make every context a rounding error of it
    sample = SAMPLES / "refactor.codex.jsonl"
    honest = stats(sample, cache=False)
    path = tmp_path / "run.jsonl"
    path.write_text(sample.read_text().replace('"model_context_window":272000',
                                               f'"model_context_window":{ABSURD}'))
    assert path.read_text() != sample.read_text()
    s = stats(path, cache=False)
    assert honest.context_window == 272_000
    assert s.context_window < MOST and s.context_window != ABSURD
    assert s.context_ratio is not None and s.context_ratio > honest.context_ratio * 0.5


def codex_run(tmp_path: Path, window: str, input_tokens: int) -> tuple[Path, int]:
    """The Codex sample as a gpt-5.4 session recording the context window `window` (""
    records none), its last call's prompt `input_tokens`; and that call's line."""
    lines = (SAMPLES / "refactor.codex.jsonl").read_text().splitlines()
    last = max(n for n, text in enumerate(lines) if '"last_token_usage"' in text)
    record = json.loads(lines[last])
    record["payload"]["info"]["last_token_usage"]["input_tokens"] = input_tokens
    lines[last] = json.dumps(record, separators=(",", ":"))
    text = "\n".join(lines).replace('"model":"gpt-5.1-codex"', '"model":"gpt-5.4"')
    text = text.replace(',"model_context_window":272000', window and
                        f',"model_context_window":{window}')
    path = tmp_path / "run.jsonl"
    path.write_text(text + "\n")
    return path, last + 1


def test_a_call_too_large_is_judged_by_the_window_its_file_records(tmp_path: Path) -> None:
    # a gpt-5.4 rollout records its window, 258,400: five times that bounds a call,
    # not five times the 400,000 the table gives the gpt-5 family
    path, line = codex_run(tmp_path, "258400", 1_400_000)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1, checked.err
    assert checked.out.startswith(
        f"{path}:{line}: recorded usage of 1,400,3") and (
        "more than 1,292,000, 5 times the 258,400-token window the file records for "
        "gpt-5.4; set aside") in checked.out
    s = stats(path, cache=False)
    assert s.context_window == 258_400 and [x["line"] for x in s.set_aside] == [line]
    # within that bound, it is not set aside for its size
    path, line = codex_run(tmp_path, "258400", 1_200_000)
    assert "window the file records" not in run_ctxpack("validate", str(path)).out


@pytest.mark.parametrize("window", ["", str(ABSURD), "0"])
def test_else_the_table_window_is_named_by_the_model_the_file_names(
        tmp_path: Path, window: str) -> None:
    # no window recorded, or one no model has: the table's for the gpt-5 family
    path, line = codex_run(tmp_path, window, 2_050_000)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1, checked.err
    said = checked.out.splitlines()[-1]  # (after the window named, where one is written)
    assert said.startswith(f"{path}:{line}: recorded usage of 2,050,3")
    assert len(checked.out.splitlines()) == 1 + bool(window)
    assert ("more than 2,000,000, 5 times the 400,000-token window the table gives gpt-5.4 "
            "(as gpt-5); set aside") in said


def test_a_prompt_that_rose_and_fell_back_mid_session_is_set_aside(tmp_path: Path) -> None:
    # the 4th-from-last call says 900,000 input tokens; the calls after it of the same
    # context (no compaction between) ~30k: under the 5x bound, but not true
    honest = stats(SAMPLE, cache=False)
    path = with_usage(tmp_path, 105, 900_000)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.startswith(f"{path}:105: recorded prompt of 929,649 tokens cannot be "
                                  f"true: more than {RISE} times the 30,362 a later call")
    assert "set aside" in checked.out
    s = stats(path, cache=False)
    assert s.context_window == 200_000 and s.window_assumed is None
    assert [x["line"] for x in s.set_aside] == [105]
    c, h = s.context, honest.context
    assert c is not None and h is not None and c.kind == "anchored"
    assert c.calls == h.calls - 1 and abs(c.tokens - h.tokens) < 0.01 * h.tokens
    said = " ".join(run_ctxpack("stats", str(path), "--top", "0").out.split())
    assert "recorded usage set aside, as it cannot be true" in said and "line 105" in said
    assert compress_file(path, Options(), cache=False).report.context_window == 200_000


def calls_of(*billed: int) -> list[RecordedCall]:
    return [RecordedCall(k, b, 100, "claude-opus-4-6") for k, b in enumerate(billed, 1)]


def test_only_a_rise_the_file_does_not_hold_and_a_fall_after_it_set_a_call_aside() -> None:
    lines = list(range(0, 100, 10))  # the reply of call k on line 10k

    def aside(calls: list[RecordedCall], between: int | None,
              conversations: list[int] | tuple[()] = ()) -> list[int]:
        return [x.line for x in believed(calls, lines, conversations,
                                         lambda a, b: between)[1]]

    # a spike with a few kilobytes between: set aside; a run of two as well
    assert aside(calls_of(70_000, 900_000, 72_000), 5_000) == [20]
    assert aside(calls_of(70_000, 900_000, 900_000, 72_000), 5_000) == [20, 30]
    # a rise the bytes between could carry, then a fall (old results cleared): kept
    assert aside(calls_of(20_000, 150_000, 60_000), 200_000) == []
    # a step down after the prompt grew to its size (Codex drops a turn's reasoning)
    assert aside(calls_of(50_000, 60_000, 60_423, 30_273), 5_000) == []
    # one made-up small later call does not throw out the sane calls before it
    assert aside(calls_of(70_000, 71_000, 72_000, 10), 5_000) == []
    # no call before it (and one later call, too few to outvote it), or nothing known of
    # the file between: not judged
    assert aside(calls_of(900_000, 70_000), 5_000) == []
    assert aside(calls_of(70_000, 900_000, 72_000), None) == []
    # calls of other conversations are other prompts (an eval file)
    assert aside(calls_of(70_000, 900_000, 72_000), 5_000, [0, 0, 1, 2]) == []


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(pattern="*.json*"))
def test_no_corpus_call_is_set_aside(path: Path) -> None:
    # real sessions' prompts shrink (a compaction, cleared tool results, dropped
    # reasoning, a resumed session, sub-agents): none of it is set aside, none far below
    s = stats(path)
    assert s.set_aside == [] and s.passed_over == []


def test_the_last_call_rising_far_past_what_the_file_added_is_set_aside(tmp_path: Path) -> None:
    # line 114 is the last call: no later call contradicts it, but nothing in the file
    # carries its prompt from the ~30k of the call before to 900,000
    path = with_usage(tmp_path, 114, 900_000)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.startswith(f"{path}:114: recorded prompt of 930,470 tokens cannot be "
                                  f"true: more than {RISE} times the most the call before")
    s = stats(path, cache=False)
    assert [x["line"] for x in s.set_aside] == [114]
    assert s.context is not None and s.context.tokens < 200_000
    assert s.context_window == 200_000


def test_the_first_call_after_a_compaction_outvoted_by_the_later_ones_is_set_aside(
        tmp_path: Path) -> None:
    # lines 74 and 75: the first call after the sample's compaction (one reply, two lines)
    honest = stats(SAMPLE, cache=False)
    lines = SAMPLE.read_text().splitlines()
    for n in (74, 75):
        record = json.loads(lines[n - 1])
        record["message"]["usage"]["input_tokens"] = 900_000
        lines[n - 1] = json.dumps(record)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and "the first of its context" in checked.out
    s = stats(path, cache=False)
    assert len(s.set_aside) == 1 and s.set_aside[0]["line"] in (74, 75)
    assert s.context_window == 200_000
    assert s.context is not None and honest.context is not None
    assert s.context.tokens == honest.context.tokens


def test_a_rise_alone_sets_aside_only_far_above_what_the_file_added() -> None:
    lines = list(range(0, 100, 10))

    def aside(calls: list[RecordedCall], between: int | None) -> list[int]:
        return [x.line for x in believed(calls, lines, (), lambda a, b: between)[1]]

    # the last call: far above, set aside; tool definitions or a CLAUDE.md added (tens of
    # thousands of tokens, more than twice a small prompt), kept
    assert aside(calls_of(70_000, 72_000, 900_000), 5_000) == [30]
    assert aside(calls_of(10_000, 12_000, 12_000 + MARGIN - 20_000), 5_000) == []
    # the first call: outvoted by two later calls that agree; not by one, nor by two
    # that disagree, nor when within the margin of them
    assert aside(calls_of(900_000, 70_000, 72_000), 5_000) == [10]
    assert aside(calls_of(900_000, 70_000), 5_000) == []
    assert aside(calls_of(900_000, 70_000, 300_000), 200_000) == []
    assert aside(calls_of(20_000 + MARGIN - 1_000, 20_000, 21_000), 5_000) == []


@pytest.mark.parametrize(("value", "said"), [(-500, "input_tokens -500"),
                                             (1.5e300, "input_tokens 1.5e+300"),
                                             ("500", "input_tokens '500'"),
                                             (False, "input_tokens False")])
def test_a_count_no_token_count_can_be_is_set_aside(tmp_path: Path, value: object,
                                                    said: str) -> None:
    # a negative count was summed into the bill, a float or a string dropped
    # without a word; validate said ok
    honest = stats(SAMPLE, cache=False)
    lines = SAMPLE.read_text().splitlines()
    record = json.loads(lines[113])
    record["message"]["usage"]["input_tokens"] = value
    lines[113] = json.dumps(record)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.startswith(
        f"{path}:114: recorded usage cannot be true: message.usage.{said} (")
    s = stats(path, cache=False)
    assert [x["line"] for x in s.set_aside] == [114]
    c, h = s.context, honest.context
    assert c is not None and h is not None and c.calls == h.calls - 1
    assert abs(c.tokens - h.tokens) < 0.01 * h.tokens


def test_a_negative_count_any_reader_keeps_is_set_aside() -> None:
    calls = [RecordedCall(1, 70_000, -5, "claude-opus-4-6"),
             RecordedCall(2, 71_000, 100, "claude-opus-4-6", reasoning=-1)]
    kept, aside = believed(calls, [0, 10, 20])
    assert kept == [] and [x.line for x in aside] == [10, 20]
    assert "reply -5" in aside[0].problem and "reasoning -1" in aside[1].problem


# The sample's reply on line 79 (after its compaction, so in the context billed) given an
# empty thinking block, as Claude Code stores some models' thinking: its recorded output is
# then counted as hidden content. Its prompt is 27,243 tokens; the next call's, on line 81,
# 27,878 (635 more), resends the reply.
HIDDEN = 79


def with_hidden_reply(tmp_path: Path, output: int | None, name: str = "run.jsonl") -> Path:
    """The Claude Code sample, line `HIDDEN`'s reply with an empty thinking block and its
    recorded `output_tokens` set to `output` (None: its usage removed, no call recorded)."""
    lines = SAMPLE.read_text().splitlines()
    record = json.loads(lines[HIDDEN - 1])
    message = record["message"]
    message["content"] = [{"type": "thinking", "thinking": "", "signature": "c2ln"},
                          *message["content"]]
    if output is None:
        del message["usage"]
    else:
        message["usage"]["output_tokens"] = output
    lines[HIDDEN - 1] = json.dumps(record)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def stats_doc(path: Path) -> dict:
    done = run_ctxpack("stats", str(path), "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)["files"][0]


def test_a_reply_the_next_prompt_cannot_hold_is_set_aside(tmp_path: Path) -> None:
    inflated = with_hidden_reply(tmp_path, 150_000)
    checked = run_ctxpack("validate", str(inflated))
    assert checked.code == 1
    assert checked.out.startswith(
        f"{inflated}:{HIDDEN}: recorded reply of 150,000 tokens cannot be true: the next "
        f"call of the same context (line 81), which resends it, records a prompt of 27,878 "
        f"tokens to this call's 27,243, and the reply (its thinking stored empty, counted "
        f"at this output) is more than {RISE} times and {HIDDEN_MARGIN:,} above the 635 it "
        f"grew by; set aside")
    honest = with_hidden_reply(tmp_path, 31, "honest.jsonl")
    assert run_ctxpack("validate", str(honest)).code == 0
    bare = with_hidden_reply(tmp_path, None, "bare")
    doc, kept, without = stats_doc(inflated), stats_doc(honest), stats_doc(bare)
    assert [x["line"] for x in doc["usage_set_aside"]] == [HIDDEN]
    said = " ".join(run_ctxpack("stats", str(inflated), "--top", "0").out.split())
    assert "recorded usage set aside, as it cannot be true" in said
    # its thinking is counted as the file holds it, as if no usage were recorded (the
    # honest output of 31 is counted as hidden content), and the later calls anchor the
    # bill as they do on the honest file: none passed over
    assert doc["tokens"] == without["tokens"] < kept["tokens"]
    assert doc["by_role"] == without["by_role"]
    assert doc["context"]["passed_over"] == [] and doc["context"]["kind"] == "anchored"
    assert doc["context"]["tokens"] == kept["context"]["tokens"]
    assert doc["context_window"] == 200_000
    report = compress_file(inflated, Options(), cache=False).report
    assert report.billed["tokens_before"] == kept["context"]["tokens"] < report.trigger


def test_a_hidden_reply_the_next_prompt_did_not_grow_by_moves_nothing(
        tmp_path: Path) -> None:
    # 8,000 tokens of thinking stored empty, where the next prompt grew by 635: within the
    # room a reply the file shows is given (MARGIN), but this one would be counted at its
    # output, so it is held to what the next prompt grew by
    inflated = with_hidden_reply(tmp_path, 8_000)
    checked = run_ctxpack("validate", str(inflated))
    assert checked.code == 1 and checked.out.startswith(
        f"{inflated}:{HIDDEN}: recorded reply of 8,000 tokens cannot be true: the next call")
    honest = with_hidden_reply(tmp_path, 31, "honest.jsonl")
    bare = with_hidden_reply(tmp_path, None, "bare")
    doc, kept, without = stats_doc(inflated), stats_doc(honest), stats_doc(bare)
    # the count and its roles are as if the reply recorded no usage; the bill as the
    # honest file's (the later calls anchor it)
    assert doc["tokens"] == without["tokens"] and doc["by_role"] == without["by_role"]
    assert doc["context"]["tokens"] == kept["context"]["tokens"]
    # compress decides as on the honest file, at a trigger the 8,000 would have passed
    options = Options(threshold=(kept["context"]["tokens"] + 3_000) / 200_000)
    report = compress_file(inflated, options, cache=False).report
    assert report.billed["tokens_before"] == kept["context"]["tokens"]
    assert report.summary is None
    # calibrate fits it as the file with no usage on that line, and counts it set aside
    fits = [json.loads(run_ctxpack("calibrate", "--json", str(p)).out)
            for p in (inflated, bare)]
    accounts = ("set_aside", "recorded")
    inflated_rows, bare_rows = fits
    assert [{k: v for k, v in row.items() if k not in accounts} for row in inflated_rows] \
        == [{k: v for k, v in row.items() if k not in accounts} for row in bare_rows]
    assert [(row["set_aside"], row["recorded"]) for row in inflated_rows] == [
        (row["set_aside"] + 1, row["recorded"] + 1) for row in bare_rows]


def with_prompts(tmp_path: Path, prompts: dict[int, int], name: str = "run") -> Path:
    """The Claude Code sample with the prompt of the responses numbered in `prompts` (of
    26, in file order; the last 11 are made on the context as it stands, at 70-73k each)
    recorded as the size given (in `input_tokens`, both cache fields 0), or not at all
    (no usage) where it is 0; in the folder `name`."""
    def edit(message: dict, n: int) -> None:
        if n in prompts and not prompts[n]:
            del message["usage"]
        elif n in prompts:
            message["usage"].update(input_tokens=prompts[n], cache_read_input_tokens=0,
                                    cache_creation_input_tokens=0)
    folder = tmp_path / name
    folder.mkdir()
    return with_replies(folder, edit)


LAST_REPLY = 114  # the line of the sample's last reply: its call's prompt is 30,471


@pytest.mark.parametrize("prompt", [6_000, 12_000])
def test_a_last_prompt_that_collapsed_is_set_aside(tmp_path: Path, prompt: int) -> None:
    # the last call's prompt set to 6,000, ten calls of 27-30k before it with no
    # compaction between: stats anchored on it (then with 70k calls before it: "context
    # as billed: 6,102 ... expected error ±0.2%", "not in the file 1,000") and compress
    # would not act; what the prompt before it held of the file (some 14,000 tokens at
    # most) cannot account for the fall
    path = with_prompts(tmp_path, {26: prompt})
    bare = with_prompts(tmp_path, {26: 0}, "bare")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    [said] = checked.out.splitlines()
    assert said.startswith(
        f"{path}:{LAST_REPLY}: recorded prompt of {prompt:,} tokens cannot be true: less than "
        f"1/{RISE} of the 30,362 the call before it records (line 110), with no compaction "
        f"between, it is {30_362 - prompt:,} less, more than that prompt can have held of "
        "the file (")
    assert said.endswith("), and it is the last call of its context; set aside, not used "
                         "for the bill or the window")
    doc, without = stats_doc(path), stats_doc(bare)
    assert [x["line"] for x in doc["usage_set_aside"]] == [LAST_REPLY]
    # anchored on the last call that can be true, as if the last recorded no usage
    assert doc["context"] == without["context"]
    assert doc["context"]["kind"] == "anchored" and doc["context"]["calls"] == 10
    assert doc["context"]["tokens"] > 30_362 and doc["usage"]["last_input_tokens"] == 30_362
    report = compress_file(path, Options(), cache=False).report
    assert report.billed["tokens_before"] == doc["context"]["tokens"]
    options = Options(threshold=(doc["context"]["tokens"] - 1_000) / 200_000)
    assert compress_file(path, options, cache=False).report.summary is not None


def test_a_fall_the_next_call_agrees_with_stands(tmp_path: Path) -> None:
    # what the agent sends besides the messages can change (tool definitions dropped):
    # the calls after a fall that stay down tell it was sent, and the bill rests on them
    path = with_prompts(tmp_path, {25: 12_000, 26: 12_200})
    assert run_ctxpack("validate", str(path)).code == 0
    doc = stats_doc(path)
    assert doc["usage_set_aside"] == [] and doc["context"]["calls"] == 11
    assert 12_200 < doc["context"]["tokens"] < 13_000
    # one that rose back is no such change: the one down is set aside, not the later
    path = with_prompts(tmp_path, {25: 12_000}, "back")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.splitlines()[0].endswith(
        "and the next call (line 114) records 30,471, more than 2 times it; set aside, not "
        "used for the bill or the window")
    assert [x["line"] for x in stats_doc(path)["usage_set_aside"]] == [110]
    # a fall of less than half is left, as is one the prompt could have dropped
    path = with_prompts(tmp_path, {26: 15_200}, "half")
    assert run_ctxpack("validate", str(path)).code == 0


def unprompted(tmp_path: Path, output: int, name: str = "run.jsonl") -> Path:
    """`with_hidden_reply`'s file, the reply's usage recording a prompt of 0 (input and both
    cache fields) beside its `output`."""
    path = with_hidden_reply(tmp_path, output, name)
    lines = path.read_text().splitlines()
    record = json.loads(lines[HIDDEN - 1])
    record["message"]["usage"].update(input_tokens=0, cache_creation_input_tokens=0,
                                      cache_read_input_tokens=0)
    lines[HIDDEN - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_call_recording_a_prompt_of_0_has_its_reply_judged(tmp_path: Path) -> None:
    # such a call was no call: its output went into the usage totals, and its thinking
    # (stored empty) unchecked; now the next prompt, which resends it, holds it whole
    honest = unprompted(tmp_path, 31, "honest.jsonl")
    assert run_ctxpack("validate", str(honest)).code == 0
    path = unprompted(tmp_path, 400_000)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.splitlines() == [
        f"{path}:{HIDDEN}: recorded reply of 400,000 tokens cannot be true: the next call of "
        f"the same context (line 81), which resends it, records a prompt of 27,878 tokens "
        f"(this call records a prompt of 0), and the reply (its thinking stored empty, "
        f"counted at this output) is more than {RISE} times and {HIDDEN_MARGIN:,} above the "
        f"whole of it; set aside, not used for the bill or the window"]
    doc, kept = stats_doc(path), stats_doc(honest)
    assert [x["line"] for x in doc["usage_set_aside"]] == [HIDDEN]
    # its output is taken back out of the totals, and its thinking counted as the file
    # holds it (the honest 31 counted as hidden content)
    assert doc["usage"]["output_tokens"] == kept["usage"]["output_tokens"] - 31
    assert doc["usage"]["calls_set_aside"] == 1
    assert doc["tokens"] == stats_doc(with_hidden_reply(tmp_path, None, "bare"))["tokens"]
    assert doc["context"]["tokens"] == kept["context"]["tokens"]
    # and past what any call of the model holds, whatever the next call says
    huge = unprompted(tmp_path, 1_500_000, "huge.jsonl")
    said = run_ctxpack("validate", str(huge)).out
    assert said.startswith(f"{huge}:{HIDDEN}: recorded usage of 1,500,000 tokens (prompt and "
                           "reply) cannot be true: more than 1,000,000")


def test_a_reply_is_set_aside_only_past_both_bounds(tmp_path: Path) -> None:
    # the next prompt grew by 635: a reply whose thinking is stored empty may be up to
    # HIDDEN_MARGIN above that
    most = 635 + HIDDEN_MARGIN
    assert stats(with_hidden_reply(tmp_path, most), cache=False).set_aside == []
    s = stats(with_hidden_reply(tmp_path, most + 1), cache=False)
    assert [x["line"] for x in s.set_aside] == [HIDDEN]

    lines = list(range(0, 100, 10))  # the reply of call k on line 10k

    def aside(*calls: tuple[int, int], same_line: bool = False, hidden: bool = False
              ) -> list[int]:
        # (of a model whose window holds every prompt and reply here: one it cannot hold
        # is set aside whatever the next prompt, see test_usage_unheld.py)
        recorded = [RecordedCall(k, b, out, "gemini-2.5-pro", hidden=hidden)
                    for k, (b, out) in enumerate(calls, 1)]
        places = [0] * len(lines) if same_line else lines
        return [x.line for x in believed(recorded, places, (), lambda a, b: None)[1]]

    # a reply the file shows whole may be up to MARGIN above what the next prompt grew by
    # (its thinking may be dropped as it is resent); a hidden one, counted at its output,
    # no more than HIDDEN_MARGIN
    assert aside((50_000, 1_000 + MARGIN), (51_000, 100)) == []
    assert aside((50_000, 1_000 + HIDDEN_MARGIN), (51_000, 100), hidden=True) == []
    assert aside((50_000, 1_001 + HIDDEN_MARGIN), (51_000, 100), hidden=True) == [10]
    # and never less than twice what it grew by
    assert aside((50_000, 2 * 40_000), (90_000, 100), hidden=True) == []
    assert aside((50_000, 2 * 40_000 + 1), (90_000, 100), hidden=True) == [10]

    # a next prompt that grew by 150,000: the reply may be up to twice that
    assert aside((50_000, 300_000), (200_000, 100)) == []
    assert aside((50_000, 300_001), (200_000, 100)) == [10]
    # one that shrank (old tool results cleared) held no more than nothing of it
    assert aside((50_000, MARGIN), (40_000, 100)) == []
    assert aside((50_000, MARGIN + 1), (40_000, 100)) == [10]
    # the last call has no next prompt to hold its reply; nor are replies of unknown
    # lines judged (one-line documents)
    assert aside((50_000, 100), (60_000, 300_000)) == []
    assert aside((50_000, 300_001), (200_000, 100), same_line=True) == []


X402 = corpus_files("claude-code", pattern="privacy-x402__*.jsonl")


@pytest.mark.corpus
@pytest.mark.skipif(not X402, reason="corpus not found beside the checkout (../shared/corpus)")
def test_an_inflated_output_on_empty_thinking_of_the_corpus_bills_as_before(
        tmp_path: Path) -> None:
    # line 9's reply (thinking stored empty, 594 output tokens) said to be 150,000: within
    # the window bound, but the 33 calls after it resend it in prompts of 32k-64k
    source = X402[0]
    lines = source.read_text().splitlines()
    record = json.loads(lines[8])
    record["message"]["usage"]["output_tokens"] = 150_000
    lines[8] = json.dumps(record)
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.startswith(f"{path}:9: recorded reply of 150,000")
    honest, s = stats(source), stats(path, cache=False)
    assert [x["line"] for x in s.set_aside] == [9] and s.passed_over == []
    assert s.context is not None and honest.context is not None
    assert s.context.tokens == honest.context.tokens
    assert s.context.calls == honest.context.calls - 1


def test_every_call_of_a_real_agent_known_to_send_more_holds_its_messages() -> None:
    # the line a call of Claude Code or Codex must reach (its messages at the family's
    # least slope) leaves none of a real session's calls out of a fit, and so passes over
    # none in a bill (Codex cuts old outputs: rtchess bills 0.98 of the count at 150,000,
    # still above it)
    folders = [CORPUS / "claude-code", CORPUS / "codex"]
    if not all(f.is_dir() for f in folders):
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    run = run_ctxpack("calibrate", "--json", *map(str, folders))
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert len(rows) > 5 and [r["left_out"] for r in rows] == [0] * len(rows)


def with_replies(tmp_path: Path, edit: Callable[[dict, int], None]) -> Path:
    """The Claude Code sample with `edit` applied to each reply's `message` (and the
    number of its response, in file order)."""
    ids: dict[str, int] = {}
    lines = []
    for text in SAMPLE.read_text().splitlines():
        record = json.loads(text)
        if record.get("type") == "assistant":
            message = record["message"]
            edit(message, ids.setdefault(message["id"], len(ids) + 1))
            text = json.dumps(record)
        lines.append(text)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _no_model(message: dict, n: int) -> None:
    del message["model"]


@pytest.mark.parametrize(("edit", "named"), [
    # (Claude Code names the model of every reply, and writes its own `<synthetic>` ones
    # with no usage: validate said nothing of either)
    pytest.param(_no_model, "message.model is missing, where Claude Code names the model of "
                 "every reply: billed as the file's model", id="no-model"),
    pytest.param(lambda m, n: m.update(model=5), "message.model is a number", id="model-int"),
    pytest.param(lambda m, n: m.update(model=""), "message.model is empty (''), where Claude "
                 "Code names the model of every reply: billed as the file's model",
                 id="model-empty"),
    pytest.param(lambda m, n: m.update(model=" "), "message.model is empty (' ')",
                 id="model-blank"),
    pytest.param(lambda m, n: m.update(model="<synthetic>"),
                 "message.model is '<synthetic>', a reply Claude Code makes up itself and "
                 "writes with no usage, yet its usage records ", id="synthetic"),
    pytest.param(lambda m, n: m.update(id=n), "message.id is a number", id="id-int"),
])
def test_a_reply_whose_model_or_id_is_of_another_kind_keeps_its_usage(
        tmp_path: Path, edit: Callable[[dict, int], None], named: str | None) -> None:
    # each dropped the reply's usage without a word: calibrated 30,138, not anchored at
    # 30,565, even with -m; a numeric id also split the parallel tool calls (22 messages -> 25)
    honest = stats(SAMPLE, "claude-opus-4-6", cache=False)
    path = with_replies(tmp_path, edit)
    s = stats(path, "claude-opus-4-6", cache=False)
    assert s.messages == honest.messages == 22
    assert s.context == honest.context and s.context is not None
    assert s.context.kind == "anchored" and s.context.calls == 11
    assert s.usage["calls"] == honest.usage["calls"]
    # calibrate fits them as the model the file names, or the one assumed (not as a
    # model called `<synthetic>`)
    fits = json.loads(run_ctxpack("calibrate", str(path), "--json").out)
    assert [(f["model"].split("-")[0], f["calls"]) for f in fits] == \
        [("claude", s.usage["calls"])]
    checked = run_ctxpack("validate", str(path))
    if named is None:
        assert checked.code == 0, checked.out
    else:  # named at each line of a reply, as a problem of the file, the usage read
        assert checked.code == 1
        replies = [n for n, text in enumerate(SAMPLE.read_text().splitlines(), 1)
                   if '"type": "assistant"' in text or '"type":"assistant"' in text]
        found = [line.split(": ", 1) for line in checked.out.splitlines()]
        assert [int(where.rsplit(":", 1)[1]) for where, _ in found] == replies
        assert all(problem.startswith(named) for _, problem in found)


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_model_name_is_no_model(tmp_path: Path, empty: str) -> None:
    # a file whose replies all name the model "" was fitted as the model `claude` (not
    # assumed) and written to the config as `{name: claude}`, which by longest prefix
    # bills every Claude model without its own entry
    path = with_replies(tmp_path, lambda m, n: m.update(model=empty))
    (tmp_path / "bare").mkdir()
    bare = with_replies(tmp_path / "bare", _no_model)
    for run in (path, bare):
        fits = json.loads(run_ctxpack("calibrate", str(run), "--json").out)
        assert [(f["label"], f["apart"]) for f in fits] == [("claude (assumed)", "assumed")]
        assert fits[0]["untrusted"].startswith("no model named")
    config = tmp_path / "config.yaml"
    written = run_ctxpack("calibrate", str(path), "--write-config", str(config))
    assert written.code == 0 and not config.exists(), written.err
    assert "not writing claude (assumed): no model named" in " ".join(written.err.split())
    # stats names no model, as of a file that names none, and bills it alike
    doc = json.loads(run_ctxpack("stats", "--json", str(path)).out)["files"][0]
    same = json.loads(run_ctxpack("stats", "--json", str(bare)).out)["files"][0]
    assert doc["context"] == same["context"] and doc["model"] == same["model"] == "claude"
    assert "assumed" in run_ctxpack("stats", str(path)).out


def response_starts() -> list[tuple[int, str]]:
    """(line, id) of the first piece of each response of the sample, in file order."""
    seen: dict[str, int] = {}
    for n, text in enumerate(SAMPLE.read_text().splitlines(), 1):
        record = json.loads(text)
        if record.get("type") == "assistant":
            seen.setdefault(record["message"]["id"], n)
    return [(n, ident) for ident, n in seen.items()]


def _last_takes_the_first_id(message: dict, n: int) -> None:
    starts = response_starts()
    if n == len(starts):
        message["id"] = starts[0][1]


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(lambda m, n: m.update(id=""), "none", id="empty"),
    pytest.param(lambda m, n: m.pop("id"), "none", id="missing"),
    pytest.param(lambda m, n: m.update(id="msg_same"), "each after the first", id="same"),
    pytest.param(_last_takes_the_first_id, "the last", id="reused"),
])
def test_replies_sharing_an_id_are_one_call_only_as_pieces_of_one_response(
        tmp_path: Path, edit: Callable[[dict, int], None], named: str) -> None:
    # every id "" (as a proxy may write) merged 22 messages / 11 steps into 13 / 2; one
    # id for all billed each field's largest over the session, not 30,565; the last
    # reply taking the first's id summed two calls (its last prompt not 30,471)
    honest = stats(SAMPLE, "claude-opus-4-6", cache=False)
    path = with_replies(tmp_path, edit)
    s = stats(path, "claude-opus-4-6", cache=False)
    assert (s.messages, s.steps) == (honest.messages, honest.steps) == (22, 11)
    assert s.context == honest.context and s.context is not None
    assert s.context.kind == "anchored" and s.usage == honest.usage
    checked = run_ctxpack("validate", str(path))
    if named == "none":  # no id: the one prompt its pieces record still joins them
        assert checked.code == 0, checked.out
        return
    # a response's id an earlier one had is named at its first piece, with the line the
    # id was first on
    starts = response_starts()
    again = starts[1:] if named == "each after the first" else starts[-1:]
    ident = json.loads(path.read_text().splitlines()[starts[0][0] - 1])["message"]["id"]
    assert checked.code == 1
    assert checked.out.splitlines() == [
        f"{path}:{n}: message.id {ident!r} is the id of an earlier call (line "
        f"{starts[0][0]}): read as a new call" for n, _ in again]


def test_compress_restates_calls_sharing_an_id_as_calls_of_their_own(tmp_path: Path) -> None:
    # compress told a call by its id alone: calls one after another under one id were
    # restated as pieces of the first
    replies = []
    for path in (SAMPLE, with_replies(tmp_path, lambda m, n: m.update(id="msg_same"))):
        out = tmp_path / f"{path.stem}.out.jsonl"
        run = run_ctxpack("compress", str(path), "--budget", "73000", "-o", str(out))
        assert run.code == 0, run.err
        records = [json.loads(text) for text in out.read_text().splitlines()]
        replies.append([r["message"]["usage"] for r in records if r.get("type") == "assistant"])
    assert replies[0] == replies[1]
    assert len({u["cache_read_input_tokens"] for u in replies[0]}) > 2  # restated apart


def test_a_reply_the_agent_made_up_is_no_call(tmp_path: Path) -> None:
    # Claude Code's own `<synthetic>` replies record no token: they neither anchor nor
    # count among the calls, nor are they a problem (one recording tokens is: above)
    s = stats(SAMPLE, cache=False)
    assert s.usage["calls"] == 26
    counts = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
              "output_tokens")
    zero = with_replies(tmp_path, lambda m, n: m.update(
        model="<synthetic>", usage=dict.fromkeys(counts, 0)) if n == 11 else None)
    assert run_ctxpack("validate", str(zero)).code == 0
    assert stats(zero, cache=False).usage["calls"] == 25


@pytest.mark.parametrize("usage", [[], "lots", 7])
def test_usage_that_is_no_object_is_named_and_listed(tmp_path: Path, usage: object) -> None:
    # it took the call out of the bill without a word: validate said ok, and stats listed
    # it neither as set aside nor as unread
    honest = stats(SAMPLE, cache=False)
    lines = SAMPLE.read_text().splitlines()
    record = json.loads(lines[113])
    record["message"]["usage"] = usage
    lines[113] = json.dumps(record)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.splitlines() == [
        f"{path}:114: recorded usage that cannot be read: message.usage is "
        f"{json_kind(usage)}, not an object; left out"]
    s = stats(path, cache=False)
    assert [x["line"] for x in s.unread] == [114] and s.set_aside == []
    c, h = s.context, honest.context
    assert c is not None and h is not None and c.calls == h.calls - 1
    assert abs(c.tokens - h.tokens) < 0.01 * h.tokens


STANDS = "the window recorded before it that is the model's stands, else the table's"
NO_WINDOW = ("is no window a model has (a whole number above 0, within what a call can "
             f"hold): {STANDS}")


@pytest.mark.parametrize(("window", "named"), [
    ("0", f"model_context_window 0 {NO_WINDOW}"),
    ("-5", f"model_context_window -5 {NO_WINDOW}"),
    ('"272000"', f"model_context_window '272000' {NO_WINDOW}"),
    ("true", f"model_context_window True {NO_WINDOW}"),
    ("1000", "model_context_window 1,000 is not the model's window: 24 of the 24 calls "
             f"recorded under it hold more than 5,000 (prompt and reply); {STANDS}"),
])
def test_a_window_the_calls_or_its_kind_say_is_not_the_models_is_named(
        tmp_path: Path, window: str, named: str) -> None:
    # each fell back to the table's window without a word, the JSON showing the raw value;
    # one of 1,000 was trusted over the file's own 24 calls (all set aside, ratio 37.3):
    # a window by which most of its calls cannot be true is not the model's (one they
    # pass within five times, as a test of test_usage_counts does, still is)
    sample = SAMPLES / "refactor.codex.jsonl"
    path = tmp_path / "run.jsonl"
    path.write_text(sample.read_text().replace('"model_context_window":272000',
                                               f'"model_context_window":{window}'))
    # (named at the first line it is on: the first turn's task_started event)
    first = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                 if '"model_context_window"' in text)
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.splitlines() == [f"{path}:{first}: {named}"]
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    table = json.loads(run_ctxpack("stats", str(sample), "--json", "-m",
                                   "gpt-5.1-codex").out)["files"][0]
    assert "context_window" not in doc["usage"]
    assert doc["context_window"] == table["context_window"]  # the table's, for its model
    assert doc["usage_set_aside"] == [] and doc["context_window_assumed"] is None
    assert doc["context"] == json.loads(run_ctxpack("stats", str(sample), "--json").out
                                        )["files"][0]["context"]


@pytest.mark.parametrize(("window", "named"), [
    ('"272000"', f"model_context_window '272000' {NO_WINDOW}"),
    ("1000", f"model_context_window 1,000 is not the model's window: 1 of the 1 calls "
             f"recorded under it hold more than 5,000 (prompt and reply); {STANDS}"),
    (str(10**12), f"model_context_window 1000000000000 {NO_WINDOW}"),
    ("null", None),
])
def test_a_last_window_that_is_not_the_models_leaves_the_one_before_it(
        tmp_path: Path, window: str, named: str | None) -> None:
    # one wrong value in the last token_count threw away the 272,000 of every event
    # before it: the bill was "of 400,000", and compress triggered past the real window
    sample = SAMPLES / "refactor.codex.jsonl"
    lines = sample.read_text().splitlines()
    last = max(n for n, text in enumerate(lines) if '"model_context_window":272000' in text)
    lines[last] = lines[last].replace('"model_context_window":272000',
                                      f'"model_context_window":{window}')
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.out.splitlines() == ([f"{path}:{last + 1}: {named}"] if named else [])
    doc = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"][0]
    assert doc["context_window"] == doc["usage"]["context_window"] == 272_000
    table = json.loads(run_ctxpack("stats", str(sample), "--json", "-m",
                                   "gpt-5.1-codex").out)["files"][0]["context_window"]
    assert table > 272_000
    # compress triggers at its share of that window, not of the table's
    assert compress_file(path, Options(), cache=False).report.trigger == int(0.8 * 272_000)


def started_only(tmp_path: Path, window: str) -> tuple[Path, int]:
    """The Codex sample with no `model_context_window` in its token_count events, each
    turn's task_started event naming `window`; and the first such event's line."""
    lines = []
    for text in (SAMPLES / "refactor.codex.jsonl").read_text().splitlines():
        record = json.loads(text)
        payload = record.get("payload") or {}
        if payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            payload["info"].pop("model_context_window", None)
        elif payload.get("type") == "task_started":
            payload["model_context_window"] = json.loads(window)
        lines.append(json.dumps(record))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, next(n for n, text in enumerate(lines, 1) if '"task_started"' in text)


def test_a_turns_task_started_window_is_read_where_its_token_counts_name_none(
        tmp_path: Path) -> None:
    # the window was read from the token_count events (and turn_context) alone: a rollout
    # naming it only where each turn starts was measured against the table's
    table = json.loads(run_ctxpack("stats", str(SAMPLES / "refactor.codex.jsonl"), "--json",
                                   "-m", "gpt-5.1-codex").out)["files"][0]["context_window"]
    assert table != 300_000
    path, _ = started_only(tmp_path, "300000")
    assert run_ctxpack("validate", str(path)).code == 0
    doc = stats_doc(path)
    assert doc["context_window"] == doc["usage"]["context_window"] == 300_000
    # judged as the token_count's value is: one no window can be is named at its line
    path, line = started_only(tmp_path, "0")
    checked = run_ctxpack("validate", str(path))
    assert checked.out.splitlines() == [f"{path}:{line}: model_context_window 0 {NO_WINDOW}"]
    doc = stats_doc(path)
    assert "context_window" not in doc["usage"] and doc["context_window"] == table


def test_a_token_count_whose_info_is_no_object_is_named_and_listed(tmp_path: Path) -> None:
    path, line = codex_run(tmp_path, "272000", 0)
    lines = path.read_text().splitlines()
    record = json.loads(lines[line - 1])
    record["payload"]["info"] = [1, 2]
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert checked.out.splitlines() == [
        f"{path}:{line}: recorded usage that cannot be read: the token_count's info is an "
        "array, not an object; left out"]
    s = stats(path, cache=False)
    assert [x["line"] for x in s.unread] == [line] and s.set_aside == []
    assert s.context is not None and s.context.kind == "anchored"


def test_stream_json_names_a_reply_of_the_wrong_kind_as_claude_code_does(
        tmp_path: Path) -> None:
    sample = SAMPLES / "stream.anthropic.jsonl"
    lines = sample.read_text().splitlines()
    first = next(n for n, text in enumerate(lines) if '"type":"assistant"' in text)
    record = json.loads(lines[first])
    record["message"].update(model=7, usage="lots")
    lines[first] = json.dumps(record)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    checked = run_ctxpack("validate", str(path))
    assert checked.code == 1
    assert sorted(checked.out.splitlines()) == [
        f"{path}:{first + 1}: message.model is a number, not a model's name: billed as the "
        "file's model",
        f"{path}:{first + 1}: recorded usage that cannot be read: message.usage is a string, "
        "not an object; left out"]
    assert [x["line"] for x in stats(path, cache=False).unread] == [first + 1]
