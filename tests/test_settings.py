"""ctxpack/settings.py, the settings table: reading values by name, from the environment,
and what each setting says of itself (compression/settings.py makes Options of it: its
tests are in tests/compression/test_settings.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack.errors import UsageError
from ctxpack.settings import SECRET_LIKE, SETTINGS, check, from_env, misspelt, read


def test_settings_by_name_are_read_as_their_types() -> None:
    assert read({"keep_steps": "4", "mask": "off", "threshold": "0.5", "budget": "90_000"},
                "here") == {"keep_steps": 4, "mask": False, "threshold": 0.5, "budget": 90000}


_WORDS = st.text(st.sampled_from("abAB .(*"), min_size=1, max_size=4)


@given(st.lists(_WORDS, min_size=1, max_size=4), st.booleans(), _WORDS.map(lambda w: w * 2))
def test_a_list_of_pins_matches_what_any_of_its_regexes_matches(words: list[str], flag: bool,
                                                                text: str) -> None:
    # a list (the config file's) is one regex; flags an item opens with stay its own
    items = [("(?i)" if flag and n == 0 else "") + re.escape(w) for n, w in enumerate(words)]
    joined = read({"pin": items}, "here")["pin"]
    assert bool(re.search(joined, text)) == any(re.search(x, text) for x in items)


def test_a_pin_list_item_that_is_no_regex_is_named() -> None:
    with pytest.raises(UsageError, match=r"here: pin item 2 must be a Python regex"):
        read({"pin": ["ok", "(unclosed"]}, "here")
    assert read({"pin": []}, "here") == {"pin": None}


def test_every_unknown_name_is_told_at_once() -> None:
    with pytest.raises(UsageError, match=r"here: unknown setting\(s\): 1, colour, keep_step"):
        read({"keep_step": 3, "colour": "red", 1: 2, "mask": True}, "here")


def test_a_secret_value_is_never_echoed() -> None:
    assert SECRET_LIKE == {"llm_base_url", "llm_api_key_env"}
    problems = check({"llm_api_key_env": "sk-not-a-variable-name", "llm_base_url": "sk-123"})
    assert len(problems) == 2 and not any("sk-" in p for p in problems)


@pytest.mark.parametrize("setting", SETTINGS.values(), ids=list(SETTINGS))
def test_each_setting_is_whole(setting) -> None:
    assert setting.kind in (bool, int, float, str)
    switch = setting.kind is bool
    assert (setting.metavar is None) == switch, "a switch takes no value; others name theirs"
    assert setting.help.endswith(".") and setting.variable == f"CTXPACK_{setting.name.upper()}"
    if setting.default is not None:
        assert isinstance(setting.default, setting.kind)
        assert check({setting.name: setting.default}) == []


@pytest.mark.parametrize("setting", SETTINGS.values(), ids=list(SETTINGS))
def test_each_help_states_the_default(setting) -> None:
    """The help text is written by hand: it must not drift from the default."""
    default = setting.default
    if default is None:
        return  # worked out when compress runs; the help says how
    if setting.kind is bool and "/" not in setting.flags:
        return  # --no-archive: the flag only turns it off
    if setting.kind is bool:
        shown = "(on)" if default else "(off)"
    elif setting.kind is str:
        shown = default
    else:
        shown = f"({default:g}"
    assert shown in setting.help, f"{setting.flags}: {setting.help!r} does not say {shown}"


def test_known_variables_are_read_and_a_bad_value_names_its_variable() -> None:
    assert from_env({"CTXPACK_BUDGET": "9000", "CTXPACK_MASK": "no", "HOME": "/"}) == \
        {"budget": 9000, "mask": False}
    with pytest.raises(UsageError, match="^CTXPACK_THRESHOLD: threshold must be above 0"):
        from_env({"CTXPACK_THRESHOLD": "2"})


@pytest.mark.parametrize("variable, meant", [
    ("CTXPACK_BUDGT", "CTXPACK_BUDGET"), ("CTXPACK_budget", "CTXPACK_BUDGET"),
    ("CTXPACK_MASC", "CTXPACK_MASK"), ("CTXPACK_KEEP_STEP", "CTXPACK_KEEP_STEPS"),
    ("CTXPACK_CONFG", "CTXPACK_CONFIG"),
])
def test_a_variable_like_a_known_one_is_taken_for_a_slip(variable: str, meant: str) -> None:
    assert misspelt({variable: "1"}) == [
        f"{variable} is not a ctxpack setting; did you mean {meant}?"]


@pytest.mark.parametrize("variable", ["CTXPACK_SHARED", "CTXPACK_TEST", "CTXPACK_DATA",
                                      "CTXPACK_HOME", "CTXPACK_BUDGET", "CTXPACK_CONFIG",
                                      "CTXPACK_WORKERS", "BUDGT"])
def test_other_variables_pass_without_a_word(variable: str) -> None:
    assert misspelt({variable: "1"}) == []
    assert from_env({variable: "1"}) == ({"budget": 1} if variable == "CTXPACK_BUDGET" else {})
