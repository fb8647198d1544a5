"""Bad input: one clear line naming file, line and problem, exit 2 — never a traceback."""

from __future__ import annotations

import io
import json
import math
import os
import random
import stat
import subprocess
import sys

import pytest

from ctxpack.errors import InputError
from ctxpack.loader import load, write

from .helpers import assert_clean_error, ctxpack

GOOD = b'{"role":"user","content":"hello"}\n'
ASSISTANT = b'{"role":"assistant","content":"hi there"}\n'

BAD_CASES = {
    "malformed JSON": (GOOD + b'{"role": "user", "content": }\n' + ASSISTANT, 2,
                       "malformed JSON"),
    "non-UTF-8 byte": (GOOD + b'{"role":"user","content":"caf\xe9"}\n' + ASSISTANT, 2,
                       "not valid UTF-8"),
    "truncated last line": (GOOD + ASSISTANT + b'{"role":"user","content":"cut he', 3,
                            "truncated last line"),
    "cut after a value": (GOOD + ASSISTANT + b'{"role":"user","content":"x"', 3,
                          "truncated last line"),
    # a last line with no newline whose mistake comes before its end is not cut off
    "malformed last line": (GOOD + b'{"role":"user",,"content":"x"}', 2,
                            "malformed JSON: Expecting property name"),
    "not an object": (GOOD + b'["role", "user"]\n', 2, "expected a JSON object, found an array"),
    "bare number": (GOOD + b"42\n", 2, "found a number"),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_line_is_one_clear_line_with_exit_2(case, tmp_path):
    data, line, problem = BAD_CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    for command in ("stats", "validate"):
        run = ctxpack(command, str(path))
        assert_clean_error(run, 2, f"{path}:{line}:", problem)


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_skip_invalid_skips_and_counts(case, tmp_path):
    data, line, _ = BAD_CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    run = ctxpack("stats", "--json", "--skip-invalid", str(path))
    assert run.code == 0, run.err
    doc = json.loads(run.out)["files"][0]
    assert [s["line"] for s in doc["skipped"]] == [line]
    assert doc["messages"] == data.count(b"\n") + (not data.endswith(b"\n")) - 1


@pytest.mark.parametrize("data, name, where", [
    # a line whose JSON stops short of its newline: the parser stops past it, on the
    # next line; the place is where the line's text ends
    (b'{"a":\n', "x.jsonl", ":1: malformed JSON: Expecting value at column 6, where the "
     "line ends"),
    (GOOD + b'{"role": "user", "content": [1,  \n' + ASSISTANT, "x.jsonl",
     ":2: malformed JSON: Expecting value at column 32, where the line ends"),
    # a mistake inside the line is where it is
    (GOOD + b'{"role" "user"}\n', "x.jsonl", ":2: malformed JSON: Expecting ':' delimiter "
     "at column 9"),
    # a document: the line and the column on that line
    (b'[\n  {"role": "user",\n\n', "d.json", ":2: malformed JSON: Expecting property name "
     "enclosed in double quotes at column 19, where the line ends"),
    (b'[\n  {"role": "user", "content": "\xff"}\n]\n', "d.json",
     ":2: not valid UTF-8: byte 0xff at column 32"),
    (b'[\n  {"role": "user", "content": "x"}', "d.json",
     ":2: truncated document"),
])
def test_the_place_of_a_json_error_is_on_its_own_line(data, name, where, tmp_path):
    path = tmp_path / name
    path.write_bytes(data)
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}{where}")


def test_skip_invalid_keeps_bad_lines_for_a_lossless_write(tmp_path):
    data = BAD_CASES["malformed JSON"][0]
    t = load(io.BytesIO(data), skip_invalid=True)
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


def test_records_that_fit_no_format(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"hello": "world"}\n{"n": 1}\n')
    run = ctxpack("stats", str(path))
    # it names what ctxpack reads, and no flag that could not help
    assert_clean_error(run, 2, f"{path}:1:", "fits no transcript format", "openai, ")
    assert "--format" not in run.err and "--skip-invalid" not in run.err


