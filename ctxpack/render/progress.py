"""A progress bar on stderr while stats reads many files or a big one, on a terminal only.

Entering gives `advance(path)`, which returns the byte-progress callback the
library's readers call for that file.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn


class FileProgress:
    """A progress bar on stderr for many files or a big one, only on a terminal."""

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
