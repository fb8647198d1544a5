"""The Claude Code session reader: real session logs and small hand-written chains."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack.calibration import UNLOGGED
from ctxpack.errors import InputError
from ctxpack.formats.claude_attachments import attachment_parts
from ctxpack.formats.claude_code import ClaudeCodeFormat
from ctxpack.loader import Scanner, load, write
from ctxpack.transcript import Image, Message, Text, ToolResult, Transcript

from .conftest import CORPUS, corpus_params
from .helpers import assert_tool_pairs, ctxpack, records_of, with_real_usage

MODEL = "claude-opus-4-6"
SPOTTER = CORPUS / "claude-code" / "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
SUBAGENT = CORPUS / "claude-code" / "spotter__fa812bfe__subagents__agent-aa84377.jsonl"
COMPACTOR = CORPUS / "claude-code" / "spotter__fa812bfe__subagents__agent-acompact-70d8e7.jsonl"
XEUS = CORPUS / "claude-code" / "xeus__claude-session_api-errors-only.jsonl"
needs_corpus = pytest.mark.skipif(not SPOTTER.is_file(), reason="corpus not found")


def load_lines(*records: dict[str, Any], format: str | None = None) -> Transcript:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in with_real_usage(records))
    return load(io.BytesIO(data), format)



def envelope(kind: str, uuid: str | None, parent: str | None, **extra: Any) -> dict[str, Any]:
    record = {"parentUuid": parent, "isSidechain": False, "userType": "external",
              "sessionId": "s1", "version": "2.1.39", "type": kind, **extra}
    if uuid is not None:
        record["uuid"] = uuid
    return record


def user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return envelope("user", uuid, parent, message={"role": "user", "content": content}, **extra)


def usage(out: int = 1, inp: int = 3, create: int = 100, read: int = 1000) -> dict[str, int]:
    return {"input_tokens": inp, "cache_creation_input_tokens": create,
            "cache_read_input_tokens": read, "output_tokens": out}


def piece(uuid: str, parent: str | None, msg_id: str, block: dict[str, Any],
          use: dict[str, int] | None = None, model: str = MODEL, **extra: Any) -> dict[str, Any]:
    """One piece of an API response; without `use`, its usage is left for `with_real_usage`."""
    message = {"model": model, "id": msg_id, "type": "message", "role": "assistant",
               "content": [block], "stop_reason": None, **({"usage": use} if use else {})}
    return envelope("assistant", uuid, parent, message=message, requestId="req_" + msg_id,
                    **extra)


def said(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def calls(call_id: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def answer(uuid: str, parent: str, call_id: str, text: str = "ok", **extra: Any) -> dict:
    block = {"tool_use_id": call_id, "type": "tool_result", "content": text}
    return user(uuid, parent, [block], toolUseResult={"stdout": "a copy, never counted"},
                **extra)


def progress(uuid: str, parent: str) -> dict[str, Any]:
    return envelope("progress", uuid, parent, data={"type": "hook_progress"})


def boundary(uuid: str, logical: str) -> dict[str, Any]:
    return envelope("system", uuid, None, subtype="compact_boundary", logicalParentUuid=logical,
                    content="Conversation compacted", compactMetadata={"trigger": "auto"})


def lines_of(messages: list[Message]) -> list[int]:
    return [m.line for m in messages]




# --- the real session files --------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code"))
def test_corpus_detected_and_written_back_exactly(path: Path, tmp_path: Path) -> None:
    t = load(path)
    assert t.format == "claude-code"
    write(t, tmp_path / path.name)
    assert (tmp_path / path.name).read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code"))
def test_corpus_messages(path: Path) -> None:
    t = load(path)
    records = records_of(path)
    emitted = t.messages + t.outside + t.sidechain
    # user/assistant records are messages (one per user line, one per API response), and
    # so is each attachment record that sends the model something, as a user message
    assert all(m.raw["type"] in ("user", "assistant", "attachment") for m in emitted)
    sent = [r for r in records if r["type"] == "attachment" and attachment_parts(r["attachment"])]
    assert sum(m.raw["type"] == "attachment" for m in emitted) == len(sent)
    assert all(m.role == "user" and m.joined and not m.human
               for m in emitted if m.raw["type"] == "attachment")
    assert sum(m.role == "user" for m in emitted) == \
        sum(r["type"] == "user" for r in records) + len(sent)
    ids = {r["message"]["id"] for r in records if r["type"] == "assistant"}
    assert sorted(m.id for m in emitted if m.role == "assistant") == sorted(ids)
    assert t.messages, "every corpus session has a context"
    context_ids = [m.id for m in t.messages if m.role == "assistant"]
    assert len(context_ids) == len(set(context_ids))
    # no corpus file has an orphan result or an unanswered call inside its context
    assert_tool_pairs(t.messages)
    models = [r["message"]["model"] for r in records if r["type"] == "assistant"
              and r["message"]["model"] != "<synthetic>"]
    assert t.model == (models[-1] if models else None)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code"))
def test_corpus_usage_counts_each_response_once(path: Path) -> None:
    t = load(path)
    responses: dict[str, dict[str, int]] = {}
    for r in records_of(path):
        if r["type"] == "assistant" and r["message"]["model"] != "<synthetic>":
            responses.setdefault(r["message"]["id"], r["message"]["usage"])
    if not responses:
        assert t.usage == {}
        return
    assert t.usage["calls"] == len(responses)
    prompts = [u["input_tokens"] + u["cache_creation_input_tokens"]
               + u["cache_read_input_tokens"] for u in responses.values()]
    assert t.usage["input_tokens"] == sum(prompts)
    assert t.usage["last_input_tokens"] in prompts


@pytest.mark.corpus
@needs_corpus
def test_spotter_context_starts_at_the_compaction_summary() -> None:
    t = load(SPOTTER)
    records = records_of(SPOTTER)
    cut = next(n for n, r in enumerate(records, 1) if r.get("subtype") == "compact_boundary")
    first = t.messages[0]
    assert first.raw.get("isCompactSummary") is True and first.line == cut + 1
    assert not first.human
    assert all(m.line > cut for m in t.messages)
    before = [n for n, r in enumerate(records, 1) if r["type"] in ("user", "assistant")
              and n < cut]
    assert set(before) <= {line for m in t.outside for line in m.lines}
    assert len(t.messages) == 70 and len(t.outside) == 288 and not t.sidechain


@pytest.mark.corpus
@needs_corpus
def test_api_errors_only_session_has_one_user_message() -> None:
    t = load(XEUS)
    assert [m.role for m in t.messages] == ["user"] and t.messages[0].human
    assert not t.outside and t.usage == {} and t.model is None


@pytest.mark.corpus
@needs_corpus
def test_sub_agent_file_is_its_own_context() -> None:
    t = load(SUBAGENT)
    assert t.messages and not t.sidechain and not t.outside
    assert all(m.raw["isSidechain"] is True for m in t.messages)
    assert t.messages[0].line == 1 and t.messages[0].raw["parentUuid"] is None
    assert t.model == "claude-haiku-4-5-20251001" and t.usage["calls"] == 9
    compactor = load(COMPACTOR)
    prompt, summary = compactor.messages
    assert prompt.text.startswith("Your task is to create a detailed summary")
    assert summary.role == "assistant"
    assert len(compactor.outside) == 13 and all(m.raw["isMeta"] for m in compactor.outside)


# --- hand-written chains -----------------------------------------------------------------

def test_parallel_results_off_the_parent_chain_stay_with_their_response() -> None:
    # as Claude Code writes it: each result hangs off its own piece, the next
    # request off the last result, so P2 and R2 are not on the parent chain
    t = load_lines(user("u1", None, "look around"),
                   piece("p1", "u1", "msg_A", calls("t1", "WebSearch")),
                   piece("p2", "p1", "msg_A", calls("t2", "Glob")),
                   progress("g1", "p2"),
                   answer("r2", "p2", "t2", "glob hits"),
                   answer("r1", "p1", "t1", "search hits"),
                   piece("a2", "r1", "msg_B", said("Found both.")))
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "user", "assistant"]
    merged = t.messages[1]
    assert merged.lines == (2, 3) and merged.id == "msg_A" and merged.model == MODEL
    assert [c.id for c in merged.tool_calls] == ["t1", "t2"]
    assert [m.tool_results[0].text for m in t.messages[2:4]] == ["glob hits", "search hits"]
    assert not t.outside
    assert_tool_pairs(t.messages)


def test_results_between_pieces_are_emitted_after_the_merged_response() -> None:
    t = load_lines(user("u1", None, "go"),
                   piece("p1", "u1", "msg_A", calls("t1")),
                   answer("r1", "p1", "t1", "first"),
                   piece("p2", "r1", "msg_A", calls("t2")),
                   answer("r2", "p2", "t2", "second"),
                   user("u2", "r2", "thanks"))
    assert lines_of(t.messages) == [1, 2, 3, 5, 6]
    assert t.messages[1].lines == (2, 4)
    assert t.messages[1].raw["uuid"] == "p1"
    assert [m.human for m in t.messages] == [True, False, False, False, True]


def test_reader_holds_only_the_open_response() -> None:
    reader = ClaudeCodeFormat().reader()
    assert [m.line for m in reader.feed(1, user("u1", None, "go"))] == [1]
    assert reader.feed(2, piece("p1", "u1", "msg_A", calls("t1"))) == []
    assert reader.feed(3, answer("r1", "p1", "t1")) == []
    assert reader.feed(4, progress("g1", "r1")) == []
    out = reader.feed(5, user("u2", "g1", "next"))
    assert [m.line for m in out] == [2, 3, 5]
    rest, layout = reader.finish()
    assert rest == [] and layout.context == [0, 1, 2, 3]


def test_abandoned_branch_is_outside() -> None:
    records = with_real_usage([user("u1", None, "first"),
                               piece("a1", "u1", "msg_A", said("one")),
                               user("u2", "a1", "second"),
                               piece("a2", "u2", "msg_B", said("two")),
                               user("u3", "a1", "second, rephrased"),  # the user edited u2
                               piece("a3", "u3", "msg_C", said("three"))])
    t = load_lines(*records)
    assert lines_of(t.messages) == [1, 2, 5, 6]
    assert lines_of(t.outside) == [3, 4]
    prompts = [sum(v for k, v in r["message"]["usage"].items() if k != "output_tokens")
               for r in records if r["type"] == "assistant"]
    assert t.usage["calls"] == 3  # spend counts every call, context or not
    assert t.usage["input_tokens"] == sum(prompts)
    assert t.usage["last_input_tokens"] == prompts[-1]


def test_dangling_parent_ends_the_chain() -> None:
    t = load_lines(user("u1", None, "hello"),
                   user("u2", "nowhere", "again"),
                   piece("a1", "u2", "msg_A", said("hi")))
    assert lines_of(t.messages) == [2, 3] and lines_of(t.outside) == [1]


def test_parent_cycle_does_not_hang() -> None:
    t = load_lines(user("u1", "u2", "a"), user("u2", "u1", "b"))
    assert sorted(lines_of(t.messages)) == [1, 2]


def test_compaction_starts_a_new_chain() -> None:
    summary = "This session is being continued from a previous conversation. Summary: ..."
    t = load_lines(user("u1", None, "build it"),
                   piece("a1", "u1", "msg_A", said("built")),
                   boundary("b1", "a1"),
                   user("s1", "b1", summary, isCompactSummary=True,
                        isVisibleInTranscriptOnly=True),
                   piece("a2", "s1", "msg_B", said("continuing")),
                   envelope("system", "d1", "a2", subtype="turn_duration", durationMs=5))
    assert lines_of(t.messages) == [4, 5] and lines_of(t.outside) == [1, 2]
    assert not t.messages[0].human


def test_boundary_cuts_even_when_it_names_a_parent() -> None:
    cut = {**boundary("b1", "a1"), "parentUuid": "a1"}
    t = load_lines(user("u1", None, "x"), piece("a1", "u1", "msg_A", said("y")), cut,
                   user("u2", "b1", "z"))
    assert lines_of(t.messages) == [4]


def test_bookkeeping_records_are_links_not_messages() -> None:
    t = load_lines({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
                   {"type": "summary", "summary": "Title", "leafUuid": "x"},
                   envelope("progress", "g0", None, data={"type": "hook_progress"}),
                   user("u1", "g0", "hi"),
                   {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"},
                   envelope("attachment", "t1", "u1", attachment={"type": "command_permissions"}),
                   piece("a1", "t1", "msg_A", said("hello")),
                   envelope("system", "e1", "a1", subtype="api_error", error={"status": 500}),
                   {"type": "last-prompt", "lastPrompt": "hi", "sessionId": "s1"},
                   {"type": "ai-title", "aiTitle": "Greeting", "sessionId": "s1"},
                   {"type": "permission-mode", "permissionMode": "default", "sessionId": "s1"},
                   {"type": "some-future-kind", "sessionId": "s1"})
    assert t.format == "claude-code"
    assert lines_of(t.messages) == [4, 7] and not t.outside


def test_inline_sidechain_goes_to_the_sidechain() -> None:
    t = load_lines(user("u1", None, "explore"),
                   piece("a1", "u1", "msg_A", calls("task", "Task")),
                   user("s1", None, "explore the repo", isSidechain=True),
                   piece("s2", "s1", "msg_S", said("it is small"), isSidechain=True,
                         model="claude-haiku-4-5"),
                   answer("r1", "a1", "task", "it is small"),
                   piece("a2", "r1", "msg_B", said("done")))
    assert lines_of(t.messages) == [1, 2, 5, 6]
    assert lines_of(t.sidechain) == [3, 4]
    assert t.usage["calls"] == 2 and t.model == MODEL


def test_usage_copies_count_once_and_output_is_the_largest() -> None:
    t = load_lines(user("u1", None, "go"),
                   piece("p1", "u1", "msg_A", said("a"), usage(out=1)),
                   piece("p2", "p1", "msg_A", said("b"), usage(out=1)),
                   piece("p3", "p2", "msg_A", calls("t1"), usage(out=42)),
                   answer("r1", "p3", "t1"),
                   piece("x1", "r1", "synthetic", said("No response requested."),
                         usage(0, 0, 0, 0), model="<synthetic>"),
                   piece("q1", "x1", "msg_B", said("done"), usage(out=7, read=2000)))
    u = t.usage
    assert (u["calls"], u["output_tokens"]) == (2, 49)
    assert u["input_tokens"] == 1103 + 2103
    assert (u["cache_read_tokens"], u["cache_creation_tokens"]) == (3000, 200)
    assert u["last_input_tokens"] == 2103 and "message.id" in u["source"]
    assert t.model == MODEL


def test_human_flags() -> None:
    summary = "This session is being continued from a previous conversation that ran out."
    t = load_lines(user("u1", None, "typed by a person"),
                   user("u2", "u1", "<local-command-caveat>...", isMeta=True),
                   user("u3", "u2", summary),
                   user("u4", "u3", [said("also typed")]),
                   piece("a1", "u4", "msg_A", calls("t1")),
                   answer("r1", "a1", "t1"))
    assert [m.human for m in t.messages] == [True, False, False, True, False, False]


def test_blocks_and_result_content() -> None:
    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                       "data": "iVBORw0KGgo="}}
    t = load_lines(user("u1", None, [said("see this"), png]),
                   piece("a1", "u1", "msg_A", calls("t1", "ToolSearch")),
                   user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1",
                                      "is_error": True, "content": [
                                          {"type": "tool_reference", "tool_name": "WebFetch"},
                                          said("and"), png]}],
                        toolUseResult="Error: a copy that is never counted"))
    assert t.messages[0].parts == (Text("see this"), Image("image/png", "iVBORw0KGgo="))
    (result,) = t.messages[2].parts
    assert isinstance(result, ToolResult) and result.is_error
    assert result.parts == (Text("WebFetch"), Text("and"), Image("image/png", "iVBORw0KGgo="))
    assert "copy" not in t.messages[2].text


@pytest.mark.parametrize(("record", "score"), [
    ({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}, 2),
    ({"type": "queue-operation", "operation": "dequeue"}, 2),
    ({"type": "summary", "summary": "t", "leafUuid": "x"}, 2),
    (envelope("progress", "g", None), 2),
    (user("u", None, "hi"), 2),
    ({"type": "assistant", "message": {"role": "assistant"}, "session_id": "s"}, 0),
    ({"type": "progress", "data": {}}, 0),
    ({"type": "summary", "summary": "t"}, 0),
    ({"role": "user", "content": "hi"}, 0),
])
def test_sniff(record: dict[str, Any], score: int) -> None:
    assert ClaudeCodeFormat().sniff(record) == score


def test_records_without_a_type_fail_with_their_line() -> None:
    with pytest.raises(InputError) as err:
        load_lines(user("u1", None, "hi"), {"role": "user", "content": "hi"})
    assert err.value.line == 2 and "claude-code" in err.value.problem
    with pytest.raises(InputError):
        load_lines(envelope("user", "u1", None))  # a user record needs its message
    data = b"".join(json.dumps(r).encode() + b"\n" for r in (user("u1", None, "hi"), {"x": 1}))
    t = load(io.BytesIO(data), skip_invalid=True)
    assert lines_of(t.messages) == [1] and [b.line for b in t.skipped] == [2]


@pytest.mark.corpus
@needs_corpus
def test_scanning_streams_messages_with_the_same_layout() -> None:
    scanner = Scanner(SPOTTER)
    count = sum(1 for _ in scanner.messages())
    assert scanner.layout is not None and not scanner.records
    assert count == 70 + 288 and len(scanner.layout.context) == 70


def test_text_claude_code_writes_itself_is_no_persons_request() -> None:
    t = load_lines(
        user("u1", None, "<local-command-caveat>Caveat: generated by local commands."
             "</local-command-caveat>", isMeta=True),
        user("u2", "u1", "<command-name>/model</command-name>\n<command-args>opus</command-args>"),
        user("u3", "u2", "<local-command-stdout>Set model to opus</local-command-stdout>"),
        user("u4", "u3", "Build the prediction market contract."),
        piece("a1", "u4", "msg_1", said("On it.")),
        user("u5", "a1", "[Request interrupted by user]"),
        user("u6", "u5", "<task-notification><task-id>b1</task-id></task-notification>"),
        user("u7", "u6", "Also write the tests."),
    )
    assert [m.text[:12] for m in t.messages if m.human] == [
        "<command-nam", "Build the pr", "Also write t"]
    assert [r.number for r in t.rounds()] == [0, 1, 2, 3]


def test_compress_keeps_the_task_behind_a_local_command_in_full(tmp_path: Path) -> None:
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options

    spec = "Build the prediction market contract. " + "Every rule is spelled out here. " * 80
    records = [
        user("u1", None, "<local-command-caveat>Caveat.</local-command-caveat>", isMeta=True),
        user("u2", "u1", "<command-name>/model</command-name>"),
        user("u3", "u2", "<local-command-stdout>Set model to opus</local-command-stdout>"),
        user("u4", "u3", spec)]
    parent = "u4"
    for k in range(12):
        records += [piece(f"a{k}", parent, f"msg_{k}", calls(f"toolu_{k}")),
                    answer(f"r{k}", f"a{k}", f"toolu_{k}", f"src/file_{k}.py\n" * 60)]
        parent = f"r{k}"
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in with_real_usage(records)))
    # the messages may take 2,500 of the bill besides what the agent sends unlogged
    result = compress_file(path, Options(budget=UNLOGGED["claude-code"] + 2500))
    assert result.report.summary is not None
    out = load(io.BytesIO(result.data))
    assert any(m.text == spec for m in out.messages), "the task went into the summary"
    summary = next(m.text for m in out.messages if m.text.startswith("## Archived"))
    assert spec not in summary


def test_the_blank_text_blocks_a_reply_logs_are_no_problem(tmp_path: Path) -> None:
    # Claude Code logs the "\n\n" text block the model writes before its thinking (four
    # corpus sessions, which went on past them): the log holds the reply as written, not
    # the request Claude Code sends, so validate does not name it as a request's would be
    thinking = {"type": "thinking", "thinking": "Listing first.", "signature": "sig"}
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in [
        user("u1", None, "list the files"),
        piece("a1", "u1", "msg_1", said("\n\n")),
        piece("a2", "a1", "msg_1", thinking),
        piece("a3", "a2", "msg_1", calls("t1")),
        answer("u2", "a3", "t1"),
        piece("a4", "u2", "msg_2", said("Done."))]))
    run = ctxpack("validate", str(path))
    assert run.code == 0 and run.out == "" and run.err.endswith(": ok\n"), run.out + run.err
    # the same reply in a request's messages is refused
    body = {"model": MODEL, "max_tokens": 100, "messages": [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": [said("\n\n"), thinking, calls("t1")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "ok"}]}]}
    request = tmp_path / "request.jsonl"
    request.write_text(json.dumps(body) + "\n")
    run = ctxpack("validate", str(request))
    assert run.code == 1 and "content[0]: text block's 'text' is whitespace only" in run.out


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code"))
def test_corpus_sessions_with_blank_reply_blocks_validate_as_before(path: Path) -> None:
    assert "whitespace" not in ctxpack("validate", str(path)).out


@pytest.mark.parametrize("links", [
    [("a", "a"), ("b", "a")],  # a record its own parent
    [("a", "c"), ("b", "a"), ("c", "b"), ("d", "c")],  # a loop of three, a record below it
], ids=["own-parent", "loop"])
def test_a_loop_of_parents_is_named_and_read_to_an_end(tmp_path: Path,
                                                        links: list[tuple[str, str]]) -> None:
    """A parentUuid chain with no start (a record its own parent, a loop of them) is named
    by validate at the loop's first record, once; stats reads the file and ends."""
    records = [user(u, p, f"message {u}") if n % 2 == 0 else
               piece(u, p, f"msg_{u}", said(f"reply {u}"), usage())
               for n, (u, p) in enumerate(links)]
    path = tmp_path / "loop.claude-code.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = ctxpack("validate", str(path))
    assert run.code == 1, run
    named = [x for x in run.out.splitlines() if "chain of parents has no start" in x]
    assert named == [f"{path}:1: parentUuid {links[0][1]!r} " + (
        "is the record's own uuid" if links[0] == ("a", "a") else
        "leads back to it through 2 other records (lines 2, 3)")
        + ": the chain of parents has no start"], run.out
    stats = ctxpack("stats", "--json", str(path))
    assert stats.code == 0 and json.loads(stats.out)["files"][0]["messages"] >= 1, stats