NOT_JSON = {
    "notes.md": (b"\n# Release notes\n\nFixed the parser.\n", 2, "Markdown"),
    "scores.csv": (b"model,task,score\ngpt-4o,swe,0.41\n", 1, "CSV"),
    "log.txt": (b"Started the run at noon\nall went well\n", 1, "plain text"),
    # text whose first character could open a JSON value
    "quoted.csv": (b'"model","score"\n"gpt-4o",0.41\n', 1, "CSV"),
    "dated.csv": (b"2024-01-01,ok\n2024-01-02,failed\n", 1, "CSV"),
    "todo.txt": (b"notes from the meeting\nship it\n", 1, "plain text"),
}


@pytest.mark.parametrize("name", list(NOT_JSON))
def test_a_text_file_is_named_with_the_formats_ctxpack_reads(name, tmp_path):
    data, line, what = NOT_JSON[name]
    path = tmp_path / name
    path.write_bytes(data)
    for command in ("stats", "show", "validate", "convert"):
        run = ctxpack(command, str(path), *(["--to", "markdown"] if command == "convert" else []))
        assert_clean_error(run, 2, f"{path}:{line}:", f"looks like {what}",
                           "ctxpack reads: openai, ", "aider")
        assert "malformed JSON" not in run.err and "--format" not in run.err


def _binaries() -> dict[str, tuple[bytes, str]]:
    import gzip
    import zipfile
    import zlib

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("run.jsonl", GOOD)
    row = b"\x00" + b"\x00\x00\x00" * 4
    png = (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00\x00\x00\x01" * 2
           + b"\x08\x02\x00\x00\x00" + zlib.compress(row))
    return {
        "zeros.jsonl": (b"\x00" * 4096, "binary data"),
        # random bytes with no NUL among them: neither CSV nor plain text (by their commas
        # and their newlines, a first line may look like either)
        "noise.bin": (random.Random(22).randbytes(4096).replace(b"\x00", b""),
                      "not UTF-8 text"),
        "run.jsonl.gz": (gzip.compress(GOOD * 20), "gzip"),
        "runs.zip": (archive.getvalue(), "zip"),
        "shot.png": (png, "PNG"),
        "utf16.json": ('[{"role": "user", "content": "hi"}]'.encode("utf-16"), "UTF-16"),
    }


@pytest.mark.parametrize("name", list(_binaries()))
def test_a_binary_file_is_said_to_be_binary(name, tmp_path):
    data, what = _binaries()[name]
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "out.jsonl"
    for args in (("stats",), ("show",), ("validate",), ("compress", "-o", str(out)),
                 ("convert", "--to", "openai", "-o", str(out)), ("stats", "--skip-invalid"),
                 ("stats", "--format", "openai")):
        run = ctxpack(*args, str(path))
        assert_clean_error(run, 2, f"{path}: ", what, "not a transcript")
        assert "looks like" not in run.err and "malformed JSON" not in run.err
        assert not out.exists()


def test_text_in_another_encoding_is_not_taken_for_binary(tmp_path):
    # a Latin-1 table holds a few bytes that are not UTF-8: it is still named as text
    path = tmp_path / "prices.txt"
    path.write_bytes("café,crème,brûlée\n1,2,3\n".encode("latin-1"))
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "looks like CSV")


def test_what_to_do_first_names_the_file_or_the_pipe(tmp_path):
    import gzip

    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(gzip.compress(GOOD * 20))
    named = ctxpack("stats", str(path))
    assert_clean_error(named, 2, f"gunzip -k {path}")
    piped = ctxpack("stats", "-", input=path.read_bytes())
    assert_clean_error(piped, 2, "<stdin>: ", "gzip", "pipe it through gunzip -c")
    assert "FILE" not in named.err + piped.err


def test_a_parquet_file_under_another_name_says_how_ctxpack_reads_one(tmp_path):
    path = tmp_path / "rows.bin"
    path.write_bytes(b"PAR1" + b"\x15\x04\x15\x10" * 64 + b"PAR1")
    out = tmp_path / "out.jsonl"
    for args in (("stats",), ("show",), ("validate",), ("compress", "-o", str(out)),
                 ("stats", "--skip-invalid"), ("stats", "--format", "openai")):
        run = ctxpack(*args, str(path))
        assert_clean_error(run, 2, f"{path}: a Parquet file; ctxpack reads one by a name "
                           "that ends in .parquet or .pq")
        assert not out.exists()


