"""Gemini CLI: chat recordings (JSON and JSONL) and stream-json, on the corpus and by hand."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import compress, restore, stats
from ctxpack.errors import InputError, UsageError
from ctxpack.loader import load, write
from ctxpack.transcript import SUMMARY_HEADING, Text, Thinking, ToolCall, ToolResult, Transcript

from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, assert_tool_pairs, ctxpack, records_of

META = {"sessionId": "s-1", "projectHash": "ab" * 32, "startTime": "2026-03-03T09:00:00.000Z",
        "lastUpdated": "2026-03-03T09:00:00.000Z", "kind": "main"}


def jsonl(*records: dict[str, Any]) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in records))


def user(ident: str, text: str) -> dict[str, Any]:
    return {"id": ident, "timestamp": "t", "type": "user", "content": [{"text": text}]}


def gemini(ident: str, text: str = "", calls: list[dict[str, Any]] | None = None,
           tokens: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
    record = {"id": ident, "timestamp": "t", "type": "gemini", "content": text,
              "model": "gemini-2.5-pro", **extra}
    if calls is not None:
        record["toolCalls"] = calls
    if tokens is not None:
        record["tokens"] = tokens
    return record


def response(cid: str, output: str, error: bool = False) -> dict[str, Any]:
    body = {"error": output} if error else {"output": output}
    return {"functionResponse": {"id": cid, "name": "read_file", "response": body}}


def call(cid: str, output: str | None = None, error: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"id": cid, "name": "read_file", "args": {"file_path": cid},
                         "status": "error" if error else "success"}
    if output is not None:
        c["result"] = [response(cid, output, error)]
    return c


def ids_of(t: Transcript) -> list[str | None]:
    return [m.raw.get("id") for m in t.messages]


# --- the JSONL recording, by hand ---------------------------------------------------------

def test_a_message_written_again_keeps_its_place_and_its_newest_copy_counts() -> None:
    t = load(jsonl(META, user("u1", "read a"), gemini("g1", calls=[call("a")]),
                   user("u2", "and?"), gemini("g1", calls=[call("a", "AAA")])))
    assert t.format == "gemini-cli"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "user"]
    assert t.messages[2].tool_results[0].text == "AAA"
    assert [m.line for m in t.outside] == [3]  # the first copy of g1


def test_a_message_written_again_is_its_newest_copy_where_it_first_stood(
        tmp_path: Path) -> None:
    # the CLI writes a reply again whenever it changes (its calls' results, its thoughts):
    # the whole log holds the newest copy in the first copy's place, and stats counts no
    # older copy outside the context; read so, the file is the one that wrote it once
    thought = {"subject": "Reading", "description": "a first"}
    newest = gemini("g1", "Reading a.", calls=[call("a", "AAA")], thoughts=[thought])
    files = {"again": [META, user("u1", "read a"), gemini("g1", "Reading a."),
                       user("u2", "then b"), gemini("g1", "Reading a.", calls=[call("a")]),
                       newest],
             "once": [META, user("u1", "read a"), newest, user("u2", "then b")]}
    paths = {}
    for name, records in files.items():
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_bytes(jsonl(*records).getvalue())
    again, once = (load(paths[name]) for name in files)
    assert [(m.role, m.text) for m in again.messages] == [
        (m.role, m.text) for m in once.messages]
    assert [m.line for m in again.copies] == [3, 5]  # the older copies
    for to in ("openai", "anthropic"):
        logs = [ctxpack("convert", str(paths[name]), "--all", "--to", to) for name in files]
        assert logs[0].code == 0 and logs[0].out == logs[1].out, (to, logs[0].err)
    page = ctxpack("convert", str(paths["again"]), "--all", "--to", "markdown").out
    assert page.count("Reading a.") == 1
    assert page.index("a first") < page.index("Reading a.") < page.index("AAA") < \
        page.index("then b")
    counted = [json.loads(ctxpack("stats", "--json", str(paths[name])).out)["files"][0]
               for name in files]
    assert counted[0]["outside"] == counted[1]["outside"]
    assert counted[0]["outside"]["messages"] == 1  # the newest copy's thoughts
    out = io.BytesIO()
    write(again, out)
    assert out.getvalue() == paths["again"].read_bytes()


@pytest.mark.parametrize("written", ["twice in one $set", "again in a $set's list",
                                     "twice after it"])
def test_a_message_stated_twice_is_held_once_at_its_first_place(
        tmp_path: Path, written: str) -> None:
    # one id written twice, whether a `$set` list repeats it or lines record it again:
    # the whole log holds its newest copy where it first stood, and stats counts no older
    # copy outside the context, as of the file that states it once
    newest = gemini("g1", "Reading a.", calls=[call("a", "AAA")])
    older = gemini("g1", "Reading a.", calls=[call("a")])
    start = [META, user("u0", "hello"), gemini("g0", "hi")]
    files = {
        "twice in one $set": [*start, {"$set": {"messages": [
            user("u1", "read a"), older, user("u2", "then b"), newest]}}],
        "again in a $set's list": [*start, {"$set": {"messages": [
            user("u1", "read a"), older, user("u2", "then b")]}}, newest],
        "twice after it": [*start, {"$set": {"messages": [user("u1", "read a")]}},
                           older, user("u2", "then b"), older, newest],
    }
    once = [*start, {"$set": {"messages": [user("u1", "read a"), newest,
                                           user("u2", "then b")]}}]
    paths = {}
    for name, records in {written: files[written], "once": once}.items():
        paths[name] = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        paths[name].write_bytes(jsonl(*records).getvalue())
    logs = [ctxpack("convert", str(paths[name]), "--all", "--to", "openai")
            for name in (written, "once")]
    assert logs[0].code == 0 and logs[0].out == logs[1].out, logs[0].err
    sent = json.loads(logs[0].out)["messages"]
    assert [m["content"] for m in sent] == ["hello", "hi", "read a", "Reading a.", "AAA",
                                            "then b"]
    counted = [json.loads(ctxpack("stats", "--json", str(paths[name])).out)["files"][0]
               for name in (written, "once")]
    assert counted[0]["outside"] == counted[1]["outside"]
    assert counted[0]["outside"]["messages"] == 2  # the two messages the `$set` replaced
    assert counted[0]["tokens"] == counted[1]["tokens"]
    out = io.BytesIO()
    write(load(paths[written]), out)
    assert out.getvalue() == paths[written].read_bytes()


def test_the_older_json_sample_reads_as_the_log_it_was_replayed_from() -> None:
    # samples/: the JSONL session kept as the older one-document recording (each message's
    # newest copy, the rewound question gone) reads to the same context, count and usage
    log = load(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    path = SAMPLES / "gemini-cli-json" / "plateau-fix.gemini-cli.json"
    document = load(path)
    assert document.format == log.format == "gemini-cli" and document.document
    assert [(m.role, m.text) for m in document.messages] == \
        [(m.role, m.text) for m in log.messages]
    assert [c.billed for c in document.calls] == [c.billed for c in log.calls]
    assert stats(document).tokens == stats(log).tokens
    out = io.BytesIO()
    write(document, out)
    assert out.getvalue() == path.read_bytes()


def test_a_rewind_drops_that_message_and_everything_after_it() -> None:
    t = load(jsonl(META, user("u1", "first"), gemini("g1", "one"), user("u2", "second"),
                   gemini("g2", "two"), {"$rewindTo": "u2"}, user("u3", "instead"),
                   gemini("g3", "three")))
    assert ids_of(t) == ["u1", "g1", "u3", "g3"]
    assert {m.raw["id"] for m in t.outside} == {"u2", "g2"}


def test_a_rewind_to_an_unknown_id_drops_everything_as_the_cli_does() -> None:
    t = load(jsonl(META, user("u1", "first"), gemini("g1", "one"), {"$rewindTo": "nope"},
                   user("u2", "again")))
    assert ids_of(t) == ["u2"]


def test_validate_and_stats_name_a_rewind_to_an_id_the_file_does_not_have(tmp_path) -> None:
    # Gemini CLI's loader clears the whole history for such a rewind (its own rewind
    # never writes one): read so, and said, at the line, not passed over as "ok"
    path = tmp_path / "session.jsonl"
    path.write_bytes(jsonl(META, user("u1", "first"), gemini("g1", "one"),
                           {"$rewindTo": "nope"}, user("u2", "again")).getvalue())
    run = ctxpack("validate", str(path))
    assert run.code == 1
    assert f"{path}:4: '$rewindTo' names 'nope', which no message before it has" in run.out
    out = " ".join(ctxpack("stats", "--top", "0", str(path)).out.split())
    assert "1 message" in out and "naming no message" in out
    fine = tmp_path / "fine.jsonl"
    fine.write_bytes(jsonl(META, user("u1", "first"), gemini("g1", "one"),
                           {"$rewindTo": "g1"}, user("u2", "again")).getvalue())
    assert ctxpack("validate", str(fine)).code == 0


def test_set_messages_replaces_the_list_and_later_lines_build_on_it() -> None:
    summary = [user("s1", "<state_snapshot>all that happened</state_snapshot>"),
               gemini("s2", "Got it.")]
    t = load(jsonl(META, user("u1", "long"), gemini("g1", "work"), {"$set": {"messages": summary}},
                   user("u2", "next"), {"$set": {"lastUpdated": "later", "messages": []}}))
    assert ids_of(t) == ["s1", "s2", "u2"]
    assert {m.line for m in t.messages[:2]} == {4}


def test_results_repeated_as_the_next_user_message_count_once() -> None:
    t = load(jsonl(META, user("u1", "read"), gemini("g1", calls=[call("a", "A" * 50)]),
                   {"id": "e1", "type": "user", "content": [response("a", "A" * 50)]}))
    results = [r for m in t.messages for r in m.tool_results]
    assert [r.call_id for r in results] == ["a"]
    assert [m.role for m in t.outside] == ["tool"]  # the copy: in the file, not counted
    by_role = stats(t).by_role
    assert by_role["tool"] > 0 and "user" in by_role


def test_a_result_only_the_user_message_holds_is_counted() -> None:
    t = load(jsonl(META, user("u1", "read"), gemini("g1", calls=[call("a")]),
                   {"id": "e1", "type": "user", "content": [response("a", "oops", True)]}))
    (result,) = [r for m in t.messages for r in m.tool_results]
    assert result.is_error and result.text == "oops"
    assert t.messages[-1].role == "tool" and not t.messages[-1].human


def test_only_user_and_gemini_records_are_model_input() -> None:
    t = load(jsonl(META, user("u1", "hi"), {"id": "i1", "type": "info", "content": "Request "
                   "cancelled."}, {"id": "x1", "type": "error", "content": "[API Error]"},
                   {"id": "w1", "type": "warning", "content": "slow"}, gemini("g1", "hello")))
    assert ids_of(t) == ["u1", "g1"]
    assert t.outside == ()


def test_thoughts_are_not_context_and_the_injected_context_is_no_person() -> None:
    thought = {"subject": "Planning", "description": "Read first.", "timestamp": "t"}
    t = load(jsonl(META, user("c", "<session_context>\nThis is the Gemini CLI.</session_context>"),
                   user("u1", "fix it"), gemini("g1", "Done.", thoughts=[thought])))
    assert [m.human for m in t.messages] == [False, True, False]
    assert t.messages[2].parts == (Text("Done."),)
    assert [r.number for r in t.rounds()] == [0, 1]
    # the CLI sends no thought back: they are in the file, outside the context, and say so
    (thoughts,) = t.outside
    assert thoughts.parts == (Thinking("Planning\nRead first."),) and thoughts.id == "g1"
    assert "thoughts, which the CLI does not send back" in t.outside_why
    assert "reasoning" not in stats(t).by_role


def test_usage_counts_each_reply_once_and_the_last_prompt() -> None:
    first = {"input": 100, "output": 10, "cached": 40, "thoughts": 5, "tool": 0, "total": 115}
    second = {"input": 300, "output": 20, "cached": 200, "thoughts": 0, "tool": 0, "total": 320}
    t = load(jsonl(META, user("u1", "a"), gemini("g1", calls=[call("a")]),
                   gemini("g1", calls=[call("a", "x")], tokens=first), gemini("g2", "b",
                                                                             tokens=second)))
    assert t.usage["calls"] == 2
    assert t.usage["input_tokens"] == 400 and t.usage["cache_read_tokens"] == 240
    assert t.usage["output_tokens"] == 35 and t.usage["reasoning_tokens"] == 5
    assert t.usage["last_input_tokens"] == 300
    assert t.model == "gemini-2.5-pro"


def test_the_legacy_document_is_read_like_the_jsonl() -> None:
    doc = {**META, "messages": [user("u1", "read a"), gemini("g1", calls=[call("a", "AAA")]),
                                {"id": "e", "type": "user", "content": [response("a", "AAA")]}]}
    data = json.dumps(doc, indent=2).encode() + b"\n"
    t = load(io.BytesIO(data))
    assert t.format == "gemini-cli"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool"]
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


# --- property: the reader replays the log as the CLI's own loader does ---------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["user", "gemini"]), st.integers(0, 6)),
    st.tuples(st.just("rewind"), st.just(""), st.integers(0, 7)),
), max_size=25)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_replay_matches_an_ordered_map_model(steps: list[tuple[str, str, int]]) -> None:
    records: list[dict[str, Any]] = [META]
    live: dict[str, str] = {}  # id -> type, in the CLI's Map order
    for op, kind, n in steps:
        ident = f"m{n}"
        if op == "add":
            records.append(user(ident, f"text {len(records)}") if kind == "user"
                           else gemini(ident, f"reply {len(records)}"))
            live[ident] = kind  # an existing key keeps its place
        else:
            records.append({"$rewindTo": ident})
            keys = list(live)
            cut = keys.index(ident) if ident in live else 0
            for key in keys[cut:]:
                del live[key]
    data = jsonl(*records).getvalue()
    t = load(io.BytesIO(data))
    assert ids_of(t) == list(live)
    for m in t.messages:  # each live message is its newest copy
        newest = max(i for i, r in enumerate(records, 1) if r.get("id") == m.raw["id"])
        assert m.line == newest
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


# --- stream-json, by hand ------------------------------------------------------------------

INIT = {"type": "init", "timestamp": "t", "session_id": "s", "model": "gemini-2.5-flash"}


def test_stream_chunks_and_calls_of_a_turn_are_one_message() -> None:
    t = load(jsonl(INIT, {"type": "message", "role": "user", "content": "go"},
                   {"type": "message", "role": "assistant", "content": "Look", "delta": True},
                   {"type": "message", "role": "assistant", "content": "ing.", "delta": True},
                   {"type": "tool_use", "tool_name": "ls", "tool_id": "ls-1", "parameters": {}},
                   {"type": "tool_result", "tool_id": "ls-1", "status": "error", "output": "",
                    "error": {"type": "x", "message": "denied"}},
                   {"type": "result", "status": "success",
                    "stats": {"input_tokens": 50, "output_tokens": 7, "cached": 0,
                              "total_tokens": 57, "tool_calls": 1}}))
    assert t.format == "gemini-stream"
    user_m, turn, result = t.messages
    assert user_m.human and turn.lines == (3, 4, 5)
    assert turn.parts == (Text("Looking."), ToolCall("ls-1", "ls", "{}"))
    assert result.role == "tool" and result.tool_results[0].is_error
    assert result.tool_results[0].text == "denied"
    assert t.usage["input_tokens"] == 50 and t.usage["output_tokens"] == 7


def test_stream_lines_outside_a_run_are_not_the_clis_and_each_run_is_a_conversation() -> None:
    note = {"type": "message", "role": "user", "content": "harness note", "ts": "t"}
    t = load(jsonl(note, INIT, {"type": "message", "role": "user", "content": "one"},
                   {"type": "result", "status": "success", "stats": {}}, note,
                   {**INIT, "session_id": "s2"},
                   {"type": "message", "role": "user", "content": "two"}))
    assert [m.text for m in t.messages] == ["one", "two"]
    assert [m.conversation for m in t.messages] == [0, 1]
    assert [m.text for m in t.outside] == ["harness note", "harness note"]
    assert t.outside_why == ("outside a run: before the first `init`; after a run's "
                             "`result`, before the next `init`")


def test_a_resumed_run_goes_on_with_its_sessions_conversation() -> None:
    # `gemini --resume ID -p ...` keeps the session's id and sends its history again
    done = {"type": "result", "status": "success", "stats": {}}
    t = load(jsonl(INIT, {"type": "message", "role": "user", "content": "one"}, done,
                   {**INIT, "session_id": "other"},
                   {"type": "message", "role": "user", "content": "elsewhere"}, done,
                   INIT, {"type": "message", "role": "user", "content": "two"}, done))
    assert [(m.text, m.conversation) for m in t.messages] == \
        [("one", 0), ("elsewhere", 1), ("two", 0)]
    assert stats(t).conversations == 2


# --- the corpus and the samples -----------------------------------------------------------

CHAT = corpus_params("gemini-cli-chat", pattern="*.json")
STREAM = corpus_params("gemini-cli")


@pytest.mark.corpus
@pytest.mark.parametrize("path", [*CHAT, *STREAM])
def test_corpus_is_detected_and_written_back_exactly(path: Path, tmp_path: Path) -> None:
    t = load(path)
    assert t.format == ("gemini-cli" if path.suffix == ".json" else "gemini-stream")
    assert t.unsure == ""
    out = tmp_path / path.name
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", CHAT)
def test_corpus_recording_counts_each_result_once_and_its_usage(path: Path) -> None:
    doc = json.loads(path.read_bytes())
    replies = [m for m in doc["messages"] if m["type"] == "gemini"]
    calls = [c for m in replies for c in m.get("toolCalls", [])]
    t = load(path)
    results = [r.call_id for m in t.messages for r in m.tool_results]
    assert sorted(results) == sorted(c["id"] for c in calls if c.get("result"))
    assert all(m.role == "tool" for m in t.messages if m.tool_results)
    assert_tool_pairs(t.messages)
    # the copies the CLI wrote as user messages are in the file, outside the count, and so
    # are the thoughts of each reply that has some
    echoes = [m for m in doc["messages"] if m["type"] == "user" and all(
        "functionResponse" in p for p in m["content"])]
    thinking = [m for m in replies if m.get("thoughts")]
    assert len(t.outside) == len(echoes) + len(thinking)
    assert t.usage["calls"] == sum(1 for m in replies if m.get("tokens"))
    assert t.usage["input_tokens"] == sum(m["tokens"]["input"] for m in replies if m.get("tokens"))
    assert t.usage["last_input_tokens"] == [m for m in replies if m.get("tokens")][-1][
        "tokens"]["input"]
    # Set against the last prompt the file records (which adds the system prompt and the
    # tool declarations), the context (without the thoughts, which the CLI does not send
    # back) is most of it, and no more: counting the thoughts, or the results' copies
    # twice, would pass it.
    counted = stats(t)
    last = t.usage["last_input_tokens"]
    assert "reasoning" not in counted.by_role
    assert last / 2 < counted.tokens <= last, (counted.tokens, last)


@pytest.mark.corpus
@pytest.mark.parametrize("path", STREAM)
def test_corpus_stream_pairs_calls_and_reads_the_run_totals(path: Path) -> None:
    records = records_of(path)
    t = load(path)
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [c.id for c in calls] == [r["tool_id"] for r in records if r["type"] == "tool_use"]
    results = [r for m in t.messages for r in m.tool_results]
    assert len(results) == sum(r["type"] == "tool_result" for r in records)
    totals = [r["stats"] for r in records if r["type"] == "result"]
    if totals:
        assert t.usage["input_tokens"] == sum(s["input_tokens"] for s in totals)
    else:
        assert t.usage == {}  # a run cut off before its result line
    inits = sum(r["type"] == "init" for r in records)
    assert {m.conversation for m in t.messages} == set(range(inits))
    # why a line is outside a run names only what the file holds
    if t.outside:
        assert totals or "`result`" not in t.outside_why, t.outside_why
        first_init = next(i for i, r in enumerate(records) if r["type"] == "init")
        assert ("before the first `init`" in t.outside_why) == any(
            r["type"] == "message" for r in records[:first_init]), t.outside_why


@pytest.mark.parametrize("name", ["plateau-fix.gemini-cli.jsonl",
                                  "todo-table.gemini-stream.jsonl"])
def test_samples_read_as_their_format(name: str, tmp_path: Path) -> None:
    path = SAMPLES / name
    t = load(path)
    assert t.format == name.split(".")[1]
    assert_tool_pairs(t.messages)
    out = tmp_path / name
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


def test_the_recording_sample_shows_rewind_upsert_and_echoes() -> None:
    t = load(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    texts = [m.text for m in t.messages if m.human]
    assert texts[0].startswith("test_plateau_is_one_high fails")
    assert texts[1].startswith("Actually, put low_tides")  # the rewound question is gone
    assert not any("new module" in m.text for m in t.messages)
    assert sum(1 for m in t.outside if m.role == "tool") == 3  # the echoed results
    assert all(isinstance(r, ToolResult) and r.text for m in t.messages for r in m.tool_results)
    assert t.model == "gemini-2.5-pro" and t.usage["calls"] == 6  # the rewound one too


# --- compress ------------------------------------------------------------------------------

def test_stream_compress_summarizes_and_restore_gives_back_exactly(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [INIT, {"type": "message", "role": "user", "content": "go"}]
    for i in range(12):
        records += [{"type": "tool_use", "tool_name": "sh", "tool_id": f"sh-{i}",
                     "parameters": {"n": i}},
                    {"type": "tool_result", "tool_id": f"sh-{i}", "status": "success",
                     "output": f"row {i}\n" * 400}]
    data = jsonl(*records).getvalue()
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    compressed, report = compress(str(src), model="gemini-2.5-pro", budget=3000,
                                  truncate=False, mask=False)
    assert report.summary is not None
    write(compressed, out)
    after = load(out)
    assert after.format == "gemini-stream"
    assert any(m.text.startswith("## Archived Session Summary") for m in after.messages)
    assert_tool_pairs(after.messages)
    assert restore(str(out)) == data


def stream_run(session: str, steps: int) -> list[dict[str, Any]]:
    """One `gemini -p ... --output-format stream-json` run of `steps` shell calls."""
    records: list[dict[str, Any]] = [
        {**INIT, "session_id": session},
        {"type": "message", "role": "user", "content": f"list the rows of {session}"}]
    for i in range(steps):
        records += [{"type": "tool_use", "tool_name": "sh", "tool_id": f"{session}-{i}",
                     "parameters": {"n": i}},
                    {"type": "tool_result", "tool_id": f"{session}-{i}", "status": "success",
                     "output": f"{session} row {i}\n" * 400}]
    return [*records, {"type": "result", "status": "success", "stats": {
        "input_tokens": 9000, "output_tokens": 90, "total_tokens": 9090, "cached": 0,
        "tool_calls": steps}}]


def runs_of(data: bytes) -> list[list[dict[str, Any]]]:
    """The records of each run (from its `init` to its `result`) of stream-json output."""
    runs: list[list[dict[str, Any]]] = []
    for record in map(json.loads, data.splitlines()):
        if record["type"] == "init":
            runs.append([])
        if runs:  # (a line before the first run is not the CLI's)
            runs[-1].append(record)
    return runs


def test_stream_compress_keeps_each_run_apart_with_a_summary_of_its_own(tmp_path: Path) -> None:
    # Each run of the CLI is a process of its own with its own session: the next run
    # does not see the last one, so each run is summarized on its own, inside it.
    data = jsonl(*stream_run("first", 12), *stream_run("second", 12)).getvalue()
    src, out = tmp_path / "runs.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    compressed, report = compress(str(src), model="gemini-2.5-pro", budget=3000,
                                  truncate=False, mask=False)
    write(compressed, out)
    runs = runs_of(out.read_bytes())
    assert [r[0]["session_id"] for r in runs] == ["first", "second"]
    for run in runs:
        assert run[-1]["type"] == "result"
        summaries = [r for r in run if str(r.get("content", "")).startswith(SUMMARY_HEADING)]
        assert len(summaries) == 1  # its own, of its own steps only
        other = "second" if run[0]["session_id"] == "first" else "first"
        assert other not in summaries[0]["content"]
    after = load(out)
    assert {m.conversation for m in after.messages} == {0, 1}
    assert_tool_pairs(after.messages)
    assert restore(str(out)) == data


def test_stream_compress_of_a_session_resumed_after_another_run_restores_exactly(
        tmp_path: Path) -> None:
    # first, other, then `--resume first`: the first session's messages lie on both sides
    # of the other run, so the file is planned as one; nothing is lost or written twice
    resumed = [r for r in stream_run("first", 6) if r["type"] != "init"]
    data = jsonl(*stream_run("first", 6), *stream_run("other", 6),
                 {**INIT, "session_id": "first"}, *resumed).getvalue()
    src, out = tmp_path / "runs.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    assert [m.conversation for m in load(src).messages if m.role == "user"] == [0, 1, 0]
    compressed, report = compress(str(src), model="gemini-2.5-pro", budget=3000,
                                  truncate=False, mask=False)
    assert report.summary is not None
    write(compressed, out)
    assert_tool_pairs(load(out).messages)
    assert restore(str(out)) == data


def test_compress_masks_and_summarizes_a_recording_and_restore_gives_it_back(
        tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [META, user("u1", "look at every file")]
    for i in range(10):
        records += [gemini(f"g{i}", calls=[call(f"c{i}")]),
                    gemini(f"g{i}", calls=[call(f"c{i}", f"line {i}\n" * 300)]),
                    {"id": f"e{i}", "type": "user", "content": [response(f"c{i}",
                                                                         f"line {i}\n" * 300)]}]
    records.append(gemini("last", "All read."))
    data = jsonl(*records).getvalue()
    src, out = tmp_path / "session.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    compressed, report = compress(str(src), model="gemini-2.5-pro", budget=2500,
                                  truncate=False)
    assert report.summary is not None and report.masked > 0
    write(compressed, out)
    after = load(out)
    assert after.format == "gemini-cli"
    assert [m for m in after.messages if m.text.startswith("## Archived Session Summary")]
    assert_tool_pairs(after.messages)  # no copied result outlives its call
    assert restore(str(out)) == data


def test_compress_of_the_single_document_form_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "session.json"
    src.write_text(json.dumps({**META, "messages": [user("u1", "hi"), gemini("g1", "hello")]},
                              indent=2))
    with pytest.raises(UsageError, match="JSONL form"):
        compress(str(src), model="gemini-2.5-pro", budget=10)
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]


@pytest.mark.parametrize("name", ["session-new.json", "session-new", "session-new.jsonl"])
def test_a_jsonl_recording_of_its_metadata_line_only_is_read_as_jsonl(
        tmp_path: Path, name: str) -> None:
    # the CLI writes the metadata line first; a session closed before any message is that
    # one line, whatever the file is called
    src = tmp_path / name
    src.write_text(json.dumps(META) + "\n")
    t = load(str(src))
    assert (t.format, len(t.messages), t.document) == ("gemini-cli", 0, False)
    doc = json.loads(ctxpack("stats", "--json", str(src)).out)["files"][0]
    assert (doc["format"], doc["messages"]) == ("gemini-cli", 0)
    out = tmp_path / "out"
    run = ctxpack("compress", str(src), "-o", str(out))
    assert run.code == 0, run.err
    assert run.err.splitlines() == [
        f"{src}: nothing to compress: the file holds no message that reaches the model"]
    assert out.read_bytes() == src.read_bytes()
    # the older document form, on one line, is still read as a document
    legacy = tmp_path / "session-old.json"
    legacy.write_text(json.dumps({**META, "messages": [user("u1", "hi")]}))
    assert load(str(legacy)).document


def test_a_bad_field_in_the_last_turn_is_the_problem_of_its_line() -> None:
    data = jsonl(INIT, {"type": "message", "role": "assistant", "content": "x", "delta": True},
                 {"type": "tool_use", "tool_name": "ls", "tool_id": ["no"], "parameters": {}})
    with pytest.raises(InputError) as info:
        load(data)
    assert info.value.line == 3 and "'tool_id' is an array" in info.value.problem


def test_a_line_that_is_no_recording_record_is_named() -> None:
    with pytest.raises(InputError) as info:
        load(jsonl(META, user("u1", "hi"), {"note": "pasted"}))
    assert info.value.line == 3 and "no message 'type'" in info.value.problem


@pytest.mark.parametrize(("sample", "says"), [
    ("todo-table.gemini-stream.jsonl", "Gemini CLI does not read this file back"),
    ("export-timeout.anthropic-events.jsonl", "the managed-agent API does not read this file back"),
    ("plateau-fix.gemini-cli.jsonl", None),
])
def test_compress_says_when_the_agent_reads_no_such_file(sample: str, says: str | None,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    # 600 tokens for the messages, beyond what the file's recorded calls say goes unlogged
    context = json.loads(ctxpack("stats", "--json", str(SAMPLES / sample)).out)["files"][0][
        "context"] or {}
    budget = 600 + context.get("not_in_file", 0)
    run = ctxpack("compress", str(SAMPLES / sample), "-o", str(out), "--budget", str(budget),
                  "--report-json", str(tmp_path / "report.json"))
    assert run.code == 0, run.err
    warnings = json.loads((tmp_path / "report.json").read_text())["warnings"]
    if says is None:
        assert not any("read this file back" in w for w in warnings)
        assert "read this file back" not in run.err
        return
    assert any(w.startswith(says) and f"convert {SAMPLES / sample} --to openai" in w
               for w in warnings)
    assert says in " ".join(run.err.split())
    assert restore(str(out)) == (SAMPLES / sample).read_bytes()


# --- stream-json, properties ----------------------------------------------------------------

words = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)


@st.composite
def stream_runs(draw: Any) -> tuple[list[dict[str, Any]], int, list[str]]:
    """A stream-json output: runs of a prompt and turns of text chunks and tool calls, each
    call answered (in any order); with the number of calls and each turn's text."""
    records: list[dict[str, Any]] = []
    calls, turns = 0, []
    for _ in range(draw(st.integers(1, 2))):
        model = draw(st.sampled_from(["gemini-2.5-pro", "gemini-2.5-flash"]))
        records += [{**INIT, "model": model, "session_id": draw(st.sampled_from(["s", "t"]))},
                    {"type": "message", "role": "user", "content": draw(words)}]
        for _ in range(draw(st.integers(0, 4))):
            chunks = draw(st.lists(words, min_size=1, max_size=3))
            records += [{"type": "message", "role": "assistant", "content": c, "delta": True}
                        for c in chunks]
            turns.append("".join(chunks))
            ids = [f"t-{calls + k}" for k in range(draw(st.integers(0, 3)))]
            calls += len(ids)
            records += [{"type": "tool_use", "tool_name": draw(st.sampled_from(["ls", "grep"])),
                         "tool_id": i, "parameters": {"q": draw(words)}} for i in ids]
            records += [{"type": "tool_result", "tool_id": i, "status": "success",
                         "output": draw(st.text(max_size=40))} for i in draw(st.permutations(ids))]
        records.append({"type": "result", "status": "success", "stats": {
            "input_tokens": draw(st.integers(0, 10**6)), "output_tokens": draw(st.integers(0, 999)),
            "total_tokens": 0, "cached": 0, "tool_calls": len(ids) if turns else 0}})
    return records, calls, turns


