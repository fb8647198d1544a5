"""A recorded usage count no token count can be (a float, a string, a boolean, an array) is
named by every reader that records usage: `validate` names its place, and `stats` sets its
call aside rather than billing it as 0 or dropping it without a word.

Each case takes a sample, puts one bad value in the usage field of its last recorded call
(a JSONL file's line alone is rewritten; a document is written again whole, its honest
copy alike), and compares what the command line says of the two copies.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from ctxpack import load

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack

# (the dict holding the field's dict, the key it sits under, the field's dict) -> wanted
Where = Callable[[dict[str, Any] | None, str | None, dict[str, Any]], bool]


def under(name: str) -> Where:
    return lambda owner, key, d: key == name


def anywhere(owner: dict[str, Any] | None, key: str | None, d: dict[str, Any]) -> bool:
    return True


def step_tokens(owner: dict[str, Any] | None, key: str | None, d: dict[str, Any]) -> bool:
    return key == "tokens" and owner is not None and owner.get("type") == "step-finish"


# sample (file read, other files of its folder), field, where it is, the bad value, and
# where validate names it: "line", the line the value is written on (JSONL); "item", in a
# document, the item holding it (the line it starts on, and its place); "value", in a
# document whose items are deep (OpenCode's export), the line the value is written on,
# named by the place of the object holding it
CASES = [
    ("refactor.codex.jsonl", "input_tokens", under("last_token_usage"), 1.5e300, "line"),
    ("cline-task/api_conversation_history.json", "tokensIn", anywhere, "500", "item"),
    ("cline-task/ui_messages.json", "cacheReads", anywhere, True, "item"),
    ("plateau-fix.gemini-cli.jsonl", "input", under("tokens"), [12_000], "line"),
    ("openhands/env-flags.openhands.jsonl", "prompt_tokens", anywhere, 2.5, "line"),
    ("bugfix.mini-swe-agent.traj.json", "prompt_tokens", under("usage"), "1200", "item"),
    ("opencode/book-search.opencode.json", "input", step_tokens, False, "value"),
    ("gemini-api/inbox-batch.gemini-api.jsonl", "promptTokenCount", under("usageMetadata"),
     {"n": 1}, "line"),
    ("coding-agent.claude-code.jsonl", "output_tokens", under("usage"), 7.0, "line"),
]


def shown(value: Any) -> str:
    """The value as a problem names it (repr of a number or text, else its JSON kind)."""
    if isinstance(value, (bool, int, float, str)):
        return repr(value)
    return {list: "(an array)", dict: "(an object)"}[type(value)]


def fields(value: Any, owner: dict[str, Any] | None = None,
           key: str | None = None) -> Iterator[tuple[dict[str, Any] | None, str | None,
                                                     dict[str, Any]]]:
    """Every dict in a JSON value, in document order, with the dict holding it and its key;
    a string holding a JSON object (Cline's event text) is walked too."""
    if isinstance(value, dict):
        yield owner, key, value
        for k, v in value.items():
            yield from fields(v, value, k)
    elif isinstance(value, list):
        for v in value:
            yield from fields(v, owner, key)
    elif isinstance(value, str) and value.startswith("{"):
        try:
            yield from fields(json.loads(value), owner, key)
        except ValueError:
            pass


def poison(value: Any, field: str, where: Where, bad: Any) -> bool:
    """Put `bad` in the last `field` holding a count above 0 in a dict `where` wants;
    False when there is none. A JSON object kept as text is written back as text."""
    found = [(o, k, d) for o, k, d in fields(value)
             if where(o, k, d) and type(d.get(field)) is int and d[field] > 0]
    if not found:
        return False
    owner, key, d = found[-1]
    d[field] = bad
    if owner is not None and key is not None and isinstance(owner.get(key), str):
        owner[key] = json.dumps(d)  # (Cline's event text)
    return True


def copies(tmp_path: Path, sample: str, field: str, where: Where, bad: Any
           ) -> tuple[Path, Path, int, Path]:
    """An honest and a poisoned copy of `sample` (its folder's other files beside each),
    the line the bad value is on (0 for a document) and the file it is in."""
    source = SAMPLES / sample
    out = []
    line = 0
    for name, value in (("honest", None), ("bad", bad)):
        folder = tmp_path / name
        shutil.copytree(source.parent, folder) if source.parent != SAMPLES else folder.mkdir()
        # the file whose usage is poisoned: Cline's UI log beside the history read
        target = folder / ("ui_messages.json" if "cline" in sample else source.name)
        text = target.read_text() if target.exists() else source.read_text()
        if target.suffix == ".jsonl":
            lines = text.splitlines()
            records = [json.loads(x) for x in lines]
            hit = max(n for n, r in enumerate(records) if poison(json.loads(lines[n]), field,
                                                                 where, 1))
            if name == "bad":
                assert poison(records[hit], field, where, value)
                lines[hit] = json.dumps(records[hit])
            line = hit + 1
            target.write_text("\n".join(lines) + "\n")
        else:
            document = json.loads(text)
            assert name == "honest" or poison(document, field, where, value)
            target.write_text(json.dumps(document, indent=1))
        out.append(folder / source.name)
    return out[0], out[1], line, target


def holds(item: Any, field: str, bad: Any) -> bool:
    """Does the JSON value hold `field` set to `bad` (in an object kept as text too)?"""
    return any(d.get(field, object()) == bad and type(d[field]) is type(bad)
               for _, _, d in fields(item))


def item_at(path: Path, line: int) -> Any:
    """The JSON object a document written with indent=1 opens on `line` (to the line that
    closes it at the same indentation)."""
    lines = path.read_text().splitlines()
    opening = lines[line - 1]
    assert opening.strip() == "{", opening
    indent = opening[:len(opening) - len(opening.lstrip())]
    end = next(n for n in range(line, len(lines)) if lines[n].startswith(f"{indent}}}"))
    return json.loads("\n".join(lines[line - 1:end] + ["}"]))


@pytest.mark.parametrize(("sample", "field", "where", "bad", "named_at"), CASES,
                         ids=[c[0].split("/")[-1] for c in CASES])
def test_every_reader_names_a_count_no_token_count_can_be(
        tmp_path: Path, sample: str, field: str, where: Where, bad: Any, named_at: str
) -> None:
    honest, poisoned, line, target = copies(tmp_path, sample, field, where, bad)
    # validate: one new problem, naming the field and its value, at its place
    said = {p: ctxpack("validate", str(p)) for p in (honest, poisoned)}
    assert "Traceback" not in said[poisoned].err
    assert said[poisoned].code == 1, said[poisoned]
    before = {x.replace(str(honest), "FILE") for x in said[honest].out.splitlines()}
    new = [x for x in said[poisoned].out.splitlines()
           if x.replace(str(poisoned), "FILE") not in before]
    assert len(new) == 1, said[poisoned].out
    # named in the file it is in (Cline's UI log, read beside its history), at its line;
    # in a document printed over many lines, at the line its item starts on, which holds
    # it, and by its place (`event 4: `, `[3]: `)
    assert new[0].startswith(f"{target}:"), new[0]
    named = int(new[0][len(f"{target}:"):].split(":")[0])
    if named_at == "line":
        assert named == line, new[0]
    elif named_at == "item":
        assert named > 1 and holds(item_at(target, named), field, bad), new[0]
        assert re.match(r"[^:]+: recorded usage", new[0][len(f"{target}:{named}: "):]), new[0]
    else:
        lines = target.read_text().splitlines()
        assert lines[named - 1].strip().startswith(f'"{field}": {json.dumps(bad)}'), new[0]
        assert re.match(r"messages\[\d+\]\.parts\[\d+\]: recorded usage",
                        new[0][len(f"{target}:{named}: "):]), new[0]
    assert f"{field} {shown(bad)}" in new[0] and "cannot be true" in new[0], new[0]
    # stats: the call is set aside, not billed as 0 nor dropped unsaid
    counted = {p: json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]
               for p in (honest, poisoned)}
    h, b = counted[honest], counted[poisoned]
    assert len(b["usage_set_aside"]) == len(h["usage_set_aside"]) + 1
    assert any(f"{field} {shown(bad)}" in x["problem"] for x in b["usage_set_aside"])
    # of the recorded calls, that one is left out of those the bill and window use
    assert len(load(poisoned).calls) == len(load(honest).calls) - 1
    # and out of the usage table's totals, which say how many were set aside
    hu, bu = h["usage"], b["usage"]
    assert "calls_set_aside" not in hu and bu["calls_set_aside"] == 1
    assert bu["calls"] == hu["calls"] - 1
    assert bu["input_tokens"] < hu["input_tokens"]
    # (a total never grows; the last prompt is the last kept call's, which may be larger)
    assert all(bu.get(k, 0) <= v for k, v in hu.items()
               if type(v) is int and k not in ("calls", "last_input_tokens"))
    # nor is its cost summed, where the file records what each call cost
    if "cost_usd" in hu:
        assert bu.get("cost_usd", 0) < hu["cost_usd"], (hu, bu)


