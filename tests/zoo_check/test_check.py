"""zoo(): tasks from entries × option sets, each in its own process, resumable through the results file."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._zoo_check.check import expand_option_sets, zoo

ENTRIES = str(Path(__file__).with_name("entries.py"))


def test_modes_are_crossed_with_option_sets_in_order():
    sets = expand_option_sets(["force_fp16", "allow_mix_precision"], [{}, {"op_select_implmode": "high_precision"}])
    assert sets == [
        {"precision_mode": "force_fp16"},
        {"precision_mode": "allow_mix_precision"},
        {"op_select_implmode": "high_precision", "precision_mode": "force_fp16"},
        {"op_select_implmode": "high_precision", "precision_mode": "allow_mix_precision"},
    ]
    assert expand_option_sets(None, [{"precision_mode": "force_fp32"}]) == [{"precision_mode": "force_fp32"}]
    assert expand_option_sets(["force_fp16", "force_fp16"], None) == [{"precision_mode": "force_fp16"}]


def test_a_bad_option_fails_before_any_task_runs(tmp_path):
    results = tmp_path / "zoo.json"
    with pytest.raises(NpuConfigError, match="precision_mode: 'fp8' is not allowed"):
        zoo([f"{ENTRIES}:tiny"], ["fp8"], results=results)
    with pytest.raises(NpuConfigError, match="no_such_option"):
        zoo([f"{ENTRIES}:tiny"], ["force_fp16"], [{"no_such_option": 1}], results=results)
    assert not results.exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": 0}, "steps must be an int >= 1"),
        ({"timeout": 0}, "timeout must be a number of seconds > 0"),
        ({"engine": "spark"}, "choose one of 'local', 'ray'"),
        ({"workers": 0}, "workers must be an int >= 1"),
    ],
)
def test_bad_arguments_are_one_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        zoo([f"{ENTRIES}:tiny"], ["force_fp16"], **kwargs)


def test_no_entries_is_an_error():
    with pytest.raises(ValueError, match="at least one entry"):
        zoo([], ["force_fp16"])


@pytest.mark.slow
def test_each_task_runs_in_its_own_process_and_a_rerun_reuses_the_results_file(tmp_path):
    results = tmp_path / "zoo.json"
    lines: list[str] = []
    table = zoo(
        [f"{ENTRIES}:tiny", f"{ENTRIES}:raises"],
        ["must_keep_origin_dtype", "force_fp16"],
        steps=2,
        results=results,
        workers=2,
        log=lines.append,
    )
    assert len(lines) == 4 and all(line.startswith(("[1/4]", "[2/4]", "[3/4]", "[4/4]")) for line in lines)
    assert [(r["entry"].rpartition(":")[2], r["options"]["precision_mode"], r["status"]) for r in table.rows] == [
        ("tiny", "must_keep_origin_dtype", "ok"),
        ("tiny", "force_fp16", "ok"),
        ("raises", "must_keep_origin_dtype", "error"),
        ("raises", "force_fp16", "error"),
    ]
    fp16 = table.row(f"{ENTRIES}:tiny", {"precision_mode": "force_fp16"})
    assert fp16["ops_lowered"] > 0 and fp16["startup_s"] > 0 and fp16["task_s"] >= fp16["entry_s"]
    stored = json.loads(results.read_text(encoding="utf-8"))["rows"]
    assert len(stored) == 4

    again: list[str] = []
    rerun = zoo(
        [f"{ENTRIES}:tiny", f"{ENTRIES}:raises"],
        ["must_keep_origin_dtype", "force_fp16"],
        results=results,
        log=again.append,
    )
    assert again == []  # every task already had its row
    assert rerun.rows == table.rows

    retried: list[str] = []
    zoo([f"{ENTRIES}:raises"], ["force_fp16"], results=results, rerun_errors=True, log=retried.append)
    assert len(retried) == 1  # only the error row ran again


@pytest.mark.slow
def test_a_task_past_its_time_limit_is_killed_and_recorded(tmp_path):
    table = zoo([f"{ENTRIES}:sleeps"], ["force_fp16"], timeout=3, results=tmp_path / "zoo.json")
    (row,) = table.rows
    assert row["status"] == "timeout" and "time limit of 3 s" in row["error"]
    assert row["task_s"] < 60  # killed, not waited for (the entry sleeps 600 s)


def test_the_public_name_is_the_function():
    import npu_jupyter

    assert npu_jupyter.zoo is zoo and "zoo" in npu_jupyter.__all__


def test_rows_are_stored_as_they_finish_and_the_bar_advances(tmp_path, monkeypatch):
    """The engine is replaced by one that finishes tasks in reverse order: no process is started."""
    from npu_jupyter import _progress as progress
    from npu_jupyter._zoo_check import check
    from npu_jupyter._zoo_check.results import ResultsFile
    from npu_jupyter._zoo_check.task import empty_row

    bars: list[progress.Progress] = []

    @contextlib.contextmanager
    def recording_bar(total, title, *, enabled=None):
        bar = progress.Progress(total, title, enabled=False, delay=0)
        bars.append(bar)
        yield bar

    def engine(tasks, timeout, workers, on_row):
        assert workers == 3 and timeout == 60
        for task in reversed(tasks):
            row = empty_row(task["entry"], task["options"], task["steps"])
            row.update(status="ok", compiles=True)
            on_row(row)
            # written at once: a crash after this row keeps it
            assert task_key_in_file(tmp_path / "zoo.json", task)

    def task_key_in_file(path, task):
        from npu_jupyter._zoo_check.results import task_key

        return task_key(task["entry"], task["options"]) in ResultsFile(path).rows

    monkeypatch.setattr(check, "run_local", engine)
    monkeypatch.setattr(progress, "progress_bar", recording_bar)
    lines: list[str] = []
    table = zoo(
        [f"{ENTRIES}:tiny"],
        ["force_fp16", "allow_mix_precision"],
        timeout=60,
        workers=3,
        results=tmp_path / "zoo.json",
        log=lines.append,
        progress=False,
    )
    assert [r["options"]["precision_mode"] for r in table.rows] == ["force_fp16", "allow_mix_precision"]
    assert lines == [
        "[1/2] entries.py:tiny allow_mix_precision: ok",
        "[2/2] entries.py:tiny force_fp16: ok",
    ]
    (bar,) = bars
    assert bar.total == 2 and bar.done == 2 and bar.title == "zoo check"


def test_a_results_file_from_before_the_relative_rmse_resumes_and_renders(tmp_path, monkeypatch):
    """Its finished tasks are not rerun; its rows keep their max rel figures, labelled so, beside new rows."""
    from drift_cases import old_results_file

    from npu_jupyter._display.zoo_view import text
    from npu_jupyter._zoo_check import check
    from npu_jupyter._zoo_check.task import empty_row

    entry = f"{ENTRIES}:tiny"
    path = tmp_path / "zoo.json"
    path.write_text(json.dumps(old_results_file(entry)), encoding="utf-8")
    ran: list[str] = []

    def engine(tasks, timeout, workers, on_row):
        for task in tasks:
            ran.append(task["options"]["precision_mode"])
            row = empty_row(task["entry"], task["options"], task["steps"])
            row.update(status="ok", compiles=True, fetch_rel_rmse=2e-4, worst_op="dnn/MatMul", worst_op_rel_rmse=0.01)
            on_row(row)

    monkeypatch.setattr(check, "run_local", engine)
    table = zoo([entry], ["force_fp16", "force_fp32", "allow_mix_precision"], results=path, progress=False)
    assert ran == ["allow_mix_precision"]  # the two finished tasks were kept
    shown = text(table.rows)
    lines = {mode: next(line for line in shown.splitlines() if f" {mode} " in line) for mode in [*ran, "force_fp16"]}
    assert "max rel inf" in lines["force_fp16"] and "_zero (max rel not finite (inf/NaN))" in lines["force_fp16"]
    assert "rel. RMSE 0.0002" in lines["allow_mix_precision"] and "dnn/MatMul (rel. RMSE 0.01)" in shown
    fp32 = next(line for line in shown.splitlines() if " force_fp32 " in line)
    assert "Initializer/zeros" not in fp32 and " none " in fp32  # drift 0 named no op, old row or not
    assert "max rel: largest |a − b| / |b|, in rows of an older results file" in shown
    assert {"fetch_max_rel", "fetch_rel_rmse"} <= set(table.to_csv().splitlines()[0].split(","))
