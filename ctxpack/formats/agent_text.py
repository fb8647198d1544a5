"""User-role text an agent writes itself, and whose turn a user message is.

Agents put much besides the person's words in user messages: context, reminders,
notices, the output of commands, tool results sent as text. A user message opens a
round (is the person's, `Message.human`) only where it holds words of the person's
or an image; text made only of what is listed here is the agent's. Every reader uses
this one list, so a file and what `convert` makes of it agree on the rounds.

A text is the agent's where it holds no line Cline wraps the person's words in and,
with the notes and `<tag>…</tag>` blocks that open it taken off, nothing is left or
what is left opens with one of `HEADS` (each heads text that is wholly the agent's).
The person's words after a reminder or after the note of an interrupt keep the
message the person's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..transcript import Image, Message, Part, Text, ToolResult

# Text that, where it opens what is left, is the agent's to its end (compared lower-case).
HEADS = (
    # Claude Code: a background task's notice (and where to read its output); what a
    # hook that stopped the agent's finishing says back
    "<task-notification>", "stop hook feedback:",
    # Claude Code: the summary it goes on from after a compaction
    "this session is being continued from a previous conversation",
    # Codex CLI: instructions and notices it sends as user messages
    "# agents.md instructions", "another language model started to solve this problem",
    # Cline / Roo Code: notes on a resumed task or a reply without a tool, results as text
    "[task resumption]", "[error] you did not use a tool",
    # Gemini CLI: notes of the plan mode the person switched
    "user has manually exited plan mode", "user has manually entered plan mode",
    # SWE-agent: the demonstration before the task
    "here is a demonstration of how to correctly accomplish this task",
)
# ctxpack convert's labels of what it writes as user text, the Messages API having no
# place for it: a system message after the first turn, a result no call it kept asked
# for; and the user message it opens a body with where the log opens with the assistant.
# Compared as written (a person's `[System]` or `[developer]` is theirs), and worded so
# that a person's message rarely opens so; each on a line of its own, any text after.
LATE_SYSTEM_LABEL = "[{role} message after the first turn, sent as user text]"
UNANSWERING_LABEL = "[result of tool call {id}, answering no call, sent as user text]"
OPENS_WITH_ASSISTANT = "[the transcript continues from here]"
# ... and the line it opens a message of the person's with where it would not read back
# as one: joined by the Messages API's alternation to a message of theirs just before
# (two in a row, no reply between), or opening with an older convert's label (below).
# Read back, it opens a turn of its own, the person's words after it.
PERSONS_LABEL = "[the person's message]"
_PERSONS_LABEL = re.compile(re.escape(PERSONS_LABEL) + r"(?:\n|\Z)")
# The labels older versions of convert wrote before the same (a late system or developer
# message, a result no call asked for): a person may type `[developer]`, so these are
# read only in a request body, the shape convert writes (see `older_label`).
_OLDER_LABEL = re.compile(r"(?:\[(?:system|developer)\]|\[result of tool call [^\n]*\])\n")
_CONVERT_HEADS = re.compile("(?:{})(?:\n|\\Z)".format("|".join(
    re.escape(label).replace(re.escape("{role}"), r"[^\n]*?").replace(re.escape("{id}"),
                                                                        r"[^\n]*?")
    for label in (LATE_SYSTEM_LABEL, UNANSWERING_LABEL, OPENS_WITH_ASSISTANT))))
# What Cline wraps the person's words in, on a line of its own (a file a tool read may
# name the tags in its text, as a file about Cline's logs does): text that holds one is
# the person's, be it sent with a result (their feedback on it) or after a note.
PERSONS_LINE = re.compile(r"^<(?:task|feedback|answer|user_message)>$", re.M)
# The person's words inside such a wrapper: up to its closing line, or the text's end.
_PERSONS_BLOCK = re.compile(r"^<(task|feedback|answer|user_message)>\n(.*?)(?:^</\1>$|\Z)",
                            re.M | re.S)
# Cline's head of a tool result sent as text: `[read_file for 'a.py'] Result:`. Two
# regexes, for readers that know different things. The Cline reader reads a Cline task,
# where a user message opening so is a result, of any tool (an MCP server's own, of one
# word): it takes any name, and reads the tool from the head. Every other reader meets
# the head in a file that may be a person's chat, where `[foo] Result: why?` is a
# question: there only a tool name of joined words counts (`[read_file]`, `[use_mcp_tool
# for 'db']`), as Cline's own tools are named.
RESULT_HEAD = re.compile(r"\[([\w:-]+)(?: for .*?)?\] Result:", re.S)
_TOOL_RESULT_HEAD = re.compile(r"\[\w+_[\w:-]*(?: for .*?)?\] Result:", re.S)
# Claude Code's one-line note of an interrupt, before whatever the person says next
_NOTE = re.compile(r"\[Request interrupted by user[^\]\n]*\]")
# The blocks agents wrap their context in (the person's words may follow them).
AGENT_TAGS = frozenset({
    # Claude Code: reminders, a local command's or `!` shell's output
    "system-reminder", "local-command-caveat", "local-command-stdout",
    "local-command-stderr", "bash-stdout", "bash-stderr", "user-prompt-submit-hook",
    # Claude Code in an IDE: the file open in it, the lines selected
    "ide_opened_file", "ide_selection",
    # Cline / Roo Code
    "environment_details",
    # Codex CLI
    "environment_context", "user_instructions", "turn_aborted", "user_shell_command",
    "permissions instructions", "skill", "subagent_notification", "context_update",
    "tool_context", "reasoning_context", "pinned_notes", "collaboration_mode",
    "model_switch",
    # Gemini CLI
    "session_context",
    # OpenHands: what a recall of the workspace's context tells the model
    "repository_info", "repository_instructions", "runtime_information", "extra_info",
})
_BLOCK = re.compile(r"<([a-z][\w .-]*)>.*?</\1>", re.IGNORECASE | re.DOTALL)
# Agents add more such blocks over time: a whole text in one block, opened and closed
# by the same tag of joined words (`turn_aborted`, `model_switch`), is one of them, but
# for the tags Claude Code wraps what the person typed in (a slash command, a `!` shell
# command). A tag of one word (`<document>`, `<question>`) is how people and datasets
# wrap a prompt: it stays the person's.
_WRAPPED = re.compile(r"<([a-z]\w*[_-][\w-]*)>.*</\1>", re.IGNORECASE | re.DOTALL)
_PERSONS_TAGS = frozenset({"command-name", "command-message", "command-args", "bash-input"})
# SWE-agent's observation: a command's output ended by its shell prompt. Its first
# message, the issue, ends the same way and is the person's task.
_PROMPT_END = re.compile(r"\n\(Current directory: [^\n]*\)\nbash-\$\s*\Z")
_ISSUE = "We're currently solving the following issue"


def agent_written(text: str) -> bool:
    """True for user text an agent wrote on its own (see the module note)."""
    rest = text.strip()
    if PERSONS_LINE.search(rest):
        return False
    if tool_output(rest):
        return True
    wrapped = _WRAPPED.fullmatch(rest)
    if wrapped and wrapped.group(1).lower() not in _PERSONS_TAGS:
        return True
    return _persons_part(rest) is None


def tool_output(text: str) -> bool:
    """Is user text the output of a command the agent ran, sent as a user message (an
    SWE-agent observation)? It is no person's, and counts as a tool's result."""
    rest = text.strip()
    return bool(_PROMPT_END.search(rest)) and not rest.startswith(_ISSUE)


def persons_words(text: str) -> str:
    """A text of the person's from where their words begin: inside the tag Cline wraps
    them in (its note of a result or a resumed task around it), else past the blocks and
    notes an agent put before them in it (an IDE's note of the open file, a reminder)."""
    wrapped = _PERSONS_BLOCK.search(text)
    if wrapped and wrapped.group(2).strip():
        return wrapped.group(2)
    rest = _persons_part(text.strip())
    return text if rest is None else rest


def _persons_part(rest: str) -> str | None:
    """`rest` past the blocks and notes of the agent's that open it; None where the agent's
    text runs to its end."""
    while rest:
        if rest.lower().startswith(HEADS) or _TOOL_RESULT_HEAD.match(rest) \
                or _CONVERT_HEADS.match(rest):
            return None
        block = _BLOCK.match(rest)
        note = _NOTE.match(rest) or _PERSONS_LABEL.match(rest)
        if block and block.group(1).lower() in AGENT_TAGS:
            rest = rest[block.end():].lstrip()
        elif note:
            rest = rest[note.end():].lstrip()
        else:
            return rest
    return None


def labelled_persons(part: Part) -> bool:
    """Does a part open with convert's label of a message of the person's (a turn of its
    own, though the Messages API's alternation joined it to the one before)?"""
    return isinstance(part, Text) and bool(_PERSONS_LABEL.match(part.text))


def older_label(text: str) -> bool:
    """Does a text open with a label an older convert wrote before what it sent as user
    text (`[system]`, `[developer]`, `[result of tool call c1]`, on a line of its own)?"""
    return bool(_OLDER_LABEL.match(text))


def observed(role: str, parts: Sequence[Part]) -> tuple[Part, ...]:
    """A user message's parts, where they are only the output of a command the agent ran
    (an SWE-agent observation, answering no call) as a result sent as text, which counts
    as a tool's."""
    if role == "user" and len(parts) == 1 and isinstance(parts[0], Text) \
            and tool_output(parts[0].text):
        return (ToolResult(None, (parts[0],), written=True),)
    return tuple(parts)


def persons(parts: Sequence[Part]) -> bool:
    """Do a user message's parts hold the person's words, or an image?"""
    return any(isinstance(p, Image) or isinstance(p, Text) and not agent_written(p.text)
               for p in parts)


TITLE_CHARS = 100
# the title of a round that opens on the agent's message (a file may), not the person's
BEFORE_THE_PERSON = "before the person's first message"


def round_title(first: Message, tidy: Callable[[str], str] = str) -> str:
    """The title of the round `first` opens: the first line of the person's words in it
    (the text an agent put before them in the message, an IDE's note of the open file, is
    not the title), made `tidy` for where it is printed and cut to TITLE_CHARS."""
    if not first.human:
        return BEFORE_THE_PERSON
    text = next((persons_words(p.text) for p in first.parts if isinstance(p, Text)
                 and p.text.strip() and not agent_written(p.text)), first.text)
    line = tidy(next((ln.strip() for ln in text.splitlines() if ln.strip()), ""))
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
