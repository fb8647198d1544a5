"""Configuration files: where the one that applies is found, and what it may set.

The file is `--config`, else `$CTXPACK_CONFIG`, else `./ctxpack.yaml`, else
`ctxpack/config.yaml` in the user config directory. Unknown keys are errors that
name every one of them together. A `ctxpack.yaml` found in the working directory came
with it as often as not (a checked-out repository): what it sets that would send data
off the machine or weaken protection is ignored, and the config says so. The command
line puts CTXPACK_* variables and flags over what the file sets (cli.write).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError
from .models import TABLE, Calibration, ModelInfo, ModelTable
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
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the config must be a mapping of keys to values")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown config key(s): {', '.join(unknown)}",
                         f"known keys: {', '.join(sorted(KNOWN_KEYS))}")
    compress = _compress(data.get("compress") or {}, path)
    local = not explicit and not os.environ.get("CTXPACK_CONFIG") and path == LOCAL
    ignored = _risky(compress) if local else []
    warnings = [
        f"{path}: ignored {', '.join(ignored)}: a ctxpack.yaml found in the working "
        "directory may not send transcripts off the machine or weaken their protection; "
        "set them in your user config, with --config FILE, CTXPACK_* variables or flags"
    ] if ignored else []
    return Config(models=TABLE.extend(_models(data.get("models") or [], path),
                                      _calibrations(data.get("calibration") or [], path)),
                  compress={k: v for k, v in compress.items() if k not in ignored},
                  source=str(path), warnings=warnings)


def _risky(compress: dict[str, Any]) -> list[str]:
    """The settings whose values would send data off the machine or weaken protection."""
    return [name for name, value in compress.items()
            if value is not None and (risky := SETTINGS[name].risky) and risky(value)]


def _compress(section: Any, path: Path) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise UsageError(f"{path}: `compress` must be a mapping of settings")
    return read(section, f"{path}: compress")


def _models(entries: Any, path: Path) -> list[ModelInfo]:
    if not isinstance(entries, list):
        raise UsageError(f"{path}: `models` must be a list")
    out = []
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: models[{i}] must be a mapping")
        unknown = sorted(set(entry) - MODEL_KEYS)
        if unknown:
            raise UsageError(f"{path}: models[{i}]: unknown key(s): {', '.join(unknown)}")
        try:
            out.append(ModelInfo(
                name=str(entry["name"]), encoding=str(entry.get("encoding", "o200k_base")),
                context_window=int(entry["context_window"]), exact=bool(entry.get("exact", True)),
                provider=str(entry.get("provider", "custom")), note=str(entry.get("note", ""))))
        except KeyError as exc:
            raise UsageError(f"{path}: models[{i}] needs {exc.args[0]!r}") from None
        except (TypeError, ValueError):
            raise UsageError(f"{path}: models[{i}]: context_window must be a number") from None
    return out


def _calibrations(entries: Any, path: Path) -> list[Calibration]:
    """The `calibration:` list: a model's slope (tokens billed per token counted) and,
    optionally, what its agent sends unlogged and the error measured (`ctxpack calibrate
    --write-config` writes them)."""
    if not isinstance(entries, list):
        raise UsageError(f"{path}: `calibration` must be a list")
    out = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: calibration[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} must be a mapping")
        unknown = sorted(set(entry) - CALIBRATION_KEYS)
        if unknown:
            raise UsageError(f"{where}: unknown key(s): {', '.join(unknown)}")
        name, slope = entry.get("name"), entry.get("slope")
        overhead, error = entry.get("overhead"), entry.get("error")
        if not isinstance(name, str) or not name:
            raise UsageError(f"{where} needs a 'name'")
        if not _number(slope) or slope <= 0:
            raise UsageError(f"{where}: slope must be a number above 0")
        if overhead is not None and (not _number(overhead) or overhead < 0):
            raise UsageError(f"{where}: overhead must be a number of tokens, 0 or more")
        if error is not None and (not _number(error) or error < 0):
            raise UsageError(f"{where}: error must be a fraction, 0 or more")
        out.append(Calibration(name, float(slope), None if overhead is None else round(overhead),
                               None if error is None else float(error)))
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
        and value not in (float("inf"), float("-inf"))


def add_calibrations(path: str, fitted: list[Any]) -> None:
    """Put each fitted model's figures in the config file at `path`'s `calibration:`
    list, replacing an entry of the same name; the file is written whole, atomically
    (read back as the config is, so a file it cannot read is left alone)."""
    import yaml

    from .atomic import write_atomic

    target = Path(path)
    data: Any = {}
    if target.exists():
        try:
            data = yaml.safe_load(target.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise UsageError(f"{path}: the config must be a mapping of keys to values")
    entries = {e.name: e for e in _calibrations(data.get("calibration") or [], target)}
    for f in fitted:
        entries[f.model] = Calibration(f.model, f.slope, f.overhead, f.error)
    data["calibration"] = [
        {k: v for k, v in (("name", e.name), ("slope", e.slope), ("overhead", e.overhead),
                           ("error", e.error)) if v is not None}
        for e in entries.values()]
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:  # (a fresh machine has no ~/.config/ctxpack yet)
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: cannot make its folder: {exc.strerror or exc}") from None
    write_atomic(str(target), [text.encode("utf-8")])
