"""Build a large, realistic coding-agent transcript for benchmarks, deterministically.

A seeded run of an agent at work: user prompts, assistant tool calls, and tool
outputs of varied sizes (code files read and re-read verbatim, test logs, grep
hits, build logs, a few one-line JSON dumps of a megabyte or more, and a few
base64 PNG screenshots), written as OpenAI chat messages or Claude Code events.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

OUT = Path(__file__).resolve().parent / "out"
VERSION = 4  # bump when the output for a given seed and size changes
COMMON = """
the of and to in is for that with on as it be by this are from at or an not can use when if all
will has which more one new file data value time each set list name type error test run check
return output input path line start end read write open close call result table count size
index key item node user model token cache text message tool step round build make find load
save parse format config option default update create delete get put send receive request
response server client session event state status handle worker process thread queue batch
chunk stream buffer record field column row query filter sort group merge split join map
reduce apply match replace parent child root tree graph edge source target local remote debug
info warning trace log report summary total limit offset page block frame image width height
color font style layout view render draw scale point window context budget compress archive
restore validate convert encode decode hash digest first last next previous current old empty
full valid invalid missing unknown exact raw number string bytes float int bool dict array
object class method function module package import export case fixture assert expect mock
patch setup teardown retry timeout delay should would could must may might need want have
been was were does did done made said because while after before until since about into over
under between through without we you they our your their its there here then than also only
just still even very much many most some any few other same different large small long short
high low good better best fast slow simple clear able
"""


class Vocab:
    """Words, identifiers, paths and pools of lines, all drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
        names = {"".join(rng.choices(syllables, k=rng.choice((2, 2, 3, 3, 4))))
                 for _ in range(1500)}
        # mostly everyday words, so text tokenizes like real text (about 4 bytes a token)
        self.words = sorted(set(COMMON.split())) * 20 + sorted(names)
        self.idents = sorted({self._ident() for _ in range(8000)})
        self.types = sorted({w.capitalize() + rng.choice(("", "Error", "Config", "Store", "Spec"))
                             for w in rng.sample(self.words, 600)})
        self.dirs = ["src/" + "/".join(rng.sample(self.words, rng.randint(1, 3)))
                     for _ in range(120)] + ["tests", "docs", "scripts"]
        self.sentences = [self.sentence() for _ in range(20000)]
        self.code = [self._code_line() for _ in range(90000)]
        self.logs = [self._log_line() for _ in range(40000)]

    def _ident(self) -> str:
        parts = self.rng.sample(self.words, self.rng.randint(1, 3))
        if self.rng.random() < 0.25:
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        return "_".join(parts)

    def ident(self) -> str:
        return self.rng.choice(self.idents)

    def path(self, ext: str = ".py") -> str:
        return f"{self.rng.choice(self.dirs)}/{self.ident()}{ext}"

    def sentence(self) -> str:
        words = self.rng.choices(self.words, k=self.rng.randint(5, 18))
        if self.rng.random() < 0.3:
            words[self.rng.randrange(len(words))] = f"`{self.rng.choice(self.idents or words)}`"
        return " ".join(words).capitalize() + self.rng.choice(".....?!:")

    def _code_line(self) -> str:
        r, i, t = self.rng, self.ident, lambda: self.rng.choice(self.types)
        ind = "    " * r.choice((0, 1, 1, 2, 2, 2, 3, 3, 4))
        n = r.randint(0, 4096)
        options = (
            f"def {i()}({i()}: {t()}, {i()}: int = {n}) -> {t()} | None:",
            f"{ind}{i()} = {i()}.{i()}({i()}, {i()}={n})",
            f'{ind}"""{self.rng.choice(self.sentences or [i()])}"""',
            f"{ind}# {self.rng.choice(self.sentences or [i()])}",
            f"{ind}if {i()} is None or len({i()}) > {n}:",
            f"{ind}return {i()}[{n % 17}:{n}]",
            f"{ind}for {i()}, {i()} in enumerate(self.{i()}.{i()}()):",
            f'{ind}raise {t()}(f"{i()} {{{i()}!r}} is not {i()}")',
            f"{ind}self.{i()} = {i()}",
            f"from .{i()} import {t()}, {i()}",
            f"class {t()}({t()}):",
            f"{ind}assert {i()}.{i()} == {n}, {i()}",
            f"{ind}{i()}: dict[str, {t()}] = {{}}",
            f'{ind}logger.debug("{i()}=%s {i()}=%d", {i()}, {n})',
            "",
        )
        return r.choice(options)

    def _log_line(self) -> str:
        r, i = self.rng, self.ident
        n = r.randint(1, 999)
        options = (
            f"tests/test_{i()}.py::test_{i()} PASSED{' ' * r.randint(1, 20)}[{n % 100:3d}%]",
            f"tests/test_{i()}.py::Test{r.choice(self.types)}::test_{i()} FAILED",
            f"E       AssertionError: assert {n} == {n + r.randint(1, 9)}",
            f'  File "/app/{self.path()}", line {n}, in {i()}',
            f"    {r.choice(self.code).strip()}",
            f"[{n:4d}/1000] Building CXX object {self.path('.cpp')}.o",
            f"WARNING {i()}: {r.choice(self.sentences)} ({n} ms)",
            f"{self.path()}:{n}:{r.randint(1, 80)}: E501 line too long ({n % 60 + 100} > 99)",
        )
        return r.choice(options)


