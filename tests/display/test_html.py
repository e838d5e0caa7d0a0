"""The text/html fallback: what a person sees first, escaping, no scripts, bounded tables."""

from __future__ import annotations

import re

import pytest

from npu_jupyter._display import html
from npu_jupyter._display.mime import report_payload
from npu_jupyter._plan.model import OpDecision, Plan, Subgraph
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import DumpRecord, NonFiniteFinding, SkippedDump


def _op(name: str, engine: str = "AI_CORE", after: str = "float32", **kw) -> OpDecision:
    return OpDecision(
        name=name,
        op_type=kw.pop("op_type", "Add"),
        placement="host" if engine == "HOST" else "device",
        engine=engine,
        placement_reason=kw.pop("pr", "supported"),
        dtype_before="float32",
        dtype_after=after,
        precision_reason=kw.pop("xr", "kept float32"),
        cluster=None if engine == "HOST" else "GeOp1_0",
        **kw,
    )


def _plan(n_plain: int = 3) -> Plan:
    ops = {"host_op": _op("host_op", "HOST", op_type="PyFunc", pr="no device kernel for PyFunc")}
    ops["mm"] = _op("mm", after="float16", op_type="MatMul", xr="cube op to float16")
    for i in range(n_plain):
        ops[f"plain{i}"] = _op(f"plain{i}")
    return Plan(
        ops=ops,
        subgraphs=[Subgraph("GeOp1_0", [n for n in ops if n != "host_op"])],
        warnings=["1 op runs on the host: host_op"],
        errors=["ref variable <v> crosses a cluster"],
    )


def test_ops_that_left_the_device_or_changed_precision_come_before_the_collapsed_rest():
    page = html.render(report_payload(_plan()))
    first_table, details = page.split("<details>", 1)
    assert "host_op" in first_table and "mm" in first_table and "plain0" not in first_table
    assert "plain0" in details and "All other ops (3)" in details
    assert "float32 → float16" in first_table
    assert "no device kernel for PyFunc" in first_table


def test_summary_line_counts_placements_and_precision_changes():
    line = html.summary_line(report_payload(_plan()))
    assert line.startswith("5 ops: 4 AI Core, 0 AI CPU, 1 host · 1 changed precision · 1 device cluster")


def test_errors_and_warnings_are_shown_escaped():
    page = html.render(report_payload(_plan()))
    assert "ref variable &lt;v&gt; crosses a cluster" in page
    assert "1 op runs on the host: host_op" in page


def test_html_has_no_scripts_event_handlers_or_external_resources():
    plan = _plan()
    plan.ops["<script>alert(1)</script>"] = _op("<script>alert(1)</script>", "HOST", pr='" onmouseover="x')
    page = html.render(report_payload(plan))
    assert "<script" not in page.lower()
    # Attribute values are double-quoted with every '"' escaped, so a value cannot open an attribute:
    # look for event handlers among the attribute names only.
    assert '" onmouseover' not in page
    assert not re.search(r"<[^>]*\son\w+=", re.sub(r'"[^"]*"', '""', page))
    assert "http" not in page and "<link" not in page


def test_summary_detail_caps_the_collapsed_table_and_full_shows_every_op():
    payload = report_payload(_plan(n_plain=400))
    summary = html.render(payload, detail="summary")
    full = html.render(payload, detail="full")
    assert "plain399" not in summary and "100 more not shown" in summary
    assert "plain399" in full


def test_run_section_shows_first_overflow_paths_and_costliest_ops_bars():
    plan = _plan()
    run = RunReport(
        plan=plan,
        steps=2,
        wall_ms=3.5,
        op_times_us={"mm": 30.0, "plain0": 10.0},
        overflow_ops=["mm"],
        first_overflow="mm",
        trace_file="/tmp/t <1>.json",
        op_summary_csv="/tmp/ops.csv",
    )
    page = html.render(report_payload(run))
    assert "2 steps · 3.50 ms per step (wall-clock time of the emulation on this CPU)" in page
    assert "Costliest ops (mean per step, wall-clock time of the emulation on this CPU)" in page
    assert "First overflow" in page and "<code" in page
    assert "/tmp/t &lt;1&gt;.json" in page and "/tmp/ops.csv" in page
    assert page.index("Costliest ops") < page.index("Ops that left the AI Core")
    assert "width:100.0%" in page and "width:33.3%" in page


def test_default_detail_accepts_only_known_levels():
    with pytest.raises(ValueError, match="summary, full"):
        html.set_default_detail("everything")
    assert html.default_detail() == "summary"


def test_facts_escape_hostile_paths_notes_and_reasons():
    evil = '<img src=x onerror="alert(1)">'
    plan = _plan()
    plan.notes = [evil]
    run = RunReport(
        plan=plan,
        dump_dir=evil,
        dump=DumpRecord(skipped=(SkippedDump(1, evil),)),
        non_finite=NonFiniteFinding(0, evil, evil, evil, evil),
        labels={"wall_ms": evil},
    )
    page = html.render(report_payload(run))
    assert "<img" not in page
    assert page.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 5


def test_input_only_lowering_reads_as_a_precision_change():
    from npu_jupyter._display.html import changed_precision, dtype_text

    matmul = {"d0": "float32", "d1": "float32", "rd": "float16"}
    update = {"d0": "", "d1": "", "rd": "float16"}  # a variable update: no outputs, reads float16
    plain = {"d0": "float32", "d1": "float32"}
    assert changed_precision(matmul) and changed_precision(update) and not changed_precision(plain)
    assert dtype_text(matmul, " → ") == "float32 (reads float16)"
    assert dtype_text(update, " → ") == "reads float16"
    assert dtype_text({"d0": "float32", "d1": "float16"}, "->") == "float32->float16"
    assert dtype_text(plain, "->") == "float32"
