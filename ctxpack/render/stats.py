"""Stats as Rich tables, JSON, CSV and markdown, all from the same FileStats objects."""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from rich.console import Console
from rich.table import Table

from ..breakdown import SCHEMA_VERSION, FileStats
from ..calibration import Bill, below_words, unlogged_cause
from ..formats.base import no_input
from ..jsonl import dumps
from ..numbers import figure
from ..recorded import WHOLE_RUN
from . import counted, markup, plain

CSV_ROLES = ("system", "developer", "user", "assistant", "tool", "reasoning", "priming")
MAX_ROUNDS_SHOWN = 12


def total(files: list[FileStats]) -> dict[str, Any]:
    """Totals over files: sums of tokens and messages, merged roles and tools."""
    by_role: dict[str, int] = {}
    by_tool: dict[str, dict[str, int]] = {}
    for f in files:
        for role, n in f.by_role.items():
            by_role[role] = by_role.get(role, 0) + n
        for name, t in f.by_tool.items():
            agg = by_tool.setdefault(name, {"calls": 0, "tokens": 0})
            agg["calls"] += t.calls
            agg["tokens"] += t.tokens
    return {
        "files": len(files),
        "conversations": sum(f.conversations for f in files),
        "largest_conversation": max((conversation_tokens(f) for f in files), default=0),
        "messages": sum(f.messages for f in files),
        "tokens": sum(f.tokens for f in files),
        # the bill beside the count: every conversation of every file, and the largest
        # conversation of any (what --max-tokens and each file's context_ratio are of)
        "billed_all_conversations": sum(file_billed(f) for f in files),
        "billed_largest_conversation": max((billed(f) for f in files), default=0),
        "exact": all(f.exact for f in files),
        "by_role": by_role,
        "by_tool": dict(sorted(by_tool.items(), key=lambda kv: -kv[1]["tokens"])),
    }


def conversation_tokens(f: FileStats) -> int:
    """The tokens of the file's largest conversation (of its one, most often)."""
    return f.largest_conversation["tokens"] if f.largest_conversation else f.tokens


def billed(f: FileStats) -> int:
    """The file's context as billed (of its largest conversation, in a file of several):
    what --max-tokens is set against and `context_ratio` is the share of; the count where
    there is no bill."""
    return f.context.tokens if f.context is not None else f.tokens


def file_billed(f: FileStats) -> int:
    """All the file's conversations as billed (`context.file_tokens`)."""
    return f.file_context if f.file_context is not None else billed(f)


def to_json(files: list[FileStats], unread: list[dict[str, Any]] | None = None) -> bytes:
    """The versioned JSON document of `stats --json`; `unread`, the inputs that could not
    be read (`path`, `line`, `problem`)."""
    doc = {"schema_version": SCHEMA_VERSION, "files": [f.to_dict() for f in files],
           "total": total(files), "unread": unread or []}
    return dumps(doc, indent=2) + b"\n"


# the context as billed (`context` in the JSON): its kind, tokens, the part in the file
# and the rest, and the expected error ("" where unknown); of a file of several
# conversations (the last column), its largest's
CSV_BILLED = ("billed_kind", "billed_tokens", "billed_visible", "billed_not_in_file",
              "billed_error")


