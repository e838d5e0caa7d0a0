"""The TF2 corpus, end to end: real ModelZoo TF2 scripts run unchanged on the emulated adapter.

Each script (``tests/corpus/tf2/``) runs twice as a user would run it: as ``python script.py <flags>``
after ``npu_jupyter.emulate_adapter()``, and pasted into a ``%%npu`` cell of a real IPython shell after
``%npu adapter emulate``. Both runs must train, the options the script sets through
``npu_device.global_options()`` must be in the effective config (in the cell, under the cell's own flag),
and each training report is checked against the function that ran: its title (the Keras entry point or
the ``tf.function``), the number of calls, the plan (the entry function's, counting what it calls) and
its time per step (the mean of the calls, held against an independent clock under the emulation).
"""

from __future__ import annotations

import importlib.util
import re
import runpy
from pathlib import Path
from typing import Any

import pytest

from corpus import tf2_runner
from corpus.corpus import TF2_IDIOMS, Tf2Script
from corpus.tf2_scripts import SCRIPTS

tf = pytest.importorskip("tensorflow")

from npu_jupyter import adapter
from npu_jupyter._display.mime import report_payload
from npu_jupyter._options import catalogue
from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter.adapter.tf2 import device as tf2_device

_NOTEBOOK_CONFTEST = Path(__file__).resolve().parents[1] / "notebook" / "conftest.py"
_spec = importlib.util.spec_from_file_location("_notebook_conftest_for_tf2_corpus", _NOTEBOOK_CONFTEST)
assert _spec is not None and _spec.loader is not None
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
ip = _conftest.ip  # the real-IPython-shell fixture of tests/notebook

needs_functions = pytest.mark.skipif(
    not functions.supported(), reason="emulating traced functions needs TensorFlow >= 2.14 (AtomicFunction)"
)
CELL_PRECISION = "allow_fp32_to_fp16"  # the %%npu cell's own flag, which must win over the script's
IDS = [s.name for s in SCRIPTS]


class Run:
    """What one run of a script left: the effective config, the reports, the independent call clock."""

    def __init__(self, config: Any, reports: list[Any], clock: tf2_runner.CallClock, tmp: Path) -> None:
        self.config, self.reports, self.clock, self.tmp = config, reports, clock, tmp


_RUNS: dict[str, Run] = {}
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "corpus-tf2.md"
ROWS: dict[str, list[str]] = {}
COLUMNS = (
    "script",
    "training report",
    "calls",
    "ops planned",
    "host / AI Core / AI CPU",
    "ops changed precision (planner)",
    "tensors rounded (emulator)",
    "CPU ms per call (mean, emulation)",
    "plan of",
)


@pytest.fixture(scope="module", autouse=True)
def figures_table():
    """Write the training reports' figures of the emulate_adapter runs, whatever the outcome."""
    yield
    if not ROWS:
        return
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# TF2 corpus: training reports",
        "",
        (
            "One row per training report of a run after `emulate_adapter()`. Placements and precision changes "
            "are predicted by the planner (TF2 adapter rule); tensors rounded are what the emulator rounded; "
            "times are CPU times of the emulation on this machine, mean per call measured by a clock under "
            "the emulation. None of these is an NPU measurement."
        ),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for _, row in sorted(ROWS.items())]
    ARTIFACT.write_text("\n".join(lines) + "\n", encoding="utf-8")


def record_figures(script: Tf2Script, run: Run, reports: list[Any]) -> None:
    """One table row per training report."""
    for index, report in enumerate(reports):
        summary = report.plan.summary()
        calls = run.clock.calls.get(report.fetches[0], [])
        ROWS[f"{script.name}.{index}"] = [
            script.name,
            f"{script.training} ({report.fetches[0]})",
            str(report.steps),
            str(summary["ops"]),
            f"{summary['host']} / {summary['ai_core']} / {summary['ai_cpu']}",
            str(summary["precision_changed"]),
            str(len(report.emulation)),
            f"{sum(calls) / len(calls):.1f}" if calls else "-",
            str(report.function.plan_function),
        ]


def emulated_run(script: Tf2Script, tmp_path_factory: Any) -> Run:
    """The script run once as ``python script.py`` after ``emulate_adapter()`` (cached for the module)."""
    if script.name in _RUNS:
        return _RUNS[script.name]
    tmp = tmp_path_factory.mktemp(script.name)
    clock = tf2_runner.CallClock()
    adapter.uninstall()
    with pytest.MonkeyPatch.context() as mp, tf2_runner.script_context(script, tmp, mp), clock.installed():
        adapter.emulate_adapter()
        try:
            runpy.run_path(tf2_runner.argv(script, tmp)[0], run_name="__main__")
            run = Run(tf2_device.effective_config(), tf2_device.device_reports(), clock, tmp)
        finally:
            adapter.uninstall()
    _RUNS[script.name] = run
    return run


def training_reports(script: Tf2Script, reports: list[Any]) -> list[Any]:
    """The reports of the script's training function (one per ``fit``; one for a ``tf.function`` loop)."""
    return [r for r in reports if (r.function.label if r.function else None) == script.training]


