"""What the model is sent for a Claude Code `attachment` record.

Claude Code writes the context it adds to a turn as `attachment` records: the files a
person @-mentions, the lines selected in an IDE, reminders, hook output, the tools and
skills announced at the start of a session, messages that arrive while it works. Before
each request it turns every attachment into user messages (its normalizeAttachmentForAPI),
most wrapped in `<system-reminder>` tags; some types only show in its interface and send
nothing. `attachment_text` gives the text a type sends, worded as Claude Code 2.1.197
words it (older versions word some reminders slightly differently), or None for a type
that sends nothing or one it does not know (it sends nothing for those either).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..transcript import Image, Text

Attachment = dict[str, Any]

READ = "Read"  # the tool a file attachment is shown as a call of
TOOL_SEARCH = "ToolSearch"  # where deferred tools are loaded from
AMBIENT = ("This is ambient context \u2014 do not narrate it to the user unless they ask or "
           "it is directly relevant to their request.")
SELECTION_LIMIT = 2000  # characters of a selection sent, then "... (truncated)"
SESSION_HOOKS = ("SessionStart", "UserPromptSubmit", "UserPromptExpansion")


def reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _lines(value: Any) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _selection(text: str) -> str:
    return text[:SELECTION_LIMIT] + "\n... (truncated)" if len(text) > SELECTION_LIMIT else text


def _file(a: Attachment) -> list[str]:
    """A file read for the turn: sent as a Read call and its result, lines numbered (an
    image's result is the image itself: see `attachment_parts`)."""
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    call = f"Called the {READ} tool with the following input: " \
           f"{_json({'file_path': _text(a.get('filename'))})}"
    file = content.get("file") if isinstance(content.get("file"), dict) else {}
    if content.get("type") == "image":
        return [call]
    if content.get("type") == "text":
        start = file.get("startLine") if isinstance(file.get("startLine"), int) else 1
        body = "\n".join(f"{start + i}\t{line}"
                         for i, line in enumerate(_text(file.get("content")).split("\n")))
    else:  # a notebook or a PDF: what the file's record holds of it, but encoded bytes
        body = _json({k: v for k, v in file.items() if k != "base64"})
    return [call, f"Result of calling the {READ} tool:\n{body}"]


def _image(attachment: Attachment) -> Image | None:
    """The image a file attachment sends, as a block of its own."""
    content = attachment.get("content") if isinstance(attachment.get("content"), dict) else {}
    file = content.get("file")
    if attachment.get("type") != "file" or content.get("type") != "image" \
            or not isinstance(file, dict) or not isinstance(file.get("base64"), str):
        return None
    media = file.get("type")
    return Image(media_type=media if isinstance(media, str) else None, data=file["base64"])


def _tasks(a: Attachment) -> list[str]:
    tasks = [t for t in _list(a.get("content")) if isinstance(t, dict)]
    text = ("The task tools haven't been used recently. If you're working on tasks that "
            "would benefit from tracking progress, consider using TaskCreate to add new tasks "
            "and TaskUpdate to update task status (set to in_progress when starting, completed "
            "when done). Also consider cleaning up the task list if it has become stale. Only "
            "use these if relevant to the current work. This is just a gentle reminder - "
            "ignore if not applicable.\n")
    if tasks:
        text += "\n\nHere are the existing tasks:\n\n" + "\n".join(
            f"#{t.get('id')}. [{t.get('status')}] {t.get('subject')}" for t in tasks)
    return [text]


def _todos(a: Attachment) -> list[str]:
    todos = [t for t in _list(a.get("content")) if isinstance(t, dict)]
    text = ("The TodoWrite tool hasn't been used recently. If you're working on tasks that "
            "would benefit from tracking progress, consider using the TodoWrite tool to track "
            "progress. Also consider cleaning up the todo list if has become stale and no "
            "longer matches what you are working on. Only use it if it's relevant to the "
            "current work. This is just a gentle reminder - ignore if not applicable.\n")
    if todos:
        text += "\n\nHere are the existing contents of your todo list:\n\n[" + "\n".join(
            f"{i}. [{t.get('status')}] {t.get('content')}" for i, t in enumerate(todos, 1)) + "]"
    return [text]


def _listing(added: str, removed: str) -> list[str]:
    """A listing attachment's text: what was added, then what was removed (and the note
    that follows a removal); nothing when neither is there."""
    out = [added] if added else []
    if removed:
        out += [removed, AMBIENT]
    return ["\n\n".join(out)] if out else []


def _deferred_tools(a: Attachment) -> list[str]:
    added = removed = ""
    if names := _lines(a.get("addedLines")):
        added = (f"The following deferred tools are now available via {TOOL_SEARCH}. Their "
                 "schemas are NOT loaded \u2014 calling them directly will fail with "
                 f"InputValidationError. Use {TOOL_SEARCH} with query "
                 '"select:<name>[,<name>...]" to load tool schemas before calling them:\n'
                 + "\n".join(names))
    if names := _lines(a.get("removedNames")):
        removed = ("The following deferred tools are no longer available (their MCP server "
                   f"disconnected). Do not search for them \u2014 {TOOL_SEARCH} will return no "
                   "match:\n" + "\n".join(names))
    return _listing(added, removed)


def _mcp_instructions(a: Attachment) -> list[str]:
    added = removed = ""
    if blocks := _lines(a.get("addedBlocks")):
        added = ("# MCP Server Instructions\n\nThe following MCP servers have provided "
                 "instructions for how to use their tools and resources:\n\n"
                 + "\n\n".join(blocks))
    if names := _lines(a.get("removedNames")):
        removed = ("The following MCP servers have disconnected. Their instructions above no "
                   "longer apply:\n" + "\n".join(names))
    return _listing(added, removed)


def _agents(a: Attachment) -> list[str]:
    added = removed = ""
    if lines := _lines(a.get("addedLines")):
        head = ("Available agent types for the Agent tool:" if a.get("isInitial") is True
                else "New agent types are now available for the Agent tool:")
        added = head + "\n" + "\n".join(lines)
    if types := _lines(a.get("removedTypes")):
        removed = ("The following agent types are no longer available:\n"
                   + "\n".join(f"- {r}" for r in types))
    return _listing(added, removed)


NOTIFICATION = ("[SYSTEM NOTIFICATION - NOT USER INPUT]\nThis is an automated background-task "
                "event, NOT a message from the user.\nDo NOT interpret this as user "
                "acknowledgement, confirmation, or response to any pending question.\n\n")


def _queued(a: Attachment) -> list[str]:
    """A message that arrived while the agent worked: a background task's notice, or
    what a person typed meanwhile."""
    if a.get("renderedByBatchHead"):
        return []
    prompt = a.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n".join(_text(b.get("text")) for b in prompt
                           if isinstance(b, dict) and b.get("type") == "text")
    prompt = _text(prompt)
    origin = a.get("origin") if isinstance(a.get("origin"), dict) else {}
    if a.get("commandMode") == "task-notification" or origin.get("kind") == "task-notification":
        return [NOTIFICATION + prompt]
    return [f"The user sent a new message while you were working:\n{prompt}\n\nIMPORTANT: "
            "After completing your current task, you MUST address the user's message above. "
            "Do not ignore it."]


