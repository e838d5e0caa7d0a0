"""The results file: keyed by (entry, options), rewritten whole after each row, refused when foreign."""

from __future__ import annotations

import json
import math

import pytest
from drift_cases import old_results_file

from npu_jupyter._zoo_check.results import ResultsFile, task_key
from npu_jupyter._zoo_check.task import empty_row


def _row(entry: str, mode: str, **values) -> dict:
    row = empty_row(entry, {"precision_mode": mode}, 2)
    row.update(values)
    return row


def test_rows_survive_a_reload_with_non_finite_numbers(tmp_path):
    path = tmp_path / "zoo.json"
    store = ResultsFile(path)
    store.add(_row("a.py:f", "force_fp16", status="non-finite", loss=math.inf, fetch_rel_rmse=math.nan))
    document = json.loads(path.read_text(encoding="utf-8"))  # strict JSON: no Infinity/NaN literals
    assert document["format"] == "npu_jupyter.zoo" and document["rows"][0]["loss"] == "inf"
    again = ResultsFile(path)
    row = again.rows[task_key("a.py:f", {"precision_mode": "force_fp16"})]
    assert row["loss"] == math.inf and math.isnan(row["fetch_rel_rmse"])


def test_the_key_ignores_option_order_but_not_values():
    assert task_key("a.py:f", {"a": 1, "b": 2}) == task_key("a.py:f", {"b": 2, "a": 1})
    assert task_key("a.py:f", {"a": 1}) != task_key("a.py:f", {"a": 2})
    assert task_key("a.py:f", {"a": 1}) != task_key("a.py:g", {"a": 1})


def test_a_row_replaces_the_row_of_the_same_task(tmp_path):
    store = ResultsFile(tmp_path / "zoo.json")
    store.add(_row("a.py:f", "force_fp16", status="error"))
    store.add(_row("a.py:f", "force_fp16", status="ok"))
    assert [r["status"] for r in ResultsFile(tmp_path / "zoo.json").rows.values()] == ["ok"]


def test_a_file_that_is_not_a_results_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"my": "notes"}', encoding="utf-8")
    with pytest.raises(ValueError, match="is not a zoo results file"):
        ResultsFile(path)
    assert path.read_text(encoding="utf-8") == '{"my": "notes"}'
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be read as JSON"):
        ResultsFile(path)


def test_no_path_keeps_rows_in_memory_only(tmp_path):
    store = ResultsFile(None)
    store.add(_row("a.py:f", "force_fp16"))
    assert len(store.rows) == 1 and list(tmp_path.iterdir()) == []


def test_a_file_written_before_the_relative_rmse_loads_with_its_max_rel_figures(tmp_path):
    path = tmp_path / "zoo.json"
    path.write_text(json.dumps(old_results_file()), encoding="utf-8")
    rows = list(ResultsFile(path).rows.values())
    assert math.isnan(rows[0]["worst_op_max_rel"]) and rows[0]["fetch_max_rel"] == math.inf
    assert rows[1]["worst_op"].endswith("Initializer/zeros") and rows[1]["worst_op_max_rel"] == 0.0
