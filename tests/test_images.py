"""Image sizes from real headers built here with the standard library, and the token formulas."""

from __future__ import annotations

import base64
import binascii
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import images
from ctxpack.images import (
    DEFAULT_SIZE,
    anthropic_image_tokens,
    image_size,
    openai_image_tokens,
    size_from_base64,
)

# --- builders: minimal but well-formed files ------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def make_png(width: int, height: int, *, cgbi: bool = False) -> bytes:
    """8-bit greyscale PNG, all black, with a real zlib IDAT."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(width) for _ in range(height))  # filter byte 0 per row
    head = png_chunk(b"CgBI", b"\x50\x00\x20\x02") if cgbi else b""
    return (PNG_SIGNATURE + head + png_chunk(b"IHDR", ihdr)
            + png_chunk(b"IDAT", zlib.compress(rows)) + png_chunk(b"IEND", b""))


def make_gif(width: int, height: int) -> bytes:
    """GIF89a, two-colour palette, one frame of colour 0, LZW codes kept at 3 bits."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0)  # global table of 2 colours
    palette = b"\x00\x00\x00\xff\xff\xff"
    descriptor = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    # Minimum code size 2: clear = 4, end = 5. A clear before every pixel keeps the table empty,
    # so every code stays 3 bits wide.
    codes = [4, 0] * (width * height) + [5]
    bits = sum(code << (3 * i) for i, code in enumerate(codes))
    stream = bits.to_bytes((3 * len(codes) + 7) // 8, "little")
    blocks = b"".join(bytes([len(stream[i:i + 255])]) + stream[i:i + 255]
                      for i in range(0, len(stream), 255))
    return b"GIF89a" + screen + palette + descriptor + b"\x02" + blocks + b"\x00;"


def make_bmp(width: int, height: int, *, top_down: bool = False, core: bool = False) -> bytes:
    """24-bit BMP with BITMAPINFOHEADER (or the 12-byte OS/2 core header)."""
    stride = (width * 3 + 3) // 4 * 4
    pixels = bytes(stride * height)
    if core:
        dib = struct.pack("<IHHHH", 12, width, height, 1, 24)
    else:
        dib = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, 24, 0,
                          len(pixels), 2835, 2835, 0, 0)
    offset = 14 + len(dib)
    return b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset) + dib + pixels


def riff_webp(*chunks: tuple[bytes, bytes]) -> bytes:
    body = b"WEBP"
    for kind, data in chunks:
        body += kind + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body)) + body


def vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | (height - 1) << 14 | 1 << 28  # alpha hint set, version 0
    return b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8


def make_webp_vp8x(width: int, height: int) -> bytes:
    vp8x = b"\x10\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(
        3, "little")
    return riff_webp((b"VP8X", vp8x), (b"VP8L", vp8l(width, height)))


def make_webp_vp8l(width: int, height: int) -> bytes:
    return riff_webp((b"VP8L", vp8l(width, height)))


def make_webp_vp8(width: int, height: int, *, key_frame: bool = True, scale: int = 0) -> bytes:
    partition = 10
    tag = (0 if key_frame else 1) | 1 << 4 | partition << 5  # version 0, shown
    frame = (tag.to_bytes(3, "little") + b"\x9d\x01\x2a"
             + struct.pack("<HH", width | scale << 14, height | scale << 14) + bytes(partition))
    return riff_webp((b"VP8 ", frame))


def jpeg_segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def make_jpeg(width: int, height: int, *, sof: int = 0xC0, app_segments: int = 0,
              thumbnail: bytes = b"", fill: int = 0) -> bytes:
    """Baseline (or other SOFn) JPEG: APP0 JFIF, optional big APP1/APP2 segments, DQT, SOF,
    DHT, SOS, a little scan data and EOI. `app_segments` full-size (64 KB) segments put the
    frame header far from the start, as a camera's EXIF block or an ICC profile does."""
    out = b"\xff\xd8" + jpeg_segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    for i in range(app_segments):
        head = b"Exif\x00\x00" + thumbnail if i == 0 else b"ICC_PROFILE\x00"
        out += jpeg_segment(0xE1 if i == 0 else 0xE2, head.ljust(65533, b"\x5a"))
    out += jpeg_segment(0xDB, b"\x00" + bytes(range(1, 65)))
    frame = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
    out += b"\xff" * fill + jpeg_segment(sof, frame)
    out += jpeg_segment(0xC4, b"\x00" + b"\x01" + bytes(15) + b"\x00")
    out += jpeg_segment(0xDA, b"\x01\x01\x00\x00\x3f\x00") + b"\x00\x12\x34\xff\x00\x56"
    return out + b"\xff\xd9"


