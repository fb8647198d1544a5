"""What the commands print for a person: a file's text never acts on the terminal, and a
table keeps every column in 80 columns."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .conftest import SAMPLES
from .helpers import ctxpack


def test_names_from_a_file_reach_no_terminal_as_commands(tmp_path: Path) -> None:
    """A model and a tool named with escape sequences are shown escaped by stats (table
    and markdown) and by compress's report, as show and validate show them."""
    text = (SAMPLES / "coding-agent.claude-code.jsonl").read_text(encoding="utf-8")
    bad = tmp_path / "bad.claude-code.jsonl"
    bad.write_text(text.replace('"model":"claude-opus-4-6"',
                                '"model":"claude-opus-4-6\\u001b]0;pwned\\u0007"')
                   .replace('"name":"Bash"', '"name":"Bash\\u001b[2J"'), encoding="utf-8")
    runs = [ctxpack("stats", str(bad)), ctxpack("stats", "--format", "markdown", str(bad)),
            ctxpack("compress", str(bad), "-o", str(tmp_path / "o.jsonl"))]
    for run in runs:
        assert run.code == 0, run.err
        said = run.out + run.err
        assert "\x1b" not in said and "\x07" not in said
    assert "claude-opus-4-6\\x1b]0;pwned\\x07" in runs[0].out
    assert "Bash\\x1b[2J" in runs[1].out
    assert "claude-opus-4-6\\x1b]0;pwned\\x07" in runs[2].err


def test_calibrate_keeps_every_column_in_80(tmp_path: Path) -> None:
    """A long model name folds in its column: the figures right of it (held-out error,
    worst) were cropped out of an 80-column pipe."""
    name = "claude-opus-4-6-with-a-very-long-deployment-name-20260101-eu"
    text = (SAMPLES / "coding-agent.claude-code.jsonl").read_text(encoding="utf-8")
    long = tmp_path / "long.claude-code.jsonl"
    long.write_text(text.replace('"model":"claude-opus-4-6"', f'"model":"{name}"'),
                    encoding="utf-8")
    run = ctxpack("calibrate", str(long), str(SAMPLES / "refactor.codex.jsonl"),
                  env={"COLUMNS": "80"})
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    # (the table; the notes under it are prose, which a terminal wraps itself)
    table = [line for line in lines if line[:1] in "┏┃┡│└ "]
    assert len(table) > 5 and all(len(line) <= 80 for line in table), run.out
    assert "held-out error" in run.out and "worst" in run.out, run.out
    # every row shows its two error figures, and the name is whole, if folded
    rows = [line for line in lines if line.startswith("│") and "%" in line]
    assert len(rows) == 2 and all(line.count("%") == 2 for line in rows), run.out
    assert name in "".join(line.split("│")[1].strip() for line in lines
                           if line.startswith("│") and "gpt" not in line), run.out


def test_csv_stats_escape_a_files_control_characters(tmp_path: Path) -> None:
    """A model named with ESC, CR and NUL is written to CSV escaped as the table shows it:
    no terminal sequence, and one row per file (a bare CR ended the row for a reader)."""
    text = (SAMPLES / "coding-agent.claude-code.jsonl").read_text(encoding="utf-8")
    bad = tmp_path / "bad\rname.claude-code.jsonl"
    bad.write_text(text.replace('"model":"claude-opus-4-6"',
                                '"model":"claude-opus-4-6\\u001b[2J\\r\\u0000x"'),
                   encoding="utf-8")
    run = ctxpack("stats", "--format", "csv", str(bad))
    assert run.code == 0, run.err
    assert not any(c in run.out for c in "\x1b\r\x00"), repr(run.out)
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert len(rows) == 1
    assert rows[0]["model"] == "claude-opus-4-6\\x1b[2J\\x0d\\x00x"
    assert rows[0]["path"] == str(bad).replace("\r", "\\x0d")
    table = ctxpack("stats", str(bad))
    assert "claude-opus-4-6\\x1b[2J\\x0d\\x00x" in table.out


def test_stats_of_many_files_keeps_what_tells_their_names_apart(tmp_path: Path) -> None:
    """Files deep in one folder, their names alike but for the end: the "All files" table
    names the folder once, above it, and each name whole (folded, not cut: a cut from the
    right left `/home/dev/pro…` on every row), within the terminal's width."""
    deep = tmp_path / "projects" / "a-team-with-a-long-name" / "sessions-of-march"
    names = [f"subfolder-{n}/rollout-2026-03-14T09-12-44-0199a3f2-6c1e-7b40-{n}.jsonl"
             for n in ("first", "second")]
    for name in names:
        (deep / name).parent.mkdir(parents=True)
        (deep / name).write_bytes((SAMPLES / "refactor.codex.jsonl").read_bytes())
    for width in (80, 120):
        run = ctxpack("stats", *(str(deep / n) for n in names), env={"COLUMNS": str(width)})
        assert run.code == 0, run.err
        table = run.out[run.out.index("All files"):].splitlines()
        assert all(len(line) <= width for line in table), run.out
        title = [line.strip() for line in table[:[x[:1] for x in table].index("┏")]]
        # (a title longer than the line is wrapped: compared without the spaces)
        assert "".join(title).replace(" ", "") == f"Allfiles(in{deep}/)", title
        column = "".join(line.split("│")[1].strip() for line in table
                         if line.startswith("│"))
        assert column == "".join(names) + "total", run.out
