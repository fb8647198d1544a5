"""reading.py, what compress reads: a file as `compress_file` reads it (streamed, kept
open) and a loaded transcript as `ctxpack.compress` takes it give the same Input, so the
command line and the library plan alike; `originals` gives messages back whole. (A file
rewritten while it is compressed: tests/test_cli_compress.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.compression.reading import read
from ctxpack.models import TABLE

from ..conftest import SAMPLES
from .transcripts import plan_of

LINES = sorted(SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("path", LINES, ids=lambda p: p.name)
def test_a_file_and_its_loaded_transcript_are_read_alike(path: Path) -> None:
    opened = read(path, None, model=None, table=TABLE, cache=False)
    try:
        streamed = opened.input
        loaded = plan_of(path).read
        assert streamed.counter.model == loaded.counter.model
        assert streamed.counts == loaded.counts and streamed.total == loaded.total
        assert streamed.outputs == loaded.outputs
        assert (streamed.cuts, streamed.head) == (loaded.cuts, loaded.head)
        assert [m.line for m in streamed.messages] == [m.line for m in loaded.messages]
        everything = range(len(streamed.messages))
        assert streamed.originals(everything) == loaded.originals(everything)
    finally:
        opened.close()

