"""What the commands share: the Typer app, the options several take, and the one way
they print a warning or fail (one line on stderr, the documented exit code).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, NoReturn

import typer

from ..errors import EXIT_USAGE, CtxpackError
from ..render import plain

app = typer.Typer(
    name="ctxpack",
    help="Inspect and compress LLM agent transcripts (JSONL).",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    # plain help: Rich-formatted help costs ~100 ms of imports on every start
    rich_markup_mode=None,
)

FormatOpt = Annotated[str | None, typer.Option(
    "--format", metavar="FORMAT",
        help="Transcript format to force (default: detect from the first records).")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", "-m", metavar="MODEL", help="Model whose tokenizer and context window to use "
    "(default: the model named in the transcript, else gpt-4o).")]
SkipOpt = Annotated[bool, typer.Option(
    "--skip-invalid", help="Skip lines that cannot be read, and count them, instead of failing.")]
SessionOpt = Annotated[str | None, typer.Option(
    "--session", metavar="ID", help="Of OpenCode's opencode.db or storage folder, the session "
    "to read (default: the newest; stats and validate read each of a folder's).")]
ConfigOpt = Annotated[str | None, typer.Option(
    "--config", metavar="PATH",
        help="Config file (default: $CTXPACK_CONFIG, ./ctxpack.yaml, user config dir).")]

NoCacheOpt = Annotated[bool, typer.Option(
    "--no-cache", help="Do not use the persistent token cache.")]
OutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="PATH", help="Write here (- for stdout; default stdout).")]
InPlaceOpt = Annotated[bool, typer.Option(
    "--in-place", help="Replace the input atomically, keeping the original as FILE.bak.")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="With --in-place: go ahead even if the file was modified a moment ago "
    "or is open for writing in another process.")]


@cache
def stderr() -> Any:
    """The run's one console on stderr: a line said while a progress bar is shown on it
    goes above the bar (a console of its own would write after the bar, on its line)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print one red line on stderr and exit with `code`."""
    error(message)
    raise typer.Exit(code)


def error(message: str) -> None:
    from rich.markup import escape

    stderr().print(f"[red]error:[/red] {escape(plain(message))}")



def os_problem(exc: OSError) -> str:
    """A failure of the file system in one line: the file and what went wrong."""
    what = exc.strerror or str(exc)
    return f"{exc.filename}: {what}" if exc.filename is not None else what


def problem_of(exc: CtxpackError | OSError) -> tuple[int, str]:
    """The exit code and the one line of a failure a run reports and goes on from."""
    if isinstance(exc, OSError):
        return EXIT_USAGE, os_problem(exc)
    return exc.exit_code, str(exc)


def warn(message: str) -> None:
    from rich.markup import escape

    stderr().print(f"[yellow]warning:[/yellow] {escape(plain(message))}")


def use_cores(jobs: int) -> None:
    """`-j N`: the workers of this run (and of the processes it starts) are N."""
    import os

    os.environ["CTXPACK_WORKERS"] = str(jobs)


def read_config(path: str | None) -> Any:
    """The config file's settings (see ctxpack.config for where it is looked up)."""
    from ..config import load_config

    return load_config(path)
