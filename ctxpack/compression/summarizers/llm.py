"""The `llm` summarizer: an OpenAI-compatible chat endpoint writes the summary.

The archived pieces are sent as text blocks, redacted first (see `ctxpack.redact`),
between delimiter lines that carry a digest of what they hold, so the text inside
cannot close them; the model is told that everything inside is data, not
instructions. A region too long for the summarizer's window goes in chunks, each
summarized, then merged; an earlier summary is given to the merge as the summary so
far, to be updated rather than summarized again. With `per_step`, each step gets a
line of its own instead (asked for concurrently, cached across runs), laid out as
the extractive summary lays its lines out.

The model writes the sections; ctxpack adds the heading, a counted line of the
archived steps and the verbatim items (last request, pending items), taken from
the transcript itself. `write` raises `Failed` when no usable summary came back:
the pipeline then keeps the extractive one.

The text sent is built in `_prompts` and what the model writes is read in `_answers`;
this module decides what to ask, in how many requests, and keeps the report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...redact import redact
from ..settings import Options
from . import Count, Piece, Region
from ._answers import Frame, one_line, own_words, refusal
from ._budget import fit
from ._digest import folded, last_request, step_status
from ._endpoint import Endpoint, Failed, Settings, Spend
from ._merge import last_step, parse, pending_section, split_region
from ._prompts import (
    FOCUS_NOTE,
    MERGE,
    MIN_DATA,
    PART,
    REVISE,
    SECTIONS,
    STEP_SYSTEM,
    SYSTEM,
    block,
    clip,
    delimited,
    joined,
    numbered_parts,
    pack,
    user_prompt,
)
from ._stepcache import StepCache, key
from .extractive import PENDING, document

__all__ = ["LLMSummarizer"]

PROMPT_VERSION = "1"  # part of every cached line's key: a new prompt asks again
DEFAULT_CONTEXT = 8192  # the summarizer's window when neither settings nor table know it
FILL = 0.75  # of that window a request fills by our count (the model's tokenizer differs)
ANSWER_SHARE = 4  # an answer may take at most a 1/N of the window
STEP_ANSWER = 120  # tokens a step line may take
TASK_TOKENS = 600  # of the task, a request shows this much


@dataclass
class Outcome:
    """What the summarizer did, for the report (no text of the transcript in it)."""

    model: str
    base_url: str
    per_step: bool
    redact: bool
    chunks: int = 0  # parts the region was sent in (1: one request)
    merges: int = 0
    steps: int = 0  # per-step lines asked for
    cached_steps: int = 0  # per-step lines found from an earlier run
    redacted: Counter[str] = field(default_factory=Counter)
    spend: Spend = field(default_factory=Spend)

    def to_dict(self) -> dict[str, Any]:
        s = self.spend
        return {"model": self.model, "base_url": self.base_url, "per_step": self.per_step,
                "redact": self.redact, "requests": s.requests, "answers": s.answers,
                "prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens,
                "total_tokens": s.prompt_tokens + s.completion_tokens,
                "usage_unreported": s.unreported, "chunks": self.chunks,
                "merges": self.merges, "steps": self.steps, "cached_steps": self.cached_steps,
                "redacted": dict(sorted(self.redacted.items()))}


class LLMSummarizer:
    """Summaries written by a chat model; see the module docstring."""

    name = "llm"

    def __init__(self, options: Options, window: int | None = None, cache: bool = True) -> None:
        self.options = options
        self.settings = Settings(options.llm_model, options.llm_base_url,
                                 options.llm_api_key_env, options.llm_timeout,
                                 options.llm_retries)
        self.window = options.llm_context or window or DEFAULT_CONTEXT
        self.outcome = Outcome(options.llm_model, self.settings.shown_url,
                               options.llm_per_step, options.redact)
        self._cache = cache

    def write(self, region: Region, max_tokens: int, count: Count) -> str:
        """The summary of `region`, at most `max_tokens`; raises Failed."""
        endpoint = Endpoint(self.settings, self.outcome.spend)
        try:
            if self.options.llm_per_step:
                text = self._per_step(endpoint, region, max_tokens, count)
            else:
                text = self._sections(endpoint, region, max_tokens, count)
        finally:
            endpoint.close()
        check(text, region, max_tokens, count)
        return text

    # -- one summary in sections ------------------------------------------------------

    def revise(self, region: Region, summary: str, dropped: list[str], max_tokens: int,
               count: Count) -> str:
        """The summary written again by the model, shown `summary` (its own, framed) and
        the facts of the region it `dropped`; raises Failed as `write` does."""
        endpoint = Endpoint(self.settings, self.outcome.spend)
        try:
            frame, system, answer, data = self._frame(region, max_tokens, count)
            shown = self._clean(summary)
            room = data - count(shown)
            if room < MIN_DATA:
                raise Failed("the summary leaves no room in the summarizer's window to list "
                             "what it dropped")
            facts = clip(self._clean("\n".join(dropped)), room, count)
            body = endpoint.ask(system, user_prompt(None, None, ("SUMMARY", shown),
                                                    ("DROPPED", facts), note=REVISE), answer)
        finally:
            endpoint.close()
        text = frame.around(own_words(body))
        check(text, region, max_tokens, count)
        return text

    def _frame(self, region: Region, max_tokens: int,
               count: Count) -> tuple[Frame, str, int, int]:
        """What a request in sections is made of: the frame ctxpack writes around the
        model's sections, the system prompt, the answer's size and the room for data."""
        older, pieces, previous = split_region(region)
        old = parse(previous)
        frame = Frame.of(older, pieces, last_step(old) + 1, old, region.archived)
        room = max_tokens - count(frame.around([]))  # what the model's sections may take
        answer = min(self.options.llm_max_tokens, room, self.window // ANSWER_SHARE)
        if answer < 32:
            raise Failed(f"no room for the model's text: the summary may take {max_tokens:,} "
                         "tokens and its fixed parts take most of them")
        system = SYSTEM.format(words=max(20, answer * 3 // 4),
                               sections="\n".join(f"### {s}" for s in SECTIONS))
        if region.focus:
            system += FOCUS_NOTE.format(focus=region.focus)
        data = self.window * FILL - count(system) - answer - 64  # 64: the user message's words
        return frame, system, answer, int(data)

    def _sections(self, endpoint: Endpoint, region: Region, max_tokens: int,
                  count: Count) -> str:
        older, pieces, previous = split_region(region)
        first = last_step(parse(previous)) + 1
        frame, system, answer, data = self._frame(region, max_tokens, count)
        blocks = self._blocks(older, pieces, first, count, int(data))
        # redacted, then cut: a cut could leave part of a secret no pattern knows
        task = clip(self._clean(region.task), TASK_TOKENS, count) if region.task else None
        earlier = self._clean(previous) if previous else None
        head = count(earlier or "")
        fixed = count(task or "") + head
        if fixed + sum(n for _, n in blocks) <= data:
            self.outcome.chunks = 1
            body = endpoint.ask(system, user_prompt(task, earlier, ("STEPS", joined(blocks))),
                                answer)
        else:
            if head > data // 2:  # told before any request is paid for
                raise Failed(f"the earlier summary ({head:,} tokens) leaves too little of the "
                             f"summarizer's window ({self.window:,}) to merge into")
            body = self._chunked(endpoint, system, blocks, task, earlier, answer,
                                 int(data), count)
        return frame.around(own_words(body))

    def _chunked(self, endpoint: Endpoint, system: str, blocks: list[tuple[str, int]],
                 task: str | None, earlier: str | None, answer: int, data: int,
                 count: Count) -> str:
        """Summarize the blocks in parts that fit, then merge the parts (and the summary
        so far) into one, in rounds while they do not fit one request together. A part's
        answer may take a third of the room a merge has, so that merges make headway."""
        room = data - count(task or "")
        head = count(earlier or "")
        part_answer = max(MIN_DATA // 2, min(answer, (data - head) // 3))
        chunks = pack(blocks, room + answer - part_answer)
        self.outcome.chunks = len(chunks)
        prompts = [user_prompt(task, None, ("STEPS", joined(c)),
                               note=PART.format(n=n, of=len(chunks)))
                   for n, c in enumerate(chunks, 1)]
        parts = endpoint.ask_all(system, prompts, part_answer, self.options.llm_concurrency)
        while True:
            sized = [(p, count(p)) for p in parts]
            groups = pack(sized, data - head)
            if len(groups) == 1:
                self.outcome.merges += 1
                return endpoint.ask(
                    system, user_prompt(None, earlier, *numbered_parts(groups[0]), note=MERGE),
                    answer)
            if all(len(g) == 1 for g in groups):
                raise Failed("the partial summaries are too long to merge within the "
                             f"summarizer's window ({self.window:,} tokens)")
            self.outcome.merges += sum(len(g) > 1 for g in groups)
            merged = endpoint.ask_all(system, [
                user_prompt(None, None, *numbered_parts(g), note=MERGE)
                for g in groups if len(g) > 1], part_answer, self.options.llm_concurrency)
            it = iter(merged)
            parts = [next(it) if len(g) > 1 else g[0][0] for g in groups]

    # -- one line per step ------------------------------------------------------------

    def _per_step(self, endpoint: Endpoint, region: Region, max_tokens: int,
                  count: Count) -> str:
        """The extractive layout with each step's line written by the model: asked for
        concurrently, and found in the cache when an earlier run asked already."""
        _, pieces, _ = split_region(region)
        data = int(self.window * FILL) - count(STEP_SYSTEM) - STEP_ANSWER - 32
        if data < MIN_DATA:
            raise Failed(f"the summarizer's window ({self.window:,} tokens) is too small")
        steps = [u for u in pieces if u.is_step]
        found: list[Counter[str]] = [Counter() for _ in steps]  # secrets, step by step
        texts = [block(u, None, count, data, lambda t, n=n: self._clean(t, found[n]))
                 for n, u in enumerate(steps)]
        lines = self._step_lines(endpoint, texts, found)
        by_unit = {id(u): line for u, line in zip(steps, lines, strict=True)}

        def head(piece: Piece, number: int) -> str:
            status = step_status(piece) if piece.calls else ""
            return f"* Step {number}: {by_unit[id(piece)]}" + (f" -> {status}" if status else "")

        return fit(document(region, head), max_tokens, count)

    def _step_lines(self, endpoint: Endpoint, texts: list[str],
                    found: list[Counter[str]]) -> list[str]:
        """The model's line for each step's text, from the cache where an earlier run asked
        already; `found[n]`: the secrets taken out of text n, reported only if it is sent."""
        keys = [key(PROMPT_VERSION, self.settings.model, self.settings.url,
                    str(self.options.redact), t) for t in texts]
        cache = StepCache(self._cache)
        try:
            lines = cache.get(keys)
            wanted = [n for n, k in enumerate(keys) if k not in lines]
            self.outcome.steps = len(texts)
            self.outcome.cached_steps = len(texts) - len(wanted)
            for n in wanted:  # what is sent: the cached steps are not
                self.outcome.redacted.update(found[n])

            def keep(n: int, answer: str) -> str:
                line = one_line(answer)
                if line and not refusal(line):  # kept as it comes: a later failure
                    cache.put({keys[n]: line})  # does not lose it
                return line

            answers = endpoint.ask_all(STEP_SYSTEM, [
                delimited("STEP", texts[n]) for n in wanted], STEP_ANSWER,
                self.options.llm_concurrency, keep=lambda i, answer: keep(wanted[i], answer))
        finally:
            cache.close()
        lines.update({keys[n]: line for n, line in zip(wanted, answers, strict=True)})
        if any(refusal(line) for line in lines.values()):
            raise Failed("the model declined to describe a step (its answer is a refusal)")
        return [lines[k] for k in keys]

    # -- shared -----------------------------------------------------------------------

    def _blocks(self, older: tuple[Piece, ...], pieces: tuple[Piece, ...], first: int,
                count: Count, most: int) -> list[tuple[str, int]]:
        """Each piece as a redacted text block with its token count; the older pieces, whose
        outputs are not read, in one counted line."""
        blocks = []
        if older:
            line = folded(older, first).head.removeprefix("* ")
            blocks.append(self._clean(f"(Before these: {line})"))
        number = first - 1 + sum(u.is_step for u in older)
        for piece in pieces:
            number += piece.is_step
            blocks.append(block(piece, number if piece.is_step else None, count, most,
                                 self._clean))
        return [(text, count(text) + 1) for text in blocks]

    def _clean(self, text: str, counts: Counter[str] | None = None) -> str:
        """`text` as it may be sent: secrets replaced (unless redaction is off), and
        counted in `counts` (the report's, by default)."""
        if not self.options.redact:
            return text
        clean, found = redact(text)
        (self.outcome.redacted if counts is None else counts).update(found)
        return clean


def check(text: str, region: Region, max_tokens: int, count: Count) -> None:
    """Raise Failed unless `text` is a summary fit to use: it fits `max_tokens` and keeps
    the verbatim items (the newest request, pending items) the extractive summary would
    keep. (An answer with no words of its own fails before: see `own_words`.)"""
    n = count(text)
    if n > max_tokens:
        raise Failed(f"the summary takes {n:,} tokens, over the {max_tokens:,} it may")
    older, pieces, _ = split_region(region)
    wanted = [last_request(older + pieces) or ""]
    section = pending_section(PENDING, older + pieces, None)
    wanted += [section.block] if section is not None else []
    missing = [w for w in wanted if w.strip() and w.strip() not in text]
    if missing:
        raise Failed("the summary dropped the newest request or the pending items")
