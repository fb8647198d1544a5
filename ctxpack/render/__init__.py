"""Rendering of results for people (Rich) and programs (JSON, CSV, markdown).

Only this package and ctxpack.cli import rich; nothing here does arithmetic beyond
formatting the numbers the library computed.
"""


def plain(text: str) -> str:
    """`text` with its control characters shown as escapes: a name read from a file a
    stranger wrote must not reach the terminal as a command to it."""
    return text.translate(_CONTROLS)


def counted(count: int, word: str) -> str:
    """`1 round`, `1,491 rounds`."""
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


_CONTROLS = {n: f"\\x{n:02x}" for n in (*range(0x20), *range(0x7F, 0xA0)) if n != 0x09}
