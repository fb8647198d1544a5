"""compress and restore on odd but valid JSON: what a reader takes, compress writes in a
way restore takes back, byte for byte — values nested past orjson's limit, lone
surrogates, NaN and integers past 64 bits, in the lines compress rewrites."""

from __future__ import annotations

import io
import json

from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits
from ctxpack.compression.settings import Options
from ctxpack.loader import load
from ctxpack.undo import restore

from .transcripts import tokens

ORJSON_DEPTH = 1024  # orjson refuses a value nested deeper than this


def run_with(extra: str) -> bytes:
    """A Chat Completions run whose long tool output (cut by truncate, so its line is
    written anew) carries `extra` (JSON text) in a field of its own."""
    call = {"id": "call_1", "type": "function", "function": {"name": "bash",
                                                             "arguments": "{}"}}
    lines = [json.dumps({"role": "user", "content": "build it"}),
             json.dumps({"role": "assistant", "content": None, "tool_calls": [call]}),
             json.dumps({"role": "tool", "tool_call_id": "call_1",
                         "content": "\n".join(f"cc unit_{k}.c" for k in range(200))})[:-1]
             + f',"extra":{extra}}}',
             json.dumps({"role": "assistant", "content": "done"})]
    return "".join(line + "\n" for line in lines).encode()


def truncated(data: bytes) -> list[bytes]:
    """`data` compressed by truncate alone, which rewrites the tool output's line."""
    options = Options(mask=False, summarize=False, limits=Limits(max_lines=20))
    result = compress_file(io.BytesIO(data), options)
    assert result.report.truncated == 1
    return result.lines


def depth(value: object) -> int:
    n = 0
    while isinstance(value, list) and value:
        value, n = value[0], n + 1
    return n


DEEP = "[" * (ORJSON_DEPTH + 50) + "1" + "]" * (ORJSON_DEPTH + 50)


def test_a_rewritten_line_nested_past_orjsons_limit_comes_back() -> None:
    data = run_with(DEEP)
    lines = truncated(data)
    assert restore(lines) == data
    out = load(io.BytesIO(b"".join(lines)))
    assert depth(out.messages[2].raw["extra"]) == ORJSON_DEPTH + 50


def test_a_task_nested_past_orjsons_limit_is_written_again_and_comes_back() -> None:
    # Claude Code's compaction writes the task's record again after its boundary: that
    # line, with its `ctxpack` object, must be one restore reads.
    from ..test_format_claude_code import answer, calls, piece, user

    chain = [user("u0", None, "please fix the failing tests", deep=json.loads("[]"))]
    for k in range(1, 7):
        chain.append(piece(f"a{k}", chain[-1]["uuid"], f"m{k}", calls(f"c{k}")))
        chain.append(answer(f"r{k}", f"a{k}", f"c{k}", f"output line {k}\n" * 40))
    lines = [json.dumps(r) for r in chain]
    lines[0] = lines[0].replace('"deep": []', f'"deep": {DEEP}')
    data = "".join(line + "\n" for line in lines).encode()
    result = compress_file(io.BytesIO(data), Options(budget=tokens(data) // 2, keep_steps=1))
    assert result.report.summary is not None
    assert restore(result.lines) == data


def test_lone_surrogates_nan_and_big_numbers_in_a_rewritten_line() -> None:
    data = run_with('{"s":"a\\ud800b","k\\udfff":1,"n":NaN,"i":-Infinity,"big":'
                    + "9" * 30 + "}")
    lines = truncated(data)
    assert restore(lines) == data
    rewritten = lines[2]
    rewritten.decode("utf-8")  # strict: what compress writes is UTF-8
    record = load(io.BytesIO(b"".join(lines))).messages[2].raw
    assert record["role"] == "tool" and record["tool_call_id"] == "call_1"
    assert record["extra"]["s"] == "a\ud800b" and record["extra"]["big"] == 10**30 - 1
