"""Pieces for the summarizers to summarize: tool steps whose outputs hold facts."""

from __future__ import annotations

import orjson

from ctxpack.compression.summarizers import Piece
from ctxpack.transcript import Text, ToolCall, ToolResult

LONG_COMMAND = ("curl -sL https://downloads.example.org/releases/v8.11.1/wrapper.jar -o "
                "build/wrapper.jar && sha256sum build/wrapper.jar && ls -la build")
CONDENSED = "Condensed to fit the token budget:"  # what a condensed summary's note opens with


def step(n: int, command: str, output: str, failed: bool = False) -> Piece:
    call = ToolCall(f"call_{n}", "bash", orjson.dumps({"command": command}).decode())
    return Piece("assistant", "", (call,), (ToolResult(f"call_{n}", (Text(output),), failed),))


def units_with_facts(n: int) -> tuple[Piece, ...]:
    """Steps whose outputs hold one path, one URL, one error and a few lesser facts each."""
    return tuple(step(k, f"{LONG_COMMAND} --attempt {k}",
                      f"wrote src/module_{k}/handler_{k}.py\n"
                      f"see https://docs.example.org/guide/part-{k}\n"
                      f"Error: check {k} failed with code_{k}_value and RequestId_{k}\n"
                      f"took {100 + k} ms, {k * 1000 + 7} rows, sha a1b2c3d{k:04d}",
                      failed=True)
                 for k in range(1, n + 1))


def primary_facts(k: int) -> tuple[str, ...]:
    """The facts of step k's line kept longest: its path, URL and error line."""
    return (f"src/module_{k}/handler_{k}.py", f"https://docs.example.org/guide/part-{k}",
            f"Error: check {k} failed")


def lesser_facts(k: int) -> tuple[str, ...]:
    """The facts of step k's line dropped first: a digest, counts, a time."""
    return (f"a1b2c3d{k:04d}", f"{k * 1000 + 7} rows", f"{100 + k} ms")
