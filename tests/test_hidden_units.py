"""Content a file records only as the provider's token counts (thinking stored empty or as
a summary, reasoning held encrypted) is billed at those counts: the provider's tokens are
not multiplied by the slope that turns ctxpack's count into them (ctxpack.calibration)."""

from __future__ import annotations

import io
import json

from ctxpack.breakdown import REASONING, stats
from ctxpack.calibration import bill, prompts_of, slope_of, with_hidden
from ctxpack.loader import load
from ctxpack.transcript import RecordedCall
from ctxpack.view import view_file

from .conftest import SAMPLES

OPENCODE = SAMPLES / "opencode" / "book-search.opencode.json"


def test_a_hidden_reply_is_taken_as_the_count_its_recorded_output_is_billed_at() -> None:
    slope = slope_of("claude-opus-4-7")
    hidden = RecordedCall(1, 10_000, 1_450, "claude-opus-4-7", hidden=True)
    assert with_hidden([100, 20, 300], [hidden], slope)[1] == round(1_450 / slope)
    # a reply whose visible text counts more than that keeps its count
    assert with_hidden([100, 2_000, 300], [hidden], slope)[1] == 2_000
    encrypted = RecordedCall(1, 10_000, 400, "gpt-5.5", reasoning=1_100)
    assert with_hidden([100, 20, 300], [encrypted], 1.1)[1] == 20 + 1_000


def test_the_bill_adds_a_hidden_reply_at_its_recorded_tokens() -> None:
    counts = [100, 20, 300]  # the task, a reply whose thinking is stored empty, a result
    call = RecordedCall(1, 10_000, 1_450, "claude-opus-4-7", hidden=True)
    b = bill(counts, [call], model="claude-opus-4-7", format="claude-code", exact=False,
             estimated=False)
    assert b.kind == "anchored"
    # the prompt recorded, the reply as the provider counted it, the rest at the slope
    expected = 10_000 + 1_450 + b.slope * 300  # (the priming is in the prompt recorded)
    assert abs(b.tokens - expected) <= 2, (b.tokens, expected)


def test_reasoning_sent_back_for_a_while_is_in_those_prompts_at_its_recorded_tokens() -> None:
    turn = RecordedCall(1, 1_000, 520, "gpt-5.1-codex-max", reasoning=515, until=3)
    later = RecordedCall(2, 2_000, 20, "gpt-5.1-codex-max")
    sizes = prompts_of([100, 20, 300, 50], [turn, later], 1.03)
    assert sizes[1] - sizes[0] == 20 + round(515 / 1.03)


def _signed_export(output: int) -> bytes:
    """The OpenCode sample with its first step's reasoning signed (as Anthropic's Claude 4
    models return it: the text a summary) and recorded at `output` tokens."""
    doc = json.loads(OPENCODE.read_bytes())
    step = doc["messages"][1]
    for part in step["parts"]:
        if part["type"] == "reasoning":
            part["metadata"] = {"anthropic": {"signature": "EuoDCokBCA8YAipA" + "x" * 200}}
        if part["type"] == "step-finish":
            part["tokens"]["output"] = output
    return json.dumps(doc, indent=2).encode()


def test_an_opencode_step_whose_thinking_is_signed_counts_at_its_recorded_output() -> None:
    plain = load(OPENCODE)
    assert not any(c.hidden for c in plain.calls)
    # (2,000: the next step's prompt grew by 511, and resends it; ctxpack.recorded holds a
    # hidden reply to that growth, 2,000 besides)
    t = load(io.BytesIO(_signed_export(2_000)), format="opencode")
    assert [c.hidden for c in t.calls] == [True] + [False] * (len(t.calls) - 1)
    before = stats(OPENCODE, cache=False)
    after = stats(io.BytesIO(_signed_export(2_000)), format="opencode", cache=False)
    # the step's reply is its recorded output, in the provider's tokens, taken as the count
    # the bill's slope bills at that many; the difference is thinking the file holds only
    # as a summary
    c = after.context
    assert c is not None and c.converted == (c.after or c.slope)
    slope = c.converted
    raised = after.by_role[REASONING] - before.by_role.get(REASONING, 0)
    assert raised > 0 and after.tokens - before.tokens == raised
    reply = round(2_000 / slope)
    assert raised < reply
    # a step recording less than the reply's count changes nothing
    small = stats(io.BytesIO(_signed_export(5)), format="opencode", cache=False)
    assert small.tokens == before.tokens


