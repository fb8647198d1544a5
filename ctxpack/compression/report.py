"""What a compress did, as the table on stderr and `--report-json` show it: one report
over the plans of a file's conversations (most files have one)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import formats
from ..archive import Archiver
from ..calibration import Bill, below_words, bill
from ..formats.base import naming
from ..tokens import REPLY_PRIMING
from ..transcript import RecordedCall, printable
from .plan import Plan, StageReport
from .reading import Input
from .sight import DROPPED_LISTED, sight
from .summary import retention_of
from .writer import carried, carried_call

REPORT_VERSION = 3  # 2: `steps` became `stages`, and the limit and llm stages have rows;
# 3: trigger, target and limit are in billed tokens, and `billed` says what is billed


@dataclass
class Report:
    """What a compress did, as the table on stderr and `--report-json` show it. Tokens
    are ctxpack's count of the messages; `billed` is the prompt before and after as the
    provider would bill it (tokens_before with its kind and error, tokens_after with
    kind_after and error_after, not_in_file and slope: see ctxpack.calibration and
    `left_bill`), and trigger, target and limit are in those billed tokens."""

    path: str
    format: str
    model: str
    exact: bool
    model_note: str
    context_window: int
    trigger: int
    target: int
    limit: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    stages: list[StageReport] = field(default_factory=list)
    billed: dict[str, Any] = field(default_factory=dict)
    truncated: int = 0
    masked: int = 0
    summary: dict[str, Any] | None = None
    llm: dict[str, Any] | None = None  # what the llm summarizer did and cost, if asked
    # the retention audit of the whole output: of the facts taken out of sight (archived,
    # masked, truncated), those the model still sees anywhere in it (see `sight`)
    seen: dict[str, Any] | None = None
    archive: str = "inline"
    warnings: list[str] = field(default_factory=list)
    changed: bool = False
    conversations: int = 1
    schema_version: int = REPORT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def report_of(given: Input, plans: list[Plan], archiver: Archiver,
              strip: bool = False) -> Report:
    """One report over the plans of a file's conversations; `strip`: the output is written
    without `ctxpack` objects (`--strip-metadata`)."""
    t, counter = given.transcript, given.counter
    first = plans[0] if plans else None
    removed = sum(s.removed for p in plans if (s := p.summary))
    stages = _stages([r for p in plans for r in p.stages])
    items = {s.name: s.items for s in stages}
    archive = ("none" if not archiver.enabled else
               "inline" if archiver.folder is None else f"dir:{archiver.folder}")
    left = left_bill(given, plans, strip)  # (the report's figure after, and its warning)
    return Report(
        path=t.path, format=t.format, model=given.model, exact=counter.exact,
        model_note=counter.note, context_window=given.window,
        trigger=first.billed_trigger if first else 0,
        target=first.billed_target if first else 0, limit=first.billed_limit if first else 0,
        tokens_before=sum(p.read.total for p in plans), tokens_after=sum(p.total for p in plans),
        messages_before=len(t.messages), messages_after=len(t.messages) - removed,
        stages=stages,
        billed=_billed(given, plans, left,
                       not (_strip_loses(given, plans, strip) and restated(given))),
        truncated=items.get("truncate", 0), masked=items.get("mask", 0),
        summary=_summaries(plans), llm=_llm(plans), seen=_seen(plans), archive=archive,
        warnings=warnings_of(given, plans) + uncarried(given, plans, strip, left),
        changed=any(p.changed for p in plans), conversations=len(plans))


def warnings_of(given: Input, plans: list[Plan]) -> list[str]:
    """What a compress warns of: the format's, the bill's (`passed_over`) and the plans',
    each once (the conversations of a file share its settings and model)."""
    return list(dict.fromkeys([*_not_read_back(given.transcript.format, given.transcript.path),
                               *passed_over(given.bill),
                               *(x for p in plans for x in p.warnings)]))


def _not_read_back(name: str, path: str) -> list[str]:
    """What compress says of a format whose agent reads no file it writes (`path`)."""
    note = naming(getattr(formats.get(name), "not_read_back", None), path)
    return [note] if note else []


def passed_over(b: Bill) -> list[str]:
    """What compress says of the last calls whose usage is far below the count of their
    prompts (see calibration.far_below), which its bill passed over as stats does: a usage
    given to the library (`usage=`) as much as a file's recorded calls; and that the usage
    recorded is not used at all, where it is of another model than the one billed (see
    calibration.bill_for)."""
    if b.usage_of:
        return [f"the recorded usage is of {b.usage_of}, the model that made the calls, not "
                f"{printable(b.model or '')}: not used; billed as with no usage recorded"]
    if not b.passed:
        return []
    n, last = len(b.passed), b.passed[-1][1]
    usage = "the usage of the last call" if n == 1 else f"the usage of the last {n:,} calls"
    below = "far below the count of what was sent" if not b.sends else below_words(b.sends)
    why = (f"{usage} ({last:,} tokens{'' if n == 1 else ', the last'}) is {below} (made up, "
           "or of an agent that cut old outputs itself): passed over")
    if b.below:
        return [f"{why}; billed as with no usage recorded"]
    return [f"{why}; anchored on call {b.calls - n:,} of {b.calls:,}"]


def _billed(given: Input, plans: list[Plan], left: Bill, as_stats: bool) -> dict[str, Any]:
    """The prompt before and after as the provider would bill it, each figure with its
    own kind and expected error (that after as `stats` of the output says them: `left`,
    the `left_bill` of the plans; not `as_stats` where stats of the output bills it on the
    usage compress restates, within both errors: see `_restated_only`)."""
    b = given.bill
    before = b(sum(p.read.total for p in plans)) if plans else b.tokens
    after = sum(p.billed for p in plans) if plans else b.tokens
    return {"kind": b.kind, "tokens_before": before, "tokens_after": after,
            "not_in_file": min(left.unlogged, after),  # (as stats of the output splits it)
            "slope": b.slope, "error": b.error,
            "kind_after": left.kind, "error_after": left.error, "as_stats": as_stats}


def left_bill(given: Input, plans: list[Plan], strip: bool = False) -> Bill:
    """The bill of what the plans leave, as ctxpack bills the output: where compress
    changed something and the lines it writes carry what the input's calls showed is
    sent besides the messages (`writer.carried`), anchored on that, the messages kept
    calibrated (see loader.Scanner._stale_calls: the calls kept were of the context
    before); else the input's own. Written without `ctxpack` objects (`strip`), an output
    whose format has compress restate no usage carries nothing (`uncarried`): one that
    keeps no recorded call is billed as a file that records none; one that keeps some
    is anchored on them, as the input is."""
    b = given.bill
    call = carried_call(b)
    if call is None or not any(p.changed for p in plans):
        return b
    counter = given.counter
    kept = [sum(p.total for p in plans) - REPLY_PRIMING * len(plans)]
    lost = strip and not restated(given)
    if lost and _kept_calls(given, plans):
        return b
    calls = [] if lost else [call]
    return bill(kept, calls, model=b.model, format=given.transcript.format,
                exact=counter.exact, estimated=counter.failed, table=counter.table,
                priming=REPLY_PRIMING * len(plans))


def restated(given: Input) -> bool:
    """Does compress restate the usage of the records it keeps, and state the size of the
    context it leaves, in the input's format (Claude Code, Codex), so that an output
    without `ctxpack` objects is still billed as compress billed it?"""
    return bool(getattr(formats.get(given.transcript.format), "restates_usage", False))


def _kept(given: Input, plans: list[Plan]) -> list[RecordedCall]:
    """The input's recorded calls whose reply the output keeps."""
    messages = given.transcript.messages
    archived = {id(m) for p in plans if (s := p.summary) is not None
                for m in p.read.messages[s.start:s.end]}
    return [c for c in given.transcript.calls
            if c.prompt < len(messages) and id(messages[c.prompt]) not in archived]