def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64," + base64.b64encode(data).decode()


# --- image_size -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("data", "size"),
    [
        (make_png(3, 2), (3, 2)),
        (make_png(1, 1), (1, 1)),
        (make_png(1500, 40), (1500, 40)),
        (make_png(7, 5, cgbi=True), (7, 5)),
        (make_gif(5, 3), (5, 3)),
        (make_gif(300, 1), (300, 1)),
        (make_bmp(4, 3), (4, 3)),
        (make_bmp(5, 7, top_down=True), (5, 7)),
        (make_bmp(9, 2, core=True), (9, 2)),
        (make_webp_vp8x(1920, 1080), (1920, 1080)),
        (make_webp_vp8x(16_777_216, 1), (16_777_216, 1)),  # 24-bit field at its maximum
        (make_webp_vp8l(640, 480), (640, 480)),
        (make_webp_vp8l(16384, 1), (16384, 1)),  # 14-bit field at its maximum
        (make_webp_vp8(320, 240), (320, 240)),
        (make_webp_vp8(320, 240, scale=3), (320, 240)),  # upscale bits are not size
        (make_jpeg(640, 480), (640, 480)),
        (make_jpeg(2048, 1536, sof=0xC2), (2048, 1536)),  # progressive
        (make_jpeg(100, 50, sof=0xC1), (100, 50)),  # extended sequential
        (make_jpeg(33, 44, sof=0xC9), (33, 44)),  # arithmetic coded
        (make_jpeg(800, 600, fill=5), (800, 600)),  # 0xFF fill bytes before the marker
        (make_jpeg(4032, 3024, app_segments=1), (4032, 3024)),
    ],
)
def test_image_size_reads_header(data: bytes, size: tuple[int, int]) -> None:
    assert image_size(data) == size


def test_jpeg_skips_exif_thumbnail_inside_app1() -> None:
    # The thumbnail's own SOF0 (160x120) lies inside APP1 and must be skipped with the segment.
    data = make_jpeg(4000, 3000, app_segments=1, thumbnail=make_jpeg(160, 120))
    assert image_size(data) == (4000, 3000)


def test_jpeg_skips_standalone_markers() -> None:
    data = make_jpeg(12, 34)
    # An RST marker and a TEM marker carry no length; the walk must step over them.
    data = data[:2] + b"\xff\xd0\xff\x01" + data[2:]
    assert image_size(data) == (12, 34)


