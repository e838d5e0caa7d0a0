"""How ``./dev.sh test`` splits the main suite over pytest-xdist workers (tests/conftest.py).

A notebook's cells must run in order in one kernel and the browser tests share one JupyterLab server,
so each of those is one work unit; every other test is its own unit, so the slow ones spread.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def _conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_notebooks_cells_and_the_browser_tests_are_one_unit_each_other_tests_alone():
    unit = _conftest()._work_unit
    assert unit("notebooks/01_quickstart.ipynb::Cell 0") == unit("notebooks/01_quickstart.ipynb::Cell 7")
    assert unit("notebooks/01_quickstart.ipynb::Cell 0") != unit("notebooks/02_mixed_computing.ipynb::Cell 0")
    assert unit("tests/ui/test_lab_renderer.py::test_a") == unit("tests/ui/test_live_notebook.py::test_b")
    corpus = "tests/corpus/test_corpus.py::test_model_plans_and_trains_emulated_with_dump_overflow_and_profiling"
    assert unit(f"{corpus}[zoo_dcgan]") != unit(f"{corpus}[zoo_yolov3]")


def test_the_xdist_scheduler_splits_by_those_units():
    pytest.importorskip("xdist")
    module = _conftest()
    scheduler = module._Scheduling.__new__(module._Scheduling)  # _split_scope reads no state
    assert scheduler._split_scope("notebooks/04_dump_and_profiling.ipynb::Cell 3") == (
        "notebooks/04_dump_and_profiling.ipynb"
    )
    assert scheduler._split_scope("tests/plan/test_planner.py::test_x") == "tests/plan/test_planner.py::test_x"


def test_modules_sharing_a_costly_module_fixture_are_one_unit():
    unit = _conftest()._work_unit
    assert unit("tests/test_lab_package.py::test_a") == unit("tests/test_lab_package.py::test_b")
    digests = "tests/plan/test_plan_digests.py::test_decisions_on_training_graphs_equal_the_recorded_reference"
    assert unit(f"{digests}[resnet50_train_step]") == unit(f"{digests}[bert_train_step]")


def test_the_longest_expected_units_start_first_and_the_rest_keep_their_order():
    module = _conftest()
    units = {"a": ["a"], "nb": [f"nb::Cell {i}" for i in range(30)], "b": ["b"], "slow": ["slow"], "c": ["c"]}
    order = module.heaviest_first(units, {"slow": 200.0, "b": 10.0})
    assert order == ["slow", "b", "nb", "a", "c"]  # 30 cells at the default 0.1 s outweigh one test


def test_the_xdist_queue_hands_out_the_longest_unit_next_also_after_a_unit_is_put_back():
    pytest.importorskip("xdist")
    queue = _conftest()._HeaviestFirstQueue({"slow": 200.0, "mid": 50.0})
    for unit in ("a", "mid", "slow", "b"):
        queue[unit] = {unit: False}
    assert queue.popitem(last=False) == ("slow", {"slow": False})
    queue["slow"] = {"slow": False}  # a crashed worker's unit goes back into the queue
    assert [queue.popitem(last=False)[0] for _ in range(4)] == ["slow", "mid", "a", "b"]


def test_every_unit_with_expected_seconds_names_a_test_file_and_test_that_exist():
    module = _conftest()
    root = CONFTEST.parents[1]
    for unit, seconds in module.unit_seconds().items():
        path, _, name = unit.partition("::")
        assert (root / path).exists(), f"unit_seconds.json: {unit} names no file"
        if name:
            function = name.split("[", 1)[0]
            assert f"def {function}(" in (root / path).read_text(encoding="utf-8"), f"unit_seconds.json: {unit}"
        assert seconds > 0