# a call's cost (Cline's UI log and history, OpenCode's steps): the sample, the file whose
# cost is poisoned (None: the sample), the cost field's name as validate gives it, a value
# no cost can be, and the sibling file left out (Cline's history then reads its metrics)
COST_CASES = [
    ("cline-task/api_conversation_history.json", "ui_messages.json", "cost", "0.02", None),
    ("cline-task/api_conversation_history.json", None, "metrics.cost", {"usd": 0.05},
     "ui_messages.json"),
    ("opencode/book-search.opencode.json", None, "cost", -0.5, None),
]


def poison_cost(value: Any, bad: Any) -> float:
    """Put `bad` in the last `cost` above 0 in the JSON value (in a Cline event's text
    too); the cost it held."""
    owner, key, d = [(o, k, d) for o, k, d in fields(value)
                     if type(d.get("cost")) is float and d["cost"] > 0][-1]
    was, d["cost"] = d["cost"], bad
    if owner is not None and key is not None and isinstance(owner.get(key), str):
        owner[key] = json.dumps(d)  # (Cline's event text)
    return was


@pytest.mark.parametrize(("sample", "poisoned", "named", "bad", "left_out"), COST_CASES,
                         ids=["cline-ui-log", "cline-history-metrics", "opencode"])
def test_a_call_cost_no_cost_can_be_sets_its_call_aside(
        tmp_path: Path, sample: str, poisoned: str | None, named: str, bad: Any,
        left_out: str | None) -> None:
    """A call's recorded cost that is no number, zero or more, is named at its place and
    its call set aside, its tokens and the cost of it out of the table: it was summed as
    $0 without a word."""
    source = SAMPLES / sample
    files = {}
    for name in ("honest", "bad"):
        folder = tmp_path / name
        shutil.copytree(source.parent, folder)
        if left_out:
            (folder / left_out).unlink()
        files[name] = folder / source.name
    target = files["bad"].parent / (poisoned or source.name)
    document = json.loads(target.read_text())
    was = poison_cost(document, bad)
    target.write_text(json.dumps(document, indent=1))
    said = {k: ctxpack("validate", str(p)) for k, p in files.items()}
    assert said["bad"].code == 1 and "Traceback" not in said["bad"].err, said["bad"]
    before = {x.replace(str(files["honest"]), "FILE") for x in said["honest"].out.splitlines()}
    new = [x for x in said["bad"].out.splitlines()
           if x.replace(str(files["bad"]), "FILE") not in before]
    assert len(new) == 1 and new[0].startswith(f"{target}:"), said["bad"].out
    assert f"recorded usage cannot be true: {named} {shown(bad)} (a cost is a number, zero " \
        f"or more); set aside" in new[0], new[0]
    h, b = (json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]
            for p in files.values())
    assert len(b["usage_set_aside"]) == len(h["usage_set_aside"]) + 1
    assert len(load(files["bad"]).calls) == len(load(files["honest"]).calls) - 1
    hu, bu = h["usage"], b["usage"]
    assert bu["calls"] == hu["calls"] - 1 and bu["calls_set_aside"] == 1
    assert bu["input_tokens"] < hu["input_tokens"]
    assert bu["cost_usd"] == round(hu["cost_usd"] - was, 6), (hu, bu)


