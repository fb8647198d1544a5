"""`calibrate` accounts for every call a file records: fitted (half of each run held out),
or left out and counted by why, the same way for every format; a call made before a
compaction is fitted on the context it was made on, which the file still holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import SAMPLES, corpus_files
from .helpers import ctxpack
from .test_huge_counts import _copies

# the counts of a row (`calibrate --json`) that, with the calls fitted, make up the calls
# its files record, and how the line under the table saying each opens
NOT_FITTED = {"left_out": "left out, as the bill passes them over",
              "no_prompt": "not used, ",
              "set_aside": "set aside, their recorded usage cannot be true",
              "no_size": "not used, recording no prompt size"}
# samples read as a tree (a task's two files, a storage folder): given whole
TREES = ("cline-task", "opencode-storage")
CLAUDE_CODE = SAMPLES / "coding-agent.claude-code.jsonl"


def _recordings() -> list:
    """Every sample and corpus file a reader takes (a tree as one), one param each."""
    trees = [SAMPLES / t for t in TREES]
    files = [p for p in sorted(SAMPLES.rglob("*")) if p.is_file()
             and p.suffix in (".jsonl", ".json", ".md") and p.name != "README.md"
             and not any(t in p.parents for t in trees)]
    corpus = [p for p in corpus_files(pattern="*") if p.is_file() and p.name != "MANIFEST.md"]
    return [pytest.param(p, id=p.relative_to(p.parents[1]).as_posix())
            for p in (*files, *trees)] + \
        [pytest.param(p, id=f"corpus/{p.name}", marks=pytest.mark.corpus) for p in corpus]


def recorded(paths: list[Path]) -> int:
    """The calls the files record, as `stats` counts them: those its usage summary holds
    and those set aside as impossible."""
    run = ctxpack("stats", "--json", *map(str, paths))
    assert "Traceback" not in run.err, run.err
    return sum(f["usage"].get("calls", 0) + f["usage"].get("calls_set_aside", 0)
               for f in json.loads(run.out)["files"] if f.get("usage"))


def rows(*paths: Path) -> list[dict]:
    run = ctxpack("calibrate", "--json", *map(str, paths))
    assert run.code == 0, run.err
    return json.loads(run.out)


@pytest.mark.parametrize("path", _recordings())
def test_every_call_a_file_records_is_fitted_or_left_out_with_a_reason(path: Path) -> None:
    total = recorded([path])
    run = ctxpack("calibrate", "--json", str(path))
    if run.code == 2:  # no call with usage of its own: the file is skipped, saying so
        calls = f", only its run's totals ({total:,} call{'s' * (total != 1)})" if total else ""
        assert f"{path}: records no call's own usage{calls}: skipped" in \
            " ".join(run.err.split())
        return
    assert run.code == 0, run.err
    found = json.loads(run.out)
    for row in found:
        assert row["recorded"] == row["calls"] + sum(row[k] for k in NOT_FITTED), row
    assert sum(row["recorded"] for row in found) == total


def said_of_each(paths: list[Path], found: list[dict]) -> None:
    """The text says each count of calls left out, in a line of its row."""
    said = " ".join(ctxpack("calibrate", *map(str, paths), env={"COLUMNS": "300"}).out.split())
    for row in found:
        # (the calls of no prompt the files hold, a line for each reason)
        assert sum(row["no_prompt_why"].values()) == row["no_prompt"], row
        for key, words in NOT_FITTED.items():
            for reason, n in (row["no_prompt_why"].items() if key == "no_prompt"
                              else [("", row[key])]):
                if n:
                    calls = "call" if n == 1 else "calls"
                    assert f"{row['label']}: {n} {calls} {words}{reason}" in said, (row, key)


def test_calls_whose_usage_cannot_be_true_are_counted_as_set_aside(tmp_path: Path) -> None:
    # every sample with one count, in each record, past what any call can hold: the calls
    # set aside were counted nowhere (a file of 86 calls showed 85)
    copies = [given for given, _, _ in _copies(tmp_path)]
    found = rows(*copies)
    aside = sum(row["set_aside"] for row in found)
    assert aside > 100  # of every format whose usage holds such a count
    assert sum(row["recorded"] for row in found) == recorded(copies)
    for row in found:
        assert row["recorded"] == row["calls"] + sum(row[k] for k in NOT_FITTED), row
    said_of_each(copies, found)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _boundary(records: list[dict]) -> int:
    return max(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")


def _compacted_pair(source: Path, into: Path) -> tuple[Path, Path]:
    """`source` cut before its newest compaction (its calls made on the context they were
    made on, as a file of its own), and `source` whole with the usage of every reply after
    that compaction taken out (its only calls those made before it)."""
    records = _records(source)
    cut = _boundary(records)
    later = []
    for n, r in enumerate(records):
        message = r.get("message")
        if n > cut and isinstance(message, dict) and "usage" in message:
            r = {**r, "message": {k: v for k, v in message.items() if k != "usage"}}
        later.append(r)
    return (_write(into / f"before-{source.name}", records[:cut]),
            _write(into / f"whole-{source.name}", later))


def _fit(row: dict) -> dict:
    return {k: row[k] for k in ("model", "files", "calls", "steps", "slope", "overhead",
                                "error", "worst")}


def _compactions() -> list:
    files = [CLAUDE_CODE, *(p for p in corpus_files("claude-code", "anthropic-messages")
                            if '"compact_boundary"' in p.read_text())]
    return [pytest.param(p, id=p.name) for p in files]


@pytest.mark.parametrize("path", _compactions())
def test_calls_before_a_compaction_are_fitted_on_the_context_they_were_made_on(
        tmp_path: Path, path: Path) -> None:
    before, whole = _compacted_pair(path, tmp_path)
    alone = rows(before)
    assert alone and sum(r["calls"] for r in alone) > 0
    # the file that goes on past the compaction fits those calls as the file that ended
    # before it does: on the messages they were sent, not on the context that replaced them
    assert [_fit(r) for r in rows(whole)] == [_fit(r) for r in alone]
    # and with the calls after it, each call of the file is fitted (none "not used" for
    # being made before the compaction)
    full = rows(path)
    assert sum(r["calls"] for r in full) > sum(r["calls"] for r in alone)
    assert sum(r["recorded"] for r in full) == recorded([path])
    said_of_each([path], full)


def test_the_notes_under_the_table_are_wrapped_to_the_terminal(tmp_path: Path) -> None:
    # a stream-json run's first reply has nothing before it in the file: a call not used,
    # said in a short line of its reason alone, wrapped where the terminal is narrower
    sample = SAMPLES / "stream.anthropic.jsonl"
    (row,) = rows(sample)
    assert row["no_prompt"] == 1
    wide = ctxpack("calibrate", str(sample), env={"COLUMNS": "300"}).out
    (note,) = [line for line in wide.splitlines() if "not used" in line]
    assert note.endswith(": 1 call not used, with nothing before the reply in the file")
    assert 60 < len(note) < 100
    for width in (60, 80):
        out = ctxpack("calibrate", str(sample), env={"COLUMNS": str(width)}).out
        assert max(map(len, out.splitlines())) <= width
        assert " ".join(note.split()) in " ".join(out.split())


def test_why_a_fit_is_not_written_is_wrapped_as_the_notes_are(tmp_path: Path) -> None:
    # the Codex sessions of the corpus pool two gpt-5.5 sessions of unlike overheads: the
    # reason that fit is not written runs past any terminal, said on stderr
    codex = corpus_files("codex")
    if not codex:
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    config = tmp_path / "team.yaml"
    for width in (80, 100):
        config.unlink(missing_ok=True)
        run = ctxpack("calibrate", *map(str, codex), "--write-config", str(config),
                      env={"COLUMNS": str(width)})
        assert run.code == 0, run.err
        said = " ".join(run.err.split())
        assert "not writing gpt-5.5: a call held out is off by" in said, run.err
        reasons = run.err.split("\nwrote ")[0]  # (the config's path is not broken)
        assert max(map(len, reasons.splitlines())) <= width, run.err


def _compacted_again(source: Path) -> list[dict]:
    """`source` (a Claude Code session with one compaction) compacted once more at its
    end: its part after the compaction written again, under new uuids and message ids,
    after a second boundary whose summarized chain is all of `source`'s."""
    records = _records(source)
    cut = _boundary(records)
    last = next(r["uuid"] for r in reversed(records) if r.get("uuid"))

    def again(value: object) -> object:
        return f"{value}-again" if isinstance(value, str) else value

    boundary = {**records[cut], "uuid": again(records[cut]["uuid"]), "logicalParentUuid": last}
    later = []
    for r in records[cut + 1:]:
        r = {**r, "uuid": again(r.get("uuid")), "parentUuid": again(r.get("parentUuid"))}
        if isinstance(r.get("message"), dict) and "id" in r["message"]:
            r["message"] = {**r["message"], "id": again(r["message"]["id"])}
        later.append(r)
    return [*records, boundary, *later]


