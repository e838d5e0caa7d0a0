"""Every report field is shown by every view: the HTML fallback, the text fallback and the Lab renderer.

A payload with every field of the report schema (``npu_jupyter/_display/report_schema.json``) set to a unique marker is kept in
``labextension/test/parity-payload.json`` with the text each field must put on screen. Here the HTML
and text fallbacks are checked for every marker, the file is checked to cover every schema field
(and every key ``report_payload`` writes), and ``labextension/test/parity.test.ts`` checks the same
markers in the JupyterLab view. A field rendered by one view and not another fails one of them.

Regenerate the JSON after changing the markers: ``python tests/display/test_view_parity.py``.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from npu_jupyter._display import html, text
from npu_jupyter._display.facts import report_facts
from npu_jupyter._display.mime import SCHEMA, VERSION, report_payload
from npu_jupyter._plan.model import OpDecision, Plan, Subgraph, Transfer
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import DumpRecord, FunctionInfo, NonFiniteFinding, SkippedDump
from npu_jupyter.cost.attach import CostBlock, CostEstimate

REPO = Path(__file__).resolve().parents[2]
PARITY_FILE = REPO / "labextension" / "test" / "parity-payload.json"
SCHEMA_FILE = REPO / "npu_jupyter" / "_display" / "report_schema.json"

# Fields only the JupyterLab view shows, and why the fallbacks leave them out.
LAB_ONLY = {
    "ops[].i": "graph edges: only the Lab view draws the graph (its details pane lists inputs)",
    "ops[].c": "cluster membership: drawn as cluster boxes in the Lab graph; the fallbacks give the count",
    "clusters[].name": "cluster boxes of the Lab graph and table",
    "clusters[].size": "cluster boxes of the Lab graph",
    "ops[].e": "engine: a word and a colour in every view, too common to mark (checked by the table tests)",
}
# Structural fields no view prints as such.
NOT_SHOWN = {
    "schema": "constant identifying the payload",
    "version": "read, not shown (an unknown version shows a message instead of the report)",
    "kind": "plan or run: decides which sections exist",
    "ops[].pr": "an index: its reason text is the 'reasons' marker",
    "ops[].xr": "an index: its reason text is the 'reasons' marker",
    "transfers[].s": "an index: shown as its op's name in the transfers line",
    "transfers[].d": "an index: shown as its op's name in the transfers line",
    "functions[].name": "the traced name; a called function's op names start with it, views show its label",
    "ops[].dr.rmse": "kept for tools that read the payload; every view shows rel. RMSE, max abs and cos",
    "ops[].dr.accumulated_rel": "kept for tools that read the payload; every view shows rel. RMSE, max abs and cos",
    "ops[].dr.max_rel": "noisy where the reference is near 0: a row with rel_rmse shows that instead",
    "ops[].dr.ref_rms": "the scale the ranking's cancellation rule reads; views show its verdict (in_rel ...)",
    "ops[].dr.size": "the element count the ranking's cancellation rule reads; views show its verdict",
    "facts[].key": "the field a line shows: a data attribute of the Lab view's line (and which lines it links)",
    "facts[].tone": "a style: the colour of a problem, a path's link",
}


def marker_payload() -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A run payload with every documented field set, and the text each field must show."""
    ops = [
        {
            "n": "host/op-marker",
            "t": "HostType-marker",
            "e": "HOST",
            "d0": "float32",
            "d1": "float32",
            "c": -1,
            "pr": 2,
            "xr": 2,
            "i": [],
            "rf": "rf-marker",
            "us": 111.1,
            "approximate": True,
        },
        {
            "n": "core/op-marker",
            "t": "CoreType-marker",
            "e": "AI_CORE",
            "d0": "float64",
            "d1": "bfloat16",
            "c": 0,
            "pr": 0,
            "xr": 1,
            "i": [0],
            "us": 222.2,
            "dr": {
                "max_abs": 0.0123,
                "max_rel": 0.456,
                "cos": 0.9876,
                "rmse": 0.0031,
                "accumulated_rel": 0.0042,
                "rel_rmse": 0.0789,
                "step": 29,
                "ref_rms": 0.0051,
                "size": 64.0,
                "in_rel": 0.00456,
                "from_cancelled": True,
                "maybe_cancelled": True,
            },
            "ov": True,
            "est_us": 33.3,
        },
        {
            "n": "__inference_callee-fn-marker_2/cpu/op-marker",
            "t": "CpuType-marker",
            "e": "AI_CPU",
            "d0": "int32",
            "d1": "int32",
            "rd": "rd-marker",
            "c": 0,
            "pr": 0,
            "xr": 1,
            "i": [1],
            "f": 1,
        },
    ]
    payload = {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "run",
        "title": "Title-marker",
        "soc": "Soc-marker",
        "config": {"precision_mode": "cfg-marker"},
        "effective_precision_mode": "mode-marker",
        "summary": {
            "ops": 70001,
            "ai_core": 70002,
            "ai_cpu": 70003,
            "host": 70004,
            "precision_changed": 70005,
            "clusters": 70006,
            "transfers": 70007,
            "transfer_bytes": 7340032,
            "approximate": 70008,
        },
        "reasons": ["placement-reason-marker", "precision-reason-marker", "host-reason-marker"],
        "clusters": [{"name": "GeOp-cluster-marker", "size": 2}],
        "ops": ops,
        # two tensors of one op: the transfers line names each by its output slot
        "transfers": [
            {"s": 0, "o": 7, "d": 1, "dt": "int8", "b": 5120, "dir": "h2d"},
            {"s": 0, "o": 0, "d": 1, "dt": "int8", "b": 5120, "dir": "h2d"},
        ],
        "warnings": ["warning-marker"],
        "errors": ["error-marker"],
        "truncated": True,
        "notes": ["note-marker"],
        "predicted": True,
        "cost_model": {
            "step_ms": 7.654,
            "memory_bytes": 3145728,
            "step_ratio_fp32": 0.43,
            "memory_ratio_fp32": 0.56,
            "launch_share": 0.73,
            "basis": "basis-marker",
        },
        "labels": {
            "wall_ms": "wall-label-marker",
            "us": "us-label-marker",
            "est_us": "est-label-marker",
            "reference_wall_ms": "ref-label-marker",
        },
        "functions": [
            {"name": "__inference_top-fn-marker_1", "label": "top-fn-marker", "ops": 2},
            {"name": "__inference_callee-fn-marker_2", "label": "callee-fn-marker", "ops": 1},
        ],
        "run": {
            "backend": "backend-marker",
            "steps": 3,
            "unit": "call",
            "wall_ms": 9876.5,
            "reference_wall_ms": 5432.1,
            "first_overflow": "overflow-op-marker",
            "dump_dir": "/dump-dir-marker",
            "trace_file": "/trace-marker.json",
            "op_summary_csv": "/csv-marker.csv",
            "dump_steps": [41, 47],
            "dump_skipped": [{"step": 53, "reason": "skip-reason-marker"}],
            "nonfinite": {"first_op": "nonfinite-op-marker", "step": 59, "reason": "nonfinite-reason-marker"},
            "overflow_check": {"checked": 73, "mode": "debug-mode-marker", "storage": ["storage-marker"]},
            "prediction": "prediction-marker",
            "rounded_tensors": 83,
            "calls_from": [{"where": "caller-a-marker", "calls": 2}, {"where": "caller-b-marker", "calls": 1}],
            "drift_worst": [1],
            "adapter_outputs": [{"label": "output-label-marker", "path": "/output-path-marker", "exists": False}],
            "actual": {
                "files": ["ge-file-marker.txt"],
                "compared": 61,
                "differ": 67,
                "missing": 71,
                "error": "ge-error-marker",
                "rows": [
                    {
                        "n": "actual-op-marker",
                        "pe": "PE-marker",
                        "ae": "AE-marker",
                        "pd": ["pd-marker"],
                        "ad": ["ad-marker"],
                        "ge": "ge-op-marker",
                        "same": False,
                    }
                ],
            },
        },
    }
    shows = {
        "title": "Title-marker",
        "soc": "Soc-marker",
        "config": "cfg-marker",
        "effective_precision_mode": "mode-marker",
        "summary.ops": "70001",
        "summary.ai_core": "70002",
        "summary.ai_cpu": "70003",
        "summary.host": "70004",
        "summary.precision_changed": "70005",
        "summary.clusters": "70006",
        "summary.transfers": "70007",
        "summary.transfer_bytes": "7.0 MiB",
        "summary.approximate": "70008 decisions rest on approximate",
        "reasons": "placement-reason-marker|precision-reason-marker|host-reason-marker",
        "ops[].n": "host/op-marker|core/op-marker|cpu/op-marker",  # a called function's op: its short name
        "ops[].t": "HostType-marker|CoreType-marker",
        "ops[].d0": "float64",
        "ops[].d1": "bfloat16",
        "ops[].rd": "int32 (reads rd-marker)",
        "ops[].us": "111.1|222.2",
        "ops[].dr.max_abs": "max abs 0.0123",
        "ops[].dr.cos": "cos 0.9876",
        "ops[].dr.rel_rmse": "0.0789 against its own reference",
        "ops[].dr.in_rel": "rel. RMSE 0.00456 against its inputs' scale (reference ≈ 0 next to its inputs",
        "ops[].dr.from_cancelled": "computes from a cancelled value: its float32 reference is rounding noise",
        "ops[].dr.maybe_cancelled": "may compute from a cancelled value (reads a multi-output copy of one)",
        "ops[].dr.step": "step 29",
        "ops[].rf": "inputs rf-marker, output float32",
        "run.drift_worst": "core/op-marker rel. RMSE 0.00456",
        "ops[].ov": "⚠ overflow",
        "ops[].est_us": "core/op-marker 33.3 µs",
        "ops[].approximate": "≈ approximate",
        "transfers[].o": "host/op-marker:7 → core/op-marker",
        "transfers[].dt": "int8",
        "transfers[].b": "5.0 KiB",
        "transfers[].dir": "host/op-marker:7 → core/op-marker (host → device",
        "warnings": "warning-marker",
        "errors": "error-marker",
        "truncated": "truncated to stay under 1 MB",
        "notes": "note-marker",
        "predicted": "predicted by the planner, not read from the device",
        "cost_model.step_ms": "7.654 ms",
        "cost_model.memory_bytes": "3.0 MiB",
        "cost_model.step_ratio_fp32": "0.43× float32",
        "cost_model.memory_ratio_fp32": "0.56× float32",
        "cost_model.launch_share": "73% of it is fixed launch and copy latency",
        "cost_model.basis": "basis-marker",
        "labels.wall_ms": "wall-label-marker",
        "labels.us": "us-label-marker",
        "labels.est_us": "est-label-marker",
        "labels.reference_wall_ms": "ref-label-marker",
        "run.backend": "backend-marker",
        "run.steps": "3 calls",  # a traced function's report counts calls
        "run.unit": "3 calls",  # what steps counts, shown with them
        "run.wall_ms": "9876.5",
        "run.reference_wall_ms": "5432.1",
        "run.first_overflow": "overflow-op-marker",
        "run.dump_dir": "/dump-dir-marker",
        "run.trace_file": "/trace-marker.json",
        "run.op_summary_csv": "/csv-marker.csv",
        "run.dump_steps": "41, 47",
        "run.dump_skipped.step": "step 53",
        "run.dump_skipped.reason": "skip-reason-marker",
        "run.nonfinite.first_op": "nonfinite-op-marker",
        "run.nonfinite.step": "at step 59",
        "run.nonfinite.reason": "nonfinite-reason-marker",
        "run.overflow_check.checked": "73 calls checked, inf/NaN found",
        "run.overflow_check.mode": "dump_debug_mode debug-mode-marker",
        "run.overflow_check.storage": "emulated storage-marker storage on this CPU",
        "run.prediction": "prediction-marker",
        "run.rounded_tensors": "83 half-precision roundings",
        "run.calls_from.where": "caller-a-marker|caller-b-marker",
        "run.calls_from.calls": "3 calls: 2 caller-a-marker, 1 caller-b-marker",  # the split of the calls
        "functions[].label": "top-fn-marker|callee-fn-marker|top-fn-marker and the 1 function it calls",
        "functions[].ops": "(2 ops) calls|(1 op)",
        "ops[].f": "callee-fn-marker",
        "run.adapter_outputs.label": "output-label-marker",
        "run.adapter_outputs.path": "/output-path-marker",
        "run.adapter_outputs.exists": "(not written yet)",
        "run.actual.files": "ge-file-marker.txt",
        "run.actual.compared": "61 ops compared",
        "run.actual.differ": "67 differ",
        "run.actual.missing": "71 predicted device ops",
        "run.actual.error": "ge-error-marker",
        "run.actual.rows.n": "actual-op-marker",
        "run.actual.rows.pe": "PE-marker",
        "run.actual.rows.ae": "AE-marker",
        "run.actual.rows.pd": "pd-marker",
        "run.actual.rows.ad": "ad-marker",
        "run.actual.rows.ge": "ge-op-marker",
        "run.actual.rows.same": "DIFFERS",
        "facts[].label": "First non-finite value|Dump folder|NPU step",
        "facts[].text": "nonfinite-op-marker at step 59: nonfinite-reason-marker",
    }
    payload["facts"] = [fact._asdict() for fact in report_facts(payload)]  # as report_payload ships them
    markers = [{"field": field, "text": marker} for field, marker in shows.items()]
    return payload, markers


