"""structured.py, the structured summarizer: the extractive summary's facts under task
goal, key decisions, completed work, pending items and important findings."""

from __future__ import annotations

from ctxpack.compression.summarizers import Region
from ctxpack.compression.summarizers.structured import StructuredSummarizer
from ctxpack.tokens import TokenCounter

from .pieces import step


def test_the_structured_goal_points_to_a_task_kept_before_the_summary() -> None:
    count = TokenCounter("gpt-4o").text
    units = (step(1, "make", "ok"), step(2, "make test", "ok"))
    task = "Port the parser to Rust. Keep the public API. Tests must pass."
    text = StructuredSummarizer().write(Region(units, task=task), 4000, count)
    goal = text.split("### Task goal\n", 1)[1].split("\n", 1)[0]
    assert "kept whole before this summary" in goal and "Port the parser to Rust." in goal
    assert "Keep the public API" not in text  # a pointer, not a second copy
    assert "### Task goal" not in StructuredSummarizer().write(Region(units), 4000, count)

