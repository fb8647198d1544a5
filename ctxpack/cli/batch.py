"""Many files in one run: compress or restore a folder, a glob or a list of files.

The inputs (see `read.Files`) become jobs, each writing below `--out-dir` at the path
its input has below what named it (or over itself, `--in-place`). Jobs run one process
each, `-j` at a time, and each process keeps its work to itself (one core); a single
job runs here, with the workers a big file uses. A file that fails is said in one line
and the others go on; the run ends with a table (or `--report-json`) of what became of
each, and the highest exit code of its failures.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import EXIT_USAGE, CtxpackError, UsageError
from .common import error, problem_of, stderr, warn
from .guard import Writes, same_file
from .read import Files

REPORT_VERSION = 1


@dataclass(frozen=True)
class Job:
    """One input and where its result goes."""

    source: str
    dest: str


@dataclass
class Outcome:
    """What became of a job: `status` is written, unchanged (written as it was read),
    skipped (its output is newer than it: `--skip-existing`), planned (`--dry-run`) or
    failed (`code` and `problem` say why)."""

    source: str
    dest: str
    status: str
    code: int = 0
    problem: str = ""
    tokens_before: int | None = None
    tokens_after: int | None = None
    warnings: tuple[str, ...] = ()  # said once for the run, however many files say it
    backup: str | None = None  # in place: where the original is kept
    rows: int | None = None  # a dataset's rows, and how many compress changed and failed
    rows_compressed: int | None = None
    rows_failed: int | None = None


def one_input(files: list[str], out_dir: str | None) -> bool:
    """Is this the one-input form (a file or stdin, its output -o, stdout or itself)?

    A single path that is neither a folder nor a pattern is one file even when it does
    not exist, so that the error says so rather than asking for --out-dir."""
    if len(files) != 1 or out_dir is not None:
        return False
    arg = files[0]
    return not os.path.isdir(arg) and (os.path.exists(arg) or not glob.has_magic(arg))


def the_one_input(files: list[str], out_dir: str | None, session: str | None = None
                  ) -> str | None:
    """The input of the one-input form, a folder that is one transcript (a Cline task, an
    OpenCode storage folder's session) as the file it stands for; None for many."""
    if len(files) == 1 and out_dir is None:
        from .read import one_file

        files = [one_file(files[0], session)]
    return files[0] if one_input(files, out_dir) else None


def many_inputs(files: list[str], flag: str = "-o") -> UsageError:
    """The error for `flag`, which takes one input, given many: how many there are, or
    the folder's (the pattern's) own line when it gives none."""
    from .read import expand

    if len(files) > 1:
        said = f"{len(files):,} are given"
    else:
        n = len(expand(files[0]))
        said = f"{files[0]} is a folder of {n:,} transcript{'s' * (n != 1)}" \
            if os.path.isdir(files[0]) else f"{files[0]} matches {n:,} file{'s' * (n != 1)}"
    return UsageError(f"{flag} takes one input, and {said}", "use --out-dir DIR for many")


def not_in_place(in_place: bool, skip_existing: bool, again: str) -> None:
    """Refuse --skip-existing with --in-place: each output is its input, never older than
    it, so every file would be skipped. `again` says what doing a file twice does."""
    if in_place and skip_existing:
        raise UsageError("--skip-existing skips a file whose output is newer than it, and "
                         "with --in-place each output is its input", again)


def single(source: str, dest: str, skip_existing: bool, shard: str | None, quiet: bool,
           report_json: str | None) -> bool:
    """The many-input flags in the one-input form of a transcript command: --shard is
    refused (one file has no share to take), and --skip-existing is as `skipped`."""
    if shard is not None:
        raise UsageError("--shard takes a share of many inputs (or of a dataset's row "
                         "groups)", "one transcript is done whole: drop --shard")
    return skipped(source, dest, skip_existing, quiet, report_json)


def skipped(source: str, dest: str, skip_existing: bool, quiet: bool,
            report_json: str | None) -> bool:
    """With --skip-existing, is one input's output up to date? It is then said (unless
    `quiet`) and reported as the many-input runner reports a file it skips."""
    if not skip_existing or dest == "-" or same_file(source, dest) \
            or not up_to_date(source, dest):
        return False
    if not quiet:
        from .common import plain

        stderr().print(plain(f"{dest} is newer than {source}: skipped"), markup=False,
                       highlight=False)
    if report_json is not None:
        write_report([Outcome(source, dest, "skipped")], report_json)
    return True


def jobs_of(inputs: Files, out_dir: str | None, in_place: bool, writes: bool,
            shard: tuple[int, int] | None, skip_existing: bool,
            suffix: str | None = None,
            also: dict[str, str | None] | None = None) -> tuple[list[Job], list[Job]]:
    """The jobs to run, and those skipped as up to date; refuses two inputs that would
    write one output, and an output that would be one of the inputs, or one of the
    files the options in `also` (name: path) name. (A run that `writes` nothing needs
    nowhere to write.) With `suffix`, each output's name ends in it instead of its
    input's extension (`convert --to markdown`: `.md`), and a hidden input's output is
    not hidden (`.aider.chat.history.md` becomes `aider.chat.history.md`: never the
    name of the agent's own log)."""
    if writes and out_dir is None and not in_place:
        # (a folder holding one file is many inputs too: it could hold more)
        raise UsageError("many inputs (a folder, a pattern or more than one file) are "
                         "written to --out-dir DIR (or --in-place)", "-o takes one file")
    if out_dir is not None and os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"--out-dir {out_dir}: is a file, not a folder")
    jobs: list[Job] = []
    for path in inputs.paths:
        if path == "-":
            raise UsageError("- (stdin) cannot be one of many inputs")
        below = inputs.below[path]
        if shard is not None and _share(below, shard[1]) != shard[0]:
            continue
        if out_dir is None or in_place:
            jobs.append(Job(path, path))
            continue
        dest = os.path.join(out_dir, below)
        jobs.append(Job(path, dest if suffix is None else _renamed(dest, suffix)))
    outputs = Writes(inputs.paths)
    for flag, path in (also or {}).items():
        outputs.output(path, flag)
    if writes:
        for job in jobs:
            outputs.output(job.dest, f"the output of {job.source}", source=job.source,
                           itself=in_place, hint="give --out-dir another folder")
    if not skip_existing:
        return jobs, []
    fresh = [j for j in jobs if up_to_date(j.source, j.dest)]
    return [j for j in jobs if j not in fresh], fresh


