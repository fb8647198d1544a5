"""A number no token count can be, in any field of any sample, is named and set aside:
`stats --json` of every such copy, in one run, prints every file, and no number past
what a call holds reaches its JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .conftest import SAMPLES
from .helpers import ctxpack, leaves

HUGE = 10**30
# fields whose count reached the usage table unchecked, as validate names each
NAMED = {("refactor.codex.jsonl", "model_context_window"): "model_context_window",
         ("cline-task/api_conversation_history.json", "completion"): "metrics.tokens.completion",
         ("opencode/book-search.opencode.json", "reasoning"): "tokens.reasoning",
         ("openhands/env-flags.openhands.jsonl", "completion_tokens"): "completion_tokens",
         ("openhands/env-flags.openhands.jsonl", "cache_read_tokens"): "cache_read_tokens",
         ("openhands/env-flags.openhands.jsonl", "cache_write_tokens"): "cache_write_tokens",
         ("gemini-api/inbox-batch.gemini-api.jsonl", "candidatesTokenCount"):
             "usageMetadata.candidatesTokenCount",
         ("gemini-api/inbox-batch.gemini-api.jsonl", "thoughtsTokenCount"):
             "usageMetadata.thoughtsTokenCount",
         ("plateau-fix.gemini-cli.jsonl", "thoughts"): "tokens.thoughts"}
# samples read as a tree (a task's two files, a storage folder): given whole
TREES = {"cline-task", "opencode-storage"}


def _int_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {k for k, v in value.items() if type(v) is int} | {
            k for v in value.values() for k in _int_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _int_keys(v)}
    return set()


def _with(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return {k: HUGE if k == key and type(v) is int else _with(v, key)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_with(v, key) for v in value]
    return value


def _read(path: Path) -> tuple[list[Any], bool] | None:
    """The records of a JSONL file, or a JSON document as one (True: a document)."""
    text = path.read_text(encoding="utf-8")
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()], False
    except json.JSONDecodeError:
        pass
    try:
        return [json.loads(text)], True
    except json.JSONDecodeError:
        return None


def _copies(into: Path) -> Iterator[tuple[Path, Path, tuple[str, str]]]:
    """Each sample with one field, in every record of one of its files, set to HUGE: the
    path to give stats, the file changed, and what was changed (the file and the field)."""
    n = 0
    for path in sorted(p for p in SAMPLES.rglob("*") if p.is_file()):
        read = _read(path) if path.suffix in (".json", ".jsonl") else None
        if read is None:
            continue
        records, document = read
        unit = SAMPLES / path.relative_to(SAMPLES).parts[0]
        for key in sorted(_int_keys(records)):
            n += 1
            place = into / str(n)
            if unit.is_dir():
                shutil.copytree(unit, place / unit.name)
            changed = place / path.relative_to(SAMPLES)
            changed.parent.mkdir(parents=True, exist_ok=True)
            new = [_with(r, key) for r in records]
            changed.write_text(json.dumps(new[0]) if document else
                               "".join(json.dumps(r) + "\n" for r in new), encoding="utf-8")
            given = place / unit.name if unit.name in TREES else changed
            yield given, changed, (path.relative_to(SAMPLES).as_posix(), key)


def test_a_huge_number_in_any_field_of_any_sample(tmp_path: Path) -> None:
    copies = list(_copies(tmp_path))
    assert len(copies) > 200  # every sample's fields, not a few
    run = ctxpack("stats", "--json", *(str(p) for p, _, _ in copies))
    assert "internal error" not in run.err and "Traceback" not in run.err, run.err[-2000:]
    doc = json.loads(run.out)
    printed = {f["path"] for f in doc["files"]}
    # every copy is printed, or named in one line of its own
    for given, _, what in copies:
        assert any(p.startswith(str(given)) for p in printed) or str(given) in run.err, what
    for f in doc["files"]:
        assert all(n < HUGE for n in leaves(f) if isinstance(n, (int, float))), f["path"]
    # validate names each of those fields, at a line of the file, the file read alone (a
    # Cline task's history without its UI log too)
    alone = []
    for n, (_, changed, what) in enumerate(c for c in copies if c[2] in NAMED):
        (tmp_path / "alone" / str(n)).mkdir(parents=True)
        alone.append((shutil.copy(changed, tmp_path / "alone" / str(n)), what))
    checked = ctxpack("validate", *(str(p) for p, _, _ in copies), *(str(p) for p, _ in alone))
    assert "internal error" not in checked.err and "Traceback" not in checked.err
    lines = checked.out.splitlines()
    assert not [x for x in lines if ":0:" in x]
    assert len(alone) == len(NAMED)
    for path, what in alone:
        # (a number past any count named by its digits, not written out)
        assert any(x.startswith(f"{path}:") and f"{NAMED[what]} a {len(str(HUGE))}-digit "
                   "number" in x for x in lines), what
