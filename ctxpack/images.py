"""Image token counts from pixel size, never from the base64 text of the picture.

Owns the header readers that find an image's width and height (PNG, JPEG, GIF, WebP, BMP),
the partial base64 decoding that feeds them, and the OpenAI and Anthropic formulas that turn
a pixel size into prompt tokens. Pure functions, standard library only.
"""

from __future__ import annotations

import binascii
import math
import re
from typing import Literal

__all__ = [
    "DEFAULT_SIZE",
    "NO_PICTURE",
    "anthropic_image_tokens",
    "image_size",
    "not_base64",
    "openai_image_tokens",
    "size_from_base64",
]

Size = tuple[int, int]

# Assumption, not a measurement: an image whose size cannot be read (a URL with no inline data,
# an unknown format, a corrupt header) is counted as a 1024x1024 picture.
DEFAULT_SIZE: Size = (1024, 1024)
# Inline data that is not base64 at all (`not_base64`) holds no picture to count: the
# provider refuses it, no model sees one, so it is counted as 0 tokens (validate names it).
NO_PICTURE = "no picture: counted as 0 tokens"

# OpenAI (GPT-4o class): fit in 2048x2048, shortest side to 768, 512-px tiles.
_OPENAI_LOW_TOKENS = 85
_OPENAI_BASE_TOKENS = 85
_OPENAI_TILE_TOKENS = 170
_OPENAI_TILE = 512
_OPENAI_MAX_SIDE = 2048
_OPENAI_SHORT_SIDE = 768

# Anthropic: long edge at most 1568 px and area at most about 1.15 megapixels, 750 px a token.
# The published table of unresized sizes (e.g. 1092x1092) sits a little above 1.15 MP; we keep
# the stated 1.15 MP figure.
_ANTHROPIC_MAX_EDGE = 1568
_ANTHROPIC_MAX_PIXELS = 1_150_000
_ANTHROPIC_PIXELS_PER_TOKEN = 750

# How much base64 to decode first (a multiple of 4), and how fast to grow when a JPEG's frame
# header lies further in (large EXIF/ICC/XMP segments come before it).
_B64_FIRST_CHARS = 65_536
_B64_GROWTH = 4

_DATA_URL = re.compile(r"\s*data:([^,]{0,256}),", re.IGNORECASE)
_NOT_B64 = re.compile(r"[^A-Za-z0-9+/]+")
# what base64 may hold besides its letters: either alphabet's (standard, URL-safe), its
# padding, and the whitespace a line-wrapped encoder writes
_NOT_B64_TEXT = re.compile(r"[^A-Za-z0-9+/\-_=\s]")
_URLSAFE_TO_STD = str.maketrans("-_", "+/")

# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range
# but are not frames.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers with no length field: TEM, RST0-RST7 and SOI.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})
_JPEG_EOI = 0xD9
_JPEG_SOS = 0xDA

# DIB header sizes in real BMP files; checking it keeps random "BM..." bytes from passing.
_BMP_HEADER_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})


class _Truncated(Exception):
    """The data ended inside the header; more bytes might still give an answer."""


def _need(data: bytes, end: int) -> None:
    if len(data) < end:
        raise _Truncated


def _uint(
    data: bytes, pos: int, size: int, order: Literal["big", "little"], signed: bool = False
) -> int:
    _need(data, pos + size)
    return int.from_bytes(data[pos : pos + size], order, signed=signed)


def _positive(width: int, height: int) -> Size | None:
    return (width, height) if width > 0 and height > 0 else None


def _png_size(data: bytes) -> Size | None:
    pos = 8
    _need(data, pos + 8)
    # Apple's iOS-optimised PNGs put a CgBI chunk ahead of IHDR.
    if data[pos + 4 : pos + 8] == b"CgBI":
        pos += 12 + _uint(data, pos, 4, "big")
    _need(data, pos + 16)
    if data[pos + 4 : pos + 8] != b"IHDR":
        return None
    width = _uint(data, pos + 8, 4, "big")
    height = _uint(data, pos + 12, 4, "big")
    # The spec caps both at 2**31 - 1; anything larger is a damaged header.
    if width > 0x7FFFFFFF or height > 0x7FFFFFFF:
        return None
    return _positive(width, height)


