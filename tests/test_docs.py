"""The README and --help agree: every command and every option is documented."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import ROOT
from .helpers import ctxpack

README = (ROOT / "README.md").read_text(encoding="utf-8")


def commands() -> list[str]:
    help_text = ctxpack("--help").out
    block = help_text.split("Commands:", 1)[1]
    return re.findall(r"^\s{2}(\w[\w-]*)\s", block, flags=re.M)


def test_readme_opens_with_the_two_commands():
    code = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", README, flags=re.S)
    first = code[0].strip().splitlines()
    assert first[0].startswith("pip install") and "ctxpack stats samples/" in first[0]
    assert "pip install" in first[1] and "[test]" in first[1] and "pytest" in first[1]


def test_every_command_has_a_section():
    names = commands()
    assert {"stats", "show", "validate", "compress", "restore", "count", "models",
            "convert"} <= set(names)
    for name in names:
        assert f"ctxpack {name}" in README, f"README lacks a section for `ctxpack {name}`"


@pytest.mark.parametrize("command", ["stats", "show", "validate", "compress", "restore", "count",
                                     "models", "convert"])
def test_every_option_is_in_the_readme(command):
    help_text = ctxpack(command, "--help").out
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text)) - {"--help"}
    missing = sorted(o for o in options if o not in README)
    assert not missing, f"README does not mention {command} options {missing}"


def test_readme_gives_each_numeric_settings_default_beside_its_flag():
    from ctxpack.settings import SETTINGS

    for s in SETTINGS.values():
        if s.kind in (int, float) and s.default is not None:
            said = re.escape(s.flags) + rf"`?[\s(,]*{s.default:g}\b"
            assert re.search(said, README), f"README does not give {s.flags} as {s.default:g}"


def test_readme_sample_paths_exist():
    for path in set(re.findall(r"samples/[\w.-]+\.jsonl", README)):
        assert (ROOT / path).is_file(), path


def test_the_compress_tests_mirror_its_modules():
    """tests/compression/test_X.py tests ctxpack/compression/X.py, so that the tests of a
    module are found by its name; those of the whole are named apart. Every module the
    README's stage table names has tests of its own."""
    package, tests = ROOT / "ctxpack" / "compression", ROOT / "tests" / "compression"
    whole = {"test_invariants.py", "test_properties.py", "test_odd_input.py", "test_api.py",
             "test_llm_model.py"}
    for test in tests.rglob("test_*.py"):
        module = package / test.parent.relative_to(tests) / test.name[len("test_"):]
        assert test.name in whole or module.is_file(), f"{test} mirrors no module"
    table = README.split("| stage | module |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)\.py`", table))
    assert {"truncation", "masking", "summarizing", "limiting", "rewriting"} <= named
    for name in named:
        assert (tests / f"test_{name}.py").is_file(), f"{name}.py has no tests of its own"


# A JSON example in the README, made JSON: what `...` leaves out matches anything, and a
# list that ends in `...` may go on; a number matches to the digits it shows.
ANY, MORE = "<any>", "<more>"


def example(block: str) -> object:
    # (a value left out, `"line": ...`, is any; an item, `[{...}, ...]`, is more of them)
    text = re.sub(r"\{\.\.\.\}|\[\.\.\.\]|(?<=: )\.\.\.(?![\w\"])", f'"{ANY}"', block)
    text = re.sub(r"(?<![\w\"])\.\.\.(?![\w\"])", f'"{MORE}"', text)
    text = text.replace(f', "{MORE}"}}', "}")  # (a mapping may leave keys out anyway)
    return json.loads(text.replace('"..."', f'"{ANY}"'))


def differences(shown: object, actual: object, where: str = "") -> list[str]:
    """Where the README's `shown` says other than `actual` (a dict may leave keys out)."""
    if shown == ANY:
        return []
    if isinstance(shown, dict) and isinstance(actual, dict):
        return [d for k, v in shown.items() for d in (
            differences(v, actual[k], f"{where}.{k}") if k in actual
            else [f"{where}.{k}: not in the output"])]
    if isinstance(shown, list) and isinstance(actual, list):
        more = bool(shown) and shown[-1] == MORE
        items = shown[:-1] if more else shown
        if len(items) > len(actual) or (not more and len(items) != len(actual)):
            return [f"{where}: the README shows {len(items)} items, the output has "
                    f"{len(actual)}"]
        return [d for i, v in enumerate(items) for d in differences(v, actual[i], f"{where}[{i}]")]
    if isinstance(shown, float) and isinstance(actual, (int, float)):
        digits = len(repr(shown).split(".")[1])
        close = abs(shown - actual) <= 0.5 * 10 ** -digits + 1e-12
        return [] if close else [f"{where}: README {shown}, output {actual}"]
    return [] if shown == actual and type(shown) is type(actual) else \
        [f"{where}: README {shown!r}, output {actual!r}"]


def test_the_stats_json_example_is_what_the_command_prints():
    said, block = re.search(r"`(ctxpack stats --json samples/[\w.-]+)`.*?\n```json\n(.*?)```",
                            README, flags=re.S).groups()
    run = ctxpack(*said.split()[1:], cwd=str(ROOT))
    assert run.code == 0, run.err
    assert differences(example(block), json.loads(run.out)) == []


