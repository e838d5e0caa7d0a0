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
