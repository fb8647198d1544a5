"""Work compress does ahead, beside its plan: the summary's facts in the counting's worker
processes, then the archive's hash and streams there too (or on a thread where there are
no workers), and no garbage collection meanwhile. Whatever runs ahead, the output must be
what a plain run writes."""

from __future__ import annotations

import gc
import importlib
import io
import tempfile
import threading
import zlib
from pathlib import Path

import pytest

from ctxpack import archive, bulk
from ctxpack.breakdown import stats
from ctxpack.compression import compress_file
from ctxpack.compression.facts import extract
from ctxpack.compression.settings import Options
from ctxpack.compression.summarizers import Unit
from ctxpack.errors import InputError
from ctxpack.jsonl import LineIndex
from ctxpack.undo import restore

from .conftest import SAMPLES

ahead = importlib.import_module("ctxpack.compression.ahead")
steps = importlib.import_module("ctxpack.compression.summarizers._steps")
scan_module = importlib.import_module("ctxpack.compression.scan")

PATH = SAMPLES / "coding-agent.claude-code.jsonl"


@pytest.fixture
def workers(exact_tokens, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two worker processes count even a small file, and find its facts in small tasks
    (there are workers only where tokens are counted exactly)."""
    monkeypatch.setenv("CTXPACK_WORKERS", "2")
    monkeypatch.setitem(bulk.PARALLEL_MIN_CHARS, "fork", 0)
    monkeypatch.setitem(bulk.PARALLEL_MIN_CHARS, "spawn", 0)
    monkeypatch.setattr(ahead, "MIN_CHARS", 0)
    monkeypatch.setattr(ahead, "TASK_CHARS", 4 << 10)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")  # outputs compare byte for byte


def plain_run(budget: int, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """The output with every fact found in this process."""
    with monkeypatch.context() as m:
        m.setattr(ahead, "MIN_CHARS", 1 << 62)
        steps._facts.clear()
        return compress_file(PATH, Options(budget=budget), cache=False).data


def collected(monkeypatch: pytest.MonkeyPatch) -> list:
    """The units whose facts FactsAhead hands in, filled as it collects them: those it
    remembered then (before the summary, which finds no others first)."""
    seen: list = []
    collect = ahead.FactsAhead.collect

    def spy(self, *args):
        units = [u for units, _ in self.tasks for u in units]
        collect(self, *args)
        seen.extend(u for u in units if u in steps._facts)

    monkeypatch.setattr(ahead.FactsAhead, "collect", spy)
    return seen


@pytest.mark.parametrize("counted", ["by workers", "here"])
def test_facts_found_by_the_workers_make_the_same_summary(counted, workers, monkeypatch) -> None:
    """The workers that counted the tokens find the facts; when the tokens were counted
    here (or found in the cache), workers are forked for them."""
    if counted == "here":
        monkeypatch.setitem(bulk.PARALLEL_MIN_CHARS, "fork", 1 << 62)
        monkeypatch.setitem(bulk.PARALLEL_MIN_CHARS, "spawn", 1 << 62)
    budget = stats(PATH, cache=False).tokens // 3
    expected = plain_run(budget, monkeypatch)
    seen = collected(monkeypatch)
    steps._facts.clear()
    result = compress_file(PATH, Options(budget=budget), cache=False)
    assert result.report.summary is not None
    assert result.data == expected
    assert len(seen) >= 5  # the newest archived steps
    for unit in seen:  # what the workers sent back is what this process would find
        assert steps._facts[unit] == extract(steps.source_text(unit))
    assert restore(result.lines) == PATH.read_bytes()


@pytest.mark.parametrize(("done", "piped"), [("by the workers", False), ("here", False),
                                             ("by the workers", True)])
def test_the_archive_of_a_span_the_workers_made_restores_the_same(done, piped, workers,
                                                                   monkeypatch) -> None:
    """Once the facts are in, a worker hashes the span the summary is likely to archive,
    and the workers compress its blocks; the archive names that sha256 (restore checks
    it) and holds those streams, or ones made here if the workers could not read the
    file. Piped input is read from a spooled copy, which the workers read too."""
    compress_module = importlib.import_module("ctxpack.compression")
    monkeypatch.setattr(compress_module, "PREPACK_BYTES", 0)  # the streams come ahead too
    monkeypatch.setattr(archive, "BLOCK", 1 << 10)
    expected = compress_file(PATH, Options(budget=stats(PATH, cache=False).tokens // 3),
                             cache=False).data if done == "here" else None
    if done == "here":  # the forked workers see these too
        monkeypatch.setattr(ahead, "read_exactly", _fail)
        monkeypatch.setattr(archive, "pack_block", _fail)
    packed: list = []
    submit = archive.Prepack.submit

    def watch(self, pool, span):
        submit(self, pool, span)
        packed.append(self)

    monkeypatch.setattr(archive.Prepack, "submit", watch)
    given: list = []
    pack_stream = archive.Archiver.pack_stream

    def spy(self, chunks, squeezed=None, digest=None):
        given.append(digest)
        return pack_stream(self, chunks, squeezed, digest)

    monkeypatch.setattr(archive.Archiver, "pack_stream", spy)
    budget = stats(PATH, cache=False).tokens // 3
    source = io.BytesIO(PATH.read_bytes()) if piped else PATH
    result = compress_file(source, Options(budget=budget), cache=False)
    assert result.report.summary is not None
    data = result.data
    assert restore(result.lines) == PATH.read_bytes()  # each archive matches its sha256
    assert (given[0] is not None) is (done == "by the workers")  # the summary's comes first
    (prepack,) = packed
    made = [f for f in prepack.done.values() if not f.cancelled() and f.exception() is None]
    assert bool(made) is (done == "by the workers")
    if expected is not None:  # made here, the archive is the same
        assert data.split(b'"ctxpack-data-')[0] == expected.split(b'"ctxpack-data-')[0]


def test_a_worker_hashes_only_the_file_it_was_forked_with(tmp_path: Path) -> None:
    """A worker that was spawned, not forked, may have another file at that descriptor."""
    import hashlib
    import os

    path, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    path.write_bytes(b"0123456789" * 10)
    other.write_bytes(b"x" * 100)
    with open(path, "rb") as f, open(other, "rb") as g:
        identity = archive.file_identity(os.fstat(f.fileno()))
        assert ahead._sha256(f.fileno(), identity, 5, 95) == (
            hashlib.sha256(path.read_bytes()[5:95]).hexdigest(), 90)
        with pytest.raises(OSError):
            ahead._sha256(g.fileno(), identity, 5, 95)
        with pytest.raises(OSError):  # the file is shorter than the span
            ahead._sha256(f.fileno(), identity, 5, 200)
        # the archive's blocks go the same way, into the spool it was forked with
        with tempfile.TemporaryFile() as spool:
            out = (spool.fileno(), archive.file_identity(os.fstat(spool.fileno())))
            n = archive.pack_block(f.fileno(), identity, *out, 5, 95, 100, 200)
            assert zlib.decompress(os.pread(spool.fileno(), n, 100)) == path.read_bytes()[5:95]
            with pytest.raises(OSError):
                archive.pack_block(f.fileno(), identity, g.fileno(), out[1], 5, 95, 0, 200)
            with pytest.raises(OSError):  # no room for it
                archive.pack_block(f.fileno(), identity, *out, 5, 95, 0, 8)


def test_workers_that_fail_leave_the_facts_to_this_process(workers, monkeypatch) -> None:
    budget = stats(PATH, cache=False).tokens // 3
    expected = plain_run(budget, monkeypatch)
    seen = collected(monkeypatch)
    monkeypatch.setattr(ahead, "_extract_all", _fail)  # the forked workers see it too
    steps._facts.clear()
    result = compress_file(PATH, Options(budget=budget), cache=False)
    assert result.data == expected
    # none came from a worker: only those taken back before a worker began them
    for unit in seen:
        assert steps._facts[unit] == extract(steps.source_text(unit))


def _fail(*args) -> list:
    raise RuntimeError("a worker that breaks")


def test_collect_takes_back_the_tasks_no_worker_began() -> None:
    """While the one worker is held up, collect finds the facts of the waiting tasks
    itself instead of waiting for it."""
    from concurrent.futures import ThreadPoolExecutor

    units = [Unit("assistant", f"edit src/mod_{n}.py: KeyError at line {n}00") for n in range(6)]
    release = threading.Event()
    pool = ThreadPoolExecutor(1)
    pool.submit(release.wait, 30)  # the worker is busy with something else
    tasks = [([u], pool.submit(_fail, [])) for u in units]
    found = ahead.FactsAhead(pool, tasks)
    steps._facts.clear()
    try:
        found.collect()
        assert not release.is_set()  # it did not wait for the worker
    finally:
        release.set()
    assert all(future.cancelled() for _, future in tasks) and not found.tasks
    for unit in units:
        assert steps._facts[unit] == extract(steps.source_text(unit))


def test_a_plan_that_needs_no_summary_lets_the_workers_go(workers, monkeypatch) -> None:
    """Over the trigger as read, under it once masked: the facts are never collected."""
    started: list = []
    start = ahead.FactsAhead.start.__func__

    def spy(cls, work, pool):
        found = start(cls, work, pool)
        started.append(found)
        return found

    monkeypatch.setattr(ahead.FactsAhead, "start", classmethod(spy))
    tokens = stats(PATH, cache=False).tokens
    result = compress_file(PATH, Options(budget=tokens - 1, threshold=0.5), cache=False)
    assert result.report.summary is None and result.report.masked
    (found,) = started
    assert found is not None and found.workers is None and not found.tasks


@pytest.mark.parametrize("enabled", [True, False])
def test_compress_rests_the_garbage_collector_and_sets_it_back(enabled, monkeypatch) -> None:
    during: list[bool] = []
    scan = scan_module.scan

    def spy(*args, **kwargs):
        during.append(gc.isenabled())
        return scan(*args, **kwargs)

    monkeypatch.setattr(scan_module, "scan", spy)
    (gc.enable if enabled else gc.disable)()
    try:
        compress_file(PATH, Options(budget=stats(PATH, cache=False).tokens // 2), cache=False)
        assert during == [False] and gc.isenabled() is enabled
        with pytest.raises(InputError):  # an error sets it back too
            compress_file(io.BytesIO(b'{"role": "user", "content": "hi"}\n{oops\n'))
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


@pytest.mark.parametrize("turn", ["never", "on a thread", "by workers", "taken back"])
def test_an_archive_compressed_ahead_holds_the_same_bytes(turn, tmp_path: Path) -> None:
    """However much was compressed ahead, and where, the span's streams hold its bytes:
    blocks a worker has not begun when they are asked for are compressed then."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    data = PATH.read_bytes()
    lo = 3
    release = threading.Event()
    spool = tempfile.TemporaryFile()  # before the workers fork, as compress makes it
    with open(PATH, "rb") as stream, (
            ThreadPoolExecutor(1) if turn == "taken back"
            else ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))) as pool:
        index = LineIndex(stream)
        for line in data.splitlines(keepends=True):
            index.add(len(line))
        hi = len(index) - 2
        original = archive.BLOCK
        archive.BLOCK = 1 << 10
        try:
            prepack = archive.Prepack(index, spool)
        finally:
            archive.BLOCK = original
        if turn == "on a thread":
            prepack.start()
            for future in prepack.done.values():  # every block, done before it is asked for
                future.result(timeout=30)
        elif turn != "never":
            if turn == "taken back":
                pool.submit(release.wait, 30)  # the one worker is busy meanwhile
            prepack.submit(pool, (lo, hi))
        try:
            got = b"".join(archive.inflate_pieces(prepack.streams(lo, hi)))
            futures = list(prepack.done.values())
        finally:
            release.set()
            prepack.close()
        assert spool.closed and prepack.thread is None  # the streams made go with it
    assert got == b"".join(data.splitlines(keepends=True)[lo:hi])
    if turn in ("on a thread", "by workers"):
        assert futures and all(f.result() > 0 for f in futures)
    if turn == "taken back":  # none was begun: all were made when asked for
        assert len(futures) > 3 and all(f.cancelled() for f in futures)


def test_without_isal_the_archive_is_made_by_the_standard_zlib(tmp_path: Path) -> None:
    """ISA-L has no wheel for some platforms: the same zlib streams come from the standard
    library then, and either reads the other's."""
    import subprocess
    import sys

    out = tmp_path / "out.jsonl"
    code = (
        "import sys, zlib; sys.modules['isal'] = None\n"  # as if it were not installed
        "from ctxpack import archive\n"
        "assert archive.deflate is zlib.compress\n"
        "from ctxpack.compression import compress_file\n"
        "from ctxpack.compression.settings import Options\n"
        f"data = compress_file({str(PATH)!r}, Options(budget={budget_of(PATH)})).data\n"
        f"open({str(out)!r}, 'wb').write(data)\n"
        "from ctxpack.undo import restore\n"  # read back with the standard zlib too
        f"assert restore({str(out)!r}) == open({str(PATH)!r}, 'rb').read()\n"
        "assert archive.decompressobj is zlib.decompressobj\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert restore(out.read_bytes().splitlines(keepends=True)) == PATH.read_bytes()


def budget_of(path: Path) -> int:
    return stats(path, cache=False).tokens // 2