def test_bytes_like_inputs() -> None:
    png = make_png(6, 4)
    assert image_size(bytearray(png)) == (6, 4)
    assert image_size(memoryview(png)) == (6, 4)
    assert image_size("not bytes") is None  # type: ignore[arg-type]
    assert image_size(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello world",
        PNG_SIGNATURE,
        make_png(3, 2)[:20],  # IHDR cut inside the width
        make_png(3, 2)[:23],  # IHDR cut inside the height
        PNG_SIGNATURE + png_chunk(b"tEXt", b"a\x00b") + make_png(3, 2)[8:],  # IHDR not first
        make_png(0, 2),
        make_gif(5, 3)[:9],
        make_gif(0, 3),
        make_bmp(4, 3)[:20],
        make_bmp(4, 3)[:14] + struct.pack("<I", 99) + make_bmp(4, 3)[18:],  # unknown DIB size
        make_webp_vp8x(10, 10)[:27],
        make_webp_vp8l(10, 10)[:22],
        make_webp_vp8(10, 10)[:28],
        make_webp_vp8(10, 10, key_frame=False),
        make_webp_vp8(0, 10),
        make_webp_vp8l(10, 10).replace(b"\x2f", b"\x2e", 1),  # bad VP8L signature
        riff_webp((b"ALPH", b"\x00" * 4)),  # a chunk we do not read
        make_jpeg(640, 480)[:2],
        make_jpeg(640, 480)[:30],  # ends before the frame header
        make_jpeg(640, 480, app_segments=1)[:40_000],  # ends inside APP1
        make_jpeg(640, 0),  # height deferred to a DNL segment: unknown
        b"\xff\xd8\xff\xda" + b"\x00" * 20,  # scan before any frame header
        b"\xff\xd8\xff\xd9",  # EOI straight away
        b"\xff\xd8\x00\x00\xff\xc0",  # garbage where a marker must be
        b"\xff\xd8\xff\xe0\x00\x01",  # segment length below 2
        b"\xff\xd8" + b"\xff" * 1000,  # nothing but fill bytes
    ],
)
def test_image_size_unknown_truncated_or_corrupt_is_none(data: bytes) -> None:
    assert image_size(data) is None


def test_every_truncation_of_a_jpeg_is_none_or_exact() -> None:
    data = make_jpeg(321, 123, fill=2)
    sizes = {image_size(data[:n]) for n in range(len(data) + 1)}
    assert sizes == {None, (321, 123)}


RIFF = b"RIFF\x00\x00\x00\x00WEBP"
MAGICS = [PNG_SIGNATURE, PNG_SIGNATURE + b"\x00\x00\x00\x04CgBI", b"\xff\xd8", b"\xff\xd8\xff",
          b"GIF87a", b"GIF89a", b"BM", RIFF + b"VP8X", RIFF + b"VP8L", RIFF + b"VP8 "]


def check_result(result: object) -> None:
    assert result is None or (
        isinstance(result, tuple) and len(result) == 2
        and all(isinstance(v, int) and v > 0 for v in result)
    )


@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    check_result(image_size(data))


@given(st.sampled_from(MAGICS), st.binary(max_size=512))
def test_bytes_after_a_magic_never_raise(magic: bytes, rest: bytes) -> None:
    check_result(image_size(magic + rest))


jpeg_markers = st.integers(0, 255)
jpeg_bodies = st.binary(max_size=40)


@given(st.lists(st.tuples(jpeg_markers, st.integers(0, 0xFFFF), jpeg_bodies), max_size=8),
       st.binary(max_size=16))
def test_jpeg_marker_walk_never_raises(segments: list[tuple[int, int, bytes]], tail: bytes) -> None:
    data = b"\xff\xd8" + b"".join(bytes([0xFF, m]) + struct.pack(">H", n) + body
                                  for m, n, body in segments) + tail
    check_result(image_size(data))


# --- size_from_base64 -----------------------------------------------------------------------

def test_base64_plain_and_data_url() -> None:
    png = make_png(13, 9)
    assert size_from_base64(base64.b64encode(png).decode()) == (13, 9)
    assert size_from_base64(data_url(png)) == (13, 9)
    assert size_from_base64("  DATA:IMAGE/PNG;BASE64," + base64.b64encode(png).decode()) == (13, 9)
    assert size_from_base64(data_url(make_gif(2, 8), "image/gif")) == (2, 8)
    assert size_from_base64(data_url(make_webp_vp8x(300, 200), "image/webp")) == (300, 200)
    assert size_from_base64(data_url(make_bmp(3, 3), "image/bmp")) == (3, 3)


def test_base64_with_newlines_missing_padding_and_urlsafe_alphabet() -> None:
    gif = make_gif(7, 3)
    wrapped = base64.encodebytes(gif).decode()  # a newline every 76 characters
    assert "\n" in wrapped
    assert size_from_base64("data:image/gif;base64,\n" + wrapped) == (7, 3)
    assert size_from_base64(wrapped.replace("\n", "\r\n  ")) == (7, 3)
    for extra in range(3):  # lengths leaving 0, 1 and 2 padding characters
        data = make_png(5 + extra, 5) + b"x" * extra
        stripped = base64.b64encode(data).decode().rstrip("=")
        assert size_from_base64(stripped) == (5 + extra, 5)
    assert size_from_base64(base64.urlsafe_b64encode(make_png(251, 3)).decode()) == (251, 3)


