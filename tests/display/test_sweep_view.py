"""sweep()'s HTML: fits the cell, CPU time kept, refusals marked on their mode, overflow column only when needed."""

from __future__ import annotations

import re
from html import escape

import npu_jupyter  # noqa: F401 - registers the display layer's renderers
from npu_jupyter._display.sweep_view import render
from npu_jupyter._runtime.observe.drift_ranking import AGAINST_INPUTS
from npu_jupyter._sweep import SweepRow, SweepTable


def _row(mode: str, **kw: object) -> SweepRow:
    base: dict[str, object] = dict(
        wall_ms=0.4,
        ops_changed=3,
        max_abs=2e-3,
        max_rel=2e-3,
        cosine=0.99999,
        worst_op="relu",
        first_overflow=None,
        rel_rmse=1.5e-3,
        worst_op_rel_rmse=0.0123,
        est_step_ms=0.0307,
        est_step_vs_fp32=0.99,
        est_memory_bytes=510_000,
        est_memory_vs_fp32=0.97,
        timed_steps=3,
    )
    base.update(kw)
    return SweepRow(mode, **base)  # type: ignore[arg-type]


def _table() -> SweepTable:
    return SweepTable(
        [
            _row("force_fp32"),
            _row("must_keep_origin_dtype", plan_errors=["conv (Conv2D): <no> float32 kernel"]),
            _row("allow_fp32_to_bf16", plan_errors=["Current soc not support dtype of BFloat16"]),
            _row("force_fp16", error="InvalidArgumentError: x not fed"),
        ],
        ["probs:0"],
    )


def test_the_sweep_fits_the_cell_and_keeps_the_cpu_column_last():
    page = _table()._repr_html_()
    assert page is not None
    assert "table-layout:fixed;width:100%" in page
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert headers[-1] == "ms/step on this CPU (emulation)"
    assert len(headers) <= 8, headers
    assert "0.0307<br>0.99× fp32" in page  # an estimate and its float32 ratio share one cell
    assert "rel. RMSE 0.0015<br>max abs 0.002<br>cos 0.999990" in page


def test_the_worst_op_shows_the_figure_it_is_ranked_by_and_none_when_nothing_drifted():
    table = SweepTable([_row("force_fp16", worst_op="a/<b>"), _row("force_fp32", worst_op="")], ["loss:0"])
    page, text = render(table), repr(table)
    assert ">a/&lt;b&gt;</code><br>rel. RMSE 0.0123<" in page and "a/<b>" not in page
    assert "a/<b> (rel. RMSE 0.0123)" in text
    fp32_line = next(line for line in text.splitlines() if line.startswith("force_fp32"))
    assert fp32_line.endswith("  none") and 'title="no op drifted from float32">none</td>' in page
    assert "ranked by it over the steps, as the report" in page and "ranked by it over the steps" in text


def test_a_worst_op_with_a_cancelled_reference_says_its_figure_is_against_its_inputs_scale():
    table = SweepTable([_row("force_fp16", worst_op="grad", worst_op_rel_rmse=0.0016, worst_op_cancelled=True)], [])
    page, text = render(table), repr(table)
    assert f"grad (rel. RMSE 0.0016 {AGAINST_INPUTS})" in text
    assert escape(f"rel. RMSE 0.0016 {AGAINST_INPUTS}") in page


def test_refused_modes_are_named_in_the_header_marked_in_their_row_and_explained_once():
    page = render(_table())
    assert (
        "refused by the adapter (no step time, drift emulated only): must_keep_origin_dtype, allow_fp32_to_bf16" in page
    )
    assert (
        page.count("the adapter would refuse this graph, so it has no step time; the drift above is emulated only") == 2
    )
    assert page.count(">refused<") >= 6  # step, memory and CPU cells of both refused modes
    assert page.count("<strong>refused</strong>") == 2
    assert "&lt;no&gt; float32 kernel" in page and "<no>" not in page
    assert "the emulator could not run this mode: InvalidArgumentError" in page
    assert "not run: force_fp16" in page


def test_first_overflow_column_only_when_a_mode_overflowed():
    assert "first overflow" not in render(_table())
    table = SweepTable([_row("force_fp16", first_overflow="squares")], ["loss:0"])
    assert "first overflow" in render(table) and ">squares<" in render(table)


def test_tutorial_03_prints_the_refusal_its_sweep_table_marks():
    """The cell after the sweep shows the field the table marks, not ``error=None`` for refused modes."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "03_precision_modes.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    sweep_cell = next(k for k, c in enumerate(code) if "npu_jupyter.sweep(" in "".join(c["source"]))
    result = next(o for o in code[sweep_cell]["outputs"] if o["output_type"] == "execute_result")
    table_text = "".join(result["data"]["text/plain"]).splitlines()
    refused = {table_text[k - 1].split()[0] for k, line in enumerate(table_text) if "would refuse" in line}
    printed = "".join(code[sweep_cell + 1]["outputs"][0]["text"]).splitlines()
    assert refused, table_text
    shown = {line.split()[0]: line for line in printed}
    for mode, line in shown.items():
        assert f"refused={mode in refused!s}" in line, line


def test_a_worst_op_whose_figure_is_not_a_number_says_inf_nan_not_nan():
    table = SweepTable([_row("force_fp16", worst_op="grad", worst_op_rel_rmse=float("nan"))], [])
    assert "grad (rel. RMSE not finite (inf/NaN))" in repr(table)