def test_the_usage_table_sums_only_the_calls_believed(tmp_path: Path) -> None:
    # a made-up prompt on the last call was summed into input_tokens (a trillion) and
    # was the table's last_input_tokens, though the bill had set it aside
    lines = (SAMPLES / "coding-agent.claude-code.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    last = max(n for n, r in enumerate(records) if "usage" in r.get("message", {}))
    before = max(n for n, r in enumerate(records[:last]) if "usage" in r.get("message", {})
                 and r["message"]["id"] != records[last]["message"]["id"])
    usage = records[last]["message"]["usage"]
    prompt = sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                    "cache_read_input_tokens"))
    earlier = records[before]["message"]["usage"]
    usage["input_tokens"] = 999_999_999_999
    lines[last] = json.dumps(records[last])
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    honest = json.loads(ctxpack("stats", "--json", str(SAMPLES / "coding-agent.claude-code.jsonl")
                                ).out)["files"][0]["usage"]
    told = ctxpack("stats", "--json", str(path))
    u = json.loads(told.out)["files"][0]["usage"]
    assert u["input_tokens"] == honest["input_tokens"] - prompt
    assert u["output_tokens"] == honest["output_tokens"] - usage["output_tokens"]
    assert u["cache_read_tokens"] == honest["cache_read_tokens"] - usage[
        "cache_read_input_tokens"]
    assert u["calls"] == honest["calls"] - 1 and u["calls_set_aside"] == 1
    assert u["last_input_tokens"] == sum(earlier[k] for k in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    # the table says it too
    table = ctxpack("stats", str(path)).out
    assert "calls_set_aside" in table and f"{u['input_tokens']:,}" in table


# Codex writes a call's usage as running totals and the call's own counts, and writes the
# same event again a few times a turn: a count no token count can be in either is named,
# its call set aside, and the table's `calls` counts the calls kept
CODEX = CORPUS / "codex"


def codex_events(name: str) -> list[tuple[int, dict[str, Any]]]:
    """The `token_count` events of a corpus Codex file that tell of a call: line, `info`
    (the test skips where the file is not here)."""
    path = CODEX / name
    if not path.is_file():
        pytest.skip(f"corpus file {name} not found")
    out = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        record = json.loads(text)
        payload = record.get("payload")
        if isinstance(payload, dict) and payload.get("type") == "token_count" \
                and isinstance(payload.get("info"), dict):
            out.append((n, payload["info"]))
    return out


def codex_copy(tmp_path: Path, name: str, line: int, usage: str, field: str, bad: Any
               ) -> tuple[Path, Path]:
    """The corpus Codex file `name` and a copy of it with `bad` as the `field` of the
    `usage` object of the event on `line`."""
    source = CODEX / name
    if not source.is_file():
        pytest.skip(f"corpus file {name} not found")
    lines = source.read_text().splitlines()
    record = json.loads(lines[line - 1])
    record["payload"]["info"][usage][field] = bad
    lines[line - 1] = json.dumps(record)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return source, path


def usage_of(path: Path) -> dict[str, Any]:
    return json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["usage"]


def restated(events: list[tuple[int, dict[str, Any]]]) -> tuple[int, int]:
    """The lines of the first event the next one tells again (the same values), and of
    that next one."""
    return next((a, b) for (a, x), (b, y) in pairwise(events) if x == y)


@pytest.mark.parametrize("which", ["told", "told again", "last"])
def test_a_running_total_no_count_can_be_sets_its_call_aside(tmp_path: Path, which: str
                                                              ) -> None:
    name = "rtchess__exported-session.jsonl"
    events = codex_events(name)
    first, again = restated(events)
    line = {"told": first, "told again": again, "last": events[-1][0]}[which]
    honest, bad = codex_copy(tmp_path, name, line, "total_token_usage", "input_tokens", 3.5)
    said = ctxpack("validate", str(bad))
    assert said.code == 1 and "Traceback" not in said.err, said
    named = [x for x in said.out.splitlines() if x.startswith(f"{bad}:")]
    assert len(named) == 1 and named[0].startswith(f"{bad}:{line}: "), said.out
    assert "total_token_usage.input_tokens 3.5" in named[0] and "cannot be true" in named[0]
    # one call set aside, and no call more: the event telling a call again is no new call
    h, b = usage_of(honest), usage_of(bad)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"] - 1
    assert b["calls"] == len(load(bad).calls)
    # the table's totals are the kept calls': the call's own usage taken back out
    share = dict(events)[line]["last_token_usage"]
    assert b["input_tokens"] == h["input_tokens"] - share["input_tokens"]
    assert b["output_tokens"] == h["output_tokens"] - share["output_tokens"]


def test_a_running_total_going_backwards_does_not_change_the_table(tmp_path: Path) -> None:
    """A running total that falls (made up, or restarted) is no measure of what the calls
    used: the table sums each call's own usage, as the file holds it."""
    name = "rtchess__exported-session.jsonl"
    line, info = codex_events(name)[-1]
    # (falling to its cached part: less than that is no total, cached input being input)
    fallen = info["total_token_usage"]["cached_input_tokens"]
    assert fallen < info["total_token_usage"]["input_tokens"] - 1_000_000
    honest, bad = codex_copy(tmp_path, name, line, "total_token_usage", "input_tokens", fallen)
    h, b = usage_of(honest), usage_of(bad)
    assert b == h and h["input_tokens"] > 1_000_000


def test_the_table_counts_the_calls_kept_when_a_middle_one_is_set_aside(tmp_path: Path
                                                                         ) -> None:
    name = "raze__codex-session.jsonl"
    events = codex_events(name)
    # a call in the middle whose event is written again after it
    line = restated(events[len(events) // 2:])[0]
    honest, bad = codex_copy(tmp_path, name, line, "last_token_usage", "input_tokens",
                             1.5e300)
    h, b = usage_of(honest), usage_of(bad)
    assert h["calls"] == len(load(honest).calls)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"] - 1 == len(load(bad).calls)
    assert b["last_input_tokens"] == h["last_input_tokens"]


def test_the_last_prompt_is_the_last_kept_calls_when_the_last_is_set_aside(tmp_path: Path
                                                                            ) -> None:
    name = "raze__codex-session.jsonl"
    events = codex_events(name)
    line, last = events[-1]
    # the call before the last: the newest event telling of another call
    before = next(info for _, info in reversed(events) if info != last)
    honest, bad = codex_copy(tmp_path, name, line, "last_token_usage", "input_tokens",
                             1.5e300)
    u = usage_of(bad)
    assert u["calls_set_aside"] == 1 and u["calls"] == usage_of(honest)["calls"] - 1
    assert u["last_input_tokens"] == before["last_token_usage"]["input_tokens"]
    table = ctxpack("stats", str(bad)).out
    assert "last_input_tokens" in table and f"{u['last_input_tokens']:,}" in table


@pytest.mark.parametrize("said", ["5,000,000", "1.2.3", "-5", "3e5"])  # (-5, 3e5 read as 5)
def test_an_aider_amount_aider_never_prints_sets_its_call_aside(tmp_path: Path,
                                                               said: str) -> None:
    """Aider prints `12k sent`, never a count with commas, nor one past what a float holds
    exactly: such an amount in a `> Tokens:` line is named at its line, not billed as 0."""
    sample = SAMPLES / "aider" / "unit-conversions.aider.chat.history.md"
    lines = sample.read_text().split("\n")
    at = max(n for n, line in enumerate(lines) if line.startswith("> Tokens: "))
    first, rest = lines[at].split(" sent", 1)
    lines[at] = f"> Tokens: {said} sent{rest}"
    path = tmp_path / sample.name
    path.write_text("\n".join(lines))
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and f"{path}:{at + 1}: recorded usage cannot be true: " \
        f"'> Tokens:' {said} sent (no count Aider prints)" in checked.out, checked.out
    honest = json.loads(ctxpack("stats", "--json", str(sample)).out)["files"][0]
    bad = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in bad["usage_set_aside"]] == [at + 1]
    assert bad["usage"]["calls_set_aside"] == 1
    assert bad["usage"]["calls"] == honest["usage"]["calls"] - 1
    # the message's cost the line prints is left out with it
    cost = float(rest.split("Cost: $", 1)[1].split()[0])
    assert cost > 0 and bad["usage"]["cost_usd"] == round(honest["usage"]["cost_usd"] - cost, 6)


def result_line(name: str, edit: Callable[[dict[str, Any]], None]
                ) -> Callable[[Path], tuple[Path, Path, int]]:
    """A sample of stream-json output, and a copy whose `result` line `edit` changed."""
    def make(tmp_path: Path) -> tuple[Path, Path, int]:
        sample = SAMPLES / name
        lines = sample.read_text().splitlines()
        at = next(n for n, text in enumerate(lines) if json.loads(text).get("type") == "result")
        record = json.loads(lines[at])
        edit(record)
        lines[at] = json.dumps(record)
        bad = tmp_path / name
        bad.write_text("\n".join(lines) + "\n")
        return sample, bad, at + 1
    return make


def test_a_stream_runs_recorded_totals_stand_apart_from_the_calls_judged_true(
        tmp_path: Path) -> None:
    """A Claude stream-json `result` line's totals are the whole run's as the CLI wrote
    them: a call set aside leaves them be, where it is taken out of the sums of the calls;
    the JSON names them (`whole_run`) and the text says so of each."""
    lines = (SAMPLES / "stream.anthropic.jsonl").read_text().splitlines()
    at = max(n for n, text in enumerate(lines)
             if "usage" in (json.loads(text).get("message") or {}))
    record = json.loads(lines[at])
    record["message"]["usage"]["output_tokens"] = -5
    lines[at] = json.dumps(record)
    bad = tmp_path / "run.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    h, b = (json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]["usage"]
            for p in (SAMPLES / "stream.anthropic.jsonl", bad))
    run = ["result_input_tokens", "result_output_tokens", "cost_usd"]
    assert h["whole_run"] == b["whole_run"] == run
    assert b["calls_set_aside"] == 1 and b["output_tokens"] < h["output_tokens"]
    assert [b[k] for k in run] == [h[k] for k in run]  # the run's totals stand
    assert b["result_output_tokens"] > b["output_tokens"]
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in ctxpack("stats", "--top", "0", str(bad)).out.splitlines()
            if line.count("│") == 3}
    for k in run:
        assert rows[k].endswith("(recorded total, whole run)"), rows
    assert rows["output_tokens"] == f"{b['output_tokens']:,}", rows


