"""Places in whole-file JSON documents: a field error names the line its item starts on in
the pretty-printed file and the item's index; a pretty document is read as one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxpack.errors import InputError
from ctxpack.loader import load

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack

META = {"sessionId": "s-1", "projectHash": "ab" * 32, "startTime": "2026-03-03T09:00:00.000Z"}


def item_line(items: list[Any], k: int, opening: int) -> int:
    """The line item k of an array dumped with indent=2 starts on, where the array's first
    item is on line `opening` + 1 (each item's own lines do not depend on its depth)."""
    return opening + 1 + sum(json.dumps(x, indent=2).count("\n") + 1 for x in items[:k])


def document(kind: str) -> tuple[Any, list[Any], int]:
    """A document of `kind`: the document, the array holding its items, and the line
    before the first item when it is dumped with indent=2."""
    if kind == "cline":
        items = json.loads((SAMPLES / "cline-task/api_conversation_history.json").read_text())
        return items, items, 1
    if kind == "cline-ui":
        items = json.loads((SAMPLES / "cline-task/ui_messages.json").read_text())
        return items, items, 1
    if kind == "anthropic-array":
        items = json.loads((SAMPLES / "anthropic-array/late-orders.anthropic-array.json")
                           .read_text())
        return items, items, 1
    if kind == "gemini-cli":
        items = [{"id": f"m{n}", "timestamp": "t", "type": "user" if n % 2 == 0 else "gemini",
                  "content": [{"text": f"line {n}\nand more"}]} for n in range(6)]
        return {"messages": items, **META}, items, 2
    if kind == "json-messages":
        return {"messages": CHAT}, CHAT, 2
    assert kind == "gemini-checkpoint"
    doc = json.loads((SAMPLES / "gemini-checkpoint/checkpoint-station-case.json").read_text())
    return doc, doc["history"], 2


def broken(kind: str) -> tuple[Any, list[Any], int, int, str]:
    """A document of `kind` whose item k has a field of the wrong type: the document, the
    array holding the items, k, the line before the first item, and the words naming it."""
    doc, items, opening = document(kind)
    if kind == "cline":
        items[7]["condenseId"] = [1]
        return doc, items, 7, opening, "message 7: 'condenseId' is an array"
    if kind == "cline-ui":
        items[9]["modelInfo"] = {"modelId": 5}
        return doc, items, 9, opening, "event 9: 'modelId' is a number"
    if kind == "anthropic-array":
        items[7]["content"][0]["id"] = ["toolu_1"]
        return doc, items, 7, opening, "message 7: 'id' is an array"
    if kind == "gemini-cli":
        items[5]["model"] = {"name": "gemini-2.5-pro"}
        return doc, items, 5, opening, "message 5: 'model' is an object"
    assert kind == "gemini-checkpoint"
    items[7]["parts"][0]["functionCall"]["id"] = 7
    return doc, items, 7, opening, "history[7]: 'id' is a number"


DOCUMENTS = ["cline", "cline-ui", "anthropic-array", "gemini-cli", "gemini-checkpoint"]
NAMES = {"cline": "api_conversation_history.json", "cline-ui": "ui_messages.json"}


@pytest.mark.parametrize("kind", DOCUMENTS)
def test_a_field_error_names_the_line_and_index_of_its_item(kind, tmp_path):
    doc, items, k, opening, words = broken(kind)
    path = tmp_path / NAMES.get(kind, "doc.json")
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(InputError) as caught:
        load(str(path))
    line = item_line(items, k, opening)
    assert line > 10  # far from line 1, where it was said to be
    assert (caught.value.line, words in caught.value.problem) == (line, True), caught.value
    # the same document on one line: line 1, and the index still finds it
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as caught:
        load(str(path))
    assert (caught.value.line, words in caught.value.problem) == (1, True), caught.value


def test_the_command_line_names_file_line_and_item(tmp_path):
    doc, items, k, opening, words = broken("cline")
    path = tmp_path / NAMES["cline"]
    path.write_text(json.dumps(doc, indent=2))
    for command in ("stats", "show", "validate"):
        assert_clean_error(ctxpack(command, str(path)), 2,
                           f"{path}:{item_line(items, k, opening)}: ", words)


@pytest.mark.parametrize("kind", [*DOCUMENTS, "json-messages"])
def test_show_and_stats_name_the_line_and_index_of_each_item(kind, tmp_path):
    # show and stats said `[3]` of a pretty-printed document, whose item 3 is far below
    doc, items, opening = document(kind)
    path = tmp_path / NAMES.get(kind, "doc.json")
    path.write_text(json.dumps(doc, indent=2))
    t = load(str(path))
    assert t.format == kind
    index = re.compile(r"\[(\d+)\]$")
    expected = []
    for m in t.messages:
        k = int(index.search(m.place).group(1))  # type: ignore[union-attr]
        line = item_line(items, k, opening)
        assert m.where == f"line {line} {m.place}", m.where
        expected.append((m, line))
    assert max(line for _, line in expected) > 10
    shown = ctxpack("show", "--no-pager", "--full", str(path))
    assert shown.code == 0, shown.err
    starts = [ln for ln in shown.out.splitlines() if ln.startswith("line ")]
    assert [ln.split("  ")[0] for ln in starts] == [m.where for m, _ in expected]
    run = ctxpack("stats", "--json", "--top", "100", str(path))
    assert run.code == 0, run.err
    f = json.loads(run.out)["files"][0]
    where = {m.where: line for m, line in expected}
    assert f["largest"] and all(where[x["place"]] == x["line"] for x in f["largest"])
    assert all(where[r["place"]] == r["line"] for r in f["round_tokens"])
    table = ctxpack("stats", "--top", "100", str(path)).out
    assert all(place in table for place in where)
    page = ctxpack("convert", str(path), "--to", "markdown")
    assert page.code == 0, page.err
    assert all(f"{place} · " in page.out for place in where)
    # the same document on one line names each message by its place alone
    path.write_text(json.dumps(doc))
    assert [m.where for m in load(str(path)).messages] == [m.place for m, _ in expected]


def write_pretty(path: Path, doc: dict[str, Any], key: str) -> None:
    """`doc` written as some tools pretty-print it: the first line opens its `key` list,
    one item a line after it."""
    rest = {k: v for k, v in doc.items() if k != key}
    lines = [f'{{"{key}": [']
    lines += [f"  {json.dumps(m)}," for m in doc[key]]
    lines[-1] = lines[-1].rstrip(",")
    lines.append("]" + "".join(f",\n{json.dumps(k)}: {json.dumps(v)}" for k, v in rest.items())
                 + "\n}\n")
    path.write_text("\n".join(lines))


def test_each_message_of_an_opencode_tree_is_placed_at_its_own_file():
    from .test_format_opencode_storage import INFO, TREE

    t = load(INFO)
    session = json.loads(INFO.read_text())["id"]
    assert [m.place for m in t.messages] == [f"{m.id}.json" for m in t.messages]
    assert all((TREE / "message" / session / m.place).is_file() for m in t.messages)
    assert len({m.place for m in t.messages}) > 5
    run = ctxpack("show", str(TREE))
    assert run.code == 0, run.err
    assert "line 1 " not in run.out
    assert f"{t.messages[0].id}.json  user" in run.out


def test_each_message_of_an_opencode_db_is_placed_at_its_row(tmp_path):
    from .test_format_opencode_storage import EXPORT, make_db

    t = load(make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db"))
    assert [m.place for m in t.messages] == [f"message {m.id}" for m in t.messages]
    assert len({m.place for m in t.messages}) > 5


CHAT = [{"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "The parser drops the last row."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": "{\"cmd\": \"cat parse.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "rows = data[:-1]"},
        {"role": "assistant", "content": "The slice drops it; `data[:]` keeps it."}]


@pytest.mark.parametrize("key", ["messages", "history"])
def test_a_document_whose_first_line_opens_its_list_is_read_whole(key, tmp_path):
    # an OpenAI-style document of messages, and a SWE-agent trajectory, pretty-printed
    # with the list opened on the first line
    doc = {key: CHAT, "info": {"model_stats": {"api_calls": 1}}}
    path = tmp_path / "run.json"
    write_pretty(path, doc, key)
    assert path.read_text().splitlines()[0] == f'{{"{key}": ['
    t = load(str(path))
    assert (t.format, t.document) == ("json-messages", True)
    assert [m.role for m in t.messages] == [m["role"] for m in CHAT]
    # each item on a line of its own, after the one that opens the list
    assert [m.where for m in t.messages] == [f"line {i + 2} {key}[{i}]"
                                             for i in range(len(CHAT))]
    assert path.read_bytes() == b"".join(r.raw for r in t.records)
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    assert json.loads(run.out)["files"][0]["messages"] == len(CHAT)


def test_such_a_document_under_a_line_formats_name_says_it_is_one_document(tmp_path):
    # `--format openai` read it a line at a time: "malformed JSON at column 2"
    path = tmp_path / "run.json"
    write_pretty(path, {"messages": CHAT}, "messages")
    for flags in ([], ["--skip-invalid"]):
        run = ctxpack("stats", "--format", "openai", *flags, str(path))
        assert_clean_error(run, 2, f"{path}:1: one JSON document over many lines",
                           "--format openai", "drop --format")
        assert "malformed" not in run.err
    assert load(str(path), "json-messages").format == "json-messages"


def test_a_later_syntax_error_in_such_a_document_names_its_own_line(tmp_path):
    path = tmp_path / "run.json"
    write_pretty(path, {"messages": CHAT}, "messages")
    lines = path.read_text().splitlines()
    lines[4] = lines[4].replace('"tool_call_id":', '"tool_call_id"')
    path.write_text("\n".join(lines) + "\n")
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:5: malformed JSON")


def test_a_jsonl_file_whose_first_line_is_cut_is_still_read_a_line_at_a_time(tmp_path):
    path = tmp_path / "run.jsonl"
    lines = [json.dumps(m) for m in CHAT]
    path.write_text("\n".join([lines[1][:-1], *lines[2:]]) + "\n")
    with pytest.raises(InputError) as caught:
        load(str(path))
    assert caught.value.line == 1
    t = load(str(path), skip_invalid=True)
    assert ([s.line for s in t.skipped], len(t.messages)) == ([1], len(CHAT) - 2)


def test_the_messages_of_one_line_are_placed_in_it(tmp_path):
    # an OpenHands output.jsonl holds a whole run a line: "line 1" told no message apart;
    # each is at its event, as in a trajectory and as validate names a problem of it
    sample = SAMPLES / "openhands/env-flags.openhands.jsonl"
    t = load(str(sample))
    events = json.loads(sample.read_bytes())["history"]
    places = [m.where for m in t.messages]
    assert len(set(places)) == len(places) > 5
    for m, where in zip(t.messages, places, strict=True):
        index = int(where.removeprefix("line 1 event "))
        assert m.raw == events[index]
    run = ctxpack("show", str(sample))
    assert run.code == 0, run.err
    assert "line 1 event 0  system" in run.out
    # a file of one message a line keeps its lines
    chat = load(str(SAMPLES / "support-chat.openai.jsonl")).messages
    assert [m.where for m in chat] == [f"line {m.line:,}" for m in chat]


@pytest.mark.parametrize("kind", ["anthropic-array", "cline"])
def test_validate_names_the_line_a_problem_messages_item_starts_on(kind, tmp_path):
    # validate said `FILE:1: [3]: ...` of a pretty-printed document, whose item 3 is far below
    if kind == "anthropic-array":
        items = json.loads((SAMPLES / "anthropic-array/late-orders.anthropic-array.json")
                           .read_text())
        k = next(i for i, m in enumerate(items) if i >= 3 and isinstance(m["content"], list))
        del items[k]["content"][0]["type"]
        path = tmp_path / "doc.json"
    else:
        items = json.loads((SAMPLES / "cline-task/api_conversation_history.json").read_text())
        k = len(items) - 2
        items[k]["content"] = 5
        path = tmp_path / NAMES["cline"]
    path.write_text(json.dumps(items, indent=2))
    line = item_line(items, k, 1)
    assert line > 10
    run = ctxpack("validate", "--json", str(path))
    found = [p for p in json.loads(run.out)["files"][0]["problems"]
             if p["problem"].startswith(f"[{k}]: ")]
    assert found and {p["line"] for p in found} == {line}, run.out
    run = ctxpack("validate", str(path))
    assert f"{path}:{line}: [{k}]: " in run.out + run.err
    # the document on one line: line 1, and the place still finds the item
    path.write_text(json.dumps(items))
    run = ctxpack("validate", "--json", str(path))
    found = [p for p in json.loads(run.out)["files"][0]["problems"]
             if p["problem"].startswith(f"[{k}]: ")]
    assert found and {p["line"] for p in found} == {1}, run.out


def usage_doc(kind: str, bad: Any) -> tuple[Any, list[Any], int, int, str]:
    """A document of `kind` whose usage of item k is `bad`: the document, its items, k,
    the line before the first item, and the place naming the item."""
    doc, items, opening = document(kind)
    if kind == "cline-ui":
        k = max(n for n, e in enumerate(items) if e.get("say") == "api_req_started")
        info = json.loads(items[k]["text"])
        info["tokensIn"] = bad
        items[k]["text"] = json.dumps(info)
        return doc, items, k, opening, f"event {k}"
    for n, m in enumerate(items):
        if m["type"] == "gemini":
            m["tokens"] = {"input": 1_000 + n, "output": 50}
    k = len(items) - 1
    items[k]["tokens"]["input"] = bad
    return doc, items, k, opening, f"messages[{k}]"


@pytest.mark.parametrize("bad", ["lots", 10**30], ids=["text", "too-large"])
@pytest.mark.parametrize("kind", ["cline-ui", "gemini-cli"])
def test_usage_set_aside_is_named_at_its_items_line_and_place(kind, bad, tmp_path):
    # usage that cannot be true was placed at `line 1` of a pretty-printed document (and
    # a count too large to be true did not even name its item)
    doc, items, k, opening, place = usage_doc(kind, bad)
    path = tmp_path / NAMES.get(kind, "g.json")
    path.write_text(json.dumps(doc, indent=2))
    line = item_line(items, k, opening)
    assert line > 10
    run = ctxpack("validate", str(path))
    assert run.code == 1, run
    said = [x for x in run.out.splitlines() if "cannot be true" in x]
    assert len(said) == 1 and said[0].startswith(f"{path}:{line}: {place}: recorded "), run.out
    f = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [(x["line"], x["place"]) for x in f["usage_set_aside"]] == [
        (line, f"line {line} {place}")]
    assert f"line {line} {place}" in ctxpack("stats", str(path)).out
    # on one line: line 1, the place still names the item
    path.write_text(json.dumps(doc))
    run = ctxpack("validate", str(path))
    assert f"{path}:1: {place}: recorded " in run.out, run.out


def test_a_cline_tasks_usage_is_named_in_its_ui_log(tmp_path):
    # validate of the task said `api_conversation_history.json:1:` of usage that is in
    # the ui_messages.json beside it
    doc, items, k, opening, place = usage_doc("cline-ui", "lots")
    (tmp_path / NAMES["cline-ui"]).write_text(json.dumps(doc, indent=2))
    history = tmp_path / NAMES["cline"]
    history.write_bytes((SAMPLES / "cline-task" / NAMES["cline"]).read_bytes())
    line = item_line(items, k, opening)
    for given in (tmp_path, history):
        run = ctxpack("validate", str(given))
        said = [x for x in run.out.splitlines() if "cannot be true" in x]
        assert said == [f"{tmp_path / NAMES['cline-ui']}:{line}: {place}: recorded usage "
                        "cannot be true: tokensIn 'lots' (a token count is a whole number, "
                        "zero or more); set aside, not used for the bill or the window"], run.out
    problems = json.loads(ctxpack("validate", "--json", str(history)).out)["files"][0][
        "problems"]
    assert [(p["file"], p["line"]) for p in problems if "cannot be true" in p["problem"]] == [
        (str(tmp_path / NAMES["cline-ui"]), line)]
    stats = ctxpack("stats", str(history)).out
    assert f"ui_messages.json line {line} {place}" in stats, stats
