"""workers.py, the one place that runs work on more than one core: whatever runs where,
the answers are the ones this process would work out, in order, and a worker that dies
costs time, never an answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ctxpack.errors import UsageError
from ctxpack.workers import Workers, here, on_threads, worker_count

from .helpers import assert_clean_error, ctxpack

PARENT = os.getpid()  # a forked worker inherits this, and knows it is not the parent


def lengths(texts: list[str]) -> list[int]:
    return [len(t) for t in texts]


def lengths_where_run(texts: list[str]) -> list[tuple[int, int]]:
    return [(len(t), os.getpid()) for t in texts]


def dies_in_a_worker(texts: list[str]) -> list[int]:
    if os.getpid() != PARENT:
        os._exit(3)  # as a worker killed by the OOM killer would
    return lengths(texts)


TEXTS = [f"text {n} " * (n % 50) for n in range(400)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers start forked here")
def test_work_done_ahead_by_workers_is_what_this_process_would_find() -> None:
    with Workers(2) as workers:
        ahead = workers.ahead(lengths_where_run)
        ahead.start(TEXTS, len, 200, 0)
        found = ahead(TEXTS)
    assert [n for n, _ in found] == lengths(TEXTS)
    assert {pid for _, pid in found} - {PARENT}, "no worker took part"
    assert here(lengths)(TEXTS) == lengths(TEXTS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers start forked here")
def test_a_worker_that_dies_costs_no_answer() -> None:
    with Workers(2) as workers:
        ahead = workers.ahead(dies_in_a_worker)
        ahead.start(TEXTS, len, 200, 0)
        assert ahead(TEXTS) == lengths(TEXTS)
        assert ahead(["more", "texts"]) == [4, 5]  # and the run goes on, here
        assert workers.submit(lengths, ["x"]) is None  # the broken pool is not used again


def test_one_worker_does_everything_here() -> None:
    with Workers(1) as workers:
        assert workers.submit(lengths, ["x"]) is None
        ahead = workers.ahead(lengths_where_run)
        ahead.start(TEXTS, len, 200, 0)
        assert ahead(TEXTS) == [(len(t), PARENT) for t in TEXTS]


@pytest.mark.parametrize("cores", ["1", "2", "8"])
def test_threads_give_answers_in_order(monkeypatch: pytest.MonkeyPatch, cores: str) -> None:
    monkeypatch.setenv("CTXPACK_WORKERS", cores)
    where: set[int] = set()

    def square(n: int) -> int:
        where.add(threading.get_ident())
        return n * n

    assert list(on_threads(square, iter(range(500)))) == [n * n for n in range(500)]
    if cores == "1":  # one core: all of it in the calling thread
        assert where == {threading.get_ident()}


@pytest.mark.parametrize("value", ["0", "abc", "-2", "1.5"])
def test_a_bad_worker_count_is_an_error_that_names_it(monkeypatch: pytest.MonkeyPatch,
                                                       value: str) -> None:
    monkeypatch.setenv("CTXPACK_WORKERS", value)
    with pytest.raises(UsageError, match="CTXPACK_WORKERS must be a whole number"):
        worker_count()


def test_the_command_line_says_so_in_one_line(tmp_path) -> None:
    from .conftest import SAMPLES

    run = ctxpack("compress", str(SAMPLES / "support-chat.openai.jsonl"), "--dry-run",
                  env={"CTXPACK_WORKERS": "many"})
    assert_clean_error(run, 2, "CTXPACK_WORKERS must be a whole number")


@pytest.mark.parametrize("command", ["compress", "stats"])
def test_j_sets_the_workers_of_one_file(command: str) -> None:
    """`-j N` on one transcript is its workers' count: it stands in for the environment's."""
    from .conftest import SAMPLES

    extra = ["--dry-run"] if command == "compress" else []
    run = ctxpack(command, str(SAMPLES / "support-chat.openai.jsonl"), *extra, "-j", "1",
                  env={"CTXPACK_WORKERS": "many"})
    assert run.code == 0, run.err


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states in /proc")
def test_workers_end_when_their_parent_is_killed() -> None:
    script = ("import os, time\n"
              "from ctxpack.workers import Workers\n"
              "workers = Workers(2).__enter__()\n"
              "pids = {workers.submit(os.getpid).result() for _ in range(8)}\n"
              "busy = workers.submit(time.sleep, 600)\n"
              "print(*pids, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert pids and all(_alive(pid) for pid in pids)
    finally:
        parent.send_signal(signal.SIGKILL)  # no chance to stop its pool
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)


def square_where_run(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def fails_on_three(n: int) -> int:
    if n == 3 and os.getpid() == PARENT:
        raise ValueError("three, here")
    if n == 3:
        os._exit(1)  # a worker that dies on it: the call is made again here
    return n


@pytest.mark.parametrize("cores", [1, 2])
def test_in_order_gives_each_answer_in_the_order_asked(cores: int) -> None:
    from ctxpack.workers import in_order

    with Workers(cores) as workers:
        answers = list(in_order(square_where_run, ((n,) for n in range(12)), workers))
    assert [a for a, _ in answers] == [n * n for n in range(12)]
    assert answers[0][1] == PARENT  # the first call is made here
    assert any(pid != PARENT for _, pid in answers) == (cores == 2)


def test_in_order_makes_a_call_a_worker_died_on_again_here() -> None:
    from ctxpack.workers import in_order

    with Workers(2) as workers, pytest.raises(ValueError, match="three, here"):
        list(in_order(fails_on_three, ((n,) for n in range(6)), workers))


def test_remembered_results_last_across_calls_until_the_limit() -> None:
    from ctxpack.workers import Remembered

    calls: list[list[str]] = []

    def upper(items: list[str]) -> list[str]:
        calls.append(list(items))
        return [x.upper() for x in items]

    seen = Remembered(upper, len, most=10)
    assert seen(["ab", "cd"]) == ["AB", "CD"]
    assert seen(["cd", "ab", "ef"]) == ["CD", "AB", "EF"]
    assert calls == [["ab", "cd"], ["ef"]]  # only the new one worked out
    assert seen(["ghijkl"]) == ["GHIJKL"]  # past 10 characters: it starts afresh
    assert seen(["ab"]) == ["AB"] and calls[-1] == ["ab"]
