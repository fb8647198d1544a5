"""Configuration files: where the one that applies is found, and what it may set.

The file is `--config`, else `$CTXPACK_CONFIG`, else `./ctxpack.yaml`, else
`ctxpack/config.yaml` in the user config directory. Unknown keys are errors that
name every one of them together. A `ctxpack.yaml` found in the working directory came
with it as often as not (a checked-out repository): what it sets that would send data
off the machine or weaken protection is ignored, and the config says so. The command
line puts CTXPACK_* variables and flags over what the file sets (cli.write).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import UsageError
from .models import (
    SLOPES,
    TABLE,
    Calibration,
    ModelInfo,
    ModelTable,
    model_key,
    overhead_bound,
)
from .numbers import quoted, real
from .settings import SETTINGS, read

KNOWN_KEYS = {"models", "compress", "calibration"}
LOCAL = Path("ctxpack.yaml")  # found in the working directory, if no other is named
MODEL_KEYS = {"name", "encoding", "context_window", "exact", "provider", "note"}
CALIBRATION_KEYS = {"name", "slope", "overhead", "error"}


@dataclass
class Config:
    """Resolved settings; `models` is the model table with the file's additions."""

    models: ModelTable = field(default_factory=lambda: TABLE)
    compress: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    warnings: list[str] = field(default_factory=list)  # for the command line to show


def user_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "ctxpack"


