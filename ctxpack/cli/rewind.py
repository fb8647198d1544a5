"""`ctxpack rewind`: take the newest steps or rounds back out of a transcript, archived so
that `ctxpack restore` brings them back."""

from __future__ import annotations

import os
import re
from typing import Annotated

import typer

from ..errors import UsageError
from .common import ForceOpt, FormatOpt, InPlaceOpt, OutputOpt, SkipOpt, app, plain, stderr
from .write import _check_outputs, _destination, _say_kept, _write_result


@app.command()
def rewind(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A transcript, or - for stdin.")],
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
    format: FormatOpt = None,
    archive_dir: Annotated[str | None, typer.Option(
        "--archive-dir", metavar="DIR",
        help="Keep what is taken out in this folder instead of inside the file.")] = None,
    skip_invalid: SkipOpt = False,
) -> None:
    """Take the newest steps or rounds back out of a transcript (whole tool calls with
    their results); restore brings them back."""
    from ..rewinding import rewind_file

    if sum(x is not None for x in (steps, rounds, to)) != 1:
        raise UsageError("rewind takes one of --steps, --rounds and --to")
    step, round_ = _point(to) if to is not None else (None, None)
    dest = _destination(file, output, in_place, force)
    _check_outputs(dest, in_place, False, False, None)
    seen = os.stat(file) if in_place else None
    done = rewind_file(file, steps=steps, rounds=rounds, to=step, to_round=round_,
                       format=format, skip_invalid=skip_invalid, archive_dir=archive_dir)
    _say_kept(_write_result(dest, file, done.chunks, seen))
    first, last = done.lines
    stderr().print(plain(
        f"{done.path}: {done.messages_before} → {done.messages_after} messages "
        f"({done.steps} step(s) out, lines {first}–{last}); `ctxpack restore --only "
        f"{done.id}` brings them back"), markup=False)


_POINT = re.compile(r"(?:(step|round):)?(\d+)")


def _point(to: str) -> tuple[int | None, int | None]:
    """`--to`: a step (`7`, `step:7`) or a round (`round:2`), as (step, round)."""
    found = _POINT.fullmatch(to.strip())
    if found is None:
        raise UsageError(f"--to takes a step number or round:N, not {to!r}",
                         "--to 7 keeps the first 7 steps, --to round:2 the first 2 rounds")
    n = int(found.group(2))
    return (None, n) if found.group(1) == "round" else (n, None)