@settings(max_examples=60, deadline=None)
@given(stream_runs(), st.sampled_from([{}, {"ensure_ascii": False}]))
def test_any_stream_output_round_trips_and_pairs_every_call(run: Any, how: dict[str, Any]) -> None:
    from ctxpack.checks import validate

    records, calls, turns = run
    data = b"".join(json.dumps(r, **how).encode() + b"\n" for r in records)
    t = load(io.BytesIO(data))
    assert t.format == "gemini-stream"
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data
    assert validate(t) == []
    results = [r for m in t.messages for r in m.tool_results]
    assert len(results) == calls and all(m.role == "tool" for m in t.messages if m.tool_results)
    # the chunks of a turn are one text (turns with no call between them, one turn)
    said = [p.text for m in t.messages if m.role == "assistant" for p in m.parts
            if isinstance(p, Text)]
    assert "".join(said) == "".join(turns)
    assert len(said) <= len(turns)
    assert t.usage["input_tokens"] == sum(r["stats"]["input_tokens"] for r in records
                                          if r["type"] == "result")


@settings(max_examples=20, deadline=None)
@given(stream_runs())
def test_any_stream_output_compressed_restores_exactly(run: Any) -> None:
    from ctxpack.errors import CannotFit

    data = b"".join(json.dumps(r).encode() + b"\n" for r in run[0])
    try:
        compressed, _ = compress(io.BytesIO(data), model="gemini-2.5-pro", budget=200)
    except CannotFit:
        return
    out = io.BytesIO()
    write(compressed, out)
    assert restore([out.getvalue()]) == data
    # runs of different sessions stay apart: as many, in the same order, each with its own
    # summary at most (a resumed run goes on with its session: one summary may hold both)
    before, after = runs_of(data), runs_of(out.getvalue())
    sessions = [r[0]["session_id"] for r in before]
    if len(set(sessions)) == len(sessions):
        assert [r[0] for r in after] == [r[0] for r in before]
    assert all(sum(str(r.get("content", "")).startswith(SUMMARY_HEADING) for r in run) <= 1
               for run in after)