def _leaf_fields(value: Any, prefix: str = "") -> set[str]:
    """Field paths of a payload, list items as ``[]``; ``config`` and ``labels`` keys are free-form."""
    if isinstance(value, dict) and prefix != "config":
        out: set[str] = set()
        for key, item in value.items():
            out |= _leaf_fields(item, f"{prefix}.{key}" if prefix else key)
        return out
    if isinstance(value, list) and value and isinstance(value[0], dict):
        out = set()
        for item in value:
            out |= _leaf_fields(item, f"{prefix}[]")
        return out
    return {prefix}


def _documented_fields() -> set[str]:
    """Field paths the schema describes (``report_schema.json``, whose tables docs/report-schema.md shows).

    ``config`` is free-form (option names), so it is one field; ``labels`` counts its named fields.
    """
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    fields: set[str] = set()

    def visit(prefix: str, node: dict[str, Any]) -> None:
        for key, prop in node.get("properties", {}).items():
            path = f"{prefix}.{key}" if prefix else key
            target, suffix = (prop["items"], "[]") if "items" in prop else (prop, "")
            refs = [part.get("$ref", "") for part in target.get("anyOf", [target])]
            objects = [schema["definitions"][ref.rsplit("/", 1)[1]] for ref in refs if ref]
            objects = [o for o in objects if o.get("properties")]
            if objects:
                visit(path + suffix, objects[0])
            else:
                fields.add(path)

    visit("", schema)
    return fields