def _hook_success(a: Attachment) -> list[str]:
    if a.get("hookEvent") not in SESSION_HOOKS or not _text(a.get("content")):
        return []
    return [f"{_text(a.get('hookName'))} hook success: {_text(a.get('content'))}"]


def _hook_response(a: Attachment) -> list[str]:
    response = a.get("response") if isinstance(a.get("response"), dict) else {}
    specific = response.get("hookSpecificOutput")
    extra = specific.get("additionalContext") if isinstance(specific, dict) else None
    return [t for t in (_text(response.get("systemMessage")), _text(extra)) if t]


def _skills(a: Attachment) -> list[str]:
    skills = [s for s in _list(a.get("skills")) if isinstance(s, dict)]
    if not skills:
        return []
    listed = "\n\n---\n\n".join(f"### Skill: {s.get('name')}\nPath: {s.get('path')}\n\n"
                                f"{_text(s.get('content'))}" for s in skills)
    return ["The following skills were invoked EARLIER in this session (before the "
            "conversation was compacted), not on the current turn. They are shown here for "
            "context only so you remain aware of their guidelines.\n\nIMPORTANT: Do NOT "
            "re-execute these skills or perform their one-time setup actions (e.g., "
            "scheduling, creating files) again. The \"## Input\" sections below reflect the "
            "original arguments from when each skill was first invoked \u2014 they are NOT the "
            "user's current message. Only continue to apply ongoing behavioral guidelines from "
            f"these skills where still relevant.\n\n{listed}"]


def _memories(a: Attachment) -> list[str]:
    out = []
    for i, m in enumerate(x for x in _list(a.get("memories")) if isinstance(x, dict)):
        lead = ("Retrieved for possible relevance \u2014 use only if it actually applies to "
                "what the user asked.\n\n" if i == 0 else "")
        header = _text(m.get("header")) or _text(m.get("path"))
        out.append(f"{lead}{header}\n\n{_text(m.get('content'))}")
    return out


def _mcp_resource(a: Attachment) -> list[str]:
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    texts = [_text(c.get("text")) for c in _list(content.get("contents"))
             if isinstance(c, dict) and isinstance(c.get("text"), str)]
    if not texts:
        return [f'<mcp-resource server="{a.get("server")}" uri="{a.get("uri")}">'
                "(No content)</mcp-resource>"]
    return ["\n".join(part for t in texts for part in (
        "Full contents of resource:", t, "Do NOT read this resource again unless you think it "
        "may have changed, since you already have the full contents."))]


