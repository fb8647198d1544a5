"""Datasets on Ray: the same table functions, run by Ray tasks instead of here.

Each task of a Parquet dataset is one row group, read by the task itself (a local path on
one machine; on a cluster, a path every node sees or an object-store URL pyarrow reads),
so data goes from storage to the workers and only results come back, a batch at a time
(a streaming task), in row order, to be written here. JSONL rows are read here and their
batches sent to the tasks. Tasks run in Ray's pooled worker processes, which stay up from
task to task: a worker imports ctxpack and loads the tokenizer once, with its first task,
and counts with one process (its CPU is its share). Rows keep their numbers, so the
results equal the local engine's row for row. Needs the `ray` extra.

Why tasks and not Ray Data's actor pool: each run started its actors afresh (a process,
Ray, ctxpack and the tokenizer each), and Ray Data planned the job, some 3 to 8 s that a
run on a few thousand rows could not win back; see BENCHMARKS.md.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..errors import CtxpackError, InputError, UsageError
from .files import BATCH_ROWS, batches, is_parquet
from .rows import Rows, pyarrow

IN_FLIGHT = 2  # tasks a CPU has queued, so that none waits for the next while one is read
CONNECT_SECONDS = 5  # how long a cluster's head may take to answer before it is given up
# Ray's own bounds on joining a cluster, set (unless the user set them) before Ray is
# imported, which is when it reads them: by default it retries a head that does not
# answer as one 20 times for 40 s each, printing warnings, which looks like a hang.
RAY_CONNECT_BOUNDS = {"RAY_py_gcs_connect_timeout_s": str(CONNECT_SECONDS),
                      "RAY_gcs_server_port_wait_time_s": "1", "RAY_NUM_REDIS_GET_RETRIES": "1"}
# Ray starts its worker processes at niceness 15, below every process at the usual
# priority (0), so that its own daemons keep theirs: on a machine that runs anything else
# at that priority (a second command, a build, a test run of the same user), the workers
# get only the CPU it leaves, and a Ray of 2 CPUs did about one core's work where the
# local engine, at the usual priority, did two's (see BENCHMARKS.md). A Ray started here
# runs its workers at this command's own priority instead, as the local engine's workers
# run; a cluster's nodes keep what they were started with (read when the node starts).
RAY_STARTED_HERE = {"RAY_worker_niceness": "0"}
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray", "pip install 'ctxpack[ray]'") from None
    return ray


class RayEngine:
    """Runs a dataset's batches on the Ray at `address` ($RAY_ADDRESS, else one started
    here with every core; `auto`: the cluster `ray start` runs on this machine); a Ray
    already started in this process is used as it is."""

    def __init__(self, address: str | None = None) -> None:
        self.named = "--ray-address" if address else "$RAY_ADDRESS"
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.failed: CtxpackError | None = None
        if self.address is not None:
            reach(self.address, self.named)  # a bad address said in a few seconds, not a hang
            for key, value in RAY_CONNECT_BOUNDS.items():
                os.environ.setdefault(key, value)
        self.ray = ray_module()

    def start(self) -> None:
        import logging

        ray = self.ray
        logging.getLogger("ray").setLevel(logging.ERROR)  # its notes would bury the results
        if self.failed is not None:  # tried once already: not again for each dataset
            raise self.failed
        if ray.is_initialized():
            return
        for key, value in RAY_STARTED_HERE.items():  # unless the user set them
            os.environ.setdefault(key, value)
        held = Held()
        try:  # Ray's own warnings of a failed join are replaced by one line
            with _held_stderr(held, self.address is not None):
                # "local": Ray's own default (None) joins a cluster `ray start` runs on
                # this machine, if one is up, instead of starting one
                ray.init(address=self.address or "local", logging_level="ERROR",
                         log_to_driver=False,
                         include_dashboard=False, configure_logging=False)
        except (ConnectionError, ValueError, ray.exceptions.RayError) as exc:
            why = held.last or str(exc)
            if self.address == "auto" and "Could not find any running Ray" in why:
                self.failed = UsageError(
                    f"{self.named} auto: no Ray runs on this machine to join",
                    "start one with `ray start --head`, or give no address and a Ray is "
                    "started here for the run")
                raise self.failed from None
            hint = ("set RAY_AUTH_MODE=token here, with the cluster's token in "
                    "~/.ray/auth_token or $RAY_AUTH_TOKEN" if "Auth" in why
                    else "is it a Ray head? `ray status --address ADDRESS`")
            self.failed = UsageError(f"cannot join the Ray at {self.address}: {why}", hint)
            raise self.failed from None

    def map(self, path: str, rows: Rows, work: Callable[..., Any], settings: dict[str, Any],
            shard: tuple[int, int] | None = None) -> Iterator[Any]:
        """`work` of every batch of the dataset at `path` (or of the i-th of n shares of
        it), in row order, each as `work` gives it, as the local engine yields them."""
        rows = replace(rows, name=path)
        epoch = os.environ.get("SOURCE_DATE_EPOCH")  # pinned here, pinned on every node
        if is_parquet(path):
            # (a row group of no rows has no batch, here as in the local engine)
            groups = [(g, start) for g, start, count in row_groups(path)
                      if count and (shard is None or g % shard[1] == shard[0])]
            if not groups:  # no rows: the columns a result of no rows has
                import pyarrow.parquet as pq

                yield work(pq.ParquetFile(path).schema_arrow.empty_table(), **vars(rows),
                           **settings)
                return
            calls = ((row_group, (path, g, replace(rows, start=start), work, settings, epoch))
                     for g, start in groups)
        else:  # JSONL rows are read here: a task is a batch
            calls = ((one_batch, (table, at, work, settings, epoch))
                     for table, at in batches(path, rows, shard=shard))
        self.start()
        yield from self._in_order(calls)

    def _in_order(self, calls: Iterator[tuple[Callable[..., Any], tuple[Any, ...]]]
                  ) -> Iterator[Any]:
        """The results each call's task yields, as the work gives them (whatever their
        shape), call after call, with IN_FLIGHT tasks a CPU under way (so results wait in
        the object store for a few tasks at most)."""
        ray = self.ray
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = {}
        pending: deque[Any] = deque()

        def submit() -> bool:
            call = next(calls, None)
            if call is None:
                return False
            fn, args = call
            if fn not in remote:
                remote[fn] = ray.remote(num_cpus=1, num_returns="streaming")(fn)
            pending.append(remote[fn].remote(*args))
            return True

        while len(pending) < IN_FLIGHT * cpus and submit():
            pass
        while pending:
            for ref in pending.popleft():
                yield self._get(ref)
            submit()

    def _get(self, ref: Any) -> Any:
        """The result of `ref`; a task's CtxpackError raised here as itself (its one line)."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, CtxpackError):
                raise exc.cause from None
            raise


