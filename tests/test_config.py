"""Configuration: the example file is valid, lookup order holds, bad keys are named."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ctxpack.config import load_config
from ctxpack.errors import UsageError

from .conftest import ROOT, SAMPLES
from .helpers import assert_clean_error, ctxpack


def test_the_example_config_loads_and_adds_its_model():
    cfg = load_config(str(ROOT / "config.example.yaml"))
    info = cfg.models.find("acme-coder-2026-01")
    assert info is not None and info.context_window == 131072 and not info.exact


def test_a_config_model_is_found_as_a_table_model_is(tmp_path):
    # a lookup ignores case and a provider's prefix: so does a name the config gives
    config = tmp_path / "ctxpack.yaml"
    config.write_text("models:\n  - {name: Acme-Coder, encoding: o200k_base, "
                      "context_window: 64000}\n  - {name: openai/acme-tiny, "
                      "encoding: o200k_base, context_window: 8000}\n")
    models = load_config(str(config)).models
    for asked, window in (("acme-coder", 64_000), ("ACME-CODER-2026-01", 64_000),
                          ("acme-tiny", 8_000), ("openai/acme-tiny", 8_000)):
        info = models.find(asked)
        assert info is not None and info.context_window == window, asked


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
    ("models:\n  - {name: x}\n", "needs 'context_window' (the built-in table does not know"),
    ("models:\n  - {context_window: 5}\n", "models[0] needs a 'name'"),
    ("models:\n  - {name: 5, context_window: 5}\n", "name must be a model's id, as text"),
    ("models:\n  - {name: x, context_window: 0}\n", "whole and above 0, not 0"),
    ("models:\n  - {name: gpt-4o, context_window: 1.5}\n", "whole and above 0, not 1.5"),
    ("models:\n  - {name: claude-opus-4-6, exact: 'no'}\n", "exact must be true or false"),
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


@pytest.mark.parametrize("text, where, fragment", [
    # an unclosed list: where the reader gave up, and the line the list began on
    ("compress:\n  keep_steps: 2\ncalibration: [1, 2\n", 4,
     "expected ',' or ']', but got '<stream end>' (while parsing a flow sequence begun on "
     "line 3)"),
    ("compress:\n  keep_steps: 2\n    budget: 5\n", 3, "mapping values are not allowed here"),
    ("compress: {}\nmodels: \xff\n", 2, "not UTF-8 text (byte 0xff)"),
])
def test_a_config_that_is_not_yaml_is_named_at_its_line(tmp_path, text, where, fragment):
    config = tmp_path / "c.yaml"
    config.write_bytes(text.encode("latin-1"))
    assert_clean_error(ctxpack("models", "--config", str(config)), 2,
                       f"{config}:{where}: ", fragment)
    before = config.read_bytes()
    run = ctxpack("calibrate", str(SAMPLES / "coding-agent.claude-code.jsonl"),
                  "--write-config", str(config))
    assert_clean_error(run, 2, f"{config}:{where}: ", fragment)
    assert config.read_bytes() == before


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


RISKY = ("compress:\n  strategy: llm\n  llm_model: gpt-4o\n  redact: false\n"
         "  archive: false\n  archive_dir: {outside}\n  keep_steps: 3\n")


def test_a_ctxpack_yaml_found_here_cannot_send_data_out_or_weaken_protection(
        tmp_path, monkeypatch):
    monkeypatch.delenv("CTXPACK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    (repo / "ctxpack.yaml").write_text(RISKY.format(outside=tmp_path / "elsewhere"))
    cfg = load_config()
    assert cfg.compress == {"keep_steps": 3}  # what is harmless still applies
    (warning,) = cfg.warnings
    assert "ignored strategy, llm_model, redact, archive, archive_dir" in warning
    # the same file named on purpose is the user's own choice
    named = load_config("ctxpack.yaml")
    assert named.compress["strategy"] == "llm" and named.compress["redact"] is False
    assert named.warnings == []


@pytest.mark.parametrize("folder, kept", [
    ("archive", True), ("./a/b", True), ("../elsewhere", False), ("/", False),
    ("link", False),  # a link inside the tree to a folder outside it
])
def test_a_ctxpack_yaml_found_here_may_archive_inside_the_tree_only(
        tmp_path, monkeypatch, folder, kept):
    monkeypatch.delenv("CTXPACK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "link").symlink_to(tmp_path)
    monkeypatch.chdir(repo)
    (repo / "ctxpack.yaml").write_text(f"compress:\n  archive_dir: {folder}\n")
    cfg = load_config()
    assert ("archive_dir" in cfg.compress) is kept
    assert bool(cfg.warnings) is not kept


def test_harmless_values_of_guarded_settings_are_taken(tmp_path, monkeypatch):
    """Only the values that send data out or weaken protection are ignored."""
    monkeypatch.delenv("CTXPACK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxpack.yaml").write_text(
        "compress:\n  strategy: structured\n  redact: true\n  archive: true\n")
    cfg = load_config()
    assert cfg.compress == {"strategy": "structured", "redact": True, "archive": True}
    assert cfg.warnings == []


def _stats(*args: str) -> Any:
    """stats of a Claude sample: its console text, or with --json its file's object."""
    run = ctxpack("stats", str(SAMPLES / "multi-round.anthropic.jsonl"), *args)
    assert run.code == 0, run.err
    return run.out if "--json" not in args else json.loads(run.out)["files"][0]


