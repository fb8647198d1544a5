"""restore as a stream: originals read in pieces, layers spooled to disk, nothing
written unless the whole original comes back and matches its sha256."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time
import zlib
from pathlib import Path
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import archive
from ctxpack import restore as restore_fn
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import UsageError
from ctxpack.undo import items, restore

from .compression.transcripts import billed, fitted
from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack

CHAT = SAMPLES / "support-chat.openai.jsonl"
RUN = SAMPLES / "coding-agent.claude-code.jsonl"


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(st.binary(max_size=300) | st.just(b"a" * 5000), max_size=6),
       cuts=st.lists(st.integers(0, 20_000), max_size=8), out=st.integers(1, 64))
def test_inflate_pieces_gives_every_stream_back_in_bounded_pieces(blocks, cuts, out) -> None:
    data = b"".join(zlib.compress(b, 1) for b in blocks)
    at = sorted({min(c, len(data)) for c in cuts})
    given_pieces = [data[a:b] for a, b in zip([0, *at], [*at, len(data)], strict=True)]
    with mock.patch.object(archive, "OUT", out):
        pieces = list(archive.inflate_pieces(given_pieces))
    assert b"".join(pieces) == b"".join(blocks)
    assert all(0 < len(p) <= out for p in pieces)


def test_a_stream_cut_short_is_an_error() -> None:
    data = zlib.compress(os.urandom(2000))
    with pytest.raises(archive.INFLATE_ERRORS):
        list(archive.inflate_pieces([data[:-10]]))


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=40), max_size=8))
def test_streams_made_ahead_are_encoded_as_one_text(chunks) -> None:
    """Compressed streams are base64-encoded as they come (see `Packed.pieces`): the pieces
    must read as the one text of all their bytes, with no padding but at the end."""
    pieces = list(archive._base64(chunks))
    assert b"".join(pieces) == base64.b64encode(b"".join(chunks))
    assert all(b"=" not in p for p in pieces[:-1])


@pytest.fixture
def compressed(tmp_path: Path) -> Path:
    out = tmp_path / "small.jsonl"
    result = compress_file(RUN, Options(budget=billed(RUN, fitted(RUN) * 3 // 4)))
    assert result.report.summary is not None
    out.write_bytes(result.data)
    return out


def test_small_pieces_and_the_long_line_path_restore_the_same(compressed: Path,
                                                              monkeypatch) -> None:
    # every archive read in many pieces, and every line with one parsed without its text
    monkeypatch.setattr(archive, "OUT", 97)
    monkeypatch.setattr(archive, "PIECE_CHARS", 8)
    monkeypatch.setattr(archive, "BIG", 0)
    assert restore(compressed) == RUN.read_bytes()
    assert restore_fn is restore  # the package's name is the function, not the module


def test_a_long_line_is_read_without_parsing_its_archive_text() -> None:
    data = base64.b64encode(zlib.compress(b"original")).decode()
    ref = {"sha256": hashlib.sha256(b"original").hexdigest(), "bytes": 8, "inline": True,
           "encoding": "zlib+base64", "data": data}
    line = orjson.dumps({"role": "tool", "content": "x", "ctxpack": {"id": "o-1",
                                                                     "archive": ref}})
    meta = archive.meta_of(line + b" " * archive.BIG)
    assert isinstance(meta["archive"]["data"], memoryview)
    assert bytes(meta["archive"]["data"]) == data.encode()
    assert archive.unpack(meta["archive"], "here") == b"original"


def test_a_decoy_of_the_archive_shape_falls_back_to_a_full_parse() -> None:
    data = base64.b64encode(zlib.compress(b"original")).decode()
    decoy = {"encoding": "zlib+base64", "data": "not it"}  # real JSON, before the archive
    ref = {"sha256": hashlib.sha256(b"original").hexdigest(), "bytes": 8, "inline": True,
           "encoding": "zlib+base64", "data": data}
    line = orjson.dumps({"result": decoy, "ctxpack": {"id": "o-1", "archive": ref}})
    meta = archive.meta_of(line + b" " * archive.BIG)
    assert meta["archive"]["data"] == data
    assert archive.unpack(meta["archive"], "here") == b"original"


def _damage(path: Path, how: str) -> None:
    """Spoil the summary's inline archive: `sha` swaps its payload for another valid one,
    `base64` puts a character base64 does not have in it."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for row in rows:
        meta = row.get("ctxpack", {})
        if meta.get("kind") == "archived_summary":
            other = base64.b64encode(zlib.compress(b"something else\n")).decode()
            meta["archive"]["data"] = other if how == "sha" else "!" + meta["archive"]["data"]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


@pytest.mark.parametrize("how,fragment", [("sha", "sha256"), ("base64", "damaged")])
def test_a_damaged_archive_writes_nothing(compressed: Path, tmp_path: Path, how: str,
                                          fragment: str) -> None:
    _damage(compressed, how)
    back = tmp_path / "back.jsonl"
    assert_clean_error(ctxpack("restore", str(compressed), "-o", str(back)), 2, fragment)
    assert not back.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ctxpack-")]
    piped = ctxpack("restore", str(compressed))
    assert piped.code == 2 and piped.out == ""  # not half of the original on stdout


