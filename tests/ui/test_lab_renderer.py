"""The JupyterLab renderer in a real browser: JupyterLab from this venv, Debian's Chromium.

One Chromium session (``browser_run`` in conftest.py) opens five notebooks whose outputs hold report
bundles — a small training plan, a plan with hostile op names, a ResNet-50-training-sized plan, the
view-parity payload with every field set, 48 side-by-side ops — and
records what the renderer drew. Each test below checks one behaviour of that run. Screenshots go to
``test-artifacts/``; the 7k-op timings are printed (performance is reported, never asserted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from npu_jupyter.display.mime import MIME_TYPE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE_SCRIPT = "<script>window.__pwned=2</script>"


def test_lab_lists_the_extension_as_enabled_and_ok() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True, check=True
    )
    line = next((ln for ln in (out.stdout + out.stderr).splitlines() if "npu-jupyter" in ln), "")
    assert "enabled" in line and "OK" in line, out.stdout + out.stderr


def test_renderer_draws_the_summary_with_the_plan_counts(browser_run: dict[str, Any]) -> None:
    seen = browser_run["report"]
    summary = browser_run["bundles"]["report"][MIME_TYPE]["summary"]
    assert seen["summary"] is not None
    assert f"{summary['ops']}ops" in seen["summary"]
    assert f"{summary['ai_core']}AI Core" in seen["summary"]
    assert f"{summary['host']}Host" in seen["summary"]
    assert f"{summary['precision_changed']}precision changed" in seen["summary"]
    assert seen["title"] == "Plan of SGD/NoOp (Ascend910, allow_fp32_to_fp16)"


def test_renderer_draws_the_graph_with_ops_and_edges(browser_run: dict[str, Any]) -> None:
    seen = browser_run["report"]
    assert seen["graphOps"] >= 5
    assert seen["edges"] >= 5


def test_renderer_draws_one_table_row_per_op(browser_run: dict[str, Any]) -> None:
    seen = browser_run["report"]
    ops = browser_run["bundles"]["report"][MIME_TYPE]["ops"]
    assert seen["tableRows"] == len(ops)
    assert sorted(seen["tableNames"]) == sorted(op["n"] for op in ops)


def test_first_view_fits_the_graph_to_the_cell_width(browser_run: dict[str, Any]) -> None:
    for name in ("report", "big", "wide"):
        first = browser_run[name]["first"]
        assert first["graphScrollWidth"] <= first["graphClientWidth"] + 1, (name, first)
        assert 0 < first["svgWidth"] <= first["graphClientWidth"] + 1, (name, first)


def test_mixed_computing_host_op_and_transfer_lead_the_first_view(browser_run: dict[str, Any]) -> None:
    first = browser_run["report"]["first"]
    assert first["hostLead"] is not None and "IteratorGetNext" in first["hostLead"], first
    assert first["hostLeadOnScreen"] is True, first
    assert "IteratorGetNext → dense/MatMul (host → device, float32, 4.0 KiB)" in first["transfersLead"], first
    # The table opens with what matters: the host op that computes, before the precision changes.
    assert first["firstRows"][0] == "IteratorGetNext", first["firstRows"]


def test_training_sized_report_shows_its_host_op_without_scrolling(browser_run: dict[str, Any]) -> None:
    first = browser_run["big"]["first"]
    assert "IteratorGetNext" in (first["hostLead"] or ""), first
    assert first["hostLeadOnScreen"] is True, first
    assert first["firstRows"][0] == "IteratorGetNext", first["firstRows"]


def test_lab_view_in_chromium_shows_every_report_field(browser_run: dict[str, Any]) -> None:
    parity = Path(__file__).resolve().parents[2] / "labextension" / "test" / "parity-payload.json"
    markers = json.loads(parity.read_text(encoding="utf-8"))["markers"]
    shown = browser_run["parity"]["text"]
    missing = [(m["field"], part) for m in markers for part in m["text"].split("|") if part not in shown]
    assert missing == []
    facts = " | ".join(browser_run["parity"]["facts"])
    for expected in (
        "Dump folder: /dump-dir-marker",
        "Trace (open in Perfetto): /trace-marker.json",
        "Op summary CSV: /csv-marker.csv",
        "Costliest ops (mean per run, us-label-marker): core/op-marker",
        "First overflow (inf/NaN): overflow-op-marker",
        "Dump skipped step 53: skip-reason-marker",
    ):
        assert expected in facts, (expected, facts)
    assert browser_run["parity"]["security"] == {"pwned": None, "injectedImages": 0}


def test_clicking_a_table_row_highlights_the_op_in_graph_and_table(browser_run: dict[str, Any]) -> None:
    seen = browser_run["report"]
    target = seen["clickTarget"]
    assert target is not None
    assert seen["selection"]["graph"] == [target], seen["selection"]
    assert seen["selection"]["table"] == [target]
    assert "gradients/dense/Relu_grad/ReluGrad" in seen["selection"]["details"]


def test_reason_columns_get_most_of_the_table_width(browser_run: dict[str, Any]) -> None:
    seen = browser_run["report"]
    widths = seen["columnWidths"]
    reasons = widths["placement reason"] + widths["precision reason"]
    assert reasons > 0.4 * seen["tableWidth"], widths
    for narrow in ("#", "engine", "cluster"):
        assert widths[narrow] < 0.5 * widths["placement reason"], widths


def test_renderer_root_carries_the_report_mime_type(browser_run: dict[str, Any]) -> None:
    assert browser_run["report"]["mimeTypeAttr"] == MIME_TYPE


def test_subtitle_does_not_repeat_what_the_title_says(browser_run: dict[str, Any]) -> None:
    # The title names the SoC and the precision mode, so there is nothing left for the grey line.
    assert browser_run["report"]["subtitle"] is None


def test_fit_shows_the_whole_graph_without_scrolling(browser_run: dict[str, Any]) -> None:
    fit = browser_run["report"]["fit"]
    assert fit["svgWidth"] <= fit["viewWidth"] and fit["svgHeight"] <= fit["viewHeight"], fit
    assert not fit["scrollable"], fit


def test_precision_button_switches_the_colouring(browser_run: dict[str, Any]) -> None:
    assert browser_run["report"]["precisionMode"] is True


def test_no_script_from_a_report_runs(browser_run: dict[str, Any]) -> None:
    for name in ("report", "hostile"):
        assert browser_run[name]["security"] == {"pwned": None, "injectedImages": 0}, name
    assert browser_run["dialogs"] == []


def test_hostile_op_names_are_shown_as_text(browser_run: dict[str, Any]) -> None:
    seen = browser_run["hostile"]
    assert seen["markupInReport"] == 0
    assert sorted(seen["tableNames"]) == sorted([f"evil/{HOSTILE_IMG}", HOSTILE_SCRIPT])
    assert dict(zip(seen["tableNames"], seen["tableTypes"]))[f"evil/{HOSTILE_IMG}"] == HOSTILE_SCRIPT
    assert HOSTILE_IMG in seen["title"]
    assert any(HOSTILE_SCRIPT in text for text in seen["svgTexts"])


def test_pages_raise_no_uncaught_errors(browser_run: dict[str, Any]) -> None:
    assert browser_run["pageErrors"] == []


def test_training_graph_sized_report_renders_collapsed(browser_run: dict[str, Any]) -> None:
    big = browser_run["big"]
    ops = len(browser_run["bundles"]["big"][MIME_TYPE]["ops"])
    assert ops > 6500
    assert big["tableCount"] == f"{ops} of {ops} ops"
    assert 2 < big["graphBoxes"] <= 120
    assert big["boxesAfterExpand"] > big["boxesBefore"]
    assert big["revealed"] == 1
    timings = {k: big[k] for k in ("renderMs", "expandMs", "sortMs", "filterMs", "revealMs", "openMs")}
    print(f"\n7k-op report ({ops} ops) in Chromium, ms: {json.dumps(timings)}")


def test_screenshots_are_saved(browser_run: dict[str, Any]) -> None:
    """For a human to judge; what the page shows is asserted by the tests above."""
    for name in ("lab_renderer.png", "lab_renderer_first_view.png", "lab_renderer_run_facts.png"):
        shot = Path(__file__).resolve().parents[2] / "test-artifacts" / name
        assert shot.is_file() and shot.stat().st_size > 10_000, name
