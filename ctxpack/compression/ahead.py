"""Finding the summary's facts on other cores while the rest of the plan is made.

On a long transcript much of the planning goes to one thing: the facts (paths,
identifiers, error lines...) of the newest archived steps, which the summary shows
and its retention audit counts. Which steps those are is known, near enough, as soon
as the file is read, from the counts as read: `FactsAhead` has the worker processes
that counted the tokens extract their facts while this process truncates and masks,
and the summary finds them ready. A guess that misses costs only the workers' time:
facts they did not find are extracted here, as they would have been.

Once the facts are in, the workers are idle while this process writes the summary:
one of them hashes the span the summary is likely to archive, for the archive's
sha256, and then they compress it for the archive (see `archive.Prepack`). They read
the file through the descriptor they were forked with; where they cannot, or the span
turns out other, the span is hashed and compressed here, as it would have been.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..archive import Prepack, check_open, file_identity, read_exactly, sha256_of
from ..bulk import worker_count
from ..jsonl import LineIndex
from .facts import Facts, extract
from .history import likely_whole
from .pipeline import Work, trigger
from .summarizers import Unit
from .summarizers._steps import remember, source_text, unit_facts

MIN_CHARS = 1 << 20  # of text to read: below this, extracting it here costs little
TASK_CHARS = 256 << 10  # text per task: a plan that needs no summary waits at most one
NICE = 19  # the workers' niceness while they extract: the lowest priority
READ = 16 << 20  # bytes a worker reads at a time to hash a span


class FactsAhead:
    """Facts of units being extracted by worker processes (a ProcessPoolExecutor)."""

    def __init__(self, workers: Any, tasks: list[tuple[Sequence[Unit], Any]],
                 records: LineIndex | None = None) -> None:
        self.workers = workers
        self.tasks = tasks  # (units, future of their facts)
        self.records = records  # the file's lines, which the workers can read too
        self.span: tuple[tuple[int, int], Any] | None = None  # (lines, future of the digest)
        self.prepack: Prepack | None = None  # compresses the span next, when there is one

    @classmethod
    def start(cls, work: Work, workers: Any) -> FactsAhead | None:
        """Start on the units a summary of `work` would read whole, when one is likely
        and they are big; the workers are its to shut down (at once, if it does not start)."""
        units = _likely_whole(work)
        texts = [source_text(u) for u in units]
        if sum(map(len, texts)) < MIN_CHARS:
            if workers is not None:
                workers.shutdown(wait=False)
            return None
        workers = workers or _forked_workers()  # none were needed to count (a warm cache)
        if workers is None:
            return None
        tasks = []
        for lo, hi in _runs([len(t) for t in texts], TASK_CHARS):
            try:
                tasks.append((units[lo:hi], workers.submit(_extract_all, texts[lo:hi])))
            except Exception:  # noqa: BLE001 - a pool that broke: the facts are found here
                break
        records = work.transcript.records
        return cls(workers, tasks, records if isinstance(records, LineIndex) else None)

    def digest(self, lo: int, hi: int) -> tuple[str, int] | None:
        """The sha256 and size of lines lo+1 .. hi (0-based [lo, hi)) if a worker hashed
        that span; None if it hashed another, or could not."""
        if self.span is None or self.span[0] != (lo, hi):
            return None
        try:
            found: tuple[str, int] = self.span[1].result()
            return found
        except Exception:  # noqa: BLE001 - a worker died, or could not read the file
            return None

    def collect(self, span: tuple[int, int] | None = None) -> None:
        """Wait for the facts and remember them for the summarizers (once). Tasks not
        begun yet are taken back, newest first, and done here while the workers finish
        the older ones: this process would only wait otherwise. Then a worker hashes
        `span`, the lines [lo, hi) the summary is likely to archive, while this process
        writes the summary."""
        while self.tasks and self.tasks[-1][1].cancel():
            for unit in self.tasks.pop()[0]:
                unit_facts(unit)
        for units, future in self.tasks:
            try:
                found = future.result()
            except Exception:  # noqa: BLE001 - a worker died: these are found here instead
                continue
            for unit, facts in zip(units, found, strict=True):
                remember(unit, facts)
        if span is not None and self.records is not None and self.workers is not None:
            try:
                fd = self.records.fileno()
                self.span = span, self.workers.submit(_sha256, fd, file_identity(os.fstat(fd)),
                                                      *self.records.offsets(*span))
            except Exception:  # noqa: BLE001 - a pool that broke: it is hashed here
                pass
            if self.prepack is not None:
                self.prepack.submit(self.workers, span)
        self.close()

    def close(self) -> None:
        """Let the workers go once they are done; tasks not begun are dropped (a plan
        without a summary), but for the span's hash."""
        self.tasks = []
        if self.workers is not None:
            self.workers.shutdown(wait=False, cancel_futures=self.span is None)
            self.workers = None


def _likely_whole(work: Work) -> tuple[Unit, ...]:
    """Units of a summary that is likely: none when the transcript is under its trigger."""
    if not (work.options.summarize and work.total > trigger(work)):
        return ()
    return likely_whole(work)


def _forked_workers() -> Any:
    """Worker processes forked now, where forking is the way to start them and there are
    cores for them (elsewhere each would import everything again first)."""
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    if sys.platform != "linux" or worker_count() < 2 \
            or multiprocessing.current_process().daemon:
        return None
    return ProcessPoolExecutor(worker_count(), mp_context=multiprocessing.get_context("fork"))


def _runs(sizes: list[int], most: int) -> list[tuple[int, int]]:
    """[lo, hi) runs of the items, each of about `most` in size (or one bigger item)."""
    out = []
    lo = total = 0
    for n, size in enumerate(sizes):
        total += size
        if total >= most:
            out.append((lo, n + 1))
            lo, total = n + 1, 0
    if lo < len(sizes):
        out.append((lo, len(sizes)))
    return out


def _sha256(fd: int, identity: tuple[int, int], start: int, end: int) -> tuple[str, int]:
    """The sha256 and size of bytes start .. end of the file open as `fd`, which must be
    the file `identity` names (in a worker that was not forked, it is another or none)."""
    check_open(fd, identity)
    return sha256_of(read_exactly(fd, at, min(at + READ, end)) for at in range(start, end, READ))


def _extract_all(texts: list[str]) -> list[Facts]:
    if hasattr(os, "nice"):
        # the parent's planning comes first: this takes the cores it leaves idle
        os.nice(NICE - os.nice(0))
    return [extract(t) for t in texts]