def reach(address: str, named: str = "--ray-address") -> None:
    """A UsageError, within about CONNECT_SECONDS, unless a Ray head may listen at
    `address` (HOST:PORT, or ray://HOST:PORT for Ray Client; `auto` and `local` are
    Ray's to resolve): the value is well formed, its host is known, something listens
    at the port, and it speaks gRPC (HTTP/2), as Ray's head does."""
    if address in ("auto", "local"):
        return
    said = f"{named} {address}"
    if "://" in address and not address.startswith("ray://"):
        raise UsageError(f"{said}: not a Ray head's address",
                         "give HOST:PORT as `ray start --head` prints it (port 6379 by "
                         "default); http://HOST:8265 is the dashboard's, for `ray job submit`")
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [IPv6]:PORT
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"{said}: not HOST:PORT", "the address `ray start --head` prints, "
                         "such as 10.0.0.5:6379")
    try:
        sock = socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS)
    except socket.gaierror:
        raise UsageError(f"{said}: unknown host {host}") from None
    except ConnectionRefusedError:
        raise UsageError(f"{said}: nothing listens there (connection refused)",
                         "is Ray started on that machine (`ray start --head`), at that "
                         "port?") from None
    except TimeoutError:
        raise UsageError(f"{said}: no answer in {CONNECT_SECONDS} s",
                         "a wrong host, or a firewall between here and there") from None
    except OSError as exc:
        raise UsageError(f"{said}: cannot connect ({exc.strerror or exc})") from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        sock.close()  # a TLS head answers only a TLS hello
        return
    with sock:
        try:
            sock.sendall(HTTP2_PREFACE)
            frame = _read(sock, 9)
        except OSError:  # closed on us, or silent
            frame = b""
    if len(frame) < 9 or frame[3] != 4:  # an HTTP/2 server opens with a SETTINGS frame
        raise UsageError(f"{said}: what listens there is not a Ray head (it does not "
                         "speak gRPC)", "the port `ray start --head` prints (6379 by "
                         "default), not the dashboard's or a worker's")


