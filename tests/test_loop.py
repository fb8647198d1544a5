"""`ctxpack.Context`: an agent loop's messages, against the file API on the same inputs,
and the invariants of append, compress, rewind and restore on generated conversations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import Context
from ctxpack.errors import CannotFit, InputError, UsageError
from ctxpack.loader import load_values
from ctxpack.tokens import REPLY_PRIMING

from .conftest import CORPUS, SAMPLES
from .helpers import assert_tool_pairs, person_after_results
from .strategies import anthropic_chat, openai_chat

WORDS = st.sampled_from(["ok", "error:", "src/app.py", "FAILED", "https://x.io/a", "42",
                         "Traceback", "the", "value", "def f():", "    return 1", "é"])
TEXT = st.lists(WORDS, min_size=1, max_size=30).map(" ".join)
OUTPUT = st.lists(TEXT, min_size=1, max_size=40).map("\n".join)


@st.composite
def runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Chat Completions run big enough to compress: a task, then steps of parallel
    calls with long outputs, some chat and new requests between them."""
    out: list[dict[str, Any]] = [{"role": "system", "content": draw(TEXT)},
                                 {"role": "user", "content": draw(TEXT)}]
    n = 0
    for _ in range(draw(st.integers(1, 16))):
        kind = draw(st.sampled_from(["step", "step", "step", "say", "ask"]))
        if kind == "say":
            out.append({"role": "assistant", "content": draw(TEXT)})
        elif kind == "ask":
            out.append({"role": "user", "content": draw(TEXT)})
        else:
            ids = [f"call_{n + k}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {
                    "name": draw(st.sampled_from(["bash", "read_file"])),
                    "arguments": json.dumps({"command": draw(TEXT)})}} for i in ids]})
            out += [{"role": "tool", "tool_call_id": i, "content": draw(OUTPUT)} for i in ids]
    return out


def file_count(messages: list[dict[str, Any]], model: str | None = "gpt-4o") -> int:
    """The file API's count of the messages: what compress reads before it acts."""
    _, report = ctxpack.compress(messages, model=model, budget=10**7)
    return report.tokens_before


def sample_messages() -> list[dict[str, Any]]:
    """A real-shaped tool-calling run of the samples, as Chat Completions messages."""
    t = ctxpack.load(SAMPLES / "coding-agent.claude-code.jsonl")
    return ctxpack.request_bodies(t, "openai")[0]["messages"]


@pytest.mark.usefixtures("exact_tokens")
def test_counts_kept_as_messages_come_are_the_file_apis() -> None:
    messages = sample_messages()
    ctx = Context("gpt-4o", 100_000)
    counts = []
    for m in messages:
        ctx.append(m)
        counts.append(ctx.tokens)
    assert counts == sorted(counts) and counts[0] > REPLY_PRIMING
    assert ctx.tokens == file_count(messages)
    assert ctx.messages == messages and not ctx.needs_compress


@pytest.mark.usefixtures("exact_tokens")
@pytest.mark.parametrize("budget_share", [0.3, 0.6])
def test_compress_keeps_what_the_file_api_keeps(budget_share: float) -> None:
    messages = sample_messages()
    budget = int(file_count(messages) * budget_share)
    ctx = Context("gpt-4o", budget)
    ctx.extend(messages)
    assert ctx.needs_compress
    event = ctx.compress()
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=budget)
    assert event is not None and ctx.history == [event]
    assert ctx.trigger == report.trigger == budget  # the file API's trigger, exact counts
    assert ctx.messages == out  # the same messages kept, the same summary
    assert ctx.tokens == report.tokens_after == event.tokens_after
    assert file_count(ctx.messages) == ctx.tokens  # the count carried over is the fresh one
    assert event.tokens_before == report.tokens_before and event.tokens_after <= budget
    assert event.messages_after == len(out) < event.messages_before == len(messages)
    assert "summarize" in event.done and event.report.changed
    assert not ctx.needs_compress
    assert ctx.restore() == messages