def _jpeg_size(data: bytes) -> Size | None:
    pos = 2  # past SOI
    while True:
        _need(data, pos + 1)
        if data[pos] != 0xFF:
            return None
        # A marker may be preceded by any number of 0xFF fill bytes.
        while True:
            pos += 1
            _need(data, pos + 1)
            if data[pos] != 0xFF:
                break
        marker = data[pos]
        pos += 1
        if marker in _JPEG_STANDALONE:
            continue
        # 0x00 is byte stuffing (only valid inside scan data); EOI or SOS before any frame
        # header means there is no size to find.
        if marker in (0x00, _JPEG_EOI, _JPEG_SOS):
            return None
        length = _uint(data, pos, 2, "big")
        if length < 2:
            return None
        if marker in _JPEG_SOF:
            # Frame header: length(2) precision(1) lines(2) samples-per-line(2).
            height = _uint(data, pos + 3, 2, "big")
            width = _uint(data, pos + 5, 2, "big")
            # Zero lines means the height comes later in a DNL segment: treat as unknown.
            return _positive(width, height)
        # APPn (EXIF, ICC, XMP, and thumbnails inside them), DQT, DHT, COM...: skip whole.
        pos += length


def _gif_size(data: bytes) -> Size | None:
    return _positive(_uint(data, 6, 2, "little"), _uint(data, 8, 2, "little"))


def _webp_size(data: bytes) -> Size | None:
    _need(data, 20)
    chunk = data[12:16]
    payload = 20
    if chunk == b"VP8X":
        # Extended format: flags(1) reserved(3) canvas width-1 (24 bits) canvas height-1 (24 bits).
        width = _uint(data, payload + 4, 3, "little") + 1
        height = _uint(data, payload + 7, 3, "little") + 1
        return width, height
    if chunk == b"VP8L":
        # Lossless: signature 0x2F, then 14 bits width-1, 14 bits height-1, 1 alpha, 3 version.
        _need(data, payload + 1)
        if data[payload] != 0x2F:
            return None
        bits = _uint(data, payload + 1, 4, "little")
        if bits >> 29:  # only version 0 exists
            return None
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        # Lossy: 3-byte frame tag, start code 9D 01 2A, then 14-bit width and height (the top
        # two bits of each are an upscaling hint, not part of the size).
        _need(data, payload + 10)
        if data[payload] & 1:  # bit 0 clear marks a key frame, the only kind with a size
            return None
        if data[payload + 3 : payload + 6] != b"\x9d\x01\x2a":
            return None
        width = _uint(data, payload + 6, 2, "little") & 0x3FFF
        height = _uint(data, payload + 8, 2, "little") & 0x3FFF
        return _positive(width, height)
    return None


def _bmp_size(data: bytes) -> Size | None:
    header = _uint(data, 14, 4, "little")
    if header not in _BMP_HEADER_SIZES:
        return None
    if header == 12:  # OS/2 BITMAPCOREHEADER: 16-bit unsigned sizes
        return _positive(_uint(data, 18, 2, "little"), _uint(data, 20, 2, "little"))
    width = _uint(data, 18, 4, "little", signed=True)
    # A negative height marks a top-down bitmap; the size is its absolute value.
    height = abs(_uint(data, 22, 4, "little", signed=True))
    return _positive(width, height)


def _probe(data: bytes) -> Size | None:
    """Size from the header, None if unknown; raises _Truncated if the data ends too soon."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _png_size(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    if data.startswith((b"GIF87a", b"GIF89a")):
        return _gif_size(data)
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data.startswith(b"BM"):
        return _bmp_size(data)
    return None


def image_size(data: bytes) -> Size | None:
    """(width, height) read from a PNG, JPEG, GIF, WebP or BMP header; None if unknown."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif not isinstance(data, bytes):
        return None
    try:
        return _probe(data)
    except _Truncated:
        return None


def _decode(chars: str, whole: bool) -> bytes | None:
    """Decode cleaned base64; a prefix is cut to whole quads, the whole string is re-padded."""
    extra = len(chars) % 4
    if not whole:
        chars = chars[: len(chars) - extra]
    elif extra == 1:
        chars = chars[:-1]  # a lone character holds fewer than 8 bits: no byte to recover
    elif extra:
        chars += "=" * (4 - extra)
    try:
        return binascii.a2b_base64(chars)
    except binascii.Error:
        return None


