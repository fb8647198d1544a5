"""Claude Code's `attachment` records are the context they send the model: each one that
sends something is a user message of that text, joined to the message it was written
after, so stats count it, and compress never keeps it without that message (or the
reverse) and restores the file byte for byte."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctxpack.calibration import UNLOGGED
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.formats.claude_attachments import attachment_parts
from ctxpack.loader import load
from ctxpack.transcript import Image, Text
from ctxpack.undo import restore

from .conftest import CORPUS
from .helpers import assert_tool_pairs, with_real_usage
from .test_format_claude_code import answer, calls, envelope, load_lines, piece, said, user

X402 = CORPUS / "claude-code" / "privacy-x402__claude-session.jsonl"


def attached(uuid: str, parent: str, **attachment: Any) -> dict[str, Any]:
    return envelope("attachment", uuid, parent, attachment=attachment)


def reminded(uuid: str, parent: str, n: int) -> dict[str, Any]:
    tasks = [{"id": str(k), "subject": f"Port module {k}", "status": "pending"}
             for k in range(n)]
    return attached(uuid, parent, type="task_reminder", content=tasks, itemCount=n)


def test_a_selection_is_sent_as_claude_code_words_it() -> None:
    [text] = attachment_texts({"type": "selected_lines_in_ide", "lineStart": 3, "lineEnd": 4,
                               "filename": "/src/app.py", "content": "x = 1\ny = 2"})
    assert text == ("<system-reminder>\nThe user selected the lines 3 to 4 from /src/app.py:\n"
                    "x = 1\ny = 2\n\nThis may or may not be related to the current task.\n"
                    "</system-reminder>")
    [long] = attachment_texts({"type": "selected_lines_in_ide", "lineStart": 1, "lineEnd": 1,
                               "filename": "f", "content": "a" * 5000})
    assert "a" * 2000 + "\n... (truncated)" in long and "a" * 2001 not in long


def test_a_mentioned_file_is_sent_as_a_read_call_and_its_numbered_lines() -> None:
    texts = attachment_texts({"type": "file", "filename": "/w/req.txt", "content": {
        "type": "text", "file": {"filePath": "/w/req.txt", "content": "pandas\nplotly",
                                 "startLine": 7}}})
    assert texts == [
        '<system-reminder>\nCalled the Read tool with the following input: '
        '{"file_path":"/w/req.txt"}\n</system-reminder>',
        "<system-reminder>\nResult of calling the Read tool:\n7\tpandas\n8\tplotly\n"
        "</system-reminder>"]


def test_reminders_list_what_they_remind_of() -> None:
    [text] = attachment_texts(reminded("t", "u", 2)["attachment"])
    assert "#0. [pending] Port module 0\n#1. [pending] Port module 1" in text
    [empty] = attachment_texts(reminded("t", "u", 0)["attachment"])
    assert "Here are the existing tasks" not in empty and "TaskCreate" in empty
    [notice] = attachment_texts({"type": "queued_command", "commandMode": "task-notification",
                                 "prompt": "<task-notification>done</task-notification>"})
    assert notice.endswith("\n\n<task-notification>done</task-notification>\n</system-reminder>")
    assert "NOT a message from the user" in notice


def attachment_texts(attachment: Any) -> list[str]:
    return [p.text for p in attachment_parts(attachment) if isinstance(p, Text)]


def test_a_mentioned_image_is_sent_as_the_image_not_its_encoded_bytes() -> None:
    data = "iVBORw0KGgo" + "A" * 4000
    parts = attachment_parts({"type": "file", "filename": "/w/plot.png", "content": {
        "type": "image", "file": {"base64": data, "type": "image/png", "originalSize": 3000}}})
    assert [type(p) for p in parts] == [Text, Image]
    assert parts[0].text.startswith("<system-reminder>\nCalled the Read tool")
    assert parts[1] == Image(media_type="image/png", data=data)


def test_types_that_only_show_in_the_interface_send_nothing() -> None:
    for attachment in ({"type": "command_permissions", "allowedTools": []},
                       {"type": "skill_listing", "content": ""},
                       {"type": "hook_success", "hookEvent": "PostToolUse", "hookName": "h",
                        "content": "ok"},
                       {"type": "a-type-from-a-later-version", "content": "x"},
                       {"type": 3}, "not an object", None):
        assert attachment_texts(attachment) == []
    [hook] = attachment_texts({"type": "hook_success", "hookEvent": "SessionStart",
                               "hookName": "SessionStart:startup", "content": "env loaded"})
    assert "SessionStart:startup hook success: env loaded" in hook


def test_attachments_are_user_messages_in_the_context_in_chain_order() -> None:
    t = load_lines(user("u1", None, "port the parser"),
                   attached("s1", "u1", type="selected_lines_in_ide", lineStart=1, lineEnd=1,
                            filename="p.py", content="def parse(): ..."),
                   attached("s2", "s1", type="command_permissions", allowedTools=[]),
                   piece("a1", "s2", "msg_1", calls("toolu_1")),
                   answer("r1", "a1", "toolu_1"),
                   reminded("t1", "r1", 1),
                   piece("a2", "t1", "msg_2", said("done")))
    assert [m.line for m in t.messages] == [1, 2, 4, 5, 6, 7]
    selection, reminder = t.messages[1], t.messages[4]
    assert selection.role == reminder.role == "user"
    assert selection.joined and reminder.joined and not selection.human
    assert "def parse(): ..." in selection.text and "Port module 0" in reminder.text
    assert t.messages[0].human and not t.messages[0].joined


def session(steps: int, reminders: set[int], output: int = 60) -> list[dict[str, Any]]:
    """A prompt with a selection, then `steps` tool steps, those in `reminders` followed by
    a task reminder (as Claude Code writes one after a tool result)."""
    records = [user("u0", None, "Port every module of the parser to Rust."),
               attached("s0", "u0", type="selected_lines_in_ide", lineStart=1, lineEnd=2,
                        filename="parser.py", content="import re\nimport sys")]
    parent = "s0"
    for k in range(steps):
        records += [piece(f"a{k}", parent, f"msg_{k}", calls(f"toolu_{k}")),
                    answer(f"r{k}", f"a{k}", f"toolu_{k}", f"src/mod_{k}.rs\n" * output)]
        parent = f"r{k}"
        if k in reminders:
            records.append(reminded(f"t{k}", parent, 1 + k % 3))
            parent = f"t{k}"
    records.append(piece("end", parent, "msg_end", said("All modules are ported.")))
    return records


def assert_kept_with_their_message(original: bytes, data: bytes) -> None:
    """Every attachment message left in the context follows the record it was written
    after in the original, never a summary or another step."""
    parent = {r["uuid"]: r["parentUuid"] for r in map(json.loads, original.splitlines())}
    out = load(io.BytesIO(data))
    assert_tool_pairs(out.messages)
    for before, m in zip(out.messages, out.messages[1:], strict=False):
        if m.joined:
            assert before.raw.get("uuid") == parent[m.raw["uuid"]], (before.text[:60], m.text)


def compressed(records: list[dict[str, Any]], tmp_path: Path, budget: int) -> tuple[bytes, bytes]:
    path = tmp_path / "session.jsonl"
    original = "".join(json.dumps(r) + "\n" for r in with_real_usage(records)).encode()
    path.write_bytes(original)
    # `budget` is what the messages may take of the bill, besides what the agent sends
    # unlogged (the prompt its usage records holds that too)
    return original, compress_file(path, Options(budget=UNLOGGED["claude-code"] + budget)).data


def test_compress_keeps_reminders_with_their_step_and_restores_exactly(tmp_path: Path) -> None:
    original, data = compressed(session(12, set(range(12))), tmp_path, 2500)
    out = load(io.BytesIO(data))
    assert any(m.text.startswith("## Archived") for m in out.messages), "nothing archived"
    kept = [m for m in out.messages if m.joined]
    assert kept and len(kept) < 13  # some reminders went with their steps, the selection
    assert out.messages[1].joined and "import re" in out.messages[1].text  # stays with the task
    assert_kept_with_their_message(original, data)
    assert restore([*io.BytesIO(data)]) == original


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(steps=st.integers(2, 10), reminders=st.sets(st.integers(0, 9)),
       output=st.integers(5, 120), budget=st.integers(1500, 5000))
def test_compress_never_parts_an_attachment_from_its_message(
        tmp_path: Path, steps: int, reminders: set[int], output: int, budget: int) -> None:
    try:
        original, data = compressed(session(steps, reminders, output), tmp_path, budget)
    except CannotFit:
        assume(False)  # a budget under the task and the newest step: nothing is written
    assert_kept_with_their_message(original, data)
    assert restore([*io.BytesIO(data)]) == original


def test_a_real_session_counts_its_attachments() -> None:
    if not X402.is_file():
        import pytest

        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    t = load(X402)
    texts = [m.text for m in t.messages if m.joined]
    assert any(text.startswith("<system-reminder>\nThe following deferred tools")
               for text in texts)
    assert any("# MCP Server Instructions" in text for text in texts)
    assert sum("The task tools haven't been used recently" in text for text in texts) == 4
