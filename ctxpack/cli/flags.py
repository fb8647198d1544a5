"""The compress settings as command-line options, made from the table in
ctxpack.settings: a command gets one option per setting, with its flag, metavar and
help, and receives what was given by setting name, None for "not given" (so that the
config file and CTXPACK_* variables show through)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from ..settings import SETTINGS, Setting, convert, read_one

Command = TypeVar("Command", bound=Callable[..., Any])


def with_settings(after: str) -> Callable[[Command], Command]:
    """Give a command an option per setting, listed after its parameter `after`; they
    reach its `**flags` (read them with `given`). Typer learns a command's options from
    its signature, so the signature it sees is the command's own with these added."""

    def add(command: Command) -> Command:
        own = inspect.signature(command, eval_str=True)
        params = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
        at = [p.name for p in params].index(after) + 1
        params[at:at] = [_option(s) for s in SETTINGS.values()]
        command.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        return command

    return add


def _only_one_way(setting: Setting) -> bool:
    """A switch with one spelling (--no-archive): given or not, never None."""
    return setting.kind is bool and "/" not in setting.flags


def _option(setting: Setting) -> inspect.Parameter:
    option = typer.Option(setting.flags, metavar=setting.metavar, help=setting.help)
    if _only_one_way(setting):
        kind, default = bool, False
    elif setting.alternatives:  # repeatable: any of them (--pin A --pin B)
        kind, default = list[setting.kind] | None, None  # type: ignore[name-defined]
    elif setting.kind in (int, float):  # read and checked as the config's and a
        # variable's are (see `given`): a 400-digit whole number is named as one, not as
        # the infinity a float makes of it, nor taken as a count
        kind, default = str | None, None
    else:
        kind, default = setting.kind | None, None
    return inspect.Parameter(setting.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                             default=default, annotation=Annotated[kind, option])


def given(flags: dict[str, Any]) -> dict[str, Any]:
    """The settings the options set, by name; None where an option was not given."""
    out = {}
    for s in SETTINGS.values():
        value = flags[s.name]
        if _only_one_way(s):  # it sets what it spells: --no-archive is archive=false
            value = not s.flags.startswith("--no-") if value else None
        elif s.alternatives:  # repeated: one regex of them all; once: itself; [] not given
            value = (convert(s.name, value, s.flags) if len(value) > 1 else value[0]) \
                if value else None
        elif s.kind in (int, float) and value is not None:
            value = read_one(s.name, value, s.flags)
        out[s.name] = value
    return out
