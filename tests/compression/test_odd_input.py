"""compress and restore on odd but valid JSON: what a reader takes, compress writes in a
way restore takes back, byte for byte — values nested past orjson's limit, lone
surrogates, NaN and integers past 64 bits, in the lines compress rewrites."""

from __future__ import annotations

import io
import json
import math

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit, InputError
from ctxpack.loader import load
from ctxpack.undo import restore

from ..helpers import with_real_usage
from .transcripts import billed, squeezed, tokens

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
    lines = [json.dumps(r) for r in with_real_usage(chain)]
    lines[0] = lines[0].replace('"deep": []', f'"deep": {DEEP}')
    data = "".join(line + "\n" for line in lines).encode()
    result = compress_file(io.BytesIO(data), Options(budget=billed(data, tokens(data) // 2),
                                                     keep_steps=1))
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


def test_a_masked_output_of_a_call_named_with_a_lone_surrogate() -> None:
    # the placeholder names the call: its size is measured in UTF-8 it cannot be
    data = run_with("1").replace(b'"name": "bash"', b'"name": "ba\\ud800sh"')
    result = compress_file(io.BytesIO(data), squeezed(data, truncate=False,
                                                               keep_observations=0))
    assert result.report.masked == 1
    assert restore(result.lines) == data


def test_conversations_with_nan_and_lone_surrogates_come_back() -> None:
    # a record that holds a whole conversation is parsed again to be written anew
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages = [{"role": "user", "content": "build it \ud800"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": OUTPUT},
                {"role": "assistant", "content": "done"}]
    line = json.dumps({"messages": messages, "score": math.nan})
    data = (line + "\n" + line.replace("build", "make") + "\n").encode()
    result = compress_file(io.BytesIO(data), Options(summarize=False,
                                                     limits=Limits(max_lines=20)))
    assert result.report.truncated == 2
    b"".join(result.lines).decode("utf-8")
    assert restore(result.lines) == data


# --- the property: whatever odd input compress accepts, restore gives back --------------

ODD = ["\ud800", "\udfff", "\x00", "\u2028", "\u202e", "\ufeff", "e\u0301", "\U0001f642",
       "\r\n", "\x1b[2J", "\uffff"]
ODD_VALUES = ["NaN", "-Infinity", "1e400", "9" * 40, "-0.0", "null", "[]", "{}", '["x"]',
              '{"a":[1]}', "true", "12"]
DEPTHS = [1023, 1024, 1025, 1500]
OUTPUT = "\n".join(f"cc -c unit_{k}.c -o unit_{k}.o" for k in range(60))


def chat_run(steps: int) -> list[dict]:
    lines: list[dict] = [{"role": "system", "content": "You are a build agent."},
                         {"role": "user", "content": "Fix the build, please."}]
    for k in range(steps):
        call = {"id": f"call_{k}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": f"make {k}"})}}
        lines += [{"role": "assistant", "content": None, "tool_calls": [call]},
                  {"role": "tool", "tool_call_id": f"call_{k}", "content": OUTPUT}]
    return lines


def claude_code_run(steps: int) -> list[dict]:
    from ..test_format_claude_code import answer, calls, piece, user

    chain = [user("u0", None, "Fix the build, please.")]
    for k in range(steps):
        chain.append(piece(f"a{k}", chain[-1]["uuid"], f"m{k}", calls(f"c{k}")))
        chain.append(answer(f"r{k}", f"a{k}", f"c{k}", OUTPUT))
    return with_real_usage(chain)


def codex_run(steps: int) -> list[dict]:
    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}

    lines = [line("session_meta", {"id": "s", "instructions": "Be brief."}),
             line("response_item", {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "Fix the build, please."}]})]
    for k in range(steps):
        lines += [line("response_item", {"type": "function_call", "name": "shell",
                                         "arguments": "{}", "call_id": f"c{k}"}),
                  line("response_item", {"type": "function_call_output", "call_id": f"c{k}",
                                         "output": OUTPUT})]
    return lines


def anthropic_run(steps: int) -> list[dict]:
    lines: list[dict] = [{"role": "user", "content": "Fix the build, please."}]
    for k in range(steps):
        lines += [{"role": "assistant", "content": [
                      {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {}}]},
                  {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": f"t{k}", "content": OUTPUT}]}]
    return lines


RUNS = [chat_run, claude_code_run, codex_run, anthropic_run]


def _leaves(value: object, path: tuple = ()) -> list[tuple]:
    """Paths to every value inside a record."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _leaves(v, (*path, i))
    return out


@st.composite
def odd_transcripts(draw: st.DrawFn) -> bytes:
    """A small run of one format, then made odd: records moved and repeated (ids and
    links twice), odd characters and lone surrogates in its strings, values of other
    types (NaN, huge numbers, arrays) in its fields, a value nested past orjson's limit."""
    records = draw(st.sampled_from(RUNS))(draw(st.integers(2, 6)))
    for _ in range(draw(st.integers(0, 3))):  # move a record
        i = draw(st.integers(0, len(records) - 1))
        records.insert(draw(st.integers(0, len(records) - 1)), records.pop(i))
    for _ in range(draw(st.integers(0, 2))):  # write a record twice
        i = draw(st.integers(0, len(records) - 1))
        records.insert(draw(st.integers(0, len(records))), json.loads(json.dumps(records[i])))
    marks: dict[str, str] = {}
    for n in range(draw(st.integers(0, 4))):  # a value of another kind somewhere
        i = draw(st.integers(0, len(records) - 1))
        path = draw(st.sampled_from(_leaves(records[i])[1:]))
        holder = records[i]
        for key in path[:-1]:
            holder = holder[key]
        old = holder[path[-1]]
        if isinstance(old, str) and draw(st.booleans()):
            holder[path[-1]] = old + draw(st.sampled_from(ODD))
        else:
            mark = f"@odd{n}@"
            depth = draw(st.sampled_from(DEPTHS))
            marks[json.dumps(mark)] = draw(st.sampled_from(
                [*ODD_VALUES, "[" * depth + "]" * depth]))
            holder[path[-1]] = mark
    text = "".join(json.dumps(r) + "\n" for r in records)  # ensure_ascii: \ud800 escapes
    for mark, value in marks.items():
        text = text.replace(mark, value)
    return text.encode()


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=odd_transcripts(), share=st.sampled_from([0.2, 0.4, 1.0]),
       steps=st.integers(0, 2), keep=st.integers(0, 2), cut=st.sampled_from([20, 300]),
       mask=st.booleans())
def test_restore_gives_back_whatever_compress_accepts(data: bytes, share: float, steps: int,
                                                      keep: int, cut: int, mask: bool) -> None:
    try:
        budget = max(billed(data, int(tokens(data) * share)), 1)
        result = compress_file(io.BytesIO(data), Options(
            budget=budget, keep_steps=steps, keep_observations=keep, mask=mask,
            limits=Limits(max_lines=cut), max_summary_tokens=200))
    except (InputError, CannotFit) as exc:
        event(f"refused: {type(exc).__name__}")
        return  # refused, with the line and the problem: no output to restore
    event("summarized" if result.report.summary else "compressed" if result.report.changed
          else "unchanged")
    lines = result.lines
    b"".join(lines).decode("utf-8")  # strict: compress writes UTF-8
    assert restore(lines) == data
