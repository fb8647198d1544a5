"""Token counting: model -> encoding, cached counts, chat overhead, images, offline fallback.

Counts follow the OpenAI cookbook for chat messages (3 tokens per message, the
role and content tokens, +1 per name, +3 to prime the reply). A message's count is
a plan (sums over its texts) so texts can be counted in bulk (ctxpack.bulk).
tiktoken is loaded on first need. Where no encoding file can be had, counts fall
back to a stated estimate and are marked inexact; nothing here ever crashes for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import images
from .errors import UsageError
from .models import DEFAULT_MODEL, TABLE, ModelInfo, ModelTable
from .recorded import recorded_window
from .transcript import (
    Image,
    Message,
    RecordedCall,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    printable,
)

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
# Framing tokens around each tool call (name and arguments are counted apart);
# the API does not publish it, so this is our stated approximation.
TOKENS_PER_TOOL_CALL = 3
ESTIMATE_NOTE = ("no tiktoken encoding file could be loaded; "
                 "counts estimated as 1 token per 4 characters")

# tiktoken's time on one piece of its pre-tokenizer (its regex's matches, which it
# encodes one by one and whose tokens never straddle two) grows faster than the piece: a
# million letters in a row are one piece and take 3 s, five times what their parts of
# 8,192 take (BENCHMARKS.md, "exact counts are tiktoken's"). So a piece longer than this
# is counted in parts of this size: the one place a count is not tiktoken's own
# (docs/counting.md, "Exact counts and tiktoken").
PIECE_LIMIT = 8192
# A piece that long, or a run of whitespace that long (on which o200k's regex can fail
# where its pieces are short), holds a run of _RUN characters of one kind (a piece is a
# run of one kind and at most 4 characters more): letters, digits, punctuation (with
# controls, \r and \n) or whitespace. Each kind is told on the text's UTF-8 bytes at C
# speed (`bytes.translate`: a byte of the kind becomes b"a"; every byte of a non-ASCII
# character is of all kinds but whitespace, and the rare non-ASCII spaces are looked for
# apart), and only a text with such a run is cut into the pieces of its encoding's
# pre-tokenizer, which costs more than tokenizing it. Runs of short pieces (digits in
# threes, minified code, base64, compact JSON) are tokenized whole: they are no slower.
# Digits are looked for only where the encoding's pre-tokenizer takes them whole
# (p50k_base); cl100k and o200k take at most 3 at a time, so a run of them is short pieces
# (and a long piece of other characters among them is a run of letters or punctuation,
# every non-ASCII byte being of both kinds).
_RUN = PIECE_LIMIT - 8
_SPACE = re.compile(r"\s")
_KINDS = tuple(bytes(97 if kind(b) else 46 for b in range(256)) for kind in (
    lambda b: b >= 128 or chr(b).isalpha(),
    lambda b: b >= 128 or chr(b).isdigit(),
    lambda b: b >= 128 or not (chr(b).isalnum() or chr(b) in " \t\v\f"),
    lambda b: b < 128 and _SPACE.match(chr(b)) is not None,
))
_DIGITS = _KINDS[1]
# Digits of every kind one after another: a pre-tokenizer that cuts this into pieces
# shorter than it takes digits a few at a time.
_DIGIT_PROBE = "1234567890\u0663\u0664\u0665" * 8
_ONE_KIND = b"a" * _RUN
_LONG_SPACE = re.compile(rf"(?<!\s)\s{{{_RUN},}}")
WIDE_SPACES = "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
    "\u200a\u2028\u2029\u202f\u205f\u3000"  # every non-ASCII character \s matches
_SHORT_KEY = 256
# Bump when a change here changes the count of some text: persisted counts carry it.
COUNT_VERSION = 2  # 2: long runs cut between tiktoken's pieces, not every 8,192 characters

Key = str | bytes

_encodings: dict[str, Any] = {}
_failures: dict[str, str] = {}

# Texts an accelerated tokenizer must split exactly as tiktoken does before it is used:
# what tiktoken's pattern treats apart (contractions, digits, runs of spaces and newlines,
# punctuation), scripts, emoji and their joiners, combining marks, code, a long word.
PARITY_TEXTS = (
    "", "a", "Hello, world! I'm here; you're there, it's 12:30pm.\n",
    "def f(x):\n    return x ** 2  # square\n\n\n\tif x != 0: pass\r\n",
    "   leading and trailing   ", "\n\n\n\n", " \n \n", "1234567890 3.14159 -42 1e-9 0xFF",
    "日本語のテキストと中文文本，한국어 텍스트。", "Ünïcödé çåfé naïve résumé", "e\u0301 a\u0308",
    "👍🏽 👨‍👩‍👧 🇫🇷 ✔️", "مرحبا بالعالم", "Привет, мир", "{\"key\": [1, 2, {\"a\": null}]}",
    "https://example.com/path?q=1&r=two#frag", "x" * 300, "ab " * 200, "\u00a0\u2003 \u3000",
    "'s 't 're 've 'm 'll 'd 'S 'T", "<|endoftext|> is plain text here",
)
# Characters of text tiktoken counts in one process before the accelerated tokenizer is
# loaded, by encoding (one not named here: never). Loading it (importing bpe-openai, its
# tables, the parity check) took 0.41-0.45 s on a quiet 2-core machine, and it then saved
# 0.011 us a character on o200k and 0.030 us on cl100k (the corpus's texts): each is the
# text over which it pays for itself, and handing over there costs a run at most twice
# what the best choice, made knowing the run's size, would (BENCHMARKS.md, "the
# accelerated exact tokenizer"; `bench/bench_tokenizer.py` measures them).
FAST_AFTER_CHARS = {"o200k_base": 40_000_000, "cl100k_base": 15_000_000}


def encoding_names() -> list[str]:
    """The encodings tiktoken knows by name (from its registry: no file is fetched)."""
    import tiktoken

    return list(tiktoken.list_encoding_names())


def load_encoding(name: str) -> Any | None:
    """The encoding `name`, or None (with the reason kept) when it cannot be had:
    tiktoken's, handing over to an accelerated one once that pays (see `Encoding`)."""
    if name in _encodings:
        return _encodings[name]
    if name in _failures:
        return None
    try:
        import tiktoken

        enc = tiktoken.get_encoding(name)
    except BaseException as exc:  # noqa: BLE001 - a PanicException is not an Exception
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        # the exception text of a failed download is a screenful; its kind is enough
        _failures[name] = (f"{name}: {type(exc).__name__}; point TIKTOKEN_CACHE_DIR at a "
                           "folder holding tiktoken's encoding files")
        return None
    _encodings[name] = enc = Encoding(enc)
    return enc