def _base64_start(text: str) -> int | None:
    """Where the base64 of inline image data starts: past a data URL's prefix, if it has
    one; None for a data URL that says it is not base64 (percent-encoded SVG, say)."""
    match = _DATA_URL.match(text)
    if match is None:
        return 0
    return match.end() if "base64" in match.group(1).lower() else None


def not_base64(b64: str) -> bool:
    """Whether inline image data (a data URL's prefix allowed) is no base64 at all: it holds
    a character no base64 alphabet has, or only padding and whitespace. Base64 of a
    format ctxpack cannot read the size of is base64 (counted at `DEFAULT_SIZE`); a data
    URL that says it is not base64 (percent-encoded SVG) is not judged here."""
    start = _base64_start(b64) if isinstance(b64, str) else None
    if start is None:
        return False
    body = b64[start:]
    return _NOT_B64_TEXT.search(body) is not None or not _NOT_B64.sub("", body)


def size_from_base64(b64: str) -> Size | None:
    """(width, height) of a base64 image (data URL prefix allowed), decoding only what it needs."""
    if isinstance(b64, (bytes, bytearray)):
        b64 = bytes(b64).decode("latin-1")
    elif not isinstance(b64, str):
        return None
    start = _base64_start(b64)
    if start is None:  # percent-encoded data (e.g. SVG): not base64 and not a format we read
        return None
    end = start + _B64_FIRST_CHARS
    while True:
        whole = end >= len(b64)
        # Drop whitespace, padding and stray characters; accept the URL-safe alphabet too.
        chars = _NOT_B64.sub("", b64[start:end].translate(_URLSAFE_TO_STD))
        data = _decode(chars, whole)
        if data is None:
            return None
        try:
            return _probe(data)
        except _Truncated:
            if whole:
                return None
        end = start + (end - start) * _B64_GROWTH


def _check_size(width: int, height: int) -> None:
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")


def _shrink(width: int, height: int, side: int, limit: int) -> Size:
    """Scale both sides by limit/side (integer, rounding down) when side exceeds limit."""
    if side <= limit:
        return width, height
    return max(1, width * limit // side), max(1, height * limit // side)


def openai_image_tokens(width: int, height: int, detail: str = "auto") -> int:
    """Prompt tokens of one image for GPT-4o-class models, by OpenAI's published tile formula.

    With detail "low" every image costs a flat 85 tokens. Otherwise ("high", "auto", or any
    other value, since "auto" resolves to high for sized images) the image is first shrunk,
    keeping its aspect ratio, until it fits in a 2048x2048 square; then, if its shorter side
    is still longer than 768 px, shrunk again so that side is exactly 768. The result is
    covered with 512x512 tiles (partial tiles count whole), each worth 170 tokens, plus a
    base of 85. Images are never enlarged. Sides are rounded down to whole pixels.
    Raises ValueError for a non-positive size.
    """
    _check_size(width, height)
    if str(detail).strip().lower() == "low":
        return _OPENAI_LOW_TOKENS
    width, height = _shrink(width, height, max(width, height), _OPENAI_MAX_SIDE)
    width, height = _shrink(width, height, min(width, height), _OPENAI_SHORT_SIDE)
    tiles = -(-width // _OPENAI_TILE) * -(-height // _OPENAI_TILE)
    return _OPENAI_TILE_TOKENS * tiles + _OPENAI_BASE_TOKENS


def anthropic_image_tokens(width: int, height: int) -> int:
    """Prompt tokens of one image for Claude: ceil(w * h / 750) after the published downscale."""
    _check_size(width, height)
    # Shrink (aspect kept) so the long edge is at most 1568 px, then, if the area is still
    # over ~1.15 MP, shrink further to that area. Whole pixels, rounded down.
    width, height = _shrink(width, height, max(width, height), _ANTHROPIC_MAX_EDGE)
    if width * height > _ANTHROPIC_MAX_PIXELS:
        scale = math.sqrt(_ANTHROPIC_MAX_PIXELS / (width * height))
        width = max(1, math.floor(width * scale))
        height = max(1, math.floor(height * scale))
    return -(-(width * height) // _ANTHROPIC_PIXELS_PER_TOKEN)
