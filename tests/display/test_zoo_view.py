"""The zoo table's HTML and text: every user string escaped, every number labelled by kind."""

from __future__ import annotations

import math

from npu_jupyter._display.zoo_view import cells, entry_label, options_label, render_html, text, worst_op_text
from npu_jupyter._runtime.observe.drift_ranking import AGAINST_INPUTS
from npu_jupyter._zoo_check.table import ZooTable
from npu_jupyter._zoo_check.task import empty_row

HOSTILE = "<img src=x onerror=alert(1)>"


def _rows() -> list[dict]:
    ok = empty_row(f"/srv/models/{HOSTILE}.py:zoo_entry", {"precision_mode": "force_fp16"}, 2)
    ok.update(
        status="non-finite",
        compiles=True,
        ops=10,
        ai_core=7,
        ai_cpu=2,
        host=1,
        ops_lowered=4,
        first_non_finite=f"scope/{HOSTILE}",
        fetch_rel_rmse=math.inf,
        worst_op=f"w/{HOSTILE}",
        worst_op_rel_rmse=math.nan,
        est_step_ms=1.25,
        est_step_vs_fp32=0.5,
        est_memory_bytes=2048,
        est_memory_vs_fp32=0.75,
        steps_run=2,
        cpu_ms_per_step=12.5,
    )
    refused = empty_row("mod:fn", {"precision_mode": "allow_fp32_to_bf16", "x": HOSTILE}, 2)
    refused.update(status="refused", compiles=False, plan_errors=[f"no bf16 on Ascend910 {HOSTILE}"])
    failed = empty_row("mod:fn", {}, 2)
    failed.update(error=f"RuntimeError: {HOSTILE}\nsecond line")
    return [ok, refused, failed]


def test_html_escapes_entries_options_ops_and_errors():
    page = render_html(_rows())
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page and "onerror=alert(1)>" not in page


def test_every_view_labels_predicted_estimated_and_cpu_numbers():
    for view in (text(_rows()), render_html(_rows())):
        assert "predicted by the planner" in view
        assert "estimated by the cost model (not measured)" in view
        assert "wall-clock time of the emulation measured on this CPU (not NPU time)" in view
        assert "mean over the 2 training step(s)" in view
    page = render_html(_rows())
    assert page.index("est. NPU ms/step") < page.index("ms/step on this CPU (emulation)")


def test_text_shows_counts_ratios_and_problems_under_their_row():
    shown = text(_rows())
    assert "7 / 2 / 1 of 10" in shown and "0.50×" in shown and "2.0 KiB" in shown and "12.5" in shown
    assert "the adapter would refuse this graph" in shown
    assert "error: RuntimeError: <img" in shown and "second line" not in shown  # first line of the error


def test_labels_are_short():
    assert entry_label("/a/b/train.py:zoo_entry") == "train.py:zoo_entry"
    assert entry_label("pkg.mod:fn") == "pkg.mod:fn"
    assert options_label({"precision_mode": "force_fp16"}) == "force_fp16"
    assert options_label({"b": 1, "a": "x"}) == "a=x, b=1"
    assert options_label({}) == "(script's config)"


def test_the_table_renders_through_the_display_layer_and_writes_csv(tmp_path):
    table = ZooTable(_rows())
    assert table._repr_html_() == render_html(table.rows) and repr(table) == text(table.rows)
    sheet = table.to_csv(tmp_path / "rows.csv")
    assert (tmp_path / "rows.csv").read_bytes().decode("utf-8") == sheet
    assert sheet.splitlines()[0].startswith("entry,options,steps,status,error")
    assert "traceback" not in sheet.splitlines()[0]
    assert '"fetch_rel_rmse": "inf"' in table.to_json(tmp_path / "rows.json")


def test_ipython_shows_the_table_as_html_with_a_text_fallback():
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(ZooTable(_rows()))
    assert data["text/html"].startswith("<table><caption>zoo check</caption>")
    assert data["text/plain"] == text(_rows())


def test_drift_cells_name_their_figure_and_none_when_no_op_drifted():
    ok, refused, _ = _rows()
    assert cells(ok)[7] == "rel. RMSE inf" and cells(ok)[8] == f"w/{HOSTILE} (rel. RMSE not finite (inf/NaN))"
    quiet = dict(ok, fetch_rel_rmse=0.0, worst_op=None, worst_op_rel_rmse=0.0)
    assert cells(quiet)[7:9] == ("rel. RMSE 0", "none")
    assert cells(refused)[7:9] == ("n/a", "")  # no reference ran: no drift columns
    legend = text([ok])
    assert "ranked by it as the notebook report's Largest drift line ranks" in legend
    assert "older results file" not in legend


def test_rows_of_an_older_results_file_keep_their_max_rel_labelled_and_a_zero_drift_op_is_not_named():
    from drift_cases import old_results_file

    fp16, fp32 = old_results_file()["rows"]
    fp16.update(fetch_max_rel=math.inf, worst_op_max_rel=math.nan)  # as the file reads them back
    assert cells(fp16)[7:9] == ("max rel inf", "dnn/near_zero (max rel not finite (inf/NaN))")
    assert cells(fp32)[7:9] == ("max rel 0", "none")
    for view in (text([fp16, fp32]), render_html([fp16, fp32])):
        assert "max rel: largest |a − b| / |b|, in rows of an older results file" in view


