"""Hypothesis strategies for whole transcripts a provider accepts, as records of a file."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                min_size=1, max_size=40)
NAMES = st.sampled_from(["bash", "read_file", "search", "edit"])


@st.composite
def openai_chat(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Chat Completions conversation: a system prompt maybe, then rounds of a user
    message and steps of assistant tool calls answered by tool messages, some with
    reasoning_content, each round ending in an assistant reply."""
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append({"role": "system", "content": draw(WORDS)})
    ids = 0
    for _ in range(draw(st.integers(1, 3))):
        out.append({"role": "user", "content": draw(WORDS)})
        for _ in range(draw(st.integers(0, 3))):
            calls = []
            for _ in range(draw(st.integers(1, 2))):
                ids += 1
                args = json.dumps({"q": draw(WORDS)}, ensure_ascii=False)
                calls.append({"id": f"call_{ids}", "type": "function",
                              "function": {"name": draw(NAMES), "arguments": args}})
            step: dict[str, Any] = {"role": "assistant", "content": draw(st.none() | WORDS),
                                    "tool_calls": calls}
            if draw(st.booleans()):
                step["reasoning_content"] = draw(WORDS)
            out.append(step)
            out += [{"role": "tool", "tool_call_id": c["id"], "content": draw(WORDS)}
                    for c in calls]
        reply: dict[str, Any] = {"role": "assistant", "content": draw(WORDS)}
        if draw(st.booleans()):
            reply["reasoning_content"] = draw(WORDS)
        out.append(reply)
    return out


@st.composite
def anthropic_chat(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An Anthropic Messages conversation: alternating user and assistant, tool_use blocks
    answered by tool_result blocks at the start of the next user message (sometimes
    with text after them), thinking blocks now and then."""
    out: list[dict[str, Any]] = [{"role": "user", "content": draw(WORDS)}]
    ids = 0
    for _ in range(draw(st.integers(1, 5))):
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(WORDS), "signature": "sig"})
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(WORDS)})
        uses = []
        for _ in range(draw(st.integers(0, 2))):
            ids += 1
            uses.append({"type": "tool_use", "id": f"toolu_{ids}", "name": draw(NAMES),
                         "input": {"q": draw(WORDS)}})
        if not blocks and not uses:
            blocks.append({"type": "text", "text": draw(WORDS)})
        out.append({"role": "assistant", "content": blocks + uses})
        answer: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": u["id"], "content": draw(WORDS),
             **({"is_error": True} if draw(st.booleans()) else {})} for u in uses]
        if not answer or draw(st.booleans()):
            answer.append({"type": "text", "text": draw(WORDS)})
        out.append({"role": "user", "content": answer})
    return out
