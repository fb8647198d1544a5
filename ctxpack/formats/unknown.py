"""What a file no reader takes looks like: agents' logs ctxpack knows of but does not read.

Each entry recognises one shape by the fields its writer always puts there, so the
error can name it instead of listing what the file is not. A format that gains a
reader simply takes such files before this is asked.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any


def _items(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


_RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning", "custom_tool_call",
                    "custom_tool_call_output", "web_search_call", "local_shell_call")


def _responses_items(value: Any) -> bool:
    """Items of the OpenAI Responses API (`input` or `output` items): typed, with `call_id`s
    (a reasoning item with its `summary`) and `input_text`/`output_text` content rather than
    chat messages."""
    items = _items(value) if isinstance(value, list) else _items([value])
    for x in items[:20]:
        kind = x.get("type")
        if kind in _RESPONSES_ITEMS and (
                "call_id" in x or kind == "reasoning" and isinstance(x.get("summary"), list)):
            return True
        if kind == "message" and any(
                isinstance(b, dict) and b.get("type") in ("input_text", "output_text")
                for b in (x.get("content") if isinstance(x.get("content"), list) else ())):
            return True
    return False


def _opencode_messages(value: Any) -> bool:
    """OpenCode messages (`{info, parts}`) without the session `info` an export opens with."""
    from .opencode import looks_like_export

    if looks_like_export(value):
        return False  # a whole export: its reader says what is wrong in it
    items = _items(value.get("messages") if isinstance(value, dict) else value)
    return bool(items) and all(isinstance(x.get("info"), dict) and isinstance(
        x.get("parts"), list) for x in items[:20])


def _messages(value: Any) -> list[dict[str, Any]]:
    """The first entries of a message list: the array itself or a document's `messages`."""
    return _items(value.get("messages") if isinstance(value, dict) else value)[:20]


def _parts(items: list[dict[str, Any]]) -> list[Any]:
    return [p for x in items for p in x["parts"]]


def _gemini_contents(value: Any) -> bool:
    """The Gemini API's `contents` outside a request body (a body's own `contents` are
    read, by gemini-api; a checkpoint's user/model array, by gemini-checkpoint): entries
    of role user/model whose text, calls and results are in untyped `parts`."""
    items = _messages(value)
    return bool(items) and all(isinstance(x.get("parts"), list) and "content" not in x
                               for x in items) and any(
        x.get("role") in ("user", "model") for x in items) and not any(
        isinstance(p, dict) and "type" in p for p in _parts(items))


def _gemini_content(value: Any) -> bool:
    """One Gemini API Content, as a line of a file of them: role user/model, the text,
    calls and results in untyped `parts`."""
    return isinstance(value, dict) and value.get("role") in ("user", "model") \
        and "content" not in value and _gemini_contents([value])


def _cline_metadata(value: Any) -> bool:
    """A Cline task's `task_metadata.json`: the files in its context and the models used."""
    return isinstance(value, dict) and isinstance(value.get("files_in_context"), list) \
        and isinstance(value.get("model_usage"), list)


def _ui_messages(value: Any) -> bool:
    """The Vercel AI SDK's UI messages (`UIMessage`, what `useChat` keeps and posts): role
    user/assistant/system, the content in `parts` each named by its `type` (`text`,
    `reasoning`, `tool-<name>` holding a call's input and output)."""
    items = _messages(value)
    if not items or not all(x.get("role") in ("user", "assistant", "system")
                            and isinstance(x.get("parts"), list) for x in items):
        return False
    parts = _parts(items)
    return bool(parts) and all(isinstance(p, dict) and isinstance(p.get("type"), str)
                               for p in parts)


def _gemini_response(value: Any) -> bool:
    """What the Gemini API answers (`generateContent`, or each chunk of a stream): the
    reply's `candidates` and the call's `usageMetadata`, without the request's `contents`."""
    return _all_rows(value, lambda r: isinstance(r.get("candidates"), list)
                     and "contents" not in r and ("usageMetadata" in r or any(
                         isinstance(c.get("content"), dict) for c in _items(r["candidates"]))))