def test_calls_before_an_older_compaction_are_fitted_on_their_own_context(
        tmp_path: Path) -> None:
    twice = _compacted_again(CLAUDE_CODE)
    assert sum(r.get("subtype") == "compact_boundary" for r in twice) == 2
    first = min(n for n, r in enumerate(twice) if r.get("subtype") == "compact_boundary")
    # the calls made before the first of two compactions, alone in a file of their own
    alone = rows(_write(tmp_path / "first.jsonl", twice[:first]))
    assert alone and sum(r["calls"] for r in alone) > 0
    # the file compacted twice, with usage only before the older compaction: those calls
    # are fitted on the chain they were sent, as in the file that ended there (none "not
    # used" for being made before an older compaction than the newest)
    only = [r if n < first or not isinstance(r.get("message"), dict) else
            {**r, "message": {k: v for k, v in r["message"].items() if k != "usage"}}
            for n, r in enumerate(twice)]
    older = rows(_write(tmp_path / "older-only.jsonl", only))
    assert [_fit(r) for r in older] == [_fit(r) for r in alone]
    assert not any(r["no_prompt"] for r in older)
    # and the whole file fits the calls of all three contexts, each call accounted for
    path = _write(tmp_path / "twice.jsonl", twice)
    full = rows(path)
    once = rows(CLAUDE_CODE)
    assert sum(r["calls"] for r in full) > sum(r["calls"] for r in once)
    assert sum(r["recorded"] for r in full) == recorded([path]) > recorded([CLAUDE_CODE])
    assert sum(r["no_prompt"] for r in full) == sum(r["no_prompt"] for r in once)
    said_of_each([path], full)


