"""The compress report as a Rich table on stderr, and as JSON for --report-json."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..compression import Report
from ..jsonl import dumps
from . import counted, markup


def to_json(report: Report) -> bytes:
    return dumps(report.to_dict(), indent=2) + b"\n"


def print_report(console: Console, report: Report, *, dry_run: bool = False) -> None:
    """Tokens before and after each stage, then the summary and its retention audit."""
    r = report
    if not r.messages_before:  # a table of zeros would say no more than this
        console.print(f"{markup(r.path)}: nothing to compress: the file holds no message "
                      "that reaches the model", highlight=False)
        for warning in r.warnings:
            console.print(f"[yellow]warning:[/yellow] {markup(warning)}")
        return
    exact = "" if r.exact else " (approximate)"
    title = (f"{markup(r.path)}: {r.format}, {markup(r.model)}{exact}, "
             f"window {r.context_window:,}"
             + (" — dry run, nothing written" if dry_run else ""))
    table = Table("stage", title=title, title_justify="left")
    for name in ("tokens before", "tokens after", "saved", "items"):
        table.add_column(name, justify="right")
    for stage in r.stages:
        saved = stage.tokens_before - stage.tokens_after
        items = f"{stage.items:,}" + (f" ({stage.note})" if stage.note else "")
        table.add_row(stage.name, f"{stage.tokens_before:,}", f"{stage.tokens_after:,}",
                      f"{saved:,}", items)
    table.add_row("total", f"{r.tokens_before:,}", f"{r.tokens_after:,}",
                  f"{r.tokens_before - r.tokens_after:,}", "", style="bold")
    console.print(table)
    b = r.billed
    billed = b["tokens_after"] if b else r.tokens_after
    if b and not b["kind"] == b["kind_after"] == "exact":
        console.print(f"billed: {b['tokens_before']:,} ({_kind(b['kind'], b['error'])}) -> "
                      f"{b['tokens_after']:,} tokens ({_kind(b['kind_after'], b['error_after'])})"
                      f", {b['not_in_file']:,} of them sent but not in the file",
                      highlight=False)
    used = billed / r.context_window if r.context_window else 0
    console.print(f"messages {r.messages_before:,} -> {r.messages_after:,}; "
                  f"{counted(r.truncated, 'output')} truncated, {r.masked:,} masked; "
                  f"{used:.0%} of the window (summarize above {r.trigger:,}, "
                  f"down to {r.target:,}); archive: {r.archive}", highlight=False)
    if r.summary:
        _summary(console, r.summary)
    if r.seen:
        _seen(console, r.seen)
    if r.llm:
        _llm(console, r.llm)
    if not r.changed and r.trigger and billed > r.trigger:
        console.print(f"nothing could be cut, though the context is billed above the trigger "
                      f"({billed:,} > {r.trigger:,})"
                      + (f": {b['not_in_file']:,} of it is not in the file" if b else ""),
                      highlight=False)
    elif not r.changed:
        console.print("nothing to do: the transcript is within every limit", highlight=False)
    for warning in r.warnings:
        console.print(f"[yellow]warning:[/yellow] {markup(warning)}")


def _kind(kind: str, error: float | None) -> str:
    """A billed figure's kind and expected error, as stats says them."""
    return f"{kind}; " + ("error unknown" if error is None else f"expected error ±{error:.1%}")


def _summary(console: Console, s: dict[str, Any]) -> None:
    ratio = s["archived_tokens"] / s["tokens"] if s["tokens"] else 0
    console.print(f"summary ({s['strategy']}): {counted(s['messages'], 'message')}, "
                  f"{s['archived_tokens']:,} tokens -> {s['tokens']:,} ({ratio:.1f}x)",
                  highlight=False)
    kept = [f"{name} {v['kept']:,}/{v['total']:,}" for name, v in s["retention"].items()
            if v["total"]]
    if kept:
        console.print("retained verbatim: " + ", ".join(kept), highlight=False)


def _seen(console: Console, x: dict[str, Any]) -> None:
    kept = [f"{name} {v['kept']:,}/{v['total']:,}" for name, v in x.items()
            if isinstance(v, dict) and v["total"]]
    if x.get("skipped"):
        console.print(f"seen in the whole output: {x['skipped']}", highlight=False)
    if kept:
        console.print("seen in the whole output, of what was archived, masked or cut: "
                      + ", ".join(kept),
                      highlight=False)


def _llm(console: Console, x: dict[str, Any]) -> None:
    if x.get("note"):  # not asked (a dry run)
        console.print(f"llm: {x['note']}", highlight=False)
        return
    what = "used" if x["used"] else "not used (see the warning)"
    parts = [counted(x["requests"], "request"),
             f"{x['prompt_tokens']:,} prompt + {x['completion_tokens']:,} completion tokens"]
    if x["usage_unreported"]:
        parts.append(f"{counted(x['usage_unreported'], 'answer')} without usage")
    if x["per_step"]:
        parts.append(f"{counted(x['steps'], 'step line')}, {x['cached_steps']:,} from the cache")
    elif x["chunks"] > 1:
        parts.append(f"{x['chunks']} chunks merged in {x['merges']}")
    secrets = ", ".join(f"{kind} ×{n}" for kind, n in x["redacted"].items())
    parts.append("redaction off" if not x["redact"] else
                 f"redacted: {secrets}" if secrets else "no secrets found")
    console.print(f"llm summary by {markup(x['model'])} at {markup(x['base_url'])}: {what}; "
                  + "; ".join(parts), highlight=False)
    v = x.get("verify")
    if v:
        done = (f"it dropped {v['dropped_before']:,} of the facts checked; written again, "
                f"{v['kept_before']:,} -> {v['kept_after']:,} kept: "
                + ("the second is used" if v["used"] else "the first is kept")
                if v["asked"] else "")
        console.print("llm verify: " + "; ".join(
            markup(p) for p in (done, v["note"] or "") if p), highlight=False)
