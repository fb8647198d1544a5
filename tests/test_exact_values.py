"""What compress writes again keeps the values it read: integers past 64 bits stay exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack.errors import InputError
from ctxpack.jsonl import dumps, loads, parse_document, parse_line

from .helpers import ctxpack

BIG = [2**64, 2**64 + 1, -(2**63) - 1, 10**30 + 7, 123456789012345678901234567890]


def _messages(big: int, steps: int = 10) -> list[dict]:
    out: list[dict] = [{"role": "system", "content": "You are careful."},
                       {"role": "user", "content": "Look at the files."}]
    for i in range(steps):
        out += [{"role": "assistant", "content": f"step {i}", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "cat", "arguments": json.dumps({"path": f"f{i}.py"})}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "trace_id": big + i,
             "content": "\n".join(f"row {j}: {i * j}" for j in range(2400))}]
    return out


@given(value=st.one_of(st.sampled_from(BIG), st.integers(min_value=2**64),
                       st.integers(max_value=-(2**63) - 1)))
def test_loads_and_parse_document_keep_any_integer_exact(value: int) -> None:
    data = json.dumps({"n": value, "list": [value, "x" * 3]}).encode()
    assert loads(data)["n"] == value and type(loads(data)["n"]) is int
    assert parse_document(data, "f", 1)["list"][0] == value
    assert loads(dumps(loads(data))) == json.loads(data)


def _dicts(value: object) -> list[dict]:
    if isinstance(value, dict):
        return [value, *(d for v in value.values() for d in _dicts(v))]
    if isinstance(value, list):
        return [d for v in value for d in _dicts(v)]
    return []


def _check(original: Path, out: Path, tmp_path: Path) -> None:
    # every output is past the truncate limit: each tool line is written again
    assert ctxpack("compress", str(original), "-o", str(out), "--budget", "100000").code == 0
    assert out.read_bytes() != original.read_bytes()
    data = out.read_bytes()
    values = [json.loads(data)] if original.suffix == ".json" else \
        [json.loads(line) for line in data.splitlines() if line.strip()]
    ids = [m["trace_id"] for v in values for m in _dicts(v) if "trace_id" in m]
    assert sorted(ids) == [BIG[3] + i for i in range(10)]
    assert all(type(n) is int for n in ids)
    back = tmp_path / "back"
    assert ctxpack("restore", str(out), "-o", str(back)).code == 0
    assert back.read_bytes() == original.read_bytes()


def test_compress_keeps_big_integers_of_the_lines_it_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in _messages(BIG[3])))
    _check(path, tmp_path / "out.jsonl", tmp_path)


def test_compress_keeps_big_integers_of_a_document_it_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"run_id": BIG[4], "messages": _messages(BIG[3])}, indent=1))
    _check(path, tmp_path / "out.json", tmp_path)
    assert str(BIG[4]) in (tmp_path / "out.json").read_text()


def test_a_jsonl_line_keeps_an_integer_past_64_bits(tmp_path: Path) -> None:
    assert parse_line(b'{"n": 1234567890123456789012}\n', "f", 1) == {"n": 1234567890123456789012}
    path = tmp_path / "big.anthropic.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in [
        {"role": "user", "content": "Find the order."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup",
                                           "input": {"order": BIG[4]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "shipped"}]}]))
    run = ctxpack("show", str(path), "--no-pager")
    assert run.code == 0, run.err
    assert str(BIG[4]) in run.out and "e+29" not in run.out


def test_a_broken_document_with_a_big_integer_names_the_line_that_breaks(tmp_path: Path) -> None:
    good = json.dumps({"run_id": BIG[4], "messages": _messages(BIG[3], steps=1)}, indent=1)
    lines = good.splitlines()
    lines[8] = lines[8] + " oops"  # a syntax error on line 9
    with pytest.raises(InputError) as broken:
        parse_document(("\n".join(lines) + "\n").encode(), "run.json", 1)
    assert broken.value.line == 9, broken.value
    with pytest.raises(InputError) as cut:
        parse_document(good[: len(good) // 2].encode(), "run.json", 1)
    assert "truncated document" in cut.value.problem
    assert "--skip-invalid" not in (cut.value.hint or "")


@given(value=st.integers(min_value=-(2**63), max_value=2**64 - 1))
def test_integers_orjson_holds_are_read_as_they_are(value: int) -> None:
    line = json.dumps({"ts": value, "id": f"x{value}"}).encode() + b"\n"
    assert parse_line(line, "f", 1) == loads(line) == {"ts": value, "id": f"x{value}"}
