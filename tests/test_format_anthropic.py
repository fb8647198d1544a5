"""The Anthropic reader: Messages API lines and Claude Code stream-json, real and hand-written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.errors import InputError
from ctxpack.formats.anthropic import AnthropicFormat, ResponseMerger, api_message
from ctxpack.loader import load, write
from ctxpack.transcript import Image, Text, Thinking, ToolCall, ToolResult, Transcript

from .conftest import corpus_params
from .helpers import assert_tool_pairs, ctxpack, records_of

SESSION = "5e55-10n"
MODEL = "claude-opus-4-5-20251101"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"  # a PNG header; never decoded


def load_lines(*records: dict[str, Any], format: str | None = None) -> Transcript:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    return load(io.BytesIO(data), format)



def init(model: str = MODEL) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": SESSION, "model": model,
            "tools": ["Bash"]}


def usage(inp: int = 3, create: int = 100, read: int = 1000, out: int = 1) -> dict[str, int]:
    return {"input_tokens": inp, "cache_creation_input_tokens": create,
            "cache_read_input_tokens": read, "output_tokens": out}


def piece(msg_id: str, block: dict[str, Any], use: dict[str, int] | None = None,
          **extra: Any) -> dict[str, Any]:
    message = {"model": MODEL, "id": msg_id, "type": "message", "role": "assistant",
               "content": [block], "usage": use or usage()}
    return {"type": "assistant", "message": message, "parent_tool_use_id": None,
            "session_id": SESSION, **extra}


def said(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def calls(call_id: str, command: str = "ls") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def answer(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    block = {"tool_use_id": call_id, "type": "tool_result", "content": content}
    return {"type": "user", "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": None, "session_id": SESSION,
            "tool_use_result": {"stdout": "a different copy, never counted"}, **extra}


def typed(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text},
            "parent_tool_use_id": None, "session_id": SESSION, **extra}




# --- the real stream-json files ------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("anthropic-messages"))
def test_corpus_detected_and_written_back_exactly(path: Path, tmp_path: Path) -> None:
    t = load(path)
    assert t.format == "anthropic"
    write(t, tmp_path / path.name)
    assert (tmp_path / path.name).read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("anthropic-messages"))
def test_corpus_messages_are_merged_responses(path: Path) -> None:
    t = load(path)
    records = records_of(path)
    ids = {r["message"]["id"] for r in records if r.get("type") == "assistant"}
    emitted = t.messages + t.outside + t.sidechain
    replies = [m for m in emitted if m.role == "assistant"]
    # one message per API response however many lines it took; users one per line
    assert sorted(m.id for m in replies) == sorted(ids)
    assert sum(m.role == "user" for m in emitted) == sum(r["type"] == "user" for r in records)
    assert len({m.id for m in t.messages if m.role == "assistant"}) == \
        sum(m.role == "assistant" for m in t.messages)
    assert t.messages and not t.sidechain
    assert_tool_pairs(t.messages)
    assert all(m.raw.get("type") in ("user", "assistant") for m in emitted)
    assert t.model == next(r["model"] for r in records if r.get("subtype") == "init")
    assert t.usage["calls"] == sum(1 for m in replies if m.model != "<synthetic>")
    assert t.usage["cost_usd"] == records[-1]["total_cost_usd"]
    assert 0 < t.usage["last_input_tokens"] <= t.usage["input_tokens"]


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("anthropic-messages",
                                               pattern="linkedin-communicator*"))
def test_corpus_compaction_leaves_earlier_messages_outside(path: Path) -> None:
    t = load(path)
    boundary = next(n for n, r in enumerate(records_of(path), 1)
                    if r.get("subtype") == "compact_boundary")
    first = t.messages[0]
    assert first.line == boundary + 1 and first.role == "user" and not first.human
    assert first.text.startswith("This session is being continued")
    assert t.outside and all(m.line < boundary for m in t.outside)
    assert all(m.line > boundary for m in t.messages)
    # deduplicated per-response input equals the CLI's own total for this run
    assert t.usage["input_tokens"] == t.usage["result_input_tokens"]


# --- hand-written stream-json ----------------------------------------------------------------

def test_pieces_merge_and_interleaved_results_follow_the_response() -> None:
    t = load_lines(init(), piece("msg_A", said("Looking.")), piece("msg_A", calls("t1")),
                   answer("t1", "one"), piece("msg_A", calls("t2", "pwd")), answer("t2", "two"),
                   piece("msg_B", said("Done.")))
    assert [m.role for m in t.messages] == ["assistant", "user", "user", "assistant"]
    merged = t.messages[0]
    assert merged.id == "msg_A" and merged.model == MODEL and merged.lines == (2, 3, 5)
    assert merged.parts == (Text("Looking."), ToolCall("t1", "Bash", '{"command":"ls"}'),
                            ToolCall("t2", "Bash", '{"command":"pwd"}'))
    assert [m.tool_results[0].text for m in t.messages[1:3]] == ["one", "two"]
    assert merged.raw["message"]["content"][0] == said("Looking.")
    assert_tool_pairs(t.messages)


def test_reader_streams_a_response_out_when_it_closes() -> None:
    reader = AnthropicFormat().reader()
    assert reader.feed(1, init()) == []
    assert reader.feed(2, piece("msg_A", calls("t1"))) == []
    assert reader.feed(3, answer("t1")) == []  # held: another piece may follow
    out = reader.feed(4, piece("msg_B", said("next")))
    assert [(m.role, m.line) for m in out] == [("assistant", 2), ("user", 3)]
    rest, layout = reader.finish()
    assert [m.id for m in rest] == ["msg_B"] and layout.context == [0, 1, 2]


def test_usage_counts_copies_once_and_takes_the_largest_output() -> None:
    t = load_lines(init(), piece("msg_A", said("a"), usage(out=1)),
                   piece("msg_A", calls("t1"), usage(out=1)),
                   piece("msg_A", calls("t2"), usage(out=57)), answer("t1"), answer("t2"),
                   piece("msg_B", said("b"), usage(inp=5, create=10, read=1103, out=9)),
                   {"type": "result", "subtype": "success", "session_id": SESSION,
                    "total_cost_usd": 0.25, "usage": usage(inp=8, create=110, read=2103, out=70)})
    u = t.usage
    assert u["calls"] == 2
    assert u["input_tokens"] == 1103 + 1118
    assert u["output_tokens"] == 57 + 9
    assert (u["cache_read_tokens"], u["cache_creation_tokens"]) == (2103, 110)
    assert u["last_input_tokens"] == 1118
    assert (u["result_input_tokens"], u["result_output_tokens"], u["cost_usd"]) == (2221, 70, 0.25)
    assert u["source"]


def test_a_stream_reply_taking_an_earlier_calls_id_is_a_new_call() -> None:
    # the tally kept one call per id: a second response under the first one's id (after a
    # tool result, with another prompt) was joined to it as another piece, its usage
    # taken as the larger of the two
    t = load_lines(init(), piece("msg_A", calls("t1"), usage(read=1000, out=20)),
                   answer("t1"),
                   piece("msg_A", said("done"), usage(read=1130, out=5)))
    assert [m.role for m in t.messages] == ["assistant", "user", "assistant"]
    u = t.usage
    assert (u["calls"], u["input_tokens"], u["output_tokens"]) == (2, 1103 + 1233, 25)
    assert u["last_input_tokens"] == 1233
    assert t.problems == ((4, "message.id 'msg_A' is the id of an earlier call (line 2): "
                              "read as a new call"),)


def test_compact_boundary_starts_the_context_again() -> None:
    summary = "This session is being continued from a previous conversation. It ran out of context."
    t = load_lines(init(), typed("fix the bug"), piece("msg_A", said("ok")),
                   {"type": "system", "subtype": "status", "status": "compacting",
                    "session_id": SESSION},
                   {"type": "system", "subtype": "compact_boundary", "session_id": SESSION,
                    "compact_metadata": {"trigger": "auto", "pre_tokens": 1234}},
                   typed(summary, isSynthetic=True), piece("msg_B", said("continuing")))
    assert [m.line for m in t.messages] == [6, 7]
    assert [m.line for m in t.outside] == [2, 3]
    assert not t.messages[0].human and t.outside[0].human
    assert t.usage["calls"] == 2 and t.usage["last_input_tokens"] == 1103


def test_model_from_init_else_from_the_replies() -> None:
    assert load_lines(init("claude-x"), piece("msg_A", said("hi"))).model == "claude-x"
    assert load_lines(typed("hi"), piece("msg_A", said("hi"))).model == MODEL


def test_sub_agent_traffic_is_a_sidechain() -> None:
    t = load_lines(init(), piece("msg_A", {"type": "tool_use", "id": "task1", "name": "Task",
                                           "input": {"prompt": "look"}}),
                   typed("look", parent_tool_use_id="task1"),
                   piece("msg_S", said("found it"), parent_tool_use_id="task1"),
                   answer("task1", [said("found it")]))
    assert [m.line for m in t.sidechain] == [3, 4]
    assert not any(m.human for m in t.sidechain)
    assert [m.line for m in t.messages] == [2, 5]
    assert t.usage["calls"] == 1  # sub-agent calls are not this conversation's


def test_result_and_system_lines_are_not_messages() -> None:
    t = load_lines(init(), typed("hi"), {"type": "system", "subtype": "hook_response"},
                   {"type": "stream_event", "event": {"type": "message_start"}},
                   {"type": "result", "subtype": "success", "session_id": SESSION})
    assert [m.line for m in t.messages] == [2] and not t.outside


# --- plain Messages API lines ----------------------------------------------------------------

def test_blocks_become_parts() -> None:
    t = load_lines(
        {"role": "user", "content": [said("what is in this picture?"),
                                     {"type": "image", "source": {"type": "base64",
                                      "media_type": "image/png", "data": PNG}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look closer", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "ZW5j"},
            {"type": "tool_use", "id": "t1", "name": "zoom", "input": {"x": 1, "label": "é"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [
                said("zoomed"),
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                             "data": "/9j/"}},
                {"type": "tool_reference", "tool_name": "WebFetch"},
                {"type": "search_result", "title": "t", "content": []}]}]})
    assert t.format == "anthropic"
    user, reply, result = t.messages
    assert user.parts == (Text("what is in this picture?"), Image("image/png", PNG))
    assert reply.parts == (Thinking("look closer"), Thinking(""),
                           ToolCall("t1", "zoom", '{"x":1,"label":"é"}'),
                           Image(url="https://example.com/a.png"))
    (part,) = result.parts
    assert isinstance(part, ToolResult) and part.call_id == "t1" and part.is_error
    assert part.parts[:3] == (Text("zoomed"), Image("image/jpeg", "/9j/"), Text("WebFetch"))
    assert json.loads(part.parts[3].text)["type"] == "search_result"
    assert user.human and not reply.human and not result.human


def test_string_and_empty_results() -> None:
    t = load_lines({"role": "assistant", "content": [calls("a"), calls("b")]},
                   {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": "a", "content": "fine"},
                       {"type": "tool_result", "tool_use_id": "b"}]})
    first, second = t.messages[1].tool_results
    assert first.parts == (Text("fine"),) and not first.is_error
    assert second.parts == () and second.call_id == "b"


def test_human_flags() -> None:
    def human(d: dict[str, Any]) -> bool:
        return api_message(d, 1, d).human

    assert human({"role": "user", "content": "hello"})
    assert human({"role": "user", "content": [said("hello")]})
    assert not human({"role": "assistant", "content": "hello"})
    assert not human({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]})
    assert not human({"role": "user", "content": "This session is being continued from a "
                                                 "previous conversation that ran out of context."})


def test_plain_lines_count_their_usage_too() -> None:
    t = load_lines({"role": "user", "content": "hi"},
                   {"role": "assistant", "content": [said("a")], "usage": usage(out=5)},
                   {"role": "user", "content": "more"},
                   {"role": "assistant", "id": "msg_2", "model": "claude-x",
                    "content": [said("b")], "usage": usage(read=5000, out=6)},
                   format="anthropic")
    assert [m.human for m in t.messages] == [True, False, True, False]
    assert (t.usage["calls"], t.usage["output_tokens"]) == (2, 11)
    assert t.usage["last_input_tokens"] == 5103 and t.model == "claude-x"


@pytest.mark.parametrize(("record", "score"), [
    (init(), 2),
    (piece("msg_A", said("x")), 2),
    ({"type": "result", "subtype": "success", "session_id": SESSION}, 2),
    ({"role": "assistant", "content": [calls("t")]}, 2),
    ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}, 2),
    ({"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}, 2),
    ({"role": "user", "content": "hi"}, 1),
    ({"role": "assistant", "content": [said("hi")]}, 1),
    ({"role": "tool", "tool_call_id": "x", "content": "ok"}, 0),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}, 0),
    ({"type": "user", "sessionId": "s", "parentUuid": None, "message": {"role": "user"}}, 0),
    ({"type": "event_msg", "payload": {}}, 0),
])
def test_sniff(record: dict[str, Any], score: int) -> None:
    assert AnthropicFormat().sniff(record) == score


def test_plain_text_lines_tie_with_openai_and_tool_blocks_decide() -> None:
    plain = {"role": "user", "content": "hi"}
    assert load_lines(plain).format == "openai"
    assert load_lines(plain, {"role": "assistant", "content": [calls("t")]}).format == "anthropic"


def test_records_that_are_not_messages_fail_with_their_line() -> None:
    with pytest.raises(InputError) as err:
        load_lines(typed("hi"), {"foo": 1}, format="anthropic")
    assert err.value.line == 2 and "anthropic" in err.value.problem
    with pytest.raises(InputError):
        load_lines({"type": "user", "session_id": SESSION}, format="anthropic")
    data = b'{"role":"user","content":"hi"}\n{"foo":1}\n'
    t = load(io.BytesIO(data), "anthropic", skip_invalid=True)
    assert len(t.messages) == 1 and [b.line for b in t.skipped] == [2]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.tuples(st.just(n), st.permutations(range(n)), st.integers(0, n))))
def test_any_interleaving_gives_one_response_then_its_results(case: tuple) -> None:
    n, order, early = case
    # the first `early` results arrive between pieces, the rest after the last piece
    lines: list[dict[str, Any]] = [typed("go")]
    pending = list(order)
    for i in range(n):
        lines.append(piece("msg_P", calls(f"t{i}")))
        while pending and pending[0] <= i and len(lines) - 1 - (i + 1) < early:
            lines.append(answer(f"t{pending.pop(0)}"))
    lines += [answer(f"t{k}") for k in pending]
    lines.append(piece("msg_Q", said("done")))
    t = load_lines(*lines)
    merged = t.messages[1]
    assert [c.id for c in merged.tool_calls] == [f"t{i}" for i in range(n)]
    arrived = [m.tool_results[0].call_id for m in t.messages[2:-1]]
    assert arrived == [f"t{k}" for k in order]
    assert t.messages[-1].id == "msg_Q" and len(t.messages) == n + 3
    assert_tool_pairs(t.messages)


def test_merger_keeps_separate_responses_apart() -> None:
    merger = ResponseMerger()
    one = api_message({"role": "assistant", "id": "m1", "content": "a"}, 1, None)
    two = api_message({"role": "assistant", "id": "m2", "content": "b"}, 2, None)
    assert merger.add(one, "k1") == []
    (out,) = merger.add(two, "k2")
    assert out.message is one and out.keys == ["k1"]
    (last,) = merger.flush()
    assert last.message is two and merger.flush() == []


def _with_block(block: dict[str, Any] | None) -> dict[str, list[Any]]:
    """The same exchange as each Anthropic-shaped reader reads it (its records), the reply
    holding `block` before its text where one is given."""
    reply = [{"type": "thinking", "thinking": "say hello", "signature": "c2ln"},
             *([block] if block else []), {"type": "text", "text": "hello"}]
    ask = {"role": "user", "content": "hi there"}
    answer = {"role": "assistant", "content": reply}
    made = {"id": "msg_1", "model": MODEL, **answer}
    at = {"processed_at": "2026-01-01T00:00:00Z"}
    return {
        "anthropic": [ask, answer],
        "anthropic-array": [[ask, answer]],
        "anthropic-requests": [{"model": MODEL, "max_tokens": 64, "messages": [ask, answer]}],
        "claude-code": [
            {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": SESSION,
             "message": ask},
            {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": SESSION,
             "message": made}],
        "stream-json": [init(), {"type": "user", "message": ask, "session_id": SESSION},
                        {"type": "assistant", "message": made, "session_id": SESSION}],
        "anthropic-events": [
            {"id": "sevt_1", "type": "user.message", "content": [
                {"type": "text", "text": "hi there"}], **at},
            {"id": "sevt_2", "type": "span.model_request_start", **at},
            {"id": "sevt_3", "type": "agent.message", "content": reply[1:], **at},
            {"id": "sevt_4", "type": "span.model_request_end", "model_request_start_id":
             "sevt_2", "model_usage": {"input_tokens": 10, "output_tokens": 2}, **at}]}


_UNKNOWN_AT = {"anthropic": (2, "content[1]"), "anthropic-array": (1, "content[1]"),
               "anthropic-requests": (1, "messages[1].content[1]"),
               "claude-code": (2, "message.content[1]"),
               "stream-json": (3, "message.content[1]"), "anthropic-events": (3, "content[0]")}


@pytest.mark.parametrize("reader", sorted(_UNKNOWN_AT))
def test_every_anthropic_reader_names_a_block_of_an_unknown_type(reader: str,
                                                                 tmp_path: Path) -> None:
    # a block of a type the Messages API does not take is left out, as Cline's reader
    # leaves it: validate names it at its line and field, convert says it read past a
    # record, and the counts and the conversion are those of the reply without it
    paths = []
    for name, block in (("plain", None), ("odd", {"type": "banana", "x": 1})):
        records = _with_block(block)[reader]
        path = tmp_path / f"{name}.{'json' if reader == 'anthropic-array' else 'jsonl'}"
        path.write_text(json.dumps(records[0]) if reader == "anthropic-array" else
                        "".join(json.dumps(r) + "\n" for r in records))
        paths.append(path)
    plain, odd = paths
    line, field = _UNKNOWN_AT[reader]
    run = ctxpack("validate", str(odd))
    assert run.code == 1 and run.out.splitlines() == [
        f"{odd}:{line}: {field} is a block of type 'banana', which the Messages API does "
        "not take: left out (not counted, not converted)"], (run.out, run.err)
    assert ctxpack("validate", str(plain)).code == 0
    counted = [json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0] for p in paths]
    assert {c["format"] for c in counted} == {"anthropic" if reader == "stream-json"
                                              else reader}
    assert counted[0]["tokens"] == counted[1]["tokens"]
    converted = [ctxpack("convert", str(p), "--to", "openai", "-m", MODEL) for p in paths]
    assert converted[1].out == converted[0].out
    assert f"{odd}: 1 record read past or guessed at" in converted[1].err
