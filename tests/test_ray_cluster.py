"""Joining a Ray cluster: a bad address is one line and exit 2 in seconds (not Ray's
retries and warnings), and a cluster of two nodes on this machine, started with Ray's
own `ray start`, compresses a dataset byte for byte as the local engine does, with
tasks run on both nodes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import SAMPLES
from .helpers import assert_clean_error
from .helpers import ctxpack as run_ctxpack

pa = pytest.importorskip("pyarrow", reason="datasets need pyarrow (pip install 'ctxpack[data]')")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("ray", reason="Ray is not installed (pip install 'ctxpack[ray]')")

pytestmark = pytest.mark.ray

PINNED = {"SOURCE_DATE_EPOCH": "1795000000"}  # archives stamped alike on every node


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """The eval conversations of samples/ as rows, two of them made long, in row groups
    of 2 (so that there are tasks for both nodes)."""
    rows = [json.loads(line)["messages"]
            for line in (SAMPLES / "evals.openai-conversations.jsonl").open()]
    rows[3] = rows[3] * 8
    rows[12] = rows[12] * 12
    table = pa.table({"id": [f"eval-{n}" for n in range(len(rows))],
                      "messages": [json.dumps(r) for r in rows], "split": ["test"] * len(rows)})
    pq.write_table(table, tmp_path / "evals.parquet", row_group_size=2)
    return tmp_path / "evals.parquet"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of this machine that nothing listens at (held, so that nothing starts to)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def not_ray() -> Iterator[int]:
    """A port where something listens that is not Ray: it answers as an HTTP/1 server."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def stats_on(dataset: Path, address: str | None = None, **env: str) -> object:
    flags = ["--ray-address", address] if address is not None else []
    return run_ctxpack("stats", str(dataset), "--engine", "ray", *flags, env=env)


@pytest.mark.parametrize("address, said", [
    ("localhost", "not HOST:PORT"),
    ("10.0.0.5:port", "not HOST:PORT"),
    ("10.0.0.5:70000", "not HOST:PORT"),
    ("http://127.0.0.1:8265", "not a Ray head's address"),
    ("no-such-host.invalid:6379", "unknown host no-such-host.invalid"),
])
def test_a_malformed_address_or_an_unknown_host_is_one_line(dataset: Path, address: str,
                                                            said: str) -> None:
    assert_clean_error(stats_on(dataset, address), 2, f"--ray-address {address}: {said}")


def test_an_address_nothing_listens_at_is_one_line(dataset: Path, closed_port: int) -> None:
    address = f"127.0.0.1:{closed_port}"
    assert_clean_error(stats_on(dataset, address), 2,
                       f"--ray-address {address}: nothing listens there")
    # the same from $RAY_ADDRESS, which the line names
    assert_clean_error(stats_on(dataset, RAY_ADDRESS=address), 2,
                       f"$RAY_ADDRESS {address}: nothing listens there")


def test_an_address_where_something_else_listens_is_one_line(dataset: Path,
                                                             not_ray: int) -> None:
    address = f"127.0.0.1:{not_ray}"
    assert_clean_error(stats_on(dataset, address), 2,
                       f"--ray-address {address}: what listens there is not a Ray head")


