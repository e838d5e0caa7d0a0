"""Report op tables show what the cell asked for: no per-op estimate suffix, drift summarised and explained.

A run with ``--dump --profile --reference`` had ten columns, reasons cut to "supported by the…" and
"· est. 5.0 µs (estimate)" on every op name. These tests hold the HTML and text views to: measured
columns only when measured, the cost model's estimate listed once, the worst drift in the facts above
the table with its units, AI CPU ops among the ops shown first, and the non-finite finding said once.
"""

from __future__ import annotations

import re

from npu_jupyter._display import html, text
from npu_jupyter._display.drift import DRIFT_UNITS
from npu_jupyter._display.mime import report_payload
from npu_jupyter._plan.model import OpDecision, Plan, Subgraph
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import FunctionInfo, NonFiniteFinding
from npu_jupyter.cost.attach import CostEstimate


def _op(name: str, engine: str = "AI_CORE", after: str = "float32", op_type: str = "Add") -> OpDecision:
    return OpDecision(
        name=name,
        op_type=op_type,
        placement="host" if engine == "HOST" else "device",
        engine=engine,  # type: ignore[arg-type]
        placement_reason="supported by the AI Core kernel table" if engine == "AI_CORE" else "no AI Core kernel",
        dtype_before="float32",
        dtype_after=after,
        precision_reason="cube op goes to float16" if after != "float32" else "keeps float32",
        cluster=None if engine == "HOST" else "GeOp1_0",
    )


def _run(**kw: object) -> RunReport:
    ops = [_op("conv", after="float16", op_type="Conv2D"), _op("relu"), _op("shape", "AI_CPU", op_type="Shape")]
    plan = Plan(ops={d.name: d for d in ops}, subgraphs=[Subgraph("GeOp1_0", [d.name for d in ops])])
    base: dict[str, object] = {
        "plan": plan,
        "drift": {
            "conv": {"max_abs": 0.0227, "max_rel": 7.99, "cos": 0.9995, "rel_rmse": 0.031, "step": 2},
            # a noisy element-wise relative error (one value near zero) on a tensor that barely drifted
            "relu": {"max_abs": 0.0018, "max_rel": 91.0, "cos": 0.99998, "rel_rmse": 0.0006, "step": 0},
        },
        "cost": CostEstimate(est_us={"conv": 5.1, "relu": 5.0, "shape": 4.2}),
    }
    base.update(kw)
    return RunReport(**base)  # type: ignore[arg-type]


def test_no_op_name_carries_the_cost_model_estimate_which_is_listed_once():
    payload = report_payload(_run())
    for view in (html.render(payload), text.render(payload)):
        assert "(estimate)" not in view
        assert view.count("conv 5.1 µs") == 1
        assert "Estimated costliest ops (NPU time per step, estimated by the cost model, not measured)" in view


def test_columns_follow_what_the_run_measured():
    plain = html.render(report_payload(_run(drift={})))
    assert "Drift vs float32" not in plain and "µs per step" not in plain
    measured = html.render(report_payload(_run(op_times_us={"conv": 12.0})))
    assert "µs per step" in measured and "Drift vs float32" in measured


def test_the_time_column_says_it_is_cpu_time_in_its_header():
    """Review: a per-op time under "µs per run" read as an NPU time; only the heading above said CPU."""
    page = html.render(report_payload(_run(op_times_us={"conv": 12.0})))
    headers = [re.sub("<[^>]+>", "", cell) for cell in re.findall(r"<th\b.*?</th>", page, flags=re.DOTALL)]
    assert "mean CPU µs" in headers


def test_the_worst_drift_is_summarised_above_the_table_with_its_units():
    payload = report_payload(_run())
    page = html.render(payload)
    summary = page.index("Largest drift vs float32")
    assert summary < page.index("<table")
    # ranked by the relative RMSE it shows, not by the largest element-wise relative error
    assert page.index("conv rel. RMSE 0.031, max abs 0.0227, cos 0.9995, step 2") < page.index(
        "relu rel. RMSE 0.0006, max abs 0.0018, cos 1.0000, step 0"
    )
    plain = text.render(payload)
    assert "Largest drift vs float32" in plain and DRIFT_UNITS in plain


