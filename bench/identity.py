"""Check that `ctxpack compress` writes the same bytes as an earlier commit did.

A refactor of the compress wing must not change what it writes. This script takes the
tree of an earlier commit (`--base`, `git archive` into a temporary folder) and the
working tree, runs the command line of each on the same inputs with the same settings,
and compares what they wrote: the output file, the exit code and stderr, byte for byte.
The reports (`--report-json`) are compared too, after `same_report` maps the fields a
change renamed on purpose.

Inputs: every file in samples/, every JSONL and JSON file of the shared corpus (files
compress cannot read must fail the same way), each at its default settings and at a
budget of 90% down to 10% of its tokens, with both offline strategies; the samples also
with other settings and compressed a second time. `--bench` adds the 220 MB benchmark
transcript. `SOURCE_DATE_EPOCH` is pinned, so that both write the same time stamps.

    python bench/identity.py --base 607abaa            # exit 1 if anything differs
    python bench/identity.py --base 607abaa --bench -j 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EPOCH = "1795000000"
SHARES = (None, 0.9, 0.7, 0.5, 0.3, 0.1)  # of the file's tokens; None: the default trigger
STRATEGIES = ("extractive", "structured")
# More settings, tried on the samples (each with a budget of half the tokens).
VARIANTS = (
    ("--keep-steps", "0"), ("--keep-rounds", "1"), ("--no-mask",), ("--no-truncate",),
    ("--truncate-mode", "head", "--max-lines", "20"), ("--keep-observations", "0"),
    ("--no-archive",), ("--strip-metadata",), ("--archive-dir", "{dir}"),
    ("--max-summary-tokens", "200"), ("--summary-ratio", "1"), ("--target", "{half}"),
)
# Report fields a change renamed or numbered anew on purpose: (old name, new name).
RENAMED: tuple[tuple[str, str], ...] = (("steps", "stages"),)
IGNORED = frozenset({"schema_version"})
KEPT: Path | None = None  # where outputs are kept by their sha256 (--keep)
# Stages that report rows of their own where the summarize row used to tell their effect.
AFTER_SUMMARIZE = ("limit", "llm")


@dataclass(frozen=True)
class Case:
    name: str
    source: Path
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str
    output: str  # sha256 of the file written, or "" if none
    report: Any
    archive: tuple[tuple[str, str], ...]  # an --archive-dir's files and their sha256


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"),
                    help="the shared folder with corpus/ (default: ../shared)")
    ap.add_argument("--bench", action="store_true", help="add the 220 MB benchmark transcript")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", help="only cases whose name contains this")
    ap.add_argument("--keep", metavar="DIR", type=Path,
                    help="keep both outputs of each case that differs here")
    args = ap.parse_args()

    global KEPT
    with tempfile.TemporaryDirectory(prefix="ctxpack-identity-") as tmp:
        work = Path(tmp)
        base = work / "base"
        export(args.base, base)
        if args.keep:
            KEPT = work / "outputs"
            KEPT.mkdir()
        cases = _cases(Path(args.shared), args.bench, base)
        if args.only:
            cases = [c for c in cases if args.only in c.name]
        print(f"{len(cases)} cases, {args.base} against the working tree", file=sys.stderr)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            done = list(pool.map(lambda c: (c, _run(base, c, work), _run(ROOT, c, work)),
                                 cases))
        again = _second_pass(done, base, work)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            done += list(pool.map(lambda c: (c, _run(base, c, work), _run(ROOT, c, work)),
                                  again))
        if KEPT is not None:
            _keep(done, args.keep)
    failed = 0
    for case, old, new in done:
        problems = _compare(old, new)
        if problems:
            failed += 1
            print(f"DIFFERS {case.name}: {'; '.join(problems)}")
    codes = Counter(old.code for _, old, _ in done)
    told = ", ".join(f"{n} exit {code}" for code, n in sorted(codes.items()))
    print(f"{len(done)} cases ({told}), {failed} differ", file=sys.stderr)
    return 1 if failed else 0


def _keep(done: list[tuple[Case, Outcome, Outcome]], into: Path) -> None:
    """Copy out both outputs of each case whose outputs differ."""
    import shutil

    assert KEPT is not None
    into.mkdir(parents=True, exist_ok=True)
    for case, old, new in done:
        if old.output != new.output:
            name = "".join(c if c.isalnum() or c in ".-" else "_" for c in case.name)
            for side, outcome in (("base", old), ("tree", new)):
                if outcome.output:
                    shutil.copy(KEPT / outcome.output, into / f"{name}.{side}")


def export(commit: str, into: Path) -> None:
    """The tree of `commit`, as files in `into`."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "ctxpack"],
                             check=True, capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into, filter="data")