def _storage_record(prefix: str, owner: str, owner_prefix: str, kind: str
                    ) -> Callable[[Any], bool]:
    """A record file of OpenCode's storage tree, one object of a message (`msg_` id, its
    `sessionID`, a `role`) or of a part (`prt_` id, its `messageID`, a `type`): the id,
    which OpenCode also takes from the file's name, may be left out."""
    def fits(value: Any) -> bool:
        if not isinstance(value, dict) or not isinstance(value.get(kind), str):
            return False
        ident, of = value.get("id", prefix), value.get(owner)
        return isinstance(ident, str) and ident.startswith(prefix) and \
            isinstance(of, str) and of.startswith(owner_prefix)
    return fits


def _rows(value: Any) -> list[dict[str, Any]]:
    """The records of a dataset: the object itself, or an array's first objects."""
    return [value] if isinstance(value, dict) else _items(value)[:20]


def _all_rows(value: Any, fits: Callable[[dict[str, Any]], bool]) -> bool:
    rows = _rows(value)
    return bool(rows) and all(fits(r) for r in rows)


def _sharegpt(value: Any) -> bool:
    """ShareGPT conversations: `conversations` of turns `{"from": human/gpt, "value"}`."""
    return _all_rows(value, lambda r: bool(turns := _items(r.get("conversations"))) and all(
        "from" in t and "value" in t for t in turns[:20]))


def _chat_under_conversations(value: Any) -> bool:
    """Chat messages (`role`, `content`) under `conversations` (or LMSYS's `conversation`),
    as some datasets name them, where ctxpack reads them under `messages`."""
    def fits(r: dict[str, Any]) -> bool:
        turns = _items(r.get("conversations", r.get("conversation")))
        return bool(turns) and all("role" in t and "content" in t for t in turns[:20])
    return _all_rows(value, fits)


def _preference(value: Any) -> bool:
    """Preference pairs for DPO and reward models: a `chosen` and a `rejected` reply (with
    the `prompt`, or as whole conversations)."""
    return _all_rows(value, lambda r: "chosen" in r and "rejected" in r)


def _alpaca(value: Any) -> bool:
    return _all_rows(value, lambda r: "instruction" in r and "output" in r)


def _prompt_completion(value: Any) -> bool:
    return _all_rows(value, lambda r: "prompt" in r and "completion" in r)


def _codex_history(value: Any) -> bool:
    """Codex's prompt history (`~/.codex/history.jsonl`): each prompt typed, its time in
    seconds and its session's id (`session_id`, `conversation_id` in some versions)."""
    return _all_rows(value, lambda r: isinstance(r.get("text"), str) and isinstance(
        r.get("ts"), int) and any(isinstance(r.get(k), str)
                                  for k in ("session_id", "conversation_id")))


def _claude_history(value: Any) -> bool:
    """Claude Code's prompt history (`~/.claude/history.jsonl`): each prompt as shown
    (`display`), its time in milliseconds and the project it was typed in."""
    return _all_rows(value, lambda r: isinstance(r.get("display"), str) and isinstance(
        r.get("timestamp"), int | float) and isinstance(r.get("project"), str))


def _gemini_logs(value: Any) -> bool:
    """Gemini CLI's prompt log (`logs.json` of a project's folder): an array of each
    prompt typed (`message`), numbered in its session (`messageId`)."""
    return isinstance(value, list) and _all_rows(value, lambda r: isinstance(
        r.get("sessionId"), str) and isinstance(r.get("messageId"), int) and isinstance(
        r.get("message"), str) and "type" in r)


def _chatgpt_export(value: Any) -> bool:
    """ChatGPT's data export (`conversations.json`, or one conversation of it): each
    conversation a tree of message nodes under `mapping` (`message`, `parent`,
    `children`)."""
    def fits(r: dict[str, Any]) -> bool:
        nodes = r.get("mapping")
        return isinstance(nodes, dict) and bool(nodes) and all(
            isinstance(n, dict) and "message" in n and isinstance(n.get("children"), list)
            for n in list(nodes.values())[:20])
    return _all_rows(value, fits)