def test_the_drift_units_are_said_once_in_the_page_not_again_under_each_table():
    """Review: the units stood in the facts line and again under the op table (under every table)."""
    page = html.render(report_payload(_run(op_times_us={"conv": 12.0})), detail="full")
    shown = re.sub(r'title="[^"]*"', "", page.replace("&#x27;", "'"))  # a header's hover text is not prose
    assert shown.count(DRIFT_UNITS) == 1


def test_an_ai_cpu_op_is_among_the_ops_shown_first():
    payload = report_payload(_run(drift={}))
    first = html.render(payload).split("<details>", 1)[0]
    assert ">shape<" in first
    assert "shape [Shape] AI_CPU" in text.render(payload)
    assert "Ops that left the AI Core (host, AI CPU) or changed precision" in text.render(payload)


def test_the_non_finite_finding_is_said_once():
    sentence = "In call 1 of f, values inside the function became non-finite (inf/NaN): first op conv."
    run = _run(
        warnings=[sentence, "another warning"], non_finite=NonFiniteFinding(1, "conv", "conv", sentence, sentence)
    )
    payload = report_payload(run)
    assert payload["warnings"] == ["another warning"]
    for view in (html.render(payload), text.render(payload)):
        assert view.count("values inside the function became non-finite") == 1


def test_a_traced_function_report_is_titled_by_its_python_name_not_tensorflows():
    fit = FunctionInfo("Keras fit (train function)", "__inference_multi_step_on_iterator_578")
    run = _run(fetches=["__inference_multi_step_on_iterator_578"], function=fit)
    title = report_payload(run)["title"]
    assert title.startswith("Calls of Keras fit (train function) (multi_step_on_iterator): ")
    assert "__inference" not in title
    plain = _run(
        fetches=["__inference_train_step_1036"], function=FunctionInfo("train_step", "__inference_train_step_1036")
    )
    assert report_payload(plain)["title"].startswith("Calls of train_step: ")  # not "train_step (train_step)"


def test_a_keras_function_named_as_its_label_says_is_not_named_twice_in_the_title():
    """Review: "Calls of Keras fit (train function) (train_function)"."""
    fit = FunctionInfo("Keras fit (train function)", "__inference_train_function_812")
    title = report_payload(_run(fetches=["__inference_train_function_812"], function=fit))["title"]
    assert title.startswith("Calls of Keras fit (train function): ")
    evaluate = FunctionInfo("Keras evaluate (test function)", "__inference_train_function_812")
    title = report_payload(_run(fetches=["__inference_train_function_812"], function=evaluate))["title"]
    assert title.startswith("Calls of Keras evaluate (test function) (train_function): ")  # tells something


def test_run_files_read_alike_and_the_ones_inside_the_notebook_folder_are_links(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = _run(
        dump_dir=str(tmp_path / "npu_dump"),
        trace_file="npu_prof/trace_step_0.json",
        op_summary_csv="/elsewhere/ops.csv",
    )
    payload = report_payload(run)
    assert payload["run"]["dump_dir"] == "npu_dump"  # absolute inside the folder -> relative, like the trace
    assert payload["run"]["trace_file"] == "npu_prof/trace_step_0.json"
    assert payload["run"]["op_summary_csv"] == "/elsewhere/ops.csv"
    page = html.render(payload)
    assert '<a href="npu_dump" title="open in JupyterLab">' in page
    assert '<a href="npu_prof/trace_step_0.json"' in page
    assert 'href="/elsewhere' not in page  # outside what the server can open: shown, not linked


def test_link_targets_are_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = html.render(report_payload(_run(dump_dir='d"><script>x</script>')))
    assert "<script>" not in page and 'href="d%22%3E%3Cscript%3Ex%3C/script%3E"' in page
