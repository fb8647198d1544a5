"""Configuration: the example file is valid, lookup order holds, bad keys are named."""

from __future__ import annotations

import re

import pytest

from ctxpack.config import load_config
from ctxpack.errors import UsageError

from .conftest import ROOT


def test_the_example_config_loads_and_adds_its_model():
    cfg = load_config(str(ROOT / "config.example.yaml"))
    info = cfg.models.find("acme-coder-2026-01")
    assert info is not None and info.context_window == 131072 and not info.exact


def test_lookup_order_env_then_cwd(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXPACK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert load_config().source is None
    (tmp_path / "ctxpack.yaml").write_text("models: []\n")
    assert load_config().source == "ctxpack.yaml"
    other = tmp_path / "other.yaml"
    other.write_text("models: []\n")
    monkeypatch.setenv("CTXPACK_CONFIG", str(other))
    assert load_config().source == str(other)


@pytest.mark.parametrize("text, fragment", [
    ("colour: red\nmodles: []\n", "colour, modles"),
    ("models: {a: 1}\n", "must be a list"),
    ("models:\n  - {name: x}\n", "needs 'context_window'"),
    ("models:\n  - {name: x, context_window: big}\n", "must be a number"),
    ("models:\n  - {name: x, context_window: 5, colour: red}\n", "unknown key(s): colour"),
    ("- just\n- a list\n", "must be a mapping"),
    ("models: [\n", "not valid YAML"),
])
def test_bad_config_is_a_usage_error_naming_the_problem(tmp_path, text, fragment):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(UsageError) as info:
        load_config(str(path))
    assert fragment in str(info.value)


def test_missing_explicit_config(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        load_config(str(tmp_path / "nope.yaml"))


def test_the_example_config_lists_every_setting_with_its_default():
    from ctxpack.compression.settings import Options, resolve
    from ctxpack.settings import SETTINGS

    section = (ROOT / "config.example.yaml").read_text().split("\ncompress:\n", 1)[1]
    # a key at the section's indent, set or (as an example) commented out
    keys = re.findall(r"^  (# )?(\w+):", section, flags=re.M)
    names = [name for _, name in keys]
    assert sorted(names) == sorted(SETTINGS), "config.example.yaml lists each setting once"
    for commented, name in keys:  # a setting off by default can only be shown as an example
        assert bool(commented) == (SETTINGS[name].default is None), name
    cfg = load_config(str(ROOT / "config.example.yaml"))
    assert resolve(cfg.compress) == Options()  # the values it sets are the defaults
