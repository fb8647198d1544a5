"""The shape of a summary: sections of lines, and how a `Condensing` renders them shorter.

Lines carry their facts apart from their head, so the oldest lines can show fewer
facts, none, or be folded into one counted line; the text always says what was
condensed. Sections with verbatim items are never condensed. `_budget` picks the Condensing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..facts import extract
from . import HEADING

NONE = -1  # a position threshold below every line: nothing condensed
RESTORE = "their full text can be restored with `ctxpack restore`."
NOT_KEPT = "their full text was not kept."
CONDENSED = "Condensed to fit the token budget:"  # opens the note of a condensed summary
CAPS = {"identifiers": 5, "numbers": 4, "commands": 2}  # facts of a kind one line may show
# Facts kept longest under pressure; "" is a fact read back from an earlier summary.
PRIMARY = frozenset({"errors", "paths", "urls", ""})
TRIMMED_CAP = 20  # the least a trimmed line shows of each primary kind (a listing's head)
MAX_FOLDED_TOOLS = 8
FOLDED, BARE, TRIMMED, FULL = range(4)  # how much of a line shows


@dataclass(frozen=True, slots=True)
class Line:
    """One bullet: a head kept until folded, and facts dropped first under pressure.

    `pos` orders condensing (the step it belongs to); `steps`, `tools`, `errors` and
    `others` are what a fold of it counts (`others`: lines that are not steps)."""

    pos: int
    head: str
    facts: tuple[tuple[str, str], ...] = ()
    steps: tuple[int, int] | None = None
    tools: tuple[tuple[str, int], ...] = ()
    errors: int = 0
    others: int = 0
    optional: bool = False  # shown only while it has facts to show
    brief: str = ""  # the head in short, shown once the line is condensed ("": the head)


@dataclass(frozen=True, slots=True)
class Section:
    """A `### title` part: a block kept as is, then lines; `fixed` ones never condense."""

    title: str
    block: str = ""
    lines: tuple[Line, ...] = ()
    fixed: bool = False
    noun: str = "messages"  # what a fold calls the lines that are not steps


@dataclass(frozen=True, slots=True)
class Doc:
    """A whole summary before rendering; `protected` are facts its blocks already show."""

    sections: tuple[Section, ...]
    protected: frozenset[str] = field(default=frozenset())
    archived: bool = True  # the originals are kept, and the summary says how to get them

    @classmethod
    def of(cls, sections: Iterable[Section | None], archived: bool = True) -> Doc:
        """A Doc of the given sections (None ones left out), with its blocks' facts noted."""
        kept = tuple(s for s in sections if s is not None)
        blocks = "\n".join(s.block for s in kept if s.block)
        return cls(kept, frozenset(extract(blocks).all()) if blocks else frozenset(), archived)

    def positions(self) -> list[int]:
        """The distinct positions of the condensable lines, oldest first."""
        return sorted({ln.pos for s in self.sections if not s.fixed for ln in s.lines})


@dataclass(frozen=True, slots=True)
class Condensing:
    """How far to condense, by line position: up to `fold` folded, up to `drop` without
    facts, up to `trim` with only `cap` errors, paths and URLs each; newer lines whole."""

    fold: int = NONE
    drop: int = NONE
    trim: int = NONE
    cap: int = TRIMMED_CAP

    def level(self, pos: int) -> int:
        """How much a line at `pos` shows: FOLDED, BARE, TRIMMED or FULL."""
        return (FOLDED if pos <= self.fold else BARE if pos <= self.drop
                else TRIMMED if pos <= self.trim else FULL)


def render(doc: Doc, cut: Condensing | None = None) -> str:
    """The summary text of `doc` condensed as `cut` says (not at all by default)."""
    cut = cut or Condensing()
    seen = set(doc.protected)
    out = [HEADING, _intro(doc)]
    note = _condensed_note(doc, cut)
    if note:
        out.append(note)
    for section in doc.sections:
        body = _section_lines(section, cut, seen)
        if body or section.block:
            out += ["", f"### {section.title}"]
            out += [section.block] if section.block else []
            out += body
    return "\n".join(out) + "\n"


