"""facts.py, the verbatim details a summary must not lose: what counts as a path, a URL,
an identifier, an error line, a number or a command — and what only looks like one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.compression.facts import CATEGORIES, Facts, extract, merge, shell_command


@pytest.mark.parametrize("text, kind, found", [
    ("edited src/app/main.py and ./tests/test_cli.py.", "paths",
     ("src/app/main.py", "./tests/test_cli.py")),
    ("open README.md, then C:\\work\\proj\\setup.cfg", "paths",
     ("README.md", "C:\\work\\proj\\setup.cfg")),
    ("copy AUTOEXEC.BAT and notes.txt", "paths", ("AUTOEXEC.BAT", "notes.txt")),
    ("see https://docs.example.org/guide/part-3?x=1. Also (ftp://files.example.org/a).",
     "urls", ("https://docs.example.org/guide/part-3?x=1", "ftp://files.example.org/a")),
    ("call `parse_args` on app.HttpClient.send() for toolu_01ABCdef23 and #1234 (PROJ-42)",
     "identifiers", ("parse_args", "app.HttpClient.send()", "toolu_01ABCdef23", "#1234",
                     "PROJ-42")),
    ("commit a1b2c3d4e5 of run 123e4567-e89b-12d3-a456-426614174000", "identifiers",
     ("a1b2c3d4e5", "123e4567-e89b-12d3-a456-426614174000")),
    ("took 12 ms: 3 passed, 1 failed; v1.2.3 installed, 4096 rows", "numbers",
     ("12 ms", "3 passed", "1 failed", "v1.2.3", "4096 rows")),
    ("$ make test\nok\n", "commands", ("make test",)),
    ('{"command": ["bash", "-lc", "pytest -x tests/"]}', "commands", ("pytest -x tests/",)),
])
def test_a_fact_is_found_verbatim(text: str, kind: str, found: tuple[str, ...]) -> None:
    got = getattr(extract(text), kind)
    assert all(x in got for x in found), (kind, got)


@pytest.mark.parametrize("text, kind, not_found", [
    ("read and/or write, over TCP/IP; reply as application/json", "paths",
     ("and/or", "TCP/IP", "application/json")),
    ("see https://example.org/src/app.py", "paths", ("example.org/src/app.py", "/src/app.py")),
    ("call_count went up; UTF-8 and SHA-256 stayed", "identifiers",
     ("call_count", "UTF-8", "SHA-256")),
    ("  12→import os\n  13→import sys", "numbers", ("12", "13")),
    ("it is 2 parts of 1", "numbers", ("2", "1")),  # a bare number needs 3 digits
    ("x" * 3000 + "/y.py", "paths", ("x" * 3000 + "/y.py",)),  # data, not a path
    # a Go field and method whose names end as an extension might
    ("return store.DB.Close() when ctx.Err() is set", "paths", ("store.DB", "ctx.Err")),
])
def test_what_only_looks_like_a_fact_is_not_one(text: str, kind: str,
                                                not_found: tuple[str, ...]) -> None:
    got = getattr(extract(text), kind)
    assert not any(x in got for x in not_found), (kind, got)


def test_error_lines_are_the_lines_that_say_something_failed() -> None:
    text = "building\nerror: linker failed for target app\nFAILED tests/test_a.py::test_b\ndone\n"
    errors = extract(text).errors
    assert "error: linker failed for target app" in errors
    assert any("FAILED tests/test_a.py::test_b" in e for e in errors)
    assert not any(e in ("building", "done") for e in errors)


def test_a_command_is_one_line_from_a_string_or_an_argv() -> None:
    assert shell_command(" ls -la ") == "ls -la"
    assert shell_command(["git", "status", "--short"]) == "git status --short"
    assert shell_command(["zsh", "-c", "make"]) == "make"
    assert shell_command({"cmd": "ls"}) == "" and shell_command(["ls", 1]) == ""



def test_a_command_array_nested_past_the_parser_is_no_command() -> None:
    # an output that shows a "command" key before thousands of brackets (a log of odd
    # JSON, say) holds no argv: it is passed over, as text that is not JSON is
    text = '{"command": ' + "[" * 3000 + "]" * 3000 + '}\n$ make test\n'
    assert extract(text).commands == ("make test",)

TEXT = st.text(alphabet=st.one_of(st.sampled_from(list("ab/._-:`()#$\n 0123456789vAB")),
                                   st.characters()), max_size=300)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_facts_are_pieces_of_the_text_each_once(text: str) -> None:
    facts = extract(text)
    for kind in ("paths", "urls", "identifiers", "numbers", "errors"):
        items = getattr(facts, kind)
        assert len(set(items)) == len(items), kind
        assert all(x and x in text.replace("\\\\", "\\") for x in items), kind


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=4))
def test_merged_facts_are_the_facts_of_each_in_order_once(texts: list[str]) -> None:
    parts = [extract(t) for t in texts]
    merged = merge(*parts)
    for kind in CATEGORIES:
        expected = tuple(dict.fromkeys(x for p in parts for x in getattr(p, kind)))
        assert getattr(merged, kind) == expected
    assert merge() == Facts()