# --- checkpoints (`/chat save`) -------------------------------------------------------------

CHECKPOINT = SAMPLES / "gemini-checkpoint" / "checkpoint-station-case.json"


def test_the_checkpoint_sample_reads_round_trips_and_validates(tmp_path: Path) -> None:
    from ctxpack.checks import validate

    t = load(CHECKPOINT)
    assert t.format == "gemini-checkpoint"
    doc = json.loads(CHECKPOINT.read_bytes())
    calls = [p["functionCall"]["id"] for c in doc["history"] for p in c["parts"]
             if "functionCall" in p]
    assert [c.id for m in t.messages for c in m.tool_calls] == calls
    assert [r.call_id for m in t.messages for r in m.tool_results] == calls
    assert all(m.role == "tool" for m in t.messages if m.tool_results)
    assert [m.human for m in t.messages].count(True) == 2  # the session context is no person
    assert validate(t) == [] and t.outside == () and t.usage == {}
    assert [m.place for m in t.messages][:3] == ["history[0]", "history[1]", "history[2]"]
    out = tmp_path / CHECKPOINT.name
    write(t, out)
    assert out.read_bytes() == CHECKPOINT.read_bytes()


def test_thought_parts_of_a_checkpoint_are_not_context() -> None:
    doc = {"history": [{"role": "user", "parts": [{"text": "go"}]},
                       {"role": "model", "parts": [{"text": "Plan", "thought": True},
                                                   {"text": "Done."}]}]}
    t = load(io.BytesIO(json.dumps(doc).encode()))
    assert [m.text for m in t.messages] == ["go", "Done."]
    assert [m.parts for m in t.outside] == [(Thinking("Plan"),)]