def test_base64_bytes_input_and_rejects() -> None:
    assert size_from_base64(base64.b64encode(make_png(4, 4))) == (4, 4)  # type: ignore[arg-type]
    assert size_from_base64("") is None
    assert size_from_base64("!!!!") is None
    assert size_from_base64("https://example.com/cat.png") is None
    assert size_from_base64("data:image/svg+xml,%3Csvg%3E%3C/svg%3E") is None
    assert size_from_base64(None) is None  # type: ignore[arg-type]
    assert size_from_base64(data_url(make_jpeg(640, 480)[:30], "image/jpeg")) is None


def test_base64_jpeg_with_frame_header_past_first_chunk() -> None:
    # APP0 plus a 64 KB APP1 put SOF0 about 65.6 KB in: past the 48 KB the first 64 K base64
    # characters decode to, so the reader must come back for more.
    jpeg = make_jpeg(1280, 720, app_segments=1, thumbnail=make_jpeg(160, 90))
    assert jpeg.rindex(b"\xff\xc0\x00\x0b") > 65_536 * 3 // 4
    assert size_from_base64(data_url(jpeg, "image/jpeg")) == (1280, 720)
    wrapped = base64.encodebytes(jpeg).decode()
    assert size_from_base64(wrapped) == (1280, 720)
    assert size_from_base64(wrapped.rstrip("\n=")) == (1280, 720)


def spy_on_decoding(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    lengths: list[int] = []
    real = binascii.a2b_base64

    def spy(chars: str) -> bytes:
        lengths.append(len(chars))
        return real(chars)

    monkeypatch.setattr(images.binascii, "a2b_base64", spy)
    return lengths


def test_base64_decodes_only_a_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    lengths = spy_on_decoding(monkeypatch)
    # A PNG followed by ~1.5 MB of other bytes: the header sits in the first chunk.
    b64 = data_url(make_png(999, 777) + bytes(range(256)) * 6000)
    assert size_from_base64(b64) == (999, 777)
    assert lengths == [65_536]


def test_base64_grows_in_steps_for_a_far_jpeg_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    lengths = spy_on_decoding(monkeypatch)
    jpeg = make_jpeg(6000, 4000, app_segments=5) + bytes(3_000_000)  # SOF ~330 KB in
    b64 = base64.b64encode(jpeg).decode()
    assert size_from_base64(b64) == (6000, 4000)
    assert lengths == [65_536, 262_144, 1_048_576]  # stopped well short of all ~4 M chars
    assert len(b64) > 4_000_000


def test_base64_truncated_far_jpeg_is_none() -> None:
    jpeg = make_jpeg(6000, 4000, app_segments=3)
    cut = jpeg[: jpeg.rindex(b"\xff\xc0\x00\x0b") + 4]  # ends inside the frame header
    assert size_from_base64(base64.b64encode(cut).decode()) is None


@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text: str) -> None:
    check_result(size_from_base64(text))
    check_result(size_from_base64("data:image/png;base64," + text))


@settings(max_examples=200)
@given(st.sampled_from(MAGICS + [b""]), st.binary(max_size=512), st.booleans())
def test_base64_agrees_with_raw_bytes(magic: bytes, rest: bytes, wrap: bool) -> None:
    data = magic + rest
    b64 = base64.encodebytes(data).decode() if wrap else base64.b64encode(data).decode()
    assert size_from_base64(b64) == image_size(data)


# --- token formulas -------------------------------------------------------------------------

