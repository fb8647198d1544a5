"""The ctxpack command line: each command parses, calls the library, renders, maps errors.

Data goes to stdout, talk to stderr. Library errors become one red line and the
documented exit code (0 ok, 1 check failed, 2 usage or input error, 3 cannot
fit, 130 interrupted); no traceback reaches the user.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from typing import Any, NoReturn

import typer

from ..errors import EXIT_USAGE, CtxpackError
from . import read, write  # noqa: F401 - the commands, registered on `app` in this order

# isort: split
from . import convert, rewind  # noqa: F401 - after compress and restore
from .common import app, fail, os_problem, stderr

__all__ = ["app", "main"]


def main() -> None:
    """Entry point: run the app, turning every failure into one line and an exit code."""
    import signal

    if hasattr(signal, "SIGPIPE"):
        # `ctxpack stats big.jsonl | head`: stop quietly when the reader goes away
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _name_stdout_errors()
    try:
        code = app(standalone_mode=False)
        sys.stdout.flush()  # a full disk behind `> out` is found here, not at exit
        # without standalone mode, an Exit inside a command comes back as its code
        if isinstance(code, int) and code:
            sys.exit(code)
    except CtxpackError as exc:
        _exit_with(str(exc), exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except OSError as exc:  # a folder missing or read-only, a full disk, a permission
        _exit_with(os_problem(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        stderr().print("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one boundary: no traceback for users
        # typer's own usage errors know how to show themselves
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        if os.environ.get("CTXPACK_DEBUG"):
            raise
        _exit_with(f"internal error: {type(exc).__name__}: {exc} "
                   "(set CTXPACK_DEBUG=1 for a traceback, and please report it)", EXIT_USAGE)


class _Stdout(io.FileIO):
    """File descriptor 1 whose failure names it (`error: stdout: No space left on device`)
    and is reported once: what is written after it is dropped, not failed again at exit."""

    failed = False

    def write(self, data: Any) -> int | None:
        if self.failed:
            return len(data)
        try:
            return super().write(data)
        except OSError as exc:
            self.failed = True
            exc.filename = exc.filename or "stdout"
            raise


def _name_stdout_errors() -> None:
    """Python's own stdout says nothing of which file failed; put one that does in its place."""
    old = sys.stdout
    # an encoding that cannot write every character (PYTHONIOENCODING=ascii, a legacy
    # code page) shows the ones it lacks as '?' rather than failing on the first `·`
    errors = old.errors if codecs.lookup(old.encoding or "utf-8").name == "utf-8" \
        else "replace"
    try:
        raw = _Stdout(old.fileno(), "w", closefd=False)
    except (AttributeError, OSError, ValueError):  # no real descriptor 1: leave it be
        if errors != old.errors and hasattr(old, "reconfigure"):
            old.reconfigure(errors=errors)
        return
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=old.encoding,
                                  errors=errors, line_buffering=old.line_buffering,
                                  write_through=False)


def _exit_with(message: str, code: int) -> NoReturn:
    try:
        fail(message, code)
    except typer.Exit:
        sys.exit(code)