@pytest.mark.corpus
@pytest.mark.usefixtures("exact_tokens")
def test_a_corpus_session_compressed_in_a_loop_matches_the_file_api() -> None:
    path = CORPUS / "codex" / "raze__codex-session.jsonl"
    if not path.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    messages = ctxpack.request_bodies(ctxpack.load(path), "openai")[0]["messages"]
    ctx = Context("gpt-4o", 20_000)
    ctx.extend(messages)
    assert ctx.tokens == file_count(messages)
    ctx.compress()
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=20_000)
    assert ctx.messages == out and ctx.tokens == report.tokens_after <= 20_000


@pytest.mark.usefixtures("exact_tokens")
def test_the_prefix_stays_the_same_between_compressions() -> None:
    messages = sample_messages()
    budget = int(file_count(messages) * 0.5)
    ctx = Context("gpt-4o", budget)
    sent: list[bytes] = []
    for m in messages:
        ctx.append(m)
        if ctx.needs_compress:
            ctx.compress()
        sent.append(b"".join(orjson.dumps(x) for x in ctx.messages))
    compressions = len(ctx.history)
    assert compressions >= 1
    grown = sum(1 for a, b in zip(sent, sent[1:], strict=False) if b.startswith(a))
    assert grown == len(sent) - 1 - compressions  # only a compress changes what was sent
    # each compress goes under the trigger (down to its target where the newest steps
    # kept leave room for it: this run is small, its budget 2,000 tokens)
    assert all(e.tokens_after < ctx.trigger for e in ctx.history)
    assert ctx.history[0].tokens_after <= ctx.history[0].report.target
    assert ctx.restore() == messages


def test_rewind_takes_the_newest_steps_out_and_restore_brings_them_back() -> None:
    messages = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix the test."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "FAILED test_x"},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "edit", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "edited"},
        {"role": "assistant", "content": "Done."},
    ]
    ctx = Context("gpt-4o")
    ctx.extend(messages)
    full = ctx.tokens
    event = ctx.rewind(2)  # the reply and the edit step
    assert ctx.messages == messages[:5]
    assert ctx.tokens == file_count(messages[:5]) < full
    assert (event.kind, event.messages_before, event.messages_after) == ("rewind", 8, 5)
    ctx.append({"role": "assistant", "content": "Trying another way."})
    assert ctx.restore() == [*messages, {"role": "assistant", "content": "Trying another way."}]
    ctx.rewind(rounds=1)
    assert ctx.messages == messages[:1]
    with pytest.raises(UsageError, match="has 0 step"):
        ctx.rewind(3)
    again = Context("gpt-4o")
    again.extend(messages)
    again.rewind(to=1)  # the first step kept
    assert again.messages == messages[:5]
    again.extend([{"role": "user", "content": "Now the docs."},
                  {"role": "assistant", "content": "Docs done."}])
    again.rewind(to_round=1)  # the first round kept: from the second request on, out
    assert again.messages == messages[:5]
    with pytest.raises(UsageError, match="nothing comes after round 1"):
        again.rewind(to_round=1)


def test_the_archive_folder_holds_what_left_the_context(tmp_path: Path) -> None:
    messages = sample_messages()
    ctx = Context("gpt-4o", 4_000, archive_dir=str(tmp_path / "originals"))
    ctx.extend(messages)
    ctx.compress()
    ctx.append({"role": "user", "content": "And now?"})
    stored = [p for p in (tmp_path / "originals").rglob("*") if p.is_file()]
    assert len(stored) == 1
    assert ctx.restore() == [*messages, {"role": "user", "content": "And now?"}]


def test_bad_messages_are_refused_by_number_and_nothing_is_kept() -> None:
    ctx = Context("gpt-4o")
    ctx.append({"role": "user", "content": "hi"})
    with pytest.raises(InputError, match=r"<messages>:2: .*found str"):
        ctx.append("hello")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"<messages>:2: not JSON"):
        ctx.append({"role": "user", "content": object()})
    assert ctx.messages == [{"role": "user", "content": "hi"}] == ctx.restore()
    with pytest.raises(UsageError, match="budget"):
        Context("gpt-4o", budget=-5)
    empty = Context("gpt-4o", 20_000)
    assert (empty.trigger, empty.needs_compress, empty.compress()) == (20_000, False, None)
    assert empty.restore() == [] and empty.history == []