@dataclass
class Tally:
    """What went into the file, for the benchmark's report."""

    messages: int = 0
    images: int = 0
    image_bytes: int = 0
    long_lines: int = 0
    text_bytes: dict[str, int] = field(default_factory=dict)
    repeated_bytes: int = 0

    def add(self, kind: str, text: str, repeated: bool = False) -> None:
        n = len(text.encode("utf-8"))
        self.text_bytes[kind] = self.text_bytes.get(kind, 0) + n
        if repeated:
            self.repeated_bytes += n


class Agent:
    """Yields (call, output) steps of a plausible coding session over a growing repository."""

    def __init__(self, rng: random.Random, vocab: Vocab, tally: Tally) -> None:
        self.rng, self.v, self.tally = rng, vocab, tally
        self.files: dict[str, str] = {}
        self.read: set[str] = set()
        self.logs: list[str] = []

    def code_file(self) -> str:
        n = int(self.rng.lognormvariate(5.3, 0.8))  # median ~200 lines
        lines = [f"from {self.v.ident()} import {self.v.ident()}" for _ in range(4)]
        lines += self.rng.choices(self.v.code, k=min(n, 3000))
        return "\n".join(lines) + "\n"

    def step(self) -> tuple[str, dict[str, object], str]:
        """One tool call: (tool name, arguments, output)."""
        roll = self.rng.random()
        if roll < 0.45:
            return self.read_file()
        if roll < 0.55:
            return self.write_file()
        if roll < 0.75:
            return self.run_tests()
        if roll < 0.88:
            return self.grep()
        return self.build()

    def read_file(self) -> tuple[str, dict[str, object], str]:
        reread = self.read and self.rng.random() < 0.35
        path = self.rng.choice(sorted(self.read)) if reread else self.v.path()
        if path not in self.files:
            self.files[path] = self.code_file()
        text = self.files[path]
        self.tally.add("read_file", text, repeated=path in self.read)
        self.read.add(path)
        return "read_file", {"path": path}, text

    def write_file(self) -> tuple[str, dict[str, object], str]:
        path = self.rng.choice(sorted(self.files)) if self.files else self.v.path()
        text = self.code_file()
        self.files[path] = text
        self.read.discard(path)
        self.tally.add("write_file", text)
        return "write_file", {"path": path, "content": text}, f"Wrote {len(text)} bytes to {path}"

    def run_tests(self) -> tuple[str, dict[str, object], str]:
        if self.logs and self.rng.random() < 0.15:  # the same failing run, again
            text = self.rng.choice(self.logs)
            self.tally.add("test_log", text, repeated=True)
        else:
            n = int(self.rng.lognormvariate(5.5, 1.0))
            text = "\n".join(self.rng.choices(self.v.logs, k=min(n, 6000)))
            text += f"\n===== {self.rng.randint(1, 90)} failed, {n} passed in 12.3s =====\n"
            self.logs.append(text)
            self.tally.add("test_log", text)
        return "bash", {"command": f"pytest -x tests/test_{self.v.ident()}.py"}, text

    def grep(self) -> tuple[str, dict[str, object], str]:
        n = int(self.rng.lognormvariate(3.5, 1.0))
        hits = (f"{self.v.path()}:{self.rng.randint(1, 900)}:{line}"
                for line in self.rng.choices(self.v.code, k=min(n, 2000)))
        text = "\n".join(hits) + "\n"
        self.tally.add("grep", text)
        return "grep", {"pattern": self.v.ident(), "path": "src/"}, text

    def build(self) -> tuple[str, dict[str, object], str]:
        n = int(self.rng.lognormvariate(4.5, 1.0))
        start = self.rng.randint(0, 10**6)
        text = "\n".join(f"{start + k * 37} {line}" for k, line in
                         enumerate(self.rng.choices(self.v.logs, k=min(n, 4000)))) + "\n"
        self.tally.add("build_log", text)
        return "bash", {"command": "make -j2 all"}, text

    def json_dump(self) -> str:
        """A megabyte-or-more JSON document on one line, as `cat data.json` prints it."""
        items = [{"id": k, "name": self.v.ident(), "tags": self.rng.sample(self.v.words, 3),
                  "score": round(self.rng.random() * 100, 3), "note": self.rng.choice(
                      self.v.sentences)} for k in range(self.rng.randint(6000, 16000))]
        text = json.dumps({"items": items}, separators=(",", ":"))
        self.tally.add("long_line", text)
        self.tally.long_lines += 1
        return text