def test_a_hidden_reply_after_the_last_call_is_billed_the_output_recorded_of_it(
        tmp_path, monkeypatch) -> None:
    # an opus-4-7 session whose calls grow 1.30 provider tokens per counted token (the
    # table says 1.45): the bill's own slope is the file's, and the last reply, thinking
    # stored empty and 60,000 output tokens recorded, is in the next prompt at those
    # 60,000, not at the file's slope times the count the table's slope makes of them
    from . import helpers
    from .helpers import ctxpack as run_ctxpack
    from .helpers import with_real_usage
    from .test_format_claude_code import answer, calls, piece, said, user

    monkeypatch.setitem(helpers.FIXTURE_SLOPES, "claude-opus-4-7", 1.30)
    model, output = "claude-opus-4-7", 60_000
    records = [user("u0", None, "Move the billing jobs off the old scheduler. " * 20)]
    for k in range(12):
        records += [piece(f"a{k}", records[-1]["uuid"], f"msg_{k}", calls(f"toolu_{k}"),
                          model=model),
                    answer(f"r{k}", f"a{k}", f"toolu_{k}",
                           "".join(f"jobs/job_{k}_{j}.py: hourly\n" for j in range(90)))]
    records.append(piece("t", records[-1]["uuid"], "msg_last",
                         {"type": "thinking", "thinking": "", "signature": "EuoD" + "x" * 80},
                         model=model))
    records.append(piece("d", "t", "msg_last", said("Done."), model=model))
    records = with_real_usage(records)
    for r in records[-2:]:
        r["message"]["usage"]["output_tokens"] = output
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    usage = records[-1]["message"]["usage"]
    prompt = sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                    "cache_read_input_tokens"))

    (fitted,) = json.loads(run_ctxpack("calibrate", str(path), "--json").out)
    assert abs(fitted["slope"] - 1.30) < 0.02  # the file's own, which the bill takes
    (found,) = json.loads(run_ctxpack("stats", str(path), "--json").out)["files"]
    c = found["context"]
    assert c["kind"] == "anchored"
    # the prompt recorded last, and the reply to it as the provider counted it (its
    # visible "Done." is within the hidden count)
    assert abs(c["tokens"] - (prompt + output)) <= 2, (c["tokens"], prompt + output)
    # compress reads the same counts, so its report bills what stats does
    run = run_ctxpack("compress", str(path), "-o", str(tmp_path / "out.jsonl"), "-q",
                      "--report-json", "-")
    assert json.loads(run.out)["billed"]["tokens_before"] == c["tokens"], run.err


def test_show_counts_joined_sessions_hidden_reasoning_as_stats_does(tmp_path) -> None:
    """Two Codex sessions joined end to end, their reasoning held encrypted: `show` (and the
    charts, which count as it does) converts each conversation's reasoning at the slope of
    its own bill, as stats does, so the totals agree and are each session's again."""
    sample = SAMPLES / "refactor.codex.jsonl"
    data = sample.read_bytes()
    joined = tmp_path / "joined.codex.jsonl"
    joined.write_bytes(data + data.replace(b"019bbbd8-350a-76ce-809a-d863a39df359",
                                           b"0000aaaa-another-session"))
    alone = stats(sample, top=0).tokens
    assert view_file(sample).header.tokens == alone
    both = stats(joined, top=0)
    assert both.tokens == 2 * alone
    assert view_file(joined).header.tokens == both.tokens