def test_calls_on_no_prompt_the_files_hold_get_a_short_line_per_reason(tmp_path: Path
                                                                       ) -> None:
    # a Cline request that names no history message and a
    # Claude Code reply off the branch: each reason its own line, with its count
    task = tmp_path / "task"
    shutil.copytree(SAMPLES / "cline-task", task)
    ui = task / "ui_messages.json"
    events = json.loads(ui.read_text())
    started = [e for e in events if e.get("say") == "api_req_started"]
    del started[0]["conversationHistoryIndex"]
    ui.write_text(json.dumps(events))
    records = _records(CLAUDE_CODE)
    reply = next(r for r in records if isinstance(r.get("message"), dict)
                 and "usage" in r["message"])
    branch = {**reply, "uuid": "off-the-branch", "message": {**reply["message"],
                                                             "id": "msg_off_the_branch"}}
    at = records.index(reply) + 1  # (the session goes on from the reply it branched off)
    claude = _write(tmp_path / "branched.jsonl", [*records[:at], branch, *records[at:]])
    found = rows(task, claude)
    why = {row["label"]: row["no_prompt_why"] for row in found}
    assert why["claude-sonnet-4-5-20250929"].get("at no place the file names") == 1, why
    assert why["claude-opus-4-6"].get("off the branch") == 1, why
    said_of_each([task, claude], found)
    lines = [line for line in ctxpack("calibrate", str(task), str(claude),
                                      env={"COLUMNS": "300"}).out.splitlines()
             if "not used, " in line]
    assert len(lines) == sum(len(w) for w in why.values()) and max(map(len, lines)) < 80


def _cline_task(into: Path, cut: bool, drop_after: bool) -> Path:
    """The Cline sample task copied to `into`: `cut`, its last request carrying a
    `conversationHistoryDeletedRange` of history messages 1 and 2 (Cline cut them to fit
    the window, so its last two requests were sent without them); `drop_after`, those two
    requests recording no usage (as a request cancelled before the provider answered)."""
    task = into
    shutil.copytree(SAMPLES / "cline-task", task)
    ui = task / "ui_messages.json"
    events = json.loads(ui.read_text())
    requests = [e for e in events if e.get("say") == "api_req_started"]
    if cut:
        requests[-1]["conversationHistoryDeletedRange"] = [1, 2]
    if drop_after:
        for e in requests[-2:]:
            info = json.loads(e["text"])
            info.update(tokensIn=0, tokensOut=0, cacheWrites=0, cacheReads=0, cost=0)
            e["text"] = json.dumps(info)
    ui.write_text(json.dumps(events))
    return task