def find_config(explicit: str | None = None) -> Path | None:
    """The config file that applies, or None."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise UsageError(f"config file {explicit} not found")
        return path
    env = os.environ.get("CTXPACK_CONFIG")
    if env:
        if not Path(env).is_file():
            raise UsageError(f"config file {env} (from $CTXPACK_CONFIG) not found")
        return Path(env)
    for candidate in (LOCAL, user_config_dir() / "config.yaml"):
        if candidate.is_file():
            return candidate
    return None


def load_config(explicit: str | None = None) -> Config:
    """Resolve the configuration once, in the documented order."""
    path = find_config(explicit)
    if path is None:
        return Config()
    models, compress = checked(parse(path, path.read_bytes()), path)
    local = not explicit and not os.environ.get("CTXPACK_CONFIG") and path == LOCAL
    ignored = _risky(compress) if local else []
    warnings = [
        f"{path}: ignored {', '.join(ignored)}: a ctxpack.yaml found in the working "
        "directory may not send transcripts off the machine or weaken their protection; "
        "set them in your user config, with --config FILE, CTXPACK_* variables or flags"
    ] if ignored else []
    return Config(models=models,
                  compress={k: v for k, v in compress.items() if k not in ignored},
                  source=str(path), warnings=warnings)


def checked(data: Any, path: Path) -> tuple[ModelTable, dict[str, Any]]:
    """What a config file's parsed `data` sets: its model table and its `compress:`
    settings; a UsageError naming the file and what is wrong where ctxpack cannot load it
    (no mapping, an unknown key, a setting or entry it refuses)."""
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the config must be a mapping of keys to values")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown config key(s): {', '.join(unknown)}",
                         f"known keys: {', '.join(sorted(KNOWN_KEYS))}")
    return _table(data, path), _compress(data.get("compress") or {}, path)


def parse(path: str | Path, raw: bytes) -> Any:
    """A config file's bytes as YAML ({} where it holds none); where they are not, a
    UsageError naming the file, the line and the problem (and the line of what it was
    reading, where that opened elsewhere: an unclosed `[`)."""
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise UsageError(f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x})") \
            from None
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, opened = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        # (PyYAML says where it was, not that: "while parsing a flow sequence")
        during = "" if not context else f" ({context}" + (
            f" begun on line {opened.line + 1}" if opened is not None and mark is not None
            and opened.line != mark.line else "") + ")"
        at = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{at}: not valid YAML: {problem}{during}") from None


def _table(data: dict[str, Any], path: Path) -> ModelTable:
    """The model table a config's `data` makes: its `models:` added to the built-in ones,
    then its `calibration:` (whose overheads are bounded by the windows of both)."""
    models = TABLE.extend(_models(data.get("models") or [], path))
    return models.extend([], _calibrations(data.get("calibration") or [], path, models))


def _risky(compress: dict[str, Any]) -> list[str]:
    """The settings whose values would send data off the machine or weaken protection."""
    return [name for name, value in compress.items()
            if value is not None and (risky := SETTINGS[name].risky) and risky(value)]


def _compress(section: Any, path: Path) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise UsageError(f"{path}: `compress` must be a mapping of settings")
    return read(section, f"{path}: compress")


def _models(entries: Any, path: Path) -> list[ModelInfo]:
    """The `models:` list. An entry for a model the built-in table knows (by the lookup
    every model id gets: `claude-opus-4-6` is `claude-opus-4`) changes only the keys it
    sets: giving a Claude model a larger window leaves it counted as an approximation and
    billed at its calibration. An entry for a model it does not know needs its
    `context_window`; its other keys default to an exact o200k_base count."""
    from .jsonl import json_kind
    from .tokens import encoding_names  # (counting's module: loaded where a model is added)

    out = []
    for where, entry, name in _entries(entries, path, "models", MODEL_KEYS):
        known = TABLE.find(name)
        base = ModelInfo(name, "o200k_base", 0, provider="custom") if known is None \
            else replace(known, name=name)
        if "context_window" not in entry and known is None:
            raise UsageError(f"{where} needs 'context_window' (the built-in table does not "
                             f"know {name!r})")
        window = _number(entry.get("context_window", base.context_window))
        if window is None or not math.isfinite(window) or window != int(window) or window <= 0:
            raise UsageError(f"{where}: context_window must be a number of tokens, whole and "
                             f"above 0, not {entry['context_window']!r}")
        exact = entry.get("exact", base.exact)
        if not isinstance(exact, bool):
            raise UsageError(f"{where}: exact must be true or false, not {exact!r}")
        encoding = entry.get("encoding", base.encoding)
        if not isinstance(encoding, str):  # (named by its kind: `5` is no encoding '5')
            raise UsageError(f"{where}: encoding must be the name of one tiktoken has "
                             f"({', '.join(encoding_names())}), not {json_kind(encoding)}")
        if encoding not in (known_encodings := encoding_names()):
            raise UsageError(f"{where}: encoding {encoding!r} is not one tiktoken has "
                             f"(it has {', '.join(known_encodings)})")
        # the table's note names its encoding: not kept for another one
        note = str(entry.get("note", base.note if encoding == base.encoding else ""))
        if not exact and not note:
            note = f"counted with {encoding} as an approximation"
        out.append(replace(base, encoding=encoding, context_window=int(window), exact=exact,
                           provider=str(entry.get("provider", base.provider)), note=note))
    return out


def _calibrations(entries: Any, path: Path, table: ModelTable) -> list[Calibration]:
    """The `calibration:` list: a model's slope (tokens billed per token counted) and,
    optionally, what its agent sends unlogged (below the model's window in `table`, the
    config's models with the built-in ones) and the error measured (`ctxpack calibrate
    --write-config` writes them)."""
    out = []
    for where, entry, name in _entries(entries, path, "calibration", CALIBRATION_KEYS):
        same = next((k for k, c in enumerate(out) if model_key(c.name) == model_key(name)),
                    None)
        if same is not None:  # (which of the two should count?)
            raise UsageError(f"{where}: {name!r} is calibration[{same}]'s model again")
        if "slope" not in entry:
            raise UsageError(f"{where} needs a 'slope' (tokens billed per token counted)")
        slope = _within(entry["slope"], *SLOPES, f"{where}: slope",
                        "tokens billed per token counted")
        window, which = overhead_bound(name, table)
        overhead = _within(entry.get("overhead"), 0, window - 1, f"{where}: overhead",
                           f"tokens, below {which}") \
            if entry.get("overhead") is not None else None
        if overhead is not None and overhead != int(overhead):
            raise UsageError(f"{where}: overhead must be a whole number of tokens, not "
                             f"{_shown(overhead)}")
        error = None if entry.get("error") is None else _number(entry["error"])
        if entry.get("error") is not None and (error is None or not 0 <= error <= 1):
            raise UsageError(f"{where}: error must be a fraction from 0 to 1 (0.05 is 5%)")
        out.append(Calibration(name, slope, None if overhead is None else int(overhead),
                               error))
    return out


def _entries(entries: Any, path: Path, key: str, keys: set[str]
             ) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each entry of the config's list `key`, where it is (numbered from 0, as validate
    numbers items) and the model it names: a list of mappings, of `keys` only, each with
    a name."""
    if not isinstance(entries, list):
        raise UsageError(f"{path}: `{key}` must be a list")
    for i, entry in enumerate(entries):
        where = f"{path}: {key}[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} must be a mapping")
        unknown = sorted(set(entry) - keys)
        if unknown:
            raise UsageError(f"{where}: unknown key(s): {', '.join(unknown)}")
        yield where, entry, _name(entry, where)


def _name(entry: dict[str, Any], where: str) -> str:
    """The model an entry of the config's lists names: text, not empty."""
    from .jsonl import json_kind

    name = entry.get("name")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise UsageError(f"{where} needs a 'name' (the model's id, or a prefix of it)")
    if not isinstance(name, str):  # (YAML reads `name: 5` as a number, `name: [a]` a list)
        raise UsageError(f"{where}: name must be a model's id, as text (quote it), not "
                         f"{json_kind(name)} ({name!r})")
    return name


def _number(value: Any) -> float | None:
    """`value` as a number (see ctxpack.numbers), or None; YAML text that reads as one
    counts (PyYAML reads `1e3` as text), as it does in a setting read by
    `settings.convert`."""
    return real(value, text=True)


def _within(value: Any, low: float, high: float, what: str, unit: str) -> float:
    """`value` as a number from `low` to `high`, or a UsageError naming `what` and the
    range."""
    shown = f"{_shown(low)} to {_shown(high)}"
    number = _number(value)
    if number is None:
        raise UsageError(f"{what} must be a number from {shown} ({unit}), not {value!r}")
    if not low <= number <= high:
        # (a whole number no float holds by its digits, not as the infinity it reads as)
        given = _shown(number) if math.isfinite(number) else quoted(value)
        raise UsageError(f"{what} {given} is outside {shown} ({unit})")
    return number


def _shown(number: float) -> str:
    return f"{int(number):,}" if abs(number) < 1e15 and number == int(number) else f"{number:g}"


def editable(path: str) -> tuple[str, dict[str, Any]]:
    """The text of the config file at `path` (a link's target's) and what it sets, ("",
    {}) where there is none yet; a UsageError where ctxpack does not load it as a config
    (`checked`), or it is no file: figures written there would count for no command."""
    target = Path(os.path.realpath(path))
    if not target.exists():
        return "", {}
    if not target.is_file():
        raise UsageError(f"{path}: not a regular file; the config cannot be written there")
    raw = target.read_bytes()
    try:
        data = parse(path, raw)
        checked(data, Path(path))
    except UsageError as exc:
        raise UsageError(f"{exc.message}; ctxpack does not load this config, so it is not "
                         "edited", exc.hint) from None
    return raw.decode("utf-8"), data  # (its line ends as they are)


def add_calibrations(path: str, fitted: list[Any]) -> None:
    """Put each fitted model's figures in the config file at `path`'s `calibration:`
    list: an entry the model table takes for the same model (`models.model_key`) is
    replaced where it stands (a block entry's values each in place, so that the comments
    beside them stay), a new one added after the list's last; the rest of the file, its
    comments and layout, is kept as it was. A link is written through to its file; the
    file is written whole or not at all, made (and its folder) if missing. A file ctxpack
    does not load as a config (`checked`) is refused and left as it was, and so is one
    whose edit would not load, or not read back as intended."""
    import yaml

    from .atomic import write_atomic

    target = Path(os.path.realpath(path))  # (a link to a dotfiles checkout stays a link)
    text, data = editable(path)
    new = {model_key(f.model): {k: v for k, v in (
        ("name", f.model), ("slope", f.slope), ("overhead", f.overhead), ("error", f.error))
        if v is not None} for f in fitted}
    merged = _merged(data.get("calibration") or [], new)
    edited = _edit_calibrations(text, new, merged)
    try:
        safe = edited is not None and yaml.safe_load(edited) == {**data, "calibration": merged}
    except yaml.YAMLError:
        safe = False
    if edited is None or not safe:
        raise UsageError(f"{path}: cannot edit its `calibration:` list safely (its layout is "
                         "not one ctxpack edits); nothing was changed",
                         "add the entries by hand, or write to a new file")
    try:  # (checked as a config before it replaces the file)
        checked(parse(path, edited.encode("utf-8")), Path(path))
    except UsageError as exc:
        raise UsageError(f"{path}: with the fitted figures the config would not load "
                         f"({exc.message}); nothing was changed", exc.hint) from None
    try:  # (a fresh machine has no ~/.config/ctxpack yet)
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # (a file where a folder of its path should be, say)
        blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker else exc.strerror or str(exc)
        raise UsageError(f"{path}: cannot make its folder: {why}; nothing was written") \
            from None
    write_atomic(str(target), [edited.encode("utf-8")])


def _edit_calibrations(text: str, new: dict[str, dict[str, Any]],
                       merged: list[Any]) -> str | None:
    """`text` with the `calibration:` entries of `new` (by `model_key`) in place of those of
    the same model, and the others added after the list's last entry (a block list); or
    the list `merged` in place of a flow list or of none; or the key with `new`'s entries
    added at the end. None where the file's layout is none of those (the caller checks
    what the result reads back as)."""
    import yaml

    def flow(entry: dict[str, Any]) -> str:
        return yaml.safe_dump(entry, default_flow_style=True, width=10**6, sort_keys=False,
                              allow_unicode=True).strip()

    newline = "\r\n" if "\r\n" in text else "\n"

    def appended() -> str:
        body = text if not text or text.endswith(("\n", "\r")) else text + newline
        return body + newline.join(["calibration:", *(f"  - {flow(e)}" for e in new.values())]) \
            + newline

    root = yaml.compose(text) if text.strip() else None
    if root is None or (isinstance(root, yaml.ScalarNode) and not root.value):
        return appended()  # empty, comments only, or an empty document ("---")
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        return None
    found = [(k, v) for k, v in root.value if k.value == "calibration"]
    if not found:
        return appended()
    key, seq = found[0]
    listed = "[" + ", ".join(flow(e) for e in merged) + "]"
    if isinstance(seq, yaml.ScalarNode):  # none: the list on the key's line
        if seq.value not in ("", "~", "null"):
            return None
        colon = text.index(":", key.end_mark.index) + 1
        return text[:colon] + " " + listed + text[seq.end_mark.index if seq.value else colon:]
    if isinstance(seq, yaml.SequenceNode) and (seq.flow_style or not seq.value):
        return text[:seq.start_mark.index] + listed + text[seq.end_mark.index:]
    if not isinstance(seq, yaml.SequenceNode):
        return None
    out, at, added = [], 0, dict(new)
    for item in seq.value:
        if not isinstance(item, yaml.MappingNode):
            return None
        name = next((v.value for k, v in item.value if k.value == "name"), None)
        replacing = new.get(model_key(str(name))) if name is not None else None
        if replacing is not None:
            added.pop(model_key(str(name)), None)
            if any(k.value == "<<" for k, _ in item.value):
                return None  # (its values are another entry's: a merge key)
            edits = _in_place(text, item, dict(replacing, name=name), newline) \
                if not item.flow_style else None
            for start, end, written in edits or [(item.start_mark.index, _end(item),
                                                  flow(dict(replacing, name=name)))]:
                out += [text[at:start], written]
                at = end
    last = _end(seq.value[-1])
    indent = " " * seq.start_mark.column
    tail = "".join(f"{newline}{indent}- {flow(e)}" for e in added.values())
    last = max(last, at)  # (an edit took out the entry's last line)
    return "".join(out) + text[at:last] + tail + text[last:]


def _in_place(text: str, item: Any, entry: dict[str, Any],
              newline: str) -> list[tuple[int, int, str]] | None:
    """The edits (start, end, text written there, in order) that make the block mapping
    `item` of `text` read as `entry`: each value it has written over where it stands, a key
    `entry` lacks taken out with its line, and the keys it lacks added on lines after its
    last, so that comments beside the values stay. None where that cannot be done so (a
    value that is no plain scalar, a key sharing its line with another)."""
    import yaml

    def scalar(value: Any) -> str:  # (as a flow list's item: `1.011`, `'1e3'`)
        return yaml.safe_dump([value], default_flow_style=True, width=10**6,
                              allow_unicode=True).strip()[1:-1]

    def line_end(at: int) -> int:  # (of the line `at` is on: before its `\r\n` or `\n`)
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        return end - 1 if end > 0 and text[end - 1] == "\r" else end

    edits = []
    keys = [k.value for k, _ in item.value]
    for n, (key, value) in enumerate(item.value):
        if not isinstance(value, yaml.ScalarNode) or value.style not in (None, "'", '"'):
            return None
        if key.value in entry:
            if key.value != "name":  # (the entry keeps its name as written)
                edits.append((value.start_mark.index, value.end_mark.index,
                              scalar(entry[key.value])))
            continue
        before = text.rfind("\n", 0, key.start_mark.index)  # (the line break before it)
        if n == 0 or text[before + 1:key.start_mark.index].strip():
            return None  # (the key opens the entry's `- ` line)
        edits.append((line_end(before), line_end(value.end_mark.index), ""))
    indent = " " * item.value[0][0].start_mark.column
    last = line_end(_end([v for k, v in item.value if k.value in entry][-1]))
    edits += [(last, last, "".join(f"{newline}{indent}{k}: {scalar(v)}"
                                   for k, v in entry.items() if k not in keys))]
    return sorted(edits)


def _end(node: Any) -> int:
    """Where `node`'s own text ends (a block mapping's mark runs on to the next token,
    over the comments and blank lines after it)."""
    import yaml

    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end(node.value[-1])
    return int(node.end_mark.index)


def _merged(old: list[Any], new: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """`old` entries with those `new` has a figure for replaced (their names kept), and the
    rest of `new` after them."""
    out = [dict(new[model_key(str(e.get("name")))], name=e.get("name"))
           if isinstance(e, dict) and model_key(str(e.get("name"))) in new else e for e in old]
    named = {model_key(str(e.get("name"))) for e in old if isinstance(e, dict)}
    return out + [e for k, e in new.items() if k not in named]