def swe_agent(**bad: int) -> Callable[[Path], tuple[Path, Path, int]]:
    """A SWE-agent trajectory (its run totals in `info.model_stats`, printed over many
    lines as SWE-agent writes it), and a copy whose totals hold the `bad` counts."""
    def make(tmp_path: Path) -> tuple[Path, Path, int]:
        def written(name: str, **counts: int) -> Path:
            stats = {"instance_cost": 0.21, "tokens_sent": 12_000, "tokens_received": 300,
                     "api_calls": 3, **counts}
            document = {"environment": "swe_main", "history": [
                {"role": "system", "content": "You fix bugs in the repository."},
                {"role": "user", "content": "The parser drops the last line. Fix it."},
                {"role": "assistant", "content": "Fixed: the loop now reads to the end."}],
                "info": {"exit_status": "submitted", "model_stats": stats}}
            path = tmp_path / name
            path.write_text(json.dumps(document, indent=2))
            return path
        wrong = written("bad.traj", **bad)
        at = next(n for n, text in enumerate(wrong.read_text().splitlines(), 1)
                  if '"model_stats"' in text)
        return written("honest.traj"), wrong, at
    return make


def set_stats(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record["stats"].__setitem__(key, value)


def set_usage(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record["usage"].__setitem__(key, value)


def set_cost(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.__setitem__("total_cost_usd", value)


@pytest.mark.parametrize(("make", "named", "totals"), [
    (result_line("todo-table.gemini-stream.jsonl", set_stats("input_tokens", 2.5)),
     "stats.input_tokens 2.5", ["input_tokens", "output_tokens", "cache_read_tokens",
                                "tool_calls"]),
    (result_line("stream.anthropic.jsonl", set_usage("output_tokens", "900")),
     "usage.output_tokens '900'", ["result_input_tokens", "result_output_tokens",
                                   "cost_usd"]),
    (result_line("stream.anthropic.jsonl", set_cost(-6.2)), "total_cost_usd -6.2",
     ["result_input_tokens", "result_output_tokens", "cost_usd"]),
    (swe_agent(tokens_received=-300), "info.model_stats.tokens_received -300",
     ["calls", "input_tokens", "output_tokens"]),
    # a count past what a run's calls can hold (a million of the largest there is), a part
    # more than the whole that holds it, a cost past what such a run could cost
    (result_line("todo-table.gemini-stream.jsonl", set_stats("cached", 10**18)),
     "stats.cached 1,000,000,000,000,000,000 (more than 2,097,152,000,000, the most a run's "
     "totals can hold", ["input_tokens", "output_tokens", "cache_read_tokens", "tool_calls"]),
    (result_line("todo-table.gemini-stream.jsonl", set_stats("cached", 40_647)),
     "stats.cached 40,647 (more than the stats.input_tokens 40,646 it is part of)",
     ["input_tokens", "output_tokens", "cache_read_tokens", "tool_calls"]),
    (result_line("stream.anthropic.jsonl", set_usage("output_tokens", 10**15)),
     "usage.output_tokens 1,000,000,000,000,000 (more than 2,097,152,000,000",
     ["result_input_tokens", "result_output_tokens", "cost_usd"]),
    (result_line("stream.anthropic.jsonl", set_cost(1e308)),
     "total_cost_usd 1e+308 (more than $1,258,291,200.00, what a run's most tokens",
     ["result_input_tokens", "result_output_tokens", "cost_usd"]),
    (swe_agent(tokens_sent=10**16),
     "info.model_stats.tokens_sent 10,000,000,000,000,000 (more than 2,097,152,000,000",
     ["calls", "input_tokens", "output_tokens"]),
], ids=["gemini-stream", "claude-stream-usage", "claude-stream-cost", "swe-agent",
        "gemini-stream-past-a-run", "gemini-stream-cached-past-input",
        "claude-stream-past-a-run", "claude-stream-cost-past-a-run", "swe-agent-past-a-run"])
def test_run_totals_no_count_can_be_are_set_aside(
        tmp_path: Path, make: Callable[[Path], tuple[Path, Path, int]], named: str,
        totals: list[str]) -> None:
    """A run's totals (a `result` line's, SWE-agent's `model_stats`) holding a value no
    count or cost can be are named at their line and left out of the table: not summed as
    0, not dropped without a word."""
    honest, bad, line = make(tmp_path)
    said = ctxpack("validate", str(bad))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    problems = [x for x in said.out.splitlines() if x.startswith(f"{bad}:")]
    assert len(problems) == 1 and problems[0].startswith(f"{bad}:{line}: recorded run totals "
                                                         f"cannot be true: {named}"), said.out
    # one reason a value: no "))", no rule of another case
    assert "))" not in problems[0], said.out
    assert ctxpack("validate", str(honest)).code == 0
    h = json.loads(ctxpack("stats", "--json", str(honest)).out)["files"][0]
    b = json.loads(ctxpack("stats", "--json", str(bad)).out)["files"][0]
    assert [x["line"] for x in b["usage_set_aside"]] == [line] and not h["usage_set_aside"]
    assert all(h["usage"][k] > 0 and k not in b["usage"] for k in totals), (h, b)
    # what else the file records of its calls stands
    assert {k: v for k, v in b["usage"].items() if k != "source"} == {
        k: v for k, v in h["usage"].items() if k not in ("source", "whole_run", *totals)}
    assert "whole_run" not in b["usage"]  # (no run totals left to name)
    shown = " ".join(ctxpack("stats", str(bad)).out.split())
    assert f"recorded usage set aside, as it cannot be true (`ctxpack validate` says why): " \
        f"line {line}" in shown


def session_usage(tmp_path: Path, name: str, cost: Any) -> tuple[Path, int]:
    """The managed-agent events sample, its `session.usage` totals given the `list_cost`
    `cost`, and the line of those totals."""
    lines = (SAMPLES / "export-timeout.anthropic-events.jsonl").read_text().splitlines()
    at = max(n for n, text in enumerate(lines) if json.loads(text)["type"] == "session.usage")
    record = json.loads(lines[at])
    record["usage"]["list_cost"] = cost
    lines[at] = json.dumps(record)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path, at + 1


@pytest.mark.parametrize(("cost", "named"), [
    ({"amount": "-3", "currency": "USD"}, "usage.list_cost.amount '-3'"),
    ({"amount": "lots", "currency": "USD"}, "usage.list_cost.amount 'lots'"),
    ({"amount": ["184"], "currency": "USD"}, "usage.list_cost.amount (an array)"),
    (-1.84, "usage.list_cost -1.84"),
], ids=["negative", "text", "array", "bare-negative"])
def test_managed_agent_session_totals_whose_cost_no_cost_can_be_are_set_aside(
        tmp_path: Path, cost: Any, named: str) -> None:
    """The managed-agent `session.usage` list cost is a cost as any other: one that is no
    number, zero or more, is named at its line and not shown; it was dropped unsaid."""
    honest, _ = session_usage(tmp_path, "honest.jsonl", {"amount": "184", "currency": "USD"})
    bad, line = session_usage(tmp_path, "bad.jsonl", cost)
    assert ctxpack("validate", str(honest)).code == 0
    said = ctxpack("validate", str(bad))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    assert [x for x in said.out.splitlines() if x.startswith(f"{bad}:")] == [
        f"{bad}:{line}: recorded run totals cannot be true: {named} (a cost is a number, zero "
        f"or more); set aside, not counted in the usage totals"
    ], said.out
    h, b = (json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0] for p in (honest, bad))
    # a number, as every cost is, in dollars (the API writes cents), and its currency (it
    # was the text "1.84 USD")
    assert (h["usage"]["list_cost"], h["usage"]["list_cost_currency"]) == (1.84, "USD")
    assert not h["usage_set_aside"]
    assert "list_cost" not in b["usage"] and [x["line"] for x in b["usage_set_aside"]] == [line]
    # what the file records of its calls stands
    assert b["usage"] == {k: v for k, v in h["usage"].items()
                          if not k.startswith("list_cost") and k != "whole_run"}
    assert h["usage"]["whole_run"] == ["list_cost", "list_cost_currency"]


CODEX_SAMPLE = SAMPLES / "refactor.codex.jsonl"


def sample_events() -> list[tuple[int, dict[str, Any]]]:
    """The `token_count` events of the Codex sample that tell of a call: line, `info`."""
    out = []
    for n, text in enumerate(CODEX_SAMPLE.read_text().splitlines(), 1):
        payload = json.loads(text).get("payload")
        if isinstance(payload, dict) and payload.get("type") == "token_count" \
                and isinstance(payload.get("info"), dict):
            out.append((n, payload["info"]))
    return out


def sample_copy(tmp_path: Path, line: int, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the Codex sample whose event on `line` `edit` changed (its `info`)."""
    lines = CODEX_SAMPLE.read_text().splitlines()
    record = json.loads(lines[line - 1])
    edit(record["payload"]["info"])
    lines[line - 1] = json.dumps(record)
    path = tmp_path / CODEX_SAMPLE.name
    path.write_text("\n".join(lines) + "\n")
    return path


def named_lines(path: Path) -> list[str]:
    said = ctxpack("validate", str(path))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    return [x for x in said.out.splitlines() if x.startswith(f"{path}:")]


def test_a_codex_running_total_past_what_a_run_holds_sets_its_call_aside(tmp_path: Path
                                                                         ) -> None:
    """A running total no run's calls could reach is no total: the event's call is named and
    set aside, as for a count no token count can be."""
    line, info = sample_events()[-1]
    bad = sample_copy(tmp_path, line, lambda i: i["total_token_usage"].__setitem__(
        "input_tokens", 10**13))
    named = named_lines(bad)
    assert len(named) == 1 and named[0].startswith(
        f"{bad}:{line}: recorded usage cannot be true: total_token_usage.input_tokens "
        f"10,000,000,000,000 "
        "(more than 2,097,152,000,000"), named
    h, b = usage_of(CODEX_SAMPLE), usage_of(bad)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"] - 1
    assert b["input_tokens"] == h["input_tokens"] - info["last_token_usage"]["input_tokens"]


def set_last(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda info: info.__setitem__("last_token_usage", value)


def raise_total(info: dict[str, Any]) -> None:
    info["total_token_usage"]["input_tokens"] += 5


@pytest.mark.parametrize(("which", "edit", "named"), [
    ("told", set_last("x"), "recorded usage cannot be true: last_token_usage 'x' (a usage"),
    ("again", set_last("x"), "recorded usage cannot be true: last_token_usage 'x' (a usage"),
    ("told", raise_total, "recorded usage cannot be true: the token_count event of line"),
    ("again", raise_total, "recorded usage cannot be true: the token_count event of line"),
], ids=["usage-not-an-object", "twin's-usage-not-an-object", "running-total-changed",
        "twin's-running-total-changed"])
def test_a_codex_event_written_again_otherwise_is_one_call_set_aside(
        tmp_path: Path, which: str, edit: Callable[[dict[str, Any]], None], named: str
        ) -> None:
    """Codex writes a call's `token_count` event twice alike: where one of the two says
    otherwise (its usage no object, its running total changed), the call is named and set
    aside, not counted twice (19 calls of 18, its input added again)."""
    events = sample_events()
    told, again = restated(events)
    line = {"told": told, "again": again}[which]
    bad = sample_copy(tmp_path, line, edit)
    problems = named_lines(bad)
    # named where the file says it otherwise: a usage no object where it is, another
    # running total where the second of the two tells it
    at = line if "'x'" in named else again
    assert len(problems) == 1 and problems[0].startswith(f"{bad}:{at}: {named}"), problems
    h, b = usage_of(CODEX_SAMPLE), usage_of(bad)
    share = dict(events)[told]["last_token_usage"]
    assert b["calls"] + b["calls_set_aside"] == h["calls"] and b["calls_set_aside"] == 1
    assert b["input_tokens"] == h["input_tokens"] - share["input_tokens"]
    assert b["output_tokens"] == h["output_tokens"] - share["output_tokens"]
    stats = json.loads(ctxpack("stats", "--json", str(bad)).out)["files"][0]
    assert [x["line"] for x in stats["usage_set_aside"]] == [at]


def test_the_overhead_carried_past_a_codex_compaction_is_one_a_config_could_give(
        tmp_path: Path) -> None:
    """The calls before a compaction measure what is sent besides the messages; where they
    measure more than the model's window (each call recording its prompt plus 860,000, all
    within five times the window), that is no overhead (a config refuses it): the bill after
    the compaction is the table's, as where the file records no usage, not 300% of the
    window."""
    extra = 860_000
    records = [json.loads(x) for x in CODEX_SAMPLE.read_text().splitlines()]
    total: dict[str, int] = {}
    told: dict[str, int] | None = None
    for record in records:
        payload = record.get("payload")
        if not (isinstance(payload, dict) and payload.get("type") == "token_count"
                and isinstance(payload.get("info"), dict)):
            continue
        info = payload["info"]
        last = info["last_token_usage"]
        if last != told:  # a new call: the running total rises by it
            told = dict(last)
            last = {**last, "input_tokens": last["input_tokens"] + extra,
                    "total_tokens": last["total_tokens"] + extra}
            total = {k: total.get(k, 0) + v for k, v in last.items()}
        info["last_token_usage"], info["total_token_usage"] = dict(last), dict(total)
    compacted = {"timestamp": "2026-01-14T10:00:00.000Z", "type": "compacted",
                 "payload": {"message": "Summary: logging goes through one package now."}}

    def written(name: str, keep: Callable[[dict[str, Any]], bool]) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in [*records, compacted]
                                if keep(r)))
        return path

    big = written("big.jsonl", lambda r: True)
    none = written("none.jsonl", lambda r: r["payload"].get("type") != "token_count")
    b = json.loads(ctxpack("stats", "--json", str(big)).out)["files"][0]["context"]
    n = json.loads(ctxpack("stats", "--json", str(none)).out)["files"][0]["context"]
    window = usage_of(big)["context_window"]
    assert b["kind"] == "calibrated" and b["tokens"] < window
    # (the slope the calls show may round the split a token the other way)
    assert abs(b["not_in_file"] - n["not_in_file"]) <= 1 and b["not_in_file"] < extra
    # the JSON says what the text does: the calls before the compaction measured more
    # than the window, so the table's overhead stands
    assert b["earlier_calls"] > 0 and b["earlier_overhead_past_window"] > extra
    assert n["earlier_calls"] == n["earlier_overhead_past_window"] == 0
    said = " ".join(ctxpack("stats", "--top", "0", str(big)).out.split())
    assert (f"+ {b['overhead']:,} sent but not logged (the table's: the {b['earlier_calls']} "
            f"calls before the compaction measure {b['earlier_overhead_past_window']:,}, past "
            "the model's window)") in said
    # where they measure an overhead a config could give, it is theirs, and both say so
    honest = tmp_path / "honest.jsonl"
    honest.write_text(CODEX_SAMPLE.read_text() + json.dumps(compacted) + "\n")
    h = json.loads(ctxpack("stats", "--json", str(honest)).out)["files"][0]["context"]
    assert h["earlier_calls"] > 0 and h["earlier_overhead_past_window"] == 0
    assert h["billed_model"] == b["billed_model"] == "gpt-5.1-codex"
    said = " ".join(ctxpack("stats", "--top", "0", str(honest)).out.split())
    assert (f"+ {h['overhead']:,} sent but not logged (measured on the {h['earlier_calls']} "
            "calls before the compaction)") in said


# what replaces a call's `3.4k sent, 176 received`, and how validate names the call: each
# amount held to what a call holds, as every reader's counts are; a call's prompt and reply
# together to five times its model's window (a Claude model's 200,000)
_FIELD, _TOO_MANY = ("usage cannot be true: '> Tokens:' ",
                     "(more than 2,097,152, twice the largest window of any model)")
AIDER_PAST = [
    ("99999999999999999999k sent, 176 received", f"{_FIELD}sent a 23-digit number {_TOO_MANY}"),
    ("3.4k sent, 99999999999999999999999 received",
     f"{_FIELD}received a 23-digit number {_TOO_MANY}"),
    ("3.4k sent, 9999999999 received", f"{_FIELD}received 9,999,999,999 {_TOO_MANY}"),
    ("3.4k sent, 9999999999 cache hit, 176 received",
     f"{_FIELD}cache hit 9,999,999,999 {_TOO_MANY}"),
    ("3.4k sent, 3000k cache write, 176 received", f"{_FIELD}cache write 3,000,000 {_TOO_MANY}"),
    ("3.4k sent, 1.5M received", "usage of 1,503,400 tokens (prompt and reply) cannot be true: "
     "more than 1,000,000, 5 times the 200,000-token window"),
    ("1.5M sent, 176 received", "usage of 1,500,176 tokens (prompt and reply) cannot be true: "
     "more than 1,000,000, 5 times the 200,000-token window"),
]


@pytest.mark.parametrize("amounts, named", AIDER_PAST)
def test_an_aider_amount_no_call_holds_sets_its_call_aside(tmp_path: Path, amounts: str,
                                                           named: str) -> None:
    """A `received` (or cache) amount is held to what a call holds as `sent` is: named at
    its line and left out of the JSON and the table, not added to output_tokens."""
    sample = SAMPLES / "aider" / "unit-conversions.aider.chat.history.md"
    lines = sample.read_text().split("\n")
    at = lines.index("> Tokens: 3.4k sent, 176 received. Cost: $0.01 message, $0.01 session.  ")
    lines[at] = lines[at].replace("3.4k sent, 176 received", amounts)
    path = tmp_path / sample.name
    path.write_text("\n".join(lines))
    (said,) = named_lines(path)
    assert said.startswith(f"{path}:{at + 1}: recorded {named}") and said.endswith(
        "; set aside, not used for the bill or the window"), said
    honest = json.loads(ctxpack("stats", "--json", str(sample)).out)["files"][0]["usage"]
    bad = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in bad["usage_set_aside"]] == [at + 1]
    u = bad["usage"]
    assert (u["calls"], u["calls_set_aside"]) == (honest["calls"] - 1, 1)
    assert (u["input_tokens"], u["output_tokens"]) == (honest["input_tokens"] - 3_400,
                                                       honest["output_tokens"] - 176)
    assert u["cache_read_tokens"] == honest["cache_read_tokens"]
    table = ctxpack("stats", str(path)).out
    assert re.search(rf"│ output_tokens +│ {u['output_tokens']:,} +│", table), table


def test_an_aider_cost_no_call_can_run_to_sets_its_call_aside(tmp_path: Path) -> None:
    """A message's cost more than the most tokens a call holds could cost at the dearest
    price any model charges is named at its line, and left out of the table's cost with
    its call (not summed into it)."""
    sample = SAMPLES / "aider" / "architect-lint.aider.chat.history.md"
    lines = sample.read_text().split("\n")
    at = min(n for n, line in enumerate(lines) if "Cost: $" in line)
    cost = float(lines[at].split("Cost: $", 1)[1].split()[0])
    lines[at] = lines[at].replace(f"Cost: ${cost:.2f} message", "Cost: $99999999999.00 message")
    path = tmp_path / sample.name
    path.write_text("\n".join(lines))
    named = named_lines(path)
    assert len(named) == 1 and named[0].startswith(
        f"{path}:{at + 1}: recorded usage cannot be true: cost 99999999999.0 (more than "
        "$1,258.29, what a call's most tokens (2,097,152) cost at the dearest price any model "
        "charges, $600 per million); set aside"), named
    honest = json.loads(ctxpack("stats", "--json", str(sample)).out)["files"][0]["usage"]
    bad = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in bad["usage_set_aside"]] == [at + 1]
    assert bad["usage"]["calls"] == honest["calls"] - 1
    # the costs left, as the file writes them (0.06, not the 0.059998 a float sum that held
    # 99,999,999,999 leaves), in the JSON and the table
    left = sum(Decimal(c) for n, line in enumerate(lines) if n != at
               for c in re.findall(r"Cost: \$([\d.]+) message", line))
    assert Decimal(repr(bad["usage"]["cost_usd"])) == left
    assert re.search(rf"│ cost_usd +│ {left} +│", ctxpack("stats", str(path)).out)


def test_a_gemini_reply_whose_cached_input_passes_its_input_is_set_aside(tmp_path: Path
                                                                          ) -> None:
    """Gemini CLI's per-reply `tokens.cached` is part of its `input` (the reply's `total`
    adds input, output, thoughts and tool): more than the input is no count."""
    lines = (SAMPLES / "plateau-fix.gemini-cli.jsonl").read_text().splitlines()
    at = max(n for n, text in enumerate(lines) if isinstance(json.loads(text).get("tokens"),
                                                             dict))
    record = json.loads(lines[at])
    tokens = record["tokens"]
    tokens["cached"] = tokens["input"] + 1
    lines[at] = json.dumps(record)
    path = tmp_path / "plateau-fix.gemini-cli.jsonl"
    path.write_text("\n".join(lines) + "\n")
    said = ctxpack("validate", str(path))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    assert f"{path}:{at + 1}: recorded usage cannot be true: tokens.cached " \
        f"{tokens['cached']:,} (more than the tokens.input {tokens['input']:,} it is part of); " \
        f"set aside" in said.out
    b = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in b["usage_set_aside"]] == [at + 1]


def aider_copy(tmp_path: Path, sample: str, edit: Callable[[list[str]], int]) -> tuple[Path, int]:
    """A copy of an Aider sample whose lines `edit` changed, and the line it names."""
    lines = (SAMPLES / "aider" / sample).read_text().split("\n")
    at = edit(lines)
    path = tmp_path / sample
    path.write_text("\n".join(lines))
    return path, at + 1


def editor_tokens(lines: list[str]) -> int:
    """The index of the first `> Tokens:` line of the editor's turns (after the copy of the
    architect's answer, a `####` line that follows a reply)."""
    prompt = next(n for n, line in enumerate(lines) if line.startswith("#### Change `Cart"))
    return next(n for n in range(prompt, len(lines)) if lines[n].startswith("> Tokens: "))


def test_an_aider_editor_call_is_held_to_the_editor_models_window(tmp_path: Path) -> None:
    """In architect mode the editor model's `> Tokens:` lines are calls of their own, not
    the chat's: they are checked as the chat's are, by the editor model's window, and one
    that cannot be true is named at its line and left out of the table (it was summed
    into it unchecked)."""
    def edit(lines: list[str]) -> int:
        model = next(n for n, line in enumerate(lines) if line.startswith("> Editor model:"))
        lines[model] = "> Editor model: gpt-4o-mini with editor-diff edit format  "
        at = editor_tokens(lines)
        lines[at] = lines[at].replace("3.9k sent", "700k sent")
        return at
    path, line = aider_copy(tmp_path, "architect-lint.aider.chat.history.md", edit)
    # 700k is within what the main model (a Claude model) may be sent: not the editor's
    # (the call holds its 700k sent and its 71 received)
    named = named_lines(path)
    assert named == [f"{path}:{line}: recorded usage of 700,071 tokens (prompt and reply) "
                     "cannot be true: more than 640,000, 5 times the 128,000-token window the "
                     "table gives gpt-4o-mini (as gpt-4o); set aside, not used for the bill or "
                     "the window"]
    honest = json.loads(ctxpack("stats", "--json", str(
        SAMPLES / "aider" / "architect-lint.aider.chat.history.md")).out)["files"][0]
    bad = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in bad["usage_set_aside"]] == [line]
    h, b = honest["usage"], bad["usage"]
    assert (b["calls"], b["calls_set_aside"]) == (h["calls"] - 1, 1)
    assert b["input_tokens"] == h["input_tokens"] - 3_900
    assert b["output_tokens"] == h["output_tokens"] - 71 and b["cost_usd"] == 0.07
    # the chat's bill is the chat's calls' alone, as before
    assert bad["context"] == honest["context"]


