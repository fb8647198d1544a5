"""Where a file's recorded usage comes from, and that every source of it is judged: the
calls a bill anchors on are among those the usage summary adds up, and a count no token
count can be is set aside wherever it is recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import SAMPLES
from .helpers import ctxpack

OPENHANDS = SAMPLES / "openhands" / "env-flags.openhands.jsonl"


def _instance() -> dict[str, Any]:
    return json.loads(OPENHANDS.read_text().splitlines()[0])


def _stats(path: Path) -> dict[str, Any]:
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return json.loads(run.out)["files"][0]


def _write(path: Path, instance: dict[str, Any]) -> Path:
    path.write_text(json.dumps(instance) + "\n")
    return path


def test_an_openhands_metrics_entry_of_no_reply_is_judged(tmp_path: Path) -> None:
    honest = _stats(OPENHANDS)["usage"]
    instance = _instance()
    usages = instance["metrics"]["token_usages"]
    usages.append({"prompt_tokens": -1, "completion_tokens": 10**25, "response_id": "gone"})
    path = _write(tmp_path / "output.jsonl", instance)
    checked = ctxpack("validate", str(path))
    assert checked.code == 1, checked.out
    assert f"{path}:1: recorded usage cannot be true: metrics.token_usages[{len(usages) - 1}]" \
           ".prompt_tokens -1" in checked.out
    usage = _stats(path)["usage"]
    # the entry is out of every total, its made-up reply too
    assert usage["calls_set_aside"] == 1
    for key in ("calls", "input_tokens", "output_tokens", "last_input_tokens"):
        assert usage[key] == honest[key], key


def test_openhands_calls_anchored_on_are_those_the_summary_adds_up(tmp_path: Path) -> None:
    # an instance whose metrics name no response of its events: the events' own usage is
    # not a second source the bill anchors on while the table sums the metrics
    instance = _instance()
    instance["metrics"]["token_usages"] = [
        {"prompt_tokens": 9_000, "completion_tokens": 40, "response_id": "elsewhere"}]
    stats = _stats(_write(tmp_path / "output.jsonl", instance))
    assert stats["usage"]["calls"] == 1
    assert stats["usage"]["source"].startswith("metrics.token_usages")
    assert stats["context"]["kind"] != "anchored"
    # without metrics, the responses' own usage is the one source of both
    del instance["metrics"]
    stats = _stats(_write(tmp_path / "bare.jsonl", instance))
    responses = {e["tool_call_metadata"]["model_response"]["id"]:
                 e["tool_call_metadata"]["model_response"]["usage"]
                 for e in instance["history"]
                 if "usage" in e.get("tool_call_metadata", {}).get("model_response", {})}
    assert stats["usage"]["source"] == "each LLM response's usage"
    assert stats["context"]["kind"] == "anchored"
    assert stats["context"]["calls"] == stats["usage"]["calls"] == len(responses)
    assert stats["usage"]["input_tokens"] == sum(u["prompt_tokens"] for u in responses.values())


def test_an_openhands_response_its_metrics_do_not_list_is_named_not_counted(
        tmp_path: Path) -> None:
    # the metrics are the instance's one source of usage: a response whose own usage
    # they leave out is not counted, and validate says so at its event (a note: the
    # provider would take the file as it is)
    assert "note:" not in ctxpack("validate", str(OPENHANDS)).out
    instance = _instance()
    usages = instance["metrics"]["token_usages"]
    dropped = usages.pop(2)
    path = _write(tmp_path / "output.jsonl", instance)
    event, usage = next(
        (n, e["tool_call_metadata"]["model_response"]["usage"])
        for n, e in enumerate(instance["history"])
        if e.get("tool_call_metadata", {}).get("model_response", {}).get("id")
        == dropped["response_id"])
    checked = ctxpack("validate", str(path))
    assert checked.code == 0, checked.out
    assert checked.out.splitlines() == [
        f"{path}:1: note: event {event}: LLM response {dropped['response_id']}'s usage "
        f"(prompt {usage['prompt_tokens']:,}, reply {usage['completion_tokens']:,}) is not "
        "among the instance's metrics.token_usages, which its usage is read from: not counted"]
    stats = _stats(path)["usage"]
    assert stats["calls"] == len(usages)
    assert stats["input_tokens"] == sum(u["prompt_tokens"] for u in usages)
    doc = json.loads(ctxpack("validate", "--json", str(path)).out)["files"][0]
    assert doc["valid"] and [n["line"] for n in doc["notes"]] == [1]


EVENTS = SAMPLES / "export-timeout.anthropic-events.jsonl"


def _with_list_cost(path: Path, amount: str) -> Path:
    lines = EVENTS.read_text().splitlines()
    at = max(n for n, text in enumerate(lines) if json.loads(text)["type"] == "session.usage")
    record = json.loads(lines[at])
    record["usage"]["list_cost"] = {"amount": amount, "currency": "USD"}
    lines[at] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_managed_agent_list_cost_is_read_in_cents(tmp_path: Path) -> None:
    # the API writes a monetary amount in the currency's minor units, as decimal text:
    # "1079" is $10.79, not $1,079
    path = _with_list_cost(tmp_path / "run.jsonl", "1079")
    usage = _stats(path)["usage"]
    assert (usage["list_cost"], usage["list_cost_currency"]) == (10.79, "USD")
    shown = ctxpack("stats", str(path)).out
    assert "10.79 (recorded total, whole run)" in shown and "1,079" not in shown
    # a run's bound holds in dollars: a cost past it is named as it is written
    bound = 2_097_152_000_000 * 600 // 1_000_000  # a run's most tokens at the dearest price
    fits = _with_list_cost(tmp_path / "fits.jsonl", str(bound * 100))
    past = _with_list_cost(tmp_path / "past.jsonl", str(bound * 100 + 1))
    assert ctxpack("validate", str(fits)).code == 0
    said = ctxpack("validate", str(past))
    assert said.code == 1 and f"usage.list_cost.amount '{bound * 100 + 1}' (more than " \
        f"${bound:,.2f}" in said.out


def test_stats_of_a_loaded_openhands_file_counts_its_empty_instances(tmp_path: Path) -> None:
    # an instance whose run failed before its first event is a conversation with no
    # message: the file and the transcript loaded from it say so alike
    from ctxpack import load, stats

    run = _instance()
    failed = {"instance_id": "x__y-1", "history": [], "metrics": {}}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in (run, failed, run)))
    empty = tmp_path / "failed.jsonl"
    empty.write_text("".join(json.dumps({**failed, "instance_id": f"x__y-{n}"}) + "\n"
                             for n in range(2)))
    for path, held in ((mixed, 3), (empty, 2)):
        of_file, of_transcript = stats(path, cache=False), stats(load(path), cache=False)
        assert of_file.conversations == of_transcript.conversations == held
        assert of_file.to_dict() == of_transcript.to_dict()


def test_a_cline_request_on_a_message_not_written_yet_is_noted(tmp_path: Path) -> None:
    # a task copied between the writes of its two files: the UI log has a request whose
    # message the history does not hold yet; it is named, at its event, without failing
    for name in ("api_conversation_history.json", "ui_messages.json"):
        (tmp_path / name).write_bytes((SAMPLES / "cline-task" / name).read_bytes())
    history = tmp_path / "api_conversation_history.json"
    whole = json.loads(history.read_text())
    events = json.loads((tmp_path / "ui_messages.json").read_text())
    last = max(n for n, e in enumerate(events) if e.get("say") == "api_req_started")
    asked = events[last]["conversationHistoryIndex"]
    honest = _stats(history)["usage"]
    history.write_text(json.dumps(whole[:asked + 1]))
    checked = ctxpack("validate", str(history))
    assert checked.code == 0, checked.out
    assert f"ui_messages.json:1: note: event {last}: a request on history message " \
           f"{asked + 1}, which the history does not hold yet ({asked + 1} messages)" \
           in checked.out
    assert "(1 note)" in checked.err
    report = json.loads(ctxpack("validate", "--json", str(history)).out)["files"][0]
    assert report["valid"] and [n["problem"].split(":")[0] for n in report["notes"]] == [
        f"event {last}"]
    # its usage is still the task's
    usage = _stats(history)["usage"]
    assert (usage["calls"], usage["input_tokens"]) == (honest["calls"], honest["input_tokens"])


def test_an_openhands_call_before_a_condensation_is_judged_too(tmp_path: Path) -> None:
    # a call made on events a condensation forgot is of the usage totals only: a count
    # no token count can be there is named and taken out of them, as any call's
    def run(i: int, cid: str, prompt: int) -> list[dict[str, Any]]:
        response = {"id": f"r{cid}", "choices": [{"message": {"content": ""}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 10}}
        meta = {"function_name": "execute_bash", "tool_call_id": cid,
                "model_response": response}
        return [{"id": i, "source": "agent", "action": "run", "args": {"command": f"ls {i}"},
                 "tool_call_metadata": meta},
                {"id": i + 1, "source": "agent", "observation": "run", "cause": i,
                 "content": f"out {i}", "tool_call_metadata": {"tool_call_id": cid}}]

    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
              *run(1, "a", -7), *run(3, "b", 1_000),
              {"id": 5, "source": "agent", "action": "condensation",
               "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 2}},
              *run(6, "c", 1_200)]
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(events, indent=2))
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and "event 1: recorded usage cannot be true: " \
        "tool_call_metadata.model_response.usage.prompt_tokens -7" in checked.out
    usage = _stats(path)["usage"]
    assert (usage["calls"], usage["calls_set_aside"]) == (2, 1)
    assert (usage["input_tokens"], usage["output_tokens"]) == (2_200, 20)