def unanswered(messages: list[dict[str, Any]]) -> set[str | None]:
    """The calls still waiting for their results (the loop may be mid-step); every
    result must answer an earlier call."""
    seen: set[str | None] = set()
    for m in load_values(messages).messages:
        for r in m.tool_results:
            assert r.call_id in seen, f"message {m.line}: result of unknown call {r.call_id}"
            seen.discard(r.call_id)
        seen.update(c.id for c in m.tool_calls)
    return seen


def _checked(ctx: Context, appended: list[dict[str, Any]], budget: int,
             waiting: set[str | None]) -> None:
    """The invariants after any compress or rewind: the count is the file API's, no
    call is parted from its result (those waiting before may wait still), the budget
    holds, and restore gives back all that was appended."""
    kept = copy.deepcopy(ctx.messages)
    assert ctx.tokens == file_count(kept)
    assert unanswered(kept) <= waiting
    if ctx.history and ctx.history[-1].kind == "compress":
        assert ctx.tokens <= budget
    assert ctx.restore() == appended


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), share=st.floats(0.15, 1.0), back=st.integers(0, 3), data=st.data())
def test_append_compress_rewind_restore_invariants(run: list[dict[str, Any]], share: float,
                                                   back: int, data: st.DataObject) -> None:
    budget = max(200, int(file_count(run) * share))
    ctx = Context("gpt-4o", budget)
    appended: list[dict[str, Any]] = []
    for m in run:  # the loop: append, and compress when the trigger says so
        ctx.append(m)
        appended.append(m)
        if ctx.needs_compress:
            before = ctx.messages
            try:
                ctx.compress()
            except CannotFit:
                assert ctx.messages == before  # nothing changed
                return
            _checked(ctx, appended, budget, unanswered(before))
    steps = sum(1 for m in load_values(ctx.messages).messages if m.role == "assistant")
    if back and steps > back:
        before = ctx.messages
        try:
            ctx.rewind(back)
        except UsageError:
            assert ctx.messages == before  # nothing would be left: nothing changed
        _checked(ctx, appended, budget, set())
        assert_tool_pairs(load_values(ctx.messages).messages)
    extra = {"role": "user", "content": data.draw(TEXT)}
    ctx.append(extra)
    appended.append(extra)
    assert ctx.restore() == appended


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=openai_chat() | anthropic_chat())
def test_counts_match_the_file_api_in_either_api(run: list[dict[str, Any]]) -> None:
    ctx = Context()
    ctx.extend(run)
    assert ctx.tokens == file_count(run, model=None)
    assert ctx.restore() == run and ctx.messages == run


def replies(messages: list[dict[str, Any]]) -> list[int]:
    """The indexes of the assistant messages: the replies of the loop's calls."""
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant"]


@pytest.mark.usefixtures("exact_tokens")
def test_usage_anchors_the_count_as_the_file_api_does() -> None:
    messages = sample_messages()
    last = replies(messages)[-1]
    given, after = messages[:last + 1], messages[last + 1:]
    counted = file_count(messages)
    budget = counted + 1_000  # the messages alone fit it; with the tools sent, not
    ctx = Context("gpt-4o", budget)
    ctx.extend(given[:-1])
    prompt = ctx.tokens  # what the loop sends for the last call
    usage = {"prompt_tokens": prompt + 3_000, "completion_tokens": 80}
    ctx.append(given[-1], usage=usage)
    ctx.extend(after)
    # the size billed, plus ctxpack's count of what came after the call's prompt
    assert ctx.billed == usage["prompt_tokens"] + ctx.tokens - prompt
    assert ctx.tokens == counted and ctx.needs_compress
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=budget, usage=usage)
    assert report.billed["kind"] == "anchored"
    assert ctx.billed == report.billed["tokens_before"]
    assert ctx.trigger == budget - 3_000  # the count the billed budget allows
    event = ctx.compress()
    assert event is not None and ctx.messages == out  # the same messages kept
    # what the provider adds beside the messages is carried over the compress
    assert ctx.billed == report.billed["tokens_after"] == ctx.tokens + 3_000 <= budget
    assert not ctx.needs_compress and ctx.trigger == budget - 3_000
    assert ctx.restore() == messages
    plain = Context("gpt-4o", budget)  # without the usage, the count fits the budget
    plain.extend(messages)
    assert not plain.needs_compress and plain.billed == plain.tokens