def _dotted_events(value: Any) -> bool:
    """Another agent's events log (GitHub Copilot CLI's `events.jsonl`): each event of a
    dotted `type` (session.start, user.message, assistant.message) with its fields in
    `data`, where a managed-agent event (anthropic-events) carries its own."""
    return _all_rows(value, lambda r: isinstance(kind := r.get("type"), str) and "." in kind
                     and isinstance(r.get("data"), dict))


def gemini_content(message: Any) -> bool:
    """A message in the Gemini API's shape (its text and calls in `parts`, or of role
    `model`) where a Claude Code record holds one of `content`."""
    return isinstance(message, dict) and "content" not in message and (
        isinstance(message.get("parts"), list) or message.get("role") == "model")


def _gemini_recording(value: Any) -> bool:
    """A chat recording whose records are linked by `uuid` as Claude Code's are, each
    `message` a Gemini Content (Qwen Code's, a fork of Gemini CLI)."""
    return _all_rows(value, lambda r: isinstance(r.get("uuid"), str)
                     and gemini_content(r.get("message")))


def _amp_thread(value: Any) -> bool:
    """An Amp thread (`T-` id) whose messages are not the Messages API's: a tool result
    linked to its call by `toolUseID`, its output under `run`."""
    return isinstance(value, dict) and isinstance(value.get("id"), str) and \
        value["id"].startswith("T-") and any(
            isinstance(b, dict) and "toolUseID" in b for m in _messages(value)
            for b in (m.get("content") if isinstance(m.get("content"), list) else ()))


NOT_READ = "which ctxpack does not read"
# how training data becomes what ctxpack reads: chat messages, one conversation a line
AS_CHAT = "{\"messages\": [...]} a line, it is read as openai-conversations"

# what to give for a file of OpenCode's storage tree given alone
WHOLE_TREE = ("which ctxpack reads only whole: give it the `storage` folder (or the "
              "session's file in `storage/session/<project>/`)")

# of what an agent keeps beside its sessions: that it is no session, and where they are
NO_SESSION = f"not a session, {NOT_READ}"

