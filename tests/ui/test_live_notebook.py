"""A new user's first notebook, run on a live kernel in JupyterLab and driven in Chromium.

The notebook (written at test time into the server's temp root, never committed: nbval would collect
it) loads the extension, sets an option, makes a typo-class mistake on an option line, opens the panel,
trains a small TF1 MLP under ``%%npu --precision force_fp16`` with its own ``tf.compat.v1.Session``, and
asks ``%npu explain loss``. ``live_notebook.mjs`` runs it with Run → Run All Cells, then picks another
``precision_mode`` in the panel and re-runs the last cell, which prints the config. The tests assert
on what the page showed; screenshots go to ``test-artifacts/live_*.png`` for a human to judge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UI_DIR = Path(__file__).resolve().parent
ARTIFACTS = UI_DIR.parents[1] / "test-artifacts"

START_PRECISION = "allow_mix_precision"
PANEL_PRECISION = "allow_fp32_to_fp16"
BAD_LINE = "%npu set precision_mode=fp16 mix_compile_mode=maybe"

GRAPH = """\
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
rng = np.random.default_rng(0)
x_data = rng.normal(size=(32, 16)).astype(np.float32)
y_data = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=32)]

x = tf.compat.v1.placeholder(tf.float32, [None, 16], name="x")
y = tf.compat.v1.placeholder(tf.float32, [None, 4], name="y")
init = tf.compat.v1.initializers.glorot_uniform(seed=1)
w1 = tf.compat.v1.get_variable("w1", [16, 32], initializer=init)
b1 = tf.compat.v1.get_variable("b1", [32], initializer=tf.compat.v1.zeros_initializer())
w2 = tf.compat.v1.get_variable("w2", [32, 4], initializer=init)
hidden = tf.nn.relu(tf.matmul(x, w1) + b1, name="hidden")
logits = tf.matmul(hidden, w2, name="logits")
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train_op")
init_op = tf.compat.v1.global_variables_initializer()
os.makedirs("npu_dump", exist_ok=True)
"""

TRAIN = """\
%%npu --precision force_fp16 --dump npu_dump --profile npu_prof
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(3):
        _, loss_value = sess.run([train_op, loss], feed_dict={x: x_data, y: y_data})
print(f"loss after 3 steps: {loss_value:.3f}")
"""

# (name, source, tags): the cells in order; names index the driver's observations.
CELLS: list[tuple[str, str, list[str]]] = [
    ("load", "%load_ext npu_jupyter\nimport npu_jupyter", []),
    ("set", f"%npu set precision_mode={START_PRECISION}", []),
    # Tagged so Run All goes on past it, as JupyterLab does for cells expected to fail.
    ("error", BAD_LINE, ["raises-exception"]),
    ("panel", "npu_jupyter.panel()", []),
    ("graph", GRAPH, []),
    ("train", TRAIN, []),
    ("explain", "%npu explain loss", []),
    ("probe", 'print("precision_mode =", npu_jupyter.current_config().precision_mode)', []),
]


def _write_notebook(path: Path) -> dict[str, int]:
    """Write the new user's notebook; return the cell index of each named cell."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": tags} if tags else {}) for _, source, tags in CELLS]
    nbformat.write(nb, str(path))
    return {name: i for i, (name, _, _) in enumerate(CELLS)}


@pytest.fixture(scope="module")
def live_run(lab_server: dict[str, Any], ui_helpers: SimpleNamespace) -> dict[str, Any]:
    """Run the notebook once in Chromium on a live kernel and return what the page showed."""
    root: Path = lab_server["root"]
    index = _write_notebook(root / "first_steps.ipynb")
    results = ui_helpers.drive_browser(
        "live_notebook.mjs",
        {
            "notebook": "first_steps.ipynb",
            "cells": {name: index[name] for name in ("error", "panel", "graph", "train", "explain", "probe")},
            "newPrecision": PANEL_PRECISION,
        },
        lab_server,
        timeout=400,
        show_seen=True,
    )
    print(f"\nlive notebook timings (ms since page open): {json.dumps(results['timings'])}")
    for name in ("train", "explain"):
        print(
            f"{name} cell: outputs {results['cells'][name]['mimeTypes']}, reports {results['cells'][name]['reportTitles']}"
        )
    print(f"kernel dialog on open: {results.get('kernelDialog')}; console errors: {results['consoleErrors']}")
    return results


def test_run_all_executes_every_cell_on_the_live_kernel(live_run: dict[str, Any]) -> None:
    prompts = live_run["allPrompts"]
    assert len(prompts) == len(CELLS)
    assert all(p.strip("[]: ").isdigit() for p in prompts), prompts


def test_bad_option_line_shows_one_short_message_naming_both_values(live_run: dict[str, Any]) -> None:
    error = live_run["cells"]["error"]
    text = error["text"]
    assert error["count"] == 1, text
    assert "Traceback" not in text and 'File "' not in text, text
    assert "fp16" in text and "maybe" in text, text
    assert "precision_mode" in text and "mix_compile_mode" in text, text
    # Short enough to read without scrolling: the message and the allowed values, not a stack.
    assert len(text.splitlines()) <= 15, text


def test_bad_option_line_leaves_the_config_unchanged(live_run: dict[str, Any]) -> None:
    # The probe ran after the bad line and after the force_fp16 cell: neither may have stuck.
    assert f"precision_mode = {START_PRECISION}" in live_run["cells"]["probe"]["text"]


