"""Would the provider accept this transcript? Pure checks that return a list of problems.

Every tool result needs its call earlier and every call its result later (the
OpenAI and Anthropic APIs reject either orphan), but for the call that ends an agent's run
(a final action no result follows by design) and calls written in a reply's text (the API
saw text, and so it does of their results); results must come where the
provider expects them; roles must be ones the provider knows; a message's content must be
what its provider takes (each format's `refused` says: a string or an array of typed parts
or blocks it can read, Gemini Contents of Parts); Claude Code parent links must resolve. A
recorded usage that cannot be true is named too: ctxpack sets it aside.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .formats import anthropic, gemini, gemini_api, openai, openhands
from .images import NO_PICTURE, not_base64
from .jsonl import loads, lone_surrogates
from .transcript import Image, Message, Part, ToolCall, ToolResult, Transcript, printable

ROLES = {
    "openai": {"system", "developer", "user", "assistant", "tool", "function"},
    "openai-conversations": {"system", "developer", "user", "assistant", "tool", "function"},
    "anthropic": {"user", "assistant"},
    "claude-code": {"user", "assistant"},
    "codex": {"system", "developer", "user", "assistant", "tool"},
}
# JSON documents of messages (SWE-agent, mini-swe-agent, tau-bench) hold Chat Completions
# messages: their roles are the openai API's, and named so
ROLES["json-messages"] = ROLES["openai"]
API_OF = {"json-messages": "openai"}
# Calls that end a run, so that no result follows by design: OpenHands' `finish` action, and
# mini-swe-agent's submit (a command that echoes its marker; the run's `exit` record follows).
FINAL_TOOLS = {"finish"}
FINAL_MARKS = ("COMPLETE_TASK_AND_SUBMIT", "MINI_SWE_AGENT_FINAL_OUTPUT")
# What each format's provider refuses in a message's record (its `raw`, an object: each
# format's `refused` owns what its API takes: content parts, blocks, Gemini Parts).
REFUSED: dict[str, Callable[[Message], list[str]]] = {
    "openai": openai.refused, "openai-conversations": openai.refused,
    "json-messages": openai.refused,
    "anthropic": anthropic.refused, "anthropic-array": anthropic.refused,
    "anthropic-requests": anthropic.refused, "claude-code": anthropic.refused,
    "cline": anthropic.refused, "gemini-cli": gemini.refused,
    "gemini-checkpoint": gemini_api.refused, "gemini-api": gemini_api.refused,
    "openhands": openhands.refused,
}
# Providers that need each call's results before the next assistant turn.
RESULTS_BEFORE_NEXT_TURN = {"openai", "openai-conversations", "anthropic", "claude-code"}


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason the provider would reject the transcript, at a source line (in a
    document on one line, the message begins with the place in it: `history[3]: ...`);
    `file`, where it is in a file beside the transcript's (a Cline task's usage in its
    ui_messages.json), that file's path."""

    line: int
    message: str
    file: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"line": self.line, "problem": self.message}
        return {"file": self.file, **out} if self.file else out


def validate(transcript: Transcript) -> list[Problem]:
    """All problems found in the transcript's model-visible messages, by line."""
    problems: list[Problem] = []
    for conversation in _conversations(transcript.messages):
        problems += _check_roles(conversation, transcript.format)
        problems += _check_content(conversation, transcript.format)
        problems += _check_pairs(conversation, transcript.format)
        problems += _check_unicode(conversation)
    if transcript.format == "claude-code":
        problems += _check_parents(transcript)
    # recorded usage that cannot be true is no reason for the provider to refuse the file,
    # but it is wrong, and left out of what ctxpack bills (see ctxpack.recorded)
    problems += [Problem(x.line, x.problem, x.file) for x in transcript.set_aside]
    # and a count of a call's reply written as null (its prompt size still used)
    problems += [Problem(x.line, x.problem, x.file) for x in transcript.unsized]
    # a request the file records as failed: the provider refused it, and it has no reply
    problems += [Problem(line, problem) for line, problem in transcript.failed]
    # a record the file's own agent reads otherwise than it seems to say, or a value of the
    # wrong kind its reader read past (see Layout.problems)
    problems += [Problem(line, problem) for line, problem in transcript.problems]
    # names and roles come from the file, lone surrogates and all: problems are printed
    return sorted((Problem(p.line, printable(p.message), p.file) for p in problems),
                  key=lambda p: (p.file, p.line))