@pytest.mark.parametrize(("history", "problem"), [
    ([{"role": "user", "parts": []}, {"role": "system", "parts": []}],
     "history[1] has role 'system'"),
    ([{"role": "user", "parts": []}, 7], "history[1] is a number"),
])
def test_a_broken_checkpoint_is_one_line_naming_the_entry(history: list[Any], problem: str,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "checkpoint-x.json"
    path.write_text(json.dumps({"history": history}))
    assert_clean_error(ctxpack("stats", "--format", "gemini-checkpoint", str(path)), 2,
                       f"{path}:1:", problem)


def test_parts_the_gemini_api_refuses_are_named_in_a_recording_and_a_checkpoint(
        tmp_path: Path) -> None:
    # the reader drops a Part it cannot read: the CLI would send it, and the API refuse it
    recording = tmp_path / "session-x.jsonl"
    bad = {**user("u2", ""), "content": [{"text": "see"}, {"text": 5}]}
    recording.write_bytes(jsonl(META, user("u1", "go"), gemini("g1", "ok"), bad,
                                {**gemini("g2"), "content": {"text": ["no"]}}).getvalue())
    checkpoint = tmp_path / "checkpoint-x.json"
    checkpoint.write_text(json.dumps({"history": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": 5}]}]}))
    for path, named in (
            (recording, [f"{recording}:4: content[1]: 'text' is a number, not a string",
                         f"{recording}:5: content: 'text' is an array, not a string"]),
            (checkpoint, [f"{checkpoint}:1: history[1]: parts[0]: 'text' is a number, not "
                          "a string"])):
        run = ctxpack("validate", str(path))
        assert run.code == 1 and run.out.splitlines() == named, run.out + run.err


@pytest.mark.parametrize("pretty", [False, True])
def test_a_call_without_an_id_is_named_by_its_tool_and_place_and_its_result_answers_it(
        pretty: bool, tmp_path: Path) -> None:
    # each call holds its own result, so a call without an id is answered by the result
    # beside it (not by the oldest open call), and one with none is named as a person
    # finds it: no id the reader made up
    unanswered = {"name": "ls", "args": {}}
    answered = {"name": "cat", "args": {"p": "a"}, "result": [
        {"functionResponse": {"name": "cat", "response": {"output": "x"}}}]}
    doc = {**META, "messages": [user("u1", "list"), gemini("g1", "ok", [unanswered, answered]),
                                gemini("g2", "done")]}
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps(doc, indent=2 if pretty else None))
    # (pretty: the line its item opens on, the one before its id)
    lines = path.read_text().splitlines()
    line = next(n for n, text in enumerate(lines) if '"g1"' in text) if pretty else 1
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:{line}: messages[1]: tool call ls at toolCalls[0] has no result in the "
        "transcript"], run.out
    assert "tool · cat" in ctxpack("show", str(path)).out


@pytest.mark.parametrize("ids", [True, False], ids=["cli-ids", "no-ids"])
def test_a_checkpoint_pairs_each_response_with_the_oldest_call_of_its_name(
        ids: bool, tmp_path: Path) -> None:
    # the model's calls carry no id; the CLI gives each response one of its own (or none):
    # responses were paired oldest-first, so glob's output answered read_file, or, with
    # the CLI's ids, no call at all (validate: 4 problems; convert: "no result")
    def answered(name: str, output: str) -> dict[str, Any]:
        said = {"name": name, "response": {"output": output}}
        return {"functionResponse": {"id": f"{name}-1772617204113-5b0e2c", **said} if ids
                else said}

    path = tmp_path / "checkpoint-fix.json"
    path.write_text(json.dumps({"history": [
        {"role": "user", "parts": [{"text": "fix it"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"p": "a"}}},
                                    {"functionCall": {"name": "glob", "args": {"p": "*"}}}]},
        {"role": "user", "parts": [answered("glob", "a.py"), answered("read_file", "x=1")]},
        {"role": "model", "parts": [{"text": "done"}]}]}, indent=2))
    run = ctxpack("validate", str(path))
    assert run.code == 0, run.out
    body = json.loads(ctxpack("convert", str(path), "--to", "openai").out)
    calls = {c["id"]: c["function"]["name"] for c in body["messages"][1]["tool_calls"]}
    assert {calls[m["tool_call_id"]]: m["content"] for m in body["messages"]
            if m["role"] == "tool"} == {"read_file": "x=1", "glob": "a.py"}


