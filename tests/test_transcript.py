"""Rounds and steps from the canonical model."""

from __future__ import annotations

from ctxpack.transcript import Message, Text, ToolCall, ToolResult, group_rounds


def user(text, human=True):
    return Message("user", (Text(text),), human=human)


def call(cid, name="sh"):
    return Message("assistant", (ToolCall(cid, name, "{}"),))


def result(cid, role="tool"):
    return Message(role, (ToolResult(cid, (Text("out"),)),))


def test_rounds_start_at_human_messages_and_preamble_is_round_0():
    msgs = [Message("system", (Text("rules"),)), user("task"), call("a"), result("a"),
            call("b"), result("b"), Message("assistant", (Text("done"),)), user("more"),
            call("c"), result("c", role="user")]
    rounds = group_rounds(msgs)
    assert [(r.number, r.start, r.end) for r in rounds] == [(0, 0, 1), (1, 1, 7), (2, 7, 10)]
    assert [(s.action, s.results) for s in rounds[1].steps] == [(2, (3,)), (4, (5,)), (6, ())]
    # a user message that only carries tool results belongs to the step, not a new round
    assert [(s.action, s.results) for s in rounds[2].steps] == [(8, (9,))]


def test_no_preamble_starts_at_round_1_and_empty_has_none():
    assert [r.number for r in group_rounds([user("a"), user("b")])] == [1, 2]
    assert group_rounds([]) == []


def test_non_human_user_messages_do_not_open_rounds():
    msgs = [user("task"), user("<environment_context>", human=False), call("a"), result("a")]
    assert len(group_rounds(msgs)) == 1


def test_message_text_and_result_only():
    m = Message("assistant", (Text("hi"), ToolCall("1", "Read", '{"p":1}')))
    assert m.text == 'hi\nRead({"p":1})' and not m.result_only
    assert result("x", role="user").result_only
