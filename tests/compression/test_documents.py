"""documents.py, files whose records hold whole conversations (a JSON document, or one
`{"messages": [...]}` a line): each conversation is compressed on its own, and its
record written again whole, with one `ctxpack` object that archives it as it was."""

from __future__ import annotations

import orjson

from ctxpack.breakdown import stats
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.undo import restore

from ..conftest import SAMPLES
from .transcripts import records, tokens


def test_a_trajectory_document_keeps_its_shape_and_archive() -> None:
    path = SAMPLES / "bugfix.mini-swe-agent.traj.json"
    s = stats(path, cache=False)
    # three quarters of the messages, besides what the run's recorded calls say is unlogged
    budget = s.tokens * 3 // 4 + (s.context.not_in_file if s.context else 0)
    result = compress_file(path, Options(budget=budget, keep_steps=1))
    doc = orjson.loads(result.data)
    original = orjson.loads(path.read_bytes())
    assert set(original) <= set(doc) and doc["ctxpack"]["kind"] == "document"
    assert doc["messages"][-1] == original["messages"][-1]  # the run's exit entry stays
    assert len(doc["messages"]) < len(original["messages"])
    assert any(str(m.get("content")).startswith("## Archived Session Summary")
               for m in doc["messages"])
    assert restore(result.lines) == path.read_bytes()
    stripped = orjson.loads(compress_file(path, Options(budget=budget),
                                          strip_metadata=True).data)
    assert "ctxpack" not in stripped


def test_each_conversation_gets_the_budget_and_only_those_over_it_change() -> None:
    path = SAMPLES / "evals.openai-conversations.jsonl"
    given = path.read_bytes().splitlines(keepends=True)
    sizes = sorted(tokens(line) for line in given)  # each line is its own prompt
    budget = sizes[-1] * 3 // 4  # the biggest are over it
    result = compress_file(path, Options(budget=budget, keep_steps=0))
    assert result.report.conversations == len(given)
    lines = result.lines
    assert len(lines) == len(given)
    changed = [n for n, (a, b) in enumerate(zip(lines, given, strict=True)) if a != b]
    assert changed and len(changed) < len(given)
    for n in changed:
        record = records(lines[n])[0]
        assert record["ctxpack"]["kind"] == "conversation"
        assert set(records(given[n])[0]) <= set(record)
    assert restore(lines) == path.read_bytes()


def test_a_list_of_conversations_comes_back_as_values_the_kept_ones_as_given() -> None:
    """`ctxpack.compress` on a list of `{"messages": [...]}` records: what the command line
    writes with --strip-metadata, as values, never through JSON text: a conversation left
    as it was is the object given, and so is every message a changed one keeps."""
    import ctxpack

    path = SAMPLES / "evals.openai-conversations.jsonl"
    given = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    budget = sorted(tokens(line) for line in path.read_bytes().splitlines())[-1] * 3 // 4
    out, report = ctxpack.compress(given, budget=budget, keep_steps=0)
    written = compress_file(path, Options(budget=budget, keep_steps=0), strip_metadata=True)
    assert out == [orjson.loads(line) for line in written.lines]
    assert report.conversations == len(given)
    same = [a is b for a, b in zip(out, given, strict=True)]
    assert any(same) and not all(same)
    for new, old in zip(out, given, strict=True):
        kept = {id(m) for m in old["messages"]}
        assert all(id(m) in kept for m in new["messages"]
                   if not str(m.get("content")).startswith("## Archived Session Summary")
                   and m in old["messages"])
    assert given == [orjson.loads(line) for line in path.read_bytes().splitlines()]
