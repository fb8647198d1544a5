"""Aider's chat log, `.aider.chat.history.md`: Markdown, appended to by every run.

A run opens with `# aider chat started at <time>`. Lines starting `#### ` are what the
person typed (consecutive ones are one multi-line prompt), but for a heading of that level
in a reply, told apart as `AiderReader._prompt` says; lines starting `>` are Aider's
own output (banner, confirmations, shell output, errors, the `Tokens:` line after each
reply) and are not model input; everything else is the model's reply. Each run is a
conversation of its own (a new Aider process starts a new chat); in a run, `/clear` and
`/reset` empty the chat, so what comes before them is no longer context. Slash commands
are Aider's, not prompts — but for `/ask`, `/code`, `/architect` and `/context`, whose
text after the command goes to the model (Aider logs it again as a prompt of its own
right after: that copy is the same prompt, read once). Usage is the `> Tokens: 3.2k
sent, 66 received. Cost: $0.0086 message, ...` lines (rounded as Aider prints them);
each tells of the call whose reply precedes it, its prompt holding what the file does
not (the repository map, the files added to the chat).

What Aider sends differs from what it logs (aider/coders/base_coder.py, io.py):
- a reply's reasoning is logged between `<thinking-content-…>` tags (or `<think>` for
  the models Aider strips those of), but removed from the reply before it joins the
  chat: it is a message of its own, outside the context;
- a confirmation answered by an earlier "all" or "skip" is logged as a `####` line
  (`Add file to the chat? (Y)es/(N)o ... [Yes]: all`): not a prompt;
- lint errors Aider offers to fix are logged as `>` lines and, once the person says yes,
  sent as the next user message: that message, in the context. (The output of `/run`
  and `/test` is printed to the terminal only: the file records its size, not its text,
  and the recorded prompts carry it.)
- in architect mode the architect's answer goes to the editor model as the prompt of a
  chat of its own (logged as a `####` copy of the answer): the editor's turns, up to
  the next prompt the person types, are a sub-agent's (sidechain), and their `Tokens:`
  lines are the editor's calls, not the chat's.
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from typing import Any

from ..recorded import NO_COST, dollars, summed, wrong_counts
from ..transcript import (
    CLEARED,
    EDITOR,
    NO_PLACE,
    Message,
    RecordedCall,
    Text,
    Thinking,
)
from .base import NOT_WRITTEN, Layout, RecordError, measure

START = "# aider chat started at"
_PROMPT_COMMANDS = ("/ask", "/code", "/architect", "/context")
_CLEARING = ("/clear", "/reset")
_MODEL = re.compile(r"^> (?:Main model|Model): (\S+)")
_EDITOR_MODEL = re.compile(r"^> Editor model: (\S+)")
_TOKENS = re.compile(r"^> Tokens: (.*)")
# an amount is what stands before its kind, whatever it is (`3e5 sent` is no `5 sent`)
_KINDS = ("sent", "received", "cache write", "cache hit")
_AMOUNT = re.compile(rf"(\S+) ({'|'.join(_KINDS)})")
_COUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kKmM]?)")  # as Aider prints one: 66, 3.2k, 12k
_COST = re.compile(r"Cost: \$(\S*) message")
_PRINTED_COST = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # as Aider prints one: 0.0086, 0.01
_EDIT_FORMAT = re.compile(r"with ([\w-]+) edit format")
# a confirmation Aider answered itself from an earlier "all"/"skip", logged as a prompt
_CONFIRMED = re.compile(r"\? \(Y\)es/\(N\)o.*\[(?:Yes|No)\]: ?\w*\s*$")
REASONING_TAG = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"  # aider/reasoning_tags.py
# the models whose `<think>` replies Aider strips (aider/models.py, model-settings.yml)
_THINK_MODELS = re.compile(r"deepseek.*(?:r1|reasoning)|qwq-32b", re.IGNORECASE)
_LINT_START = "# Fix any errors below, if possible."
_LINT_FIX = re.compile(r"^> Attempt to fix lint errors\? .*: y")


def reasoning_split(text: str, model: str | None) -> tuple[str, str]:
    """A reply as logged -> (its reasoning, the reply Aider keeps in the chat), as
    aider.reasoning_tags.remove_reasoning_content takes the reasoning out."""
    tags = [REASONING_TAG] + (["think"] if model and _THINK_MODELS.search(model) else [])
    thought: list[str] = []
    for tag in tags:
        pattern = re.compile(f"<{tag}>(.*?)</{tag}>", re.DOTALL)
        thought += [m.group(1).strip() for m in pattern.finditer(text)]
        text = pattern.sub("", text).strip()
        before, closing, after = text.partition(f"</{tag}>")
        if closing:  # the opening tag missing: all before the closing one is reasoning
            thought.append(before.strip())
            text = after.strip()
    return "\n\n".join(t for t in thought if t), text


def amount(said: str) -> int | None:
    """`3.2k` -> 3200, as Aider abbreviates token counts (aider.utils.format_tokens),
    exactly however large (a count too large for a call is `wrong_counts`'s to name); None
    for what Aider does not print (`5,000,000`, `1.2.3`, `-5`, `3e5`)."""
    found = _COUNT.fullmatch(said)
    if found is None:
        return None
    number, suffix = found.groups()
    return round(Decimal(number) * {"": 1, "k": 1_000, "m": 1_000_000}[suffix.lower()])


def tokens_line(line: str) -> dict[str, Any] | None:
    """The numbers of one `> Tokens:` line, or None for another line; `wrong` names the
    amounts no count can be: what Aider never prints, and a count past what a call holds,
    as every reader's counts are named (`wrong_counts`); `wrong cost` names a message cost
    Aider does not print ($NaN), as every reader's costs are (its call is set aside)."""
    found = _TOKENS.match(line)
    if found is None:
        return None
    values: dict[str, Any] = {}
    wrong = []
    for said, kind in _AMOUNT.findall(found.group(1)):
        value = amount(said)
        values[kind] = 0 if value is None else value
        if value is None:
            wrong.append(f"{said[:40]} {kind} (no count Aider prints)")
    if "sent" not in values:
        # (read as 0, the call's prompt would be unknown and its usage a prompt of 0)
        wrong.append("no amount sent (Aider prints the prompt's on every such line)")
    if past := wrong_counts(values, _KINDS):
        wrong.append(past)
    if wrong:
        values["wrong"] = ", ".join(wrong)
    cost = _COST.search(found.group(1))
    if cost is not None and _PRINTED_COST.fullmatch(cost.group(1)):
        values["cost"] = measure(float(cost.group(1)))
    elif cost is not None:  # (no cost Aider prints: the call is set aside, named)
        values["wrong cost"] = f"'> Tokens:' Cost: ${cost.group(1)[:40]} {NO_COST}"
    return values


class AiderReader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.context: list[int] = []
        self.sidechain: list[int] = []  # the editor model's turns in architect mode
        self.model: str | None = None
        self.editor_model: str | None = None  # the run's, in architect mode
        self.edit_format: str | None = None
        self.calls: list[dict[str, Any]] = []
        self.runs = 0
        self.replies: list[RecordedCall] = []  # `prompt`: the reply's number, until finish
        # the calls on no prompt of the chat (the editor's, a cleared chat's): judged alone
        self.unbilled: list[RecordedCall] = []
        self.reply: int | None = None  # the newest reply in the chat, until a prompt
        self.editor = False  # in the editor's turns of an architect answer
        self.why: dict[str, None] = {}  # why messages are outside the context, in order
        self.headless = False  # the file lacks its START line (see AiderFormat.headless)
        self.breaks = False  # the file keeps the line break Aider ends prompt lines with
        # the prompt the model was last sent, and whether a command (`/ask`) sent it, while
        # nothing but blank lines follows it (Aider logs the reply next, or a copy of a
        # command's prompt first): see `_prompt`
        self.asked: tuple[str, bool] | None = None

    def feed(self, line: int, record: Any) -> list[Message]:
        if not isinstance(record, str) or not record.lstrip().startswith(START):
            if not (self.headless and isinstance(record, str)):
                raise RecordError(f"an Aider chat history opens with {START!r}")
            self.runs = 1  # one run, whose header line was cut off
        run_start = 0
        kind: str | None = None  # what the lines in `block` are: "user" or "assistant"
        block: list[str] = []
        quoted: list[str] = []  # the `>` lines since the last other line
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
                self.editor, self.reply, self.editor_model = False, None, None
                self.asked = None
                continue
            if text.startswith("####") and self._prompt(text, kind, block):
                quoted.clear()
                body = text[4:]
                body = body[1:] if body.startswith(" ") else body
                if _CONFIRMED.search(body):  # Aider answering itself: not a prompt
                    close()
                    self.asked = None
                    continue
                if kind != "user":
                    close()
                    kind, first = "user", number
                block.append(body[:-2] if body.endswith("  ") else body)
                continue
            if text == ">" or text.startswith("> "):  # not `>>>>>>> REPLACE`
                close()
                self.asked = None
                quoted.append(text[2:].strip())
                if (found := _MODEL.match(text)) is not None:
                    self.model = found.group(1)
                    edit = _EDIT_FORMAT.search(text)
                    self.edit_format = edit.group(1) if edit else self.edit_format
                if (found := _EDITOR_MODEL.match(text)) is not None:
                    self.editor_model = found.group(1)
                if (usage := tokens_line(text)) is not None:
                    self.calls.append(usage)
                    self._recorded(usage, number)
                if _LINT_FIX.match(text) and _LINT_START in quoted:
                    at = len(quoted) - 1 - quoted[::-1].index(_LINT_START)
                    errors = "\n".join(quoted[at:-1]).strip()
                    self._message("user", errors, number - (len(quoted) - 1 - at), run_start,
                                  human=False)
                continue
            if kind != "assistant":
                if not text.strip():
                    close()  # a blank line ends a prompt
                    continue
                close()
                kind, first = "assistant", number
                self.asked = None
            quoted.clear()
            block.append(text)
        close()
        return self.messages[begin:]

    def _prompt(self, text: str, kind: str | None, block: list[str]) -> bool:
        """Is a `####` line the person's, not a heading of the model's reply? Aider writes
        each line of a prompt as `#### ` and the text, ending it with a Markdown line
        break (two spaces; aider/io.py, `user_input`), after a blank line: a line with that
        break is the person's, and in a file that keeps it (one of its prompts had it), a
        line without is the reply's. In a file whose lines lost their trailing spaces, a
        line in a reply (reply text before it, with no two blank lines between, as Aider
        leaves after a reply it ends) is the reply's; one after Aider's own `>` lines, a
        prompt or the run's start is the person's. But Aider logs the reply to a prompt
        before anything else of its own: a line after a prompt sent to the model, with
        only blank lines between, opens the reply, unless it is the copy of the prompt
        Aider logs after a command that sends one (`/ask why?`, then `#### why?`)."""
        if text.endswith("  "):
            self.breaks = True
            return True
        if self.breaks:
            return False
        if kind is None and self.asked is not None:
            said, by_command = self.asked
            return by_command and text[4:].strip() == said.split("\n")[0].strip()
        return kind != "assistant" or [t.strip() for t in block[-2:]] == ["", ""]

    def _message(self, kind: str, text: str, line: int, run_start: int,
                 human: bool = True) -> None:
        conversation = max(self.runs - 1, 0)
        by_command = False
        if kind == "user" and text.startswith("/") and human:
            command, _, rest = text.partition(" ")
            if command in _CLEARING:
                if any(n >= run_start for n in self.context):
                    self.why["before a /clear or /reset"] = None
                self.context = [n for n in self.context if n < run_start]
                # (the calls of the chat cleared: their prompts are gone, their usage not)
                self.unbilled += [replace(c, prompt=0, unplaced=CLEARED) for c in self.replies
                                  if c.prompt >= run_start]
                self.replies = [c for c in self.replies if c.prompt < run_start]
                self.editor, self.reply = False, None
                return
            if command not in _PROMPT_COMMANDS or not rest.strip():
                self.asked = None
                return  # a command of Aider's own: not sent to the model
            text, by_command = rest.strip(), True
        if kind == "user" and human:
            if self.asked == (text, True):  # the copy Aider logs of what a command sent
                self.asked = (text, False)
                return
            self.asked = (text, by_command)
        model = self.model if kind == "assistant" else None
        if kind == "user":
            if human:  # the architect's answer, copied to the editor as its prompt?
                answer = self.messages[self.reply] if self.reply is not None else None
                copy = self.edit_format == "architect" and answer is not None and \
                    text.strip() == "".join(p.text for p in answer.parts
                                            if isinstance(p, Text)).strip()
                self.editor, human = copy, not copy
            self.reply = None
        else:
            thought, text = reasoning_split(text, self.model)
            if thought:  # outside the context: Aider does not send it back
                self.why["reasoning, which Aider does not send back"] = None
                self.messages.append(Message("assistant", (Thinking(thought),), (line,),
                                             model=model, conversation=conversation))
            if not text:
                return
        n = len(self.messages)
        self.messages.append(Message(kind, (Text(text),), (line,), None,
                                     human=kind == "user" and human, model=model,
                                     conversation=conversation))
        (self.sidechain if self.editor else self.context).append(n)
        if kind == "assistant" and not self.editor:
            self.reply = n

    def _recorded(self, usage: dict[str, Any], line: int) -> None:
        """A `Tokens:` line follows the reply of the call it tells of: the newest reply in
        the chat (what it has `sent` is its prompt, `received` its reply, rounded as Aider
        prints them); a line of the editor's turns tells of the editor's call (of the
        editor model), whose prompt is not the chat's: such a call, and one of no reply, is
        judged by itself, as its usage is in the totals all the same."""
        sent, wrong = usage.get("sent", 0), usage.get("wrong", "")
        chat = (sent > 0 or wrong) and not self.editor and self.reply is not None \
            and not any(c.prompt == self.reply for c in self.replies[-1:])
        call = RecordedCall(
            self.reply if chat and self.reply is not None else 0, sent, usage.get("received"),
            self.editor_model or self.model if self.editor else self.model,
            summed=summed(input_tokens=sent, output_tokens=usage.get("received", 0),
                          cache_read_tokens=usage.get("cache hit", 0),
                          cache_creation_tokens=usage.get("cache write", 0),
                          cost_usd=usage.get("cost", 0)),
            problem=f"'> Tokens:' {wrong}" if wrong else "", costs=usage.get("wrong cost", ""),
            at=line, unplaced="" if chat else EDITOR if self.editor else NO_PLACE)
        (self.replies if chat else self.unbilled).append(call)

    def finish(self) -> tuple[list[Message], Layout]:
        # each run's calls anchor that run (conversation) only
        where = {n: i for i, n in enumerate(self.context)}
        calls = [replace(c, prompt=where[c.prompt]) for c in self.replies if c.prompt in where]
        unbilled = [*self.unbilled, *(replace(c, prompt=0) for c in self.replies
                                      if c.prompt not in where)]
        return [], Layout(self.context, self.sidechain, model=self.model, usage=self._usage(),
                          conversations=max(self.runs, 1), calls=calls,
                          unbilled_calls=unbilled,
                          outside_why="; ".join(self.why) or "before a /clear or /reset")

    def _usage(self) -> dict[str, Any]:
        if not self.calls:
            return {}
        usage: dict[str, Any] = {
            "source": "'> Tokens:' lines (rounded as Aider prints them)",
            "calls": len(self.calls),
            "input_tokens": sum(c.get("sent", 0) for c in self.calls),
            "output_tokens": sum(c.get("received", 0) for c in self.calls),
        }
        if self.runs <= 1:  # else each run's own (see the calls)
            usage["last_input_tokens"] = self.replies[-1].billed if self.replies \
                else self.calls[-1].get("sent", 0)
        if any("cache hit" in c or "cache write" in c for c in self.calls):
            usage["cache_read_tokens"] = sum(c.get("cache hit", 0) for c in self.calls)
            usage["cache_creation_tokens"] = sum(c.get("cache write", 0) for c in self.calls)
        if any("cost" in c for c in self.calls):
            usage["cost_usd"] = dollars(c.get("cost", 0) for c in self.calls)
        return usage


class AiderFormat:
    name = "aider"
    description = "Aider's .aider.chat.history.md (Markdown)"
    records_usage = "Aider"  # (see formats.usage_recorders)
    text = True  # not JSON: the whole file is read as one text
    why_not_written = NOT_WRITTEN
    holds_no_message = ("the file holds only Aider's own lines (commands, notices), none of "
                        "which reaches the model")

    def sniff(self, record: Any) -> int:
        return 0  # never a JSON record

    def sniff_text(self, first_line: bytes) -> bool:
        return first_line.lstrip(b"\xef\xbb\xbf").startswith(START.encode())

    def headless(self, head: bytes) -> str:
        """Why a text without the START line is read as Aider's, from its first lines
        (`head`): a `####` prompt and a `> Tokens:` report; "" when it is not."""
        lines = head.splitlines()
        if any(ln.startswith(b"#### ") for ln in lines) and \
                any(ln.startswith(b"> Tokens: ") for ln in lines):
            return (f"no {START!r} line opens it: read as an Aider chat history from its "
                    "'####' prompts and '> Tokens:' lines")
        return ""

    def reader(self) -> AiderReader:
        return AiderReader()