def check_training_report(script: Tf2Script, report: Any, options: dict[str, Any]) -> None:
    """Title, entry function, calls and config of one training report."""
    payload = report_payload(report)
    assert re.match(rf"Calls of {re.escape(script.training)}( \(.*\))?: ", payload["title"]), payload["title"]
    assert len(report.fetches) == 1 and f"_{script.entry}_" in report.fetches[0], report.fetches
    assert report.steps == script.steps, (report.fetches, report.steps)
    assert payload["run"]["steps"] == script.steps
    for key, value in options.items():
        assert effective(report.plan.config_changes, key) == value, (key, report.plan.config_changes)


def effective(changes: dict[str, Any], key: str) -> Any:
    """An option's effective value: as set, else the adapter's default (a config lists set options only)."""
    return changes[key] if changes.get(key) is not None else catalogue.spec(key).default


# ---------------------------------------------------------------------------------------------- fast


def test_the_tf2_scripts_cover_every_tf2_idiom():
    covered = {idiom for script in SCRIPTS for idiom in script.idioms}
    assert covered == TF2_IDIOMS, sorted(TF2_IDIOMS ^ covered)
    assert len(SCRIPTS) >= 4


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_each_script_keeps_its_adapter_calls(script):
    text = tf2_runner.source(script)
    assert "import npu_device" in text
    assert "npu_device.global_options().precision_mode = args.precision_mode" in text
    assert "npu_device.open().as_default()" in text
    if "loss_scale_optimizer" in script.idioms:
        assert "npu_device.train.optimizer.NpuLossScaleOptimizer(" in text
    if "dropout_conversion" in script.idioms:
        assert "import npu_convert_dropout" in text
        assert "gen_npu_ops.drop_out_gen_mask(" in (tf2_runner.SCRIPT_DIR / "npu_ops.py").read_text()


# ---------------------------------------------------------------------------------------------- slow


@needs_functions
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_script_trains_after_emulate_adapter_with_its_options(script, tmp_path_factory):
    run = emulated_run(script, tmp_path_factory)
    options = tf2_runner.expected_options(script, run.tmp)
    for key, value in options.items():
        assert effective(run.config.changed(), key) == value, (key, run.config.changed())
    found = training_reports(script, run.reports)
    fits = tf2_runner.source(script).count(".fit(") if script.training.startswith("Keras fit") else 1
    assert len(found) >= 1 and len(found) <= fits, [(r.function.label if r.function else None) for r in run.reports]
    record_figures(script, run, found)
    for report in found:
        check_training_report(script, report, options)


@needs_functions
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_script_trains_inside_npu_cell_with_its_options_under_the_cell_flags(script, ip, tmp_path, monkeypatch):
    from npu_jupyter._notebook.state import last_reports

    adapter.uninstall()
    with tf2_runner.script_context(script, tmp_path, monkeypatch):
        ip.run_line_magic("npu", "adapter emulate")
        try:
            ip.run_cell_magic("npu", f"--precision {CELL_PRECISION} --quiet", tf2_runner.source(script))
            reports = list(last_reports())
        finally:
            adapter.uninstall()
    options = {**tf2_runner.expected_options(script, tmp_path), "precision_mode": CELL_PRECISION}
    found = training_reports(script, reports)
    assert found, [(r.function.label if r.function else None) for r in reports]
    for report in found:
        check_training_report(script, report, options)


# ---------------------------------------------------------------- issue 19's checks of each training report


@needs_functions
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_training_report_plans_the_function_that_ran_counting_its_callees(script, tmp_path_factory):
    """The plan is the entry function's, and every op whose tensors the call tree rounded is in it.

    PointNet's training function calls the loss-scale optimizer's ``tf.cond`` branches (functions the
    device does not inline): its report must still be about the entry function, counting them.
    """
    run = emulated_run(script, tmp_path_factory)
    for report in training_reports(script, run.reports):
        assert report.function.plan_function == report.fetches[0], report.function.plan_function
        rounded = set(report.emulation)  # named as the plan names ops (callees as function/op)
        if script.options.get("precision_mode") == "allow_mix_precision":
            assert rounded, "the training function rounded nothing under allow_mix_precision"
        assert rounded <= set(report.plan.ops), sorted(rounded - set(report.plan.ops))[:5]


@needs_functions
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_training_report_time_per_step_is_the_mean_of_its_calls(script, tmp_path_factory):
    """ "ms per step" of the training function is its mean per call, held against a clock under the emulation."""
    run = emulated_run(script, tmp_path_factory)
    for report in training_reports(script, run.reports):
        calls = run.clock.calls[report.fetches[0]]
        assert len(calls) == report.steps
        mean = sum(calls) / len(calls)
        shown = report_payload(report)["run"]["wall_ms"]
        # the emulation's timer encloses the clock's: the same calls, a little more per call, never 2x
        assert 0.9 * mean <= shown <= 2.0 * mean, (shown, mean, report.steps)
