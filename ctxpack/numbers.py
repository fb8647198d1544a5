"""Numbers read from what strangers write: a config file, an environment variable, a
transcript's recorded cost. One reading for all of them, so that a value is a number, or
is not, the same way wherever it is given. It imports nothing heavy: the command line
reads settings with it at every start."""

from __future__ import annotations

import math
import sys
from typing import Any


def number(value: Any, text: bool = False) -> int | float | None:
    """The number `value` holds, or None where it holds none: true and false, NaN and the
    infinities (YAML's `.inf`, JSON's `Infinity`), any value of another kind. `text`: a
    string of a decimal number counts too, as Python reads one ("1032", "1_000", "1e3",
    " 5 "; not "1,234" nor "$0.05"), as PyYAML leaves `1e3`, as an environment variable
    is, as the managed-agent API writes its list cost. A whole number written whole
    ("1032", 10**400) is an int, exact however large: compared exactly, one past what a
    float holds is outside every range; text that reads as no finite float ("1e400",
    "inf") is no number."""
    if isinstance(value, str) and text:
        try:
            return int(value)
        except ValueError:
            pass
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def real(value: Any, text: bool = False) -> float | None:
    """`number(value, text)` as a float, where a range is checked in floats: a whole number
    past what a float holds is an infinity of its sign (a number, outside every range)."""
    found = number(value, text)
    if found is None:
        return None
    if isinstance(found, int) and abs(found) > sys.float_info.max:
        return math.inf if found > 0 else -math.inf
    return float(found)


# The least whole number quoted by its digits, not its figures: no count, cost or setting
# comes near it, and a run of hundreds of figures (10**400 written out) hides the line
LONG = 10**21


def figure(value: int) -> str:
    """A whole number from a file as a problem quotes it: with separators (1,500), or, past
    any count a file can hold, by how many digits it has ("a 401-digit number"; Python
    writes out no more than 4,300 of them)."""
    size = abs(value)
    if size < LONG:
        return f"{value:,}"
    digits = int(math.log10(size)) + 1  # (a float's log: one off next to a power of ten)
    digits += (size >= 10**digits) - (size < 10 ** (digits - 1))
    return f"a {'negative ' if value < 0 else ''}{digits:,}-digit number"


def quoted(value: Any) -> str:
    """A value someone gave, as an error quotes it: as given (`repr`), but a whole number,
    or text of one, too long to read by its digits, as `figure` says it."""
    found = number(value, text=True) if isinstance(value, (str, int)) else None
    if isinstance(found, int) and abs(found) >= LONG:
        return figure(found)
    return repr(value)
