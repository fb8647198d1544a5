"""The progress bar of stats and compress: on a terminal for many files or a big one,
silent otherwise; and the byte counts the library reports to it."""

from __future__ import annotations

import io

from rich.console import Console

from ctxpack.render.progress import FileProgress


def files(tmp_path, n):
    paths = []
    for i in range(n):
        p = tmp_path / f"run{i}.jsonl"
        p.write_text('{"role":"user","content":"hi"}\n')
        paths.append(str(p))
    return paths


def test_bar_shows_on_a_terminal_for_many_files(tmp_path):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    paths = files(tmp_path, 5)
    with FileProgress(paths, console) as advance:
        for p in paths:
            advance(p)(31)
    assert "run" in out.getvalue()


def test_no_bar_in_a_pipe_or_for_one_small_file(tmp_path):
    out = io.StringIO()
    with FileProgress(files(tmp_path, 5), Console(file=out, force_terminal=False)) as advance:
        assert advance("x") is None
    with FileProgress(files(tmp_path, 1), Console(file=out, force_terminal=True)) as advance:
        assert advance("x") is None
    assert out.getvalue() == ""


def test_compress_reports_the_bytes_it_has_read(tmp_path):
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options

    from .compression.transcripts import billed
    from .conftest import SAMPLES

    path = SAMPLES / "coding-agent.claude-code.jsonl"
    told: list[int] = []
    budget = billed(path, 3000)  # 3,000 tokens of the file's own, in the billed tokens
    result = compress_file(path, Options(budget=budget), progress=told.append, cache=False)
    result.close()
    assert told, "no progress was reported"
    assert told == sorted(told)
    assert told[-1] == path.stat().st_size