def test_cline_calls_before_a_cut_are_fitted_on_the_history_they_were_sent(
        tmp_path: Path) -> None:
    # the requests before the cut were sent on the whole history: with only their usage,
    # the task that was cut fits as the one that never was
    before = rows(_cline_task(tmp_path / "cut-before", cut=True, drop_after=True))
    never = rows(_cline_task(tmp_path / "never-before", cut=False, drop_after=True))
    assert sum(r["calls"] for r in never) == 4
    assert [_fit(r) for r in before] == [_fit(r) for r in never]
    # and with all its usage, every request is fitted: none "not used" for the cut, each
    # on the prompt it was sent (the last two without messages 1 and 2)
    task = _cline_task(tmp_path / "cut", cut=True, drop_after=False)
    found = rows(task)
    assert sum(r["calls"] for r in found) == sum(r["recorded"] for r in found) \
        == recorded([task]) == 6
    assert not any(r["no_prompt"] for r in found)
    assert [_fit(r) for r in found] != [_fit(r) for r in rows(SAMPLES / "cline-task")]


def _stream_json(contexts: int, priced: range) -> list[dict]:
    """A stream-json run compacted `contexts - 1` times, each context 8 calls long, each
    call's result a few hundred tokens of listing; the calls of the contexts in `priced`
    (0: the first) record the usage a real one would (25,000 sent besides the messages,
    1.25 × tiktoken's count of the context's messages so far), the others none."""
    from .helpers import fixture_tokens
    from .test_format_anthropic import answer, calls, init, piece, typed

    records: list[dict] = [init()]
    for k in range(contexts):
        if k:
            records += [{"type": "system", "subtype": "compact_boundary",
                         "session_id": records[0]["session_id"],
                         "compact_metadata": {"trigger": "auto", "pre_tokens": 40_000}}]
        opening = "Summary of the session so far: the jobs are being moved. " * 3 if k else \
            "Move the billing jobs off the old scheduler. " * 20
        records.append(typed(opening, isSynthetic=bool(k)))
        counted = fixture_tokens(opening)
        for step in range(8):
            use = {"input_tokens": 3, "cache_creation_input_tokens":
                   25_000 + round(1.25 * counted), "cache_read_input_tokens": 0,
                   "output_tokens": 20}
            call = f"toolu_{k}_{step}"
            reply = piece(f"msg_{k}_{step}", calls(call, f"ls jobs/{step}"), use)
            if k not in priced:
                del reply["message"]["usage"]
            listing = "".join(f"jobs/job_{k}_{step}_{j}.py: scheduled hourly\n"
                              for j in range(40))
            records += [reply, answer(call, listing)]
            counted += fixture_tokens(listing) + 20
    return records


def test_stream_json_calls_before_an_older_compaction_are_fitted_on_their_context(
        tmp_path: Path) -> None:
    # compacted twice: the calls made before the older compaction were "not used"; they
    # are fitted on the messages they were sent, as in a run that ended there
    older_only = rows(_write(tmp_path / "older.jsonl", _stream_json(3, range(1))))
    first = _stream_json(1, range(1))
    alone = rows(_write(tmp_path / "first.jsonl", first))
    assert sum(r["calls"] for r in alone) == 8
    assert [_fit(r) for r in older_only] == [_fit(r) for r in alone]
    assert not any(r["no_prompt"] for r in older_only)
    # with every context's usage, every call is fitted (each its context's run), and
    # every call the file records is accounted for
    path = _write(tmp_path / "all.jsonl", _stream_json(3, range(3)))
    (row,) = rows(path)
    assert row["calls"] == 24 and row["no_prompt"] == 0
    assert row["recorded"] == recorded([path]) == 24
    assert abs(row["slope"] - 1.25) < 0.1 and abs(row["overhead"] - 25_000) < 1_000
    said_of_each([path], [row])