def _kept_calls(given: Input, plans: list[Plan]) -> int:
    """How many of the input's recorded calls the output keeps the reply of (with its
    usage, of the context before)."""
    return sum(1 for c in _kept(given, plans) if c.billed > 0)


def _kept_hidden(given: Input, plans: list[Plan]) -> int:
    """The output the replies kept hold hidden (thinking stored empty, reasoning held
    encrypted), as recorded: in the provider's tokens (see calibration.with_hidden)."""
    return sum((c.output or 0) * c.hidden + c.reasoning * (c.until is None)
               for c in _kept(given, plans))


def uncarried(given: Input, plans: list[Plan], strip: bool, left: Bill) -> list[str]:
    """What compress says of an output written without `ctxpack` objects (`strip`) that
    therefore keeps nothing of what the input's calls showed is sent besides the messages
    (`left`: the `left_bill` of the plans): `stats` of it cannot bill it as this report
    does, and why."""
    b, after = given.bill, sum(p.billed for p in plans)
    known = carried(b)
    if not _strip_loses(given, plans, strip) or known is None:
        return []
    if restated(given):
        return [_restated_only(given, plans, after)]
    lost = (f"--strip-metadata: the output keeps no note of the {known:,} tokens the calls "
            f"showed are sent besides the messages (in {given.transcript.format} files it "
            "has no place but compress's `ctxpack` objects)")
    if n := _kept_calls(given, plans):
        calls = "the recorded call it keeps states" if n == 1 else \
            f"the {n:,} recorded calls it keeps state"
        return [f"{lost}, and {calls} usage of the context before: `stats` of it bills it "
                f"anchored on that, not the {after:,} billed here"]
    return [f"{lost}, and it keeps no recorded call: `stats` of it bills it {left.kind} "
            f"({left.tokens:,}), as a file that records none, not the {after:,} billed here"]


