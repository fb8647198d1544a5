"""failures.py, whether a tool output failed: its exit code has the last word, else the
error lines in its first or last EDGE characters, where a failure shows."""

from __future__ import annotations

import pytest

from ctxpack.compression.failures import EDGE, error_lines, exit_code, looks_failed


@pytest.mark.parametrize("text", [
    "all tests passed\n",
    "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: x\n",
    "log line\nERROR something broke\nmore\n",
    "build ok\nExit code: 0\n",
    "build\nerror: linker failed\nExit code: 2\n",
    "    raise ValueError('not an error line')\n",
    "ok\n" * 1000 + "FAILED tests/test_a.py::test_b\n",
    "make: leaving directory\nprocess exited with code 3\n",
    "<returncode>1</returncode>\n",
    "Exit status: 0\nNo such file or directory\n",  # the code has the last word
    "preexit code 1\n",  # no exit code (glued), but an error line all the same
])
def test_looks_failed_agrees_with_the_error_lines_and_exit_code(text: str) -> None:
    code = exit_code(text)
    expected = code != 0 if code is not None else bool(list(error_lines(text)))
    assert looks_failed(text) is expected


def test_a_long_output_is_judged_by_its_first_and_last_lines() -> None:
    filler = "collected line of output\n" * (2 * EDGE // 25)
    error = "ERROR: the database is locked\n"
    assert looks_failed(error + filler + filler)  # it could not start
    assert looks_failed(filler + filler + error)  # it ended so
    assert not looks_failed(filler + error + filler)  # a log it printed, say
    assert not looks_failed(filler + error + filler + "Exit code: 0\n")  # the code decides
    assert looks_failed(filler + filler + "Exit code: 1\n")
    pad = "x" * (2 * EDGE)  # lines longer than the edge are cut in them
    assert not looks_failed(pad + " No such file or directory " + pad)
    assert looks_failed(pad + pad + " No such file or directory")
