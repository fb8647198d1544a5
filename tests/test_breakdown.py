"""stats: totals, roles, tools, largest, rounds, gates and every output format."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from ctxpack import load, stats
from ctxpack.tokens import TokenCounter
from ctxpack.view import view_file

from .conftest import SAMPLES, corpus_params
from .helpers import ctxpack, unnamed_openhands

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":\".\"}"}},
        {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": "{\"f\":\"a\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py\n" * 50},
    {"role": "tool", "tool_call_id": "c2", "content": "print('hello')"},
    {"role": "assistant", "content": "Two files."},
    {"role": "user", "content": "Thanks!"},
]


@pytest.fixture
def chat(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in CHAT))
    return path


def test_numbers_add_up(exact_tokens, chat):
    s = stats(chat, top=3)
    counter = TokenCounter("gpt-4o")
    expected = counter.messages(load(chat).messages)
    assert s.tokens == expected
    assert sum(s.by_role.values()) == s.tokens  # the priming is a row of its own
    assert s.by_role["priming"] == 3
    assert s.messages == 7 and len(s.rounds) == 3 and s.steps == 2
    assert [r.number for r in s.rounds] == [0, 1, 2]
    # the cumulative context includes the reply priming, so the last round's is the total
    assert s.rounds[-1].cumulative == s.tokens
    assert [r.cumulative for r in s.rounds] == [
        sum(r.tokens for r in s.rounds[:n + 1]) + 3 for n in range(3)]
    # results are attributed to the tool that was called
    assert s.by_tool["ls"].calls == 1 and s.by_tool["ls"].result_tokens > s.by_tool["cat"].tokens
    assert s.largest[0].line == 4 and s.largest[0].tool == "ls" and len(s.largest) == 3
    assert s.context_window == 128_000 and s.exact


def test_streamed_and_loaded_stats_agree(exact_tokens, chat):
    assert stats(chat).to_dict() == stats(load(chat)).to_dict()


def test_model_flag_changes_encoding_and_window(exact_tokens, chat):
    s = stats(chat, "gpt-4")
    assert (s.encoding, s.context_window, s.model) == ("cl100k_base", 8192, "gpt-4")


def test_json_schema(exact_tokens, chat):
    twin = chat.with_name("twin.jsonl")
    twin.write_bytes(chat.read_bytes())
    # a file named twice (here by name and by its folder) is counted once
    run = ctxpack("stats", "--json", str(chat), str(chat.parent), str(twin))
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert doc["schema_version"] == 5 and len(doc["files"]) == 2
    f = doc["files"][0]
    for key in ("path", "format", "model", "encoding", "exact", "messages", "tokens", "by_role",
                "by_tool", "largest", "usage"):
        assert key in f
    assert doc["total"]["tokens"] == 2 * f["tokens"]
    assert doc["total"]["messages"] == 14


def test_json_rounds_carry_the_titles_show_gives_them(exact_tokens, tmp_path):
    # each round_tokens entry names its round as show heads it: the person's words, not
    # the note an IDE put before them, cut at 100 characters; the agent's opening is no
    # person's round
    long = "Now rename every station to its official code " + "and check again " * 10
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "assistant", "content": "Ready when you are."},
        {"role": "user", "content": "<ide_opened_file>The user opened tides.py in the IDE."
                                    "</ide_opened_file>\n\nWhy does high_tides miss the "
                                    "plateau?\nIt skips the second peak."},
        {"role": "assistant", "content": "Because it compares with > only."},
        {"role": "user", "content": long},
        {"role": "assistant", "content": "Done."},
    ]
    path = tmp_path / "titled.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    (f,) = json.loads(run.out)["files"]
    titles = [r["title"] for r in f["round_tokens"]]
    assert titles == ["before the person's first message",
                      "Why does high_tides miss the plateau?", long[:99] + "…"]
    assert [r.title for r in view_file(path).rounds] == titles  # as show heads them
    # the rest of each entry keeps its meaning
    assert [r["cumulative"] for r in f["round_tokens"]] == [r.cumulative for r in
                                                           stats(path).rounds]


def test_csv_and_markdown(exact_tokens, chat):
    rows = list(csv.DictReader(io.StringIO(ctxpack("stats", "-f", "csv", str(chat)).out)))
    assert rows[0]["format"] == "openai" and int(rows[0]["tokens"]) == stats(chat).tokens
    md = ctxpack("stats", "--format", "markdown", str(chat)).out
    assert "### Tokens by tool" in md and "| ls |" in md


def test_table_output_names_everything(exact_tokens, chat):
    run = ctxpack("stats", str(chat))
    assert run.code == 0, run.err
    for text in ("Tokens by role", "Tokens by tool", "Largest", "Rounds", "128,000"):
        assert text in run.out


def test_gates_exit_1_naming_the_file(exact_tokens, chat, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    run = ctxpack("stats", "--json", "--max-tokens", "50", str(small), str(chat))
    assert run.code == 1 and str(chat) in run.err and str(small) not in run.err
    assert json.loads(run.out)["files"]  # the data is still printed
    assert ctxpack("stats", "--max-tokens", "100000", str(chat)).code == 0
    run = ctxpack("stats", "--model", "gpt-4", "--max-ratio", "0.001", str(chat))
    assert run.code == 1 and "window" in run.err


def test_stdin_folder_and_glob(exact_tokens, chat, tmp_path):
    data = chat.read_bytes()
    assert json.loads(ctxpack("stats", "--json", "-", input=data).out)["files"][0]["tokens"] \
        == stats(chat).tokens
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(data)
    doc = json.loads(ctxpack("stats", "--json", str(tmp_path)).out)
    assert len(doc["files"]) == 2
    doc = json.loads(ctxpack("stats", "--json", str(tmp_path / "**" / "*.jsonl")).out)
    assert len(doc["files"]) == 2


def test_output_and_transcript_format_together(exact_tokens, chat):
    run = ctxpack("stats", "--format", "openai", "--format", "csv", str(chat))
    assert run.code == 0 and run.out.startswith("path,format")
    run = ctxpack("stats", "--format", "xml", str(chat))
    assert run.code == 2 and "output formats" in run.err


def test_count_prints_a_bare_number(exact_tokens):
    assert ctxpack("count", "hello world", "--model", "gpt-4o").out == "2\n"
    assert ctxpack("count", "hello", "world").out == "2\n"  # words joined, like the shell
    assert ctxpack("count", "-", input="hello world").out == "2\n"
    assert ctxpack("count", "--model", "gpt-4", input="tiktoken is great!").out == "6\n"


def test_count_of_a_model_without_its_tokenizer_is_its_calibrated_bill(exact_tokens, tmp_path):
    import tiktoken

    text = "Refactor the parser so that every error names its file and line."
    counted = len(tiktoken.get_encoding("cl100k_base").encode(text))
    cfg = tmp_path / "c.yaml"  # (a config's overhead is an agent's, not plain text's)
    cfg.write_text("calibration: [{name: claude-opus-4-6, slope: 1.5, overhead: 9000, "
                   "error: 0.02}]\n")
    run = ctxpack("count", "-m", "claude-opus-4-6", "--config", str(cfg), text)
    assert run.code == 0 and run.out == f"{round(1.5 * counted)}\n"  # bare, for pipes
    assert f"calibrated: 1.5 × {counted} counted with cl100k_base" in run.err
    assert "±2.0%" in run.err
    # a model no calibration covers is its tokenizer's count, said to be an estimate
    run = ctxpack("count", "-m", "gemini-2.5-pro", text)
    assert run.out == f"{len(tiktoken.get_encoding('o200k_base').encode(text))}\n"
    assert "estimated, not calibrated" in run.err and "error unknown" in run.err
    # an exact model: the number alone
    assert ctxpack("count", "-m", "gpt-4o", text).err == ""


def test_models_show_each_calibration_and_where_it_came_from(tmp_path):
    def calibration(run, name):
        return {m["name"]: m for m in json.loads(run.out)}[name]["calibration"]

    shipped = calibration(ctxpack("models", "--json"), "claude-opus-4-6")
    assert shipped["source"] == "shipped" and shipped["name"] == "claude-opus-4-6"
    # a family's entry stands for the models it is a prefix of
    family = calibration(ctxpack("models", "--json"), "claude-opus-4")
    assert family["name"] == "claude" and family["source"] == "shipped"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("calibration: [{name: claude-opus-4-6, slope: 1.5, overhead: 9000}]\n")
    took = calibration(ctxpack("models", "--json", "--config", str(cfg)), "claude-opus-4-6")
    assert took == {"name": "claude-opus-4-6", "slope": 1.5, "overhead": 9000, "error": None,
                    "source": "config"}
    text = ctxpack("models", "--config", str(cfg)).out
    row = next(line for line in text.splitlines() if "claude-opus-4-6" in line and "1.5" in line)
    assert "9,000" in row and "config file" in row
    assert "shipped table" in next(line for line in text.splitlines()
                                   if "claude-opus-4-5" in line and "table" in line)


def test_models_lists_and_config_extends(tmp_path):
    run = ctxpack("models", "--json")
    names = {m["name"]: m for m in json.loads(run.out)}
    assert names["gpt-4o"]["encoding"] == "o200k_base" and names["claude"]["exact"] is False
    cfg = tmp_path / "ctxpack.yaml"
    cfg.write_text("models:\n  - name: acme-coder\n    encoding: cl100k_base\n"
                   "    context_window: 65536\n")
    names = {m["name"]: m for m in json.loads(ctxpack("models", "--json", "--config",
                                                       str(cfg)).out)}
    assert names["acme-coder"]["context_window"] == 65536
    bad = tmp_path / "bad.yaml"
    bad.write_text("modles: []\ncolour: red\n")
    run = ctxpack("models", "--config", str(bad))
    assert run.code == 2 and "modles" in run.err and "colour" in run.err


def test_config_model_is_usable_for_stats(exact_tokens, chat, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("models:\n  - {name: acme-coder, encoding: cl100k_base, context_window: 1000}\n")
    doc = json.loads(ctxpack("stats", "--json", "--model", "acme-coder", str(chat),
                             env={"CTXPACK_CONFIG": str(cfg)}).out)
    assert doc["files"][0]["context_window"] == 1000


@pytest.mark.parametrize("path", sorted([*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")]),
                         ids=lambda p: p.name)
def test_samples_give_sensible_stats(exact_tokens, path):
    s = stats(path)
    assert s.messages > 0 and s.tokens > 0 and s.rounds


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code", "codex", "anthropic-messages"))
def test_corpus_stats_are_sensible(exact_tokens, path):
    s = stats(path)
    assert s.format in ("claude-code", "codex", "anthropic")
    assert s.messages > 0 and s.tokens > 0
    assert sum(s.by_role.values()) <= s.tokens
    assert s.lines == path.read_bytes().count(b"\n")


def test_files_naming_no_model_get_their_formats_usual_one(exact_tokens, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"role": "user", "content": [{"type": "text", "text": "hi"}]})
                    + "\n" + json.dumps({"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "x"},
                        {"type": "text", "text": "hello"}]}) + "\n")
    s = stats(path)
    assert (s.format, s.model, s.exact) == ("anthropic", "claude", False)
    assert "approximation" in s.note


def test_a_model_the_table_does_not_know_is_named_and_said_to_be_estimated(exact_tokens,
                                                                          tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi", "model": "acme-7b"}) + "\n")
    s = stats(path)
    assert (s.model, s.exact, s.encoding) == ("acme-7b", False, "o200k_base")
    assert "acme-7b is a model ctxpack does not know" in s.note and "gpt-4o" in s.note
    assert s.context is not None and s.context.kind == "estimated"
    assert stats(load(path)).to_dict() == s.to_dict()
    for command in ("stats", "show"):
        run = ctxpack(command, str(path))
        out = " ".join(run.out.split())
        assert run.code == 0 and "model acme-7b" in out and "does not know" in out, run.err
        assert "exact" not in out
    # --model names the tokenizer: then the counts are that model's
    flagged = stats(path, "gpt-4o")
    assert (flagged.model, flagged.exact) == ("gpt-4o", True)
    # an explicit --model must still be one the table knows
    assert ctxpack("stats", "--model", "acme-7b", str(path)).code == 2


def test_an_unknown_model_says_which_encoding_counted_it_and_for_whom(tmp_path):
    # an Anthropic file naming a model the table lacks is counted as claude is, with
    # cl100k_base, which is not claude's tokenizer but an approximation of it
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"role": "user", "content": [{"type": "text", "text": "hi"}]})
                    + "\n" + json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                                         "model": "acme-7b", "content": [
                                             {"type": "thinking", "thinking": "hm",
                                              "signature": "x"},
                                             {"type": "text", "text": "hello"}]}) + "\n")
    s = stats(path)
    assert (s.format, s.model, s.encoding) == ("anthropic", "acme-7b", "cl100k_base")
    assert "claude's tokenizer" not in s.note
    assert "counted with cl100k_base, as ctxpack counts claude (itself an approximation)" \
        in s.note and "an estimate for acme-7b" in s.note
    # where the encoding is the fallback model's own, it says so
    path.write_text(json.dumps({"role": "user", "content": "hi", "model": "acme-7b"}) + "\n")
    assert "counted with o200k_base, gpt-4o's encoding, so the counts are an estimate for " \
        "acme-7b" in stats(path).note


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("openhands", pattern="*multi_swe*"))
def test_the_openhands_model_is_not_said_to_be_counted_with_llama_s_tokenizer(path) -> None:
    s = stats(path)
    assert "meta-llama/llama-4-maverick's tokenizer" not in s.note
    assert "counted with o200k_base, as ctxpack counts " in s.note and "estimate for" in s.note


def test_loaded_and_streamed_agree_on_a_file_naming_no_model(exact_tokens):
    path = SAMPLES / "multi-round.anthropic.jsonl"
    assert stats(load(path)).to_dict() == stats(path).to_dict()
    assert stats(path).model == "claude"


def test_stats_json_of_many_conversations_bills_the_largest_and_keeps_the_file_total(
        tmp_path) -> None:
    from ctxpack.render.stats import to_json

    small = {"messages": [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": "hello"}]}
    large = {"messages": [{"role": "user", "content": "word " * 400},
                          {"role": "assistant", "content": "done"}]}
    path = tmp_path / "evals.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in (small, large, small)))
    s = stats(path)
    doc = json.loads(to_json([s]))
    f = doc["files"][0]
    assert doc["schema_version"] == 5 and f["conversations"] == 3
    largest = f["largest_conversation"]
    assert largest["number"] == 2 and f["context"]["tokens"] == largest["tokens"]
    assert f["context"]["file_tokens"] == f["tokens"] > largest["tokens"]
    assert f["context_ratio"] == round(largest["tokens"] / f["context_window"], 4)


@pytest.mark.parametrize("path", [
    SAMPLES / "aider" / "architect-lint.aider.chat.history.md",
    *corpus_params("gemini-cli", pattern="figma-eval-010ac575*")])
def test_the_largest_conversation_is_placed_as_show_names_its_first_message(path) -> None:
    # of a file of a message a line (two Gemini runs appended, two Aider runs), its place
    # was "": the line `show` heads its first message with is where it starts
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    largest = json.loads(run.out)["files"][0]["largest_conversation"]
    assert largest["place"] == f"line {largest['line']:,}"
    shown = ctxpack("show", str(path)).out
    assert f"\nline {largest['line']:,}  " in shown
    run = ctxpack("stats", str(path), "--max-ratio", "0.0001", "--top", "0")
    assert run.code == 1 and f"(conversation {largest['number']} at line " \
        f"{largest['line']:,})" in run.err, run.err


def test_a_document_of_many_conversations_places_its_rounds_not_line_1(tmp_path) -> None:
    # a JSON document on one line: every message is on line 1, so rounds and the largest
    # conversation are found by their place in it, as the largest messages are
    runs = [{"traj": [{"role": "user", "content": f"task {n} " + "word " * 50 * n},
                      {"role": "assistant", "content": "done"}]} for n in range(1, 4)]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    s = stats(path)
    assert s.conversations == 3 and s.largest_conversation is not None
    assert s.largest_conversation["place"] == "[2].traj[0]"
    assert [r.place for r in s.rounds] == ["[0].traj[0]", "[1].traj[0]", "[2].traj[0]"]
    run = ctxpack("stats", str(path), "--max-ratio", "0.0001", "--top", "0")
    assert run.code == 1
    assert "(conversation 3 at [2].traj[0])" in run.err
    assert "[1].traj[0]" in run.out and "place" in run.out


def test_no_round_runs_across_a_conversation_boundary(tmp_path) -> None:
    # each conversation's system prompt is its own preamble, not the tail of the round
    # before it: two runs of one task give the same two rounds each, in stats and show
    run = [{"role": "system", "content": "You fix bugs. " * 30},
           {"role": "user", "content": "The parser drops the last line."},
           {"role": "assistant", "content": "Fixed: the loop stopped one short."}]
    path = tmp_path / "evals.jsonl"
    path.write_text("".join(json.dumps({"messages": run}) + "\n" for _ in range(2)))
    got = ctxpack("stats", str(path), "--json")
    assert got.code == 0, got.err
    rounds = json.loads(got.out)["files"][0]["round_tokens"]
    assert [(r["number"], r["messages"]) for r in rounds] == [(0, 1), (1, 2), (2, 1), (3, 2)]
    assert rounds[0]["tokens"] == rounds[2]["tokens"] and rounds[1]["tokens"] == rounds[3]["tokens"]
    assert rounds[-1]["cumulative"] == json.loads(got.out)["files"][0]["tokens"]
    assert [r.messages for r in view_file(path).rounds] == [1, 2, 1, 2]
    shown = ctxpack("show", str(path), "--round", "2")
    assert "You fix bugs." in shown.out and "The parser drops" not in shown.out


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="mcp-vscode-server*"))
def test_a_cline_ui_log_that_names_no_model_is_read_as_claude_assumed(path) -> None:
    s = stats(path)
    assert s.model == "claude" and not s.exact
    assert s.note.startswith("the file names no model, so this one is assumed")
    assert s.context_window == 200_000


def test_a_cline_task_naming_no_model_is_read_alike_from_its_history_or_its_ui_log(
        tmp_path) -> None:
    # both files of one task are Anthropic-shaped Cline's: each alone says claude, assumed
    task = tmp_path / "task"
    task.mkdir()
    for name in ("api_conversation_history.json", "ui_messages.json"):
        items = json.loads((SAMPLES / "cline-task" / name).read_text())
        for item in items:
            item.pop("modelInfo", None)
        (task / name).write_text(json.dumps(items))
    seen = []
    for path in (task, task / "ui_messages.json"):
        run = ctxpack("stats", "--json", str(path))
        assert run.code == 0, run.err
        (entry,) = json.loads(run.out)["files"]
        seen.append((entry["model"], entry["encoding"], entry["exact"], entry["note"],
                     entry["context_window"]))
    assert seen[0] == seen[1]
    model, encoding, exact, note, window = seen[0]
    assert (model, encoding, exact, window) == ("claude", "cl100k_base", False, 200_000)
    assert note.startswith("the file names no model, so this one is assumed; -m sets another")


def test_a_file_that_names_no_model_in_a_format_that_assumes_none_says_so(tmp_path) -> None:
    log = tmp_path / "run.openhands.jsonl"
    log.write_text(unnamed_openhands())
    s = stats(log)
    assert s.model == "(not named)" and not s.exact
    assert s.note.startswith("the file names no model: counted with o200k_base")



def test_a_model_assumed_for_a_file_that_names_none_is_said_to_be_assumed(tmp_path):
    # a SWE-agent style document of messages names no model: gpt-4o is assumed, and stats,
    # its JSON and show say so, as convert does; a named model or -m is no assumption
    doc = tmp_path / "run.traj.json"
    doc.write_text(json.dumps({"history": CHAT}))
    out = ctxpack("stats", "--top", "0", str(doc))
    assert out.code == 0
    header = " ".join(out.out.split())
    assert "model gpt-4o (o200k_base, exact: the file names no model, so this one is " \
        "assumed; -m sets another)" in header
    data = json.loads(ctxpack("stats", "--json", str(doc)).out)
    (entry,) = data["files"]
    assert entry["model"] == "gpt-4o" and entry["exact"] is True
    assert "assumed" in entry["note"]
    assert "assumed" in " ".join(ctxpack("show", str(doc)).out.split())
    flagged = json.loads(ctxpack("stats", "--json", "-m", "gpt-4o", str(doc)).out)
    assert flagged["files"][0]["note"] == ""
    named = tmp_path / "named.jsonl"
    named.write_text("".join(json.dumps({**m, "model": "gpt-4o"}) + "\n" for m in CHAT))
    assert json.loads(ctxpack("stats", "--json", str(named)).out)["files"][0]["note"] == ""


def test_max_ratio_says_the_share_and_the_limit_both_as_percentages(exact_tokens, chat):
    # a limit just below the file's share: both must read as percentages, told apart
    ratio = stats(chat, "gpt-4").context_ratio
    limit = round(ratio - 0.0001, 4)
    run = ctxpack("stats", "--model", "gpt-4", "--max-ratio", str(limit), "--top", "0",
                  str(chat))
    assert run.code == 1
    found = re.search(r"([\d.]+)% of the [\d,]+-token window > --max-ratio ([\d.]+) "
                      r"\(([\d.]+)%\)", " ".join(run.err.split()))
    assert found is not None, run.err
    share, given, limit_shown = found.groups()
    assert float(share) / 100 == pytest.approx(ratio)
    assert float(given) == limit and float(limit_shown) / 100 == pytest.approx(limit)
    assert share != limit_shown
