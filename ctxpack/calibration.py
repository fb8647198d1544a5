"""What the provider billed for each call a transcript records, beside what ctxpack counts
of the same prompt: the data that tells how far a count is from the bill, and the two
ways of closing the gap.

An agent's file records, for many of its calls, how many tokens the prompt held as the
provider counted them (Claude Code: `input_tokens` + both cache fields of each API
response; Codex: `last_token_usage.input_tokens` of each new `token_count`). The prompt of
such a call is a prefix of the context: the messages before the call's reply. ctxpack's
count of that prefix misses what no file records (the system prompt the agent sends,
its tool definitions) and, for models without a public tokenizer, counts with another
one. So:

- calibrated: `slope × counted + overhead`, the slope a model family's (tokens of its
  tokenizer per token of the one counted with), the overhead what the file's own first
  calls show is sent but not written;
- anchored: the prompt size recorded last, plus the calibrated count of what came after.

A reply whose thinking the file stores empty is counted at the output tokens recorded
for it, since the next prompt carries it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .jsonl import loads
from .tokens import REPLY_PRIMING, TokenCounter
from .transcript import Message, Thinking, Transcript

# Tokens of the model's tokenizer per token of the one ctxpack counts it with, by the
# start of the model's name (the longest that matches wins). Measured with
# bench/bench_calibration.py on the Claude Code and Codex sessions of the shared corpus
# (see BENCHMARKS.md); a model not listed counts 1:1.
SLOPES: dict[str, float] = {
    "claude": 1.21,
    "claude-haiku-4-5": 1.17,
    "claude-opus-4-5": 1.19,
    "claude-opus-4-6": 1.21,
    "claude-opus-4-7": 1.21,
    "gpt-5": 1.03,
    "gpt-5.5": 1.10,
}


@dataclass(frozen=True)
class Call:
    """One model call the file records: its prompt was the first `prompt` messages of the
    context, and the provider counted `billed` tokens in it; `output` is what it
    recorded of the reply (None where it did not)."""

    prompt: int
    billed: int
    output: int | None
    model: str | None


def calls_of(t: Transcript) -> list[Call]:
    """The calls `t` records the prompt size of, in order (none for formats that do not
    record it per call)."""
    if t.format == "claude-code":
        return _claude_calls(t)
    if t.format == "codex":
        return _codex_calls(t)
    return []


def slope_of(model: str | None) -> float:
    if not model:
        return 1.0
    known = [name for name in SLOPES if model.startswith(name)]
    return SLOPES[max(known, key=len)] if known else 1.0


def prompt_sizes(t: Transcript, calls: Sequence[Call], counter: TokenCounter) -> list[int]:
    """ctxpack's count of each call's prompt, a reply whose text is not in the file (see
    the module's note) counted at its recorded output."""
    output_of = {c.prompt: c.output for c in calls}  # a call's reply ends its prompt
    running, upto, sizes = 0, 0, []
    for call in calls:
        for n in range(upto, call.prompt):
            m = t.messages[n]
            seen = counter.message(m).total
            output = output_of.get(n)
            running += max(seen, output) if output and _hidden(m) else seen
        upto = max(upto, call.prompt)
        sizes.append(running + REPLY_PRIMING)
    return sizes


@dataclass(frozen=True)
class Fit:
    """calibrated = slope × counted + overhead."""

    slope: float
    overhead: float

    def __call__(self, counted: int) -> int:
        return round(self.slope * counted + self.overhead)


def fit(model: str | None, counted: Sequence[int], billed: Sequence[int]) -> Fit:
    """The model's slope, and the overhead the calls given show (their median gap)."""
    slope = slope_of(model)
    gaps = [b - slope * c for c, b in zip(counted, billed, strict=True)]
    return Fit(slope, statistics.median(gaps) if gaps else 0.0)


def anchored(slope: float, last_billed: int, last_counted: int, counted: int) -> int:
    """The prompt size recorded last, plus the calibrated count of what came since."""
    return round(last_billed + slope * (counted - last_counted))


def _hidden(m: Message) -> bool:
    """Does the file leave out text of this reply that the next prompt carries? (Thinking
    stored empty. Codex's encrypted reasoning is not: counted so, its prompts come out
    far over what was billed.)"""
    return m.role == "assistant" and any(isinstance(p, Thinking) and not p.text
                                         for p in m.parts)


def _claude_calls(t: Transcript) -> list[Call]:
    out = []
    for n, m in enumerate(t.messages):
        message = m.raw.get("message") if m.role == "assistant" and isinstance(m.raw, dict) \
            else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict) or _count(usage.get("input_tokens")) is None:
            continue
        billed = sum(_count(usage.get(k)) or 0 for k in
                     ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        if billed > 0:  # not a reply Claude Code made up itself (model "<synthetic>")
            out.append(Call(n, billed, _count(usage.get("output_tokens")), m.model))
    return out


def _codex_calls(t: Transcript) -> list[Call]:
    """A call per `token_count` whose figures changed (the CLI repeats them); its reply is
    the first assistant message after the one before."""
    out, previous = [], None
    replies = iter([(m.line, n) for n, m in enumerate(t.messages) if m.role == "assistant"])
    reply = next(replies, None)
    for record in t.records:
        if b'"token_count"' not in record.raw:
            continue
        try:
            value = loads(record.raw)
        except ValueError:
            continue
        payload = value.get("payload") if isinstance(value, dict) else None
        info = payload.get("info") if isinstance(payload, dict) else None
        if not isinstance(info, dict) or payload.get("type") != "token_count":
            continue
        figures = (info.get("total_token_usage"), info.get("last_token_usage"))
        if figures == previous:
            continue
        previous, last = figures, figures[1]
        first = reply if reply is not None and reply[0] < record.line else None
        while reply is not None and reply[0] < record.line:  # the replies before this count
            reply = next(replies, None)
        billed = _count(last.get("input_tokens")) if isinstance(last, dict) else None
        if first is not None and billed is not None:
            n = first[1]
            out.append(Call(n, billed, _count(last.get("output_tokens")),
                            t.messages[n].model or t.model))
    return out


def _count(value: object) -> int | None:
    """A token count as a file records it, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