def test_the_first_stats_example_is_what_the_command_prints(exact_tokens):
    """The README's first example, on 100 columns (its lines' width), line for line."""
    said, block = re.search(r"```console\n\$ (ctxpack stats samples/\S+ --top \d+)\n(.*?)```",
                            README, flags=re.S).groups()
    run = ctxpack(*said.split()[1:], cwd=str(ROOT), env={"COLUMNS": "100"})
    assert run.code == 0, run.err
    assert [x.rstrip() for x in run.out.strip().splitlines()] == \
        [x.rstrip() for x in block.strip().splitlines()]


def test_the_compress_report_example_is_what_the_command_writes(tmp_path):
    from .conftest import SAMPLES

    said, block = re.search(r"`(ctxpack compress run\.jsonl [^`]*--report-json FILE)`"
                            r".*?\n```json\n(.*?)```", README, flags=re.S).groups()
    args = said.split()[2:]
    args[0] = str(SAMPLES / "coding-agent.claude-code.jsonl")  # (run.jsonl is its copy)
    args = [str(tmp_path / a) if a in ("small.jsonl", "FILE") else a for a in args]
    run = ctxpack("compress", *args, "-q")
    assert run.code == 0, run.err
    report = json.loads((tmp_path / "FILE").read_text())
    assert differences(example(block), report) == []


@pytest.mark.corpus
def test_the_unlogged_range_the_readme_gives_is_what_stats_shows_on_the_corpus(exact_tokens):
    """README's range of what Claude Code sends unlogged is `stats`' split of the corpus's
    sessions (those recording calls; not the compaction side-agent, whose part not in
    the file is the parent conversation)."""
    from ctxpack import stats

    from .conftest import corpus_files

    files = corpus_files("claude-code")
    if not files:
        pytest.skip("corpus not found beside the checkout (../shared/corpus)")
    low, high = re.search(r"\((\d+)–(\d+)k tokens in the\ncorpus's Claude Code sessions",
                          README).groups()
    split = [s.context.not_in_file for s in map(stats, files) if s.context.kind == "anchored"
             and "parent conversation" not in s.not_in_file_why]
    assert (round(min(split), -3) // 1000, round(max(split), -3) // 1000) == \
        (int(low), int(high))


def test_the_readme_names_every_format_compress_refuses(tmp_path):
    """What compress refuses is named where the README's Formats section says what
    compress does not rewrite."""
    from ctxpack import UsageError, compress, load

    samples = ROOT / "samples"
    legacy = tmp_path / "session-legacy.json"  # a Gemini CLI recording in its older form
    legacy.write_text(json.dumps({
        "sessionId": "s1", "projectHash": "ab" * 32, "startTime": "2025-06-01T10:00:00Z",
        "lastUpdated": "2025-06-01T10:00:05Z", "messages": [
            {"id": "m1", "timestamp": "2025-06-01T10:00:00Z", "type": "user",
             "content": "list the files"},
            {"id": "m2", "timestamp": "2025-06-01T10:00:05Z", "type": "gemini",
             "content": "a.py and b.py", "model": "gemini-2.5-pro"}]}, indent=2))
    bodies = tmp_path / "bodies.jsonl"
    made = ctxpack("convert", str(samples / "multi-round.anthropic.jsonl"), "--to", "anthropic",
                   "-o", str(bodies))
    assert made.code == 0, made.err
    # the samples of the formats compress does not rewrite are in folders of their own
    # (samples/README.md), a storage tree's files given as the tree
    kept = [p for p in samples.glob("*/*") if p.suffix in (".json", ".jsonl", ".md")]
    refused = set()
    for path in [legacy, bodies, samples / "opencode-storage" / "storage", *kept]:
        try:
            compress(str(path), budget=100_000)
        except UsageError as exc:
            assert ": compress " in str(exc), exc
            refused.add(load(path).format)
    assert {"aider", "cline", "cline-ui", "opencode", "opencode-storage", "openhands",
            "gemini-api", "gemini-checkpoint", "anthropic-array", "anthropic-requests",
            "gemini-cli"} <= refused
    said = README.split("`compress` does not rewrite", 1)[1].split("\n\n", 1)[0]
    missing = sorted(f for f in refused if f"`{f}`" not in said)
    assert not missing, f"README does not say compress refuses {missing}"


def test_what_the_readme_says_user_holds_is_what_stats_counts_on_its_samples():
    """`user` is not only what the person typed: the README's figures for the Codex sample
    (its AGENTS.md message) and its word on the Claude Code sample (the summary a
    compacted session continues from) are what `stats --json` gives."""
    part, whole = map(int, re.search(r"here (\d+) of the (\d+) are the `AGENTS\.md`",
                                     README).groups())

    def users(sample: str) -> tuple[int, list[tuple[int, str]]]:
        run = ctxpack("stats", "--json", "--top", "50", f"samples/{sample}", cwd=str(ROOT))
        assert run.code == 0, run.err
        f = json.loads(run.out)["files"][0]
        return f["by_role"]["user"], [(m["tokens"], m["preview"]) for m in f["largest"]
                                      if m["role"] == "user"]

    total, largest = users("refactor.codex.jsonl")
    assert total == whole and largest[0][0] == part
    assert largest[0][1].startswith("# AGENTS.md instructions")
    total, largest = users("coding-agent.claude-code.jsonl")
    assert largest[0][0] > total / 2
    assert largest[0][1].startswith("This session is being continued from a previous")
