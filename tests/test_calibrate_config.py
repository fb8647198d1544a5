"""`calibrate --write-config` edits a user's config as a careful person would: it makes the
folder a fresh machine lacks, changes only the `calibration:` entries it fitted, keeps
comments and layout, writes through a link, matches names as the model table does, and
writes the file whole or not at all."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ctxpack.calibration import Fitted, calibrate, slope_of
from ctxpack.config import add_calibrations, load_config
from ctxpack.errors import UsageError
from ctxpack.loader import load

from .conftest import SAMPLES, corpus_params
from .helpers import ctxpack as run_ctxpack

CODEX = SAMPLES / "refactor.codex.jsonl"  # 24 recorded calls of gpt-5.1-codex


def test_the_config_folder_is_made_on_a_fresh_machine(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".config" / "ctxpack" / "config.yaml"
    run = run_ctxpack("calibrate", str(CODEX), "--write-config", str(config))
    assert run.code == 0, run.err
    assert "wrote 1 calibration to" in run.err
    entry = load_config(str(config)).models.calibration("gpt-5.1-codex")
    assert entry is not None and entry.name == "gpt-5.1-codex"


def test_a_folder_that_cannot_be_made_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("a file, not a folder")
    config = tmp_path / "home" / ".config" / "config.yaml"
    run = run_ctxpack("calibrate", str(CODEX), "--write-config", str(config))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert f"cannot make its folder: {tmp_path / 'home'} is a file" in run.err, run.err
    assert (tmp_path / "home").read_text() == "a file, not a folder"


def fitted(model: str, slope: float = 1.011, overhead: int = 6307,
           error: float = 0.001) -> Fitted:
    return Fitted(model, 1, 24, 10, slope, overhead, error, error)


TEAM = """\
# my team config
models:
  - {name: acme-coder, context_window: 100000}   # ours
calibration:
  - name: GPT-5.4   # measured in March
    slope: 1.02
  # the coder we host
  - {name: acme-coder, slope: 1.1}
compress:
  budget: 90000  # keep