def _normalise(fields: set[str]) -> set[str]:
    """``run.dump_skipped[].step`` and ``run.dump_skipped.step`` name the same field."""
    return {field.replace("[]", "") if field.startswith("run.") else field for field in fields}


def _full_run_report() -> RunReport:
    """A RunReport with every optional fact filled the way other stages fill them."""
    host = OpDecision("x", "IteratorGetNext", "host", "HOST", "host-kept", "float32", "float32", "kept", None)
    mm = OpDecision(
        "mm", "MatMul", "device", "AI_CORE", "supported", "float32", "float16", "white list", "GeOp1_0", inputs=["x"]
    )
    mm.approximate = True  # type: ignore[attr-defined]
    plan = Plan(
        ops={"x": host, "mm": mm},
        subgraphs=[Subgraph("GeOp1_0", ["mm"])],
        transfers=[Transfer("x", "mm", "x:0", "float32", "h2d", 64)],
        warnings=["w"],
        errors=["e"],
        config_changes={"precision_mode": "force_fp16"},
        notes=["replicated"],
    )
    return RunReport(
        plan=plan,
        steps=2,
        wall_ms=1.0,
        reference_wall_ms=2.0,
        op_times_us={"mm": 3.0},
        drift={"mm": {"max_abs": 0.1, "max_rel": 0.2, "cos": 0.9}},
        overflow_ops=["mm"],
        first_overflow="mm",
        dump_dir="/d",
        trace_file="/t",
        op_summary_csv="/c",
        warnings=["dump budget"],
        cost=CostEstimate(CostBlock(1.0, 10, 0.5, 0.5, "b", launch_share=0.25), {"mm": 1.5}),
        predicted=True,
        dump=DumpRecord(steps=(0, 1), skipped=(SkippedDump(2, "budget"),)),
        notes=["n"],
        non_finite=NonFiniteFinding(1, "mm", "mm", "inf", "Step 1: inf"),
        function=FunctionInfo("Keras evaluate (test function)", "mm", ("mm",), titled="in Keras evaluate")
        .called("during Keras fit (validation)")
        .called("in Keras evaluate"),
    )


