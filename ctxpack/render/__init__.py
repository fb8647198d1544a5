"""Rendering of results for people (Rich) and programs (JSON, CSV, markdown).

Only this package and ctxpack.cli import rich; nothing here does arithmetic beyond
formatting the numbers the library computed.
"""


def plain(text: str) -> str:
    """`text` with its control characters shown as escapes: a name read from a file a
    stranger wrote must not reach the terminal as a command to it."""
    return text.translate(_CONTROLS)


def markup(text: str) -> str:
    """`text` read from a file, made safe to print through Rich: its control characters
    shown as escapes (`plain`) and its square brackets taken as text, not markup."""
    from rich.markup import escape

    return escape(plain(text))


# the most of a name (a model's) a table cell shows: a deployment's or an inference
# profile's whole, folded onto a few lines, not a stranger's 5,000 characters
NAME_CHARS = 100


def shortened(text: str, limit: int = NAME_CHARS) -> str:
    """`text` cut to `limit` characters, its end an ellipsis where it was longer: a name a
    stranger's file gives fills one row of a table, not dozens (JSON keeps it whole)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(count: int, word: str) -> str:
    """`1 round`, `1,491 rounds`."""
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def percent(ratio: float) -> str:
    """A share as a percentage with the digits it has: `0.0791` is `7.91%`, `0.079` `7.9%`
    (a limit and the share over it are told apart, which one decimal may not)."""
    return f"{ratio * 100:.6g}%"


_CONTROLS = {n: f"\\x{n:02x}" for n in (*range(0x20), *range(0x7F, 0xA0)) if n != 0x09}
