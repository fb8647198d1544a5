"""Claude Code session logs (`~/.claude/projects/<cwd>/<session>.jsonl`).

A session file is a log, not a conversation: records link through `parentUuid`
and the model's context is the chain ending at the newest main-chain record.
`user`/`assistant` records are messages, and so is each `attachment` record that sends
the model something (a mentioned file, a reminder, hook output: see
`claude_attachments`), as the user message Claude Code makes of it, joined to the message
before it; progress, snapshots, system and other bookkeeping records stay in the file as
links of the chain at most.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from typing import Any

from ..models import model_name
from ..transcript import (
    META_KEY,
    OFF_BRANCH,
    Message,
    RecordedCall,
)
from .anthropic import (
    COMPRESS_TRIGGER,
    SYNTHETIC_MODEL,
    Emitted,
    OpenResponse,
    Reply,
    ResponseMerger,
    UsageTally,
    api_message,
    boundary_record,
    made_up,
    reply_of,
    reply_problems,
    unknown_blocks,
)
from .base import (
    Compaction,
    Layout,
    RecordError,
    Sessions,
    marks,
    number,
    one_session,
    string_field,
    tool_result_blocks,
)
from .claude_attachments import attachment_parts
from .unknown import gemini_content

# record types only Claude Code writes; generic names (progress, attachment) need more
_OWN_TYPES = {"file-history-snapshot", "queue-operation", "last-prompt", "ai-title",
              "custom-title", "permission-mode"}
_LINKED_TYPES = {"user", "assistant", "system", "progress", "attachment"}
_NOT_TYPED = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")
# (User text Claude Code writes itself unflagged, a reminder or a command's output, is
# told apart in agent_text, for every reader.)
Lane = tuple[bool, str | None]  # (sidechain, agentId): one open response per agent


def sniff_record(record: dict[str, Any]) -> int:
    """How surely a record is a Claude Code session record."""
    kind = record.get("type")
    if not isinstance(kind, str) or gemini_content(record.get("message")):
        return 0  # (a Gemini-style recording, Qwen Code's, links its records alike)
    if kind in _OWN_TYPES or kind == "summary" and "leafUuid" in record:
        return 2
    if kind in _LINKED_TYPES and ("parentUuid" in record or "sessionId" in record):
        return 2
    return 0


class ClaudeCodeReader:
    """Emits messages as their records complete; keeps only uuid links to find the chain."""

    def __init__(self) -> None:
        self.count = 0
        self.parent: dict[str, str | None] = {}
        self.number: dict[str, int] = {}  # uuid -> message number
        self.newest: dict[bool, str] = {}  # sidechain? -> newest uuid
        self.side: list[int] = []
        self.attached: dict[int, list[int]] = {}  # response -> results held while it was open
        self.call_of: dict[int, Reply] = {}  # response -> its call with usage
        self.call_at: dict[str, str] = {}  # a reply line's uuid -> its call (see UsageTally.key)
        self.said: dict[str, bool] = {}  # any other message line's uuid -> whether results only
        self.lanes: dict[Lane, ResponseMerger] = {}
        self.tallies = {False: UsageTally(), True: UsageTally()}
        self.models: dict[bool, str] = {}
        self._leader: int | None = None
        self.before: dict[str, str] = {}  # a compaction's uuid -> the message before it
        # a compaction ctxpack wrote (its uuid) -> (its line, the context it left as billed)
        self.left: dict[str, tuple[int, int]] = {}
        self.line_of: dict[int, int] = {}  # message number -> the line it starts on
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)
        self.restated: dict[int, int] = {}  # (see Layout.restated)

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        kind = string_field(record, "type")
        if kind is None:
            raise RecordError("no 'type' field")
        side = record.get("isSidechain") is True
        uuid, parent = string_field(record, "uuid"), string_field(record, "parentUuid")
        if uuid is not None:
            if kind == "system" and record.get("subtype") == "compact_boundary":
                parent = None  # a compaction starts the model's context afresh
                logical = record.get("logicalParentUuid")
                if isinstance(logical, str):
                    self.before[uuid] = logical
                if (size := compressed_to(record)) is not None:
                    self.left[uuid] = (line, size)
            self.parent[uuid] = parent
            self.newest[side] = uuid
        if kind == "attachment":
            parts = attachment_parts(record.get("attachment"))
            if not parts:
                return []  # shown in the agent's interface only
            message = Message("user", tuple(parts), (line,), record, joined=True)
        elif kind not in ("user", "assistant"):
            return []
        else:
            payload = record.get("message")
            if not isinstance(payload, dict):
                raise RecordError(f"a {kind!r} record without a 'message' object")
            if gemini_content(payload):
                raise RecordError("its message holds `parts` (a Gemini Content), not the "
                                  "`content` of a Claude Code message")
            message = api_message(payload, line, record, kind)
            self.problems += [(line, p) for p in unknown_blocks(payload.get("content"),
                                                                "message.content")]
            if message.human and any(record.get(flag) is True for flag in _NOT_TYPED):
                message = replace(message, human=False)
        lane = (side, string_field(record, "agentId") if side else None)
        merger = self.lanes.setdefault(lane, ResponseMerger())
        call = None
        if message.role == "assistant":
            call = self._reply(message, side, uuid, self._open(parent))
        elif uuid is not None:
            self.said[uuid] = message.result_only
        return self._emit(merger.add(message, uuid, call), side)

    def _open(self, parent: str | None) -> OpenResponse | None:
        """The response a reply line follows in the chain (its parent, past records that
        are no message), if it follows one directly or through its tool results only:
        where a piece of that response may be."""
        results, seen = False, set()
        while parent is not None and parent not in seen:
            seen.add(parent)
            if parent in self.call_at:
                return OpenResponse(self.call_at[parent], next_to=not results)
            if parent in self.said:
                if not self.said[parent]:
                    return None  # another message: a new request
                results = True
            parent = self.parent.get(parent)
        return None

    def _reply(self, message: Message, side: bool, uuid: str | None,
               open: OpenResponse | None) -> str:
        """Tally a reply line's usage; the call it is of (`open`: the response it follows
        in the chain). A line written again (a resumed session: the same uuid) is of the
        call it was."""
        payload, line = message.raw["message"], message.line
        model, usage = message.model, payload.get("usage")
        if model and model != SYNTHETIC_MODEL:
            self.models[side] = model
        tally = self.tallies[side]
        call, wrong = (self.call_at[uuid], "") if uuid in self.call_at \
            else tally.key(message, usage, open)
        if uuid is not None:
            self.call_at[uuid] = call
        if not made_up(message, usage):  # its usage, whatever its model (or id) says
            tally.add(call, usage, line)
        self.problems += [(line, p) for p in (*reply_problems(payload), *_unlike_its_agent(
            payload.get("model"), usage), wrong) if p]
        return call

    def _emit(self, items: list[Emitted], side: bool) -> list[Message]:
        for item in items:
            n = self.count
            self.count += 1
            for key in item.keys:
                if key is not None:
                    if key in self.number and n not in self.restated:  # written again (a
                        # resumed session): the newest copy is the chain's, the whole log
                        # holds the first where it first appears
                        earlier = self.number[key]
                        self.restated[n] = self.restated.get(earlier, earlier)
                    self.number[key] = n
            if side:
                self.side.append(n)
            message = item.message
            if message.lines:
                self.line_of[n] = message.line
            if message.role == "assistant":
                self._leader = n
                if item.call in self.tallies[side].calls:
                    self.call_of[n] = reply_of(message, item.call)
            elif item.attached and self._leader is not None:
                self.attached.setdefault(self._leader, []).append(n)
        return [item.message for item in items]

    def finish(self) -> tuple[list[Message], Layout]:
        rest: list[Message] = []
        for (side, _), merger in self.lanes.items():
            rest += self._emit(merger.flush(), side)
        main = False in self.newest  # else a sub-agent file: its own chain is the context
        context, root = self._context(self.newest.get(False) or self.newest.get(True))
        tally = self.tallies[not main]
        last = next((self.call_of[n][0] for n in reversed(context) if n in self.call_of), None)
        who = "main chain" if main else "sub-agent"
        usage = tally.summary(f"assistant message.usage, once per message.id ({who})", last)
        model = self.models.get(not main)
        # the chain the newest compaction summarized, and the calls made on it; and the
        # chain each older one summarized, to the first (each ends where the next begins)
        chains: list[list[int]] = []
        start, seen = root, {root}
        while start in self.before:
            held, start = self._context(self.before[start])
            if start in seen:  # (a boundary naming a message after it: no older chain)
                break
            seen.add(start)
            chains.append(held)
        earlier = chains[0] if chains else []
        older = [(held, tally.recorded(held, self.call_of)) for held in chains[1:]]
        calls = tally.recorded(context, self.call_of)
        if root in self.left and not any(c.billed for c in calls):
            # no call made since compress compacted the session: the context as it left
            # it, billed, is what its boundary says (what it took out is archived, or gone)
            line, size = self.left[root]
            calls.append(RecordedCall(len(context), size, 0, model, at=line, stated=True))
        return rest, Layout(context, self.side if main else [], model, usage,
                            calls=calls, earlier=earlier,
                            earlier_calls=tally.recorded(earlier, self.call_of), older=older,
                            unbilled_calls=self._unplaced(
                                tally, {*context, *earlier, *(n for h in chains for n in h)},
                                not main),
                            set_aside=tally.unread, problems=[*self.problems, *tally.nulls],
                            restated=self.restated)

    def _unplaced(self, tally: UsageTally, placed: set[int], side: bool) -> list[RecordedCall]:
        """The calls the usage totals hold (`tally`'s, of the main chain or, `side`, of
        the sub-agent) whose replies are in no context the bill measures (`placed`): on a
        chain before an older compaction than the newest, or off the branch; each once
        (a resumed session writes a reply again), at the line its reply starts on."""
        keys = {self.call_of[n][0] for n in placed if n in self.call_of}
        sides, rest = set(self.side), []
        for n in sorted(self.call_of):
            key = self.call_of[n][0]
            if (n in sides) == side and key not in keys:
                keys.add(key)
                rest.append(n)
        return [replace(c, prompt=0, at=self.line_of.get(rest[c.prompt], 0), unplaced=OFF_BRANCH)
                for c in tally.recorded(rest, self.call_of)]

    def _context(self, leaf: str | None) -> tuple[list[int], str | None]:
        """Messages on the chain ending at `leaf`, in chain order, and the uuid the chain
        starts at.

        A response sits at its first piece, followed by every tool result that came
        in while it was open: parallel results hang off their own piece, so the
        parent chain alone passes through only the last of them.
        """
        chain: list[int] = []
        seen: set[str] = set()
        root = leaf
        while leaf is not None and leaf not in seen:
            seen.add(leaf)
            root = leaf
            if (n := self.number.get(leaf)) is not None:
                chain.append(n)
            leaf = self.parent.get(leaf)  # an unknown parent ends the chain
        placed: set[int] = set()
        order: list[int] = []
        for n in reversed(chain):
            for m in (n, *self.attached.get(n, ())):
                if m not in placed:
                    placed.add(m)
                    order.append(m)
        return order, root


def _unlike_its_agent(model: Any, usage: Any) -> list[str]:
    """What a reply's `message` says that Claude Code never writes, read past but named by
    validate: no `model` (it names the model of every reply it was sent), or a
    `<synthetic>` one (a reply it makes up itself, an error shown or a turn skipped, which
    it writes with every count 0) whose usage records tokens."""
    if model is None or isinstance(model, str) and model_name(model) is None:
        what = "missing" if model is None else f"empty ({model!r})"
        return [f"message.model is {what}, where Claude Code names the model of every "
                "reply: billed as the file's model"]
    tokens = sum(number(usage.get(f)) for f in _USAGE_FIELDS) if isinstance(usage, dict) else 0
    if model == SYNTHETIC_MODEL and tokens:
        return [f"message.model is {SYNTHETIC_MODEL!r}, a reply Claude Code makes up itself "
                f"and writes with no usage, yet its usage records {tokens:,} tokens: read as a "
                f"call of the file's model"]
    return []


class ClaudeCodeFormat:
    name = "claude-code"
    default_model = "claude"  # when the file names no model
    description = "Claude Code session log (~/.claude/projects/...)"
    records_usage = "Claude Code"  # (see formats.usage_recorders)
    # compress restates the usage of every record after its change (the editor's
    # usage_mark), so a call whose reply starts after the last line it wrote is a new one
    restates_usage = True

    def sniff(self, record: dict[str, Any]) -> int:
        return sniff_record(record)

    def reader(self) -> Sessions:
        return Sessions(ClaudeCodeReader, _session_of, "a record", "Claude Code")

    def editor(self, transcript: Any) -> ClaudeCodeEditor:
        one_session(transcript, "first record")
        return ClaudeCodeEditor()


def _session_of(record: Any) -> tuple[str, set[str], set[str]] | None:
    """The session a record names, the records it follows (a resumed session's records
    under a new id go on from the chain before: the same conversation), and its uuid."""
    if not isinstance(record, dict) or not isinstance(ident := record.get("sessionId"), str):
        return None
    links = {v for k in ("parentUuid", "logicalParentUuid") if isinstance(v := record.get(k), str)}
    return ident, links, {ident, *([record["uuid"]] if isinstance(record.get("uuid"), str) else [])}


# Records the agent reads back for its session list, titles and resume picker, not as
# model input: the newest of each type in an archived span is written again.
_BOOKKEEPING = ("ai-title", "custom-title", "summary", "last-prompt", "permission-mode",
                "tag", "agent-name", "agent-color", "agent-setting", "mode", "pr-link",
                "worktree-state")
# What Claude Code adds up as the context of a call (input, cache and output tokens).
_USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                 "output_tokens")

# Fields every linked record repeats; new records copy them from their neighbours.
_SESSION_FIELDS = ("isSidechain", "agentId", "userType", "cwd", "sessionId", "version",
                   "gitBranch", "slug")


def compressed_to(record: dict[str, Any]) -> int | None:
    """The billed size of the context a compaction ctxpack wrote left (`compactMetadata`
    of its `compact_boundary`, trigger `ctxpack`: see anthropic.boundary_record), or None:
    Claude Code's own `postTokens` leaves out what it sends besides the messages."""
    meta = record.get("compactMetadata")
    if not isinstance(meta, dict) or meta.get("trigger") != COMPRESS_TRIGGER:
        return None
    size = meta.get("postTokens")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 \
        else None


