"""`calibrate --write-config` edits a user's config as a careful person would: it makes the
folder a fresh machine lacks, changes only the `calibration:` entries it fitted, keeps
comments and layout, writes through a link, matches names as the model table does, and
writes the file whole or not at all."""

from __future__ import annotations

from pathlib import Path

from ctxpack.config import load_config

from .conftest import SAMPLES
from .helpers import ctxpack as run_ctxpack

CODEX = SAMPLES / "refactor.codex.jsonl"  # 24 recorded calls of gpt-5.1-codex


def test_the_config_folder_is_made_on_a_fresh_machine(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".config" / "ctxpack" / "config.yaml"
    run = run_ctxpack("calibrate", str(CODEX), "--write-config", str(config))
    assert run.code == 0, run.err
    assert "wrote 1 calibration(s)" in run.err
    entry = load_config(str(config)).models.calibration("gpt-5.1-codex")
    assert entry is not None and entry.name == "gpt-5.1-codex"