def png_base64(rng: random.Random, width: int, height: int, size: int) -> str:
    """A PNG with a real header and `size` bytes of incompressible pixel data, in base64."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rng.randbytes(size))
    return base64.b64encode(png + chunk(b"IEND", b"")).decode("ascii")


@dataclass
class Turn:
    """One message of the session before it takes a file format's shape."""

    role: str
    text: str
    call: tuple[str, str, dict[str, object]] | None = None  # (id, tool, arguments)
    call_id: str | None = None  # for tool outputs
    image: str | None = None  # base64 PNG


def session(rng: random.Random, vocab: Vocab, tally: Tally, written: list[int],
            target: int) -> Iterator[Turn]:
    """Turns until `written[0]` (bytes so far, kept by the writer) reaches `target`."""
    agent = Agent(rng, vocab, tally)
    yield Turn("system", "\n\n".join(rng.choices(vocab.sentences, k=60)))
    next_image, next_long, calls = 0, 20 << 20, 0
    while written[0] < target:
        prompt = " ".join(rng.choices(vocab.sentences, k=rng.randint(2, 14)))
        shot = written[0] >= next_image
        if shot:
            next_image += 16 << 20
        yield Turn("user", prompt, image=screenshot(rng, tally) if shot else None)
        for _ in range(rng.randint(5, 60)):
            calls += 1
            call_id = f"call_{calls:06d}_{rng.getrandbits(40):010x}"
            if written[0] >= next_long:
                next_long += 40 << 20
                tool, args = "bash", {"command": "cat fixtures/data.json"}
                output = agent.json_dump()
            else:
                tool, args, output = agent.step()
            say = " ".join(rng.choices(vocab.sentences, k=rng.randint(1, 3)))
            yield Turn("assistant", say, call=(call_id, tool, args))
            image = screenshot(rng, tally) if rng.random() < 0.0005 else None
            yield Turn("tool", output, call_id=call_id, image=image)
            if written[0] >= target:
                return


def screenshot(rng: random.Random, tally: Tally) -> str:
    width, height = rng.choice(((1280, 800), (1440, 900), (1920, 1080), (2560, 1600)))
    data = png_base64(rng, width, height, rng.randint(100_000, 500_000))
    tally.images += 1
    tally.image_bytes += len(data)
    return data