def accelerated(name: str, reference: Any) -> Any | None:
    """bpe-openai's encoding `name`, if it is installed and gives the very tokens
    `reference` (tiktoken's) gives on every parity text; else None."""
    try:
        import bpe_openai

        fast = bpe_openai.get_encoding(name)
        same = all(fast.encode_ordinary(t) == reference.encode_ordinary(t)
                   for t in PARITY_TEXTS)
    except BaseException as exc:  # noqa: BLE001 - not installed, or a Rust panic
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None
    return fast if same else None


class Encoding:
    """tiktoken's encoding, which hands over to the accelerated one (the `fast` extra,
    bpe-openai) once this process has counted `FAST_AFTER_CHARS` of text with it, if that
    one is installed and passes parity then (`accelerated`); a text the accelerated one
    fails on is counted by tiktoken's. A short run never loads it: loading it costs more
    than it saves there."""

    def __init__(self, reference: Any) -> None:
        self.reference, self.name = reference, reference.name
        # its pre-tokenizer, under tiktoken's private name (None: see `_pre_tokenizer`)
        self._pat_str: str | None = getattr(reference, "_pat_str", None)
        self.fast: Any = None  # the accelerated encoding, once handed over to
        self.left: int | None = FAST_AFTER_CHARS.get(self.name)  # characters still to
        # count before handing over; None: no more hand-over to try

    def encode_ordinary(self, text: str) -> Any:
        if self.left is not None:
            self.left -= len(text)
            if self.left < 0:
                self.left, self.fast = None, accelerated(self.name, self.reference)
        if self.fast is None:
            return self.reference.encode_ordinary(text)
        try:
            return self.fast.encode_ordinary(text)
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is no Exception
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return self.reference.encode_ordinary(text)


def may_have_long_piece(text: str, kinds: tuple[bytes, ...] = _KINDS) -> bool:
    """False only when `text` surely holds no piece over PIECE_LIMIT and no run of
    whitespace that long, for an encoding whose long pieces are runs of `kinds` (see
    _KINDS; every kind: whatever the encoding)."""
    if len(text) <= _RUN:
        return False
    data = text.encode("utf-8", "surrogatepass")
    if any(_ONE_KIND in data.translate(kind) for kind in kinds):
        return True
    return len(data) != len(text) and any(c in text for c in WIDE_SPACES) \
        and _LONG_SPACE.search(text) is not None