@pytest.mark.usefixtures("exact_tokens")
def test_usage_below_the_count_bills_what_is_kept_as_the_file_api_does() -> None:
    # the provider billed less than the count (an agent that sends less than it holds):
    # the loop's own ratio bills the context, and what compress keeps, as the file API's
    # report says, not as a loop with no usage told
    messages = sample_messages()
    last = replies(messages)[-1]
    ctx = Context("gpt-4o", 1_500)
    ctx.extend(messages[:last])
    usage = ctx.tokens * 9 // 10
    ctx.append(messages[last], usage=usage)
    ctx.extend(messages[last + 1:])
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=1_500, usage=usage)
    assert report.billed["kind"] == "anchored" and report.billed["slope"] < 1
    assert report.billed["not_in_file"] == 0 and ctx.billed == report.billed["tokens_before"]
    assert ctx.compress() is not None and ctx.messages == out
    assert ctx.billed == report.billed["tokens_after"] < ctx.tokens


@pytest.mark.usefixtures("exact_tokens")
def test_a_usage_of_the_last_call_is_what_it_was_given() -> None:
    ctx = Context("gpt-4o", 20_000)
    ctx.append({"role": "user", "content": "hi"})
    with pytest.raises(UsageError, match="there is none"):
        ctx.record_usage(500)  # no reply yet
    ctx.append({"role": "assistant", "content": "hello"})
    for bad in (0, -3, True, None, "500"):
        with pytest.raises(UsageError, match="expected the prompt size"):
            ctx.record_usage(bad)
    with pytest.raises(UsageError, match="prompt_tokens 'many' .a token count is a whole"):
        ctx.record_usage({"prompt_tokens": "many"})
    assert ctx.billed == ctx.tokens  # nothing recorded: the count
    ctx.record_usage({"input_tokens": 100, "cache_read_input_tokens": 400,
                      "cache_creation_input_tokens": 30})  # Anthropic's fields, summed
    prompt = file_count([{"role": "user", "content": "hi"}])
    assert ctx.billed == 530 + ctx.tokens - prompt
    ctx.append({"role": "user", "content": "more"})
    assert ctx.billed == 530 + ctx.tokens - prompt
    # a rewind that takes out the call's reply keeps what the provider adds beside
    prompt = ctx.tokens
    ctx.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        usage=prompt + 1_000)
    ctx.append({"role": "tool", "tool_call_id": "c1", "content": "a.py"})
    assert ctx.billed == ctx.tokens + 1_000
    ctx.rewind(1)
    assert ctx.billed == ctx.tokens + 1_000


# Usage no call can have recorded: no prompt size at all, or one no model can hold
BAD_USAGE = st.one_of(
    st.text(max_size=8), st.floats(allow_nan=True), st.integers(max_value=0),
    st.integers(min_value=10**9), st.booleans(), st.just({}),
    st.fixed_dictionaries({"prompt_tokens": st.one_of(st.text(max_size=5), st.floats())}),
    st.fixed_dictionaries({"input_tokens": st.integers(min_value=10**9)}))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), usage=BAD_USAGE, data=st.data())
def test_a_usage_refused_leaves_the_context_as_it_was(run: list[dict[str, Any]], usage: Any,
                                                      data: st.DataObject) -> None:
    # the message given with it is not taken either: the loop can append it again (with
    # its usage mended) and holds it once
    at = data.draw(st.integers(1, len(run) - 1))
    ctx = Context("gpt-4o", 10**6)
    ctx.extend(run[:at])
    before = (ctx.messages, ctx.restore(), ctx.tokens, ctx.billed, ctx.trigger)
    with pytest.raises(UsageError):
        ctx.append(run[at], usage=usage)
    assert (ctx.messages, ctx.restore(), ctx.tokens, ctx.billed, ctx.trigger) == before
    ctx.append(run[at])
    assert ctx.messages == ctx.restore() == run[:at + 1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), extra=st.integers(0, 5_000), share=st.floats(0.3, 1.2), data=st.data())
