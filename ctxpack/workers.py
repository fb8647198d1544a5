"""Worker processes and threads: the one place that knows how ctxpack uses more than one
core.

A run opens `with Workers() as workers:` once. The pool of processes starts on first use
(forked where that is the way, so that each starts in milliseconds with what this process
has loaded), is shared by whoever needs it in that run, and is shut down when the block
ends, or at once if it breaks. Work that lets go of the GIL (zlib) runs on threads
instead (`on_threads`). Everything else gets plain functions from here and never learns
whether its work ran in a worker, on a thread or in this process.
"""

from __future__ import annotations

import gc
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Work, in characters of text, before worker processes pay off: forked workers share what
# this process loaded and start in milliseconds; spawned ones import and load it all again
# (about 0.5 s of CPU each).
WORTH_CHARS = {"fork": 2 << 20, "spawn": 32 << 20}
NICE = 19  # a task run `nicely` takes only the cores this process leaves idle
PARENT_WATCH = 0.5  # seconds between a worker's looks at whether its parent still lives
BROKEN_WAIT = 2.0  # seconds a broken pool is given to end itself before it is helped to


def worker_count() -> int:
    """Cores to work on: $CTXPACK_WORKERS, else the CPUs this process may use."""
    env = os.environ.get("CTXPACK_WORKERS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            from .errors import UsageError

            raise UsageError(f"CTXPACK_WORKERS must be a whole number, 1 or more, not {env!r}",
                             "1 keeps all the work in one process")
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Workers:
    """The worker processes of one run: started when first needed, stopped once."""

    def __init__(self, count: int | None = None, apart: bool = False) -> None:
        """`apart`: a pool even of one process, for work that might take this process
        down with it (one worker gains no speed, but a crash is then the worker's)."""
        self.count = worker_count() if count is None else count
        self.apart = apart
        self.method = "fork" if sys.platform == "linux" else "spawn"
        self._pool: Any = None
        self._broken = False

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def worth(self, chars: int) -> bool:
        """Would work on `chars` characters of text pay for starting the workers?"""
        if self._pool is not None:
            return True
        return self._may_start() and chars >= WORTH_CHARS[self.method]

    def quick(self) -> bool:
        """Can work be sent without a costly start: a pool running, or one forked?"""
        return self._pool is not None or (self.method == "fork" and self._may_start())

    def submit(self, fn: Callable[..., R], *args: Any) -> Any:
        """A future of `fn(*args)` run by a worker, or None when there is no pool to run it
        (the caller then does the work itself). `fn` must be importable by name."""
        if self._pool is None and not self._start():
            return None
        try:
            return self._pool.submit(fn, *args)
        except Exception:  # noqa: BLE001 - a pool that broke, or could not start
            self.broke()
            return None

    def broke(self) -> None:
        """Give up on the pool (a task's future raised: a worker died); nothing more is
        sent to it, and the caller does the rest of the work itself."""
        self._broken = True
        self._stop(broken=True)

    def ahead(self, fn: Callable[[list[T]], list[R]]) -> Ahead[T, R]:
        """`fn`'s results, some of which these workers may find ahead (see `Ahead.start`)."""
        return Ahead(fn, self)

    def close(self) -> None:
        """Stop the workers: tasks not begun are dropped, those begun are let finish."""
        self._stop()

    def _may_start(self) -> bool:
        import multiprocessing

        # a daemon process (a pool's worker, say) may not have children
        return (self.count >= 2 or self.apart) and not self._broken \
            and not multiprocessing.current_process().daemon

    def _start(self) -> bool:
        if not self._may_start():
            return False
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(self.count,
                                         mp_context=multiprocessing.get_context(self.method),
                                         initializer=_worker_start, initargs=(os.getpid(),))
        return True

    def _stop(self, broken: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if broken:
            # The executor's own thread ends a broken pool, closing its queue's read end
            # (closing it here too at that moment is an error in that thread, printed);
            # Python 3.10's instead waits for good on its queue feeder, blocked writing
            # tasks nobody will read: closing the read end then lets it fail
            manager = getattr(pool, "_executor_manager_thread", None)
            if manager is not None:
                manager.join(BROKEN_WAIT)
            reader = getattr(getattr(pool, "_call_queue", None), "_reader", None)
            if reader is not None and not reader.closed:
                try:
                    reader.close()
                except OSError:  # the executor's own thread was closing it at that moment
                    pass
        pool.shutdown(wait=not broken, cancel_futures=True)


class Ahead(Generic[T, R]):
    """Results of `fn` on items, some of them worked out ahead by worker processes."""

    def __init__(self, fn: Callable[[list[T]], list[R]], workers: Workers | None = None) -> None:
        self.fn = fn
        self._workers = workers
        self._tasks: list[tuple[Sequence[T], Any]] = []
        self._found: dict[T, R] = {}

    def start(self, items: Sequence[T], size: Callable[[T], int], task: int,
              least: int) -> None:
        """Have the workers work on `items`, in tasks of about `task` in `size`, when they
        add up to `least` and the workers start cheaply (forked, or running already)."""
        workers = self._workers
        sizes = [size(x) for x in items]
        if workers is None or sum(sizes) < least or not workers.quick():
            return
        for lo, hi in _runs(sizes, task):
            future = workers.submit(_nicely, self.fn, list(items[lo:hi]))
            if future is None:
                break
            self._tasks.append((items[lo:hi], future))

    def __call__(self, items: Sequence[T]) -> list[R]:
        """`fn`'s results for `items`, in order: from the workers if they have them."""
        self._collect()
        missing = [x for x in dict.fromkeys(items) if x not in self._found]
        if missing:
            self._found.update(zip(missing, self.fn(missing), strict=True))
        return [self._found[x] for x in items]

    def _collect(self) -> None:
        """Take in the workers' results (once). Tasks not begun yet are taken back, newest
        first, and done here while the workers finish the older ones: this process
        would only wait for them otherwise."""
        tasks, self._tasks = self._tasks, []
        while tasks and tasks[-1][1].cancel():
            mine = list(tasks.pop()[0])
            self._found.update(zip(mine, self.fn(mine), strict=True))
        for items, future in tasks:
            try:
                found = future.result()
            except Exception:  # noqa: BLE001 - a worker died: these are done here instead
                if self._workers is not None:
                    self._workers.broke()
                continue
            self._found.update(zip(items, found, strict=True))


def on_threads(fn: Callable[[T], R], items: Iterable[T], most: int = 4) -> Iterator[R]:
    """`fn` of each item, in order, run on up to `most` threads, one a core (see
    `worker_count`): for work that lets go of the GIL (zlib does). Few items are in
    flight at a time, so a stream of big ones never has to be held whole."""
    width = max(1, min(most, worker_count()))
    if width == 1:
        yield from map(fn, items)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(width) as pool:
        flying: deque[Any] = deque()
        for item in items:
            if len(flying) >= 2 * width:
                yield flying.popleft().result()
            flying.append(pool.submit(fn, item))
        while flying:
            yield flying.popleft().result()


def in_order(fn: Callable[..., R], calls: Iterable[tuple[Any, ...]],
             workers: Workers) -> Iterator[R]:
    """`fn(*args)` of each call, in order, a few calls ahead in the workers where there are
    two cores or more. The first call is made here, so that what every call would fail on
    is raised as it is; a call that fails in a worker is made again here."""
    flying: deque[tuple[tuple[Any, ...], Any]] = deque()
    calls = iter(calls)
    first = next(calls, None)
    if first is None:
        return
    yield fn(*first)
    for args in calls:
        future = workers.submit(fn, *args) if workers.count > 1 else None
        if future is None:
            while flying:
                yield _result(fn, *flying.popleft())
            yield fn(*args)
            continue
        flying.append((args, future))
        if len(flying) > 2 * workers.count:
            yield _result(fn, *flying.popleft())
    while flying:
        yield _result(fn, *flying.popleft())


def _result(fn: Callable[..., R], args: tuple[Any, ...], future: Any) -> R:
    try:
        return future.result()
    except Exception:  # noqa: BLE001 - a worker died, or its error did not travel: here
        return fn(*args)


def here(fn: Callable[[list[T]], list[R]]) -> Ahead[T, R]:
    """`fn`'s results, all worked out in this process (and remembered)."""
    return Ahead(fn)


class Remembered(Ahead[T, R]):
    """`fn`'s results, worked out in this process and remembered from one run to the next
    until the items remembered add up to `most` in `size` (it then starts afresh): for a
    process that compresses again and again (an agent loop), where the same texts come
    back."""

    def __init__(self, fn: Callable[[list[T]], list[R]], size: Callable[[T], int],
                 most: int) -> None:
        super().__init__(fn)
        self._size, self._most, self._held = size, most, 0

    def __call__(self, items: Sequence[T]) -> list[R]:
        new = [x for x in dict.fromkeys(items) if x not in self._found]
        self._held += sum(self._size(x) for x in new)
        if self._held > self._most:
            self._found.clear()
            self._held = sum(self._size(x) for x in dict.fromkeys(items))
        return super().__call__(items)


def _runs(sizes: list[int], most: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) runs of the items, each of about `most` in size (or one bigger item)."""
    lo = total = 0
    for n, size in enumerate(sizes):
        total += size
        if total >= most:
            yield lo, n + 1
            lo, total = n + 1, 0
    if lo < len(sizes):
        yield lo, len(sizes)


def _worker_start(parent: int) -> None:
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    threading.Thread(target=_outlive_no_parent, args=(parent,), daemon=True,
                     name="ctxpack-parent-watch").start()


def _outlive_no_parent(parent: int) -> None:
    """End this worker once the process that started it is gone (killed, say, where it
    could not stop its pool): a worker left behind holds memory and its inputs open for
    good. A process whose parent ends is handed to another, so its parent's id changes."""
    import time

    while os.getppid() == parent:
        time.sleep(PARENT_WATCH)
    os._exit(1)


def _nicely(fn: Callable[[list[T]], list[R]], items: list[T]) -> list[R]:
    """`fn(items)` at the lowest priority: work done ahead must not slow what this run
    does meanwhile."""
    if hasattr(os, "nice"):
        os.nice(NICE - os.nice(0))
    return fn(items)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Compress makes millions of objects that live until its output is written and free
    no cycles: the cyclic garbage collector would walk them again and again (a second of
    a big file's planning, 0.2 s of its writing), so it rests meanwhile, and is then set
    back as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
