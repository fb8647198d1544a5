"""Tests for ctxpack.compress.truncate: limits, modes, the marker, error rescue, folding.

Examples pin the exact shape of a cut; hypothesis checks the invariants (within limits,
idempotent, ends kept verbatim) over random texts and limits, tiny ones included.
"""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.compression import cutting
from ctxpack.compression.cutting import MODES, Limits, Truncated, line_count
from ctxpack.errors import UsageError

REF = "ctxpack:t-3f2a9c1d"
NO_LIMITS = Limits(max_lines=None, max_bytes=None, max_tokens=None)
FOLDED = re.compile(r"^(.*)  \[repeated ([\d,]+) times\]$")


def words(text: str) -> int:
    return len(text.split())


def numbered(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(n))


def lines_limit(n: int, mode: str = "head_tail") -> Limits:
    return Limits(max_lines=n, max_bytes=None, max_tokens=None, mode=mode)


def cut_of(text: str, limits: Limits, count=words) -> Truncated:
    done = cutting.cut(text, limits, count, REF)
    assert done is not None
    assert not limits.over(done.text, count), done.text
    return done


def split_at_marker(cut: Truncated) -> tuple[list[str], str, list[str]]:
    """The lines before the one marker line, the marker, and the lines after it."""
    lines = cut.text.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("[ctxpack:")]
    assert len(at) == 1, cut.text
    return lines[: at[0]], lines[at[0]], lines[at[0] + 1 :]


