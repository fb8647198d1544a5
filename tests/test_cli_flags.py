"""The compress options made from the settings table: spelt, listed and read as the table says."""

from __future__ import annotations

import re

from ctxpack.cli.flags import given
from ctxpack.settings import SETTINGS

from .helpers import ctxpack


def test_every_setting_is_an_option_of_compress_in_the_tables_order() -> None:
    text = re.sub(r"\s+", " ", ctxpack("compress", "--help").out)
    at = -1
    for s in SETTINGS.values():
        spelt = s.flags.replace("/", " / ") + (f" {s.metavar}" if s.metavar else "")
        found = text.find(f"{spelt} {s.help}")
        assert found > at, f"{spelt} missing, or out of order, in compress --help"
        at = found


def test_options_not_given_leave_every_setting_to_the_config() -> None:
    unset = dict.fromkeys(SETTINGS)
    as_typer_passes_them = {**unset, "archive": False}  # --no-archive is present or not
    assert given(as_typer_passes_them) == unset
    assert given({**as_typer_passes_them, "mask": False, "budget": 10}) == \
        {**unset, "mask": False, "budget": 10}


def test_a_one_way_switch_sets_what_it_spells() -> None:
    assert given({**dict.fromkeys(SETTINGS), "archive": True})["archive"] is False
