"""RunReport as a user meets it outside a notebook: ``print(report)`` reads like the text report."""

from __future__ import annotations

import npu_jupyter  # noqa: F401 - importing the package registers the renderers
from npu_jupyter.display.mime import mimebundle
from npu_jupyter.plan.model import OpDecision, Plan
from npu_jupyter.runtime.report import RunReport


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
