"""`Options`, the settings of one compress run as the pipeline reads them: made from the
table in ctxpack.settings (a field per setting, with the truncation limits gathered
into one `Limits`), checked whenever one is made, and resolved from settings layers.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from typing import Any

from ..errors import UsageError
from ..settings import SETTINGS, check, read
from .cutting import Limits

# The settings that truncate reads as one Limits, by their names there.
LIMITS = {"max_lines": "max_lines", "max_bytes": "max_bytes", "max_tokens": "max_tokens",
          "truncate_mode": "mode"}


def _fields() -> list[tuple[str, Any, Any]]:
    """Options' fields in the table's order, `limits` where its first setting is."""
    out: list[tuple[str, Any, Any]] = []
    for s in SETTINGS.values():
        if s.name not in LIMITS:
            kind = s.kind if s.default is not None else s.kind | None
            out.append((s.name, kind, field(default=s.default)))
        elif not any(name == "limits" for name, _, _ in out):
            out.append(("limits", Limits, field(default_factory=Limits)))
    return out


def settings_of(options: Options) -> dict[str, Any]:
    """An Options' settings by their names in the table (the limits spread out)."""
    out = {f.name: getattr(options, f.name) for f in fields(options) if f.name != "limits"}
    out.update({name: getattr(options.limits, attr) for name, attr in LIMITS.items()})
    return out


def _check(self: Options) -> None:
    problems = check(settings_of(self))
    if problems:
        raise UsageError("; ".join(problems))


Options = make_dataclass(
    "Options", _fields(), frozen=True, slots=True,
    namespace={"__module__": __name__, "__post_init__": _check,
               "__doc__": "Every knob of the pipeline (see ctxpack.settings); each stage can "
                          "be turned off."})


def resolve(*layers: dict[str, object]) -> Options:
    """Options from settings layers, later layers winning (None means "not given")."""
    merged: dict[str, object] = {}
    for layer in layers:
        merged.update({k: v for k, v in layer.items() if v is not None})
    limits = Limits(**{attr: merged.pop(name, SETTINGS[name].default)
                       for name, attr in LIMITS.items()})
    return Options(limits=limits, **merged)


def from_keywords(settings: dict[str, Any]) -> Options:
    """Options from `ctxpack.compress`'s keyword arguments, read as the config file's
    values are (`keep_steps="4"` is 4); an unknown name is an error."""
    return resolve(read(settings, "compress()"))