def test_panel_renders_as_live_controls(live_run: dict[str, Any]) -> None:
    panel = live_run["cells"]["panel"]
    assert panel["widgetViews"] > 0, panel["text"][:500]
    assert "Precision" in panel["tabTitles"], panel["tabTitles"]
    assert panel["selects"] > 0
    # The saved-state / disconnected forms of a widget output.
    for placeholder in ("NpuPanel(", "VBox(", "Error displaying widget", "model not found", "Loading widget"):
        assert placeholder not in panel["text"], panel["text"][:500]


def test_panel_shows_the_precision_set_by_the_magic(live_run: dict[str, Any]) -> None:
    assert live_run["panel"]["selectFound"], live_run["panel"]
    assert live_run["panel"]["before"] == START_PRECISION


def test_choosing_a_precision_in_the_panel_changes_the_config(live_run: dict[str, Any]) -> None:
    assert live_run["panel"]["after"] == PANEL_PRECISION
    text = live_run["probeAfterPanel"]["text"]
    assert f"precision_mode = {PANEL_PRECISION}" in text, text


def test_training_cell_report_renders_through_the_mime_renderer(live_run: dict[str, Any]) -> None:
    train = live_run["cells"]["train"]
    assert train["reportOutputs"] >= 1, train["mimeTypes"]
    assert train["graphSvgs"] >= 1
    assert train["summary"] and "ops" in train["summary"], train["summary"]
    assert train["tableRows"] > 0
    assert any(title.startswith("Run of train_op") for title in train["reportTitles"]), train["reportTitles"]
    assert "loss after 3 steps" in train["text"]
    assert "Traceback" not in train["text"]


def test_training_report_says_it_ran_in_force_fp16(live_run: dict[str, Any]) -> None:
    train = live_run["cells"]["train"]
    assert "force_fp16" in (train["title"] or "") + (train["summary"] or "") + train["text"], train["title"]


def test_explain_renders_the_plan_of_the_loss(live_run: dict[str, Any]) -> None:
    explain = live_run["cells"]["explain"]
    assert explain["reportOutputs"] == 1, explain["mimeTypes"]
    assert explain["graphSvgs"] == 1
    assert explain["summary"] and explain["tableRows"] > 0
    assert "Traceback" not in explain["text"]


def test_dump_and_profile_run_shows_its_files_and_costliest_ops_in_the_lab_view(live_run: dict[str, Any]) -> None:
    facts = " | ".join(live_run["cells"]["train"]["facts"])
    assert re.search(r"Dump folder: \S*npu_dump", facts), facts
    assert re.search(r"Trace \(open in Perfetto\): \S*npu_prof\S*", facts), facts
    # the label may also say which steps the mean covers ("over 2 profiled steps, step 0 (warm-up) left out")
    assert re.search(
        r"Costliest ops \(mean per step, .*?wall-clock time of the emulation on this CPU\): \S+ [0-9.]+ µs", facts
    )


def test_run_times_are_labelled_as_wall_clock_time_of_the_emulation_on_this_cpu(live_run: dict[str, Any]) -> None:
    facts = live_run["cells"]["train"]["facts"]
    run = next((f for f in facts if f.startswith("Run: ")), "")
    assert run.endswith("wall-clock time of the emulation on this CPU)"), facts
    summary = live_run["cells"]["train"]["summary"] or ""
    assert "wall-clock time of the emulation on this CPU" in summary and "ms wall" not in summary


def test_live_pages_raise_no_uncaught_errors(live_run: dict[str, Any]) -> None:
    assert live_run["pageErrors"] == []
    assert live_run["dialogs"] == []


def test_screenshots_are_saved(live_run: dict[str, Any]) -> None:
    for name in ("live_panel.png", "live_report.png", "live_error.png"):
        shot = ARTIFACTS / name
        assert shot.is_file() and shot.stat().st_size > 10_000, name


def test_the_panels_value_note_wraps_inside_the_output_area(live_run: dict[str, Any]) -> None:
    """The note under precision_mode (what the chosen value does) ends inside the cell, wrapped, not cut off."""
    fit = live_run["panel"].get("noteFit")
    assert fit is not None, live_run["panel"]
    assert fit["text"].startswith(f"{PANEL_PRECISION}:") and len(fit["text"]) > 60, fit
    assert fit["noteRight"] <= fit["areaRight"] + 1, fit  # not past the output area's right edge
    assert not fit["overflowing"], fit  # no box between the note and the output area scrolls sideways


def test_no_cell_shows_tensorflows_start_up_lines(live_run: dict[str, Any]) -> None:
    """After %load_ext npu_jupyter, the cell that first imports TensorFlow (here the panel's or the graph's)
    shows no absl/oneDNN/CUDA-probe block as pink stderr, and neither does any later cell."""
    native = re.compile(
        r"^([IWEF]\d{4} \d\d:\d\d:\S+\s+\d+ \S+:\d+\] |WARNING: All log messages before absl)", re.MULTILINE
    )
    shown = {
        name: cell["stderr"] for name, cell in live_run["cells"].items() if native.search("\n".join(cell["stderr"]))
    }
    assert not shown, shown


def test_the_estimate_line_in_the_lab_view_says_estimated_once_and_why_a_small_model_shows_one_times(
    live_run: dict[str, Any],
) -> None:
    [cost] = [fact for fact in live_run["cells"]["train"]["facts"] if fact.startswith("NPU step")]
    assert cost.count("estimated") == 1 and cost.count("not measured") == 1 and "assumes" not in cost, cost
    assert "of it is fixed launch and copy latency, which precision does not change" in cost, cost
