"""What the tables for people say: each figure named for what it is (ctxpack's count, or the
context as billed), markdown nested as the terminal indents, names from strangers' files
kept to a row."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import SAMPLES
from .helpers import ctxpack

CLAUDE_CODE = SAMPLES / "coding-agent.claude-code.jsonl"  # its bill far above its count
MANY = [CLAUDE_CODE, SAMPLES / "evals.openai-conversations.jsonl",  # 17 conversations
        SAMPLES / "support-chat.openai.jsonl"]


def _json(*paths: Path) -> dict:
    run = ctxpack("stats", "--json", *map(str, paths))
    assert run.code == 0, run.err
    return json.loads(run.out)


def test_the_json_total_holds_the_bill_beside_the_count():
    doc = _json(*MANY)
    files, total = doc["files"], doc["total"]
    assert total["tokens"] == sum(f["tokens"] for f in files)
    assert total["billed_all_conversations"] == sum(f["context"]["file_tokens"] for f in files)
    assert total["billed_largest_conversation"] == max(f["context"]["tokens"] for f in files)
    # neither is named as the per-file (largest conversation's) figure the CSV calls
    # billed_tokens, which the total's sum over every conversation is not
    assert "billed_tokens" not in total and "largest_billed" not in total
    # the bill of a file of many conversations is all of them, not its largest alone
    evals = files[1]
    assert evals["context"]["file_tokens"] > evals["context"]["tokens"]
    assert total["billed_all_conversations"] > sum(f["context"]["tokens"] for f in files)
    assert total["billed_all_conversations"] > total["tokens"]  # Claude Code's system prompt
    markdown = ctxpack("stats", "--format", "markdown", *map(str, MANY)).out
    assert f"{total['tokens']:,} tokens counted" in markdown
    assert (f"{total['billed_all_conversations']:,} billed over every conversation (the "
            f"largest conversation {total['billed_largest_conversation']:,})") in markdown


def test_the_all_files_table_names_the_count_and_the_bill():
    files = _json(*MANY)["files"]
    for width in (80, 120):
        run = ctxpack("stats", "--top", "0", *map(str, MANY), "--max-tokens", "20000",
                      env={"COLUMNS": str(width)})
        assert run.code == 1, run.err
        table = run.out[run.out.index("All files"):].splitlines()
        assert all(len(line) <= width for line in table), run.out
        head = " ".join(" ".join(line.strip("┃ ").split()) for line in table
                        if line.startswith("┃"))
        for word in ("tokens", "counted", "context", "billed", "window"):
            assert word in head, head
        rows: dict[str, list[str]] = {}
        for line in table:
            cells = [c.strip() for c in line.strip("│").split("│")]
            if not line.startswith("│"):
                continue
            if cells[2]:  # a file's row opens; a name wrapped goes on on the lines after
                name, rows[cells[0]] = cells[0], cells[1:]
            else:
                rows[name + cells[0]] = rows.pop(name)
                name += cells[0]
        # each file's row: its count, its bill (what --max-tokens checks), its share
        row = rows[CLAUDE_CODE.name]
        claude = files[0]
        assert row[3:6] == [f"{claude['tokens']:,}", f"{claude['context']['tokens']:,}",
                            f"{claude['context_ratio']:.1%}"]
        assert f"context billed {claude['context']['tokens']:,} > --max-tokens 20,000" \
            in " ".join(run.err.split())
        # the total row: every conversation of every file, more than the column above
        # it adds up to (evals holds 17), and the caption says which is which
        # a file of several conversations is billed by its largest, and marked so
        evals = files[1]
        assert evals["conversations"] > 1
        assert rows[MANY[1].name][3:6] == [f"{evals['tokens']:,}",
                                           f"{evals['context']['tokens']:,}*",
                                           f"{evals['context_ratio']:.1%}*"]
        billed = sum(int(rows[f.name][4].rstrip("*").replace(",", "")) for f in MANY)
        total = _json(*MANY)["total"]
        assert rows["total"][4] == f"{total['billed_all_conversations']:,}"
        assert billed < total["billed_all_conversations"]
        caption = " ".join(run.out[run.out.index("tokens counted:"):].split())
        assert "the context as the provider would bill it" in caption
        assert "marked *, of the file's largest conversation, where it holds several" \
            in caption
        assert "The total row adds every conversation of every file" in caption


def test_markdown_nests_what_the_terminal_indents():
    run = ctxpack("stats", "--format", "markdown", str(CLAUDE_CODE))
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("- context as billed"))
    assert lines[at + 1].startswith("  - in the file "), lines[at:at + 2]
    assert not any(line.startswith("-  ") for line in lines)


def test_a_long_model_name_takes_one_row_of_the_calibrate_table(tmp_path):
    name = "claude-" + "x" * 5000
    lines = []
    for line in CLAUDE_CODE.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "assistant":
            record["message"]["model"] = name
        lines.append(json.dumps(record))
    path = tmp_path / "long-name.claude-code.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run = ctxpack("calibrate", str(path), env={"COLUMNS": "80"})
    assert run.code == 0, run.err
    rows = [line for line in run.out.splitlines() if line.startswith("│")]
    # (cut to NAME_CHARS, folded in a column of about 16 on 80)
    assert 1 <= len(rows) <= 8 and "…" in "".join(rows), run.out
    assert len(run.out.splitlines()) < 20, run.out
    fitted = json.loads(ctxpack("calibrate", "--json", str(path)).out)
    assert [f["model"] for f in fitted] == [name]  # JSON keeps it whole
