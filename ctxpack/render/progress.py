"""Progress bars on stderr, on a terminal only: while stats reads many files or a big one
(`FileProgress`), and while many files are compressed or restored (`JobProgress`).

"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn


class FileProgress:
    """A progress bar on stderr for many files or a big one, only on a terminal.
    Entering gives `advance(path)`, which returns the byte-progress callback the
    library's readers call for that file."""

    BIG = 64 << 20

    def __init__(self, paths: list[str], console: Console) -> None:
        self.console = console
        sizes = [os.path.getsize(p) if p != "-" else 0 for p in paths]
        self.total = sum(sizes)
        self.enabled = console.is_terminal and (len(paths) > 3 or self.total > self.BIG)
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return lambda path: None
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                            console=self.console, transient=True)
        self.bar.start()
        task = self.bar.add_task("reading", total=self.total)
        done = [0]

        def advance(path: str) -> Any:
            start = done[0]
            size = os.path.getsize(path) if path != "-" else 0
            done[0] += size
            self.bar.update(task, description=os.path.basename(path))
            return lambda n: self.bar.update(task, completed=start + min(n, size))

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


class JobProgress:
    """A bar on stderr while many files are worked on, on a terminal only: files done
    of all, bytes, time left. Entering gives `advance(path)`, said as each is done."""

    def __init__(self, paths: list[str], console: Console) -> None:
        self.console = console
        self.sizes = {p: os.path.getsize(p) for p in paths}
        self.enabled = console.is_terminal and len(paths) > 1
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return lambda path: None
        self.bar = Progress(TextColumn("{task.completed:,.0f}/{task.total:,.0f} files"),
                            BarColumn(), TextColumn("{task.fields[done]}"),
                            TimeRemainingColumn(), console=self.console, transient=True)
        self.bar.start()
        task = self.bar.add_task("files", total=len(self.sizes), done="")
        total, done = sum(self.sizes.values()), [0]

        def advance(path: str) -> None:
            done[0] += self.sizes.get(path, 0)
            self.bar.update(task, advance=1,
                            done=f"{done[0] / 2**20:,.1f}/{total / 2**20:,.1f} MB")

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
