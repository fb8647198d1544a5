"""compress and restore end to end: every sample and corpus file keeps its invariants.

For each file: the output validates when the input did, stays within the budget,
keeps the format's own markers, leaves untouched lines byte-identical, counts
the same tokens as `stats` of the output, restores byte for byte, and a second
compress with the same settings changes nothing.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from ctxpack import archive
from ctxpack.breakdown import stats
from ctxpack.checks import validate
from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.undo import restore

from ..conftest import SAMPLES, corpus_params

pytestmark = pytest.mark.usefixtures("exact_tokens")

COMPRESSIBLE = sorted([*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")])
DOCUMENTS = ("json-messages", "openai-conversations")  # records written again whole


def roundtrip(path: Path, tmp_path: Path, share: float = 0.6) -> tuple[bytes, dict]:
    """Compress `path` to `share` of its tokens and check every invariant on the way."""
    original = path.read_bytes()
    before = stats(path, cache=False)
    budget = max(int(before.tokens * share), 1)
    try:
        result = compress_file(path, Options(budget=budget))
    except CannotFit:
        result = compress_file(path, Options(budget=before.tokens))
        budget = before.tokens
    out = tmp_path / path.name
    out.write_bytes(result.data)
    report = result.report
    after = stats(out, cache=False)
    assert after.tokens == report.tokens_after
    if report.conversations == 1:  # the budget holds per conversation
        assert report.tokens_after <= budget
    if not validate(load(path)):
        assert validate(load(out)) == []
    assert load(out).format == load(path).format
    if report.format not in DOCUMENTS:
        untouched = [line for line in result.lines if archive.meta_of(line) is None]
        originals = original.splitlines(keepends=True)
        assert _subsequence(untouched, originals)
    restored = restore(result.lines)
    assert restored == original
    again = compress_file(out, Options(budget=budget))
    assert again.data == result.data, "a second compress with the same settings changed it"
    return result.data, report.to_dict()


def _subsequence(part: list[bytes], whole: list[bytes]) -> bool:
    it = iter(whole)
    return all(any(line == x or line.rstrip(b"\n") == x.rstrip(b"\n") for x in it)
               for line in part)


@pytest.mark.parametrize("path", COMPRESSIBLE, ids=lambda p: p.name)
def test_samples_keep_every_invariant(path: Path, tmp_path: Path) -> None:
    data, report = roundtrip(path, tmp_path)
    assert report["changed"] or report["conversations"] > 1
    assert report["tokens_after"] <= report["tokens_before"]


@pytest.mark.corpus
@pytest.mark.parametrize("path", [
    *corpus_params("claude-code", "codex", "anthropic-messages"),
    *corpus_params("openai-chat", pattern="*.json"), *corpus_params("swe-agent", pattern="*.traj"),
])
def test_corpus_files_keep_every_invariant(path: Path, tmp_path: Path) -> None:
    roundtrip(path, tmp_path, share=0.5)


def records(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def test_claude_code_output_uses_its_own_compaction_markers(tmp_path: Path) -> None:
    path = SAMPLES / "coding-agent.claude-code.jsonl"
    data, _ = roundtrip(path, tmp_path, share=0.5)
    written = [r for r in records(data) if "ctxpack" in r]
    boundary = next(r for r in written if r.get("subtype") == "compact_boundary")
    summary = next(r for r in written if r["ctxpack"].get("kind") == "archived_summary")
    assert boundary["parentUuid"] is None
    assert summary["isCompactSummary"] is True
    assert summary["message"]["content"].startswith("## Archived Session Summary")
    uuids = {r.get("uuid") for r in records(data)}
    assert all(r["parentUuid"] in uuids for r in records(data) if r.get("parentUuid"))
    t = load(tmp_path / path.name)
    assert any(m.text.startswith("## Archived Session Summary") for m in t.messages)
    assert not any(m.human and m.text.startswith("## Archived") for m in t.messages)


def test_codex_output_uses_a_compacted_record(tmp_path: Path) -> None:
    path = SAMPLES / "refactor.codex.jsonl"
    result = compress_file(path, Options(budget=8000))
    compacted = [r for r in records(result.data) if r.get("type") == "compacted"]
    assert len(compacted) == 1
    history = compacted[0]["payload"]["replacement_history"]
    assert history[-1]["content"][0]["text"].startswith("## Archived Session Summary")
    assert "ctxpack" in compacted[0] and all("ctxpack" not in item for item in history)


def test_summary_metadata_names_everything_design_asks_for() -> None:
    result = compress_file(SAMPLES / "support-chat.openai.jsonl", Options(budget=3000))
    meta = next(r["ctxpack"] for r in records(result.data)
                if r.get("ctxpack", {}).get("kind") == "archived_summary")
    for key in ("version", "compressed_at", "strategy", "range", "original_count", "new_count",
                "original_tokens", "summary_tokens", "archive"):
        assert key in meta, key
    assert meta["archive"]["inline"] is True and len(meta["archive"]["sha256"]) == 64
    assert meta["range"]["start"] < meta["range"]["end"]


def test_masked_and_truncated_outputs_name_their_archive_id() -> None:
    result = compress_file(SAMPLES / "support-chat.openai.jsonl",
                           Options(keep_observations=1, summarize=False))
    changed = [r for r in records(result.data) if r.get("ctxpack", {}).get("kind")
               == "observations"]
    assert changed
    for r in changed:
        assert r["ctxpack"]["id"] in r["content"]
        assert r["ctxpack"]["items"][0]["action"] == "masked"


def test_an_impossible_budget_is_exit_3_with_the_sizes() -> None:
    with pytest.raises(CannotFit) as info:
        compress_file(SAMPLES / "support-chat.openai.jsonl", Options(budget=500))
    assert info.value.exit_code == 3
    assert "500" in str(info.value)


def test_a_trajectory_document_keeps_its_shape_and_archive() -> None:
    path = SAMPLES / "bugfix.mini-swe-agent.traj.json"
    tokens = stats(path, cache=False).tokens
    result = compress_file(path, Options(budget=tokens * 3 // 4, keep_steps=1))
    doc = orjson.loads(result.data)
    original = orjson.loads(path.read_bytes())
    assert set(original) <= set(doc) and doc["ctxpack"]["kind"] == "document"
    assert doc["messages"][-1] == original["messages"][-1]  # the run's exit entry stays
    assert len(doc["messages"]) < len(original["messages"])
    assert any(str(m.get("content")).startswith("## Archived Session Summary")
               for m in doc["messages"])
    assert restore(result.lines) == path.read_bytes()
    stripped = orjson.loads(compress_file(path, Options(budget=tokens * 3 // 4),
                                          strip_metadata=True).data)
    assert "ctxpack" not in stripped


def test_within_limits_nothing_changes() -> None:
    path = SAMPLES / "multi-round.anthropic.jsonl"
    result = compress_file(path, Options(mask=False))
    assert result.data == path.read_bytes()
    assert not result.report.changed


def test_an_output_cut_before_is_not_cut_again_under_smaller_limits(tmp_path: Path) -> None:
    """Without its metadata (--strip-metadata), a cut output is known by its marker line:
    tighter limits the next time leave it as the first compress left it."""
    log = "\n".join(f"step {n}: compiled module_{n}.c in {n % 7} ms" for n in range(400))
    records = [{"role": "user", "content": "Build it."},
               {"role": "assistant", "content": None, "tool_calls": [{
                   "id": "call_1", "type": "function",
                   "function": {"name": "bash", "arguments": '{"command": "make"}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": log},
               {"role": "assistant", "content": "Built."}]
    path = tmp_path / "build.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    once = compress_file(path, Options(limits=Limits(max_lines=100), mask=False,
                                       summarize=False), strip_metadata=True)
    assert once.report.truncated == 1
    assert b'"ctxpack"' not in once.data  # no metadata says it was cut
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(once.data)
    again = compress_file(cut, Options(limits=Limits(max_lines=20), mask=False,
                                       summarize=False))
    assert again.report.truncated == 0
    assert again.data == once.data


def summary_texts(t) -> list[str]:
    return [p.text for m in t.messages for p in m.parts
            if getattr(p, "text", "").startswith("## Archived Session Summary")]


@pytest.mark.parametrize("path", COMPRESSIBLE, ids=lambda p: p.name)
def test_compressing_again_merges_the_summary_and_restores_whole(path: Path,
                                                                 tmp_path: Path) -> None:
    tokens = stats(path, cache=False).tokens
    first = tmp_path / "first.jsonl"
    first.write_bytes(compress_file(path, Options(budget=int(tokens * 0.8))).data)
    old = summary_texts(load(first))
    try:
        second = compress_file(first, Options(budget=int(tokens * 0.6), keep_steps=1))
    except CannotFit:
        pytest.skip("the second budget cannot be met for this sample")
    out = tmp_path / "second.jsonl"
    out.write_bytes(second.data)
    if not validate(load(path)):
        assert validate(load(out)) == []
    new = summary_texts(load(out))
    assert len(new) == (1 if old or second.report.summary else 0)
    if old and second.report.summary:
        step_lines = [line for line in old[0].splitlines() if line.startswith("* Step")]
        assert all(line in new[0] for line in step_lines[:3]), "old steps were not merged"
    assert restore(out) == path.read_bytes()


@pytest.mark.parametrize("path", [SAMPLES / "support-chat.openai.jsonl",
                                  SAMPLES / "coding-agent.claude-code.jsonl"],
                         ids=lambda p: p.name)
def test_structured_strategy_keeps_the_invariants(path: Path, tmp_path: Path) -> None:
    tokens = stats(path, cache=False).tokens
    result = compress_file(path, Options(budget=int(tokens * 0.75), strategy="structured"))
    out = tmp_path / path.name
    out.write_bytes(result.data)
    (summary,) = summary_texts(load(out))
    assert "### Pending items" in summary or "### Completed work" in summary
    assert result.report.summary["strategy"] == "structured"
    assert validate(load(out)) == []
    assert restore(out) == path.read_bytes()


def test_keep_rounds_keeps_the_newest_requests_in_full() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    requests = [m.text for m in load(path).messages if m.human]
    for rounds in range(4):
        result = compress_file(path, Options(budget=4000, target=2500, keep_rounds=rounds,
                                             keep_steps=0))
        kept = [m.text for m in load(io.BytesIO(result.data)).messages if m.human]
        newest = requests[len(requests) - rounds:] if rounds else []
        assert kept[len(kept) - len(newest):] == newest
        assert all(r not in kept for r in requests[1:len(requests) - rounds])


def agent_run(steps: int, task_words: int = 40, reuse_ids: bool = False) -> bytes:
    """A Chat Completions run: a task, then `steps` bash steps whose outputs hold facts."""
    lines: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing build. " + "Details follow. " * task_words}]
    for k in range(steps):
        call_id = f"call_{k % 3 if reuse_ids else k}"
        arguments = orjson.dumps({"command": f"make target_{k}"}).decode()
        lines.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": arguments}}]})
        lines.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(
            [f"building src/pkg_{k}/main_{k}.c", f"see https://ci.example.org/runs/{k}",
             *(f"cc -O2 -c unit_{k}_{j}.c" for j in range(12)), f"error: step {k} failed"])})
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def test_a_tight_budget_squeezes_the_summary_rather_than_failing() -> None:
    data = agent_run(24)
    full = compress_file(io.BytesIO(data), Options(summarize=False, mask=False))
    options = {"keep_steps": 14, "mask": False}  # steps 1-10 may be archived, no more
    # an unreachable target: the region goes as far as it may, the summary at full size
    loose = compress_file(io.BytesIO(data), Options(budget=full.report.tokens_after - 1,
                                                    target=1, **options))
    s = loose.report.summary
    assert s is not None and s["messages"] == 20 and s["max_tokens"] == s["cap_tokens"]
    kept = loose.report.tokens_after - s["tokens"]
    budget = kept + s["tokens"] * 2 // 3  # less room than the summary took
    result = compress_file(io.BytesIO(data), Options(budget=budget, **options))
    s = result.report.summary
    assert result.report.tokens_after <= budget and s["messages"] == 20
    assert s["squeezed"] and s["max_tokens"] < s["cap_tokens"]
    assert any("leaves the summary" in w for w in result.report.warnings)
    assert restore(result.lines) == data


def test_the_summary_is_a_fifth_of_what_it_archives_at_most() -> None:
    data = agent_run(40)
    counts = {}
    for ratio in (5, 1):
        options = Options(budget=5000, target=5000, summary_ratio=ratio, mask=False)
        result = compress_file(io.BytesIO(data), options)
        s = result.report.summary
        counts[ratio] = s["tokens"]
        assert s["cap_tokens"] == min(10_000, s["archived_tokens_read"] // ratio)
        assert s["tokens"] <= s["cap_tokens"] + 16  # the message's framing
    assert counts[5] < counts[1]


def test_reused_call_ids_pair_each_call_with_the_next_result() -> None:
    from ctxpack.compression.units import cuts

    t = load(io.BytesIO(agent_run(9, reuse_ids=True)))
    allowed = cuts(t.messages)
    assert allowed == [0, 1, *range(2, len(t.messages) + 1, 2)]  # a cut after every step
    result = compress_file(io.BytesIO(agent_run(30, reuse_ids=True)), Options(budget=2500))
    out = load(io.BytesIO(result.data))
    for i, m in enumerate(out.messages):  # every call still has its result right after it
        if m.tool_calls:
            assert out.messages[i + 1].tool_results[0].call_id == m.tool_calls[0].id


def test_a_second_compress_summarizes_masked_outputs_from_their_archive(tmp_path: Path) -> None:
    path = SAMPLES / "refactor.codex.jsonl"
    first = tmp_path / "first.jsonl"
    first.write_bytes(compress_file(path, Options(budget=15746, target=15746)).data)
    masked = [m for m in load(first).messages
              if any("go build" in r.text and "masked" in r.text for r in m.tool_results)]
    assert masked and "(an error) masked" in masked[0].tool_results[0].text
    second = compress_file(first, Options(budget=9447, target=9447))
    (summary,) = summary_texts(load(io.BytesIO(second.data)))
    line = next(x for x in summary.splitlines() if "go build" in x)
    assert "-> error" in line  # as the original said, not the placeholder
    assert 'main.go:11:2: "log" imported and not used' in line
    assert restore(second.lines) == path.read_bytes()


def test_restoring_only_a_summary_brings_back_the_links_to_it(tmp_path: Path) -> None:
    path = SAMPLES / "coding-agent.claude-code.jsonl"
    result = compress_file(path, Options(budget=stats(path, cache=False).tokens // 2))
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


def test_the_default_target_leaves_room_below_the_budget() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    report = compress_file(path, Options(budget=4000)).report
    assert (report.trigger, report.target, report.limit) == (4000, 2500, 4000)
    assert compress_file(path, Options(budget=4000, target=3900)).report.target == 3900
    window = compress_file(path, Options()).report
    assert window.target == window.context_window // 2


def test_the_library_takes_message_dicts_and_gives_api_ready_ones_back() -> None:
    import ctxpack

    messages = [orjson.loads(line) for line in agent_run(30).splitlines()]
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=2500, keep_steps=3)
    assert report.tokens_after <= 2500 < report.tokens_before
    assert out[:2] == messages[:2]  # the system prompt and the task
    assert out[-6:] == messages[-6:]  # the three newest steps, untouched
    assert all("ctxpack" not in m for m in out)
    (summary,) = [m["content"] for m in out if str(m["content"]).startswith("## Archived")]
    assert "their full text was not kept" in summary  # the caller holds the originals
    open_calls: list[str] = []
    for m in out:  # Chat Completions accepts it: each call's results right after it
        if m["role"] == "tool":
            open_calls.remove(m["tool_call_id"])
        else:
            assert not open_calls
            open_calls = [c["id"] for c in m.get("tool_calls") or ()]
    assert messages == [orjson.loads(line) for line in agent_run(30).splitlines()]


def test_the_library_on_a_transcript_keeps_the_archive() -> None:
    import ctxpack

    path = SAMPLES / "support-chat.openai.jsonl"
    small, report = ctxpack.compress(load(path), budget=3000)
    assert report.summary is not None and small.format == "openai"
    assert restore([r.raw for r in small.records]) == path.read_bytes()


@pytest.mark.parametrize("settings, fragment", [
    ({"keep_step": 3}, "compress(): unknown setting(s): keep_step"),
    ({"threshold": "high"}, "threshold must be float"),
    ({"summary_ratio": 0}, "summary_ratio must be at least 1"),
    ({"keep_steps": True}, "keep_steps must be int"),
])
def test_the_library_refuses_bad_settings_by_name(settings: dict, fragment: str) -> None:
    import ctxpack
    from ctxpack.errors import UsageError

    with pytest.raises(UsageError) as info:
        ctxpack.compress([{"role": "user", "content": "hi"}], **settings)
    assert fragment in str(info.value)


def test_settings_given_as_text_are_read_as_their_type() -> None:
    import ctxpack

    _, report = ctxpack.compress([{"role": "user", "content": "hi"}], budget="3000",
                                 threshold="0.5")
    assert report.limit == 3000
