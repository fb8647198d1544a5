"""Aider's chat log, `.aider.chat.history.md`: Markdown, appended to by every run.

A run opens with `# aider chat started at <time>`. Lines starting `#### ` are what the
person typed (consecutive ones are one multi-line prompt); lines starting `>` are Aider's
own output (banner, confirmations, shell output, errors, the `Tokens:` line after each
reply) and are not model input; everything else is the model's reply. Each run is a
conversation of its own (a new Aider process starts a new chat); in a run, `/clear` and
`/reset` empty the chat, so what comes before them is no longer context. Slash commands
are Aider's, not prompts — but for `/ask`, `/code`, `/architect` and `/context`, whose
text after the command goes to the model. Usage is the `> Tokens: 3.2k sent, 66
received. Cost: $0.0086 message, ...` lines (rounded as Aider prints them); each tells
of the call whose reply precedes it, its prompt holding what the file does not (the
repository map, the files added to the chat).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..transcript import Message, RecordedCall, Text
from .base import NOT_WRITTEN, Layout, RecordError, measure

START = "# aider chat started at"
_PROMPT_COMMANDS = ("/ask", "/code", "/architect", "/context")
_CLEARING = ("/clear", "/reset")
_MODEL = re.compile(r"^> (?:Main model|Model): (\S+)")
_TOKENS = re.compile(r"^> Tokens: (.*)")
_AMOUNT = re.compile(r"([\d.]+)([kKmM]?) (sent|received|cache write|cache hit)")
_COST = re.compile(r"Cost: \$([\d.]+) message")


def amount(number: str, suffix: str) -> int:
    """`3.2` `k` -> 3200, as Aider abbreviates token counts."""
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[suffix.lower()]
    try:
        return round(measure(float(number) * scale))
    except ValueError:  # `1.2.3`
        return 0


def tokens_line(line: str) -> dict[str, Any] | None:
    """The numbers of one `> Tokens:` line, or None for another line."""
    found = _TOKENS.match(line)
    if found is None:
        return None
    values = {kind: amount(n, s) for n, s, kind in _AMOUNT.findall(found.group(1))}
    cost = _COST.search(found.group(1))
    if cost is not None:
        try:
            values["cost"] = measure(float(cost.group(1)))
        except ValueError:
            pass
    return values


class AiderReader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.context: list[int] = []
        self.model: str | None = None
        self.calls: list[dict[str, Any]] = []
        self.runs = 0
        self.replies: list[RecordedCall] = []  # `prompt`: the reply's number, until finish

    def feed(self, line: int, record: Any) -> list[Message]:
        if not isinstance(record, str) or not record.lstrip().startswith(START):
            raise RecordError(f"an Aider chat history opens with {START!r}")
        run_start = 0
        kind: str | None = None  # what the lines in `block` are: "user" or "assistant"
        block: list[str] = []
        first, begin = line, len(self.messages)

        def close() -> None:
            nonlocal kind
            text = "\n".join(block).strip("\n")
            if kind is not None and text.strip():
                self._message(kind, text, first, run_start)
            kind = None
            block.clear()

        for number, raw in enumerate(record.splitlines(), line):
            text = raw.rstrip("\r")
            if text.startswith(START):
                close()
                self.runs += 1
                run_start = len(self.messages)
                continue
            if text.startswith("####"):
                if kind != "user":
                    close()
                    kind, first = "user", number
                body = text[4:]
                block.append(body[1:] if body.startswith(" ") else body)
                if block[-1].endswith("  "):
                    block[-1] = block[-1][:-2]
                continue
            if text == ">" or text.startswith("> "):  # not `>>>>>>> REPLACE`
                close()
                if (found := _MODEL.match(text)) is not None:
                    self.model = found.group(1)
                if (usage := tokens_line(text)) is not None:
                    self.calls.append(usage)
                    self._recorded(usage.get("sent", 0))
                continue
            if kind != "assistant":
                if not text.strip():
                    close()  # a blank line ends a prompt
                    continue
                close()
                kind, first = "assistant", number
            block.append(text)
        close()
        return self.messages[begin:]

    def _message(self, kind: str, text: str, line: int, run_start: int) -> None:
        conversation = max(self.runs - 1, 0)
        if kind == "user" and text.startswith("/"):
            command, _, rest = text.partition(" ")
            if command in _CLEARING:
                self.context = [n for n in self.context if n < run_start]
                self.replies = []  # (they were of the context cleared)
                return
            if command not in _PROMPT_COMMANDS or not rest.strip():
                return  # a command of Aider's own: not sent to the model
            text = rest.strip()
        n = len(self.messages)
        self.messages.append(Message(kind, (Text(text),), (line,), None, human=kind == "user",
                                     model=self.model if kind == "assistant" else None,
                                     conversation=conversation))
        self.context.append(n)

    def _recorded(self, sent: int) -> None:
        """A `Tokens:` line follows the reply of the call it tells of: the newest message,
        if that is the model's (`sent` is its prompt, rounded as Aider prints it)."""
        if sent > 0 and self.context and self.messages[self.context[-1]].role == "assistant":
            self.replies.append(RecordedCall(self.context[-1], sent, None, self.model))

    def finish(self) -> tuple[list[Message], Layout]:
        # (a file of several runs is billed per conversation, not as one prompt: no calls)
        where = {n: i for i, n in enumerate(self.context)}
        calls = [replace(c, prompt=where[c.prompt]) for c in self.replies
                 if c.prompt in where] if self.runs <= 1 else []
        return [], Layout(self.context, model=self.model, usage=self._usage(),
                          conversations=max(self.runs, 1), calls=calls,
                          outside_why="before a /clear or /reset")

    def _usage(self) -> dict[str, Any]:
        if not self.calls:
            return {}
        usage: dict[str, Any] = {
            "source": "'> Tokens:' lines (rounded as Aider prints them)",
            "calls": len(self.calls),
            "input_tokens": sum(c.get("sent", 0) for c in self.calls),
            "output_tokens": sum(c.get("received", 0) for c in self.calls),
        }
        if self.runs <= 1:  # else the context counted is every run's, not the last call's
            usage["last_input_tokens"] = self.calls[-1].get("sent", 0)
        if any("cache hit" in c or "cache write" in c for c in self.calls):
            usage["cache_read_tokens"] = sum(c.get("cache hit", 0) for c in self.calls)
            usage["cache_creation_tokens"] = sum(c.get("cache write", 0) for c in self.calls)
        if any("cost" in c for c in self.calls):
            usage["cost_usd"] = round(sum(c.get("cost", 0) for c in self.calls), 6)
        return usage


class AiderFormat:
    name = "aider"
    description = "Aider's .aider.chat.history.md (Markdown)"
    text = True  # not JSON: the whole file is read as one text
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return 0  # never a JSON record

    def sniff_text(self, first_line: bytes) -> bool:
        return first_line.lstrip(b"\xef\xbb\xbf").startswith(START.encode())

    def reader(self) -> AiderReader:
        return AiderReader()