def test_a_result_no_call_asked_for_is_named_by_its_function(tmp_path: Path) -> None:
    # "tool result without a preceding call" named no function, where the file gives one
    checkpoint = tmp_path / "checkpoint-x.json"
    checkpoint.write_text(json.dumps({"history": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "cat", "response": {}}}]}]}))
    recording = tmp_path / "session-x.jsonl"
    mismatched = {**call("c1"), "result": [response("c2", "x")]}
    recording.write_bytes(jsonl(META, user("u1", "go"), gemini("g1", "", [mismatched]),
                                gemini("g2", "done")).getvalue())
    for path, named in (
            (checkpoint, [f"{checkpoint}:1: history[2]: tool result of cat without a "
                          "preceding call"]),
            (recording, [f"{recording}:3: tool call 'c1' (read_file) has no result in the "
                         "transcript",
                         f"{recording}:3: tool result for call 'c2' (read_file), which no "
                         "earlier assistant message made"])):
        run = ctxpack("validate", str(path))
        assert run.code == 1 and sorted(run.out.splitlines()) == sorted(named), run.out


def test_compress_of_a_checkpoint_points_to_convert(tmp_path: Path) -> None:
    from .helpers import assert_clean_error

    out = tmp_path / "out.json"
    run = ctxpack("compress", str(CHECKPOINT), "-o", str(out))
    assert_clean_error(run, 2, "compress does not rewrite Gemini CLI checkpoints",
                       f"convert {CHECKPOINT} --to openai")
    assert not out.exists()


