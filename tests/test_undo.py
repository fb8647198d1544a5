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
from ctxpack.undo import items, restore

from .compression.transcripts import fitted
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
    result = compress_file(RUN, Options(budget=fitted(RUN) * 3 // 4))
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
    ref = {"sha256": hashlib.sha256(b"original").hexdigest(), "inline": True,
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