def _cases(shared: Path, bench: bool, base: Path) -> list[Case]:
    inputs = sorted(p for p in (ROOT / "samples").iterdir() if p.suffix in (".jsonl", ".json"))
    corpus = shared / "corpus"
    if corpus.is_dir():
        inputs += sorted(p for p in corpus.rglob("*") if p.suffix in (".jsonl", ".json"))
    else:
        print(f"no corpus at {corpus}: samples only", file=sys.stderr)
    out = []
    for path in inputs:
        tokens = _tokens(base, path)
        name = path.relative_to(path.parents[1]).as_posix()
        for strategy in STRATEGIES:
            for share in SHARES:
                budget = ("--budget", str(max(1, int(tokens * share)))) if share else ()
                out.append(Case(f"{name} {strategy} {share or 'default'}", path,
                                ("--strategy", strategy, *budget)))
        if path.parent.name == "samples":
            for variant in VARIANTS:
                out.append(Case(f"{name} {' '.join(variant)}", path,
                                ("--budget", str(max(1, int(tokens * 0.5))), *variant)))
    if bench:
        sys.path.insert(0, str(HERE))
        import make_transcript

        path, _ = make_transcript.ensure()
        out.append(Case(f"{path.name} bench", path, ("--budget", str(_tokens(base, path) // 2))))
    return out


def _second_pass(done: list[tuple[Case, Outcome, Outcome]], base: Path,
                 work: Path) -> list[Case]:
    """The samples compressed at half their tokens compressed again at 60% of what they
    were: the base's output is the input of both."""
    out = []
    for case, old, _ in done:
        if case.source.parent.name != "samples" or not case.name.endswith(" 0.5") \
                or not old.output:
            continue
        first = work / "again" / f"{old.output}{case.source.suffix}"
        first.parent.mkdir(exist_ok=True)
        if not first.exists():
            _run(base, case, work, keep=first)
        tokens = _tokens(base, first)
        out.append(Case(f"{case.name} again", first,
                        (*case.args[:2], "--budget", str(max(1, int(tokens * 0.6))))))
    return out


def _tokens(tree: Path, path: Path) -> int:
    run = subprocess.run([sys.executable, "-m", "ctxpack", "stats", "--json", "--no-cache",
                          str(path)], capture_output=True, env=_env(tree), check=False)
    try:
        return int(json.loads(run.stdout)["total"]["tokens"]) or 1
    except (ValueError, KeyError):
        return 1000


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXPACK_")}
    return {**env, "PYTHONPATH": str(tree), "SOURCE_DATE_EPOCH": EPOCH, "NO_COLOR": "1",
            "COLUMNS": "120", "CTXPACK_CACHE_DIR": tempfile.gettempdir() + "/ctxpack-identity"}


def _run(tree: Path, case: Case, work: Path, keep: Path | None = None) -> Outcome:
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        out, report, folder = Path(tmp, "out"), Path(tmp, "report.json"), Path(tmp, "archive")
        args = [a.replace("{dir}", folder.name) for a in case.args]  # relative: the same name
        if "{half}" in args:
            budget = int(args[args.index("--budget") + 1])
            args[args.index("{half}")] = str(budget // 2)
        run = subprocess.run([sys.executable, "-m", "ctxpack", "compress", str(case.source),
                              *args, "-o", str(out), "--report-json", str(report), "-q",
                              "--no-cache"],
                             capture_output=True, env=_env(tree), cwd=tmp, check=False)
        digest = _sha256(out) if out.exists() else ""
        if keep is not None and out.exists():
            out.replace(keep)
        elif out.exists() and KEPT is not None:  # by content: an output both wrote, once
            out.replace(KEPT / digest)
        stored = tuple(sorted((p.relative_to(folder).as_posix(), _sha256(p))
                              for p in folder.rglob("*") if p.is_file())) \
            if folder.is_dir() else ()
        data = json.loads(report.read_bytes()) if report.exists() else None
        return Outcome(run.returncode, run.stderr.decode("utf-8", "replace"), digest, data,
                       stored)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _compare(old: Outcome, new: Outcome) -> list[str]:
    problems = []
    if old.code != new.code:
        problems.append(f"exit {old.code} -> {new.code}")
    if old.output != new.output:
        problems.append("output differs")
    if old.archive != new.archive:
        problems.append("archive folder differs")
    if old.stderr != new.stderr:
        problems.append(f"stderr {old.stderr.strip()[:200]!r} -> {new.stderr.strip()[:200]!r}")
    if not same_report(old.report, new.report):
        problems.append("report differs: " + _first_difference(_norm(old.report),
                                                               _norm(new.report)))
    return problems


def same_report(old: Any, new: Any) -> bool:
    return _norm(old) == _norm(new)


def _norm(report: Any) -> Any:
    if not isinstance(report, dict):
        return report
    out = {k: v for k, v in report.items() if k not in IGNORED}
    for before, after in RENAMED:
        if after in out:
            out[before] = out.pop(after)
    rows = [dict(r) for r in out.get("steps") or ()]
    for row in [r for r in rows if r["name"] in AFTER_SUMMARIZE]:
        rows.remove(row)
        summarize = next(r for r in rows if r["name"] == "summarize")
        summarize.update(tokens_after=row["tokens_after"], items=row["items"])
    if rows:
        out["steps"] = rows
    return out


def _first_difference(a: Any, b: Any, at: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{at}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{at}[{n}]")
    return f"{at or '.'}: {str(a)[:120]} -> {str(b)[:120]}"


if __name__ == "__main__":
    sys.exit(main())