def test_default_size_is_the_stated_assumption() -> None:
    assert DEFAULT_SIZE == (1024, 1024)


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        # fits; shortest 1024 -> 768: 768x768, 2x2 tiles: 170*4 + 85
        (1024, 1024, 765),
        # fit 2048: 1024x2048; shortest -> 768: 768x1536, 2x3 tiles: 170*6 + 85
        (2048, 4096, 1105),
        (4096, 8192, 1105),  # same shape, one more halving first
        (1, 1, 255),  # never enlarged: one tile
        (512, 512, 255),
        (513, 513, 765),  # a pixel over: 2x2 tiles
        (768, 768, 765),
        (800, 600, 765),  # shortest 600 already <= 768: 2x2 tiles
        # shortest 1080 -> 768: 1365x768 (1920*768/1080 = 1365.3), 3x2 tiles
        (1920, 1080, 1105),
        (2048, 768, 1445),  # untouched: 4x2 tiles, the most there can be
        # fit 2048: 2048x682 (1000*2048/3000 = 682.7), shortest 682 <= 768: 4x2 tiles
        (3000, 1000, 1445),
        # fit 2048: 2048x20, 4x1 tiles
        (10000, 100, 765),
        (4096, 4096, 765),  # 2048x2048, then 768x768
    ],
)
def test_openai_high(width: int, height: int, tokens: int) -> None:
    assert openai_image_tokens(width, height, "high") == tokens
    assert openai_image_tokens(width, height, "auto") == tokens
    assert openai_image_tokens(width, height) == tokens
    assert openai_image_tokens(height, width, "high") == tokens


@pytest.mark.parametrize(("width", "height"), [(1, 1), (1024, 1024), (2048, 4096), (9999, 3)])
def test_openai_low_is_flat(width: int, height: int) -> None:
    assert openai_image_tokens(width, height, "low") == 85
    assert openai_image_tokens(width, height, "LOW") == 85


def test_openai_unknown_detail_counts_as_high() -> None:
    assert openai_image_tokens(1024, 1024, "original") == 765


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1000, 1000, 1334),  # 1,000,000 / 750 = 1333.3
        (200, 200, 54),  # 40,000 / 750 = 53.3
        (1, 1, 1),
        (750, 1, 1),
        (751, 1, 2),
        (1072, 1072, 1533),  # 1,149,184 px: under 1.15 MP, kept; / 750 = 1532.2
        # area 1,192,464 > 1.15 MP: sides * sqrt(1.15e6 / area) = 1072.4 -> 1072x1072
        (1092, 1092, 1533),
        # long edge 1568 is allowed, but 2,458,624 px is not: sqrt(1.15e6) = 1072.4 -> 1072x1072
        (1568, 1568, 1533),
        # long edge -> 1568: 1568x522 (1000*1568/3000 = 522.7), 818,496 px / 750 = 1091.3
        (3000, 1000, 1092),
        # 1,229,312 px > 1.15 MP: sqrt(2.3e6) = 1516.6, sqrt(5.75e5) = 758.3 -> 1516x758,
        # 1,149,128 px / 750 = 1532.2
        (1568, 784, 1533),
        # long edge -> 1568x1176, 1,843,968 px > 1.15 MP: sqrt(1.15e6 * 4/3) = 1238.3,
        # sqrt(1.15e6 * 3/4) = 928.7 -> 1238x928, 1,148,864 px / 750 = 1531.8
        (4000, 3000, 1532),
    ],
)
def test_anthropic(width: int, height: int, tokens: int) -> None:
    assert anthropic_image_tokens(width, height) == tokens
    assert anthropic_image_tokens(height, width) == tokens


@given(st.integers(1, 100_000), st.integers(1, 100_000))
def test_token_bounds(width: int, height: int) -> None:
    assert 255 <= openai_image_tokens(width, height, "high") <= 170 * 8 + 85
    assert 1 <= anthropic_image_tokens(width, height) <= -(-1_150_000 // 750)


@pytest.mark.parametrize(("width", "height"), [(0, 10), (10, 0), (-5, 5)])
def test_non_positive_size_is_an_error(width: int, height: int) -> None:
    with pytest.raises(ValueError):
        openai_image_tokens(width, height)
    with pytest.raises(ValueError):
        anthropic_image_tokens(width, height)