contents = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "parts": st.lists(
        st.fixed_dictionaries({"text": st.text(max_size=20)}), max_size=2)}),
    st.fixed_dictionaries({"role": st.just("model"), "parts": st.lists(st.one_of(
        st.fixed_dictionaries({"text": st.text(max_size=20)}),
        st.fixed_dictionaries({"text": st.text(max_size=20), "thought": st.just(True)})),
        max_size=3)}))


@settings(max_examples=60, deadline=None)
@given(st.lists(contents, min_size=1, max_size=8), st.sampled_from([None, 2]),
       st.booleans())
def test_any_checkpoint_round_trips_and_keeps_thoughts_out(history: list[Any],
                                                           indent: int | None,
                                                           bare: bool) -> None:
    data = json.dumps(history if bare else {"history": history}, indent=indent).encode()
    t = load(io.BytesIO(data), "gemini-checkpoint")
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data
    thoughts = sum(1 for c in history for p in c["parts"] if p.get("thought"))
    assert sum(len(m.parts) for m in t.outside) == thoughts
    assert not any(isinstance(p, Thinking) for m in t.messages for p in m.parts)


@st.composite
def turns_of_calls(draw: Any) -> tuple[list[Any], list[tuple[str, str]]]:
    """A checkpoint's history of turns whose calls carry no id, each answered in any order
    by responses with or without an id of the CLI's; and each call's tool and output."""
    history: list[Any] = [{"role": "user", "parts": [{"text": "go"}]}]
    pairs = []
    for turn in range(draw(st.integers(1, 4))):
        names = draw(st.lists(st.sampled_from(["ls", "cat", "grep"]), min_size=1, max_size=4))
        history.append({"role": "model", "parts": [
            {"functionCall": {"name": n, "args": {"k": k}}} for k, n in enumerate(names)]})
        outputs = [(n, f"{n} {turn}.{k}") for k, n in enumerate(names)]
        pairs += outputs
        # the names' responses interleaved at will, each name's in the order of its calls
        queue = {n: [k for k, m in enumerate(names) if m == n] for n in names}
        order = [queue[names[k]].pop(0) for k in draw(st.permutations(range(len(names))))]
        history.append({"role": "user", "parts": [
            {"functionResponse": {**({"id": f"{names[k]}-{turn}-{k}"} if draw(st.booleans())
                                     else {}), "name": names[k],
                                  "response": {"output": outputs[k][1]}}} for k in order]})
    return history, pairs


@settings(max_examples=40, deadline=None)
@given(turns_of_calls())
def test_any_checkpoint_answers_each_call_with_a_response_of_its_name(
        drawn: tuple[list[Any], list[tuple[str, str]]]) -> None:
    from ctxpack.checks import validate

    history, pairs = drawn
    t = load(io.BytesIO(json.dumps({"history": history}).encode()), "gemini-checkpoint")
    assert_tool_pairs(t.messages)
    assert validate(t) == []
    calls = {c.id: c.name for m in t.messages for c in m.tool_calls}
    answers = {r.call_id: (calls[r.call_id], r.text) for m in t.messages
               for r in m.tool_results}
    assert [answers[c] for c in calls] == pairs


@pytest.mark.parametrize("messages", [{"a": 1}, "none", 5])
def test_a_recording_whose_messages_is_no_array_cannot_be_read(messages: Any,
                                                               tmp_path: Path) -> None:
    # it was read as a session of 0 messages, which validate passed
    for indent in (None, 2):
        path = tmp_path / "session-x.json"
        path.write_text(json.dumps({**META, "messages": messages}, indent=indent))
        assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:",
                           "'messages' is ", "not an array")
    path = tmp_path / "session-x.jsonl"  # a compression's `$set` of the JSONL form
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        META, user("u1", "hi"), {"$set": {"messages": messages}})))
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:3:", "not an array")


def test_tool_calls_that_are_no_array_are_named_at_their_message(tmp_path: Path) -> None:
    # they were passed over: the reply read as if it made no call
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps({**META, "messages": [
        user("u1", "hi"), gemini("g1", "reading", calls=5)]}, indent=2))  # type: ignore[arg-type]
    at = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if '"g1"' in text)
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:{at - 1}:",
                       "message 1: 'toolCalls' is a number, not an array")
    path.write_text(json.dumps({**META, "messages": [
        user("u1", "hi"), gemini("g1", "reading", calls=[call("c1", "text")])]}, indent=2))
    assert ctxpack("validate", str(path)).code == 0


def test_a_recording_that_names_no_model_is_read_and_converted_as_the_cli_s_default(
        tmp_path) -> None:
    # Gemini CLI runs gemini-2.5-pro where none is set: a body names that, a model the API
    # serves (not the family "gemini"), and stats says it was assumed
    path = tmp_path / "session.jsonl"
    path.write_bytes(jsonl(META, user("u1", "first"), user("u2", "again")).getvalue())
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(path), "--to", "openai", "-o", str(out))
    assert run.code == 0, run.err
    assert json.loads(out.read_text())["model"] == "gemini-2.5-pro"
    entry = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert entry["model"] == "gemini-2.5-pro" and "assumed" in entry["note"]


@pytest.mark.parametrize("pretty", [False, True])
def test_fields_of_the_wrong_type_are_named_at_their_message(pretty: bool,
                                                              tmp_path: Path) -> None:
    # they were passed over without a word: usage, thoughts and calls read as absent, a
    # null Part dropped from what the CLI would send
    records = [user("u1", "hi"),
               gemini("g1", "ok", tokens=[1, 2], thoughts={}),  # type: ignore[arg-type]
               gemini("g2", "ok", calls=[5], thoughts=[7]),  # type: ignore[list-item]
               {**user("u2", ""), "content": [{"text": "a"}, None]},
               {**user("u3", ""), "content": 5}]
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps({**META, "messages": records}, indent=2 if pretty else None))
    lines = path.read_text().splitlines()

    def at(ident: str) -> int:  # the line its item opens on (pretty: the one before its id)
        return next(n for n, text in enumerate(lines) if f'"{ident}"' in text) if pretty else 1

    run = ctxpack("validate", str(path))
    # (in order of line; on one line, the unreadable usage after what its messages hold)
    assert run.code == 1 and sorted(run.out.splitlines()) == sorted([
        f"{path}:{at('g1')}: messages[1]: 'thoughts' is an object, not an array",
        f"{path}:{at('g1')}: messages[1]: recorded usage that cannot be read: 'tokens' is an "
        "array, not an object; left out",
        f"{path}:{at('g2')}: messages[2]: thoughts[0] is a number, not an object",
        f"{path}:{at('g2')}: messages[2]: toolCalls[0] is a number, not an object",
        f"{path}:{at('u2')}: messages[3]: content[1] is null, not a Part",
        f"{path}:{at('u3')}: messages[4]: 'content' is a number, not a string, Part or array",
    ]), run.out + run.err
    assert ctxpack("stats", str(path)).code == 0
    # the usage is listed as unread, in the words and at the place validate gives
    assert json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0][
        "usage_unread"] == [{"line": at("g1"), "place": f"line {at('g1')} messages[1]"
                             if pretty else "messages[1]", "problem": next(
                                 x for x in run.out.splitlines() if "cannot be read" in x)
                             .split(": ", 1)[1]}]


def test_tool_calls_of_a_string_are_one_line_naming_the_message(tmp_path: Path) -> None:
    path = tmp_path / "session-x.jsonl"
    path.write_bytes(jsonl(META, user("u1", "hi"), gemini("g1", "x", calls="oops")).getvalue())  # type: ignore[arg-type]
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:3:",
                       "'toolCalls' is a string, not an array")


