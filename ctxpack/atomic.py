"""Files written whole or not at all.

An output appears under its name complete and synced, or not at all: it is written to a
temporary file in the same folder, then renamed over the name. A temporary file is
locked for as long as its writer lives; one left by a run that was killed (nobody holds
its lock) is removed by the next write into that folder. Replaced in place, the original
is kept as a backup: the very file, linked under a name nothing else holds, so that what
a program still appends to it lands there, and no earlier backup is ever written over.
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


@contextmanager
def temporary(folder: str) -> Iterator[tuple[BinaryIO, str]]:
    """A new, locked file in `folder` open for writing, and its name; removed on the way
    out unless it was renamed meanwhile."""
    _sweep(folder)
    for _ in range(100):
        name = os.path.join(folder, f"{PREFIX}{os.urandom(8).hex()}.tmp")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name", folder)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(fd, "wb") as out:
            yield out, name
    finally:
        with suppress(FileNotFoundError):
            os.unlink(name)


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
        with temporary(folder) as (out, name):
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
            os.replace(name, path)
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
            with temporary(os.path.dirname(os.path.abspath(path))) as (out, tmp):
                with open(path, "rb") as original:
                    shutil.copyfileobj(original, out)
                out.flush()
                os.fsync(out.fileno())
                shutil.copystat(path, tmp)
                os.link(tmp, name)  # fails, rather than overwrites, if it was taken since
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