def to_csv(files: list[FileStats]) -> str:
    """One row per file, fixed columns, for spreadsheets and shell tools."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["path", "format", "model", "encoding", "exact", "messages", "tokens",
                     "rounds", "steps", "context_window", "context_ratio",
                     *(f"tokens_{r}" for r in CSV_ROLES), "outside_messages",
                     "sidechain_messages", "recorded_last_input_tokens", *CSV_BILLED,
                     "conversations"])
    for f in files:
        # a file's text with its control characters escaped, as the table shows it: a
        # model or path holding ESC, CR or NUL would otherwise reach a terminal or split a row
        c = f.context
        row = [f.path, f.format, f.model, f.encoding, str(f.exact).lower(), f.messages,
               f.tokens, len(f.rounds), f.steps, f.context_window or "",
               "" if f.context_ratio is None else f.context_ratio,
               *(f.by_role.get(r, 0) for r in CSV_ROLES), f.outside["messages"],
               f.sidechain["messages"], f.usage.get("last_input_tokens", ""),
               *((c.kind, c.tokens, c.visible, c.not_in_file,
                  "" if c.error is None else c.error) if c else ("",) * len(CSV_BILLED)),
               f.conversations]
        writer.writerow([plain(x) if isinstance(x, str) else x for x in row])
    return out.getvalue()


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _tables(f: FileStats) -> list[tuple[str, list[str], list[list[str]]]]:
    """The stats of one file as (title, header, rows) tables, shared by Rich and markdown."""
    tables = []
    rows = [[role, f"{n:,}", _pct(n, f.tokens)] for role, n in
            sorted(f.by_role.items(), key=lambda kv: -kv[1])]
    if rows:  # none for a file of no model input, which its summary says
        tables.append(("Tokens by role", ["role", "tokens", "share"], rows))
    if f.by_tool:
        rows = [[name, str(t.calls), f"{t.call_tokens:,}", f"{t.result_tokens:,}",
                 f"{t.tokens:,}", _pct(t.tokens, f.tokens)] for name, t in f.by_tool.items()]
        tables.append(("Tokens by tool", ["tool", "calls", "call tokens", "result tokens",
                                          "total", "share"], rows))
    if f.largest:
        placed = any(x.place for x in f.largest)  # a one-line document: places, not lines
        rows = [[x.place or str(x.line) if placed else str(x.line), x.role, x.tool or "",
                 f"{x.tokens:,}", x.preview] for x in f.largest]
        tables.append((f"Largest {len(f.largest)} messages",
                       ["place" if placed else "line", "role", "tool", "tokens", "preview"],
                       rows))
    if f.rounds:
        shown = f.rounds if len(f.rounds) <= MAX_ROUNDS_SHOWN else \
            sorted(sorted(f.rounds, key=lambda r: -r.tokens)[:MAX_ROUNDS_SHOWN],
                   key=lambda r: r.number)
        title = "Rounds" if len(shown) == len(f.rounds) else \
            f"Rounds ({len(shown)} largest of {len(f.rounds)})"
        placed = any(r.place for r in shown)  # a one-line document: places, not lines
        rows = [[str(r.number), r.place or str(r.line) if placed else str(r.line),
                 str(r.messages), str(r.steps), f"{r.tokens:,}", f"{r.cumulative:,}"]
                for r in shown]
        tables.append((title, ["round", "place" if placed else "line", "messages", "steps",
                               "tokens", "cumulative"], rows))
    if f.usage:
        run = f.usage.get(WHOLE_RUN, ())
        rows = [[k, _usage_value(v) + (" (recorded total, whole run)" if k in run else "")]
                for k, v in f.usage.items() if k not in ("explanation", WHOLE_RUN)]
        tables.append(("Recorded provider usage", ["field", "value"], rows))
    return tables


def _usage_value(v: object) -> str:
    """A recorded usage figure as a person reads it: counts with thousands marks, an amount
    (a cost) to the millionth, without a float's binary tail (6.200731500000001)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, int):
        return figure(v)
    return f"{v:,.6f}".rstrip("0").rstrip(".")


def summary_lines(f: FileStats) -> list[str]:
    """The headline facts of one file, one per line."""
    exactness = ("exact" if f.exact else "approximate") + (f": {f.note}" if f.note else "")
    lines = [
        f"{f.path}  [{f.format}]" + (f"  (format unsure: {f.unsure})" if f.unsure else ""),
        f"model {f.model} ({f.encoding}, {exactness})",
        f"{f.tokens:,} tokens in {counted(f.messages, 'message')}, "
        f"{counted(len(f.rounds), 'round')}, {counted(f.steps, 'step')}",
    ]
    if not f.messages:
        held = f" in {counted(f.conversations, 'conversation')}" if f.conversations else ""
        lines.append(f"no model input{held}: " + no_input(f.outside["messages"],
                                                   f.sidechain["messages"], len(f.skipped),
                                                   len(f.failed), f.format))
    lines += context_lines(f)
    if f.outside["messages"]:
        lines.append(f"outside the model's context: {counted(f.outside['messages'], 'message')}, "
                     f"{f.outside['tokens']:,} tokens ({f.outside['why']})")
    if f.sidechain["messages"]:
        lines.append(f"sub-agent (sidechain): {counted(f.sidechain['messages'], 'message')}, "
                     f"{f.sidechain['tokens']:,} tokens")
    if f.skipped:
        lines.append(f"skipped {counted(len(f.skipped), 'invalid line')}: "
                     + ", ".join(str(s["line"]) for s in f.skipped[:10]))
    if f.failed:
        lines.append(f"{counted(len(f.failed), 'request')} failed, no reply (`ctxpack "
                     f"validate` says why): line{'s' * (len(f.failed) > 1)} "
                     + ", ".join(f"{x['line']:,}" for x in f.failed[:10]))
    return lines