def test_a_long_worst_op_keeps_its_own_name_and_figure_in_the_text_table():
    ok = _rows()[0]
    ok.update(worst_op="wide_deep/dnn/hiddenlayer_2/" + "x" * 30 + "/MatMul", worst_op_rel_rmse=0.0123)
    line = text([ok]).splitlines()[1]
    assert "…" in line and "/MatMul (rel. RMSE 0.0123)" in line


def test_a_worst_op_with_a_cancelled_reference_says_its_figure_is_against_its_inputs_scale():
    (row,) = _rows()[:1]
    row.update(worst_op="grad", worst_op_rel_rmse=0.0016, worst_op_cancelled=True)
    assert worst_op_text(row) == f"grad (rel. RMSE 0.0016 {AGAINST_INPUTS})"
    del row["worst_op_cancelled"]  # a results file written before the field
    assert worst_op_text(row) == "grad (rel. RMSE 0.0016)"


def test_a_worst_op_whose_figure_is_not_a_number_says_inf_nan_not_nan():
    """Zoo check as a user: gru4rec under allow_mix_precision listed 'gradients/MatMul_grad/MatMul (rel. RMSE
    nan)': its float16 gradient overflowed (inf/NaN) where float32 stayed finite; "nan" read as a broken figure."""
    (row,) = _rows()[:1]
    row.update(worst_op="grad", worst_op_rel_rmse=float("nan"))
    assert worst_op_text(row) == "grad (rel. RMSE not finite (inf/NaN))"
    row.update(fetch_rel_rmse=float("nan"))
    from npu_jupyter._display.zoo_view import fetch_drift_text

    assert fetch_drift_text(row) == "rel. RMSE not finite (inf/NaN)"


def test_the_legend_names_the_step_counts_tasks_ran_in_words():
    """Zoo check as a user: with one task stopped after 1 of 2 steps the legend said 'mean over the 1/2
    training step(s)'."""
    from npu_jupyter._display.zoo_view import legend

    rows = _rows()
    rows[0]["steps_run"], rows[1]["steps_run"] = 1, 2
    assert "mean over the 1 or 2 training step(s) of each task" in legend(rows)
    rows.append(dict(rows[0], steps_run=3))
    assert "mean over the 1, 2 or 3 training step(s) of each task" in legend(rows)


def test_a_refused_row_shows_its_first_errors_and_counts_the_rest():
    """Zoo check as a user: inception_resnet_v2 under must_keep_origin_dtype printed one error per Conv2D (hundreds)
    under its row; the results file, JSON and CSV keep every error. Errors differing only in their op are one line."""
    from npu_jupyter._display.zoo_view import SHOWN_ERRORS, problem

    row = _rows()[1]
    kinds = ("Conv2D", "Conv2DBackpropFilter")
    row["plan_errors"] = [
        f"conv{k}/{kind} ({kind}): no AI Core or AI CPU kernel supports float32" for k in range(100) for kind in kinds
    ]
    said = problem(row)
    assert said.count("no AI Core or AI CPU kernel supports float32") == 1
    assert "<op> (<…>): no AI Core or AI CPU kernel supports float32 [200 times: conv0/Conv2D / Conv2D;" in said
    assert "+192 more]" in said and "and 1 more" not in said
    # findings of different wording (here: lengths) stay apart; the first few are shown, the rest counted
    row["plan_errors"] = [f"x{k} (Cast): " + " ".join(["finding"] * (k + 1)) for k in range(SHOWN_ERRORS + 2)]
    said = problem(row)
    assert "x0 (Cast)" in said and f"x{SHOWN_ERRORS - 1} (Cast)" in said and f"x{SHOWN_ERRORS} (Cast)" not in said
    assert said.endswith("and 2 more (all in the results file's plan_errors)")
    row["plan_errors"] = row["plan_errors"][:SHOWN_ERRORS]
    assert "more" not in problem(row)


def test_the_legend_explains_a_worst_op_not_finite_only_beside_results_that_stayed_finite():
    """Zoo check as a user: 14 of 19 ok rows (loss-scaled models, transformer_nmt's -1e9 mask) showed a worst op
    'rel. RMSE not finite (inf/NaN)' with no first non-finite op and nothing to say the overflow did no harm."""
    from npu_jupyter._display.zoo_view import OVERFLOW_NOT_IN_RESULTS, legend

    rows = _rows()
    for row in rows:
        row["worst_op"], row["worst_op_rel_rmse"], row["first_non_finite"] = "dense/MatMul", 0.001, None
    assert OVERFLOW_NOT_IN_RESULTS not in legend(rows)
    rows[0]["worst_op_rel_rmse"] = "nan"  # as a results file stores it
    rows[0]["first_non_finite"] = "gradients/mul_grad/Mul"  # the overflow reached the results: a finding
    assert OVERFLOW_NOT_IN_RESULTS not in legend(rows)
    rows[0]["first_non_finite"] = None
    assert OVERFLOW_NOT_IN_RESULTS in legend(rows)
