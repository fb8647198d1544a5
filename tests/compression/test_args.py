"""args.py, a call as a summary line shows it: its arguments in full, or in brief (one
argument, shortened) once the line is condensed."""

from __future__ import annotations

import orjson

from ctxpack.compression.args import BRIEF_CHARS, call_label
from ctxpack.transcript import ToolCall

from .summarizers.pieces import LONG_COMMAND


def test_a_brief_label_shows_one_argument_short() -> None:
    call = ToolCall("c1", "WebFetch", orjson.dumps(
        {"url": "https://example.org/a/very/long/path/to/a/page.html",
         "prompt": "What does this page say about scrolling in embedded terminals?"}).decode())
    full, brief = call_label(call), call_label(call, brief=True)
    assert full.startswith("WebFetch(url=https://example.org/") and "prompt=" in full
    assert brief.startswith("WebFetch(https://example.org/a/") and "prompt" not in brief
    bash = ToolCall("c2", "bash", orjson.dumps({"command": LONG_COMMAND}).decode())
    short = call_label(bash, brief=True)
    assert short.startswith("bash(curl -sL") and short.endswith("…)")
    assert len(short) <= len("bash()") + 2 * BRIEF_CHARS