def context_lines(f: FileStats) -> list[str]:
    """The context as the provider would bill it: how much, what kind of count, the part
    the file holds and the rest."""
    c = f.context
    if c is None:
        return []
    of = f" of {f.context_window:,} ({f.context_ratio or 0:.1%})" if f.context_window else ""
    largest = f.largest_conversation
    which = "" if largest is None else \
        f" (the largest of {f.conversations:,} conversations: number {largest['number']:,})"
    if c.kind == "exact":
        return [f"context{which}: {c.tokens:,}{of}, exact", *window_lines(f),
                *set_aside_lines(f)]
    unlogged = f" + {round(c.overhead):,} sent but not logged" if c.overhead else ""
    if c.earlier:
        measured = "the call" if c.earlier == 1 else f"the {c.earlier:,} calls"
        unlogged += f" (the table's: {measured} before the compaction " \
            f"measure{'s' if c.earlier == 1 else ''} " \
            f"{c.past_window:,}, past the model's window)" if c.past_window else \
            f" (measured on {measured} before the compaction)" if unlogged else ""
    at = c.calls - len(c.passed)  # (the call the bill would rest on)
    holds = f"the count of call {at + 1:,}'s prompt (its usage did not grow with the " \
        "messages)" if c.sends else "the count of its own prompt"
    below = "" if not c.below else \
        f", as with no usage recorded: {_every(c.calls)} {below_words(c.sends)} (the last " \
        f"says {c.below:,}), so none is used" if len(c.passed) == c.calls else \
        f", as with no usage recorded: {_last_few(len(c.passed), c.calls)} " \
        f"{below_words(c.sends)}, and call {at:,} before " \
        f"{'it' if len(c.passed) == 1 else 'them'} says {c.below:,}, below {holds}, so none " \
        "is used"
    how = {"calibrated": f"calibrated: {slope_text(c.slope)} × the count{unlogged}{below}",
           "anchored": f"anchored on {_anchor_of(c)}, "
                       f"+ {slope_text(c.after or c.slope)} × the count of what came after",
           "estimated": "estimated: counted with another tokenizer, not calibrated"}[c.kind]
    error = "error unknown" if c.error is None else \
        f"expected error ±{c.error:.1%}"
    lines = [f"context as billed{which}: {c.tokens:,}{of} ({how}; {error})"]
    if c.not_in_file:
        why = f.not_in_file_why or unlogged_cause()
        lines.append(f"  in the file {c.visible:,}, not in the file {c.not_in_file:,} ({why})")
    elif c.summarized:
        lines.append(f"  the file holds more than was sent ({c.counted:,} counted): "
                     f"{c.summarized}, so the bill rests on the recorded calls, none of it "
                     "counted as not in the file")
    elif c.kind == "anchored":
        lines.append("  none of it counted as not in the file: the last call anchored on was "
                     "billed below the calibrated count of its prompt, so the file's own "
                     "ratio is the slope (the file may hold more than was sent)")
    if f.no_room:
        lines.append(f"  no room for the messages: {f.no_room}")
    return lines + usage_of_lines(f) + refused_lines(f) + passed_lines(f) + window_lines(f) \
        + set_aside_lines(f)


def refused_lines(f: FileStats) -> list[str]:
    """Why the slope the file's own calls read is not the bill's (see
    calibration.implausible)."""
    if f.context is None or not f.context.refused:
        return []
    return [f"  the slope the file's calls read is not used, as no slope of {f.context.model} "
            f"can be: {f.context.refused} (usage that does not grow with the messages); the "
            "table's is"]


def usage_of_lines(f: FileStats) -> list[str]:
    """Why the file's recorded usage is not used, where `--model` named another model."""
    if f.context is None or not f.context.usage_of:
        return []
    return [f"  recorded usage not used: it is of {f.context.usage_of}, the model that made "
            f"the calls, not {f.model}"]


