"""A number written as text is read alike wherever a stranger gives one: a config file's
figure (YAML leaves `1e3` and quoted values as text), a compress setting from the
environment, and the managed-agent API's list cost (decimal text by design). Each place
takes the same texts as numbers and names the same others as none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack import load
from ctxpack.compression.settings import Options
from ctxpack.config import load_config
from ctxpack.errors import UsageError
from ctxpack.settings import from_env

from .conftest import SAMPLES
from .helpers import ctxpack

NUMBERS = ["2", " 2 ", "2.5", "2e0", "2_000", "0.5"]
NOT_NUMBERS = ["1,234", "$0.05", "nan", "inf", "-inf", "Infinity", "1e400", "two", "", "0x10"]


def config_overhead(tmp_path: Path, text: str) -> str:
    """What the config says of a calibration overhead written as quoted `text` ("": it
    reads it)."""
    path = tmp_path / "c.yaml"
    path.write_text(f"calibration:\n  - {{name: gpt-4o, slope: 1.0, overhead: "
                    f"{json.dumps(text)}}}\n")
    try:
        load_config(str(path))
    except UsageError as exc:
        return str(exc)
    return ""


def setting(text: str) -> str:
    """What the settings say of `llm_timeout` given as `text` in the environment."""
    try:
        from_env({"CTXPACK_LLM_TIMEOUT": text})
    except UsageError as exc:
        return str(exc)
    return ""


def list_cost(tmp_path: Path, text: str) -> int | float | None:
    """The managed-agent sample's list cost as stats gives it, its amount written `text`
    (None: set aside as no cost)."""
    lines = (SAMPLES / "export-timeout.anthropic-events.jsonl").read_text().splitlines()
    at = max(n for n, line in enumerate(lines) if json.loads(line)["type"] == "session.usage")
    record = json.loads(lines[at])
    record["usage"]["list_cost"] = {"amount": text, "currency": "USD"}
    lines[at] = json.dumps(record)
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return load(path).usage.get("list_cost")


@pytest.mark.parametrize("text", NUMBERS)
def test_text_of_a_number_is_read_as_one_in_every_place(tmp_path: Path, text: str) -> None:
    said = config_overhead(tmp_path, text)
    if float(text).is_integer():
        assert said == ""
    else:  # read as the number it is, and refused as no whole number of tokens
        assert said.endswith(f"overhead must be a whole number of tokens, not {float(text)}")
    assert setting(text) == ""
    # a number, as every cost is (it was the text "2.5 USD"), of cents given in dollars
    assert list_cost(tmp_path, text) == pytest.approx(float(text) / 100)


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_text_of_no_number_is_named_in_every_place(tmp_path: Path, text: str) -> None:
    said = config_overhead(tmp_path, text)
    assert "overhead must be a number from 0 to 127,999 (tokens" in said
    assert said.endswith(f"not {text!r}")
    # (an infinity was taken for a timeout, and NaN named as out of range)
    assert setting(text) == f"CTXPACK_LLM_TIMEOUT: llm_timeout must be float, not {text!r}"
    assert list_cost(tmp_path, text) is None


def test_a_negative_number_is_a_number_out_of_range_in_every_place(tmp_path: Path) -> None:
    assert "overhead -2 is outside 0 to 127,999" in config_overhead(tmp_path, "-2")
    assert setting("-2") == "CTXPACK_LLM_TIMEOUT: llm_timeout must be a positive number, not -2.0"
    assert list_cost(tmp_path, "-2") is None


def test_a_setting_of_no_number_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    run = ctxpack("compress", str(SAMPLES / "support-chat.openai.jsonl"), "-o",
                  str(tmp_path / "out.jsonl"), env={"CTXPACK_LLM_TIMEOUT": "inf"})
    assert run.code == 2 and run.err.strip().splitlines() == [
        "error: CTXPACK_LLM_TIMEOUT: llm_timeout must be float, not 'inf'"], run.err
    assert not (tmp_path / "out.jsonl").exists()


HUGE = "9" * 400  # a whole number no float holds: float() of it is an infinity


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_a_float_setting_past_what_a_float_holds_is_named_by_its_digits(tmp_path: Path,
                                                                        how: str) -> None:
    # the flag read it as a float ("not inf"), the variable printed its 400 figures
    flag, env = (["--threshold", HUGE], {}) if how == "flag" else ([], {"CTXPACK_THRESHOLD": HUGE})
    out = tmp_path / "out.jsonl"
    run = ctxpack("compress", str(SAMPLES / "support-chat.openai.jsonl"), *flag, "-o", str(out),
                  env=env)
    where = "--threshold" if how == "flag" else "CTXPACK_THRESHOLD"
    assert run.code == 2 and run.err.strip().splitlines() == [
        f"error: {where}: threshold must be float, not a 400-digit number"], run.err
    assert not out.exists()


@pytest.mark.parametrize("how", ["flag", "variable", "config"])
@pytest.mark.parametrize("name", ["target", "budget"])
def test_a_whole_number_setting_too_long_to_read_is_named_by_its_digits(
        tmp_path: Path, how: str, name: str) -> None:
    # it was taken, and compress printed its 400 figures ("down to 9,999,...")
    out = tmp_path / "out.jsonl"
    config = tmp_path / "c.yaml"
    config.write_text(f"compress:\n  {name}: {HUGE}\n")
    given = {"flag": ([f"--{name}", HUGE], {}),
             "variable": ([], {f"CTXPACK_{name.upper()}": HUGE}),
             "config": (["--config", str(config)], {})}
    flags, env = given[how]
    run = ctxpack("compress", str(SAMPLES / "support-chat.openai.jsonl"), *flags, "-o",
                  str(out), env=env)
    where = {"flag": f"--{name}", "variable": f"CTXPACK_{name.upper()}",
             "config": f"{config}: compress"}[how]
    assert run.code == 2 and run.err.strip().splitlines() == [
        f"error: {where}: {name} must be int of at most 21 digits, not a 400-digit "
        "number"], run.err
    assert not out.exists()


def test_a_whole_number_setting_is_held_to_21_digits_however_it_is_made() -> None:
    # Options made in code too: the library's report printed the figures in full
    assert Options(target=10**21 - 1).target == 10**21 - 1
    for value, said in ((10**21, "a 22-digit number"), (-(10**400), "a negative 401-digit "
                                                                      "number")):
        with pytest.raises(UsageError, match=f"^budget must be int of at most 21 digits, "
                                             f"not {said}$"):
            Options(budget=value)


def test_a_float_flag_is_read_as_the_settings_read_it(tmp_path: Path) -> None:
    # one reading for the flag, the variable and the config: text Python reads as a
    # number is one (`1e-1`, `0.5`), other text is named as given, a range as its rule says
    out = tmp_path / "out.jsonl"
    sample = str(SAMPLES / "support-chat.openai.jsonl")
    assert ctxpack("compress", sample, "--threshold", "5e-1", "-o", str(out)).code == 0
    run = ctxpack("compress", sample, "--threshold", "high", "-o", str(tmp_path / "b.jsonl"))
    assert run.code == 2 and run.err.strip().splitlines() == [
        "error: --threshold: threshold must be float, not 'high'"], run.err
    run = ctxpack("compress", sample, "--threshold", "1_5", "-o", str(tmp_path / "c.jsonl"))
    assert run.code == 2 and "threshold must be above 0 and at most 1, not 15.0" in run.err
