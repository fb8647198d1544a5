"""The HTML of `convert --to html` and `stats --html`: self-contained, every bar linking to
its message, and rendered by a real headless Chromium (skipped where there is none)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctxpack import load, stats

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium (Debian package `chromium`; .ci/run "
    "installs it)")


class Links(HTMLParser):
    """The ids, the links and anything fetched from elsewhere, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.fetched: list[str] = []
        self.svgs = 0
        self.titles: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "svg":
            self.svgs += 1
        if tag in ("script", "link", "img", "iframe", "object", "embed") or "src" in a:
            self.fetched.append(tag)
        if tag == "section" and "id" in a:
            self._in = a["id"]

    def handle_data(self, data):
        if self._in and self._in not in self.titles and data.startswith("line "):
            self.titles[self._in] = data


def _parse(text: str) -> Links:
    links = Links()
    links.feed(text)
    return links


def _render(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--host-resolver-rules=MAP * ~NOTFOUND", *args, page.as_uri()],
        capture_output=True, timeout=120, check=False)


def _pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of an 8-bit RGB(A) PNG, unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and colour in (2, 6)
    size = 3 if colour == 2 else 4
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        if data[pos + 4:pos + 8] == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * size
    rows: list[bytes] = []
    prior = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - size] if i >= size else 0
            b, c = prior[i], prior[i - size] if i >= size else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prior = line
    return width, height, [bytes(r[i:i + 3]) for r in rows for i in range(0, stride, size)]


def _coloured(pixels: list[bytes]) -> float:
    """The share of pixels in a colour (not white, grey or black): the bars."""
    return sum(max(p) - min(p) > 60 for p in pixels) / len(pixels)


def _convert_html(tmp_path: Path, sample: str = "multi-round.anthropic.jsonl") -> Path:
    out = tmp_path / "page.html"
    run = ctxpack("convert", str(SAMPLES / sample), "--to", "html", "-o", str(out))
    assert run.code == 0, run.err
    return out


def test_page_is_self_contained_and_every_bar_links_to_its_message(tmp_path):
    page = _parse(_convert_html(tmp_path).read_text(encoding="utf-8"))
    t = load(SAMPLES / "multi-round.anthropic.jsonl")
    assert page.fetched == []  # no script, stylesheet, image or frame from anywhere
    assert page.svgs == 3  # context over the run, largest tools, largest messages
    bars = [h for h in page.hrefs if h.startswith("#msg-")]
    assert bars and all(h[1:] in page.ids for h in bars)
    assert {f"msg-{i}" for i in range(len(t.messages))} <= page.ids
    # the largest message's bar points at the message with that line
    s = stats(SAMPLES / "multi-round.anthropic.jsonl")
    text = _convert_html(tmp_path).read_text(encoding="utf-8")
    bar = re.search(r'<a href="#(msg-\d+)"><title>line ([\d,]+): line [\d,]+ ·', text)
    assert bar is not None
    assert int(bar.group(2).replace(",", "")) == s.largest[0].line
    assert page.titles[bar.group(1)].startswith(f"line {s.largest[0].line:,} ")