@pytest.mark.parametrize("entry", ["{name: claude-opus-4-6, context_window: 1000000}",
                                   "{name: CLAUDE-opus-4-6, context_window: 1_000_000}"])
def test_a_config_entry_for_a_known_model_changes_only_the_keys_it_sets(tmp_path, entry):
    # giving a Claude model a larger window leaves it what the table makes it: counted
    # with cl100k_base as an approximation, and billed at its calibration
    config = tmp_path / "c.yaml"
    config.write_text(f"models:\n  - {entry}\n")
    plain = _stats("--model", "claude-opus-4-6", "--json")
    mine = _stats("--model", "claude-opus-4-6", "--json", "--config", str(config))
    assert mine["context_window"] == 1_000_000 != plain["context_window"]
    assert (mine["encoding"], mine["exact"], mine["note"]) \
        == (plain["encoding"], plain["exact"], plain["note"])
    assert plain["encoding"] == "cl100k_base" and not plain["exact"] and plain["note"]
    assert mine["context"]["slope"] == plain["context"]["slope"] != 1
    assert mine["context"]["tokens"] == plain["context"]["tokens"]
    header = _stats("--model", "claude-opus-4-6", "--config", str(config))
    assert "(cl100k_base, approximate:" in header and "exact)" not in header


def test_a_config_entry_may_still_set_each_key_of_a_known_model(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("models:\n  - {name: claude-opus-4-6, exact: true}\n"
                      "  - {name: claude-opus-4-5, encoding: o200k_base}\n")
    exact = _stats("--model", "claude-opus-4-6", "--json", "--config", str(config))
    assert exact["exact"] and exact["encoding"] == "cl100k_base"
    assert exact["context_window"] == 200_000  # the table's, kept
    other = _stats("--model", "claude-opus-4-5", "--json", "--config", str(config))
    assert other["encoding"] == "o200k_base" and not other["exact"]
    # the table's note names the encoding it no longer counts with
    assert other["note"] == "counted with o200k_base as an approximation"
    assert other["tokens"] != exact["tokens"]


def test_a_config_entry_for_an_unknown_model_without_its_window_is_refused(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("models:\n  - {name: acme-coder, exact: false}\n")
    assert_clean_error(ctxpack("stats", str(SAMPLES / "multi-round.anthropic.jsonl"),
                               "--config", str(config)), 2,
                       f"{config}: models[0] needs 'context_window'", "'acme-coder'")


def test_an_encoding_tiktoken_does_not_have_is_named_before_anything_is_counted(tmp_path):
    # the check asks tiktoken's registry, not its files: it holds with none to hand and no
    # network, and a known encoding (models[0]) passes it there
    config = tmp_path / "c.yaml"
    config.write_text("models:\n  - {name: acme-a, encoding: cl100k_base, context_window: 8000}"
                      "\n  - {name: acme-b, encoding: o300k, context_window: 8000}\n")
    offline = {"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"),
               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    for command in ("stats", "compress"):
        assert_clean_error(ctxpack(command, str(SAMPLES / "multi-round.anthropic.jsonl"),
                                   "--model", "acme-a", "--config", str(config), env=offline),
                           2, f"{config}: models[1]: encoding 'o300k'", "o200k_base",
                           "cl100k_base")


@pytest.mark.parametrize("value, kind", [("5", "a number"), ("[o200k_base]", "an array"),
                                         ("{a: 1}", "an object"), ("null", "null")])
def test_an_encoding_that_is_no_name_is_named_by_its_kind(tmp_path, value, kind):
    config = tmp_path / "c.yaml"
    config.write_text(f"models:\n  - {{name: acme-a, encoding: {value}, context_window: 8000}}\n")
    run = ctxpack("stats", str(SAMPLES / "multi-round.anthropic.jsonl"), "--config", str(config))
    assert_clean_error(run, 2, f"{config}: models[0]: encoding must be the name of one "
                       "tiktoken has", f"not {kind}")
    assert "'5'" not in run.err and "['o200k_base']" not in run.err


HUGE = str(10**400)  # a whole number YAML reads as an int no float holds


@pytest.mark.parametrize("text, fragment", [
    (f"calibration:\n  - {{name: gpt-4o, slope: 1.0, overhead: {HUGE}}}\n",
     "calibration[0]: overhead a 401-digit number is outside 0 to 127,999"),
    (f"calibration:\n  - {{name: gpt-4o, slope: {HUGE}}}\n",
     "calibration[0]: slope a 401-digit number is outside 0.25 to 4"),
    (f"models:\n  - {{name: acme, encoding: cl100k_base, context_window: {HUGE}}}\n",
     "models[0]: context_window must be a number of tokens, whole and above 0"),
    (f"compress:\n  threshold: {HUGE}\n",
     "compress: threshold must be float, not a 401-digit number"),
], ids=["overhead", "slope", "window", "threshold"])
def test_a_number_past_what_a_float_holds_is_named_as_out_of_range(tmp_path, text, fragment):
    # a stranger's config of huge whole numbers: one line, exit 2, where float() of them
    # raised OverflowError ("internal error")
    config = tmp_path / "c.yaml"
    config.write_text(text)
    run = ctxpack("compress", str(SAMPLES / "support-chat.openai.jsonl"), "-m", "gpt-4o",
                  "--config", str(config), "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, f"{config}: {fragment}")
    assert not (tmp_path / "out.jsonl").exists()
