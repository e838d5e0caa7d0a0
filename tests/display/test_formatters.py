"""Reports render through the display layer's registration, in a real IPython shell and in print()."""

from __future__ import annotations

import subprocess
import sys

from npu_jupyter._display import formatters
from npu_jupyter._display.mime import MIME_TYPE
from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.report import RunReport


def _plan() -> Plan:
    decision = OpDecision(
        name="mm",
        op_type="MatMul",
        placement="device",
        engine="AI_CORE",
        placement_reason="supported by the device",
        dtype_before="float32",
        dtype_after="float16",
        precision_reason="cube op goes to float16",
    )
    return Plan(ops={"mm": decision}, title="1 op")


def test_an_ipython_shell_displays_plans_and_reports_with_the_payload_and_fallbacks():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    formatters.register(shell)
    for obj in (_plan(), RunReport(plan=_plan(), fetches=["mm:0"])):
        data, _ = shell.display_formatter.format(obj)
        assert data[MIME_TYPE]["ops"][0]["n"] == "mm"
        assert "mm" in data["text/html"] and "mm [MatMul]" in data["text/plain"]


def test_print_of_a_plan_is_the_text_report():
    assert "mm [MatMul] AI_CORE float32->float16" in str(_plan())


def test_importing_the_package_registers_the_renderers_without_importing_the_planner_or_tensorflow():
    code = (
        "import sys, npu_jupyter; from npu_jupyter._renderers import TEXT_RENDERERS; "
        "print(len(TEXT_RENDERERS), 'tensorflow' in sys.modules, 'npu_jupyter._plan.planner' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "False", "False"]