def test_results_a_user_message_repeats_without_an_id_are_paired_by_name_and_count_once(
        ) -> None:
    # the copies named no call, so each was counted again and named "without a call"
    def answered(name: str, output: str) -> dict[str, Any]:
        return {"functionResponse": {"name": name, "response": {"output": output}}}

    calls = [{"name": "cat", "args": {"p": 1}, "result": [answered("cat", "one " * 40)]},
             {"name": "ls", "args": {}, "result": [answered("ls", "a b")]},
             {"name": "cat", "args": {"p": 2}, "result": [answered("cat", "two " * 40)]}]
    echo = {"id": "e1", "type": "user", "content": [
        answered("ls", "a b"), answered("cat", "one " * 40), answered("cat", "two " * 40)]}
    t = load(jsonl(META, user("u1", "read"), gemini("g1", calls=calls), echo,
                   gemini("g2", "done")))
    from ctxpack.checks import validate

    assert validate(t) == []
    assert [m.role for m in t.outside] == ["tool"]  # the copy, in the file, not counted
    ids = {c.name + c.arguments: c.id for m in t.messages for c in m.tool_calls}
    (copy,) = t.outside
    assert [r.call_id for r in copy.tool_results] == [
        ids["ls{}"], ids['cat{"p":1}'], ids['cat{"p":2}']]
    results = [r.text for m in t.messages for r in m.tool_results]
    assert results == ["one " * 40, "a b", "two " * 40]


def _answered_then_echoed() -> tuple[dict[str, Any], ...]:
    """A reply whose call `cat` is answered, the person's message that repeats its result
    without an id, and a later reply whose call of the same name has no result yet."""
    def answered(output: str) -> dict[str, Any]:
        return {"functionResponse": {"name": "cat", "response": {"output": output}}}

    first = gemini("g1", calls=[{"name": "cat", "args": {"p": 1},
                                 "result": [answered("one " * 40)]}])
    echo = {"id": "e1", "type": "user", "content": [answered("one " * 40)]}
    pending = gemini("g2", calls=[{"name": "cat", "args": {"p": 2}}])
    return first, echo, pending


def test_a_repeated_result_without_an_id_read_again_by_set_keeps_its_own_call() -> None:
    # `$set` reads the list again: a result its user message repeats without an id was
    # paired with the oldest open call of its name, by then a later call (its own was
    # answered), and counted again as that call's
    first, echo, pending = _answered_then_echoed()
    records = [META, user("u1", "read"), first, echo, pending]
    plain = load(jsonl(*records))
    again = load(jsonl(*records, {"$set": {"messages": records[1:]}}))
    from ctxpack.checks import validate

    for t in (plain, again):
        ids = {c.arguments: c.id for m in t.messages for c in m.tool_calls}
        copies = [m for m in t.outside if m.role == "tool"]
        assert copies and all(r.call_id == ids['{"p":1}'] for m in copies
                              for r in m.tool_results)
        assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    for t in (plain, again):  # the pending call alone is unanswered
        assert [p.message.rsplit(": ", 1)[-1] for p in validate(t)] == [
            "tool call cat at toolCalls[0] has no result in the transcript"]
    assert stats(again).tokens == stats(plain).tokens


def test_a_repeated_result_without_an_id_written_again_keeps_its_own_call(
        tmp_path: Path) -> None:
    # the CLI writes a message again under its id whenever it changes: the result the
    # rewritten user message repeats without an id answers the call it answered, not
    # the later open call of its name (which it took, and was counted again as)
    first, echo, pending = _answered_then_echoed()
    paths = [tmp_path / "plain.jsonl", tmp_path / "again.jsonl"]
    paths[0].write_bytes(jsonl(META, user("u1", "read"), first, echo, pending).getvalue())
    paths[1].write_bytes(jsonl(META, user("u1", "read"), first, echo, pending, echo).getvalue())
    plain, again = (load(p) for p in paths)
    from ctxpack.checks import validate

    for t in (plain, again):
        ids = {c.arguments: c.id for m in t.messages for c in m.tool_calls}
        echoed = [r.call_id for m in t.read if m.role == "tool" and m.line >= 4
                  for r in m.tool_results]
        assert echoed and set(echoed) == {ids['{"p":1}']}, echoed
        assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
        assert [p.message.rsplit(": ", 1)[-1] for p in validate(t)] == [
            "tool call cat at toolCalls[0] has no result in the transcript"]
    assert stats(again).tokens == stats(plain).tokens
    # the whole log holds the result once, as its call's, and the pending call's alone is
    # the placeholder convert gives a call with no result
    plain_log, again_log = (json.loads(ctxpack("convert", str(p), "--all", "--to", "openai")
                                       .out)["messages"] for p in paths)
    assert again_log == plain_log
    assert [m.get("tool_call_id") for m in again_log if m["role"] == "tool"] == [
        again_log[1]["tool_calls"][0]["id"], again_log[3]["tool_calls"][0]["id"]]


@pytest.mark.parametrize(("records", "problem", "paired"), [
    # the CLI gives every call and result its call's id, and writes results as the calls
    # finish: pairing one without an id with the oldest open call is a guess, said so
    (({**INIT, "session_id": "s"}, {"type": "message", "role": "user", "content": "go"},
      {"type": "tool_use", "tool_name": "ls", "tool_id": "ls-1", "parameters": {}},
      {"type": "tool_result", "status": "success", "output": "a b"}),
     "4: tool_result without a 'tool_id' (Gemini CLI writes its call's, and writes results "
     "as their calls finish): taken for the oldest call not yet answered, 'ls-1' (ls), "
     "which may not be its own", {"ls-1": "a b"}),
    # the result names an id its call did not write: both were left unpaired (a result of
    # no call, a call of no result); the oldest call without an id is taken, said so
    ((INIT, {"type": "message", "role": "user", "content": "go"},
      {"type": "tool_use", "tool_name": "cat", "tool_id": "cat-1", "parameters": {"p": 1}},
      {"type": "tool_use", "tool_name": "ls", "parameters": {}},
      {"type": "tool_result", "tool_id": "ls-9", "status": "success", "output": "a b c d"},
      {"type": "tool_result", "tool_id": "cat-1", "status": "success", "output": "meow"},
      {"type": "message", "role": "assistant", "content": "done"}),
     "5: tool_result of tool_id 'ls-9', which no tool_use gave (Gemini CLI writes each "
     "call's): taken for the oldest call not yet answered that has none, ls, which may not "
     "be its own", {"ls": "a b c d", "cat-1": "meow"}),
], ids=["result-of-no-id", "call-of-no-id"])
def test_a_stream_result_of_no_known_call_is_paired_with_the_oldest_open_call_and_named(
        tmp_path: Path, records: tuple[dict[str, Any], ...], problem: str,
        paired: dict[str, str]) -> None:
    path = _stream_file(tmp_path, *records)
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [f"{path}:{problem}"], run.out
    # each result after its call, the call named by its id, or its tool where it had none
    body = json.loads(ctxpack("convert", str(path), "--to", "openai").out)
    names = {c["id"]: c["id"] if c["id"] in paired else c["function"]["name"]
             for m in body["messages"] for c in m.get("tool_calls", ())}
    assert {names[m["tool_call_id"]]: m["content"] for m in body["messages"]
            if m["role"] == "tool"} == paired
    tools = stats(path).by_tool  # (each result counted under its call's tool)
    assert len(tools) == len(paired) and all(t.result_tokens > 0 for t in tools.values())


