"""`calibrate --write-config` writes a fit only where it can stand as the model's entry for
every file of it: not from a few calls, a model nobody named, or Claude Code's compaction
side-agent (whose unlogged part is the conversation it summarizes)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ctxpack.calibration import LEAST_CALLS, WORST_ERROR, calibrate, untrusted
from ctxpack.config import load_config
from ctxpack.errors import InputError
from ctxpack.loader import load
from ctxpack.models import LARGEST_WINDOW, TABLE

from .conftest import SAMPLES
from .helpers import ctxpack as run_ctxpack

CLAUDE_CODE = SAMPLES / "coding-agent.claude-code.jsonl"
CODEX = SAMPLES / "refactor.codex.jsonl"  # 24 recorded calls of gpt-5.1-codex


def unwrapped(said: str) -> str:
    """What the command said with its lines joined (its reasons wrap to the terminal)."""
    return " ".join(said.split())


def first_calls(tmp_path: Path, calls: int) -> Path:
    """The sample cut after the line of its `calls`-th recorded response."""
    out, ids = [], set()
    for line in CLAUDE_CODE.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "assistant" and r["message"].get("usage"):
            ids.add(r["message"]["id"])
            if len(ids) > calls:
                break
        out.append(line)
    path = tmp_path / f"first-{calls}.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def compaction_agent(tmp_path: Path) -> Path:
    """The sample written as Claude Code writes its compaction side-agent's file."""
    lines = [json.dumps({**json.loads(line), "isSidechain": True, "agentId": "acompact-1f2e3d"})
             for line in CLAUDE_CODE.read_text().splitlines()]
    path = tmp_path / "agent-acompact-1f2e3d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fit_from_too_few_calls_is_shown_but_not_written(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    run = run_ctxpack("calibrate", str(first_calls(tmp_path, 2)), "--write-config",
                      str(config))
    assert run.code == 0, run.err
    assert "claude-opus-4-6 *" in run.out  # the table still shows it, marked
    assert f"not writing claude-opus-4-6: 2 calls, fewer than {LEAST_CALLS}" in run.err
    # nothing to write: said plainly, with why, and no file made (not even an empty one)
    assert run.err.splitlines()[-1] == (
        f"nothing written: no fit can stand as a model's entry (the lines above say why); "
        f"{config} was not created")
    assert "wrote" not in run.err and not config.exists()
    # a config that is there is left as it was, and says so
    config.write_text("# ours\ncompress:\n  budget: 90000\n")
    again = run_ctxpack("calibrate", str(first_calls(tmp_path, 2)), "--write-config",
                        str(config))
    assert again.code == 0, again.err
    assert again.err.splitlines()[-1].endswith(f"{config} is as it was")
    assert config.read_text() == "# ours\ncompress:\n  budget: 90000\n"
    # without --write-config the table's "see below" is kept too: the reason follows it
    shown = run_ctxpack("calibrate", str(first_calls(tmp_path, 2)))
    assert shown.code == 0, shown.err
    assert f"* claude-opus-4-6: 2 calls, fewer than {LEAST_CALLS}" in shown.out