def _anchor_of(c: Bill) -> str:
    """The call an anchored bill rests on: the last, or the last not far below the count;
    or the size a compaction states it left, where no call was made since."""
    if c.stated:
        return "the size its compaction states it left (no call made since)"
    if not c.passed:
        return f"the {_last_of(c.calls)}"
    at = c.calls - len(c.passed)
    over = f"call {c.calls:,}" if at + 1 == c.calls else f"calls {at + 1:,} to {c.calls:,}"
    return f"recorded call {at:,} of {c.calls:,}, passing over {over} ({below_words(c.sends)})"


def passed_lines(f: FileStats) -> list[str]:
    """The last recorded calls an anchored bill passed over, where there are any."""
    if f.context is None or f.context.kind != "anchored" or not f.passed_over:
        return []
    where = ", ".join(f"line {x['line']:,} ({x['billed']:,} recorded)" for x in f.passed_over[:5])
    more = f" (+{len(f.passed_over) - 5} more)" if len(f.passed_over) > 5 else ""
    return [f"  passed over, as {below_words(f.context.sends)} (made up, or old outputs the "
            f"agent cut itself): {where}{more}"]


def set_aside_lines(f: FileStats) -> list[str]:
    """The recorded usage left out of the bill and the window, where there is any: what
    cannot be true, and what cannot be read."""
    out = []
    if f.set_aside:
        out.append(_usage_left_out("set aside, as it cannot be true",
                                   [_where(x) for x in f.set_aside]))
    if f.unread:
        out.append(_usage_left_out("that cannot be read, not counted",
                                   [_where(x) for x in f.unread]))
    return out


def _where(aside: dict[str, object]) -> str:
    """Where usage left out is: its place in a document (`line 49 event 4`) or its line,
    in the file it is in where that is not the transcript (`ui_messages.json ...`)."""
    where = str(aside.get("place") or f"line {aside['line']:,}")
    return f"{os.path.basename(str(aside['file']))} {where}" if aside.get("file") else where


def _usage_left_out(what: str, places: list[str]) -> str:
    more = f" (+{len(places) - 5} more)" if len(places) > 5 else ""
    return (f"  recorded usage {what} (`ctxpack validate` says why): "
            f"{', '.join(places[:5])}{more}")


def slope_text(slope: float) -> str:
    """A slope as precise as it is given (a config's 1.005, the table's 1.21), to four
    decimals at most (a file's own ratio)."""
    return f"{slope:.4f}".rstrip("0").rstrip(".")


def window_lines(f: FileStats) -> list[str]:
    """Why the window is more than the one assumed for the model, where it is, and that
    the bill is over the window, where it is."""
    if not f.context_window:
        return []
    grown = f.window_assumed is not None
    out = [f"  window {f.context_window:,}: the largest call the file records (prompt and "
           f"reply), more than the {f.window_assumed:,} assumed for {f.model}"] if grown else []
    over = (f.context.tokens if f.context is not None else 0) - f.context_window
    if over > 0:
        # (a window the file's largest call sets is the least the model's can be: the bill
        # adds, counted, what came after that call's prompt, its reply among it)
        out.append(f"  over the window by {over:,}: " + (
            "the window is the least the model's can be (the largest call recorded), and "
            "the bill adds what came after the last call's prompt as counted" if grown else
            "the next call would not fit"))
    return out


def to_markdown(files: list[FileStats]) -> str:
    """GitHub-flavoured markdown: a section per file."""
    out: list[str] = []
    for f in files:
        head, *rest = summary_lines(f)
        out += [f"## {plain(head)}", "", *(_item(plain(line)) for line in rest), ""]
        for title, header, rows in _tables(f):
            out += [f"### {title}", "", "| " + " | ".join(header) + " |",
                    "|" + "|".join("---" for _ in header) + "|"]
            out += ["| " + " | ".join(plain(c).replace("|", "\\|") for c in row) + " |"
                    for row in rows]
            out.append("")
    if len(files) > 1:
        t = total(files)
        out += [f"**Total:** {t['tokens']:,} tokens counted in {t['messages']:,} messages, "
                f"{t['files']} files, {t['conversations']:,} conversations; "
                f"{t['billed_all_conversations']:,} billed over every conversation (the "
                f"largest conversation {t['billed_largest_conversation']:,})", ""]
    return "\n".join(out)


