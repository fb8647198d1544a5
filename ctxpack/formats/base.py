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

from ..model import Message, Text

P = TypeVar("P")


class RecordError(Exception):
    """A record that does not fit the format being read; the loader adds file and line."""


@dataclass
class Layout:
    """Which emitted messages (numbered 0, 1, ... in emission order) the model sees.

    `context` lists them in model order; `sidechain` lists sub-agent messages;
    every other emitted message is in the file but outside the model's context.
    `records_outside` counts non-message records kept in the file only.
    """

    context: list[int]
    sidechain: list[int] = field(default_factory=list)
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    conversations: int = 1


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