class Held:
    """What Ray wrote to stderr while it joined a cluster: its last line, the reason."""

    last = ""


@contextmanager
def _held_stderr(held: Held, hold: bool) -> Iterator[None]:
    """What is written to file descriptor 2 in the block (Ray's core logs there, not
    through Python) is held, and written out only if the block ends without an error;
    if it does, `held.last` is the last line, without the log's prefix. Only for joining
    a running Ray: a Ray started here would start its processes with the held
    descriptor as their stderr."""
    if not hold:
        yield
        return
    import re
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as file:
        os.dup2(file.fileno(), 2)
        try:
            yield
        except BaseException:
            file.seek(0)
            lines = file.read().decode(errors="replace").strip().splitlines()
            # "[2026-11-26 17:53:59,672 W 13539 13539] gcs_client.cc:210: the reason"
            held.last = re.sub(r"^\[[^]]*\] \S+:\d+: ", "", lines[-1]) if lines else ""
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        file.seek(0)
        os.write(2, file.read())


def _read(sock: socket.socket, size: int) -> bytes:
    """Up to `size` bytes, fewer when the peer closes first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def row_groups(path: str) -> list[tuple[int, int, int]]:
    """Each row group of the file, the number of its first row and how many rows it has."""
    import pyarrow.parquet as pq

    pa = pyarrow()
    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, None, f"not a Parquet file ({exc})") from None
    out, start = [], 0
    for g in range(meta.num_row_groups):
        count = meta.row_group(g).num_rows
        out.append((g, start, count))
        start += count
    return out


def row_group(path: str, group: int, rows: Rows, work: Callable[..., Any],
              settings: dict[str, Any], epoch: str | None = None) -> Iterator[Any]:
    """A Ray task: `work` of the rows of one row group (one that has rows), a batch at a
    time (so a worker holds one batch)."""
    import pyarrow.parquet as pq

    _as_the_driver(epoch)
    pa = pyarrow()
    file = pq.ParquetFile(path)
    meta, start = file.schema_arrow.metadata, rows.start
    for batch in file.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
        table = pa.Table.from_batches([batch]).replace_schema_metadata(meta)
        yield work(table, **vars(replace(rows, start=start)), **settings)
        start += table.num_rows


def one_batch(table: Any, rows: Rows, work: Callable[..., Any],
              settings: dict[str, Any], epoch: str | None = None) -> Iterator[Any]:
    """A Ray task: `work` of one batch of rows sent to it."""
    _as_the_driver(epoch)
    yield work(table, **vars(rows), **settings)


def _as_the_driver(epoch: str | None) -> None:
    """The task's CPU is its share: no pool of processes inside it (the tokenizer is
    loaded with the worker's first task and kept by the process for the next); and the
    time stamp of archives is pinned as it is where the command runs, so that every
    node writes what the local engine would."""
    os.environ["CTXPACK_WORKERS"] = "1"
    if epoch is None:
        os.environ.pop("SOURCE_DATE_EPOCH", None)
    else:
        os.environ["SOURCE_DATE_EPOCH"] = epoch
