"""The zoo table's HTML and text: every user string escaped, every number labelled by kind."""

from __future__ import annotations

import math

from npu_jupyter._display.zoo_view import entry_label, options_label, render_html, text
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
        fetch_max_rel=math.inf,
        worst_op=f"w/{HOSTILE}",
        worst_op_max_rel=math.nan,
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
    assert '"fetch_max_rel": "inf"' in table.to_json(tmp_path / "rows.json")


def test_ipython_shows_the_table_as_html_with_a_text_fallback():
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(ZooTable(_rows()))
    assert data["text/html"].startswith("<table><caption>zoo check</caption>")
    assert data["text/plain"] == text(_rows())
