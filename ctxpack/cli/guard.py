"""What a run may write over. Every output a command names (`-o`, the files below
`--out-dir`, `--html`, `--report-json`, `--per-row`, `--archive-dir`, `--write-config`)
goes through `Writes` before any work: one that is a file the run reads, or that another
of its outputs names, is refused in one line, and a page (HTML) is written only over
nothing, an empty file or an HTML page, so that a mistyped name loses no transcript."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..errors import UsageError

STDOUT = "-"
_PAGE_STARTS = (b"<!doctype html", b"<html")


class Writes:
    """The files a run reads, and the outputs it is to write, named as they are checked."""

    def __init__(self, inputs: Iterable[str]) -> None:
        self._inputs: dict[object, str] = {}
        self._outputs: dict[object, str] = {}
        for path in inputs:
            if path != STDOUT:
                for key in _keys(path):
                    self._inputs.setdefault(key, path)

    def output(self, path: str | None, by: str, *, source: str | None = None,
               itself: bool = False, page: bool = False, hint: str | None = None) -> None:
        """Take `path` (None: nothing is written; `-`: stdout) as written by `by` (an
        option, or what writes the output of `source`), or refuse it: it is one of the
        inputs (but `source` itself when `itself`, in place), it is another output's, or,
        for a `page`, it is a file with something in it that is not a page."""
        if path is None:
            return
        keys = [("stdout",)] if path == STDOUT else _keys(path)
        hit = next((self._inputs[k] for k in keys if k in self._inputs), None)
        if hit is not None and not (itself and hit == source):
            if hit == source:
                raise UsageError(f"{source} would be written over itself", hint)
            raise UsageError(f"{hit} is an input: {by} would be written over it",
                             hint or "write it elsewhere")
        for key in keys:
            if (other := self._outputs.setdefault(key, by)) != by:
                where = "stdout" if path == STDOUT else path
                raise UsageError(f"{other} and {by} would both be written to {where}")
        if page and path != STDOUT and not _empty_or_page(path):
            raise UsageError(f"{path} is there and is not an HTML page: {by} is not written "
                             "over it", "name a new .html file, or remove this one first")


def refuse_overwrites(file: str, dest: str | None, in_place: bool,
                      also: dict[str, str | None], page: bool = False,
                      hint: str = "use --in-place to replace it") -> None:
    """The outputs of a run of one input, `file`, checked: `dest` (None: nothing is
    written; `-`: stdout; a `page` is HTML) and what the options in `also` (name: path)
    name."""
    outputs = Writes([file])
    outputs.output(dest, "the output" if dest == STDOUT else "--output", source=file,
                   itself=in_place, page=page, hint=hint)
    for flag, path in also.items():
        outputs.output(path, flag)


def same_file(source: str, dest: str) -> bool:
    """Are the two paths one file (or, not there yet, one name)?"""
    return bool(set(_keys(source)) & set(_keys(dest)))


def _keys(path: str) -> list[object]:
    """What a file is known by: its resolved path, and its device and inode if it is
    there (a link or a second name of the file is still the file)."""
    keys: list[object] = [("path", os.path.realpath(path))]
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # not there yet, or not a local path
        return keys
    return [*keys, ("inode", st.st_dev, st.st_ino)]


def _empty_or_page(path: str) -> bool:
    """Is `path` missing, not a plain file (a pipe, a device: nothing to read back
    without taking it), empty, or an HTML page (by its first bytes)?"""
    if not os.path.isfile(path):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:  # unreadable: writing it says why
        return True
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    return not head or head.startswith(_PAGE_STARTS)