@pytest.mark.parametrize("where", ["editor", "cleared"])
def test_an_aider_call_on_no_prompt_of_the_chat_has_its_cost_checked(tmp_path: Path,
                                                                     where: str) -> None:
    """A call the bill does not rest on (the editor's; one of a chat `/clear` emptied) is
    in the table all the same, so a cost no call can run to is named and taken out."""
    sample = "architect-lint" if where == "editor" else "unit-conversions"

    def edit(lines: list[str]) -> int:
        at = editor_tokens(lines) if where == "editor" else \
            max(n for n, line in enumerate(lines[:lines.index("#### /clear  ")])
                if line.startswith("> Tokens: "))
        lines[at] = re.sub(r"Cost: \$[\d.]+ message", "Cost: $5000.00 message", lines[at])
        return at
    path, line = aider_copy(tmp_path, f"{sample}.aider.chat.history.md", edit)
    named = named_lines(path)
    assert len(named) == 1 and named[0].startswith(
        f"{path}:{line}: recorded usage cannot be true: cost 5000.0 (more than $1,258.29"), named
    lines = path.read_text().split("\n")
    left = sum(Decimal(c) for n, text in enumerate(lines) if n != line - 1
               for c in re.findall(r"Cost: \$([\d.]+) message", text))
    usage = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["usage"]
    assert usage["calls_set_aside"] == 1 and Decimal(repr(usage["cost_usd"])) == left