# Each shape: what it looks like, and one verdict on it (what ctxpack does with it)
_SHAPES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    # what agents keep beside their sessions
    (f"a Codex prompt history (~/.codex/history.jsonl: the prompts typed, each with its "
     f"session's id), {NO_SESSION}: Codex's sessions are under ~/.codex/sessions/ "
     "(rollout-*.jsonl)", _codex_history),
    (f"a Claude Code prompt history (~/.claude/history.jsonl: the prompts typed, each with "
     f"its project), {NO_SESSION}: Claude Code's sessions are under ~/.claude/projects/ "
     "(<project>/<session id>.jsonl)", _claude_history),
    (f"a Gemini CLI prompt log (logs.json: the prompts typed, numbered in their session), "
     f"{NO_SESSION}: the CLI's sessions are in chats/ beside it "
     "(~/.gemini/tmp/<project>/chats/session-*.json or .jsonl)", _gemini_logs),
    (f"a ChatGPT data export (conversations.json: each conversation a tree of messages "
     f"under `mapping`), {NOT_READ}: as Chat Completions messages (each message's "
     f"`author.role` and the text of its `content.parts`, from the root to "
     f"`current_node`), {AS_CHAT}", _chatgpt_export),
    # other agents' logs
    (f"an events log of another agent (each event a dotted `type` such as session.start, "
     f"user.message or assistant.message, its fields in `data`, as GitHub Copilot CLI "
     f"writes them), {NOT_READ}: the managed-agent events it reads (anthropic-events) carry "
     "their fields themselves", _dotted_events),
    (f"a Gemini-style chat recording (records linked by `uuid` and `parentUuid`, each "
     f"message of role user or model with its text and calls in `parts`, as Qwen Code "
     f"writes them), {NOT_READ}: the Claude Code sessions it reads hold messages of "
     "`content`", _gemini_recording),
    (f"an Amp thread (a `T-` id; its tool results linked by `toolUseID`, their output "
     f"under `run`), {NOT_READ}: the Anthropic messages it reads link a result by "
     "`tool_use_id`", _amp_thread),
    # OpenCode's record files first: their ids say surely what they are
    (f"one message of an OpenCode storage tree (a file of `storage/message/<session>/`), "
     f"{WHOLE_TREE}", _storage_record("msg_", "sessionID", "ses_", "role")),
    (f"one part of a message of an OpenCode storage tree (a file of "
     f"`storage/part/<message>/`), {WHOLE_TREE}",
     _storage_record("prt_", "messageID", "msg_", "type")),
    ("the Gemini API's contents (role user/model, text and calls in untyped `parts`) "
     "outside a request body: ctxpack reads them as a request body's `contents` "
     "(gemini-api) or as a checkpoint's bare array of user and model entries "
     "(gemini-checkpoint)", _gemini_contents),
    ("a Cline task's task_metadata.json (the files in its context, the models used), which "
     "ctxpack does not read: it reads the task's api_conversation_history.json (cline) or "
     "ui_messages.json (cline-ui) beside it", _cline_metadata),
    ("a Gemini API Content (role user/model, text and calls in untyped `parts`), one a "
     "line: ctxpack reads Contents as a JSON array (gemini-checkpoint) or as a request "
     "body's `contents` (gemini-api); make the lines one array first (`jq -s .` does)",
     _gemini_content),
    (f"Vercel AI SDK UI messages (role user/assistant, the content in typed `parts`: "
     f"`text`, `reasoning`, `tool-<name>`), {NOT_READ}", _ui_messages),
    (f"OpenAI Responses API items (typed items with `call_id`s, not chat messages), {NOT_READ}",
     _responses_items),
    ("OpenCode messages without the session `info` that `opencode export` writes before them, "
     f"{NOT_READ}: it reads whole `opencode export` documents", _opencode_messages),
    (f"a Gemini API response (`candidates`, `usageMetadata`): the model's reply without the "
     f"contents it was sent, {NOT_READ}: it reads the request body (`contents`, as "
     "gemini-api), or a batch line holding both ({\"request\": ..., \"response\": ...})",
     _gemini_response),
    # training data, not transcripts
    (f"ShareGPT conversations (`conversations` of `from`/`value` turns), {NOT_READ}: as "
     "Chat Completions messages (`from` human: role user, gpt: assistant; `value`: content), "
     f"{AS_CHAT}", _sharegpt),
    (f"chat messages (`role`, `content`) under `conversations`, {NOT_READ} under that "
     f"key: with the key renamed `messages`, {AS_CHAT}", _chat_under_conversations),
    (f"preference data (`chosen` and `rejected` replies, as DPO datasets hold them), "
     f"{NOT_READ}: as Chat Completions messages (prompt: a user message; chosen: the "
     f"assistant's reply, or the conversation it holds), {AS_CHAT}", _preference),
    (f"Alpaca instruction data (`instruction`, `input`, `output`), {NOT_READ}: as Chat "
     "Completions messages (instruction and input: a user message; output: the assistant's), "
     f"{AS_CHAT}", _alpaca),
    (f"prompt/completion pairs (`prompt`, `completion`), {NOT_READ}: as Chat Completions "
     f"messages (prompt: a user message; completion: the assistant's), {AS_CHAT}",
     _prompt_completion),
)


def looks_like(value: Any) -> str | None:
    """What `value` (a JSON document or a file's first record) looks like, and what
    ctxpack does with it: `this looks like ...` ends with it."""
    for name, fits in _SHAPES:
        if fits(value):
            return name
    return None