def _openhands(condensations: int, priced: range) -> list[dict]:
    """An OpenHands trajectory of `condensations + 1` stretches of 8 `run` calls, each
    stretch after the first opened by a condensation forgetting the calls of the one
    before; the calls of the stretches in `priced` (0: the first) record the usage a
    real one would (5,000 sent besides the messages, 1.1 × tiktoken's count of the events
    not forgotten so far), the others none."""
    from .helpers import fixture_tokens
    from .test_format_more import openhands_run

    events: list[dict] = [{"id": 0, "source": "user", "action": "message",
                           "args": {"content": "Move the billing jobs. " * 20}}]
    sizes = {0: fixture_tokens(events[0]["args"]["content"])}  # event id -> its tokens
    for k in range(condensations + 1):
        if k:
            ids = [e["id"] for e in events if e["id"] in sizes and e["id"] > 0]
            events.append({"id": len(events), "source": "agent", "action": "condensation",
                           "args": {"forgotten_event_ids": ids}})
            sizes = {0: sizes[0]}
        for step in range(8):
            i = len(events)
            usage = {"prompt_tokens": 5_000 + round(1.1 * sum(sizes.values())),
                     "completion_tokens": 20} if k in priced else None
            action, result = openhands_run(i, f"{k}_{step}", usage)
            result["content"] = "".join(f"jobs/job_{k}_{step}_{j}.py: scheduled hourly\n"
                                        for j in range(40))
            events += [action, result]
            sizes[i], sizes[i + 1] = 20, fixture_tokens(result["content"])
    return events


def _trajectory(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps(events, indent=1))
    return path


def test_openhands_calls_before_a_condensation_are_fitted_on_the_events_they_were_sent(
        tmp_path: Path) -> None:
    # the calls before the first of two condensations were "not used": they are fitted on
    # the events they were sent, as in a run that ended before it
    before = rows(_trajectory(tmp_path / "before.json", _openhands(2, range(1))))
    alone = rows(_trajectory(tmp_path / "alone.json", _openhands(0, range(1))))
    assert sum(r["calls"] for r in alone) == 8
    assert [_fit(r) for r in before] == [_fit(r) for r in alone]
    assert not any(r["no_prompt"] for r in before)
    # with usage on all three stretches, each call is fitted on the events it was sent
    # (those the condensations before it had not forgotten), and accounted for
    path = _trajectory(tmp_path / "all.json", _openhands(2, range(3)))
    (row,) = rows(path)
    assert row["calls"] == 24 and row["no_prompt"] == 0
    assert row["recorded"] == recorded([path]) == 24
    assert abs(row["slope"] - 1.1) < 0.1 and abs(row["overhead"] - 5_000) < 500
    assert row["error"] is not None and row["worst"] < 0.02
    said_of_each([path], [row])


def _compacted_session(name: str, steps: int) -> list[dict]:
    """A Claude Code session `name` of `steps` calls, compacted, then `steps` more, with
    the usage a real one records (`with_real_usage`)."""
    from .helpers import with_real_usage
    from .test_format_claude_code import answer, boundary, calls, piece, user

    records = [user(f"{name}-u0", None, "Move the billing jobs off the old scheduler. " * 20)]
    for part in range(2):
        for k in range(steps):
            tag = f"{name}-{part}-{k}"
            listing = "".join(f"jobs/job_{k}_{j}.py: scheduled hourly\n"
                              for j in range(30 + 10 * k))
            records += [piece(f"{tag}-a", records[-1]["uuid"], f"msg_{tag}",
                              calls(f"toolu_{tag}")),
                        answer(f"{tag}-r", f"{tag}-a", f"toolu_{tag}", listing)]
        if part == 0:
            records += [boundary(f"{name}-b", records[-1]["uuid"]),
                        user(f"{name}-s", f"{name}-b", "This session is being continued: "
                             "the jobs moved so far are listed. " * 10, isCompactSummary=True)]
    return with_real_usage([{**r, "sessionId": name} for r in records])


def test_calls_before_each_joined_session_s_compaction_are_fitted(tmp_path: Path) -> None:
    # `cat a.jsonl b.jsonl` of two compacted sessions: the calls the first session made
    # before its compaction were "not used"; each is fitted on the context it was sent,
    # as in the session alone
    first, second = _compacted_session("sess-a", 6), _compacted_session("sess-b", 7)
    alone = [rows(_write(tmp_path / f"{n}.jsonl", s)) for n, s in enumerate((first, second))]
    path = _write(tmp_path / "joined.jsonl", [*first, *second])
    (row,) = rows(path)
    assert row["calls"] == sum(r["calls"] for rs in alone for r in rs) == 26
    assert row["recorded"] == recorded([path]) == row["calls"] + sum(
        row[k] for k in NOT_FITTED)
    assert not row["no_prompt"] and not row["left_out"]
    said_of_each([path], [row])
