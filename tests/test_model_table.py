"""The shipped calibration table agrees with the corpus by the rule BENCHMARKS.md states
("the model table and where its values come from"): each slope is the `--slopes` median of
bench/bench_calibration.py, rounded to two decimals."""

from __future__ import annotations

import functools
import statistics
import types

import pytest

from ctxpack.calibration import slope_of
from ctxpack.models import TABLE

from .conftest import corpus_files
from .helpers import bench_module

# the corpus model an entry is read from: a model's own steps, or for a family the
# family's model read on the most steps (claude-opus-4-7 has no value the rule can set)
READ_FROM = {
    "claude": "claude-opus-4-6",
    "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "claude-opus-4-5": "claude-opus-4-5-20251101",
    "claude-opus-4-6": "claude-opus-4-6",
    "claude-sonnet-5": "claude-sonnet-5",
    "gpt-5": "gpt-5.6-sol",
    "gpt-5.5": "gpt-5.5",
}
LEAST_STEPS = 5


def bench() -> types.ModuleType:
    return bench_module("bench_calibration")


@functools.cache
def corpus_steps() -> dict[str, list[float]]:
    b = bench()
    return b.slopes([r for p in corpus_files(pattern="*") if p.name != "MANIFEST.md"
                     for r in b.measure(p)])


@pytest.mark.corpus
@pytest.mark.parametrize("entry", sorted(READ_FROM))
def test_each_shipped_slope_is_the_corpus_median_its_rule_gives(entry: str,
                                                               exact_tokens: None) -> None:
    if not corpus_files():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    steps = corpus_steps().get(READ_FROM[entry], [])
    assert len(steps) >= LEAST_STEPS, f"{READ_FROM[entry]}: {len(steps)} steps"
    # read with the table's own value in place (hidden content is converted at it)
    assert round(statistics.median(steps), 2) == slope_of(entry)


@pytest.mark.parametrize("name, entry", [
    ("claude-opus-4-6-thinking", "claude-opus-4-6"),  # a proxy's name for the model
    ("anthropic/claude-opus-4-6-thinking", "claude-opus-4-6"),
    ("claude-opus-4-5-20251101", "claude-opus-4-5"),
    ("claude-opus-4-60", "claude"),  # (no boundary: another model of the family)
    ("GPT-5.5-codex", "gpt-5.5"),
    ("us.anthropic.claude-opus-4-7-v1:0", "claude-opus-4-7"),  # Amazon Bedrock's ids
    ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
])
def test_a_suffixed_name_keeps_its_models_calibration(name: str, entry: str) -> None:
    found = TABLE.calibration(name)
    assert found is not None and found.name == entry