def test_usage_anchors_as_the_file_api_on_generated_runs(
        run: list[dict[str, Any]], extra: int, share: float, data: st.DataObject) -> None:
    answered = replies(run)
    if not answered:
        return
    reply = data.draw(st.sampled_from(answered))
    # (the file API's usage is of the last call: the run ends before the next reply)
    run = run[:next((i for i in answered if i > reply), len(run))]
    budget = max(300, int((file_count(run) + extra) * share))
    ctx = Context("gpt-4o", budget)
    ctx.extend(run[:reply])
    usage = ctx.tokens + extra
    ctx.append(run[reply], usage=usage)
    ctx.extend(run[reply + 1:])
    try:
        out, report = ctxpack.compress(run, model="gpt-4o", budget=budget, usage=usage)
    except CannotFit:
        with pytest.raises(CannotFit):
            ctx.compress()
        return
    assert ctx.billed == report.billed["tokens_before"]
    assert ctx.needs_compress == (report.billed["tokens_before"] > report.trigger)
    ctx.compress()
    assert ctx.messages == out and ctx.billed == report.billed["tokens_after"]
    assert ctx.restore() == run


@pytest.mark.usefixtures("exact_tokens")
def test_a_message_of_joined_turns_is_held_as_a_file_of_it_is_read() -> None:
    """The person's words sent in a tool result's message (the Messages API's alternation
    joins them) are a turn of their own in a Context as in a file: each opens a round,
    counted as the file counts it; rewind takes its whole message out, compress keeps
    what the file API keeps."""
    model = "claude-sonnet-4-5"
    messages = person_after_results(True)
    ctx = Context(model, 4_000)
    ctx.extend(messages)
    assert ctx.tokens == file_count(messages, model) and len(ctx) == len(messages)
    with pytest.raises(UsageError, match="it has 12 round"):
        ctx.rewind(rounds=13)
    # the newest round opens at the person's words after the last result: the message
    # that holds them goes, and the call that result answers (no cut parts either)
    event = ctx.rewind(rounds=1)
    kept = messages[:event.messages_after]
    assert [m["role"] for m in messages[len(kept):]] == ["assistant", "user", "assistant"]
    assert messages[len(kept)]["content"][-1]["type"] == "tool_use"
    assert ctx.messages == kept and ctx.tokens == file_count(kept, model)
    ctx.extend(messages[len(kept):])
    event = ctx.compress()
    out, report = ctxpack.compress(messages, model=model, budget=4_000)
    assert event is not None and ctx.messages == out
    assert ctx.tokens == report.tokens_after == file_count(out, model)
    assert ctx.restore() == [*messages, *messages[len(kept):]]


@pytest.mark.usefixtures("exact_tokens")
@pytest.mark.parametrize(("settings", "warning"), [
    ({"budget": 10_000}, "the budget asked for (10,000 tokens) is more than the 3,000-token "
                         "window of acme-small: the window is used instead"),
    ({"target": 2_400}, "the target asked for (2,400 billed tokens) is not below the trigger "
                        "(2,400): the next turns may trigger compress again"),
])
def test_what_the_settings_warn_of_is_said_by_the_first_compress_only(
        settings: dict[str, int], warning: str) -> None:
    from ctxpack.models import TABLE, ModelInfo

    table = TABLE.extend([ModelInfo("acme-small", "o200k_base", 3_000)])
    ctx = Context("acme-small", table=table, **settings)
    for m in sample_messages():
        ctx.append(m)
        if ctx.needs_compress:
            ctx.compress()
    assert len(ctx.history) >= 2
    said = [[w for w in e.warnings if w == warning] for e in ctx.history]
    assert said[0] == [warning]
    assert not any(said[1:])
    # each compress's own report says it, as `ctxpack.compress` would
    assert all(warning in e.report.warnings for e in ctx.history)