def test_an_opencode_step_with_a_bad_cost_is_set_aside_alone(tmp_path: Path) -> None:
    """An OpenCode export message of two steps (two `step-finish` parts), the later with a
    cost no cost can be: each step is its own call, so that step's call is set aside and
    its share of the table taken out, the first step's kept; the cost is named at its own
    line, by the place of the part holding it."""
    sample = SAMPLES / "opencode" / "book-search.opencode.json"
    doc = json.loads(sample.read_text())
    parts = doc["messages"][3]["parts"]
    first = next(p for p in parts if p["type"] == "step-finish")
    second = {**first, "id": "prt_second0step0of0message3", "cost": -1,
              "tokens": {"input": 7, "output": 50, "reasoning": 0,
                         "cache": {"read": 20_000, "write": 300}}}
    parts += [{"type": "step-start", "id": "prt_second0start0of0message3"},
              {"type": "text", "text": "Both edits are in.", "id": "prt_second0text0"},
              second]
    honest, bad = tmp_path / "honest.json", tmp_path / "bad.json"
    honest.write_text(sample.read_text())
    bad.write_text(json.dumps(doc, indent=2))
    line = next(n for n, text in enumerate(bad.read_text().splitlines(), 1)
                if text.strip() == '"cost": -1,')
    assert named_lines(bad) == [
        f"{bad}:{line}: messages[3].parts[{len(parts) - 1}]: recorded usage cannot be true: "
        "cost -1 (a cost is a number, zero or more); set aside, not used for the bill or the "
        "window"]
    h, b = (json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]["usage"]
            for p in (honest, bad))
    # the second step out in full, the first kept as the honest file counts it
    assert (b["calls"], b["calls_set_aside"]) == (h["calls"], 1)
    for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cost_usd"):
        assert b[key] == h[key], key


