"""The flags of compress and restore on datasets: each either does what it says for a
dataset or is refused in one line; none is dropped without a word (and the dataset-only
flags are refused for transcripts the same way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import SAMPLES
from .helpers import assert_clean_error
from .helpers import ctxpack as run_ctxpack
from .test_dataset import BUDGET, PINNED, over_budget, table_of, write

pa = pytest.importorskip("pyarrow", reason="datasets need pyarrow (pip install 'ctxpack[data]')")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A compressed dataset (one row changed), beside the dataset it came from."""
    data = write(table_of(over_budget(), "json", bad=False), tmp_path / "data.parquet")
    out = tmp_path / "small.parquet"
    run = run_ctxpack("compress", str(data), "-o", str(out), "--budget", str(BUDGET),
                      env=PINNED)
    assert run.code == 0, run.err
    return out


@pytest.mark.parametrize("flag, fragment", [
    ("--dry-run", "--dry-run is for transcripts, not datasets"),
    ("--strip-metadata", "--strip-metadata is for transcripts, not datasets"),
    ("--in-place", "--in-place is for transcripts, not datasets"),
    ("--skip-invalid", "--skip-invalid is for transcripts, not datasets"),
])
def test_compress_of_a_dataset_refuses_what_is_for_transcripts(
        tmp_path: Path, flag: str, fragment: str) -> None:
    data = write(table_of(over_budget(), "json", bad=False), tmp_path / "data.parquet")
    out = tmp_path / "out.parquet"
    run = run_ctxpack("compress", str(data), "-o", str(out), "--budget", str(BUDGET), flag)
    assert_clean_error(run, 2, fragment)
    assert not out.exists()


@pytest.mark.parametrize("args, fragment", [
    (["--only", "row-3"], "--only is for transcripts, not datasets"),
    (["--list"], "--list is for transcripts, not datasets"),
    (["--in-place"], "--in-place is for transcripts, not datasets"),
])
def test_restore_of_a_dataset_refuses_what_is_for_transcripts(
        small: Path, args: list[str], fragment: str) -> None:
    out = small.parent / "back.parquet"
    assert_clean_error(run_ctxpack("restore", str(small), "-o", str(out), *args), 2, fragment)
    assert not out.exists()


@pytest.mark.parametrize("command", ["stats", "validate", "compress", "restore"])
@pytest.mark.parametrize("args, fragment", [
    (["--engine", "ray"], "--engine is for datasets, not transcripts"),
    (["--ray-address", "ray://nowhere:10001"], "--ray-address is for datasets, not transcripts"),
    (["--id-column", "task"], "--id-column is for datasets, not transcripts"),
])
def test_the_dataset_flags_are_refused_for_transcripts(
        tmp_path: Path, command: str, args: list[str], fragment: str) -> None:
    if command == "restore" and args[0] == "--id-column":
        pytest.skip("restore has no --id-column")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "chat.jsonl").write_bytes((SAMPLES / "support-chat.openai.jsonl").read_bytes())
    out = ["--out-dir", str(tmp_path / "out")] if command in ("compress", "restore") else []
    assert_clean_error(run_ctxpack(command, str(folder), *out, *args), 2, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, fragment", [
    (["-m", "claude-opus-4-5"], "--model is for datasets, not transcripts"),
    (["--config", "ctxpack.yaml"], "--config is for datasets, not transcripts"),
])
def test_validate_of_a_transcript_refuses_the_model_its_records_do_not_depend_on(
        args: list[str], fragment: str) -> None:
    """A file's records are read as they mark whatever the model; of a dataset, -m picks
    the API of messages that mark none (and the config names the models)."""
    path = SAMPLES / "support-chat.openai.jsonl"
    assert_clean_error(run_ctxpack("validate", str(path), *args), 2, fragment)