def new_uuid(seed: str, n: int) -> str:
    """A uuid4-shaped id derived from `seed`: the same compress gives the same file."""
    digest = hashlib.sha256(f"{seed}/{n}".encode()).hexdigest()
    return str(uuid.UUID(digest[:32], version=4))


class ClaudeCodeEditor:
    """Writes Claude Code's own compaction: a `compact_boundary` record, the kept head
    again, then an `isCompactSummary` user record; later records are re-pointed."""

    resets = True
    alternates = False
    usage_mark = b'"usage"'
    usage_on_messages = True  # an assistant record's message.usage
    keeps_mark = marks(_BOOKKEEPING)

    def keeps_place(self, message: Message) -> bool:
        return False

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        message = record["message"]
        content = tool_result_blocks(message.get("content"), texts)
        return {**record, "message": {**message, "content": content}}

    def keeps(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        return isinstance(kind, str) and kind in _BOOKKEEPING

    def recorded(self, record: dict[str, Any]) -> int | None:
        message = record.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if record.get("type") != "assistant" or not isinstance(usage, dict):
            return None
        tokens = sum(number(usage.get(k)) for k in _USAGE_FIELDS)
        return tokens or None  # a synthetic reply states no call

    def call(self, record: dict[str, Any]) -> str | None:
        """The response's `message.id` with the prompt its usage records: each piece of it
        (a block a line) carries the call's usage, the output growing on later pieces;
        calls one after another that share an id (or have none) record other prompts
        (see anthropic.UsageTally.key)."""
        message = record["message"]
        usage = message["usage"]
        found = message.get("id")
        prompt = "+".join(str(number(usage.get(k))) for k in _USAGE_FIELDS[:3])
        return f"{found if isinstance(found, str) else ''} {prompt}"

    def resized(self, record: dict[str, Any], tokens: int, cached: int) -> dict[str, Any]:
        """The usage of a call that sent the smaller context: what was not in the cache
        (the previous call's prompt) is written to it, as after the agent's own compaction."""
        message = record["message"]
        usage = message["usage"]
        output = min(number(usage.get("output_tokens")), tokens)
        prompt = tokens - output
        fresh = min(number(usage.get("input_tokens")), prompt)
        read = min(cached, prompt - fresh)
        new = {**usage, "input_tokens": fresh, "cache_read_input_tokens": read,
               "cache_creation_input_tokens": prompt - fresh - read, "output_tokens": output}
        split = usage.get("cache_creation")
        if isinstance(split, dict) and split:  # by cache lifetime: all to the one most used
            most = max(split, key=lambda k: number(split[k]))
            new["cache_creation"] = {k: (prompt - fresh - read if k == most else 0)
                                     for k in split}
        return {**record, "message": {**message, "usage": new}}

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        near = next((r for r in (*c.head, c.before) if r is not None), {})
        fields = {k: near[k] for k in _SESSION_FIELDS if k in near}  # a sub-agent file stays one
        newest = {r.get("type"): r for r in c.kept}  # the newest of each type
        kept = [{**r, META_KEY: c.part} for r in c.kept if newest[r.get("type")] is r]
        boundary = boundary_record(c, {"parentUuid": None, **fields})
        boundary["logicalParentUuid"] = c.before.get("uuid") if c.before else None
        boundary["uuid"] = parent = new_uuid(c.seed, 0)
        head = []
        for record in c.head:
            head.append({**record, "parentUuid": parent, META_KEY: c.part})
            parent = record.get("uuid", parent)
        summary = {"parentUuid": parent, **fields, "type": "user",
                   "message": {"role": "user", "content": c.summary},
                   "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                   "uuid": new_uuid(c.seed, 1), "timestamp": c.time, META_KEY: c.meta}
        return [*kept, boundary, *head, summary]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        if record.get("parentUuid") in removed:
            return {**record, "parentUuid": to}
        return None