@dataclass(frozen=True, slots=True)
class PreTokenizer:
    """The regex an encoding cuts a text into pieces with, and the kinds of run (_KINDS)
    that can make one of its pieces long."""

    regex: Any
    kinds: tuple[bytes, ...]


def _pre_tokenizer(enc: Any) -> PreTokenizer | None:
    """The pre-tokenizer of `enc`, compiled once per pattern (tiktoken's and bpe-openai's
    both keep its regex as `_pat_str`, a private name); None for an encoding that keeps
    none, whose texts are then tokenized whole: tiktoken's own count, slower on a long
    piece."""
    pattern = getattr(enc, "_pat_str", None)
    if not isinstance(pattern, str):
        return None
    found = _PRE_TOKENIZERS.get(pattern)
    if found is None:
        import regex  # tiktoken's own dependency; compiled for the first long text

        compiled = regex.compile(pattern)
        short_digits = max(map(len, compiled.findall(_DIGIT_PROBE))) < len(_DIGIT_PROBE)
        found = _PRE_TOKENIZERS[pattern] = PreTokenizer(
            compiled, tuple(k for k in _KINDS if not (short_digits and k is _DIGITS)))
    return found


_PRE_TOKENIZERS: dict[str, PreTokenizer] = {}


def split_long_pieces(enc: Any, text: str) -> list[str]:
    """`text` in parts that `enc` counts as it counts the whole: a text that may hold a
    long piece (`may_have_long_piece`) is cut between the pieces of `enc`'s
    pre-tokenizer into parts of at most PIECE_LIMIT characters, a piece longer than that
    every PIECE_LIMIT characters (the one cut that can change the count). Other texts
    come back whole, and so does every text of an encoding whose pre-tokenizer is not
    known (`_pre_tokenizer`)."""
    if len(text) <= _RUN:
        return [text]
    pre = _pre_tokenizer(enc)
    if pre is None or not may_have_long_piece(text, pre.kinds):
        return [text]
    pieces = pre.regex.findall(text)
    if sum(map(len, pieces)) != len(text):  # its pattern matches every character: never
        return [text]
    parts: list[str] = []
    start = end = 0  # the part being gathered is text[start:end]
    for piece in pieces:
        if end + len(piece) - start > PIECE_LIMIT:
            if end > start:
                parts.append(text[start:end])
            start = end
            if len(piece) > PIECE_LIMIT:
                parts.extend(piece[i : i + PIECE_LIMIT]
                             for i in range(0, len(piece), PIECE_LIMIT))
                start += len(piece)
        end += len(piece)
    if end > start:
        parts.append(text[start:end])
    return parts


def encode_count(enc: Any, text: str) -> int:
    """Token count of `text` with `enc`: tiktoken's own, but for a piece of over
    PIECE_LIMIT characters (`split_long_pieces`); an estimate where the tokenizer fails."""
    total = 0
    for part in split_long_pieces(enc, text):
        try:
            total += len(enc.encode_ordinary(part))
        except BaseException as exc:  # noqa: BLE001 - PanicException included
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            total += estimate(part)
    return total


def estimate(text: str) -> int:
    """The fallback estimate: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


def digest(text: str) -> bytes:
    """A 128-bit content hash (SHA-256 is the fastest hashlib offers where CPUs have SHA-NI)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def cache_key(text: str) -> Key:
    """Short texts key themselves; long ones by their digest to bound memory."""
    if len(text) <= _SHORT_KEY:
        return text
    return digest(text)


def count(text: str, model: str | None = None, table: ModelTable = TABLE) -> int:
    """Tokens of plain text for `model` (default gpt-4o), no chat overhead, counted with
    its tokenizer (or the approximation the table names: `ctxpack count` prints the
    calibrated figure of such a model, calibration.text_bill). An estimate where the
    encoding cannot be had (a `TokenCounter` says which: `.estimated`)."""
    return TokenCounter(model, table).text(text)


@dataclass(frozen=True, slots=True)
class MessageCount:
    """Tokens of one message: the total and each part's share (overhead not in parts)."""

    total: int
    parts: tuple[int, ...]