def test_restore_of_a_dataset_with_o_takes_the_shard_of_its_row_groups(tmp_path: Path) -> None:
    table = table_of(over_budget() * 2, "json", bad=False)  # 34 rows, in row groups
    data = write(table, tmp_path / "data.parquet")
    small = tmp_path / "small.parquet"
    assert run_ctxpack("compress", str(data), "-o", str(small), "--budget", str(BUDGET),
                       env=PINNED).code == 0
    back = []
    for i in range(2):
        part = tmp_path / f"back-{i}.parquet"
        run = run_ctxpack("restore", str(small), "-o", str(part), "--shard", f"{i}/2")
        assert run.code == 0, run.err
        back.append(pq.read_table(part).to_pylist())
    meta = pq.ParquetFile(small).metadata
    groups = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    assert [len(b) for b in back] == [sum(groups[0::2]), sum(groups[1::2])]
    assert sorted(back[0] + back[1], key=lambda r: r["id"]) == table.to_pylist()


def test_restore_of_datasets_with_out_dir_takes_its_shard_of_the_files(
        small: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    names = [f"part-{i}.parquet" for i in range(4)]
    for name in names:
        (folder / name).write_bytes(small.read_bytes())
    shares = []
    for i in range(2):
        out = tmp_path / f"out-{i}"
        run = run_ctxpack("restore", str(folder), "--out-dir", str(out), "--shard", f"{i}/2",
                          "--report-json", "-")
        assert run.code == 0, run.err
        shares.append({Path(f["source"]).name for f in json.loads(run.out)["files"]})
        assert sorted(p.name for p in out.glob("*.parquet")) == sorted(shares[-1])
    assert not shares[0] & shares[1] and shares[0] | shares[1] == set(names)


def test_restore_of_a_row_stops_at_max_growth(small: Path, tmp_path: Path) -> None:
    """An archive that expands far past the row that holds it (nested archives crafted
    to expand, or damaged) stops at --max-growth times the row's bytes, as a transcript's
    restore does; nothing is written."""
    from ctxpack.archive import Archiver

    table = pq.read_table(small)
    metas = table.column("ctxpack").to_pylist()
    at = next(i for i, m in enumerate(metas) if m is not None)
    meta = json.loads(metas[at])
    meta["archive"] = Archiver(None, True).pack(b'"' + b" " * (4 << 20) + b'"')
    metas[at] = json.dumps(meta)
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(table.set_column(table.column_names.index("ctxpack"), "ctxpack",
                                    pa.array(metas, pa.string())), bomb)
    out = tmp_path / "back.parquet"
    run = run_ctxpack("restore", str(bomb), "-o", str(out), "--max-growth", "100")
    assert_clean_error(run, 2, f"{bomb} row {at}: restoring it would write more than 100 "
                       "times", "--max-growth 1000")
    assert not out.exists()
    run = run_ctxpack("restore", str(bomb), "-o", str(out), "--max-growth", "100000")
    assert run.code == 0, run.err  # trusted: written
    assert len(pq.read_table(out).column("messages")[at].as_py()) == (4 << 20) + 2


@pytest.mark.parametrize("command, args, fragment", [
    ("stats", ["--session", "ses_1"], "--session is for transcripts, not datasets"),
    ("stats", ["--html", "page.html"], "--html is for transcripts, not datasets"),
    ("stats", ["--skip-invalid"], "--skip-invalid is for transcripts, not datasets"),
    ("validate", ["--session", "ses_1"], "--session is for transcripts, not datasets"),
    ("validate", ["--skip-invalid"], "--skip-invalid is for transcripts, not datasets"),
])
def test_stats_and_validate_of_a_dataset_refuse_what_is_for_transcripts(
        tmp_path: Path, command: str, args: list[str], fragment: str) -> None:
    data = write(table_of(over_budget(), "json", bad=False), tmp_path / "data.parquet")
    run = run_ctxpack(command, str(data), *[a.replace("page.html", str(tmp_path / "page.html"))
                                            for a in args])
    assert_clean_error(run, 2, fragment)
    assert run.out == "" and not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_max_ratio_gates_a_dataset_on_each_rows_share_of_its_window(
        tmp_path: Path, kind: str) -> None:
    """Each row is measured against its window as each conversation of a file of many is:
    a row's ratio is what stats says of the row written out as a transcript."""
    from ctxpack.breakdown import stats

    trajectories = over_budget()
    ratios = []
    for i, t in enumerate(trajectories):
        alone = tmp_path / f"row{i}.jsonl"
        alone.write_text("".join(json.dumps(m) + "\n" for m in t))
        ratios.append(stats(alone).context_ratio)
    limit = sorted(ratios)[len(ratios) // 2]  # about half the rows are over it
    over = sum(r > limit for r in ratios)
    assert 0 < over < len(ratios)
    if kind == "parquet":
        data = write(table_of(trajectories, "json", bad=False), tmp_path / "data.parquet")
    else:
        data = tmp_path / "rows.jsonl"
        data.write_text("".join(json.dumps({"messages": t}) + "\n" for t in trajectories))
    args = ["stats", str(data), "--messages-column", "messages", "--max-ratio"]
    run = run_ctxpack(*args, str(limit), "--json")
    assert run.code == 1, run.err
    doc = json.loads(run.out)["datasets"][0]
    assert (doc["max_ratio"], doc["rows_over_ratio"]) == (limit, over)
    assert f"{data}: {over:,} rows over --max-ratio {limit}" in run.err
    run = run_ctxpack(*args, str(max(ratios)))
    assert run.code == 0, run.err
    assert "over budget" not in run.err
    per_row = tmp_path / "rows.parquet"
    assert run_ctxpack(*args, str(limit), "--per-row", str(per_row)).code == 1
    assert pq.read_table(per_row).column("context_ratio").to_pylist() == ratios


WINDOW = 128_000  # gpt-4o's: the rows' model (they name none)


@pytest.mark.parametrize(("asked", "warning", "fine"), [
    (["--budget", str(2 * WINDOW)], f"the budget asked for ({2 * WINDOW:,} tokens) is more "
     f"than the {WINDOW:,}-token window of gpt-4o: the window is used instead",
     ["--budget", str(WINDOW)]),
    (["--target", "110000"], f"the target asked for (110,000 billed tokens) is not below "
     f"the trigger ({WINDOW * 4 // 5:,}): the next turns may trigger compress again",
     ["--target", str(WINDOW * 4 // 5 - 1)]),
])
def test_what_the_settings_warn_of_is_said_once_a_run(tmp_path: Path, asked: list[str],
                                                      warning: str, fine: list[str]) -> None:
    """As for transcripts: once for one dataset of many rows, and once for a folder of
    datasets; each dataset's entry of the report says it."""
    from ctxpack.models import TABLE

    assert TABLE.find("gpt-4o").context_window == WINDOW
    folder = tmp_path / "in"
    folder.mkdir()
    data = write(table_of(over_budget(), "json", bad=False), folder / "a.parquet")
    write(table_of(over_budget(), "struct", bad=False), folder / "b.parquet")
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "a.parquet"), *asked,
                      "--report-json", str(tmp_path / "r.json"))
    assert run.code == 0, run.err
    assert " ".join(run.err.split()).count(warning) == 1
    (entry,) = json.loads((tmp_path / "r.json").read_text())["files"]
    assert entry["warnings"] == [warning]
    assert pq.read_table(tmp_path / "a.parquet").schema.metadata == \
        pq.read_table(data).schema.metadata  # (nothing of it in the dataset written)
    run = run_ctxpack("compress", str(folder), "--out-dir", str(tmp_path / "out"), *asked,
                      "-q")
    assert run.code == 0, run.err
    assert " ".join(run.err.split()).count(warning) == 1
    # within the window, below the trigger, there is nothing to say
    run = run_ctxpack("compress", str(data), "-o", str(tmp_path / "w.parquet"), *fine, "-q")
    assert run.code == 0 and "warning" not in run.err, run.err