def _section_lines(section: Section, cut: Condensing, seen: set[str]) -> list[str]:
    if section.fixed:
        return [ln.head for ln in section.lines]
    folded = [ln for ln in section.lines if cut.level(ln.pos) == FOLDED]
    out = [fold_line(folded, section.noun)] if folded else []
    for ln in section.lines:
        level = cut.level(ln.pos)
        if level != FOLDED:
            text = _line_text(ln, seen, level, cut.cap)
            if text:
                out.append(text)
    return out


def _line_text(line: Line, seen: set[str], level: int, cap: int) -> str:
    if level <= BARE:  # no facts: its head, if it shows without them
        return "" if line.optional else line.brief or line.head
    trimmed = level == TRIMMED
    head = line.brief if line.brief and trimmed else line.head
    shown: list[str] = []
    errors = ""  # the error lines shown, one per line: a fact inside one is not repeated
    counts: dict[str, int] = {}
    told = False  # a fact of its own is in the line, if only in its head
    for kind, fact in line.facts:
        if (trimmed and kind not in PRIMARY) or fact in seen:
            continue
        if fact in head or fact in errors:
            told = told or fact in head
            seen.add(fact)
            continue
        n = counts[kind] = counts.get(kind, 0) + 1
        if n > (cap if trimmed else CAPS.get(kind, n)):
            continue
        seen.add(fact)
        shown.append(fact)
        if kind == "errors":
            errors += fact + "\n"
    if trimmed:  # say what the per-line cap left out
        shown += [f"+{n - cap} more {kind or 'facts'}" for kind, n in counts.items() if n > cap]
    if line.optional and not shown and not told:
        return ""
    if not shown:
        return head
    # a head that ends in ":" introduces its facts ("* Step 4 (Bash): 12 passed")
    return head + (" " if head.endswith(":") else "; ") + "; ".join(shown)


def fold_line(lines: list[Line], noun: str) -> str:
    """One line standing for `lines`: their step span, tools, errors and other lines counted."""
    tools: Counter[str] = Counter()
    for ln in lines:
        tools.update(dict(ln.tools))
    ranked = sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [", ".join(f"{name} ×{n}" for name, n in ranked[:MAX_FOLDED_TOOLS])]
    rest = sum(n for _, n in ranked[MAX_FOLDED_TOOLS:])
    if rest:
        parts[0] += f", other ×{rest}"
    errors = sum(ln.errors for ln in lines)
    others = sum(ln.others for ln in lines)
    parts += [f"{errors} error" + ("" if errors == 1 else "s")] if errors else []
    parts += [f"{others} {noun.removesuffix('s') if others == 1 else noun}"] if others else []
    return f"* {span(lines)} (condensed): " + "; ".join(p for p in parts if p)


def span(lines: Iterable[Line]) -> str:
    """`Steps 3–9` (or `Step 3`) for the steps `lines` cover; `Earlier messages` if none."""
    steps = [ln.steps for ln in lines if ln.steps]
    if not steps:
        return "Earlier messages"
    lo, hi = min(s[0] for s in steps), max(s[1] for s in steps)
    return f"Step {lo}" if lo == hi else f"Steps {lo}–{hi}"


def _intro(doc: Doc) -> str:
    what = span(ln for s in doc.sections for ln in s.lines)
    verb = "was" if what.startswith("Step ") else "were"
    return f"{what} of this session {verb} archived by ctxpack; " \
        f"{RESTORE if doc.archived else NOT_KEPT}"


def _condensed_note(doc: Doc, cut: Condensing) -> str:
    lines = [ln for s in doc.sections if not s.fixed for ln in s.lines]
    by_level: dict[int, list[Line]] = {FOLDED: [], BARE: [], TRIMMED: []}
    for ln in lines:
        level = cut.level(ln.pos)
        if level in by_level and (ln.facts or level == FOLDED):
            by_level[level].append(ln)
    what = {FOLDED: "{} folded into counts", BARE: "facts of {} left out",
            TRIMMED: "long arguments, identifiers, numbers, commands and long lists of {} "
                     "left out"}
    notes = [what[k].format(span(v).lower()) for k, v in by_level.items() if v]
    if not notes:
        return ""
    kept = "the archive has them all" if doc.archived else "they were not kept"
    return f"{CONDENSED} {'; '.join(notes)} ({kept})."
