"""The one error family of ctxpack.

Library code raises these; only the command line turns them into a red line on
stderr and an exit code. Each carries the exit code the CLI documents.
"""

from __future__ import annotations

EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_CANNOT_FIT = 3


class CtxpackError(Exception):
    """Base of every error ctxpack raises on purpose."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        # made again whole where it is raised from a worker process or a Ray task
        return type(self), (self.message, self.hint)


class UsageError(CtxpackError):
    """A flag, model name or option that cannot be used."""


class JoinedSessions(UsageError):
    """A file joining sessions end to end, which is rewritten one session at a time."""


class InputError(CtxpackError):
    """A transcript that cannot be read: names the file, the line and the problem."""

    def __init__(self, path: str, line: int | None, problem: str, hint: str | None = None):
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {problem}", hint)
        self.path = path
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), (self.path, self.line, self.problem, self.hint)


class CannotFit(CtxpackError):
    """The transcript cannot be brought under the budget or the model's window."""

    exit_code = EXIT_CANNOT_FIT
