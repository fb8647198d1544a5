"""Masking: an old tool output becomes one line naming the call and what was removed.

The result record and its call id stay, so the call still has its answer; the
full output is archived and `ctxpack restore --only ID` brings it back.
"""

from __future__ import annotations

from .truncate import MARKER

PREFIX = f"{MARKER}output of "


FAILED = " (an error) masked:"


def placeholder(what: str, tokens: int, lines: int, item_id: str | None,
                error: bool = False) -> str:
    """The one line that stands in for a masked output of the call `what` names; `error`:
    the output reported a failure; `item_id` None: the output is not archived."""
    status = FAILED if error else " masked:"
    where = f"restore with `ctxpack restore --only {item_id}`" if item_id else "not kept"
    return f"{PREFIX}{what}{status} {tokens:,} tokens, {lines:,} lines; {where}]"


def is_masked(text: str) -> bool:
    return text.startswith(PREFIX)


def masked_failure(text: str) -> bool:
    """Does this placeholder say the output it stands for failed?"""
    return is_masked(text) and FAILED in text