def unfold(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        m = FOLDED.match(line)
        out += [m[1]] * int(m[2].replace(",", "")) if m else [line]
    return out


# --- Limits ---------------------------------------------------------------------------


def test_line_count_treats_a_final_newline_as_an_end() -> None:
    assert [line_count(t) for t in ("", "a", "a\n", "a\nb", "a\n\n", "\n")] == [0, 1, 1, 2, 2, 1]


def test_over_measures_utf8_bytes_not_characters() -> None:
    text = "é" * 10  # 20 bytes
    assert Limits(max_bytes=19).over(text, words)
    assert not Limits(max_bytes=20).over(text, words)


def test_over_counts_lines_and_tokens() -> None:
    assert Limits(max_lines=2).over("a\nb\nc", words)
    assert not Limits(max_lines=2).over("a\nb\n", words)
    assert Limits(max_tokens=2).over("a b c", words)
    assert not Limits(max_tokens=3).over("a b c", words)


def test_over_counts_tokens_only_when_the_cheap_checks_pass() -> None:
    def boom(text: str) -> int:
        raise AssertionError("count called")

    assert Limits(max_lines=1).over("a\nb", boom)
    assert Limits(max_bytes=3).over("abcdef", boom)
    assert not Limits(max_tokens=None).over("a\nb", boom)


@pytest.mark.parametrize("kwargs", [{"mode": "middle"}, {"max_lines": -1}, {"max_tokens": -5}])
def test_bad_limits_are_usage_errors(kwargs: dict) -> None:
    with pytest.raises(UsageError):
        Limits(**kwargs)


# --- when nothing is cut --------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_text_within_limits_is_left_alone(mode: str) -> None:
    assert cutting.cut(numbered(10), lines_limit(10, mode), words, REF) is None
    assert cutting.cut("", Limits(max_lines=0, max_bytes=0, max_tokens=0, mode=mode),
                    words, REF) is None
    assert cutting.cut("x" * 30_000, Limits(mode=mode), words, REF) is None


def test_without_limits_nothing_is_cut_or_counted() -> None:
    def boom(text: str) -> int:
        raise AssertionError("count called")

    assert cutting.cut(numbered(10_000), NO_LIMITS, boom, REF) is None


def test_a_line_over_the_limit_is_cut() -> None:
    assert cutting.cut(numbered(11), lines_limit(10), words, REF) is not None


# --- modes ----------------------------------------------------------------------------


def test_head_keeps_the_start() -> None:
    before, marker, after = split_at_marker(cut_of(numbered(100), lines_limit(10, "head")))
    assert before == [f"line {i}" for i in range(9)]
    assert after == []


def test_tail_keeps_the_end() -> None:
    before, marker, after = split_at_marker(cut_of(numbered(100), lines_limit(10, "tail")))
    assert before == []
    assert after == [f"line {i}" for i in range(91, 100)]


def test_head_tail_gives_each_end_about_half() -> None:
    cut = cut_of(numbered(100), lines_limit(10))
    before, marker, after = split_at_marker(cut)
    assert before == [f"line {i}" for i in range(5)]
    assert after == [f"line {i}" for i in range(96, 100)]
    assert (cut.lines_before, cut.lines_cut, cut.errors_kept, cut.repeats_collapsed) == (
        100, 91, 0, 0)


def test_marker_says_what_was_cut_and_where_the_full_text_is() -> None:
    cut = cut_of(numbered(100), lines_limit(10))
    _, marker, _ = split_at_marker(cut)
    assert marker.startswith("[ctxpack: cut 91 of 100 lines here;")
    left_out = cut.tokens_before - words("\n".join(cut.text.splitlines()[:5] +
                                                   cut.text.splitlines()[6:]))
    assert f"; {left_out} tokens left out;" in marker
    assert marker.endswith(f"full output archived as {REF}]")


def test_counts_in_the_cut_are_right() -> None:
    text = numbered(1_500)
    cut = cut_of(text, Limits(max_lines=50, max_tokens=None))
    assert cut.tokens_before == words(text)
    assert cut.tokens_after == words(cut.text)
    assert "cut 1,451 of 1,500 lines" in cut.text  # thousands are grouped


@pytest.mark.parametrize("mode", MODES)
def test_the_limits_are_used_not_wasted(mode: str) -> None:
    limits = Limits(max_lines=None, max_bytes=2_000, max_tokens=None, mode=mode)
    cut = cut_of(numbered(1_000), limits)
    assert len(cut.text.encode()) > 2_000 - 20  # within a line or so of the limit


# --- trailing newline and idempotence -------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("end", ["\n", ""])
def test_a_final_newline_is_kept_exactly_when_the_original_had_one(mode: str, end: str) -> None:
    text = numbered(100).rstrip("\n") + end
    cut = cut_of(text, lines_limit(10, mode))
    assert cut.text.endswith("\n") == (end == "\n")
    assert not cut.text.endswith("\n\n")


@pytest.mark.parametrize("mode", MODES)
def test_cutting_twice_changes_nothing(mode: str) -> None:
    limits = Limits(max_lines=40, max_bytes=900, max_tokens=120, mode=mode)
    cut = cut_of(numbered(1_000) + "Error: disk full\n" + numbered(50), limits)
    assert cutting.cut(cut.text, limits, words, REF) is None


def test_same_input_same_output() -> None:
    text = numbered(500) + "FAILED test_x\n" * 3 + numbered(500, "more")
    assert cutting.cut(text, Limits(max_lines=30), words, REF) == cutting.cut(
        text, Limits(max_lines=30), words, REF)


# --- long lines -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_one_enormous_line_is_cut_by_characters(mode: str) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(200_000))
    cut = cut_of(text, Limits(max_bytes=500, mode=mode))
    before, marker, after = split_at_marker(cut)
    assert "characters of 1 long line" in marker and "lines here" not in marker
    assert len(cut.text.encode()) > 450  # the budget is used, not halved
    assert (cut.lines_before, cut.lines_cut) == (1, 0)
    if mode != "tail":
        assert before and text.startswith(before[0])
    if mode != "head":
        assert after and text.endswith(after[-1])
    assert cutting.cut(cut.text, Limits(max_bytes=500, mode=mode), words, REF) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_character_cut_never_splits_a_character(mode: str) -> None:
    text = "日本語🙂é" * 40_000 + "\n"
    cut = cut_of(text, Limits(max_bytes=301, mode=mode))
    cut.text.encode("utf-8")  # strict: raises on a lone surrogate
    assert cut.text.endswith("\n")
    _, _, after = split_at_marker(cut)
    if mode != "head":
        assert text.rstrip("\n").endswith(after[-1])


@pytest.mark.parametrize("mode", MODES)
def test_lines_longer_than_the_byte_limit(mode: str) -> None:
    text = "".join(f"{i:04d}" + "x" * 996 + "\n" for i in range(50))
    cut = cut_of(text, Limits(max_bytes=300, mode=mode))
    assert cut.text.endswith("\n")
    lines = text.splitlines()
    before, _, after = split_at_marker(cut)
    if mode == "head":
        assert len(before) == 1 and lines[0].startswith(before[0])
    if mode == "tail":
        assert len(after) == 1 and lines[-1].endswith(after[0])


@pytest.mark.parametrize("mode", MODES)
def test_very_small_limits(mode: str) -> None:
    text = numbered(1_000) + "Traceback (most recent call last):\nKeyError: 'x'\n" + numbered(9)
    limits = Limits(max_lines=3, max_bytes=200, mode=mode)
    cut = cut_of(text, limits)
    assert cut.text.count("\n") <= 3
    assert cutting.cut(cut.text, limits, words, REF) is None


# --- no room even for the marker ------------------------------------------------------


@pytest.mark.parametrize(("limits", "expected"), [
    (Limits(max_bytes=70), f"[ctxpack: output cut; full output archived as {REF}]\n"),
    (Limits(max_bytes=40), "[ctxpack: cut]\n"),
    (Limits(max_bytes=10), ""),
    (Limits(max_lines=0), ""),
    (Limits(max_tokens=1), ""),  # "[ctxpack: cut]" is two words
])
def test_when_not_even_the_marker_fits_the_smallest_honest_result(
        limits: Limits, expected: str) -> None:
    cut = cut_of(numbered(5_000), limits)
    assert cut.text == expected
    assert cut.lines_cut == cut.lines_before == 5_000
    assert cutting.cut(cut.text, limits, words, REF) is None


# --- error lines ----------------------------------------------------------------------

ERROR_LINES = [
    "Traceback (most recent call last):", "ValueError: bad value", "npm ERR! code ERROR",
    "src/x.c:3: error: expected ';'", "FAILED tests/test_x.py::test_y", "FAIL: test_parse",
    "thread 'main' panicked at src/main.rs:2:5", "panic: runtime error", "fatal: not a repo",
    "java.lang.IllegalStateException", "Process exited with code 1", "exit code 2",
    "Exit code: 1", "returned non-zero exit status 1", "EXIT CODE 137",
    'cmd/agent/main.go:11:2: "log" imported and not used', "lib/a.c:3:5: error: expected ';'",
    "src/app.py:12: error: Incompatible types in assignment", "src/app.py:1:8: F401 unused",
]
QUIET_LINES = ["exit code 0", "all errors cleared", "INFO done", "Exit code: 0",
               "lib/a.c:3:5: warning: unused variable 'x'", "src/app.py:12:def parse():",
               "src/app.py:12:5:    return ValueError", "    raise ValueError('bad')",
               "see notes.md:3: for the plan"]


@pytest.mark.parametrize("line", ERROR_LINES)
def test_an_error_line_in_the_cut_region_is_kept(line: str) -> None:
    cut = cut_of(numbered(500) + line + "\n" + numbered(500, "more"), lines_limit(20))
    before, marker, after = split_at_marker(cut)
    assert after[0] == line
    assert cut.errors_kept == 1 and "kept 1 error line from them below" in marker
    assert cut.lines_cut == 1_001 - 19  # 9 head, 9 tail, the error


@pytest.mark.parametrize("line", QUIET_LINES)
def test_ordinary_lines_are_not_taken_for_errors(line: str) -> None:
    cut = cut_of(numbered(500) + line + "\n" + numbered(500, "more"), lines_limit(20))
    assert line not in cut.text and cut.errors_kept == 0


def test_a_traceback_keeps_its_first_and_last_line_in_order() -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: \'k\'\n'
    cut = cut_of(numbered(500) + trace + numbered(500, "more"), lines_limit(20, "head"))
    _, _, after = split_at_marker(cut)
    assert after == ["Traceback (most recent call last):", "KeyError: 'k'"]


def test_each_distinct_error_line_is_kept_once() -> None:
    text = numbered(300) + "Error: A\nok\nError: B\nok\nError: A\n" + numbered(300, "more")
    before, _, after = split_at_marker(cut_of(text, lines_limit(20)))
    assert after[:2] == ["Error: A", "Error: B"]
    assert "Error: A" not in after[2:] and "Error: A" not in before


def test_error_lines_already_shown_are_not_repeated() -> None:
    text = "Error: early\n" + numbered(500) + "Error: late\n"
    cut = cut_of(text, lines_limit(10))
    assert cut.text.count("Error: early") == cut.text.count("Error: late") == 1
    assert cut.errors_kept == 0


@pytest.mark.parametrize("mode", MODES)
def test_more_error_lines_than_fit_are_capped_and_the_ends_stay(mode: str) -> None:
    text = numbered(50, "start") + numbered(5_000, "ERROR") + numbered(50, "end")
    limits = Limits(max_lines=40, max_bytes=1_000, max_tokens=300, mode=mode)
    cut = cut_of(text, limits)
    before, _, after = split_at_marker(cut)
    rescued = after[: cut.errors_kept]
    assert 0 < cut.errors_kept < 5_000
    assert all(line.startswith("ERROR") for line in rescued)
    assert rescued == sorted(rescued, key=lambda line: int(line.split()[1]))
    if mode != "tail":
        assert before[0] == "start 0"
    if mode != "head":
        assert after[-1] == "end 49"


# --- folding repeats ------------------------------------------------------------------


def test_folding_alone_can_be_enough() -> None:
    text = "building\n" + "waiting for lock\n" * 1_000 + "done\n"
    cut = cut_of(text, lines_limit(20))
    assert cut.text.splitlines() == [
        "building", "waiting for lock  [repeated 1,000 times]", "done",
        f"[ctxpack: folded 999 repeated lines; {cut.tokens_before - 8:,} tokens left out; "
        f"full output archived as {REF}]",
    ]
    assert (cut.lines_cut, cut.repeats_collapsed, cut.lines_before) == (0, 999, 1_002)
    assert cutting.cut(cut.text, lines_limit(20), words, REF) is None


def test_in_tail_mode_the_fold_marker_comes_first() -> None:
    cut = cut_of("waiting\n" * 100 + "done\n", lines_limit(5, "tail"))
    assert cut.text.splitlines()[0].startswith("[ctxpack: folded 99 repeated lines;")
    assert cut.text.splitlines()[1:] == ["waiting  [repeated 100 times]", "done"]


def test_only_runs_of_three_or_more_fold() -> None:
    text = "a\na\nb\nb\nb\n" + numbered(100)
    before, _, _ = split_at_marker(cut_of(text, lines_limit(8, "head")))
    assert before == ["a", "a", "b  [repeated 3 times]", "line 0", "line 1", "line 2", "line 3"]


def test_folding_then_cutting_counts_only_the_folds_shown() -> None:
    text = "x\n" * 10 + numbered(1_000) + "y\n" * 20
    cut = cut_of(text, lines_limit(10))
    assert cut.repeats_collapsed == 9 + 19
    assert cut.lines_before == 1_030
    assert cut.lines_cut == 1_030 - (10 + 4 + 3 + 20)  # x run, 4 head, 3 tail, y run
    assert "folded 28 repeated lines" in cut.text


# --- scale ----------------------------------------------------------------------------


def test_fifty_megabytes_in_linear_time_and_few_big_counts() -> None:
    half = "".join(f"2024-05-01 12:00:00 INFO worker {i} processed batch, status ok, took 12 ms\n"
                   for i in range(340_000))
    text = half + "Traceback (most recent call last):\nOSError: disk full\n" + half
    sizes: list[int] = []

    def counting(s: str) -> int:
        sizes.append(len(s))
        return words(s)

    started = time.perf_counter()
    cut = cut_of(text, Limits(), counting)
    assert time.perf_counter() - started < 30
    assert len(text) > 50_000_000
    assert sum(size > 1_000_000 for size in sizes) == 1  # the original, once
    assert len(sizes) < 100
    assert cut.errors_kept == 2 and cut.repeats_collapsed == 0


def test_a_huge_single_line_is_cut_quickly() -> None:
    started = time.perf_counter()
    cut = cut_of("z" * 50_000_000, Limits())
    assert time.perf_counter() - started < 10
    assert len(cut.text) <= 30_000


# --- a real tokenizer -----------------------------------------------------------------


def test_with_the_o200k_tokenizer(exact_tokens: None) -> None:
    from ctxpack.tokens import encode_count, load_encoding

    enc = load_encoding("o200k_base")

    def count(text: str) -> int:
        return encode_count(enc, text)

    text = numbered(3_000, "compiling crate") + "error[E0308]: mismatched types\n" + numbered(
        3_000, "warning: unused")
    for mode in MODES:
        limits = Limits(max_lines=None, max_bytes=None, max_tokens=400, mode=mode)
        cut = cut_of(text, limits, count)
        assert 380 <= cut.tokens_after <= 400
        assert "error[E0308]: mismatched types" in cut.text
        assert cutting.cut(cut.text, limits, count, REF) is None


# --- properties -----------------------------------------------------------------------

LINE = st.one_of(
    st.sampled_from(["", "ok", "ok", "Error: x", "FAILED", "exit code 3", "ü€🙂"]),
    st.text(alphabet="ab Eé🙂", max_size=60),
    st.text(alphabet="ab🙂", min_size=200, max_size=1_000),  # longer than small byte limits
)
TEXTS = st.builds(lambda lines, end: "\n".join(lines) + end,
                  st.lists(LINE, max_size=60), st.sampled_from(["", "\n"]))
LIMITS = st.builds(
    Limits,
    max_lines=st.none() | st.integers(0, 30),
    max_bytes=st.none() | st.integers(0, 400),
    max_tokens=st.none() | st.integers(0, 60),
    mode=st.sampled_from(MODES),
)


def check_ends(text: str, cut: Truncated, mode: str) -> None:
    """The shown ends are verbatim original lines (or parts of the lines at the cut)."""
    original = text.splitlines()
    before, _, after = split_at_marker(cut)
    head, rescued, tail = unfold(before), after[: cut.errors_kept], unfold(after[cut.errors_kept:])
    if mode == "tail":
        assert not head
    if mode == "head":
        assert not tail
    if head:
        assert head[:-1] == original[: len(head) - 1]
        assert original[len(head) - 1].startswith(head[-1])
    if tail:
        assert tail[1:] == original[len(original) - len(tail) + 1 :]
        assert original[len(original) - len(tail)].endswith(tail[0])
    assert len(set(rescued)) == len(rescued)
    hidden = range(len(head), len(original) - len(tail))
    positions = [original.index(unfold([line])[0], hidden.start, hidden.stop) for line in rescued]
    assert positions == sorted(positions)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, limits=LIMITS)
def test_random_texts_and_limits(text: str, limits: Limits) -> None:
    done = cutting.cut(text, limits, words, REF)
    assert (done is None) == (not text or not limits.over(text, words))
    if done is None:
        return
    assert not limits.over(done.text, words)
    assert cutting.cut(done.text, limits, words, REF) is None
    assert done.lines_before == line_count(text)
    assert 0 <= done.lines_cut <= done.lines_before
    assert done.tokens_after == words(done.text)
    done.text.encode("utf-8")  # strict: no character was split
    if done.text.startswith("[ctxpack: cut]") or done.text == "":
        return
    assert done.text.endswith("\n") == text.endswith("\n")
    check_ends(text, done, limits.mode)
