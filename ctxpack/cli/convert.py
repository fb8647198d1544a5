"""`ctxpack convert`: a transcript as API request bodies or as a document to read."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import (
    ConfigOpt,
    FormatOpt,
    ModelOpt,
    OutputOpt,
    SessionOpt,
    SkipOpt,
    app,
    read_config,
    warn,
)
from .write import _destination, _write_result

TARGETS = ("openai", "anthropic", "markdown", "html")


def _target(value: str) -> str:
    if value not in TARGETS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(TARGETS)}")
    return value


@app.command()
def convert(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript file, or - for stdin.")],
    to: Annotated[str, typer.Option(
        "--to", metavar="TARGET", callback=_target,
        help="openai (Chat Completions {\"messages\"} a line per conversation), anthropic "
        "(Messages {\"system\", \"messages\"} a line per conversation), markdown or html.")],
    output: OutputOpt = None,
    all_: Annotated[bool, typer.Option(
        "--all", help="The whole log: also the messages before a compaction, off the "
        "branch, and of sub-agents, in file order (default: what the model sees).")]
    = False,
    full: Annotated[bool, typer.Option(
        "--full", help="markdown, html: long outputs whole instead of folded to their first "
        "and last lines.")] = False,
    format: FormatOpt = None,
    model: ModelOpt = None,
    skip_invalid: SkipOpt = False,
    session: SessionOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write a transcript as API-ready messages or as a document a person reads."""
    from ..loader import load
    from .read import one_file

    file = one_file(file, session)
    dest = _destination(file, output, in_place=False, force=False)
    transcript = load(file, format, skip_invalid=skip_invalid, session=session)
    if all_:
        from ..convert import whole_log

        transcript = whole_log(transcript)
    if to in ("openai", "anthropic"):
        from ..convert import Notes, request_bodies
        from ..jsonl import dumps

        notes = Notes()
        bodies = request_bodies(transcript, to, notes, model)
        for line in notes.lines():
            warn(f"{transcript.path}: {line}")
        data = b"".join(dumps(body) + b"\n" for body in bodies)
    else:
        from ..breakdown import transcript_models
        from ..tokens import TokenCounter
        from ..view import build_view

        table = read_config(config).models
        counter = TokenCounter(model or table.choose(transcript_models(transcript)), table)
        view = build_view(transcript, counter, full=full)
        if to == "markdown":
            from ..render.document import to_markdown

            text = to_markdown(view)
        else:
            from ..render.charts import charts_of
            from ..render.document import to_html

            text = to_html(view, charts_of(transcript, counter, link=True))
        data = text.encode("utf-8", "replace")
    _write_result(dest, file, [data], None)