def test_a_compaction_agent_is_fitted_apart_and_not_written(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    agent = compaction_agent(tmp_path)
    run = run_ctxpack("calibrate", str(agent), str(CLAUDE_CODE), "--json",
                      "--write-config", str(config))
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    side = [r for r in rows if r["untrusted"]]
    main = [r for r in rows if not r["untrusted"]]
    assert len(side) == len(main) == 1 and side[0]["files"] == main[0]["files"] == 1
    assert "compaction side-agent" in side[0]["untrusted"]
    # two rows of one model, told apart by name (both were `claude-opus-4-6`, and the
    # line saying the side-agent's is not written named the model that was)
    assert [(r["model"], r["label"]) for r in (main[0], side[0])] == [
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-opus-4-6", "claude-opus-4-6 (compaction)")]
    assert "not writing claude-opus-4-6 (compaction): a compaction side-agent" in run.err
    assert "not writing claude-opus-4-6:" not in run.err
    written = load_config(str(config)).models.calibration("claude-opus-4-6")
    assert written is not None and written.overhead == main[0]["overhead"]
    assert "wrote 1 calibration to" in run.err
    shown = run_ctxpack("calibrate", str(agent), str(CLAUDE_CODE))
    assert shown.code == 0, shown.err
    assert "* claude-opus-4-6 (compaction): a compaction side-agent" in shown.out


def without_models(tmp_path: Path) -> Path:
    """The sample as a file naming no model writes it (as an agent's events may)."""
    lines = []
    for line in CLAUDE_CODE.read_text().splitlines():
        r = json.loads(line)
        if isinstance(r.get("message"), dict):
            r["message"].pop("model", None)
        lines.append(json.dumps(r))
    path = tmp_path / "no-model.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fit_of_a_model_only_assumed_is_shown_apart_and_not_written(tmp_path: Path) -> None:
    # a file naming no model is read as the family its format assumes (`claude`): the fit
    # was written as `claude`, and billed every Claude model without an entry of its own
    config = tmp_path / "config.yaml"
    run = run_ctxpack("calibrate", str(without_models(tmp_path)), str(CLAUDE_CODE),
                      "--json", "--write-config", str(config))
    assert run.code == 0, run.err
    rows = {r["label"]: r for r in json.loads(run.out)}
    assert sorted(rows) == ["claude (assumed)", "claude-opus-4-6"]
    assumed, named = rows["claude (assumed)"], rows["claude-opus-4-6"]
    assert (assumed["model"], assumed["calls"]) == ("claude", named["calls"])
    assert assumed["untrusted"] == "no model named: claude is only what its files are " \
        "assumed to be"
    assert named["untrusted"] == ""
    assert f"not writing claude (assumed): {assumed['untrusted']}" in unwrapped(run.err)
    table = load_config(str(config)).models
    assert table.calibration("claude") == TABLE.calibration("claude")
    written = table.calibration("claude-opus-4-6")
    assert written is not None and written.overhead == named["overhead"]
    # alone, nothing is written
    alone = run_ctxpack("calibrate", str(without_models(tmp_path)), "--write-config",
                        str(tmp_path / "other.yaml"))
    assert alone.code == 0 and "nothing written" in alone.err
    assert not (tmp_path / "other.yaml").exists()


def test_a_fit_of_no_named_model_is_untrusted() -> None:
    t = load(CLAUDE_CODE)
    # (a format that assumes no model where the file names none)
    t = replace(t, format="opencode", model=None,
                calls=tuple(replace(c, model=None) for c in t.calls),
                earlier_calls=tuple(replace(c, model=None) for c in t.earlier_calls))
    (fitted,) = calibrate([t])
    assert fitted.model == "?" and fitted.untrusted == "no model named"
    (real,) = calibrate([load(CLAUDE_CODE)])
    assert real.calls >= LEAST_CALLS and real.untrusted == ""


def test_a_model_name_from_a_file_is_printed_as_it_is_written(tmp_path: Path) -> None:
    odd = "claude-[bold]opus[/bold]"
    path = tmp_path / "odd.jsonl"
    path.write_text(first_calls(tmp_path, 2).read_text().replace('"claude-opus-4-6"',
                                                                 json.dumps(odd)))
    run = run_ctxpack("calibrate", str(path), "--write-config", str(tmp_path / "c.yaml"))
    assert run.code == 0, run.err
    assert f"{odd} *" in run.out  # not read as Rich markup
    assert f"not writing {odd}: 2 calls" in run.err


def test_a_fit_whose_worst_call_held_out_is_past_the_bound_is_not_written() -> None:
    # (a config's `error` is a fraction from 0 to 1, the median: bounded by the worst)
    assert untrusted("gpt-5.1-codex", False, 24, 1.5, 1.048, 5_759) == \
        f"a call held out is off by 150.0%, more than {WORST_ERROR:.0%}"
    assert untrusted("gpt-5.1-codex", False, 24, WORST_ERROR, 1.048, 5_759) == ""


def test_sessions_sending_unlike_overheads_are_not_written_as_one_fit(tmp_path: Path) -> None:
    # the Codex sample, and a session of the same model whose agent sends 20,000 more
    # besides the messages (a larger system prompt, more tools): one overhead pooled over
    # both predicts neither, so the fit is shown, its spread said, and not written
    more = with_more_unlogged(tmp_path, 20_000)
    config = tmp_path / "config.yaml"
    run = run_ctxpack("calibrate", str(CODEX), str(more), "--write-config", str(config),
                      "--json")
    assert run.code == 0, run.err
    (row,) = json.loads(run.out)
    assert row["worst"] > WORST_ERROR and row["untrusted"], row
    low, high = row["overhead_range"]
    assert high - low > 19_000 and low <= row["overhead"] <= high
    assert f"not writing gpt-5.1-codex: a call held out is off by {row['worst']:.1%}, more " \
        f"than {WORST_ERROR:.0%} (its files' own overheads run from {low:,} to {high:,}" \
        in unwrapped(run.err)
    assert "nothing written" in run.err and not config.exists()
    # each session alone is fitted well, and written
    for path in (CODEX, more):
        run = run_ctxpack("calibrate", str(path), "--write-config", str(config), "--json")
        (row,) = json.loads(run.out)
        assert run.code == 0 and row["worst"] <= WORST_ERROR and not row["untrusted"], row
        entry = load_config(str(config)).models.calibration("gpt-5.1-codex")
        assert entry is not None and entry.overhead == row["overhead"]


def with_more_unlogged(tmp_path: Path, tokens: int) -> Path:
    """The Codex sample with `tokens` more in every recorded prompt (more sent unlogged)."""
    lines = []
    for line in CODEX.read_text().splitlines():
        r = json.loads(line)
        info = r["payload"].get("info") if r.get("type") == "event_msg" else None
        for usage in (info or {}).values():
            if isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int):
                usage["input_tokens"] += tokens
        lines.append(json.dumps(r))
    path = tmp_path / "more-unlogged.codex.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fit_a_config_would_refuse_is_shown_but_not_written(tmp_path: Path) -> None:
    # prompts of 1.1M more than the sample's (a model of a 2M window could take them): an
    # overhead beyond the largest window, which the config refuses (and with it every
    # command that reads the config)
    path = with_more_unlogged(tmp_path, 1_100_000)
    (fitted,) = calibrate([load(path)])
    assert fitted.overhead > LARGEST_WINDOW and fitted.calls >= LEAST_CALLS
    assert fitted.untrusted == (f"overhead {fitted.overhead:,} is outside 0 to 399,999 (below "
                                "the 400,000-token window the table gives gpt-5.1-codex), "
                                "the range a config takes")
    config = tmp_path / "config.yaml"
    config.write_text("calibration:\n  - {name: acme-coder, slope: 1.1}\n")
    run = run_ctxpack("calibrate", str(path), "--write-config", str(config))
    assert run.code == 0, run.err
    assert f"not writing gpt-5.1-codex: {fitted.untrusted}" in unwrapped(run.err)
    table = load_config(str(config)).models  # (it still reads, without the fit)
    assert table.calibration("gpt-5.1-codex") == TABLE.calibration("gpt-5.1-codex")


def test_nothing_to_fit_names_every_agent_whose_files_record_usage(tmp_path: Path) -> None:
    from ctxpack.formats import FORMATS

    run = run_ctxpack("calibrate", str(SAMPLES / "support-chat.openai.jsonl"))
    assert run.code == 2 and "nothing to fit" in run.err, run.err
    hint = run.err.splitlines()[-1]
    # the agents whose files record usage, the readers of Aider, mini-swe-agent, OpenHands
    # and managed-agent events among them
    for agent in ("Aider", "Anthropic managed-agent", "Claude Code", "Claude stream-json",
                  "Cline", "Codex", "Gemini CLI", "mini-swe-agent", "OpenCode", "OpenHands"):
        assert agent in hint, (agent, hint)
    # and every reader that gives a sample's calls is one the list names
    for path in sorted(SAMPLES.rglob("*")):
        if path.is_file() and path.suffix in (".jsonl", ".json", ".md") \
                and path.name != "README.md":
            try:
                t = load(str(path))
            except InputError:  # (a piece of a storage tree, read only whole)
                continue
            if any(c.billed > 0 for c in t.calls):
                named = getattr(FORMATS[t.format], "records_usage", "")
                assert named and named in hint, (path, t.format)


def test_a_slope_stats_refuses_is_starred_and_not_written(tmp_path: Path) -> None:
    # usage 0.6 of each prompt's count past what the agent sends: no Claude model's slope
    # (below 1, 50% below the table's). stats bills the file at the table's slope; so does
    # calibrate's row, which says why and writes nothing over the table's value
    from .test_billing import streamed_session

    path = streamed_session(tmp_path / "low.jsonl", slope=0.6)
    table = TABLE.calibration("claude-opus-4-6").slope
    shown = run_ctxpack("calibrate", "--json", str(path))
    assert shown.code == 0, shown.err
    (row,) = json.loads(shown.out)
    assert row["steps"] >= 3 and row["slope"] == table
    assert row["refused"].startswith("0.6") and f"the table's {table:g}" in row["refused"]
    stats = json.loads(run_ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    assert stats["own_slope_refused"] == row["refused"]
    config = tmp_path / "config.yaml"
    config.write_text("# ours\n")
    run = run_ctxpack("calibrate", str(path), "--write-config", str(config))
    assert run.code == 0, run.err
    assert "claude-opus-4-6 *" in run.out and f"{table:g} (table)" in run.out
    assert (f"not writing claude-opus-4-6: the calls read slope {row['refused']}, which no "
            "model of the family can have") in unwrapped(run.err)
    assert config.read_text() == "# ours\n"
    assert load_config(str(config)).models.calibration("claude-opus-4-6").slope == table
