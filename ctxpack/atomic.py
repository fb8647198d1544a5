"""Files written whole or not at all.

An output appears under its name complete and synced, or not at all: it is written to a
file in the same folder that has no name yet (see `Draft`), then put over the name.
Where files cannot be unnamed, a named temporary file is locked for as long as its
writer lives; one left by a run that was killed (nobody holds its lock) is removed by
the next write into that folder. Replaced in place, the original is kept as a backup:
the very file, linked under a name nothing else holds, so that what a program still
appends to it lands there, and no earlier backup is ever written over.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from itertools import count
from typing import BinaryIO

from .errors import UsageError

try:
    import fcntl
except ImportError:  # no advisory locks: leftovers stay until removed by hand
    fcntl = None  # type: ignore[assignment]

PREFIX = ".ctxpack-"
_TEMPORARY = re.compile(re.escape(PREFIX) + r"[0-9a-f]{16}\.tmp")
SETTLE = 60.0  # seconds a leftover must be untouched before it is swept (see _sweep)


def write_atomic(path: str, chunks: Iterable[bytes],
                 check: Callable[[], None] | None = None) -> None:
    """Write `chunks` to `path`: complete and synced, or not at all. `check` runs just
    before the rename; an exception from it leaves `path` untouched."""
    _write(path, chunks, check, keep=False)


def replace_keeping(path: str, chunks: Iterable[bytes],
                    check: Callable[[], None] | None = None) -> str:
    """Replace the file `path` with `chunks` as `write_atomic` does, keeping the original
    as `path.bak` (or `.bak.1`, `.bak.2`... if that is taken); the backup's name."""
    backup = _write(path, chunks, check, keep=True)
    assert backup is not None
    return backup


class Draft:
    """A file being written in a folder, put under a name only once it is complete.

    Where the system has unnamed files (Linux's O_TMPFILE, and a way to name one) it has
    no name until then, so that a run killed half way leaves nothing behind. Elsewhere it
    is a named temporary file, locked for as long as its writer lives."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.name: str | None = None  # None: unnamed
        _sweep(folder)
        fd = _unnamed(folder)
        if fd is None:
            fd, self.name = _named(folder)
        self.file: BinaryIO = os.fdopen(fd, "wb")

    def publish(self, path: str, replace: bool = True) -> None:
        """Put the file at `path`: over what is there, or (not `replace`) only where
        nothing is (FileExistsError otherwise)."""
        self.file.flush()
        if self.name is not None and not replace:
            os.link(self.name, path)
        elif self.name is not None:
            os.replace(self.name, path)
            self.name = None
        elif not replace:
            _name_unnamed(self.file.fileno(), path)
        else:  # a name of its own first: a link cannot take the place of a file
            name = _free_name(self.folder)
            _name_unnamed(self.file.fileno(), name)
            try:
                os.replace(name, path)
            except BaseException:
                _remove(name)
                raise

    def close(self) -> None:
        self.file.close()
        if self.name is not None:
            _remove(self.name)


@contextmanager
def temporary(folder: str) -> Iterator[Draft]:
    """A `Draft` in `folder`; gone on the way out unless it was published."""
    draft = Draft(folder)
    try:
        yield draft
    finally:
        draft.close()


def _unnamed(folder: str) -> int | None:
    """A new unnamed file in `folder` open for writing, where it can be named later."""
    if not _can_name_unnamed(folder):
        return None
    try:
        return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except OSError:
        return None


def _can_name_unnamed(folder: str) -> bool:
    """Can an unnamed file be made in `folder` and named? Tried once per file system."""
    try:
        device = os.stat(folder).st_dev
    except OSError:
        return False
    if device not in _NAMEABLE:
        _NAMEABLE[device] = _try_naming(folder)
    return _NAMEABLE[device]


_NAMEABLE: dict[int, bool] = {}


def _try_naming(folder: str) -> bool:
    if not hasattr(os, "O_TMPFILE"):
        return False
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except OSError:  # a file system without them, or an older kernel
        return False
    try:
        name = _free_name(folder)
        _name_unnamed(fd, name)
        os.unlink(name)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _name_unnamed(fd: int, name: str) -> None:
    """Link the unnamed file open as `fd` under `name`: through /proc, or, where /proc
    will not, with linkat's AT_EMPTY_PATH (which may need privileges)."""
    try:
        os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.linkat(fd, b"", AT_FDCWD, os.fsencode(name), AT_EMPTY_PATH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), name)


AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000  # <fcntl.h> on Linux


def _named(folder: str) -> tuple[int, str]:
    """A new temporary file in `folder`, locked, and its name."""
    for _ in range(100):
        name = _free_name(folder)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        return fd, name
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)


def _free_name(folder: str) -> str:
    return os.path.join(folder, f"{PREFIX}{os.urandom(8).hex()}.tmp")


def open_for_writing(path: str) -> list[str]:
    """The other processes that hold the file at `path` open for writing, each as
    "NAME (pid N)", as far as this system shows them (Linux's /proc, and only processes
    this user may look into; elsewhere none are seen)."""
    try:
        target = os.stat(path)
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    me, found = str(os.getpid()), []
    for pid in pids:
        if pid != me and any(_writes(pid, fd, target) for fd in _descriptors(pid)):
            found.append(f"{_command(pid)} (pid {pid})")
    return found


def _descriptors(pid: str) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone, or not ours to see
        return []


def _writes(pid: str, fd: str, target: os.stat_result) -> bool:
    """Is descriptor `fd` of process `pid` the file `target`, open for writing?"""
    try:
        info = os.stat(f"/proc/{pid}/fd/{fd}")
        if (info.st_dev, info.st_ino) != (target.st_dev, target.st_ino):
            return False
        with open(f"/proc/{pid}/fdinfo/{fd}") as fdinfo:
            fields = dict(line.split(":", 1) for line in fdinfo if ":" in line)
        return bool(int(fields["flags"], 8) & (os.O_WRONLY | os.O_RDWR))
    except (OSError, KeyError, ValueError):
        return False


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip() or "?"
    except OSError:
        return "?"


def _write(path: str, chunks: Iterable[bytes], check: Callable[[], None] | None,
           keep: bool) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if _special(path):  # /dev/null, a pipe: written to, never replaced
            if keep:
                raise UsageError(f"{path}: not a regular file; it cannot be replaced")
            with open(path, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
            return None
        with temporary(folder) as draft:
            out = draft.file
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            # a file replaced keeps its mode; a new one gets what open() would give it
            os.fchmod(out.fileno(), os.stat(path).st_mode & 0o7777 if os.path.exists(path)
                      else 0o666 & ~_umask())
            os.fsync(out.fileno())
            if check is not None:
                check()
            backup = _backup(path) if keep else None
            draft.publish(path)
        _sync_folder(folder)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    return backup


def _special(path: str) -> bool:
    """Is `path` there, and not a regular file (a device, a pipe, a socket)?"""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


def _backup(path: str) -> str:
    """Keep the file at `path` under the first free backup name: linked (the same file,
    still the one a writer holds open), or, where links cannot be made, copied whole."""
    for n in count():
        name = f"{path}.bak" + (f".{n}" if n else "")
        try:
            os.link(path, name, follow_symlinks=False)
            return name
        except FileExistsError:  # an earlier backup, or anything else: never written over
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EOPNOTSUPP, errno.EMLINK):
                raise
        if not os.path.lexists(name):
            with temporary(os.path.dirname(os.path.abspath(path))) as draft:
                with open(path, "rb") as original:
                    shutil.copyfileobj(original, draft.file)
                draft.file.flush()
                os.fchmod(draft.file.fileno(), os.stat(path).st_mode & 0o7777)
                os.fsync(draft.file.fileno())
                draft.publish(name, replace=False)  # fails if it was taken since
            return name
    raise AssertionError("unreachable")


def _sweep(folder: str) -> None:
    """Remove what killed runs left in `folder`: temporary files of ours that nobody has
    locked and nobody has touched for a while (a new one is locked just after it is
    made; the wait covers that moment)."""
    if fcntl is None:
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    old = time.time() - SETTLE
    for entry in entries:
        if not _TEMPORARY.fullmatch(entry.name):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                    or info.st_mtime > old):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if its writer lives
            os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _remove(name: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(name)


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable (where a folder can be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask
