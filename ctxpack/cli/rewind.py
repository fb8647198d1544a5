"""`ctxpack rewind`: take the newest steps or rounds back out of a transcript (or of each
of many, through the runner compress uses), archived so that `ctxpack restore` brings
them back."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from ..errors import CtxpackError, UsageError
from ..render import counted
from .batch import many_inputs, not_in_place, single, the_one_input
from .common import ForceOpt, FormatOpt, InPlaceOpt, OutputOpt, SkipOpt, app, plain, stderr
from .guard import refuse_overwrites
from .write import (
    FilesArg,
    JobsOpt,
    ManyQuietOpt,
    ManyReportOpt,
    OutDirOpt,
    ShardOpt,
    SkipExistingOpt,
    _destination,
    _many,
    _say_kept,
    _write_result,
)


@dataclass(frozen=True)
class _RewindJob:
    """How every file of a many-file rewind is rewound."""

    steps: int | None
    rounds: int | None
    to: int | None
    to_round: int | None
    format: str | None
    skip_invalid: bool
    archive_dir: str | None
    in_place: bool
    force: bool

    def run(self, file: str) -> Any:
        from ..rewinding import rewind_file

        return rewind_file(file, steps=self.steps, rounds=self.rounds, to=self.to,
                           to_round=self.to_round, format=self.format,
                           skip_invalid=self.skip_invalid,
                           archive_dir=self.archive_dir)


def rewind_one(job: Any, how: _RewindJob, alone: bool) -> Any:
    """One file of a many-file rewind (run in a worker process when `alone`)."""
    from .batch import Outcome, failed

    try:
        if how.in_place:
            _destination(job.source, None, True, how.force)
        seen = os.stat(job.source) if how.in_place else None
        backup = _write_result(job.dest, job.source, how.run(job.source).chunks, seen)
        return Outcome(job.source, job.dest, "written", backup=backup)
    except (CtxpackError, OSError) as exc:
        return failed(job, exc)


@app.command()
def rewind(
    files: FilesArg,
    steps: Annotated[int | None, typer.Option(
        "--steps", "-n", metavar="N", min=1,
        help="Take out the newest N steps (a step: a model turn and its tool results).")]
    = None,
    rounds: Annotated[int | None, typer.Option(
        "--rounds", metavar="N", min=1,
        help="Take out the newest N rounds (from a person's message on).")] = None,
    to: Annotated[str | None, typer.Option(
        "--to", metavar="STEP|round:N",
        help="Keep the first STEP steps (or, with round:N, the first N rounds) and take "
             "out the rest.")]
    = None,
    output: OutputOpt = None,
    in_place: InPlaceOpt = False,
    force: ForceOpt = False,
    out_dir: OutDirOpt = None,
    jobs: JobsOpt = None,
    skip_existing: SkipExistingOpt = False,
    shard: ShardOpt = None,
    format: FormatOpt = None,
    archive_dir: Annotated[str | None, typer.Option(
        "--archive-dir", metavar="DIR",
        help="Keep what is taken out in this folder instead of inside the file.")] = None,
    skip_invalid: SkipOpt = False,
    report_json: ManyReportOpt = None,
    quiet: ManyQuietOpt = False,
) -> None:
    """Take the newest steps or rounds back out of a transcript (whole tool calls with
    their results); restore brings them back."""
    if sum(x is not None for x in (steps, rounds, to)) != 1:
        raise UsageError("rewind takes one of --steps, --rounds and --to")
    step, round_ = _point(to) if to is not None else (None, None)
    not_in_place(in_place, skip_existing, "a file rewound already would be rewound again: "
                 "give only the files not yet done")
    how = _RewindJob(steps, rounds, step, round_, format, skip_invalid, archive_dir,
                     in_place, force)
    file = the_one_input(files, out_dir)
    if file is None:
        if output is not None:
            raise many_inputs(files)
        raise typer.Exit(_many(files, out_dir, in_place, True, jobs, skip_existing, shard,
                               rewind_one, how, quiet, report_json,
                               also={"--archive-dir": archive_dir}))
    dest = _destination(file, output, in_place, force)
    refuse_overwrites(file, dest, in_place,
                       {"--report-json": report_json, "--archive-dir": archive_dir})
    if single(file, dest, skip_existing, shard, quiet, report_json):
        return
    seen = os.stat(file) if in_place else None
    done = how.run(file)
    _say_kept(_write_result(dest, file, done.chunks, seen))
    first, last = done.lines
    stderr().print(plain(
        f"{done.path}: {done.messages_before:,} → {counted(done.messages_after, 'message')} "
        f"({counted(done.steps, 'step')} out, "
        f"{f'line {first}' if first == last else f'lines {first}–{last}'}); `ctxpack "
        f"restore --only {done.id}` brings {'it' if done.steps == 1 else 'them'} back"),
        markup=False)


_POINT = re.compile(r"(?:(step|round):)?(\d+)")


def _point(to: str) -> tuple[int | None, int | None]:
    """`--to`: a step (`7`, `step:7`) or a round (`round:2`), as (step, round)."""
    found = _POINT.fullmatch(to.strip())
    if found is None:
        raise UsageError(f"--to takes a step number or round:N, not {to!r}",
                         "--to 7 keeps the first 7 steps, --to round:2 the first 2 rounds")
    n = int(found.group(2))
    return (None, n) if found.group(1) == "round" else (n, None)