# A sum still to be done: ints are known counts, keys name texts counted elsewhere.
Pending = list[int | Key]


@dataclass(frozen=True, slots=True)
class MessagePlan:
    """A message's count as sums over texts, so the texts can be counted in bulk first."""

    overhead: Pending
    parts: tuple[Pending, ...]


class TokenCounter:
    """Counts tokens for one model, caching by content so repeats are tokenized once."""

    def __init__(self, model: str | None = None, table: ModelTable = TABLE) -> None:
        name = model or DEFAULT_MODEL
        info = table.find(name)
        if info is None:
            raise UsageError(
                f"unknown model {name!r}",
                "`ctxpack models` lists the known ones; add others under `models:` in the config",
            )
        self.model = name
        self.table = table
        self.info: ModelInfo = info
        self.encoding_name = info.encoding
        self._enc: Any = None
        self._loaded = False  # the encoding is loaded on first need: a run whose counts
        # all come from the persistent cache never pays the ~0.5 s it takes
        self._cache: dict[Key, int] = {}
        self.hits = 0  # texts found in memory (repeats)
        self.misses = 0  # texts not found in memory
        self.tokenized = 0  # texts actually run through the tokenizer

    def encoding(self) -> Any | None:
        """The tiktoken encoding, loaded now if not yet; None when it cannot be had."""
        if not self._loaded:
            self._enc = load_encoding(self.encoding_name)
            self._loaded = True
        return self._enc

    @property
    def estimated(self) -> bool:
        """True when counts are estimates for want of the encoding (tries to load it)."""
        return self.encoding() is None

    @property
    def has_encoding(self) -> bool:
        """True when the encoding is loaded; never loads it."""
        return self._enc is not None

    @property
    def _failed(self) -> bool:
        return self._loaded and self._enc is None

    @property
    def failed(self) -> bool:
        """True once the encoding was tried and could not be had: counts are estimates.
        (Never loads it: counts that all came from the persistent cache are not.)"""
        return self._failed

    @property
    def exact(self) -> bool:
        """True when counts are the model's own tokenizer, not an approximation or estimate.

        Counts that all came from the persistent cache are exact without loading it.
        """
        return self.info.exact and not self._failed

    @property
    def note(self) -> str:
        """Why counts are not exact, or '' when they are."""
        if self._failed:
            reason = _failures.get(self.encoding_name, "")
            return f"{ESTIMATE_NOTE} ({reason})" if reason else ESTIMATE_NOTE
        return self.info.note

    def text(self, text: str) -> int:
        """Tokens of plain text, no chat overhead."""
        if not text:
            return 0
        key = cache_key(text)
        hit = self._cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        n = self.count_now(text)
        self._cache[key] = n
        return n

    def count_now(self, text: str) -> int:
        """Tokenize `text` here and now, bypassing every cache."""
        self.tokenized += 1
        enc = self.encoding()
        return estimate(text) if enc is None else encode_count(enc, text)

    def known(self, key: Key) -> int | None:
        """The remembered count for a cache key, if any."""
        return self._cache.get(key)

    def remember(self, key: Key, tokens: int) -> None:
        """Take a count made elsewhere (a worker process, the persistent cache)."""
        self._cache[key] = tokens

    def image(self, part: Image) -> int:
        """Tokens of an image from its pixel size, by the provider's formula (none for data
        that is no base64: see `images.NO_PICTURE`)."""
        if part.data and images.not_base64(part.data):
            return 0
        size = images.size_from_base64(part.data) if part.data else None
        width, height = size or images.DEFAULT_SIZE
        if self.info.provider == "anthropic":
            return images.anthropic_image_tokens(width, height)
        return images.openai_image_tokens(width, height, part.detail or "auto")

    def part(self, part: Any) -> int:
        """Tokens of one message part."""
        return sum(self._plan_part(part, self.text))  # type: ignore[arg-type]

    def _plan_part(self, part: Any, need: Callable[[str], int | Key]) -> Pending:
        if isinstance(part, (Text, Thinking)):
            return [need(part.text)]
        if isinstance(part, ToolCall):  # one written in the text is that text
            return [need(part.arguments)] if part.written else \
                [TOKENS_PER_TOOL_CALL, need(part.name), need(part.arguments)]
        if isinstance(part, ToolResult):
            return [x for p in part.parts for x in self._plan_part(p, need)]
        if isinstance(part, Image):
            return [self.image(part)]
        return [0]

    def plan(self, message: Message, need: Callable[[str], int | Key]) -> MessagePlan:
        """The message's count as sums, texts replaced by what `need` says of them."""
        # a `joined` message pays it too: sent as a block of the message before it, it
        # costs tokens of its own (BENCHMARKS.md, "a joined attachment still pays ..."),
        # but for a turn `split` out of one message of the file: the provider billed one
        overhead: Pending = [] if message.split else [TOKENS_PER_MESSAGE, need(message.role)]
        if message.name and not message.split:
            overhead += [need(message.name), TOKENS_PER_NAME]
        return MessagePlan(overhead, tuple(self._plan_part(p, need) for p in message.parts))

    def resolve(self, plan: MessagePlan) -> MessageCount | None:
        """The count a plan adds up to, or None while one of its texts is still uncounted."""
        parts = []
        for pending in (plan.overhead, *plan.parts):
            total = 0
            for x in pending:
                n = x if type(x) is int else self._cache.get(x)  # type: ignore[arg-type]
                if n is None:
                    return None
                total += n
            parts.append(total)
        return MessageCount(sum(parts), tuple(parts[1:]))

    def message(self, message: Message) -> MessageCount:
        """Tokens of one chat message, cookbook overhead included."""
        count = self.resolve(self.plan(message, self.text))
        assert count is not None
        return count

    def messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a whole prompt: every message plus the reply priming."""
        return sum(self.message(m).total for m in messages) + REPLY_PRIMING



def model_and_window(counter: TokenCounter, named: str | None, usage: dict[str, Any],
                     flagged: bool, calls: Iterable[RecordedCall] = ()) -> tuple[str, int, int]:
    """The model a transcript is reported under, the context window it has, and the window
    assumed for it: the one `--model` names (`flagged`); else the model it names last
    (`named`), where that counts as the counter does, with the window the agent itself
    recorded, where it did (a Codex rollout's is a share of the model's). The window is at
    least the largest call the file records (its prompt and reply), since the model took
    it: a window assumed smaller is raised to that (`--model` asks of that model's own).
    stats and compress both ask here."""
    model, window = counter.model, counter.info.context_window
    latest = None if flagged or not named else counter.table.find(named)
    if named and latest is not None and latest.encoding == counter.encoding_name:
        model, window = printable(named), latest.context_window
    recorded = recorded_window(named, usage.get("context_window"))
    if not flagged and recorded is not None:  # (one no model has is not taken)
        window = recorded
    sent = 0 if flagged else largest_call(calls)
    return model, max(window, sent), window


def largest_call(calls: Iterable[RecordedCall]) -> int:
    """The most tokens a call the file records held: its prompt and its recorded reply."""
    return max((c.billed + (c.output or 0) for c in calls if c.billed > 0), default=0)


NOT_NAMED = "(not named)"  # the model of a file that names none, where nothing is assumed


ASSUMED_NOTE = "the file names no model, so this one is assumed; -m sets another"


def reported_model(counter: TokenCounter, named: str | None, usual: str | None,
                   flagged: bool) -> tuple[str, bool, str]:
    """The model a file is reported under, whether its counts are exact, and the note that
    says what the reader should know of both (stats, show and JSON say the same, for every
    format): a model the file names and ctxpack knows, or `--model`, as the counter has it;
    a model its format assumes because the file names none, with the counter's exactness
    and a note that it was assumed; a model ctxpack does not know (or none, and none
    assumed), with why its counts are estimates."""
    if flagged or (named and counter.table.find(named) is not None):
        return counter.model, counter.exact, counter.note
    if not named and usual:
        return counter.model, counter.exact, "; ".join(
            n for n in (ASSUMED_NOTE, counter.note) if n)
    # the encoding that counted, and whose it is: the fallback model's own, or the
    # approximation ctxpack uses for a model whose tokenizer it does not have
    whose = f"{counter.model}'s encoding" if counter.info.exact else \
        f"as ctxpack counts {counter.model} (itself an approximation)"
    how = f"counted with {counter.encoding_name}, {whose}, so the counts are an estimate for "
    if counter.failed:
        how = f"{counter.note}, for "  # (no encoding counted)
    if named:
        return printable(named), False, (f"{printable(named)} is a model ctxpack does not "
                                         f"know: {how}{printable(named)}")
    return NOT_NAMED, False, f"the file names no model: {how}the model that ran"
