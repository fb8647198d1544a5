"""No command writes over what it reads: an output named by an option (`-o`, `--html`,
`--report-json`, `--per-row`, `--archive-dir`) that is one of the inputs, or that another
of the run's outputs also names, is refused in one line (exit 2) before any work, with
every file left as it was; a page is written only over nothing or over an HTML page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack

SAMPLE = SAMPLES / "multi-round.anthropic.jsonl"
BUDGET = "3000"  # far below the sample: compress has work to do, and archives it


@pytest.fixture()
def here(tmp_path: Path) -> Path:
    """a.jsonl and b.jsonl (copies of a sample) and d/x.jsonl, in a folder of their own."""
    shutil.copy(SAMPLE, tmp_path / "a.jsonl")
    shutil.copy(SAMPLES / "support-chat.openai.jsonl", tmp_path / "b.jsonl")
    (tmp_path / "d").mkdir()
    shutil.copy(SAMPLE, tmp_path / "d" / "x.jsonl")
    return tmp_path


def _untouched(here: Path) -> None:
    assert (here / "a.jsonl").read_bytes() == SAMPLE.read_bytes()
    assert (here / "b.jsonl").read_bytes() == \
        (SAMPLES / "support-chat.openai.jsonl").read_bytes()
    assert (here / "d" / "x.jsonl").read_bytes() == SAMPLE.read_bytes()


def test_stats_html_never_writes_over_a_transcript(here: Path) -> None:
    # the page named as one of the files it pictures
    run = ctxpack("stats", "--html", "a.jsonl", "a.jsonl", cwd=str(here))
    assert_clean_error(run, 2, "a.jsonl is an input: --html would be written over it")
    assert run.out == ""  # refused before any work: no table either
    # `stats --html FILE` read as the usage line has it: FILE is taken for the page
    run = ctxpack("stats", "--html", "a.jsonl", "b.jsonl", cwd=str(here))
    assert_clean_error(run, 2, "a.jsonl is there and is not an HTML page")
    assert run.out == ""
    _untouched(here)


def test_stats_html_writes_a_new_page_and_over_its_own_page(here: Path) -> None:
    page = here / "page.html"
    assert ctxpack("stats", "a.jsonl", "--html", "page.html", cwd=str(here)).code == 0
    first = page.read_text(encoding="utf-8")
    assert first.lstrip().lower().startswith("<!doctype html")
    # run again: the page of the last run is replaced, as it should be
    run = ctxpack("stats", "b.jsonl", "--html", "page.html", cwd=str(here))
    assert run.code == 0, run.err
    assert page.read_text(encoding="utf-8") != first
    # an empty file holds nothing to lose
    (here / "empty.html").write_bytes(b"")
    assert ctxpack("stats", "a.jsonl", "--html", "empty.html", cwd=str(here)).code == 0
    _untouched(here)


@pytest.mark.parametrize("args, fragment", [
    # --report-json over the input, one file and many
    (["compress", "a.jsonl", "-o", "out.jsonl", "--report-json", "a.jsonl"],
     "a.jsonl is an input: --report-json would be written over it"),
    (["compress", "a.jsonl", "--report-json", "a.jsonl"], "--report-json"),
    (["compress", "a.jsonl", "--in-place", "--force", "--report-json", "a.jsonl"],
     "--report-json"),
    (["compress", "d", "--out-dir", "out", "--report-json", "d/x.jsonl"], "--report-json"),
    (["compress", "a.jsonl", "d", "--out-dir", "out", "--report-json", "a.jsonl"],
     "--report-json"),
    (["restore", "d", "--out-dir", "out", "--report-json", "d/x.jsonl"], "--report-json"),
    (["rewind", "d", "--out-dir", "out", "-n", "1", "--report-json", "d/x.jsonl"],
     "--report-json"),
    (["convert", "d", "--out-dir", "out", "--to", "markdown", "--report-json", "d/x.jsonl"],
     "--report-json"),
    # two outputs on one file: the report would be lost under the transcript
    (["compress", "a.jsonl", "-o", "out.jsonl", "--report-json", "out.jsonl"],
     "--output and --report-json would both be written to out.jsonl"),
    (["compress", "d", "--out-dir", "out", "--report-json", "out/x.jsonl"],
     "would both be written to out/x.jsonl"),
    (["compress", "a.jsonl", "--report-json", "-"],
     "the output and --report-json would both be written to stdout"),
    (["stats", "a.jsonl", "--html", "-"], "the tables and --html would both be written to stdout"),
    # the archive folder named as a file the run reads or writes
    (["compress", "a.jsonl", "-o", "out.jsonl", "--budget", BUDGET, "--archive-dir",
      "a.jsonl"], "a.jsonl is an input: --archive-dir would be written over it"),
    (["compress", "a.jsonl", "-o", "out.jsonl", "--budget", BUDGET, "--archive-dir",
      "out.jsonl"], "--output and --archive-dir would both be written to out.jsonl"),
    (["rewind", "a.jsonl", "-n", "1", "-o", "out.jsonl", "--archive-dir", "a.jsonl"],
     "--archive-dir"),
    # -o over the input, each command
    (["compress", "a.jsonl", "-o", "a.jsonl"], "a.jsonl would be written over itself"),
    (["restore", "a.jsonl", "-o", "a.jsonl"], "a.jsonl would be written over itself"),
    (["rewind", "a.jsonl", "-n", "1", "-o", "./a.jsonl"], "would be written over itself"),
    (["convert", "a.jsonl", "--to", "openai", "-o", "a.jsonl"], "over itself"),
    # a page over a file that is not one
    (["convert", "a.jsonl", "--to", "html", "-o", "b.jsonl"],
     "b.jsonl is there and is not an HTML page"),
    # calibrate adds to a config file: not to a transcript it reads
    (["calibrate", "a.jsonl", "--write-config", "a.jsonl"], "--write-config"),
])
def test_an_output_over_an_input_or_another_output_is_refused(
        here: Path, args: list[str], fragment: str) -> None:
    run = ctxpack(*args, cwd=str(here))
    assert_clean_error(run, 2, fragment)
    _untouched(here)
    assert not (here / "out.jsonl").exists() and not (here / "out").exists()


def test_in_place_still_writes_over_its_input(here: Path) -> None:
    run = ctxpack("compress", "a.jsonl", "--in-place", "--force", "--budget", BUDGET,
                  "--report-json", "report.json", cwd=str(here))
    assert run.code == 0, run.err
    assert (here / "a.jsonl").read_bytes() != SAMPLE.read_bytes()
    assert (here / "report.json").read_bytes().startswith(b"{")


def test_a_page_is_written_over_a_page(here: Path) -> None:
    page = here / "a.html"
    page.write_text("<!DOCTYPE html>\n<html><body>the last run</body></html>\n")
    run = ctxpack("convert", "a.jsonl", "--to", "html", "-o", "a.html", cwd=str(here))
    assert run.code == 0, run.err
    assert "the last run" not in page.read_text(encoding="utf-8")