def notes(transcript: Transcript) -> list[Problem]:
    """What validate tells of the transcript without calling it wrong (see Layout.notes),
    by line."""
    return sorted((Problem(line, printable(what), file)
                   for line, what, file in transcript.notes), key=lambda p: (p.file, p.line))


def _conversations(messages: Sequence[Message]) -> list[list[Message]]:
    groups: dict[int, list[Message]] = {}
    for m in messages:
        groups.setdefault(m.conversation, []).append(m)
    return list(groups.values())


def _check_roles(messages: list[Message], fmt: str) -> list[Problem]:
    allowed = ROLES.get(fmt)
    out = []
    if allowed:
        out = [_at(m, f"role {m.role!r} is not accepted by the {API_OF.get(fmt, fmt)} API")
               for m in messages if m.role not in allowed]
    # stream-json output never echoes the prompt, so only plain message files start with it
    plain = bool(messages) and isinstance(messages[0].raw, dict) and "role" in messages[0].raw
    if fmt == "anthropic" and plain and messages[0].role != "user":
        out.append(_at(messages[0], "the first message must have role 'user'"))
    return out


def _check_content(messages: list[Message], fmt: str) -> list[Problem]:
    """What the format's API refuses in each message record, named once a record (a record
    may hold more than one message: tool results and what the user said; a reply written
    over several lines is a record a line, each named at its own), and image data in any
    format that holds no picture (see `images.not_base64`)."""
    refused = REFUSED.get(fmt)
    seen: set[int] = set()
    out = []
    for m in messages:
        for piece in m.pieces or (m,):
            if refused is not None and isinstance(piece.raw, dict) \
                    and id(piece.raw) not in seen:
                seen.add(id(piece.raw))
                out += [_at(piece, problem) for problem in refused(piece)]
        out += [_at(m, f"image data is not base64 ({NO_PICTURE})")
                for image in _images(m.parts) if image.data and not_base64(image.data)]
    return out


def _check_unicode(messages: list[Message]) -> list[Problem]:
    """Each string of a message's record holding a lone surrogate (a `\\ud800` escape no
    low half follows): not Unicode, so no request body can hold it in UTF-8, and every
    provider refuses it. Named once a record, by its path in the record."""
    seen: set[int] = set()
    out = []
    for m in messages:
        if m.raw is not None and id(m.raw) not in seen:
            seen.add(id(m.raw))
            out += [_at(m, f"{path or 'the record'} holds a lone surrogate ({escape}, half "
                           "of a UTF-16 pair): no Unicode text, which no provider takes in a "
                           "request") for path, escape in lone_surrogates(m.raw)]
    return out


def _images(parts: Sequence[Part]) -> list[Image]:
    """The images among `parts`, those tool results hold too."""
    return [p for part in parts
            for p in (part.parts if isinstance(part, ToolResult) else (part,))
            if isinstance(p, Image)]


def _check_pairs(messages: list[Message], fmt: str) -> list[Problem]:
    problems: list[Problem] = []
    open_calls: dict[str, tuple[Message, ToolCall]] = {}
    answered: dict[str, ToolCall] = {}
    legacy_open: list[tuple[Message, ToolCall]] = []
    strict_adjacent = fmt in ("openai", "openai-conversations")
    for m in messages:
        if strict_adjacent and open_calls and m.role not in ("tool", "function"):
            # Chat Completions wants the tool messages right after the call.
            problems += _unanswered(open_calls, f"before the {m.role} message at {m.where}")
            open_calls.clear()
        if m.role == "assistant" and fmt in RESULTS_BEFORE_NEXT_TURN:
            problems += _unanswered(open_calls, "before the next assistant message")
            open_calls.clear()
        for call in m.tool_calls:
            if call.written:
                continue  # text to the API (so is its result): nothing to pair
            if call.id is None:
                legacy_open.append((m, call))
            elif call.id in open_calls and open_calls[call.id][0] is not m:
                # the earlier call is left unanswered: a result from here on is this one's
                problems += _unanswered({call.id: open_calls[call.id]},
                                        f"before the call at {m.where} gives its id again")
                open_calls[call.id] = (m, call)
            elif call.id in open_calls or call.id in answered:
                problems.append(_at(m, f"tool call id {call.id!r} is used twice"))
            else:
                open_calls[call.id] = (m, call)
        for result in m.tool_results:
            if result.written:
                continue
            if result.call_id is None:
                if legacy_open:
                    legacy_open.pop(0)
                else:
                    of = f" of {result.name}" if result.name else ""
                    problems.append(_at(m, f"tool result{of} without a preceding call"))
            elif result.call_id in open_calls:
                answered[result.call_id] = open_calls.pop(result.call_id)[1]
            elif result.call_id in answered:
                call = answered[result.call_id]  # (by its place where its id is made up)
                problems.append(_at(m, "second result for tool call " + (
                    _named(call) if call.place else repr(result.call_id))))
            else:
                of = f" ({result.name})" if result.name else ""
                problems.append(_at(
                    m, f"tool result for call {result.call_id!r}{of}, which no earlier "
                    "assistant message made"))
    if messages:
        for call in messages[-1].tool_calls:
            if call.id in open_calls and _ends_the_run(call):
                del open_calls[call.id]
    problems += _unanswered(open_calls, "in the transcript")
    problems += [_at(m, f"function call {_named(call)} has no result") for m, call in legacy_open]
    return problems


