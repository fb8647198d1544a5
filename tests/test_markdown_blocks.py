"""A message's text cannot open a block of the Markdown document that outlives the
message: a code fence left open (a reply cut off mid-code), `~~~`, or an HTML block that
runs to the end of the document (`<!--`, `<pre>`); nor is any of its HTML run. The
document is parsed by a CommonMark parser (markdown-it-py, which rich already needs) and
every later message must still be a heading of its own with its text outside any code."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.loader import load_values
from ctxpack.render.document import to_markdown
from ctxpack.tokens import TokenCounter
from ctxpack.view import build_view

from .helpers import ctxpack

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with rich")

CODE = ("fence", "code_block", "html_block")


def _document(texts: list[str]) -> str:
    roles = ["user", "assistant"] * len(texts)
    messages = [{"role": role, "content": text} for role, text in zip(roles, texts,
                                                                        strict=False)]
    view = build_view(load_values(messages, "openai"), TokenCounter("gpt-4o"), flagged=False)
    return to_markdown(view)


def _blocks(markdown: str) -> tuple[list[str], list[str]]:
    """The document's third-level headings, and the text of its paragraphs (what is not
    code, raw HTML or a heading)."""
    tokens = markdown_it.MarkdownIt("commonmark").parse(markdown)
    headings, prose = [], []
    for before, token, _after in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if token.type != "inline":
            continue
        if before.type == "heading_open" and before.tag == "h3":
            headings.append(token.content)
        elif before.type == "paragraph_open":
            prose.append(token.content)
    return headings, prose


@pytest.mark.parametrize("opener", [
    "```", "```python", "````", "~~~", "  ```", "<!-- a note", "<pre>", "<script>",
    "<?php", "<![CDATA[", "<!DOCTYPE x",
])
def test_a_block_a_message_leaves_open_ends_with_the_message(opener: str) -> None:
    texts = [f"Here is the start:\n{opener}\nunclosed = 1", "the reply after it",
             "a second question", "```\ncode\n```\nthe last reply"]
    markdown = _document(texts)
    headings, prose = _blocks(markdown)
    assert len(headings) == len(texts), markdown
    assert "the reply after it" in prose and "a second question" in prose, markdown
    assert any(p.endswith("the last reply") for p in prose), markdown
    tokens = markdown_it.MarkdownIt("commonmark").parse(markdown)
    # the message's own text is still shown (as code, or escaped), not dropped
    assert any("unclosed = 1" in t.content for t in tokens)


def test_a_fence_that_closes_in_the_message_is_left_as_it_is() -> None:
    markdown = _document(["````\n```\nnot a close\n````\n# not a heading", "after"])
    tokens = markdown_it.MarkdownIt("commonmark").parse(markdown)
    fences = [t for t in tokens if t.type == "fence"]
    assert [f.content for f in fences] == ["```\nnot a close\n"]
    headings, prose = _blocks(markdown)
    # the heading in the message is escaped: a paragraph, not one of the document's
    assert len(headings) == 2 and "after" in prose and "\\# not a heading" in prose
    # an HTML block, closed or not, is shown as text: the fence in it is the message's
    tokens = markdown_it.MarkdownIt("commonmark").parse(_document(["<pre>\n```\n</pre>",
                                                                     "after"]))
    assert not [t for t in tokens if t.type == "html_block"]
    assert [t.content for t in tokens if t.type == "fence"] == ["</pre>\n"]


PIECES = st.sampled_from(["```", "````", "~~~", "~~~~", "`", "<!--", "-->", "<pre>",
                          "</pre>", "<?", "?>", "# h", "> q", "- item", "    code", "x",
                          "  ", "\n", "\n\n", "\t"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(PIECES, min_size=1, max_size=12).map("".join), min_size=1,
                max_size=4))
def test_every_message_after_any_text_is_its_own_and_outside_code(texts: list[str]) -> None:
    # each message of random text is followed by one whose text must stay prose
    chat = [x for i, text in enumerate(texts) for x in (text + " z", f"sentinel{i}")]
    markdown = _document(chat)
    headings, prose = _blocks(markdown)
    assert len(headings) == len(chat), markdown
    for i in range(len(texts)):
        assert f"sentinel{i}" in prose, markdown


HOSTILE = "<script>alert(1)</script> see <img src=x onerror=alert(2)> and <!-- hide"


def test_html_in_the_transcript_is_shown_as_text_never_run(tmp_path) -> None:
    """Raw HTML in a message, in the round heading its first words make, and in a tool's
    name reaches a reader of the rendered document as the text it is; in code (a fence,
    a code span) it is left as written, which shows as text already."""
    source = tmp_path / "hostile.jsonl"
    records = [
        {"role": "user", "content": HOSTILE},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "<b>run</b>", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "<script>in a result</script>"},
        {"role": "assistant",
         "content": "Use `Vec<String>` here.\n```\n<i>code</i>\n```\n<div>\n<p>more"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "doc.md"
    run = ctxpack("convert", str(source), "--to", "markdown", "-o", str(out))
    assert run.code == 0, run.err
    document = out.read_text()
    parser = markdown_it.MarkdownIt("commonmark")  # HTML allowed, as renderers have it
    tokens = parser.parse(document)
    inline = [c for t in tokens if t.children for c in t.children]
    assert not [t for t in [*tokens, *inline] if t.type in ("html_block", "html_inline")]
    rendered = parser.render(document)
    for tag in ("<script", "<img", "<!--", "<div", "<p>more", "<b>run"):
        assert tag not in rendered, (tag, rendered)
    # shown as the text it is: in the round's heading, the message, the call's label
    assert rendered.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2, rendered
    assert "&lt;b&gt;run&lt;/b&gt;" in rendered
    # code keeps its text as written (rendered escaped, as code is)
    assert "<code>Vec&lt;String&gt;</code>" in rendered
    assert "&lt;i&gt;code&lt;/i&gt;" in rendered and "&lt;script&gt;in a result" in rendered


_SCRIPT_LINKS = [  # each with what of it is shown
    ("[click](javascript:alert(1))", "alert(1)"), ("[d](data:text/html;base64,PHN=)", "PHN="),
    ("[v](VBScript:msgbox(1))", "msgbox(1)"), ("[e](jav&#x61;script:alert(2))", "alert(2)"),
    ("[s]( <javascript:alert(3)>)", "alert(3)"), ("[t](java\\script:alert(4))", "alert(4)"),
    ("![img](javascript:alert(5))", "alert(5)"), ("<javascript:alert(6)>", "alert(6)"),
    ("[ref]\n\n[ref]: javascript:alert(7)", "alert(7)"),
    ("[nl](\njavascript:alert(8))", "alert(8)"), ("> [q](javascript:alert(9))", "alert(9)"),
    ("- [li](javascript:alert(10))", "alert(10)"),
    ("`[code](javascript:shown)` stays code", "[code](javascript:shown)"),
    ("[a \\](b)](javascript:alert(11))", "alert(11)"),
]


def _scripted(url: str) -> bool:
    return "".join(ch for ch in url if ch > " ").lower().startswith(
        ("javascript:", "vbscript:", "data:"))


@pytest.mark.parametrize(("text", "shown"), _SCRIPT_LINKS)
def test_a_link_to_a_script_url_is_text_in_the_documents(text: str, shown: str,
                                                         tmp_path) -> None:
    # a permissive renderer (one that, unlike markdown-it's default, takes any URL)
    # makes no link of the markdown to a script URL, and the page links nowhere but to
    # its own places; the link's words are still shown, a link elsewhere still links
    said = f"see {text}\n\nand [docs](https://example.com/a)"
    thought = [{"type": "thinking", "thinking": said, "signature": "c2ln"},
               {"type": "text", "text": said}]
    path = tmp_path / "links.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in (
        {"role": "user", "content": said}, {"role": "assistant", "content": thought})))
    made = ctxpack("convert", str(path), "--to", "markdown")
    assert made.code == 0, made.err
    permissive = markdown_it.MarkdownIt("commonmark")
    permissive.validateLink = lambda url: True
    tokens = [t for block in permissive.parse(made.out) if block.children
              for t in block.children]
    urls = [t.attrGet("href") or t.attrGet("src") for t in tokens
            if t.type in ("link_open", "image")]
    assert not [u for u in urls if _scripted(str(u))], (urls, made.out)
    assert urls.count("https://example.com/a") == 3, made.out  # the person's, thought, said
    assert permissive.render(made.out).count(shown) >= 3, made.out
    page = ctxpack("convert", str(path), "--to", "html")
    assert page.code == 0, page.err
    hrefs = re.findall(r'\b(?:href|src)\s*=\s*"([^"]*)"', page.out, re.IGNORECASE)
    assert hrefs and all(h.startswith("#") for h in hrefs), hrefs