def _item(line: str) -> str:
    """A summary line as a markdown list item: one the text indents (`  in the file ...`)
    nested under the item before it, as the terminal shows it."""
    body = line.lstrip(" ")
    return f"{' ' * (len(line) - len(body))}- {body}"


def print_tables(console: Console, files: list[FileStats]) -> None:
    """Rich tables for a person at a terminal."""
    for f in files:
        head, *rest = summary_lines(f)
        console.print(f"[bold]{markup(head)}[/bold]")
        for line in rest:
            console.print(f"  {markup(line)}", highlight=False)
        for title, header, rows in _tables(f):
            table = Table(title=title, title_justify="left", title_style="bold")
            for i, h in enumerate(header):
                numeric = h in ("tokens", "calls", "call tokens", "result tokens", "total",
                                "share", "line", "messages", "steps", "cumulative", "round")
                table.add_column(h, justify="right" if numeric else "left",
                                 overflow="fold" if i == len(header) - 1 else "ellipsis")
            for row in rows:
                table.add_row(*(markup(c) for c in row))
            console.print(table)
        console.print()
    if len(files) > 1:
        print_total(console, files)


# the "All files" table's columns: each header on the lines it takes (short, so that the
# names have room on 80 columns), and whether it holds names (wrapped) or a figure (whole)
TOTAL_COLUMNS = (("file", True), ("format", True), ("conver-\nsations", False),
                 ("messages", False), ("tokens\ncounted", False), ("context\nbilled", False),
                 ("of\nwindow", False))
TOTAL_CAPTION = ("tokens counted: ctxpack's count of everything each file holds. context billed: "
                 "the context as the provider would bill it (what --max-tokens checks), and "
                 "its share of the window (--max-ratio); marked *, of the file's largest "
                 "conversation, where it holds several. The total row adds every "
                 "conversation of every file, so its bill is more than the column's sum "
                 "where a file holds several.")


def print_total(console: Console, files: list[FileStats]) -> None:
    """The "All files" table: each file's count and bill, side by side and named so."""
    t = total(files)
    folder, names = _below_common([f.path for f in files])
    title = f"All files (in {markup(folder)})" if folder else "All files"
    table = Table(title=title, title_justify="left", title_style="bold",
                  caption=TOTAL_CAPTION, caption_justify="left")
    for header, name in TOTAL_COLUMNS:
        # a long name is wrapped, never cut: its end (or a folder of it) may be all that
        # tells two files apart
        table.add_column(header, justify="left" if name else "right", overflow="fold",
                         no_wrap=not name, min_width=12 if header == "file" else None)
    for f, name in zip(files, names, strict=True):
        # (a file of several conversations is billed by its largest: marked so, as its
        # count beside it is of them all)
        mark = "*" if f.conversations > 1 else ""
        ctx = f"{f.context_ratio:.1%}{mark}" if f.context_ratio is not None else "-"
        table.add_row(markup(name), f.format, f"{f.conversations:,}", f"{f.messages:,}",
                      f"{f.tokens:,}", f"{billed(f):,}{mark}", ctx)
    table.add_row("total", "", f"{t['conversations']:,}", f"{t['messages']:,}",
                  f"{t['tokens']:,}", f"{t['billed_all_conversations']:,}", "", style="bold")
    console.print(table)


def _below_common(paths: list[str]) -> tuple[str, list[str]]:
    """The folder every path is below (with its separator; "" if none but the root or the
    current folder), and each path below it."""
    try:
        folder = os.path.commonpath([os.path.dirname(p) for p in paths])
    except ValueError:  # absolute and relative paths, or stdin's name among them
        folder = ""
    if folder in ("", os.sep, os.curdir):
        return "", paths
    folder = os.path.join(folder, "")
    return folder, [p.removeprefix(folder) for p in paths]


def _every(calls: int) -> str:
    """`all 11 recorded calls are`, or `the one recorded call is`."""
    return "the one recorded call is" if calls == 1 else f"all {calls:,} recorded calls are"


def _last_few(passed: int, calls: int) -> str:
    """`the last 3 of 11 recorded calls are`, or `the last of 11 recorded calls is`."""
    return f"the last of {calls:,} recorded calls is" if passed == 1 else \
        f"the last {passed:,} of {calls:,} recorded calls are"


def _last_of(calls: int) -> str:
    """`last of 24 recorded calls`, or `one recorded call`."""
    return "one recorded call" if calls == 1 else f"last of {calls:,} recorded calls"