def _ends_the_run(call: ToolCall) -> bool:
    """Is this call (in a conversation's last message) the agent's way to end its run?"""
    return call.name in FINAL_TOOLS or any(mark in call.arguments for mark in FINAL_MARKS)


def _unanswered(open_calls: dict[str, tuple[Message, ToolCall]], where: str) -> list[Problem]:
    return [_at(m, f"tool call {_named(call)} has no result {where}")
            for m, call in open_calls.values()]


def _named(call: ToolCall) -> str:
    """A call as its file lets a person find it: by its id, with its tool's name; one the
    file gives no id by its tool and its place in the message's record (the id is then
    the reader's own)."""
    if call.place:
        return f"{call.name or '(unnamed)'} at {call.place}"
    return f"{call.id!r} ({call.name})" if call.id is not None else call.name or "(unnamed)"


def _at(m: Message, problem: str) -> Problem:
    """A problem of message `m`, at its line (in a pretty-printed document, its item's)
    and, in a document read as one or a line of many messages, its place in it (the
    problem's line says the line)."""
    place = m.place.removeprefix(f"line {m.line:,} ")
    return Problem(m.item_line or m.line, f"{place}: {problem}" if place else problem)


def _check_parents(transcript: Transcript) -> list[Problem]:
    """Claude Code: every parentUuid must name a record of the same file, and following
    them must reach a record with none (a record its own parent, or a loop of them, leaves
    the chain no start)."""
    uuids: dict[str, int] = {}  # each uuid's line
    links: list[tuple[int, str]] = []
    parent_of: dict[str, str] = {}
    for record in transcript.records:
        try:
            data = loads(record.raw)  # as the reader took it
        except ValueError:
            continue  # a line skipped as invalid
        if not isinstance(data, dict):
            continue
        uuid, parent = data.get("uuid"), data.get("parentUuid")
        if isinstance(uuid, str):
            uuids.setdefault(uuid, record.line)
            if isinstance(parent, str):
                parent_of.setdefault(uuid, parent)
        if isinstance(parent, str):
            links.append((record.line, parent))
    problems = [Problem(line, f"parentUuid {parent!r} does not resolve to any record in the "
                              f"file") for line, parent in links if parent not in uuids]
    return problems + _loops(parent_of, uuids)


def _loops(parent_of: dict[str, str], lines: dict[str, int]) -> list[Problem]:
    """Each loop of parentUuid links (a record its own parent, the smallest), named once at
    the line of its first record."""
    done: set[str] = set()
    problems = []
    for start in parent_of:
        path: dict[str, None] = {}
        at: str | None = start
        while at is not None and at not in done and at not in path:
            path[at] = None
            at = parent_of.get(at)
        if at is not None and at in path:  # came round to a record of this walk
            loop = list(path)[list(path).index(at):]
            first = min(loop, key=lambda u: lines[u])
            said = ("is the record's own uuid" if len(loop) == 1 else
                    f"leads back to it through {len(loop) - 1:,} other record"
                    f"{'' if len(loop) == 2 else 's'} (line"
                    f"{'' if len(loop) == 2 else 's'} "
                    f"{', '.join(f'{n:,}' for n in sorted(lines[u] for u in loop if u != first))})")
            problems.append(Problem(lines[first], f"parentUuid {parent_of[first]!r} {said}: the "
                                                  f"chain of parents has no start"))
        done.update(path)
    return problems