def _renamed(dest: str, suffix: str) -> str:
    folder, name = os.path.split(os.path.splitext(dest)[0] + suffix)
    return os.path.join(folder, name.lstrip("."))


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """`--shard i/N`: the i-th of N shares (i from 0 to N-1)."""
    if value is None:
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise UsageError(f"--shard {value!r}: give i/N, with i from 0 to N-1 (0/4 ... 3/4)")
    return int(index), int(count)


def run(jobs: list[Job], task: Callable[..., Outcome], args: Any, parallel: int) -> list[Outcome]:
    """Every job's outcome, in the jobs' order: `task(job, args, alone)` run `parallel`
    at a time in worker processes (`alone`: keep to one core), or here, one by one, when
    there is one job, one core or no pool to be had.

    A worker that dies (killed, out of memory, say) breaks the pool, and every job not
    done by then with it: those are run again one at a time, each in a process of its
    own, so that only the job that kills its process fails."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    from ..render.progress import JobProgress
    from ..workers import Workers

    outcomes: dict[Job, Outcome] = {}
    with Workers(min(parallel, len(jobs))) as workers:
        futures: dict[Future[Outcome], Job] = {}
        here: list[Job] = []
        for job in jobs:  # all sent before the progress bar's thread starts: they fork
            future = workers.submit(task, job, args, True) if len(jobs) > 1 else None
            if future is None:
                here.append(job)
            else:
                futures[future] = job
        with JobProgress([j.source for j in jobs], stderr()) as advance:
            for job in here:
                outcomes[job] = _said(task(job, args, False))
                advance(job.source)
            broken: list[Job] = []
            for future in as_completed(futures):
                job = futures[future]
                try:
                    outcomes[job] = _said(future.result())
                except BrokenProcessPool:  # this job, or another, took its worker down
                    broken.append(job)
                    continue
                advance(job.source)
            if broken:
                workers.broke()
            for job in sorted(broken, key=jobs.index):
                outcomes[job] = _said(_apart(task, job, args))
                advance(job.source)
    return [outcomes[j] for j in jobs]


def _apart(task: Callable[..., Outcome], job: Job, args: Any) -> Outcome:
    """`task(job, args, True)` in a process of its own: the job's outcome, or its failure
    if the process dies (or none can be started: it died once already)."""
    from concurrent.futures.process import BrokenProcessPool

    from ..workers import Workers

    with Workers(1, apart=True) as alone:
        future = alone.submit(task, job, args, True)
        try:
            if future is not None:
                return future.result()
        except BrokenProcessPool:
            alone.broke()
    return Outcome(job.source, job.dest, "failed", EXIT_USAGE,
                   f"{job.source}: its worker process died")


def failed(job: Job, exc: CtxpackError | OSError) -> Outcome:
    """The outcome of a job that raised `exc`: its problem names the file (a budget that
    cannot be met, say, does not by itself)."""
    code, problem = problem_of(exc)
    if not problem.startswith(job.source):
        problem = f"{job.source}: {problem}"
    return Outcome(job.source, job.dest, "failed", code, problem)


def finish(outcomes: list[Outcome], skipped: list[Job], quiet: bool,
           report_json: str | None) -> int:
    """Report the run (a table on stderr, and JSON where asked); its exit code."""
    everything = outcomes + [Outcome(j.source, j.dest, "skipped") for j in skipped]
    if report_json:
        write_report(everything, report_json)
    if not quiet:
        from ..render.batch import print_outcomes

        print_outcomes(stderr(), everything)
    for message in dict.fromkeys(w for o in everything for w in o.warnings):
        warn(message)
    return max((o.code for o in everything), default=0)


def write_report(outcomes: list[Outcome], path: str) -> None:
    """`--report-json PATH` (`-`: stdout): an entry a file, in one shape whether one
    file or many, transcripts or datasets, were given."""
    from ..jsonl import dumps

    data = dumps({"schema_version": REPORT_VERSION,
                         "files": [asdict(o) for o in outcomes]}, indent=2) + b"\n"
    if path == "-":
        import sys

        sys.stdout.buffer.write(data)
    else:
        from ..atomic import write_atomic

        write_atomic(path, [data])


def _said(outcome: Outcome) -> Outcome:
    if outcome.status == "failed":
        error(outcome.problem)
    return outcome


def _share(below: str, count: int) -> int:
    """The share a file belongs to: from its path below its input, so that a file keeps
    its share whoever else is in the folder."""
    return int.from_bytes(hashlib.sha256(below.encode()).digest()[:8], "big") % count


def up_to_date(source: str, dest: str) -> bool:
    """Is `dest` there already, newer than `source` (a run that was done: --skip-existing)?"""
    try:
        return os.stat(dest).st_mtime_ns >= os.stat(source).st_mtime_ns
    except OSError:
        return False
