"""RunReport as a user meets it outside a notebook: ``print(report)`` reads like the text report."""

from __future__ import annotations

import npu_jupyter  # noqa: F401 - importing the package registers the renderers
from npu_jupyter._display.mime import mimebundle
from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.report import RunReport


def _plan() -> Plan:
    return Plan(
        ops={
            "mm": OpDecision(
                name="mm",
                op_type="MatMul",
                placement="device",
                engine="AI_CORE",
                placement_reason="supported by the device",
                dtype_before="float32",
                dtype_after="float16",
                precision_reason="cube op goes to float16",
            )
        },
        title="1 op · full offload",
    )


def test_print_shows_the_text_report_not_the_dataclass_fields():
    report = RunReport(plan=_plan(), fetches=["mm:0"], steps=2, wall_ms=1.5, first_overflow="mm")
    shown = str(report)
    assert shown == mimebundle(report)["text/plain"]
    assert "mm [MatMul] AI_CORE float32->float16: cube op goes to float16" in shown
    assert "First overflow (inf/NaN): mm" in shown and "2 steps" in shown
    assert "OpDecision(" not in shown and "OpDecision(" in repr(report)


def test_a_report_has_no_extra_bag_each_fact_has_a_typed_field():
    """Issue 21: ``RunReport.extra`` held ~25 string keys; each fact now has a named, typed home."""
    import dataclasses

    from npu_jupyter._runtime import report_records

    report = RunReport(plan=_plan())
    names = {f.name for f in dataclasses.fields(report)}
    assert "extra" not in names and not hasattr(report, "extra")
    typed = {
        "timing": report_records.Timing,
        "dump": report_records.DumpRecord,
        "profile": report_records.ProfileRecord,
    }
    assert all(isinstance(getattr(report, name), kind) for name, kind in typed.items())
    assert report.non_finite is None and report.session is None and report.function is None
    assert report.estimate is None  # nothing attached: no estimate, and reading it never fails


def test_the_estimate_is_read_from_what_the_builder_attached_once():
    from npu_jupyter.cost.attach import CostBlock, CostEstimate, PendingEstimate

    fixed = CostEstimate(CostBlock(1.0, 10, 0.5, 0.5, "roofline"), {"mm": 2.0})
    assert RunReport(plan=_plan(), cost=fixed).estimate is fixed
    pending = PendingEstimate(_plan(), None)  # no graph: the model cannot estimate it
    report = RunReport(plan=_plan(), cost=pending)
    assert report.estimate is None and "PendingEstimate" not in repr(report)