def _views() -> dict[str, str]:
    payload, _ = marker_payload()
    return {
        "html": unescape(re.sub(r"<[^>]+>", " ", html.render(payload, detail="full"))),
        "text": text.render(payload, detail="full"),
    }


def test_parity_file_is_the_current_marker_payload() -> None:
    payload, markers = marker_payload()
    stored = json.loads(PARITY_FILE.read_text(encoding="utf-8"))
    assert stored == {"payload": payload, "markers": markers, "lab_only": LAB_ONLY}, (
        "labextension/test/parity-payload.json is stale: run python tests/display/test_view_parity.py"
    )


def test_marker_payload_sets_every_documented_field_and_only_those() -> None:
    payload, _ = marker_payload()
    assert _leaf_fields(payload) == _documented_fields()


def test_every_field_report_payload_writes_is_documented() -> None:
    written = _leaf_fields(report_payload(_full_run_report()))
    documented = _documented_fields()
    # An empty list or a null written for a documented object names its container, not a new field.
    containers = {f for f in written if any(d.startswith((f + ".", f + "[]")) for d in documented)}
    assert written - documented - containers == set()


def test_every_marked_field_is_a_payload_field_and_every_field_is_marked_or_exempt() -> None:
    payload, markers = marker_payload()
    fields = _normalise(_leaf_fields(payload))
    marked = {m["field"] for m in markers}
    assert _normalise(marked) - fields == set(), "markers name fields the payload does not have"
    exempt = set(LAB_ONLY) | set(NOT_SHOWN)
    assert fields - _normalise(marked) - exempt == set(), "fields with no marker: add one or declare why not"


@pytest.mark.parametrize("view", ["html", "text"])
def test_fallback_view_shows_every_field(view: str) -> None:
    _, markers = marker_payload()
    shown = _views()[view]
    missing = [(m["field"], part) for m in markers for part in m["text"].split("|") if part not in shown]
    assert missing == [], f"{view} view does not show: {missing}"


def test_fallbacks_leave_out_the_lab_only_markers() -> None:
    """The exemptions are real: if a fallback starts showing a cluster, the LAB_ONLY table must shrink."""
    for shown in _views().values():
        assert "GeOp-cluster-marker" not in shown


if __name__ == "__main__":
    payload, markers = marker_payload()
    PARITY_FILE.write_text(
        json.dumps({"payload": payload, "markers": markers, "lab_only": LAB_ONLY}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {PARITY_FILE}")