def _edited(a: Attachment) -> list[str]:
    note = (f"Note: {_text(a.get('filename'))} was modified, either by the user or by a linter. "
            "This change was intentional, so make sure to take it into account as you proceed "
            "(ie. don't revert it unless the user asks you to). Don't tell the user this, "
            "since they are already aware.")
    snippet = _text(a.get("snippet"))
    if not snippet:
        return [note + " The diff was omitted because other modified files in this turn "
                "already exceeded the snippet budget; use the Read tool if you need the "
                "current content."]
    return [f"{note} Here are the relevant changes (shown with line numbers):\n{snippet}"]


def _hook_context(a: Attachment) -> list[str]:
    lines = _lines(a.get("content"))
    return [f"{_text(a.get('hookName'))} hook additional context: " + "\n".join(lines)] \
        if lines else []


# type -> the texts it sends, each wrapped in <system-reminder> tags
_SENDS: dict[str, Callable[[Attachment], list[str]]] = {
    "file": _file,
    "edited_text_file": _edited,
    "compact_file_reference": lambda a: [
        f"Note: {_text(a.get('filename'))} was read before the last conversation was "
        f"summarized, but the contents are too large to include. Use {READ} tool if you "
        "need to access it."],
    "selected_lines_in_ide": lambda a: [
        f"The user selected the lines {a.get('lineStart')} to {a.get('lineEnd')} from "
        f"{_text(a.get('filename'))}:\n{_selection(_text(a.get('content')))}\n\n"
        "This may or may not be related to the current task."],
    "selected_lines_in_diff": lambda a: [
        f"The user selected the following {a.get('lineCount')} "
        f"{'line' if a.get('lineCount') == 1 else 'lines'} from the diff view:\n"
        f"{_selection(_text(a.get('content')))}\n\n"
        "This may or may not be related to the current task."],
    "opened_file_in_ide": lambda a: [
        f"The user opened the file {_text(a.get('filename'))} in the IDE. This may or may "
        "not be related to the current task."],
    "plan_file_reference": lambda a: [
        f"A plan file exists from plan mode at: {_text(a.get('planFilePath'))}\n\nPlan "
        f"contents:\n\n{_text(a.get('planContent'))}\n\nIf this plan is relevant to the "
        "current work and not already complete, continue working on it."],
    "nested_memory": lambda a: [
        f"Contents of {_text((a.get('content') or {}).get('path'))}:\n\n"
        f"{_text((a.get('content') or {}).get('content'))}"]
        if isinstance(a.get("content"), dict) else [],
    "skill_listing": lambda a: [
        "The following skills are available for use with the Skill tool:\n\n"
        + _text(a.get("content"))] if _text(a.get("content")) else [],
    "critical_system_reminder": lambda a: [_text(a.get("content"))],
    "date_change": lambda a: [
        f"The date has changed. Today's date is now {_text(a.get('newDate'))}. DO NOT "
        "mention this to the user explicitly because they are already aware."],
    "task_reminder": _tasks,
    "todo_reminder": _todos,
    "deferred_tools_delta": _deferred_tools,
    "mcp_instructions_delta": _mcp_instructions,
    "agent_listing_delta": _agents,
    "queued_command": _queued,
    "invoked_skills": _skills,
    "relevant_memories": _memories,
    "mcp_resource": _mcp_resource,
    "async_hook_response": _hook_response,
    "hook_success": _hook_success,
    "hook_additional_context": _hook_context,
    "hook_blocking_error": lambda a: [
        f"{_text(a.get('hookName'))} hook blocking error from command: "
        f"\"{_text((a.get('blockingError') or {}).get('command'))}\": "
        f"{_text((a.get('blockingError') or {}).get('blockingError'))}"]
        if isinstance(a.get("blockingError"), dict) else [],
    "hook_stopped_continuation": lambda a: [
        f"{_text(a.get('hookName'))} hook stopped continuation: {_text(a.get('message'))}"],
    "token_usage": lambda a: [
        f"Token usage: {a.get('used')}/{a.get('total')}; {a.get('remaining')} remaining"],
    "budget_usd": lambda a: [
        f"USD budget: ${a.get('used')}/${a.get('total')}; ${a.get('remaining')} remaining"],
}


def attachment_parts(attachment: Any) -> list[Text | Image]:
    """What Claude Code sends the model for `attachment` (the record's `attachment`
    object): texts in `<system-reminder>` tags, and the image of an image file; [] for a
    type that sends nothing."""
    if not isinstance(attachment, dict):
        return []
    kind = attachment.get("type")
    send = _SENDS.get(kind) if isinstance(kind, str) else None
    parts: list[Text | Image] = [Text(reminder(t)) for t in send(attachment) if t] \
        if send else []
    image = _image(attachment)
    return [*parts, image] if image is not None else parts
