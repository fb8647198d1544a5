"""The stats progress bar: on a terminal for many files, silent otherwise."""

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