"""


def test_only_the_fitted_entries_change_and_the_rest_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(TEAM)
    add_calibrations(str(config), [fitted("gpt-5.4"), fitted("gpt-5.6-sol", 1.13, 7000)])
    text = config.read_text()
    kept = [line for line in TEAM.splitlines() if "GPT-5.4" not in line and "1.02" not in line]
    assert all(line in text.splitlines() for line in kept), text
    assert "  - {name: gpt-5.6-sol, slope: 1.13, overhead: 7000, error: 0.001}" in text
    data = yaml.safe_load(text)
    assert [e["name"].lower() for e in data["calibration"]] == \
        ["gpt-5.4", "acme-coder", "gpt-5.6-sol"]
    table = load_config(str(config)).models
    assert slope_of("gpt-5.4", table) == 1.011 and slope_of("gpt-5.6-sol", table) == 1.13
    assert slope_of("acme-coder", table) == 1.1 and data["compress"] == {"budget": 90000}


@pytest.mark.parametrize("written, existing", [
    ("gpt-5.4", "GPT-5.4"), ("gpt-5.4", "openai/gpt-5.4"), ("openai/GPT-5.4", "gpt-5.4")])
def test_an_entry_is_replaced_under_any_name_the_table_takes_for_it(
        tmp_path: Path, written: str, existing: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"calibration:\n  - {{name: {existing}, slope: 1.02}}\n")
    add_calibrations(str(config), [fitted(written)])
    (entry,) = yaml.safe_load(config.read_text())["calibration"]
    assert entry["slope"] == 1.011
    assert slope_of("gpt-5.4-2026", load_config(str(config)).models) == 1.011


@pytest.mark.parametrize("text", [
    "", "# nothing yet\n", "---\n# nothing yet\n", "compress:\r\n  budget: 90000\r\n",
    "compress:\n  budget: 90000  # no newline at the end",
    "compress:\n  budget: 90000  # keep\n", "calibration:\n",
    "calibration: []  # none yet\n", "calibration: [{name: acme-coder, slope: 1.1}]\n",
    "compress: {budget: 90000}\ncalibration:\n- {name: acme-coder, slope: 1.1}\n",
])
def test_every_shape_of_config_gets_the_entry(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    add_calibrations(str(config), [fitted("gpt-5.4")])
    after = config.read_text()
    assert all(line in after.splitlines() for line in text.splitlines()
               if "calibration" not in line)
    raw = config.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n") if "\r\n" in text else b"\r" not in raw
    table = load_config(str(config)).models
    assert slope_of("gpt-5.4", table) == 1.011
    if "acme" in text:
        assert slope_of("acme-coder", table) == 1.1


def test_a_config_it_cannot_edit_safely_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    text = "{compress: {budget: 90000}, calibration: []}\n"  # one flow mapping
    config.write_text(text)
    with pytest.raises(UsageError) as info:
        add_calibrations(str(config), [fitted("gpt-5.4")])
    assert str(config) in str(info.value) and "edit" in str(info.value)
    assert config.read_text() == text


def test_a_linked_config_is_written_through_to_its_target(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "ctxpack.yaml"
    real.write_text(TEAM)
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    add_calibrations(str(link), [fitted("gpt-5.4")])
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert slope_of("gpt-5.4", load_config(str(real)).models) == 1.011
    assert sorted(p.name for p in dotfiles.iterdir()) == ["ctxpack.yaml"]


def test_a_failed_write_leaves_the_config_whole(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(TEAM)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(UsageError) as info:
        add_calibrations(str(config), [fitted("gpt-5.4")])
    assert "No space left" in str(info.value)
    assert config.read_text() == TEAM and [p.name for p in tmp_path.iterdir()] == ["config.yaml"]


def switched(tmp_path: Path, after: int = 12) -> Path:
    """The Codex sample with its model switched to gpt-5.4 from its `after`-th turn on."""
    lines, turns = [], 0
    for line in CODEX.read_text().splitlines():
        if '"type":"turn_context"' in line:
            turns += 1
            if turns > after:
                line = line.replace('"model":"gpt-5.1-codex"', '"model":"gpt-5.4"')
        lines.append(line)
    path = tmp_path / "switched.codex.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def models_of_calls(path: Path) -> dict[str, int]:
    """How many of the calls `calibrate` fits each model made, as the file records them."""
    return dict(Counter(c.model for c in load(path).calls if c.billed > 0 and c.prompt > 0))


def test_each_call_is_fitted_under_the_model_that_made_it(tmp_path: Path) -> None:
    path = switched(tmp_path)
    made = models_of_calls(path)
    assert set(made) == {"gpt-5.1-codex", "gpt-5.4"}  # (the sample switches models)
    fits = {f.model: f for f in calibrate([load(path)])}
    assert {m: f.calls for m, f in fits.items()} == made
    alone = {f.model: f for f in calibrate([load(CODEX)])}["gpt-5.1-codex"]
    # the calls before the switch read as the whole file's first calls do
    assert fits["gpt-5.1-codex"].overhead == pytest.approx(alone.overhead, rel=0.05)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("codex", pattern="edgerunner*.jsonl"))
def test_a_corpus_session_that_switches_models_is_fitted_per_model(path: Path) -> None:
    made = models_of_calls(path)
    assert len(made) > 1  # (edgerunner: gpt-5.6-sol, then a few calls of gpt-5.6-luna)
    assert {f.model: f.calls for f in calibrate([load(path)])} == made


@pytest.mark.parametrize("slope, shown", [(1.005, "1.005"), (1.21, "1.21"), (1.0025, "1.0025")])
def test_stats_shows_a_configured_slope_as_written(tmp_path: Path, slope: float,
                                                   shown: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"calibration:\n  - {{name: claude-opus-4-6, slope: {slope}}}\n")
    run = run_ctxpack("stats", str(SAMPLES / "multi-round.anthropic.jsonl"), "-m",
                      "claude-opus-4-6", "--config", str(config))
    assert run.code == 0, run.err
    assert f"calibrated: {shown} × the count" in run.out


def test_a_folder_gives_calibrate_its_json_tasks_too(tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    shutil.copytree(SAMPLES / "cline-task", folder / "task-1")
    shutil.copy(SAMPLES / "support-chat.openai.jsonl", folder)  # records no usage
    run = run_ctxpack("calibrate", str(folder), "--json")
    assert run.code == 0, run.err
    (row,) = json.loads(run.out)
    # one task once: its ui_messages.json is where the history beside it reads its usage
    assert row["model"].startswith("claude-sonnet-4-5") and row["files"] == 1
    assert row["calls"] == len(load(SAMPLES / "cline-task" / "api_conversation_history.json")
                               .calls)
    (said,) = [line for line in run.err.splitlines() if "support-chat" in line]
    assert "records no call's own usage" in said and "skipped" in said


def test_names_the_table_takes_for_one_model_are_fitted_as_one(tmp_path: Path) -> None:
    other = tmp_path / "other.codex.jsonl"
    other.write_text(CODEX.read_text().replace('"model":"gpt-5.1-codex"',
                                               '"model":"openai/GPT-5.1-Codex"'))
    (fit,) = calibrate([load(CODEX), load(other)])
    assert fit.model == "gpt-5.1-codex" and fit.files == 2
    assert fit.calls == 2 * sum(models_of_calls(CODEX).values())


def test_a_config_naming_an_unknown_encoding_is_refused_and_left_as_it_was(
        tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    text = "models:\n  - {name: acme-coder, encoding: o300k, context_window: 100000}\n"
    config.write_text(text)
    run = run_ctxpack("calibrate", str(CODEX), "--write-config", str(config))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert f"{config}: models[0]: encoding 'o300k' is not one tiktoken has" in run.err
    assert config.read_text() == text


def test_a_block_entry_is_edited_in_place_and_keeps_its_comments(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(TEAM)
    add_calibrations(str(config), [fitted("gpt-5.4")])
    text = config.read_text()
    # every line but the changed figure's is kept, the comment beside the name too
    assert [line for line in TEAM.splitlines() if "1.02" not in line] == \
        [line for line in text.splitlines()
         if "1.011" not in line and "overhead" not in line and "error" not in line], text
    assert "  - name: GPT-5.4   # measured in March\n    slope: 1.011\n" in text
    assert yaml.safe_load(text)["calibration"][0] == \
        {"name": "GPT-5.4", "slope": 1.011, "overhead": 6307, "error": 0.001}
    # a key the new figures lack goes with its line; the comments of the others stay
    config.write_text("calibration:\n  - name: gpt-5.4  # ours\n    slope: 1.0  # guessed\n"
                      "    note: x\n")
    with pytest.raises(UsageError, match="does not load"):  # (`note` is no such key)
        add_calibrations(str(config), [fitted("gpt-5.4")])
    config.write_text("calibration:\n  - name: gpt-5.4  # ours\n    slope: 1.0  # guessed\n"
                      "    error: 0.2  # old\n")
    add_calibrations(str(config), [Fitted("gpt-5.4", 1, 24, 10, 1.011, 6307, None, None)])
    assert config.read_text() == ("calibration:\n  - name: gpt-5.4  # ours\n"
                                  "    slope: 1.011  # guessed\n    overhead: 6307\n")


@pytest.mark.parametrize("text", [
    # an unknown key (ctxpack refuses the config), there to anchor a merge key
    "base: &b {slope: 1.0, overhead: 10}\ncalibration:\n  - <<: *b\n    name: gpt-5.4\n",
    "calibration:\n  - {name: gpt-5.4, slope: '1.2', overhead: -100}\n",
    "models: [{name: gpt-5.4, context_window: 0}]\n",
])
def test_a_config_ctxpack_does_not_load_is_not_edited(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    run = run_ctxpack("calibrate", str(CODEX), "--write-config", str(config))
    # refused in one line before any fitting, the file as it was
    assert run.code == 2 and run.out == "", run.out + run.err
    (line,) = run.err.strip().splitlines()
    assert line.startswith(f"error: {config}") and "does not load this config" in line, line
    assert config.read_text() == text


def test_an_entry_whose_values_come_from_a_merge_key_is_not_edited(tmp_path: Path) -> None:
    # a config ctxpack loads, whose entry takes its figures from another's: editing one
    # would change the other, so it is refused and left as it was
    config = tmp_path / "config.yaml"
    text = ("calibration:\n  - &same {name: gpt-4o, slope: 1.0}\n  - <<: *same\n"
            "    name: gpt-5.4\n")
    config.write_text(text)
    assert slope_of("gpt-5.4", load_config(str(config)).models) == 1.0
    for model in ("gpt-5.4", "gpt-4o"):
        with pytest.raises(UsageError, match="cannot edit"):
            add_calibrations(str(config), [fitted(model)])
        assert config.read_text() == text


def test_an_edit_that_would_not_load_is_not_written(tmp_path: Path) -> None:
    # the config's own window for the model is smaller than the fitted overhead: the
    # edited file would be refused, so it is not written
    config = tmp_path / "config.yaml"
    text = "models:\n  - {name: acme-coder, context_window: 5000}  # ours\n"
    config.write_text(text)
    with pytest.raises(UsageError, match="would not load") as info:
        add_calibrations(str(config), [fitted("acme-coder", overhead=6307)])
    assert "calibration[0]: overhead 6,307 is outside 0 to 4,999" in str(info.value)
    assert config.read_text() == text
    load_config(str(config))