def test_records_written_again_are_held_where_they_first_appear(tmp_path: Path) -> None:
    # a resumed session writes records of its chain again (the same uuids): the newest copy
    # holds its place in the context; `convert --all` holds each message once, its newest
    # copy where it first appears (as a Codex compaction's kept messages are), and stats
    # does not count the first copies outside the context as well as in it
    first = [user("u1", None, "list the files"),
             piece("a1", "u1", "msg_1", calls("t1")),
             answer("r1", "a1", "t1", "a.py b.py"),
             piece("a2", "r1", "msg_2", said("Two files."))]
    aside = user("x1", "a2", "a question left off the branch")
    once = [*first, aside, user("u2", "a2", "and the tests?")]
    twice = [*first, aside, *first, user("u2", "a2", "and the tests?")]
    paths = []
    for name, records in (("once", once), ("twice", twice)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in with_real_usage(records)))
        paths.append(path)
    plain, again = (load(p) for p in paths)
    assert [m.text for m in again.messages] == [m.text for m in plain.messages]
    assert [m.line for m in again.messages] == [6, 7, 8, 9, 10]  # the newest copies
    assert [m.line for m in again.copies] == [1, 2, 3, 4]  # left out of the whole log
    converted = [json.loads(ctxpack("convert", str(p), "--all", "--to", "openai").out)
                 for p in paths]
    assert converted[1]["messages"] == converted[0]["messages"]
    assert [m["content"] for m in converted[1]["messages"] if m["role"] == "user"] == [
        "list the files", "a question left off the branch", "and the tests?"]
    counted = [json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0] for p in paths]
    assert counted[1]["outside"] == counted[0]["outside"]
    assert counted[1]["outside"]["messages"] == 1  # the question off the branch
    for p in paths:  # the records as read, byte for byte
        out = tmp_path / f"{p.stem}.copy.jsonl"
        write(load(p), out)
        assert out.read_bytes() == p.read_bytes()
