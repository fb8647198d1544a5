"""compress's billed figures beside what `stats` says of its output, on every Claude Code
and Codex corpus file: by default, with `--budget` 60% of the bill, and with `--budget`
the part not in the file plus half the rest.

For each run: the report's `billed.tokens_after` and `not_in_file` ("out"), whether the
target was met (a file under the trigger has none: compress only cuts huge outputs
there), `stats --json` of the output where it differs, and `stats --json` of the
output written with `--strip-metadata` (the records an agent resumes from: nothing says
what compress did, so the bill anchors on the usage compress restated for the calls it
kept). Exit 3: the budget is below what is not in the file and what must stay.

    PYTHONPATH=. python bench/bench_billed_output.py [FILES...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import CORPUS  # noqa: E402


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxpack", *args], capture_output=True,
                          text=True, cwd=ROOT)


def context(path: Path) -> dict:
    run = cli("stats", str(path), "--json")
    if run.returncode:
        raise SystemExit(f"stats {path}: {run.stderr.strip()}")
    return json.loads(run.stdout)["files"][0]["context"]


def figure(c: dict) -> str:
    return f"{c['tokens']:,} ({c['not_in_file']:,} out)"


def compressed(path: Path, budget: int | None, work: Path) -> str:
    """One row's cell: the report's figures, and stats of each output where they differ."""
    out, stripped, report = work / f"out{path.suffix}", work / f"bare{path.suffix}", \
        work / "report.json"
    limit = ["--budget", str(budget)] if budget else []
    run = cli("compress", str(path), "-o", str(out), "--report-json", str(report), *limit)
    if run.returncode:
        return f"exit {run.returncode} | —"
    made = json.loads(report.read_text())
    b = made["billed"]
    if not made["changed"]:
        said = f"no change, {b['not_in_file']:,} out"
    elif b["tokens_before"] <= made["trigger"]:  # (both billed) nothing to summarize: only
        # huge outputs were cut, which compress does at any size, so no target applies
        said = f"{b['tokens_after']:,} ({b['not_in_file']:,} out), under the trigger " \
            f"({made['trigger']:,}): no target"
    else:
        said = f"{b['tokens_after']:,} ({b['not_in_file']:,} out), target " + \
            ("met" if b["tokens_after"] <= made["target"] else "missed")
    stats = context(out)
    if stats["tokens"] != b["tokens_after"] or stats["not_in_file"] != b["not_in_file"]:
        said += f"; stats of output {figure(stats)}"
    cli("compress", str(path), "-o", str(stripped), "--strip-metadata", *limit)
    bare = context(stripped)
    return f"{said} | {bare['tokens']:,} ({bare['kind']}, ±{bare['error']:.1%})" \
        if bare["error"] is not None else f"{said} | {bare['tokens']:,} ({bare['kind']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or sorted([*(CORPUS / "claude-code").glob("*.jsonl"),
                                  *(CORPUS / "codex").glob("*.jsonl")])
    print("| file | compress | stats of input: not in the file | report (and stats of "
          "output) | stats of --strip-metadata output |")
    print("|---|---|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            before = context(path)
            budgets = [None, int(before["tokens"] * 0.6),
                       before["not_in_file"] + before["visible"] // 2]
            for budget in budgets:
                how = f"--budget {budget:,}" if budget else "default"
                print(f"| {path.name[:45]} | {how} | {before['not_in_file']:,} | "
                      f"{compressed(path, budget, Path(tmp))} |", flush=True)


if __name__ == "__main__":
    main()
