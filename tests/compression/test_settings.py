"""compression/settings.py: `Options`, the settings of one compress as the pipeline reads
them, made from the settings table (the truncation limits gathered into one `Limits`),
checked whenever one is made, and resolved from settings layers."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from ctxpack.compression.cutting import Limits
from ctxpack.compression.settings import Options, from_keywords, resolve, settings_of
from ctxpack.errors import UsageError
from ctxpack.settings import SETTINGS


def test_options_are_the_tables_defaults() -> None:
    assert settings_of(Options()) == {s.name: s.default for s in SETTINGS.values()}
    assert Options().limits == Limits()  # truncate's own defaults say the same
    assert resolve() == Options()


def test_options_are_made_as_the_package_makes_them() -> None:
    options = Options(budget=3000)
    assert options.budget == 3000 and options.keep_steps == 2
    assert replace(options, archive=False).archive is False
    assert pickle.loads(pickle.dumps(options)) == options  # as worker processes get it
    assert Options(limits=Limits(max_lines=100)).limits.max_lines == 100
    with pytest.raises(AttributeError):
        options.budget = 1  # type: ignore[misc]


@pytest.mark.parametrize("made, fragment", [
    (lambda: Options(keep_steps=-1), "keep_steps must be 0 or more, not -1"),
    (lambda: Options(budget="lots"), "budget must be a positive number, not 'lots'"),
    (lambda: Options(limits=Limits(max_lines=0)), "max_lines must be a positive number"),
    (lambda: Options(llm_base_url="ftp://x"), "llm_base_url must be an http:// or https:// URL, "
                                              "not what was given"),
])
def test_bad_options_are_one_line_naming_the_setting(made, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        made()
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_layers_resolve_later_winning_and_none_is_not_given() -> None:
    options = resolve({"max_lines": 50, "budget": 10}, {"budget": 20, "max_lines": None})
    assert options.budget == 20 and options.limits.max_lines == 50
    assert options.limits.max_bytes == SETTINGS["max_bytes"].default


def test_keywords_are_read_as_the_config_files_values() -> None:
    assert from_keywords({"keep_steps": "4", "max_lines": "50"}) == \
        Options(keep_steps=4, limits=Limits(max_lines=50))
    with pytest.raises(UsageError, match=r"unknown setting\(s\): limits"):
        from_keywords({"limits": Limits()})
