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



def test_outputs_set_aside_while_reading_give_the_same_compress(tmp_path: Path) -> None:
    """A big file's older outputs are set aside as it is read and read again if a stage
    needs them: with a hold small enough that most are, the plan and the output are
    those of a read that kept everything."""
    from ctxpack.archive import Archiver
    from ctxpack.compression.pipeline import run
    from ctxpack.compression.settings import Options
    from ctxpack.compression.writer import output

    from .transcripts import agent_run, fitted

    path = tmp_path / "run.jsonl"
    path.write_bytes(agent_run(40))
    options = Options(budget=fitted(path) // 2, keep_steps=6, keep_observations=12)
    made = []
    for hold in (64 << 20, 2_000):
        opened = read(path, None, model=None, table=TABLE, cache=False, hold=hold)
        try:
            given = opened.input
            whole = sum(bool(r.parts) for m in given.messages for r in m.tool_results)
            plan = run(given, options)
            made.append((whole, plan.total, b"".join(output([plan], Archiver(), "now"))))
        finally:
            opened.close()
    (all_kept, total, data), (few_kept, total_aside, data_aside) = made
    assert few_kept < all_kept // 4  # most outputs were set aside
    assert (total_aside, data_aside) == (total, data)
