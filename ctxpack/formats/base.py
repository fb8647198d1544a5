"""What every format module provides: a sniffer and a streaming reader.

A reader is fed parsed records in file order and hands back messages as soon as
they are complete, so a caller may count and drop them (stats of a 1 GB file
never holds the whole file). At the end it says which of the messages it handed
out form the model-visible context, in model order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..transcript import Message, RecordedCall, Text

P = TypeVar("P")


class RecordError(Exception):
    """A record that does not fit the format being read; the loader adds file and line."""


@dataclass
class Layout:
    """Which emitted messages (numbered 0, 1, ... in emission order) the model sees.

    `context` lists them in model order; `sidechain` lists sub-agent messages;
    every other emitted message is in the file but outside the model's context.
    `records_outside` counts non-message records kept in the file only. `calls` are the
    model calls the file records the prompt size of, their `prompt` a place in `context`.
    """

    context: list[int]
    sidechain: list[int] = field(default_factory=list)
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    conversations: int = 1
    calls: list[RecordedCall] = field(default_factory=list)


class Reader(Protocol):
    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        """Take one record; return the messages it completes (maybe none)."""
        ...

    def finish(self) -> tuple[list[Message], Layout]:
        """Return the messages still pending and the layout of all of them."""
        ...


class Format(Protocol):
    name: str
    description: str
    # optional `default_model`: the model to assume when a file of this format names none

    def sniff(self, record: dict[str, Any]) -> int:
        """How surely `record` is of this format: 0 no, 1 maybe, 2 surely."""
        ...

    def reader(self) -> Reader: ...


def string_field(d: dict[str, Any], key: str) -> str | None:
    """`d[key]` if it is a string, None if it is absent or null. Any other value does not
    fit the format: ids, types and links are used as keys and compared, so a reader that
    took an array for one would fail far from the line that holds it."""
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    from ..jsonl import json_kind

    raise RecordError(f"{key!r} is {json_kind(value)}, not a string")


def text_of(value: Any) -> str:
    """Text of a content value that may be a string, a list of blocks or something else."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                out.append(item["text"])
        return "\n".join(out)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    from ..jsonl import dumps

    return dumps(value).decode("utf-8", "surrogatepass")


def content_parts(content: Any, item_part: Callable[[dict[str, Any]], P | None]) -> list[P | Text]:
    """Parts of a `content` value: a string, a list of items, or anything else as text.

    Each dict item becomes what `item_part` makes of it (None drops it); this is
    the one walk every format shares, the item shapes are each format's own.
    """
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        return [Text(text_of(content))]
    parts: list[P | Text] = []
    for item in content:
        if isinstance(item, str):
            parts.append(Text(item))
        elif isinstance(item, dict) and (part := item_part(item)) is not None:
            parts.append(part)
    return parts


@dataclass
class Compaction:
    """What replaces an archived span of the file: a summary and what must come with it.

    `meta` is the `ctxpack` object of the summary record, `part` the one every other
    new record of the span carries. `head` holds the records of the kept head (the
    system prompt, the task) to write again after a reset marker; `before` is the
    last record before the span; `merge` a user record the summary joins (formats
    that need roles to alternate), else None.
    """

    summary: str
    meta: dict[str, Any]
    part: dict[str, Any]
    head: list[dict[str, Any]] = field(default_factory=list)
    before: dict[str, Any] | None = None
    merge: dict[str, Any] | None = None
    tokens_before: int = 0
    time: str = ""
    seed: str = ""


class Editor(Protocol):
    """How compress writes a format: tool results replaced, a span compacted."""

    resets: bool  # the format has a marker after which the context starts again
    alternates: bool  # the summary must join an adjacent user message

    def keeps_place(self, message: Message) -> bool:
        """True for a head message that stays in context across a reset marker."""
        ...

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        """A copy of `record` whose tool results (by call id) read `texts` instead."""
        ...

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        """The records that replace the archived span."""
        ...

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        """A copy of a later record re-pointed from a removed record to `to`, or None."""
        ...


def tool_result_blocks(blocks: Any, texts: dict[str | None, str]) -> Any:
    """Content blocks with each `tool_result` named in `texts` holding that text instead."""
    if not isinstance(blocks, list):
        return blocks
    out = []
    for block in blocks:
        key = block.get("tool_use_id") if isinstance(block, dict) else None
        if isinstance(block, dict) and block.get("type") == "tool_result" and key in texts:
            block = {**block, "content": texts[key]}
        out.append(block)
    return out