def test_auto_with_no_ray_on_this_machine_is_one_line(dataset: Path) -> None:
    if shutil.which("pgrep") is None:
        pytest.skip("pgrep is not here to tell whether a Ray runs on this machine")
    if subprocess.run(["pgrep", "-f", "gcs_server"], capture_output=True).returncode == 0:
        pytest.skip("a Ray runs on this machine, which `auto` would join")
    assert_clean_error(stats_on(dataset, "auto"), 2,
                       "--ray-address auto: no Ray runs on this machine to join")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Node:
    """One `ray start --block` node of this machine (a process group of its own, so
    that what it started ends with it), its files below a temporary folder of its own."""

    def __init__(self, ray: str, args: list[str], env: dict[str, str],
                 folder: str | None = None) -> None:
        self.folder = folder or tempfile.mkdtemp(prefix="ctxpack-ray-node-")
        self.proc = subprocess.Popen(
            [ray, "start", "--block", "--num-cpus", "1", "--temp-dir", self.folder,
             "--disable-usage-stats", *args], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tasks(self, name: str, sessions: str = "session_*") -> int:
        """How many tasks called `name` the node's workers ran (Ray marks each in the
        worker's log), in the sessions (folders) `sessions` matches."""
        logs = {f.resolve() for f in Path(self.folder).glob(f"{sessions}/logs/worker-*.out")}
        return sum(f.read_text(errors="replace").count(f":task_name:{name}\n") for f in logs)

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.terminate()  # `ray start --block` stops the node's processes
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the node is left
        except ProcessLookupError:
            pass
        self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def two_nodes() -> Iterator[tuple[str, list[Node], dict[str, str]]]:
    """A head and a worker node on this machine, 1 CPU each, started by `ray start` as
    a user starts them; the address, the nodes, and the environment that joins them."""
    ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray is None:
        pytest.skip("the `ray` command is not installed (pip install 'ctxpack[ray]')")
    env = {**os.environ, **PINNED, "RAY_AUTH_MODE": "disabled"}  # no token in ~/.ray
    for key in ("RAY_ADDRESS", "CTXPACK_WORKERS"):
        env.pop(key, None)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    nodes = [Node(ray, ["--head", "--port", str(port), "--include-dashboard=false"], env)]
    try:
        if not _joinable(ray, address, env):
            pytest.skip(f"the head node did not start: {_log_tail(nodes[0])}")
        nodes.append(Node(ray, ["--address", address], env))
        if not _joinable(ray, address, env, nodes=2):
            pytest.skip(f"the second node did not join: {_log_tail(nodes[1])}")
        yield address, nodes, env
    finally:
        for node in reversed(nodes):
            node.stop()


def _joinable(ray: str, address: str, env: dict[str, str], nodes: int = 1) -> bool:
    """Does the cluster at `address` have `nodes` nodes alive, within a minute?"""
    script = ("import sys, time, ray\n"
              "ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False)\n"
              "for _ in range(60):\n"
              "    if sum(n['Alive'] for n in ray.nodes()) >= int(sys.argv[2]): sys.exit(0)\n"
              "    time.sleep(1)\n"
              "sys.exit(1)\n")
    try:
        return subprocess.run([sys.executable, "-c", script, address, str(nodes)], env=env,
                              capture_output=True, timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _log_tail(node: Node) -> str:
    logs = sorted(Path(node.folder).glob("session_*/logs/raylet.err"))
    return logs[-1].read_text(errors="replace")[-300:] if logs else "no log"


def test_two_nodes_compress_as_the_local_engine_byte_for_byte(
        two_nodes: tuple[str, list[Node], dict[str, str]], dataset: Path,
        tmp_path: Path) -> None:
    address, nodes, env = two_nodes
    here, there = tmp_path / "here.parquet", tmp_path / "there.parquet"
    local = run_ctxpack("compress", str(dataset), "-o", str(here), "--budget", "1500",
                        env=env)
    assert local.code == 0, local.err
    run = run_ctxpack("compress", str(dataset), "-o", str(there), "--budget", "1500",
                      "--engine", "ray", "--ray-address", address, env=env)
    assert run.code == 0, run.err
    assert run.err.replace(str(there), "OUT") == local.err.replace(str(here), "OUT")
    assert "17 rows, 2 compressed, 0 failed" in run.err
    assert there.read_bytes() == here.read_bytes()
    assert all(node.tasks("row_group") for node in nodes), [n.tasks("row_group")
                                                            for n in nodes]
    back = tmp_path / "back.parquet"
    run = run_ctxpack("restore", str(there), "-o", str(back), "--engine", "ray",
                      "--ray-address", address, env=env)
    assert run.code == 0, run.err
    assert pq.read_table(back).equals(pq.read_table(dataset))


def test_a_ray_started_by_ray_start_here_is_joined_only_when_asked(dataset: Path) -> None:
    """Without an address the command starts a Ray of its own (Ray's own default would
    join the cluster `ray start` left its address for, if one is up on this machine);
    `--ray-address auto` joins that cluster. Ray looks for it below $RAY_TMPDIR, so this
    test's cluster is found there and no one else's is."""
    ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray is None:
        pytest.skip("the `ray` command is not installed (pip install 'ctxpack[ray]')")
    base = tempfile.mkdtemp(prefix="ctxpack-ray-")
    env = {**os.environ, **PINNED, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": base}
    for key in ("RAY_ADDRESS", "CTXPACK_WORKERS"):
        env.pop(key, None)
    port = _free_port()
    head = Node(ray, ["--head", "--port", str(port), "--include-dashboard=false"], env,
                folder=os.path.join(base, "ray"))  # where Ray looks for `ray start`'s
    try:
        if not _joinable(ray, f"127.0.0.1:{port}", env):
            pytest.skip(f"the head node did not start: {_log_tail(head)}")
        [own] = [p.name for p in Path(head.folder).glob("session_2*")]
        run = stats_on(dataset, **{k: env[k] for k in ("RAY_AUTH_MODE", "RAY_TMPDIR")})
        assert run.code == 0, run.err
        assert head.tasks("row_group", own) == 0
        assert len(list(Path(head.folder).glob("session_2*"))) == 2  # a Ray of its own
        run = stats_on(dataset, "auto", **{k: env[k] for k in ("RAY_AUTH_MODE", "RAY_TMPDIR")})
        assert run.code == 0, run.err
        assert head.tasks("row_group", own) > 0
    finally:
        head.stop()
        shutil.rmtree(base, ignore_errors=True)
