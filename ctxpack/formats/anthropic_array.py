"""Anthropic Messages API messages as one JSON array: a conversation's `messages` list
saved whole (`json.dump(messages, f)`), where the `anthropic` format has one message a
line. Each message is read as that format reads its lines; compress refuses the array
and says how to make the one-a-line file it rewrites.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..transcript import Message
from .anthropic import AnthropicReader, bad_content, sniff_record
from .base import Items, RecordError, naming


def sniff_array(value: Any) -> int:
    """2 for an array of Anthropic messages with a block only Anthropic has (a plain
    text conversation is as much Chat Completions', which json-messages reads); else 0."""
    if not isinstance(value, list) or not value:
        return 0
    if not all(isinstance(m, dict) and "role" in m and "type" not in m for m in value):
        return 0
    scores = [sniff_record(m) or int(bad_content(m)) for m in value]
    return 2 if min(scores) > 0 and max(scores) == 2 else 0


class ArrayReader(AnthropicReader):
    """The array's messages in order, as the `anthropic` reader takes them one a line."""

    def __init__(self) -> None:
        super().__init__()
        self.items = Items("message {}")

    def feed(self, line: int, record: Any) -> list[Message]:
        if not isinstance(record, list):
            raise RecordError("not a JSON array of Anthropic messages")
        out: list[Message] = []
        for i, m in self.items.each(record):
            if not isinstance(m, dict) or "role" not in m:
                raise RecordError(f"item {i} of the array is not a message (an object with "
                                  "a 'role')", at=(i,))
            out += super().feed(line, m)
        return out


class ArrayFormat:
    name = "anthropic-array"
    default_model = "claude"  # when the file names no model
    description = "Anthropic Messages API messages in one JSON array"
    document = True  # the whole file is one JSON value, not JSONL

    def sniff(self, record: Any) -> int:
        return sniff_array(record)

    def reader(self) -> ArrayReader:
        return ArrayReader()

    def editor(self, transcript: Any) -> Any:
        raise UsageError(f"{transcript.path}: compress does not rewrite a JSON array of "
                         "Anthropic messages", naming("write them one a line, which compress "
                                                      "rewrites: `jq -c '.[]' FILE > "
                                                      "run.jsonl`, then `ctxpack compress "
                                                      "run.jsonl`", transcript.path))