def test_an_opencode_message_of_several_steps_is_a_call_a_step(tmp_path: Path) -> None:
    """A message holding several steps is read as the same steps written one a message:
    each its own call, its prompt the messages before it, the results of each step before
    the next step's reply; stats and calibrate give the same figures. (The message's first
    step's prompt stood for all of it, and its later steps' results came after them all.)"""
    sample = SAMPLES / "opencode" / "book-search.opencode.json"
    doc = json.loads(sample.read_text())
    steps = [m for m in doc["messages"][1:7] if m["info"]["role"] == "assistant"]
    assert len(steps) == 6 and all(
        sum(p["type"] == "step-finish" for p in m["parts"]) == 1 for m in steps)
    merged = {**steps[0], "parts": [p for m in steps for p in m["parts"]]}
    doc["messages"][1:7] = [merged]
    several = tmp_path / "several.opencode.json"
    several.write_text(json.dumps(doc, indent=2))
    one, many = load(sample), load(several)
    assert [(c.prompt, c.billed, c.output) for c in many.calls] == \
        [(c.prompt, c.billed, c.output) for c in one.calls]
    assert len(many.calls) == 7
    assert [(m.role, m.text) for m in many.messages] == \
        [(m.role, m.text) for m in one.messages]
    stats = [json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]
             for p in (sample, several)]
    for key in ("usage", "context", "by_role", "tokens"):
        assert stats[0][key] == stats[1][key], key
    assert stats[1]["context"]["kind"] == "anchored"
    fits = [json.loads(ctxpack("calibrate", "--json", str(p)).out) for p in (sample, several)]
    assert fits[0] == fits[1] and fits[0][0]["calls"] == 7


# --- usage the totals hold of calls on no context the bill measures ------------------------


def assert_set_aside_alone(honest: Path, path: Path, line: int) -> None:
    """`path`, `honest` with one call added whose usage cannot be true, has `honest`'s
    table with that call counted as set aside, at `line`."""
    h, b = usage_of(honest), usage_of(path)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"]
    assert (b["input_tokens"], b["output_tokens"]) == (h["input_tokens"], h["output_tokens"])
    stats = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in stats["usage_set_aside"]] == [line]


