"""Summarizers: turn the archived part of a transcript into one summary text.

The pipeline hands a summarizer a `Region` (the archived pieces in order and the
body of an earlier summary, if the transcript was compressed before) and gets
back the text of the summary message, which starts with `HEADING`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ...transcript import SUMMARY_HEADING, ToolCall, ToolResult
from ..facts import Facts

HEADING = SUMMARY_HEADING

Count = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Piece:
    """One archived piece: an assistant step (its text, calls and their results),
    or a lone message (a person's request, injected context, a stray result).

    A result's `is_error` says whether it failed: flagged so, a non-zero exit code, or
    error lines in its text (`failures.looks_failed`), as the pipeline found when it read
    the output; a summarizer need not look again."""

    role: str
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()
    human: bool = False
    facts: Facts | None = field(default=None, compare=False)  # found for it, if known

    @property
    def is_step(self) -> bool:
        return self.role == "assistant"


@dataclass(frozen=True, slots=True)
class Region:
    """What a summarizer summarizes: the archived pieces, oldest first, and the
    body of an earlier ctxpack summary they continue (None on a first compress).

    `older` are the pieces before those, more than a summary could show one line each:
    they are told in one folded line of counts, and searched only for the verbatim
    items (last request, open to-dos). Their results hold no text, only whether each
    failed, as their outputs are not read."""

    pieces: tuple[Piece, ...]
    previous: str | None = None
    older: tuple[Piece, ...] = ()
    archived: bool = True  # the originals are kept (not --no-archive, --strip-metadata)
    task: str | None = None  # the person's request kept whole before the summary, if any
    pinned: tuple[str, ...] = ()  # archived messages `--pin` keeps verbatim, oldest first
    focus: str | None = None  # what matters next (`--focus`)
    focused: tuple[str, ...] = ()  # the archived facts that name a word of `focus`


class Summarizer(Protocol):
    name: str

    def write(self, region: Region, max_tokens: int, count: Count) -> str:
        """The summary text, starting with HEADING, at most `max_tokens` by `count`
        when that is possible without dropping the verbatim items."""
        ...