def test_a_text_file_forced_to_a_format_is_malformed_json(tmp_path):
    path = tmp_path / "notes.md"
    path.write_bytes(NOT_JSON["notes.md"][0])
    assert_clean_error(ctxpack("stats", "--format", "openai", str(path)), 2, f"{path}:2:",
                       "malformed JSON")


def test_responses_api_items_are_named(tmp_path):
    path = tmp_path / "items.jsonl"
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ls"}]},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "README.md"},
    ]
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    run = ctxpack("stats", str(path))
    assert_clean_error(run, 2, f"{path}:2:", "OpenAI Responses API items", "ctxpack reads: ")
    assert "--format" not in run.err and "--skip-invalid" not in run.err
    assert "not a openai" not in run.err


def test_opencode_messages_without_session_info_are_named(tmp_path):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps({"messages": [
        {"info": {"id": "msg_1", "role": "user"}, "parts": [{"type": "text", "text": "hi"}]}]},
        indent=2))
    run = ctxpack("stats", str(path))
    assert_clean_error(run, 2, f"{path}:1:", "OpenCode messages without the session `info`",
                       "ctxpack reads: ")
    assert "--format" not in run.err and "--skip-invalid" not in run.err


def test_a_bad_record_after_good_ones_names_the_format_it_was_read_as(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(GOOD + b'{"type": "note", "content": "hi"}\n')
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:2:",
                       "not read as openai: ", "--skip-invalid skips such lines")


