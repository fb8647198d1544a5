"""Which prompt sizes a file records can be true: the rest are set aside before anything
bills with them or sizes a window by them.

Files come from strangers, and a recorded usage is only a number someone wrote. One that
no model could have taken would become the window and the bill (the window is raised to
the largest recorded call, the bill anchored on the last). The rule: a call whose prompt
and reply are more than `WINDOWS` times the window the built-in model table gives its
model (a Claude model's 200,000 allows 1,000,000, its largest window), or more than `MOST`
whatever the model, cannot be true (the built-in table: loading reads no config). The
counts of what the file holds are no test: what is not in the file (a system prompt, the
parent conversation of a compaction agent, the part cut from a session) legitimately
makes a prompt hundreds of times the visible count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .models import TABLE
from .transcript import RecordedCall

# How many times its table window a call of a known model may hold (the tables give a
# model's usual window; some are served with up to five times it, as Claude's 1M beta)
WINDOWS = 5
# The most a call may hold whatever its model: twice the largest window of the table
# (1,048,576), the largest any model has been served with (Gemini 1.5 Pro's 2,097,152)
MOST = 2 * max(m.context_window for m in TABLE.all())


@dataclass(frozen=True, slots=True)
class SetAside:
    """A recorded call that cannot be true, at the line of its reply, and why."""

    line: int
    problem: str

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "problem": self.problem}


def most_for(model: str | None) -> tuple[int, str]:
    """The most tokens a call of `model` can hold, and what says so."""
    found = TABLE.find(model) if model else None
    if found is not None and WINDOWS * found.context_window < MOST:
        return WINDOWS * found.context_window, \
            f"{WINDOWS} times the {found.context_window:,}-token window of {found.name}"
    return MOST, "twice the largest window of any model"


def unbelievable(call: RecordedCall) -> str:
    """Why `call` cannot be true ("": it can)."""
    held = call.billed + (call.output or 0)
    most, why = most_for(call.model)
    if held <= most:
        return ""
    return (f"recorded usage of {held:,} tokens (prompt and reply) cannot be true: more than "
            f"{most:,}, {why}; set aside, not used for the bill or the window")


def believed(calls: Sequence[RecordedCall], lines: Sequence[int]
             ) -> tuple[list[RecordedCall], list[SetAside]]:
    """The calls that can be true, and the others set aside; `lines[c.prompt]` is the line
    of call `c`'s reply (0 where unknown)."""
    kept, aside = [], []
    for c in calls:
        why = unbelievable(c)
        if why:
            aside.append(SetAside(lines[c.prompt] if c.prompt < len(lines) else 0, why))
        else:
            kept.append(c)
    return kept, aside
