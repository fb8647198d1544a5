"""writer.py: the plan written in the input's format: each format's own compaction
markers, the lines the plan does not touch byte for byte in their places, and the
`ctxpack` object of every line it writes."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from ctxpack import archive
from ctxpack.archive import Archiver
from ctxpack.breakdown import stats
from ctxpack.checks import validate
from ctxpack.compression import compress_file
from ctxpack.compression.pipeline import run
from ctxpack.compression.settings import Options
from ctxpack.compression.writer import output, records_out
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.transcript import SUMMARY_HEADING
from ctxpack.undo import restore

from ..conftest import SAMPLES
from .transcripts import agent_run, billed, fitted, plan_of, records, squeezed, tokens

NOW = "2026-01-02T03:04:05Z"


def test_claude_code_output_uses_its_own_compaction_markers(tmp_path: Path) -> None:
    path = SAMPLES / "coding-agent.claude-code.jsonl"
    result = compress_file(path, Options(budget=billed(path, tokens(path) // 2)))
    written = [r for r in records(result.data) if "ctxpack" in r]
    boundary = next(r for r in written if r.get("subtype") == "compact_boundary")
    summary = next(r for r in written if r["ctxpack"].get("kind") == "archived_summary")
    assert boundary["parentUuid"] is None
    assert summary["isCompactSummary"] is True
    assert summary["message"]["content"].startswith(SUMMARY_HEADING)
    uuids = {r.get("uuid") for r in records(result.data)}
    assert all(r["parentUuid"] in uuids for r in records(result.data) if r.get("parentUuid"))
    out = tmp_path / path.name
    out.write_bytes(result.data)
    t = load(out)
    assert validate(t) == []
    assert any(m.text.startswith(SUMMARY_HEADING) for m in t.messages)
    assert not any(m.human and m.text.startswith("## Archived") for m in t.messages)


def test_codex_output_uses_a_compacted_record() -> None:
    path = SAMPLES / "refactor.codex.jsonl"
    result = compress_file(path, Options(budget=billed(path, fitted(path) * 3 // 4)))
    compacted = [r for r in records(result.data) if r.get("type") == "compacted"]
    assert len(compacted) == 1
    history = compacted[0]["payload"]["replacement_history"]
    assert history[-1]["content"][0]["text"].startswith(SUMMARY_HEADING)
    assert "ctxpack" in compacted[0] and all("ctxpack" not in item for item in history)


def test_summary_metadata_names_everything_design_asks_for() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    result = compress_file(path, Options(budget=billed(path, fitted(path) * 3 // 4)))
    meta = next(r["ctxpack"] for r in records(result.data)
                if r.get("ctxpack", {}).get("kind") == "archived_summary")
    for key in ("version", "compressed_at", "strategy", "range", "original_count", "new_count",
                "original_tokens", "summary_tokens", "archive"):
        assert key in meta, key
    assert meta["archive"]["inline"] is True and len(meta["archive"]["sha256"]) == 64
    assert meta["range"]["start"] < meta["range"]["end"]
    assert meta["new_count"] == len(load(io.BytesIO(result.data)).messages)
    assert meta["tokens_after"] == result.report.tokens_after


def test_restoring_only_a_summary_brings_back_the_links_to_it(tmp_path: Path) -> None:
    path = SAMPLES / "coding-agent.claude-code.jsonl"
    result = compress_file(path, Options(budget=billed(path, stats(path, cache=False).tokens // 2)))
    sid = next(meta["id"] for line in result.lines if (meta := archive.meta_of(line))
               and meta["kind"] == "archived_summary")
    relinked = [meta for line in result.lines if (meta := archive.meta_of(line))
                and meta["kind"] == "relinked"]
    assert relinked and all(m["follows"] == sid for m in relinked)
    for only in (sid, relinked[0]["id"]):  # either way, the two come back together
        out = tmp_path / "one.jsonl"
        out.write_bytes(restore(result.lines, only=only))
        assert validate(load(out)) == []
        assert not any((m := archive.meta_of(line)) and m["id"] in
                       {sid, *(r["id"] for r in relinked)}
                       for line in out.read_bytes().splitlines())


def odd_lines(data: bytes) -> bytes:
    """The same records as `data`, written as no JSON writer would: spaced out, with CRLF
    endings on some. A line written again from its value would differ."""
    out = []
    for n, line in enumerate(data.splitlines()):
        spaced = orjson.loads(line)
        text = "{ " + ",  ".join(f"{orjson.dumps(k).decode()} :{orjson.dumps(v).decode()}"
                                 for k, v in spaced.items()) + " }"
        out.append(text.encode() + (b"\r\n" if n % 3 == 0 else b"\n"))
    return b"".join(out)


def test_lines_the_plan_does_not_touch_are_written_as_read_in_their_places() -> None:
    data = odd_lines(agent_run(8))
    plan = run(plan_of(data).read, squeezed(data, keep_observations=3, summarize=False))
    assert plan.edited  # old outputs masked
    lines = archive.split_lines(output([plan], Archiver(), NOW))
    given = data.splitlines(keepends=True)
    assert len(lines) == len(given)
    edited = {plan.read.messages[i].line: i for i in plan.edited}
    for n, (line, before) in enumerate(zip(lines, given, strict=True), 1):
        if n not in edited:
            assert line == before
            continue
        meta = archive.meta_of(line)
        assert meta is not None and meta["id"] == plan.read.line_id(edited[n])
        assert meta["kind"] == "observations" and meta["items"][0]["action"] == "masked"
        assert line.endswith(b"\r\n") == before.endswith(b"\r\n")  # its line ending kept
    assert restore(lines) == data


def test_records_given_as_values_come_back_as_values_without_metadata() -> None:
    data = agent_run(12)
    options = Options(keep_observations=4, keep_steps=8, keep_output_tokens=0,
                      budget=fitted(data, keep_observations=4) * 3 // 4)
    plan = run(plan_of(data).read, options)
    assert plan.summary is not None and max(plan.edited) >= plan.summary.end
    values = records_out(plan, "2026-11-26T00:00:00Z")
    assert all("ctxpack" not in v for v in values)
    given = [orjson.loads(line) for line in data.splitlines()]
    s = plan.summary
    assert values[:s.start] == given[:s.start]  # the head, untouched
    assert values[s.start]["content"].startswith(SUMMARY_HEADING)
    assert len(values) == len(given) - (s.end - s.start) + 1
    for i, value in zip(range(s.end, len(given)), values[s.start + 1:], strict=True):
        if i in plan.edited:  # a masked output
            assert value == {**given[i], "content": plan.texts(i)[given[i]["tool_call_id"]]}
        else:
            assert value == given[i]


def out_of_order_session(order: list[int]) -> bytes:
    """A Claude Code session (a task, then six steps, each a call and its result) whose
    records are written in `order` (indexes into the chain order): its links still make
    the chain, whatever line each record is on."""
    from ..helpers import with_real_usage
    from ..test_format_claude_code import answer, calls, piece, user

    chain = [user("u0", None, "please fix the failing tests " * 5)]
    for k in range(1, 7):
        parent = chain[-1]["uuid"]
        chain.append(piece(f"a{k}", parent, f"m{k}", calls(f"c{k}")))
        chain.append(answer(f"r{k}", f"a{k}", f"c{k}", f"output line {k}\n" * 40))
    chain = with_real_usage(chain)
    return b"".join(orjson.dumps(chain[i]) + b"\n" for i in order)


def test_records_out_of_order_restore_exactly() -> None:
    # The task's record comes after steps the summary would archive, and a kept step's
    # record before it: the span of lines a summary replaces must hold every line it
    # writes again and none that is kept, so nothing is written twice, or lost.
    summarized = 0
    for order in ([1, 2, 3, 4, 0, *range(5, 13)], [*range(1, 12), 0, 12],
                  [*range(1, 11), 12, 0, 11], [*range(1, 13), 0]):
        data = out_of_order_session(order)
        for share in (0.4, 0.6):
            budget = billed(data, int(tokens(data) * share))
            try:
                result = compress_file(io.BytesIO(data), Options(budget=budget, keep_steps=1))
            except CannotFit:
                continue
            summarized += result.report.summary is not None
            lines = result.lines
            assert len(set(lines)) == len(lines), f"a line written twice ({order})"
            assert restore(lines) == data, order
    assert summarized >= 2  # where the order allows a summary, one is written