def test_records_that_fit_not_the_forced_format(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(GOOD + ASSISTANT)
    assert_clean_error(ctxpack("stats", "--format", "codex", str(path)), 2, f"{path}:1:",
                       "not read as codex")


def test_unknown_forced_format_lists_the_valid_ones(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(GOOD)
    run = ctxpack("validate", "--format", "yaml", str(path))
    assert_clean_error(run, 2, "unknown format 'yaml'", "openai", "claude-code", "codex")


def test_missing_file_and_directory(tmp_path):
    assert_clean_error(ctxpack("stats", str(tmp_path / "nope.jsonl")), 2, "no such file")
    assert_clean_error(ctxpack("stats", str(tmp_path)), 2, "no *.jsonl files")


def test_unknown_model_names_the_next_step(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(GOOD)
    assert_clean_error(ctxpack("stats", "--model", "gpt-99-ultra", str(path)), 2,
                       "unknown model 'gpt-99-ultra'", "ctxpack models")


def test_load_raises_input_error_with_path_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(BAD_CASES["malformed JSON"][0])
    with pytest.raises(InputError) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), 2)


@pytest.mark.parametrize("name,data", [("empty.jsonl", b""), ("empty.json", b""),
                                       ("blank.md", b"  \n\n\t\n")])
def test_an_empty_file_is_no_transcript(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "out.jsonl"
    for args in (("stats",), ("show",), ("validate",), ("compress", "-o", str(out)),
                 ("convert", "--to", "openai", "-o", str(out))):
        assert_clean_error(ctxpack(*args, str(path)), 2, str(path), "empty")
        assert not out.exists()
    good = tmp_path / "good.jsonl"
    good.write_bytes(GOOD)
    many = ctxpack("stats", "--json", str(path), str(good))
    assert many.code == 2 and f"{path}: the file is empty" in many.err, many.err
    [read] = [f for f in json.loads(many.out)["files"] if f.get("messages")]
    assert read["messages"] == 1


@pytest.mark.parametrize("name,data", [
    ("empty-array.json", b"[]\n"), ("empty-list.json", b'{"messages": []}'),
    ("pretty.json", b'{\n  "messages": []\n}\n'), ("history.traj", b'{"history": []}\n')])
def test_a_document_of_no_messages_is_no_transcript(tmp_path, name, data):
    # nothing in it marks a format, and nothing in it is context: refused as an empty
    # file is, rather than read as json-messages "unsure" of plain messages it lacks
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "out.jsonl"
    for args in (("stats",), ("show",), ("validate",), ("compress", "-o", str(out)),
                 ("convert", "--to", "openai", "-o", str(out))):
        assert_clean_error(ctxpack(*args, str(path)), 2, str(path), "no messages")
        assert not out.exists()
    with pytest.raises(InputError, match="no messages"):
        load(path)


def test_blank_lines_are_kept_and_ignored(tmp_path):
    data = GOOD + b"\n   \n" + ASSISTANT
    t = load(io.BytesIO(data))
    assert len(t.messages) == 2
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


def test_lone_surrogate_falls_back_to_the_standard_parser(exact_tokens, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"odd \\ud800 char"}\n')
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    assert json.loads(run.out)["files"][0]["messages"] == 1


def test_huge_single_line_and_million_spaces(exact_tokens, tmp_path):
    spaces = " " * 1_000_000
    big = "word " * 2_000_000  # a 10 MB single line
    path = tmp_path / "big.jsonl"
    lines = [{"role": "user", "content": "run it"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "c1", "content": spaces},
             {"role": "user", "content": big}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    doc = json.loads(run.out)["files"][0]
    assert doc["by_tool"]["sh"]["result_tokens"] > 100  # counted, not crashed or zero
    assert doc["tokens"] >= 2_000_000


def test_deeply_nested_json_is_read(exact_tokens, tmp_path):
    nested = "[" * 50_000 + "]" * 50_000
    deep_args = {"type": "tool_use", "id": "t1", "name": "deep", "input": {"x": 0}}
    path = tmp_path / "deep.jsonl"
    record = json.dumps({"role": "assistant", "content": [deep_args]})
    record = record.replace('{"x": 0}', '{"x": ' + nested + "}")
    path.write_text('{"role":"user","content":[{"type":"text","text":"go"}]}\n' + record + "\n"
                    + '{"role":"user","content":"x","extra":' + nested + "}\n")
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    doc = json.loads(run.out)["files"][0]
    assert doc["messages"] == 3 and doc["by_tool"]["deep"]["call_tokens"] > 1000
    t = load(path)
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == path.read_bytes()


def test_nesting_beyond_the_limit_is_a_clean_error(tmp_path):
    path = tmp_path / "deeper.jsonl"
    path.write_text('{"role":"user","content":"x","extra":' + "[" * 150_000 + "]" * 150_000
                    + "}\n")
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "nested deeper than")


def test_file_still_being_appended_to_is_read_as_opened(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_bytes(GOOD + ASSISTANT)
    from ctxpack.loader import Scanner

    scanner = Scanner(path)
    seen = []
    for message in scanner.messages():
        seen.append(message)
        with open(path, "ab") as f:  # the agent keeps writing while we read
            f.write(GOOD)
    assert len(seen) == 2


@pytest.fixture
def folder_with_a_bad_file(tmp_path):
    (tmp_path / "a-good.jsonl").write_bytes(GOOD + ASSISTANT)
    (tmp_path / "b-bad.jsonl").write_bytes(GOOD + b"{bad\n")
    (tmp_path / "c-good.jsonl").write_bytes(GOOD)
    return tmp_path


def test_a_bad_file_in_a_many_file_stats_run_costs_only_itself(folder_with_a_bad_file):
    folder = folder_with_a_bad_file
    run = ctxpack("stats", "--format", "csv", str(folder), str(folder / "missing.jsonl"))
    assert run.code == 2, run.err
    rows = run.out.splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == [str(folder / "a-good.jsonl"),
                                                   str(folder / "c-good.jsonl")]
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {folder / 'missing.jsonl'}: no such file",
                      f"error: {folder / 'b-bad.jsonl'}:2: malformed JSON: Expecting "
                      "property name enclosed in double quotes at column 2"]
    assert "Traceback" not in run.err
    # over a limit and a bad file: the failure is what the exit code says
    gated = ctxpack("stats", "--max-tokens", "1", str(folder))
    assert gated.code == 2 and "over budget" in gated.err and "b-bad.jsonl:2" in gated.err


def test_a_bad_file_in_a_many_file_validate_run_costs_only_itself(folder_with_a_bad_file):
    folder = folder_with_a_bad_file
    run = ctxpack("validate", "--json", str(folder))
    assert run.code == 2, run.err
    assert [f["path"] for f in json.loads(run.out)["files"]] == \
        [str(folder / "a-good.jsonl"), str(folder / "c-good.jsonl")]
    assert "b-bad.jsonl:2: malformed JSON" in run.err
    only_bad = ctxpack("validate", str(folder / "b-bad.jsonl"))
    assert_clean_error(only_bad, 2, "b-bad.jsonl:2: malformed JSON")
    assert only_bad.out == ""


def test_where_an_output_cannot_go_is_said_before_any_work(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_bytes(GOOD + ASSISTANT)
    for args, fragment in [(["-o", str(tmp_path)], "is a folder"),
                           (["-o", str(tmp_path / "no" / "out.jsonl")],
                            "its folder does not exist")]:
        assert_clean_error(ctxpack("compress", str(src), *args), 2, fragment)
        assert_clean_error(ctxpack("restore", str(src), *args), 2, fragment)


@pytest.mark.parametrize("args", [["stats"], ["stats", "--json"], ["show"], ["compress"]])
def test_a_full_disk_behind_stdout_is_one_line_naming_it(args, tmp_path):
    if not (os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode)):
        pytest.skip("needs /dev/full to stand for a full disk")
    src = tmp_path / "t.jsonl"
    src.write_bytes(GOOD + ASSISTANT)
    with open("/dev/full", "wb") as full:  # written through, as a shell's `>` would
        proc = subprocess.run([sys.executable, "-m", "ctxpack", *args, str(src)],
                              stdout=full, stderr=subprocess.PIPE, timeout=120,
                              env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.decode().splitlines() if "error" in line]
    assert errors == ["error: stdout: No space left on device"], proc.stderr.decode()


def test_an_archive_folder_that_cannot_be_made_is_named(tmp_path):
    from .compression.transcripts import fitted
    from .conftest import SAMPLES

    sample = SAMPLES / "support-chat.openai.jsonl"
    blocker = tmp_path / "archive"
    blocker.write_bytes(b"a file where the folder should be")
    run = ctxpack("compress", str(sample), "--budget", str(fitted(sample) * 3 // 4),
                  "--archive-dir", str(blocker), "-q", "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, f"{blocker}: cannot keep originals there")
    assert not (tmp_path / "out.jsonl").exists()
# --- values of the wrong type --------------------------------------------------------
# Each reader trusts a field to be a string where it compares or keys by it (a type, an
# id, a link): a list or an object there is the record's problem, named at its line,
# never a crash deeper in.

CC = ('{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s",'
      '"message":{"role":"user","content":"go"}}')
CODEX = '{"type":"session_meta","payload":{"id":"s","instructions":"be brief"}}'
ANTHROPIC = '{"role":"user","content":[{"type":"thinking","thinking":"go"}]}\n'  # surely
DEEP = "[" * 2000 + "]" * 2000  # past the standard parser's recursion, not past ctxpack's
WRONG_TYPES = {
    "anthropic block type": (
        ANTHROPIC + '{"role":"assistant","content":[{"type":["tool_use"],"id":"t1"}]}\n',
        2, "'type' is an array, not a string"),
    "anthropic tool_use id": (
        ANTHROPIC + '{"role":"assistant","content":[{"type":"tool_use","id":{"a":1}}]}\n',
        2, "'id' is an object, not a string"),
    "anthropic tool name, nested deep": (
        ANTHROPIC + f'{{"role":"assistant","content":[{{"type":"tool_use","name":{DEEP}}}]}}\n',
        2, "'name' is an array, not a string"),
    "claude code uuid": (
        CC + "\n" + CC.replace('"uuid":"u1","parentUuid":null', '"uuid":["u2"],'
                               '"parentUuid":"u1"') + "\n",
        2, "'uuid' is an array, not a string"),
    "claude code parentUuid": (
        CC + "\n" + CC.replace('"uuid":"u1","parentUuid":null', '"uuid":"u2",'
                               '"parentUuid":{"u":"u1"}') + "\n",
        2, "'parentUuid' is an object, not a string"),
    "claude code type": (
        CC + "\n" + CC.replace('"type":"user"', '"type":["user"]') + "\n",
        2, "'type' is an array, not a string"),
    "claude code agentId": (
        CC + "\n" + CC.replace('"uuid":"u1"', '"uuid":"u2","isSidechain":true,'
                               '"agentId":[1]') + "\n",
        2, "'agentId' is an array, not a string"),
    "openai tool_calls": (
        '{"role":"user","content":"go"}\n{"role":"assistant","tool_calls":1.5}\n',
        2, "'tool_calls' is a number, not an array"),
    "openai call id": (
        '{"role":"user","content":"go"}\n{"role":"assistant","tool_calls":[{"id":["c1"],'
        '"type":"function","function":{"name":"ls","arguments":"{}"}}]}\n',
        2, "'id' is an array, not a string"),
    "openai image url": (
        '{"role":"user","content":[{"type":"image_url","image_url":{"url":[1]}}]}\n',
        1, "'url' is an array, not a string"),
    "openai image detail": (
        '{"role":"user","content":[{"type":"image_url","image_url":{"url":"x.png",'
        '"detail":{"a":1}}}]}\n',
        1, "'detail' is an object, not a string"),
    "openai role": (
        '{"role":"user","content":"go"}\n{"role":["user"],"content":"x","tool_calls":[]}\n',
        2, "'role' is an array, not a string"),
    "codex item type": (
        CODEX + '\n{"type":"response_item","payload":{"type":{"t":"message"},"role":"user"}}\n',
        2, "'type' is an object, not a string"),
    "codex item type, nested deep": (
        CODEX + f'\n{{"type":"response_item","payload":{{"type":{DEEP},"role":"user"}}}}\n',
        2, "'type' is an array, not a string"),
    "codex call_id": (
        CODEX + '\n{"type":"response_item","payload":{"type":"function_call","name":"sh",'
        '"arguments":"{}","call_id":[1]}}\n',
        2, "'call_id' is an array, not a string"),
    "json document role": (
        '[{"role":"user","content":"go"},{"role":{"r":"exit"},"content":"x"}]\n',
        1, "'role' is an object, not a string"),
    "json document tool_call_ids": (
        '{"history":[{"role":"user","content":"go"},'
        '{"role":"tool","content":"x","tool_call_ids":[["c1"]]}]}\n',
        1, "'tool_call_ids' holds an array, not a string"),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_a_value_of_the_wrong_type_is_the_lines_problem(case):
    data, line, problem = WRONG_TYPES[case]
    with pytest.raises(InputError) as info:
        load(io.BytesIO(data.encode()))
    assert info.value.line == line, str(info.value)
    assert problem in info.value.problem


def test_a_value_of_the_wrong_type_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(WRONG_TYPES["claude code parentUuid"][0])
    for command in ("stats", "validate", "show", "compress"):
        assert_clean_error(ctxpack(command, str(path)), 2, f"{path}:2:",
                           "'parentUuid' is an object, not a string")


def test_recorded_usage_of_the_wrong_type_sets_its_call_aside():
    # each call's usage holds a value no token count can be: neither is summed in part
    # (they were: 5 and 7), and both are named
    doc = {"messages": [{"role": "user", "content": "go"},
                        {"role": "assistant", "content": "ok",
                         "extra": {"response": {"usage": {"prompt_tokens": [1],
                                                          "completion_tokens": 7}}}},
                        {"role": "assistant", "content": "ok",
                         "extra": {"response": {"usage": {"prompt_tokens": 5,
                                                          "completion_tokens": math.nan}}}}]}
    t = load(io.BytesIO(json.dumps(doc, indent=1).encode()))
    assert (t.usage["input_tokens"], t.usage["output_tokens"]) == (0, 0)
    assert (t.usage["calls"], t.usage["calls_set_aside"]) == (0, 2) and not t.calls
    problems = " ".join(x.problem for x in t.set_aside)
    assert "prompt_tokens (an array)" in problems and "completion_tokens nan" in problems


def test_lone_surrogates_in_names_print(exact_tokens, tmp_path):
    # JSON may hold a lone surrogate, UTF-8 cannot: a tool or model named with one is
    # shown with '?' in its place, in every output of stats, in show and in validate's
    # problems (here the call has no result: the 'tool' role is misspelt)
    call = {"id": "c1", "type": "function", "function": {"name": "ls\ud800", "arguments": "{}"}}
    lines = [{"role": "user", "content": "go"},
             {"role": "assistant", "content": None, "tool_calls": [call],
              "model": "gpt-4o\udfff"},
             {"role": "tool\udc80", "tool_call_id": "c1", "content": "a.txt"}]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for args in (["stats"], ["stats", "--json"], ["stats", "--format", "csv"],
                 ["stats", "--format", "markdown"], ["show", "--no-pager"], ["validate"],
                 ["validate", "--json"]):
        run = ctxpack(*args, str(path), env={"PYTHONIOENCODING": "utf-8"})
        assert run.code == (1 if args[0] == "validate" else 0), (args, run.err)
        assert "internal error" not in run.err
    assert "ls?" in ctxpack("stats", "--json", str(path)).out
    assert "(ls?) has no result" in ctxpack("validate", str(path)).out


def test_arguments_nested_past_the_parsers_limit_are_shown_as_written(exact_tokens, tmp_path):
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": DEEP}}
    lines = [{"role": "user", "content": "go"},
             {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}]
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = ctxpack("show", "--no-pager", "--full", str(path))
    assert run.code == 0, run.err
    assert "[[[[" in run.out
    run = ctxpack("compress", "--budget", "40", "--keep-steps", "0", str(path))
    assert "internal error" not in run.err


@pytest.mark.parametrize("command", ["compress", "restore"])
def test_one_missing_file_says_so_even_with_an_output(command, tmp_path):
    missing = tmp_path / "nope.jsonl"
    run = ctxpack(command, str(missing), "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, str(missing), "o such file")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_long_array_of_messages_that_fits_no_format_is_named_without_a_crash(tmp_path):
    # the shape is judged on the first messages; one further on without 'content' is fine
    messages = [{"role": "assistant", "content": "hi"}] * 20
    path = tmp_path / "x.json"
    path.write_text(json.dumps([*messages, {"role": "user", "parts": []}]))
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "ctxpack reads: ")


def test_errors_travel_whole_between_processes() -> None:
    """A worker process or a Ray task sends its error back pickled: it must arrive as the
    same one line, hint and all."""
    import pickle

    from ctxpack.errors import CannotFit, InputError, UsageError

    for error in (InputError("rows.parquet", 3, "messages are not JSON", "a hint"),
                  InputError("rows.parquet", None, "column 'messages' holds int64"),
                  UsageError("no column 'x'", "columns: a, b"), CannotFit("over the window")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert vars(back) == vars(error)


@pytest.mark.parametrize("text", ['[{"role": "user", "content": "hi"}]\n',
                                  '[\n  {"role": "user", "content": "hi"}\n]\n', "[]\n"],
                         ids=["one line", "pretty-printed", "empty"])
def test_a_json_array_forced_as_request_bodies_is_refused_by_name(tmp_path, text) -> None:
    """anthropic-requests reads a whole document as one body: an array (messages saved
    bare) is none, said in one line, on stdin as from a file."""
    path = tmp_path / "messages.json"
    path.write_text(text)
    for where, run in ((str(path), ctxpack("stats", "--format", "anthropic-requests",
                                           str(path))),
                       ("<stdin>", ctxpack("validate", "--format", "anthropic-requests", "-",
                                           input=text.encode()))):
        assert_clean_error(run, 2, f"{where}:1: not read as anthropic-requests: an array, "
                                   "not a request body object")


@pytest.mark.parametrize("text", ["{}", '{\n  "messages": []\n}'])
def test_a_document_forced_as_a_cline_history_that_is_no_array_is_named(text) -> None:
    run = ctxpack("validate", "--format", "cline", "-", input=text.encode())
    assert_clean_error(run, 2, "<stdin>:1: not read as cline: an object, not the array of "
                               "messages a task's api_conversation_history.json is")