def test_a_claude_code_call_off_the_branch_is_judged_as_one_on_it(tmp_path: Path) -> None:
    """A reply on a branch the session left (its records before the newest message still
    in the file) is in no context, but its usage is in the table's totals: one that no
    call can hold is named at its line and taken back out, as it would be on the branch."""
    sample = SAMPLES / "coding-agent.claude-code.jsonl"
    lines = sample.read_text().splitlines()
    at = next(n for n, text in enumerate(lines) if json.loads(text).get("type") == "assistant"
              and isinstance(json.loads(text)["message"].get("usage"), dict))
    record = json.loads(lines[at])
    usage = record["message"]["usage"]
    # past five times Claude's 200,000 window, within what any call can hold (2,097,152)
    usage["input_tokens"] = 1_500_000
    # a sibling of the reply (the same parent), answered by nothing: the session went on
    # from the reply the file had
    record["uuid"], record["message"]["id"] = "0ff0b4a2-0000-4000-8000-000000000001", "msg_off"
    path = tmp_path / sample.name
    path.write_text("\n".join([*lines[:at + 1], json.dumps(record), *lines[at + 1:]]) + "\n")
    named = named_lines(path)
    held = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                         "cache_read_input_tokens", "output_tokens"))
    assert len(named) == 1 and named[0].startswith(
        f"{path}:{at + 2}: recorded usage of {held:,} tokens (prompt and reply) cannot be "
        "true: more than 1,000,000, 5 times the 200,000-token window"), named
    assert_set_aside_alone(sample, path, at + 2)


def test_a_cline_request_before_its_cut_to_fit_is_judged(tmp_path: Path) -> None:
    """Requests Cline made before it cut the history to fit the window were of a prompt
    that is no longer context, but the table sums them: one whose usage no count can be is
    named at its event and left out, as a request after the cut is."""
    events = json.loads((SAMPLES / "cline-task" / "ui_messages.json").read_bytes())
    events[-1]["conversationHistoryDeletedRange"] = [1, 2]  # the newest event carries it
    requests = [n for n, e in enumerate(events) if e.get("say") == "api_req_started"]
    first = requests[1]  # before the last request: made before the cut
    info = json.loads(events[first]["text"])
    prompt = info["tokensIn"] + info.get("cacheReads", 0) + info.get("cacheWrites", 0)
    honest = tmp_path / "honest" / "ui_messages.json"
    honest.parent.mkdir()
    honest.write_text(json.dumps(events))
    info["tokensIn"] = -5
    events[first]["text"] = json.dumps(info)
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(events))
    named = named_lines(path)
    assert named == [f"{path}:1: event {first}: recorded usage cannot be true: tokensIn -5 "
                     "(a token count is a whole number, zero or more); set aside, not used "
                     "for the bill or the window"], named
    h, b = usage_of(honest), usage_of(path)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"] - 1
    assert b["input_tokens"] == h["input_tokens"] - prompt


def anew(info: dict[str, Any], prompt: int) -> dict[str, Any]:
    """A `token_count` event's info telling of a new call after the one `info` tells of:
    a prompt of `prompt` tokens and nothing else, the running total risen by it."""
    last = dict.fromkeys(info["last_token_usage"], 0) | {"input_tokens": prompt,
                                                          "total_tokens": prompt}
    return {**info, "last_token_usage": last, "total_token_usage": {
        k: v + last.get(k, 0) for k, v in info["total_token_usage"].items()}}


def test_a_codex_call_told_with_no_reply_since_is_judged(tmp_path: Path) -> None:
    """A `token_count` event with new values and no reply since the call before has no
    place in the context, but its share is in the table's totals: one that no call can
    hold is named at its line and its share taken back out (the table as without it)."""
    events = sample_events()
    line, info = events[len(events) // 2]
    lines = CODEX_SAMPLE.read_text().splitlines()
    record = json.loads(lines[line - 1])
    # past five times gpt-5.4's 400,000 window, within what any call can hold (2,097,152)
    record["payload"]["info"] = anew(info, 2_050_000)
    path = tmp_path / CODEX_SAMPLE.name
    path.write_text("\n".join([*lines[:line], json.dumps(record), *lines[line:]]) + "\n")
    named = named_lines(path)
    assert len(named) == 1 and named[0].startswith(
        f"{path}:{line + 1}: recorded usage of 2,050,000 tokens (prompt and reply) cannot be "
        "true: more than"), named
    assert_set_aside_alone(CODEX_SAMPLE, path, line + 1)


def test_a_codex_call_told_last_with_no_reply_is_not_the_last_prompt(tmp_path: Path) -> None:
    """The newest `token_count` event, with new values and no reply after it, is named and
    taken out of the table, its prompt too: the last prompt is the last kept call's."""
    line, info = sample_events()[-1]
    lines = CODEX_SAMPLE.read_text().splitlines()
    record = json.loads(lines[line - 1])
    # past five times gpt-5.4's 400,000 window, within what any call can hold (2,097,152)
    record["payload"]["info"] = anew(info, 2_050_000)
    path = tmp_path / CODEX_SAMPLE.name
    path.write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    named = named_lines(path)
    assert len(named) == 1 and named[0].startswith(f"{path}:{len(lines) + 1}: "), named
    h, b = usage_of(CODEX_SAMPLE), usage_of(path)
    assert b["calls_set_aside"] == 1 and b["calls"] == h["calls"]
    assert b["input_tokens"] == h["input_tokens"]
    assert b["last_input_tokens"] == h["last_input_tokens"]


@pytest.mark.parametrize(("field", "digits"), [("input_tokens", 401), ("input_tokens", 5001)])
def test_a_number_too_long_to_read_is_named_by_its_digits(tmp_path: Path, field: str,
                                                          digits: int) -> None:
    """A count of hundreds of figures is named by how many it has, not written out: the
    line stays one a person can read."""
    line, _ = sample_events()[-1]
    mark = 987_654_321_987  # written out after: Python writes no int of 4,300 digits or more
    bad = sample_copy(tmp_path, line, lambda i: i["total_token_usage"].__setitem__(
        field, mark))
    bad.write_text(bad.read_text().replace(str(mark), "1" + "0" * (digits - 1)))
    said = ctxpack("validate", str(bad))
    assert said.code == 1 and "Traceback" not in said.err + said.out, said
    named = [x for x in said.out.splitlines() if x.startswith(f"{bad}:")]
    assert len(named) == 1 and named[0].startswith(
        f"{bad}:{line}: recorded usage cannot be true: total_token_usage.{field} a "
        f"{digits:,}-digit number (more than 2,097,152,000,000"), named
    assert "0" * 30 not in said.out + said.err


@pytest.mark.parametrize(("cost", "shown"), [(6.200731500000001, "6.200732"), (0.5, "0.5"),
                                             (12.0, "12")])
def test_a_recorded_cost_reads_as_an_amount_in_the_table(tmp_path: Path, cost: float,
                                                         shown: str) -> None:
    # a float's binary tail (as Claude Code's `total_cost_usd` often holds) is no figure a
    # person reads: the table shows the amount to the millionth; the JSON keeps the value
    _, path, _ = result_line("stream.anthropic.jsonl", set_cost(cost))(tmp_path)
    run = ctxpack("stats", str(path))
    row = next(x for x in run.out.splitlines() if "cost_usd" in x)
    assert re.search(rf"│ {re.escape(shown)} \(recorded total, whole run\)", row), row
    assert json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["usage"][
        "cost_usd"] == cost


def test_the_usage_table_names_a_figure_too_long_to_read_by_its_digits() -> None:
    # no reader lets such a count through (each is set aside, above), but the table writes
    # a whole number as a problem quotes one, and its line stays one a person can read
    from dataclasses import replace

    from ctxpack import stats
    from ctxpack.render.stats import to_markdown

    read = stats(SAMPLES / "stream.anthropic.jsonl")
    table = to_markdown([replace(read, usage={**read.usage, "input_tokens": 10**30})])
    assert "| input_tokens | a 31-digit number |" in table
    assert "| output_tokens | 4,714 |" in table  # a count as it always reads
    assert "0" * 30 not in table
