"""What a whole dataset adds up to, folded from the per-row results batch by batch:
tokens in all, by role and by tool, the distribution of tokens per row, the rows over
a limit, and the rows that could not be read, failed validate or were compressed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from ..jsonl import loads

SCHEMA_VERSION = 1


def percentile(ordered: list[int], share: float) -> int:
    """The nearest-rank percentile of sorted values (0 for none)."""
    if not ordered:
        return 0
    rank = max(1, -(-len(ordered) * share // 1))
    return ordered[min(int(rank), len(ordered)) - 1]


@dataclass
class DatasetStats:
    """Stats of a dataset; `--json` serializes exactly this."""

    path: str
    rows: int = 0
    tokens: int = 0
    messages: int = 0
    by_role: Counter[str] = field(default_factory=Counter)
    by_tool: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    invalid: int = 0
    failed: int = 0
    over: int = 0
    over_ratio: int = 0
    max_tokens: int | None = None
    max_ratio: float | None = None  # each row's share of its window, as --max-ratio
    per_row: list[int] = field(default_factory=list, repr=False)
    errors: list[str] = field(default_factory=list)  # the first few rows that failed

    def add(self, table: Any) -> None:
        """Fold in one batch of stats_table's rows."""
        for r in table.to_pylist():
            self.rows += 1
            if r["error"] is not None:
                self.failed += 1
                if len(self.errors) < 10:
                    self.errors.append(r["error"])
                continue
            self.tokens += r["tokens"]
            self.messages += r["messages"]
            self.per_row.append(r["tokens"])
            self.by_role.update(loads(r["by_role"].encode()))
            self.by_tool.update(loads(r["by_tool"].encode()))
            self.models[r["model"]] += 1
            self.invalid += not r["valid"]
            self.over += self.max_tokens is not None and r["tokens"] > self.max_tokens
            self.over_ratio += self.max_ratio is not None and r["context_ratio"] is not None \
                and r["context_ratio"] > self.max_ratio

    @classmethod
    def across(cls, parts: list[DatasetStats]) -> DatasetStats:
        """Several datasets' stats taken together, as one dataset of all their rows would
        have them (its `path` says how many; the rows' problems stay with their own)."""
        limits = ("max_tokens", "max_ratio")
        total = cls(f"total of {len(parts):,} datasets",
                    **{k: getattr(parts[0], k) for k in limits} if parts else {})
        summed = [f.name for f in fields(cls) if f.name not in ("path", "errors", *limits)]
        for p in parts:
            for name in summed:  # counts add up, counters and lists take the others in
                mine, theirs = getattr(total, name), getattr(p, name)
                if isinstance(mine, Counter):
                    mine.update(theirs)
                elif isinstance(mine, list):
                    mine.extend(theirs)
                else:
                    setattr(total, name, mine + theirs)
        return total

    def distribution(self) -> dict[str, int]:
        ordered = sorted(self.per_row)
        return {"p50": percentile(ordered, 0.5), "p90": percentile(ordered, 0.9),
                "max": ordered[-1] if ordered else 0}

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "path": self.path, "rows": self.rows,
                "tokens": self.tokens, "messages": self.messages,
                "tokens_per_row": self.distribution(), "max_tokens": self.max_tokens,
                "rows_over": self.over if self.max_tokens is not None else None,
                "max_ratio": self.max_ratio,
                "rows_over_ratio": self.over_ratio if self.max_ratio is not None else None,
                "rows_invalid": self.invalid, "rows_failed": self.failed,
                "by_role": dict(self.by_role.most_common()),
                "by_tool": dict(self.by_tool.most_common()),
                "models": dict(self.models.most_common()), "errors": self.errors}


@dataclass
class DatasetCompressed:
    """What a dataset compress did: rows, how many changed or failed, tokens before and
    after (of the rows read)."""

    path: str
    dest: str
    rows: int = 0
    changed: int = 0
    failed: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, table: Any) -> None:
        cols = ("ctxpack_tokens_before", "ctxpack_tokens_after", "ctxpack_error", "ctxpack")
        for before, after, error, meta in zip(*(table.column(c).to_pylist() for c in cols),
                                              strict=True):
            self.rows += 1
            if error is not None:
                self.failed += 1
                if len(self.errors) < 10:
                    self.errors.append(error)
                continue
            self.changed += meta is not None
            self.tokens_before += before
            self.tokens_after += after

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))
