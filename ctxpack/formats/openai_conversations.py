"""Whole conversations, one per line: `{"messages": [...], ...}` (fine-tuning and eval files).

Each line is its own prompt; messages carry the number of their conversation so
that rounds and the reply priming are counted per conversation.
"""

from __future__ import annotations

from typing import Any

from ..models import DEFAULT_MODEL
from ..transcript import Message
from .base import Layout, RecordError
from .openai import OpenAIEditor, message_from_dict, sniff_message


class ConversationsReader:
    def __init__(self) -> None:
        self.count = 0
        self.conversations = 0
        self.model: str | None = None

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        out = self.messages(line, record)
        if isinstance(record.get("model"), str):
            self.model = record["model"]
        self.conversations += 1
        self.count += len(out)
        return out

    def finish(self) -> tuple[list[Message], Layout]:
        return [], Layout(list(range(self.count)), model=self.model,
                          conversations=self.conversations)

    def messages(self, line: int, record: dict[str, Any]) -> list[Message]:
        """The messages of one line's conversation (its number `self.conversations`)."""
        messages = record.get("messages")
        if not isinstance(messages, list):
            raise RecordError("not a conversation: no 'messages' list")
        return [message_from_dict(m, line, self.conversations)
                for m in messages if isinstance(m, dict)]


class ConversationsFormat:
    name = "openai-conversations"
    default_model = DEFAULT_MODEL  # Chat Completions with no model named: the usual one
    description = 'one {"messages": [...]} conversation per line'

    def sniff(self, record: dict[str, Any]) -> int:
        messages = record.get("messages")
        if not isinstance(messages, list) or "system" in record:
            return 0  # (a system prompt beside the messages: an Anthropic request body)
        # a list none of whose entries has a role holds some other agent's messages (a
        # Gemini CLI session's `type`d records)
        if messages and not any(isinstance(m, dict) and isinstance(m.get("role"), str)
                                for m in messages):
            return 0
        # a message with Anthropic blocks (an Anthropic request body) is no Chat Completions one
        if any(isinstance(m, dict) and isinstance(m.get("role"), str) and sniff_message(m) == 0
               for m in messages):
            return 0
        return 2 if messages else 1  # an empty list marks no format

    def editor(self, transcript: Any) -> OpenAIEditor:
        return OpenAIEditor()  # the messages are Chat Completions dicts

    def reader(self) -> ConversationsReader:
        return ConversationsReader()