@needs_chromium
def test_a_real_browser_renders_the_page(tmp_path):
    page = _convert_html(tmp_path)
    dom = _render(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = _parse(dom.stdout.decode("utf-8"))
    assert rendered.svgs == 3 and "msg-0" in rendered.ids
    assert all(h[1:] in rendered.ids for h in rendered.hrefs if h.startswith("#"))
    shot = tmp_path / "shot.png"
    run = _render(page, tmp_path, "--window-size=1000,700", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    width, height, pixels = _pixels(shot)
    assert (width, height) == (1000, 700)
    # the charts fill the top of the page with the roles' colours (text alone has none)
    assert _coloured(pixels) > 0.05


@needs_chromium
def test_a_real_browser_renders_stats_pictures(tmp_path):
    out = tmp_path / "stats.html"
    files = [str(SAMPLES / "refactor.codex.jsonl"),
             str(SAMPLES / "evals.openai-conversations.jsonl")]
    run = ctxpack("stats", *files, "--html", str(out), "--format", "csv")
    assert run.code == 0, run.err
    assert run.out.startswith("path,")  # the tables are still printed
    page = _parse(out.read_text(encoding="utf-8"))
    assert page.fetched == [] and {"file-1", "file-2"} <= page.ids
    assert page.svgs == 6 and not [h for h in page.hrefs if h.startswith("#msg-")]
    dom = _render(out, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and _parse(dom.stdout.decode("utf-8")).svgs == 6


def test_stats_html_bars_link_to_the_messages_they_measure(tmp_path):
    out = tmp_path / "stats.html"
    files = [SAMPLES / "multi-round.anthropic.jsonl", SAMPLES / "bugfix.mini-swe-agent.traj.json"]
    assert ctxpack("stats", *map(str, files), "--html", str(out)).code == 0
    text = out.read_text(encoding="utf-8")
    page = _parse(text)
    bars = [h[1:] for h in page.hrefs if h.startswith("#")]
    assert bars and all(b in page.ids for b in bars)  # every bar has its target
    for n, path in enumerate(files, 1):
        mine = {b for b in bars if b.startswith(f"file-{n}-msg-")}
        assert mine  # each file's bars point into its own list
        # the largest message's bar leads to the row of that message
        largest = stats(path).largest[0]
        where = largest.place or f"line {largest.line:,}"
        bar = re.search(rf'<a href="#(file-{n}-msg-\d+)"><title>{re.escape(where)}: '
                        rf'{re.escape(where)} ·', text)
        assert bar is not None, where
        row = re.search(rf'<tr id="{bar.group(1)}"><td>([^<]*)</td><td>([^<]*)</td>', text)
        assert row is not None and row.groups() == (where, largest.role)
    assert "messages[" in text and 'line 1 ·' not in text.split('id="file-2"')[1]


def test_stats_html_refuses_stdin_and_bad_input_leaves_nothing(tmp_path):
    out = tmp_path / "stats.html"
    run = ctxpack("stats", "-", "--html", str(out),
                  input=(SAMPLES / "support-chat.openai.jsonl").read_text())
    assert_clean_error(run, 2, "--html")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2\n")
    run = ctxpack("stats", str(bad), "--html", str(out))
    assert run.code == 2 and "Traceback" not in run.err and not out.exists()


@pytest.mark.parametrize("name", ["export-timeout.anthropic-events.jsonl",
                                  "refactor.codex.jsonl", "coding-agent.claude-code.jsonl"])
def test_the_pictures_count_the_context_as_stats_does(name):
    # a reply the file holds only part of (thinking stored empty, encrypted reasoning) is
    # counted at what its record says, in the pictures as in stats' header on the page
    from ctxpack.render.charts import charts_of
    from ctxpack.tokens import REPLY_PRIMING, TokenCounter

    path = SAMPLES / name
    s = stats(path, cache=False)
    charts = charts_of(load(path), TokenCounter(s.model), link=True)
    *_, (_, _, rows) = charts.context
    assert sum(rows.values()) + REPLY_PRIMING == s.tokens
    assert rows.get("reasoning", 0) == s.by_role.get("reasoning", 0)


@pytest.mark.parametrize("name", ["coding-agent.claude-code.jsonl", "support-chat.openai.jsonl"])
def test_the_context_over_the_run_peaks_at_the_bill_stats_prints(name, tmp_path):
    # the picture is drawn as billed: its peak is the "context as billed" figure, the part
    # not in the file (Claude Code's system prompt and tools) a band of its own, named
    import json

    path = SAMPLES / name
    context = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    page = tmp_path / "stats.html"
    converted = tmp_path / "doc.html"
    assert ctxpack("stats", str(path), "--html", str(page)).code == 0
    assert ctxpack("convert", str(path), "--to", "html", "-o", str(converted)).code == 0
    for drawn in (page.read_text(), converted.read_text()):
        caption = re.search(r"<figcaption>Context size over the run[^<]*", drawn).group()
        assert f"as billed ({context['kind']}): peak {context['tokens']:,} tokens" in caption
        band = f"{context['not_in_file']:,} of it not in the file"
        assert (band in caption) == (context["not_in_file"] > 0), caption
        assert ("not in the file</span>" in drawn) == (context["not_in_file"] > 0)


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["gemini-cli-chat/personal_finance__gemini_session.json",
                                  "opencode/Cap__opencode-session.json"])
def test_the_last_point_is_the_bill_to_the_token(name, tmp_path):
    # files whose bill anchors a few tokens after its last call: the picture's last point
    # (here its peak) is stats' figure, not the anchor's line a rounding away from it
    import json

    from .conftest import CORPUS

    path = CORPUS / name
    if not path.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    context = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    out = tmp_path / "doc.html"
    assert ctxpack("convert", str(path), "--to", "html", "-o", str(out)).code == 0
    caption = re.search(r"<figcaption>Context size over the run[^<]*", out.read_text()).group()
    assert f"peak {context['tokens']:,} tokens" in caption, caption


@pytest.mark.corpus
def test_a_point_billed_below_the_bills_overhead_keeps_its_messages_share(tmp_path):
    # a Cline task whose first calls were sent less than the overhead its bill finds: a
    # point's messages are not all put "not in the file", their count at the bill's slope
    # stays theirs
    from .conftest import CORPUS

    path = CORPUS / "cline" / "mcp-vscode-server__ui_messages.json"
    if not path.is_file():
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    out = tmp_path / "doc.html"
    assert ctxpack("convert", str(path), "--to", "html", "-o", str(out)).code == 0
    tips = re.findall(r"<title>[^<]*?: ([\d,]+) tokens in context[^<]*?, ([\d,]+) of them "
                      r"not in the file; counted in it: ([^<]*)</title>", out.read_text())
    assert len(tips) > 50
    for total, band, roles in tips:
        counted = sum(int(n.replace(",", "")) for n in re.findall(r"[\d,]+", roles))
        total, band = int(total.replace(",", "")), int(band.replace(",", ""))
        assert total - band >= min(counted, total), (total, band, roles)


def test_the_whole_log_is_drawn_as_counted_not_as_a_context(tmp_path):
    # `convert --all` pictures every message the file holds, sent or not: no bill, no part
    # not in the file, and a peak that is the whole log's count (stats' header with the
    # messages outside the context added), above the context's bill
    import json

    path = SAMPLES / "coding-agent.claude-code.jsonl"
    doc = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    out = tmp_path / "all.html"
    assert ctxpack("convert", str(path), "--all", "--to", "html", "-o", str(out)).code == 0
    drawn = out.read_text()
    caption = re.search(r"<figcaption>[^<]*", drawn).group()
    assert caption.startswith("<figcaption>The whole log's size over the run by role, as "
                              "counted"), caption
    assert "as billed" not in caption and "not in the file" not in drawn
    peak = int(re.search(r"peak ([\d,]+) tokens", caption)[1].replace(",", ""))
    assert doc["outside"]["messages"] > 0
    assert peak > doc["tokens"] and peak != doc["context"]["tokens"]
    assert "tokens in the log so far" in drawn and "tokens in context" not in drawn


def test_the_context_over_the_run_is_drawn_at_each_calls_recorded_size(tmp_path):
    # a point a recorded call was made on is drawn at the prompt size the provider
    # recorded for that call (Claude Code: input and both cache fields, once per
    # message.id), not at the whole file's line; the last is still stats' figure
    import json

    path = SAMPLES / "coding-agent.claude-code.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    compacted = max(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    sizes: dict[str, int] = {}
    for r in records[compacted:]:
        usage = r.get("message", {}).get("usage") if r.get("type") == "assistant" else None
        if usage:
            sizes.setdefault(r["message"]["id"], usage["input_tokens"]
                             + usage["cache_creation_input_tokens"]
                             + usage["cache_read_input_tokens"])
    context = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["context"]
    page = tmp_path / "stats.html"
    assert ctxpack("stats", str(path), "--html", str(page)).code == 0
    drawn = page.read_text()
    tips = re.findall(r"<title>line \d+: ([\d,]+) tokens in context as ([^,]+)", drawn)
    recorded = [int(n.replace(",", "")) for n, how in tips
                if how == "the provider recorded the call made on it"]
    assert recorded == list(sizes.values()) and len(recorded) == context["calls"] == 11
    assert int(tips[-1][0].replace(",", "")) == context["tokens"]
    # (anchored on the call before, the points between calls grow with the messages)
    points = [int(n.replace(",", "")) for n, _ in tips]
    assert points == sorted(points)
    caption = re.search(r"<figcaption>Context size over the run[^<]*", drawn).group()
    assert "11 points at the prompt size the provider recorded" in caption