def openai_record(turn: Turn) -> dict[str, object]:
    """A Chat Completions message."""
    content: object = turn.text
    if turn.image:
        url = "data:image/png;base64," + turn.image
        content = [{"type": "text", "text": turn.text},
                   {"type": "image_url", "image_url": {"url": url}}]
    record: dict[str, object] = {"role": turn.role, "content": content}
    if turn.call:
        call_id, tool, args = turn.call
        record["tool_calls"] = [{"id": call_id, "type": "function", "function": {
            "name": tool, "arguments": json.dumps(args)}}]
    if turn.call_id:
        record["tool_call_id"] = turn.call_id
    return record


class ClaudeCode:
    """Turns as Claude Code session events, chained through parentUuid."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.parent, self.n = rng, None, 0

    def record(self, turn: Turn) -> dict[str, object]:
        self.n += 1
        uuid = f"{self.rng.getrandbits(128):032x}"
        image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": turn.image}}] if turn.image else []
        if turn.role == "assistant" and turn.call:
            call_id, tool, args = turn.call
            content: object = [{"type": "text", "text": turn.text},
                               {"type": "tool_use", "id": call_id, "name": tool, "input": args}]
            message = {"id": f"msg_{self.n:08d}", "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-5", "content": content,
                       "usage": {"input_tokens": 3, "output_tokens": 200}}
        elif turn.role == "tool":
            content = [{"type": "tool_result", "tool_use_id": turn.call_id,
                        "content": [{"type": "text", "text": turn.text}, *image]}]
            message = {"role": "user", "content": content}
        else:
            content = [{"type": "text", "text": turn.text}, *image] if image else turn.text
            message = {"role": "user", "content": content}
        kind = "assistant" if turn.role == "assistant" else "user"
        record = {"type": kind, "uuid": uuid, "parentUuid": self.parent, "isSidechain": False,
                  "sessionId": "bench-session", "timestamp": f"2026-01-01T00:{self.n % 60:02d}:00Z",
                  "message": message}
        self.parent = uuid
        return record


def build(path: Path, size_mb: float, seed: int, fmt: str) -> Tally:
    """Write the transcript to `path` (through a temp file) and return what went into it."""
    rng = random.Random(seed)
    tally = Tally()
    target = int(size_mb * (1 << 20))
    written = [0]
    claude = ClaudeCode(rng)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for turn in session(rng, Vocab(rng), tally, written, target):
            if fmt == "openai" or turn.role == "system" and fmt != "claude-code":
                record = openai_record(turn)
            elif turn.role == "system":
                continue  # Claude Code logs keep the system prompt out of the file
            else:
                record = claude.record(turn)
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            written[0] += len(line)
            tally.messages += 1
    os.replace(tmp, path)
    return tally


def ensure(size_mb: float = 210, seed: int = 7, fmt: str = "openai",
           out_dir: Path = OUT) -> tuple[Path, dict[str, object]]:
    """The transcript for these settings, built only when missing; with its description."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"agent-{fmt}-{size_mb:g}mb-seed{seed}.jsonl"
    meta_path = path.with_suffix(".meta.json")
    settings = {"version": VERSION, "size_mb": size_mb, "seed": seed, "format": fmt}
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("settings") == settings and meta.get("bytes") == path.stat().st_size:
            return path, meta
    tally = build(path, size_mb, seed, fmt)
    meta = {"settings": settings, "bytes": path.stat().st_size, "messages": tally.messages,
            "images": tally.images, "image_base64_bytes": tally.image_bytes,
            "long_lines": tally.long_lines, "text_bytes": tally.text_bytes,
            "repeated_text_bytes": tally.repeated_bytes}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=210, help="target size (MiB)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--format", choices=("openai", "claude-code"), default="openai")
    parser.add_argument("--out-dir", type=Path, default=OUT)
    args = parser.parse_args(argv)
    path, meta = ensure(args.size_mb, args.seed, args.format, args.out_dir)
    print(path)
    print(json.dumps(meta, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