def _stream_file(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_stream_file_opening_inside_a_run_is_read_as_that_run(tmp_path: Path) -> None:
    # the sample without its init line: the tail of a run, not an empty file
    lines = (SAMPLES / "todo-table.gemini-stream.jsonl").read_text().splitlines(keepends=True)
    assert json.loads(lines[0])["type"] == "init"
    whole = load(SAMPLES / "todo-table.gemini-stream.jsonl")
    path = tmp_path / "tail.jsonl"
    path.write_text("".join(lines[1:]))
    tail = load(path)
    assert [m.text for m in tail.messages] == [m.text for m in whole.messages]
    assert tail.model is None and stats(tail).tokens == stats(whole).tokens
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines()[0] == (
        f"{path}:1: no `init` event before this one (the file opens inside a run, its tail?): "
        "read as a run whose model the file does not name"), run.out
    said = ctxpack("stats", str(path))
    assert said.code == 0 and "the file names no model, so" in said.out, said.out
    assert ctxpack("stats", str(path), "--max-tokens", "10").code == 1  # over budget
    body = json.loads(ctxpack("convert", str(path), "--to", "openai").out)
    assert [m["role"] for m in body["messages"]][:2] == ["user", "assistant"]


def test_a_harness_prompt_before_the_init_stays_outside_and_a_tail_run_is_a_conversation(
        ) -> None:
    note = {"type": "message", "role": "user", "content": "harness note"}
    chunk = {"type": "message", "role": "assistant", "content": "done", "delta": True}
    done = {"type": "result", "status": "success", "stats": {}}
    t = load(jsonl(note, INIT, {"type": "message", "role": "user", "content": "one"}, done))
    assert [m.text for m in t.messages] == ["one"] and not t.problems
    # said by what the file holds: no result comes before the note
    assert stats(t).to_dict()["outside"]["why"] == "outside a run: before the first `init`"
    tail = load(jsonl(note, chunk, done, INIT,
                      {"type": "message", "role": "user", "content": "two"}, done))
    assert [(m.text, m.conversation) for m in tail.messages] == \
        [("harness note", 0), ("done", 0), ("two", 1)]
    assert [line for line, _ in tail.problems] == [1] and stats(tail).conversations == 2


@pytest.mark.parametrize(("odd", "problem"), [
    ({"type": "banana", "x": 1}, "an event of type 'banana', which Gemini CLI does not write "
     "(it writes error, init, message, result, tool_result, tool_use): kept in the file, "
     "not read"),
    ({"type": "message", "role": "assistant", "content": {"x": 1}, "delta": True},
     "'content' is an object, not a string (the message's text)"),
    ({"type": "message", "role": "system", "content": "be brief"},
     "a message of role 'system': Gemini CLI writes user and assistant messages, read as "
     "system"),
    ({"type": "tool_use", "tool_name": "ls", "tool_id": "ls-2", "parameters": "-la"},
     "'parameters' is a string, not an object (the call's arguments)"),
], ids=["unknown-type", "content-object", "role-system", "parameters-string"])
def test_a_stream_event_the_cli_does_not_write_is_kept_and_named(
        tmp_path: Path, odd: dict[str, Any], problem: str) -> None:
    path = _stream_file(
        tmp_path, INIT, {"type": "message", "role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": "Look", "delta": True}, odd,
        {"type": "message", "role": "assistant", "content": "ing.", "delta": True},
        {"type": "tool_use", "tool_name": "ls", "tool_id": "ls-1", "parameters": {}},
        {"type": "tool_result", "tool_id": "ls-1", "status": "success", "output": "a"},
        *([{"type": "tool_result", "tool_id": "ls-2", "status": "success", "output": "b"}]
          if odd["type"] == "tool_use" else []))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [f"{path}:4: {problem}"], run.out
    t = load(path)
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == path.read_bytes()
    # the lines around it are read as ever: the calls are paired, the person's words kept
    assert [c.id for m in t.messages for c in m.tool_calls][-1] == "ls-1"
    assert t.messages[0].text == "go" and t.messages[0].human


def test_a_recording_message_of_a_type_the_cli_does_not_write_is_kept_and_named(
        tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        META, user("u1", "hello"), {"id": "x", "type": "wizard", "content": "zap"},
        {"id": "i", "type": "info", "content": "a notice"}, gemini("g1", "hi"))))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:3: a message of type 'wizard', which Gemini CLI does not write (it writes "
        "error, gemini, info, user, warning): kept in the file, not read"], run.out
    t = load(path)
    assert [m.text for m in t.messages] == ["hello", "hi"]
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == path.read_bytes()


@pytest.mark.parametrize("source", ["sample", *CHAT])
def test_convert_all_of_a_recording_holds_each_message_once(source: Any) -> None:
    # the JSONL writes a message again whenever it changes, and results again as the next
    # user message: the whole log is every message of the file, each in its last copy
    path = SAMPLES / "plateau-fix.gemini-cli.jsonl" if source == "sample" else source
    run = ctxpack("convert", str(path), "--all", "--to", "openai")
    assert run.code == 0, run.err
    assert "without a result" not in run.err and "answer no open call" not in run.err, run.err
    body = json.loads(run.out)
    calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls", ())]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert sorted(calls) == sorted(answered) and len(set(calls)) == len(calls)
    t = load(path)
    records = [m.raw for m in (*t.messages, *t.outside)]
    replies = {r["id"] for r in records if r.get("type") == "gemini"}
    # every reply of the file, once (a reply of thoughts alone has nothing to send)
    said = [m for m in body["messages"] if m["role"] == "assistant"]
    assert len(said) == len({r["id"] for r in records if r.get("type") == "gemini" and (
        r.get("content") or r.get("toolCalls"))}) <= len(replies)
    # the context is the last copy of each: converting it gives the same replies, fewer
    # only by those rewound
    context = json.loads(ctxpack("convert", str(path), "--to", "openai").out)
    assert len([m for m in context["messages"] if m["role"] == "assistant"]) <= len(said)


def _echo(ident: str, output: str) -> dict[str, Any]:
    """A user message repeating a read_file result without its id, as a file may."""
    return {"id": ident, "timestamp": "t", "type": "user", "content": [
        {"functionResponse": {"name": "read_file", "response": {"output": output}}}]}


@pytest.mark.parametrize("written", ["all again", "head, then the rest", "only"])
def test_a_result_without_an_id_in_a_set_pairs_with_its_own_call(written: str,
                                                                 tmp_path: Path) -> None:
    # a `$set` list is the history from its start: a repeated result without an id pairs
    # with the call before it, not with a later call of its name (the earlier copy had
    # answered its own call), and counts once, as in the file written line by line
    u1, g3 = user("u1", "read a, then b"), gemini("g3", "done")
    g1, e1 = gemini("g1", calls=[call("a", "AAA")]), _echo("e1", "AAA")
    g2, e2 = gemini("g2", calls=[call("b", "BBB")]), _echo("e2", "BBB")
    lines = {"all again": [u1, g1, e1, g2, e2, {"$set": {"messages": [u1, g1, e1, g2, e2]}}],
             "head, then the rest": [u1, g1, e1, g2, {"$set": {"messages": [u1, g1, e1, g2]}},
                                     e2],
             "only": [{"$set": {"messages": [u1, g1, e1, g2, e2]}}]}[written]

    def read(*records: dict[str, Any]) -> tuple[list[Any], int]:
        path = tmp_path / "session.jsonl"
        path.write_bytes(jsonl(META, *records, g3).getvalue())
        said = [(m.role, m.text, [p.call_id for p in m.tool_results],
                 [c.id for c in m.tool_calls]) for m in load(path).messages]
        return said, json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["tokens"]

    plain = read(u1, g1, e1, g2, e2)
    assert [r for _, _, r, _ in plain[0] if r] == [["a"], ["b"]]
    assert read(*lines) == plain


@pytest.mark.parametrize("source", ["sample", *CHAT])
def test_convert_all_puts_a_replys_thoughts_before_what_it_said(source: Any) -> None:
    # a reply's record holds its thoughts, its text and calls, and the calls' results: the
    # whole log has them in that order, as the model produced them (the thoughts, outside
    # the context, came after the reply)
    path = SAMPLES / "plateau-fix.gemini-cli.jsonl" if source == "sample" else source
    run = ctxpack("convert", str(path), "--all", "--to", "markdown")
    assert run.code == 0, run.err
    kinds: dict[str, list[int]] = {}  # a record's place -> its sections' kinds, in order
    for section in run.out.split("\n### ")[1:]:
        heading, _, body = section.partition("\n")
        place, role = heading.split(" · ")[:2]
        kind = 0 if body.lstrip().startswith("*thinking*") else 1 if role == "assistant" else 2
        kinds.setdefault(place, []).append(kind)
    thought = [k for k in kinds.values() if 0 in k and 1 in k]
    assert thought  # (the file has replies that thought and said something)
    assert all(k == sorted(k) for k in kinds.values()), kinds