def looks_like_text(path: str, first_line: bytes) -> str:
    """What a file that is not JSON (nor an Aider log) looks like, from its name and first
    non-blank line, and that ctxpack does not read it."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    head = first_line.strip()
    if suffix in ("md", "markdown") or head.startswith((b"#", b"- ", b"* ", b"```")):
        return ("Markdown, but no Aider chat history (the one Markdown ctxpack reads: "
                "'# aider chat started at' or '####' prompts with '> Tokens:' lines)")
    if suffix in ("csv", "tsv") or head.count(b",") >= 2 or head.count(b"\t") >= 2:
        return f"CSV, {NOT_READ}"
    if suffix in ("yaml", "yml"):
        return f"YAML, {NOT_READ}"
    if suffix in ("html", "htm", "xml") or head.startswith(b"<"):
        return f"HTML or XML, {NOT_READ}"
    return f"plain text, {NOT_READ}"


# What a binary file is, by the bytes it opens with: (magic, what it is, what to do first).
# A Parquet file is not here: ctxpack reads it as a dataset, and the loader lets
# `dataset.rows.not_from_stdin` say how to give it.
_BINARY: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "a gzip archive", "unpack it first: gunzip -k FILE"),
    (b"PK\x03\x04", "a zip archive", "unpack it first: unzip FILE"),
    (b"(\xb5/\xfd", "a zstd archive", "unpack it first: zstd -d FILE"),
    (b"\xfd7zXZ\x00", "an xz archive", "unpack it first: xz -dk FILE"),
    (b"7z\xbc\xaf'\x1c", "a 7-Zip archive", "unpack it first"),
    (b"\x89PNG", "a PNG image", ""),
    (b"\xff\xd8\xff", "a JPEG image", ""),
    (b"GIF8", "a GIF image", ""),
    (b"%PDF-", "a PDF document", ""),
    (b"SQLite format 3\x00", "an SQLite database", ""),
    (b"\x7fELF", "a program (ELF)", ""),
    (b"\xff\xfe", "UTF-16 text, where ctxpack reads UTF-8",
     "make it UTF-8 first: iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"),
    (b"\xfe\xff", "UTF-16 text, where ctxpack reads UTF-8",
     "make it UTF-8 first: iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"),
)
BINARY_PROBE = 8192  # bytes looked at for a NUL, which no text transcript holds
# the share of those bytes that may be no text (not UTF-8, or control characters) in a
# file still taken for text: random bytes hold about 60%, a Latin-1 text a few
NOT_TEXT_SHARE = 0.3
_NOT_TEXT = frozenset(chr(n) for n in (*range(0x20), 0x7F) if chr(n) not in "\t\n\r\f\v\x1b")


# Of what came on stdin, the command that does the first step in the pipe
_PIPED = {"a gzip archive": "gunzip -c", "a zip archive": "funzip", "a zstd archive": "zstd -dc",
          "an xz archive": "xz -dc", "a bzip2 archive": "bunzip2 -c",
          "UTF-16 text, where ctxpack reads UTF-8": "iconv -f UTF-16 -t UTF-8"}


def first_step(what: str, advice: str, path: str) -> str:
    """`advice` (what to do first with `what`, of `looks_binary`) for the file at `path`:
    its FILE that file, or of what came on stdin, the same step in the pipe."""
    if path not in ("-", "<stdin>"):
        return advice.replace("FILE", shlex.quote(path))
    return f"pipe it through {_PIPED[what]} before ctxpack" if what in _PIPED else advice


def looks_binary(head: bytes) -> tuple[str, str] | None:
    """What a file that opens with `head` is, and what to do first, if it is binary (an
    archive, an image, a database, UTF-16) rather than text; None for text."""
    for magic, what, advice in _BINARY:
        if head.startswith(magic):
            return what, advice
    if head.startswith(b"BZh") and head[4:10] == b"1AY&SY":
        return "a bzip2 archive", "unpack it first: bunzip2 -k FILE"
    nul = head.find(b"\x00", 0, BINARY_PROBE)
    if nul >= 0:
        return f"binary data (a NUL byte at offset {nul})", ""
    probe = head[:BINARY_PROBE]
    # each byte that is no part of UTF-8 text becomes one lone surrogate; a control
    # character (bar the whitespace and the escape text may hold) is one byte too
    text = probe.decode("utf-8", "surrogateescape")
    odd = sum(1 for c in text if "\udc80" <= c <= "\udcff" or c in _NOT_TEXT)
    if odd > NOT_TEXT_SHARE * len(probe):
        return f"binary data ({odd:,} of its first {len(probe):,} bytes are not UTF-8 text)", ""
    return None