def test_in_place_restore_keeps_the_compressed_file_as_bak(compressed: Path) -> None:
    data = compressed.read_bytes()
    old = time.time() - 60
    os.utime(compressed, (old, old))
    run = ctxpack("restore", str(compressed), "--in-place")
    assert run.code == 0, run.err
    assert compressed.read_bytes() == RUN.read_bytes()
    assert Path(f"{compressed}.bak").read_bytes() == data


def test_list_and_only_read_stdin(compressed: Path) -> None:
    data = compressed.read_bytes()
    listed = ctxpack("restore", "-", "--list", input=data)
    assert listed.code == 0, listed.err
    assert [row.split("\t")[0] for row in listed.out.splitlines()] == \
        [i for i, *_ in items(compressed)]
    summary = next(row.split("\t")[0] for row in listed.out.splitlines()
                   if "archived_summary" in row)
    one = ctxpack("restore", "-", "--only", summary, input=data)
    assert one.code == 0, one.err
    assert one.out.encode() == restore(compressed, only=summary)
    assert b"## Archived Session Summary" not in one.out.encode()


def test_a_file_compressed_twice_comes_back_in_two_passes(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    shutil.copy(CHAT, path)
    once = tmp_path / "once.jsonl"
    budget = fitted(path) * 3 // 4
    once.write_bytes(compress_file(path, Options(budget=budget)).data)
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(compress_file(once, Options(budget=budget * 2 // 3)).data)
    assert twice.read_bytes() != once.read_bytes()
    assert restore(twice) == path.read_bytes()
    top = restore(twice, only=next(i for i, kind, *_ in items(twice) if kind ==
                                   "archived_summary"))
    assert top != path.read_bytes()  # --only takes off one layer


def test_an_item_cut_short_is_an_error_that_names_its_line(compressed: Path,
                                                            tmp_path: Path) -> None:
    data = compressed.read_bytes()
    line = next(n for n, raw in enumerate(data.splitlines(keepends=True), 1)
                if b'"archived_summary"' in raw)
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[:line - 1]) + lines[line - 1][:len(lines[line - 1]) // 2]
    compressed.write_bytes(cut)  # as a copy interrupted half way through that line
    back = tmp_path / "back.jsonl"
    for args in (("-o", str(back)), ("--list",)):
        assert_clean_error(ctxpack("restore", str(compressed), *args), 2,
                           f"{compressed}:{line}", "cut short")
    assert not back.exists()


@pytest.mark.parametrize("data", [
    b"",
    b'{"role":"user","content":"no newline at the end"}',
    b'{"role":"user","content":"x"}\n{"tool":"ctxpack", not json\n',  # the input's own
], ids=["empty", "no final newline", "a broken line of its own"])
def test_nothing_to_restore_is_given_back_as_it_is(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_bytes(data)
    for args, piped in (((str(path),), None), (("-",), data)):
        run = ctxpack("restore", *args, input=piped)
        assert run.code == 0, run.err
        assert run.out.encode() == data
        assert "nothing to restore" in run.err
        assert ("<stdin>" if piped is not None else str(path)) in run.err
    assert ctxpack("restore", str(path), "--list").out == ""


# -- a compressed file from a stranger ------------------------------------------------------

def crafted_line(original: bytes, ref: dict | None = None, n: int = 1) -> bytes:
    """A line as compress writes one, whose inline archive holds `original` (its sha256 and
    size correct: whoever crafts a file can compute them), or whose archive is `ref`."""
    ref = ref or {"sha256": hashlib.sha256(original).hexdigest(), "bytes": len(original),
                  "inline": True, "encoding": "zlib+base64",
                  "data": base64.b64encode(zlib.compress(original, 9)).decode()}
    return orjson.dumps({"role": "tool", "tool_call_id": "call_1", "content": "[masked]",
                         "ctxpack": {"id": f"o-{n:010d}", "kind": "observations",
                                     "version": 1, "lines": 1, "archive": ref}}) + b"\n"


def bomb(tmp_path: Path) -> tuple[Path, int]:
    """Two nested inline archives of 30 MB of one byte: a 1 KB file, some 30,000 times
    that restored."""
    inner = crafted_line(b"\n" * 30_000_000, n=1)
    path = tmp_path / "bomb.jsonl"
    path.write_bytes(crafted_line(inner, n=2))
    return path, 30_000_000


def test_nested_archives_crafted_to_expand_stop_at_the_growth_limit(tmp_path: Path) -> None:
    path, size = bomb(tmp_path)
    assert path.stat().st_size * 2000 < size
    out = tmp_path / "out.jsonl"
    run = ctxpack("restore", str(path), "-o", str(out))
    assert_clean_error(run, 2, "more than 2,000 times", "--max-growth")
    assert not out.exists() and list(tmp_path.iterdir()) == [path]
    with pytest.raises(Exception, match="more than 2,000 times"):
        restore(path)
    trusted = ctxpack("restore", str(path), "-o", str(out), "--max-growth", "100000")
    assert trusted.code == 0, trusted.err
    assert out.stat().st_size == size


@pytest.mark.parametrize("name", ["/dev/zero", "../../../../dev/zero", "0" * 63 + "/"])
def test_an_archive_reference_is_a_content_address_and_nothing_else(tmp_path: Path,
                                                                     name: str) -> None:
    ref = {"sha256": name, "bytes": 10, "inline": False, "dir": str(tmp_path)}
    path = tmp_path / "odd.jsonl"
    path.write_bytes(crafted_line(b"", ref))
    run = ctxpack("restore", str(path), "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, "archive is damaged")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "link", "longer"])
def test_only_a_regular_file_of_the_recorded_size_is_read_from_the_folder(
        tmp_path: Path, kind: str) -> None:
    original = b"the original line\n"
    sha = hashlib.sha256(original).hexdigest()
    blob = archive.blob_path(tmp_path / "arch", sha)
    blob.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(blob)  # opening it to read would wait for a writer for ever
    elif kind == "link":
        blob.symlink_to("/dev/zero")
    else:
        blob.write_bytes(original + b"and more the record does not know of\n")
    ref = {"sha256": sha, "bytes": len(original), "inline": False, "dir": str(tmp_path / "arch")}
    path = tmp_path / "stored.jsonl"
    path.write_bytes(crafted_line(b"", ref))
    start = time.monotonic()
    run = ctxpack("restore", str(path), "-o", str(tmp_path / "out.jsonl"))
    fragment = {"fifo": "not a file", "link": "is a link", "longer": "more than the 18 bytes"}
    assert_clean_error(run, 2, fragment[kind])
    assert time.monotonic() - start < 60 and not (tmp_path / "out.jsonl").exists()


def test_an_inline_archive_longer_than_it_records_is_refused(tmp_path: Path) -> None:
    original = b"x" * 1000
    ref = {"sha256": hashlib.sha256(original).hexdigest(), "bytes": 10, "inline": True,
           "encoding": "zlib+base64", "data": base64.b64encode(zlib.compress(original)).decode()}
    path = tmp_path / "long.jsonl"
    path.write_bytes(crafted_line(b"", ref))
    with pytest.raises(Exception, match="more than the 10 bytes it records"):
        restore(path)


def test_restore_streams_to_a_file_without_returning_it(tmp_path: Path) -> None:
    compressed = tmp_path / "c.jsonl"
    compressed.write_bytes(compress_file(CHAT, Options(budget=fitted(CHAT) // 2)).data)
    out = tmp_path / "restored.jsonl"
    assert restore_fn(compressed, output=out) is None
    assert out.read_bytes() == CHAT.read_bytes()
    with open(tmp_path / "again.jsonl", "wb") as f:
        restore_fn(compressed, output=f)
    assert (tmp_path / "again.jsonl").read_bytes() == CHAT.read_bytes()
    bad, _ = bomb(tmp_path)
    with pytest.raises(Exception, match="growth|times"):
        restore_fn(bad, output=tmp_path / "never.jsonl")
    assert not (tmp_path / "never.jsonl").exists()


def test_listing_odd_metadata_lists_what_it_can(tmp_path: Path) -> None:
    ref = {"sha256": "0" * 64, "bytes": "lots", "inline": True, "data": ""}
    line = orjson.loads(crafted_line(b"", ref))
    line["ctxpack"]["items"] = [1, {"action": "masked"}]
    path = tmp_path / "odd.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    run = ctxpack("restore", "--list", str(path))
    assert run.code == 0, run.err
    assert run.out.split("\t")[0] == "o-0000000001" and "? bytes inline" in run.out


def test_names_from_a_crafted_file_reach_the_terminal_as_text(tmp_path: Path) -> None:
    ref = {"sha256": "0" * 64, "bytes": 5, "inline": True, "data": "",
           "dir": "\x1b]0;pwned\x07"}
    line = orjson.loads(crafted_line(b"", ref))
    line["ctxpack"]["id"] = "o-\x1b[2Jgone"
    path = tmp_path / "odd.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    listed = ctxpack("restore", "--list", str(path))
    assert listed.code == 0, listed.err
    assert "\x1b" not in listed.out and "o-\\x1b[2Jgone" in listed.out
    run = ctxpack("restore", str(path), "-o", str(tmp_path / "back.jsonl"))
    assert run.code == 2 and "\x1b" not in run.err and "\x07" not in run.err


@pytest.mark.parametrize("growth", [0, -1, 1.5])
def test_a_growth_limit_below_one_is_refused(compressed: Path, growth: object) -> None:
    with pytest.raises(UsageError, match="max_growth must be a whole number, 1 or more"):
        restore(compressed, max_growth=growth)  # type: ignore[arg-type]