def _strip_loses(given: Input, plans: list[Plan], strip: bool) -> bool:
    """Whether an output written without `ctxpack` objects (`strip`) loses what compress
    carries of the input's bill: it changed something, and the bill carries a figure."""
    return strip and carried(given.bill) is not None and any(p.changed for p in plans)


def _restated_only(given: Input, plans: list[Plan], after: int) -> str:
    """What compress says of an output written without `ctxpack` objects in a format
    whose usage it restates (Claude Code, Codex): `stats` of it anchors on that usage
    (or on the size its compaction states, where it keeps no call), not on the slope and
    overhead this bill has from the input's calls, which the format has no place for. So
    its bill is within the expected errors of this report's, not equal; what it splits
    off as not in the file, and that figure's error, are its own; and the hidden output
    the replies kept hold (`_kept_hidden`) is converted at the slope the restated calls
    show (the model table's where they show none), so the count differs too."""
    b = given.bill
    hidden = _kept_hidden(given, plans)
    count = (f"; the {hidden:,} tokens of hidden output the replies kept hold (thinking "
             "stored empty, reasoning held encrypted) are converted at the slope the "
             "restated calls show, or the model table's, not this file's "
             f"{b.converted:.3f}: its token count differs") if hidden else ""
    return (f"--strip-metadata: the output keeps no note of the slope ({b.slope:.3f}) and "
            f"the {carried(b):,} tokens the calls showed are sent besides the messages "
            f"(in {given.transcript.format} files they have no place but compress's "
            "`ctxpack` objects): `stats` of it anchors on the usage compress restates, so "
            f"its bill is within the two expected errors of the {after:,} billed here, "
            "not equal to it, and what it counts as not in the file, and that figure's "
            f"expected error, are its own{count}")


def _stages(reports: list[StageReport]) -> list[StageReport]:
    """Each stage's numbers summed over conversations."""
    out: dict[str, StageReport] = {}
    for s in reports:
        total = out.get(s.name)
        out[s.name] = s if total is None else StageReport(
            s.name, total.tokens_before + s.tokens_before, total.tokens_after + s.tokens_after,
            total.items + s.items, total.note or s.note)
    return list(out.values())


def _summaries(plans: list[Plan]) -> dict[str, Any] | None:
    """The summaries written, as one: sizes summed, the retention audit merged."""
    done = [s for p in plans if (s := p.summary) is not None]
    if not done:
        return None
    retention: dict[str, dict[str, Any]] = {}
    for s in done:
        for name, r in retention_of(s).items():
            total = retention.setdefault(name, {"total": 0, "kept": 0, "dropped": []})
            total["total"] += r["total"]
            total["kept"] += r["kept"]
            total["dropped"] += r["dropped"]
    s = done[0]
    return {"strategy": s.strategy, "start": s.start, "end": s.end,
            "conversations": len(done), "messages": sum(s.end - s.start for s in done),
            "audited_messages": sum(s.audited for s in done),
            "archived_tokens": sum(s.archived_tokens for s in done),
            "archived_tokens_read": sum(s.read_tokens for s in done),
            "tokens": sum(s.tokens for s in done),
            "max_tokens": sum(s.max_tokens for s in done),
            "cap_tokens": sum(s.cap for s in done),
            "squeezed": any(s.squeezed for s in done), "retention": retention}


def _seen(plans: list[Plan]) -> dict[str, Any] | None:
    """The whole-output audit over a file's conversations: counts summed, the dropped
    facts of the first named."""
    done = [found for p in plans if (found := sight(p)) is not None]
    if not done:
        return None
    out = dict(done[0])
    for more in done[1:]:
        for name, value in more.items():
            if isinstance(value, int):
                out[name] += value
            elif isinstance(value, str) or name not in out:
                out[name] = out.get(name) or value  # (not audited: it says why)
            else:
                out[name] = {"total": out[name]["total"] + value["total"],
                             "kept": out[name]["kept"] + value["kept"],
                             "dropped": (out[name]["dropped"] + value["dropped"])[
                                 :DROPPED_LISTED]}
    return out


def _llm(plans: list[Plan]) -> dict[str, Any] | None:
    """What the llm summarizer did over a file's conversations: numbers summed, the
    first fallback reason told."""
    done = [s.llm for p in plans if (s := p.summary) is not None and s.llm is not None]
    if not done:
        return None
    out = dict(done[0])
    for more in done[1:]:
        for name, value in more.items():
            if name == "redacted":
                out[name] = dict(Counter(out.get(name) or {}) + Counter(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                out[name] = out.get(name, 0) + value
        out["used"] = out["used"] and more["used"]
        out["fallback"] = out["fallback"] or more["fallback"]
    return out
