"""Browser-test fixtures: report notebooks written by the real payload code, and a JupyterLab server.

The notebooks' outputs are ``npu_jupyter._display.mime.mimebundle`` of :class:`Plan` objects, so the
browser sees exactly the bundle a user's notebook would hold (our MIME type next to the HTML and text
fallbacks). The plans are built from the plan dataclasses directly: the browser test checks the
renderer, not the planner, and must not depend on TensorFlow or on planner decisions changing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
UI_DIR = Path(__file__).resolve().parent
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")

HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE_SCRIPT = "<script>window.__pwned=2</script>"

_CORE = "supported on AI Core (aic kernel)"
_CPU = "no AI Core kernel for this op: runs on AI CPU"
_HOST = "mixed computing: resource/iterator op stays on the host"
_FP16 = "allow_fp32_to_fp16: float32 op with a float16 AI Core kernel is cast to float16"
_KEEP = "kept float32: op has no float16 kernel"
_NOFLOAT = "not a float op"


def _decision(
    name: str,
    op_type: str,
    engine: str,
    inputs: list[str],
    *,
    to16: bool = False,
    float_op: bool = True,
    cluster: str | None = "GeOp1_0",
) -> Any:
    """One OpDecision with the reason texts the planner writes for such an op."""
    from npu_jupyter._plan.model import OpDecision

    on_host = engine == "HOST"
    before = "float32" if float_op else "int32"
    return OpDecision(
        name=name,
        op_type=op_type,
        placement="host" if on_host else "device",
        engine=engine,  # type: ignore[arg-type]
        placement_reason=_HOST if on_host else (_CPU if engine == "AI_CPU" else _CORE),
        dtype_before=before,
        dtype_after="float16" if to16 else before,
        precision_reason=_FP16 if to16 else (_KEEP if float_op else _NOFLOAT),
        cluster=None if on_host else cluster,
        inputs=inputs,
    )


def small_training_plan() -> Any:
    """A two-layer MLP training step: forward, loss, gradients, SGD updates, with a host input."""
    from npu_jupyter._plan.model import Plan, Subgraph, Transfer

    ops = [
        _decision("IteratorGetNext", "IteratorGetNext", "HOST", []),
        _decision("dense/kernel/Read/ReadVariableOp", "ReadVariableOp", "AI_CORE", []),
        _decision(
            "dense/MatMul", "MatMul", "AI_CORE", ["IteratorGetNext", "dense/kernel/Read/ReadVariableOp"], to16=True
        ),
        _decision("dense/BiasAdd", "BiasAdd", "AI_CORE", ["dense/MatMul"], to16=True),
        _decision("dense/Relu", "Relu", "AI_CORE", ["dense/BiasAdd"], to16=True),
        _decision("dense_1/kernel/Read/ReadVariableOp", "ReadVariableOp", "AI_CORE", []),
        _decision(
            "dense_1/MatMul", "MatMul", "AI_CORE", ["dense/Relu", "dense_1/kernel/Read/ReadVariableOp"], to16=True
        ),
        _decision(
            "loss/SparseSoftmaxCrossEntropyWithLogits",
            "SparseSoftmaxCrossEntropyWithLogits",
            "AI_CORE",
            ["dense_1/MatMul", "IteratorGetNext"],
        ),
        _decision("loss/Mean", "Mean", "AI_CORE", ["loss/SparseSoftmaxCrossEntropyWithLogits"]),
        _decision("gradients/loss/Mean_grad/Tile", "Tile", "AI_CORE", ["loss/Mean"]),
        _decision(
            "gradients/dense_1/MatMul_grad/MatMul",
            "MatMul",
            "AI_CORE",
            ["gradients/loss/Mean_grad/Tile", "dense_1/kernel/Read/ReadVariableOp"],
            to16=True,
        ),
        _decision(
            "gradients/dense_1/MatMul_grad/MatMul_1",
            "MatMul",
            "AI_CORE",
            ["dense/Relu", "gradients/loss/Mean_grad/Tile"],
            to16=True,
        ),
        _decision(
            "gradients/dense/Relu_grad/ReluGrad",
            "ReluGrad",
            "AI_CORE",
            ["gradients/dense_1/MatMul_grad/MatMul", "dense/Relu"],
            to16=True,
        ),
        _decision(
            "gradients/dense/BiasAdd_grad/BiasAddGrad", "BiasAddGrad", "AI_CORE", ["gradients/dense/Relu_grad/ReluGrad"]
        ),
        _decision(
            "gradients/dense/MatMul_grad/MatMul_1",
            "MatMul",
            "AI_CORE",
            ["IteratorGetNext", "gradients/dense/Relu_grad/ReluGrad"],
            to16=True,
        ),
        _decision("gradients/dense/MatMul_grad/Shape", "Shape", "AI_CPU", ["IteratorGetNext"], float_op=False),
        _decision(
            "SGD/update_dense/ResourceApplyGradientDescent",
            "ResourceApplyGradientDescent",
            "AI_CORE",
            ["gradients/dense/MatMul_grad/MatMul_1"],
        ),
        _decision(
            "SGD/update_dense_1/ResourceApplyGradientDescent",
            "ResourceApplyGradientDescent",
            "AI_CORE",
            ["gradients/dense_1/MatMul_grad/MatMul_1"],
        ),
        _decision(
            "SGD/NoOp",
            "NoOp",
            "HOST",
            ["SGD/update_dense/ResourceApplyGradientDescent", "SGD/update_dense_1/ResourceApplyGradientDescent"],
            float_op=False,
        ),
    ]
    return Plan(
        ops={d.name: d for d in ops},
        subgraphs=[Subgraph("GeOp1_0", [d.name for d in ops if d.engine != "HOST"])],
        transfers=[Transfer("IteratorGetNext", "dense/MatMul", "IteratorGetNext:0", "float32", "h2d", 4096)],
        warnings=["IteratorGetNext stays on the host: every step copies the batch to the device"],
        soc="Ascend910",
        precision_mode="allow_fp32_to_fp16",
        config_changes={"precision_mode": "allow_fp32_to_fp16", "mix_compile_mode": True},
        title="Plan of SGD/NoOp (Ascend910, allow_fp32_to_fp16)",
    )


def hostile_plan() -> Any:
    """Op names, types, reasons, title and messages that would run script if inserted as HTML."""
    from npu_jupyter._plan.model import OpDecision, Plan

    evil = f"evil/{HOSTILE_IMG}"
    ops = [
        OpDecision(
            name=evil,
            op_type=HOSTILE_SCRIPT,
            placement="device",
            engine="AI_CORE",
            placement_reason=HOSTILE_IMG,
            dtype_before="float32",
            dtype_after="float16",
            precision_reason=HOSTILE_SCRIPT,
            cluster="GeOp1_0",
        ),
        OpDecision(
            name=HOSTILE_SCRIPT,
            op_type="MatMul",
            placement="host",
            engine="HOST",
            placement_reason='<a href="javascript:window.__pwned=3">x</a>',
            dtype_before="float32",
            dtype_after="float32",
            precision_reason=HOSTILE_IMG,
            cluster=None,
            inputs=[evil],
        ),
    ]
    return Plan(
        ops={d.name: d for d in ops},
        warnings=[HOSTILE_SCRIPT],
        errors=[HOSTILE_IMG],
        soc=HOSTILE_IMG,
        precision_mode=HOSTILE_SCRIPT,
        title=f'<b onmouseover="window.__pwned=4">{HOSTILE_IMG}</b>',
    )


# Bottleneck blocks per stage of ResNet-50 (3, 4, 6, 3), as Keras names them.
_STAGES = [(2, 3), (3, 4), (4, 6), (5, 3)]


def _resnet50_layers() -> list[tuple[str, str]]:
    """(layer name, kind) of ResNet-50 in Keras naming: conv / bn / relu / add / dense."""
    layers = [("conv1_conv", "conv"), ("conv1_bn", "bn"), ("conv1_relu", "relu")]
    for stage, blocks in _STAGES:
        for b in range(1, blocks + 1):
            p = f"conv{stage}_block{b}"
            if b == 1:
                layers += [(f"{p}_0_conv", "conv"), (f"{p}_0_bn", "bn")]
            for k in (1, 2, 3):
                layers += [(f"{p}_{k}_conv", "conv"), (f"{p}_{k}_bn", "bn")]
                if k < 3:
                    layers.append((f"{p}_{k}_relu", "relu"))
            layers += [(f"{p}_add", "add"), (f"{p}_out", "relu")]
    layers += [("avg_pool", "pool"), ("predictions", "dense")]
    return layers


# Ops a traced Keras train step holds per layer kind: forward, gradient, optimizer (per variable).
_FORWARD = {
    "conv": [
        ("ReadVariableOp", "AI_CORE", False),
        ("Cast", "AI_CORE", True),
        ("Conv2D", "AI_CORE", True),
        ("BiasAdd", "AI_CORE", True),
    ],
    "bn": [
        ("ReadVariableOp", "AI_CORE", False),
        ("ReadVariableOp_1", "AI_CORE", False),
        ("ReadVariableOp_2", "AI_CORE", False),
        ("ReadVariableOp_3", "AI_CORE", False),
        ("FusedBatchNormV3", "AI_CORE", False),
        ("AssignMovingAvg/sub", "AI_CORE", False),
        ("AssignMovingAvg/mul", "AI_CORE", False),
        ("AssignMovingAvg", "AI_CORE", False),
        ("AssignMovingAvg_1/sub", "AI_CORE", False),
        ("AssignMovingAvg_1/mul", "AI_CORE", False),
        ("AssignMovingAvg_1", "AI_CORE", False),
    ],
    "relu": [("Relu", "AI_CORE", True)],
    "add": [("add", "AI_CORE", True)],
    "pool": [("Mean", "AI_CORE", False)],
    "dense": [
        ("ReadVariableOp", "AI_CORE", False),
        ("MatMul", "AI_CORE", True),
        ("BiasAdd", "AI_CORE", True),
        ("Softmax", "AI_CORE", False),
    ],
}
_GRAD = {
    "conv": [
        ("Conv2D/Conv2DBackpropInput", "AI_CORE", True),
        ("Conv2D/Conv2DBackpropFilter", "AI_CORE", True),
        ("Conv2D/ShapeN", "AI_CPU", False),
        ("BiasAdd/BiasAddGrad", "AI_CORE", True),
        ("Cast/Cast", "AI_CORE", False),
        ("Conv2D/Identity", "AI_CORE", False),
        ("Conv2D/Identity_1", "AI_CORE", False),
        ("BiasAdd/Identity", "AI_CORE", False),
        ("Conv2D/Reshape", "AI_CORE", False),
        ("Conv2D/Cast", "AI_CORE", False),
    ],
    "bn": [
        ("FusedBatchNormV3/FusedBatchNormGradV3", "AI_CORE", False),
        ("FusedBatchNormV3/Shape", "AI_CPU", False),
        ("FusedBatchNormV3/Reshape", "AI_CORE", False),
        ("FusedBatchNormV3/mul", "AI_CORE", False),
        ("FusedBatchNormV3/mul_1", "AI_CORE", False),
        ("FusedBatchNormV3/Sum", "AI_CORE", False),
        ("FusedBatchNormV3/Sum_1", "AI_CORE", False),
        ("FusedBatchNormV3/sub", "AI_CORE", False),
        ("FusedBatchNormV3/Identity", "AI_CORE", False),
    ],
    "relu": [("Relu/ReluGrad", "AI_CORE", True)],
    "add": [
        ("add/Shape", "AI_CPU", False),
        ("add/Shape_1", "AI_CPU", False),
        ("add/BroadcastGradientArgs", "AI_CPU", False),
        ("add/Sum", "AI_CORE", False),
        ("add/Reshape", "AI_CORE", False),
        ("add/Sum_1", "AI_CORE", False),
        ("add/Reshape_1", "AI_CORE", False),
    ],
    "pool": [("Mean/Shape", "AI_CPU", False), ("Mean/truediv", "AI_CORE", False), ("Mean/Tile", "AI_CORE", False)],
    "dense": [
        ("MatMul/MatMul", "AI_CORE", True),
        ("MatMul/MatMul_1", "AI_CORE", True),
        ("BiasAdd/BiasAddGrad", "AI_CORE", True),
        ("Softmax/mul", "AI_CORE", False),
        ("Softmax/Sum", "AI_CORE", False),
        ("Softmax/sub", "AI_CORE", False),
    ],
}
_VARIABLES = {"conv": ["kernel", "bias"], "bn": ["gamma", "beta"], "dense": ["kernel", "bias"]}
_UPDATE = [
    ("ReadVariableOp", "AI_CORE", False),
    ("Cast", "AI_CORE", False),
    ("mul", "AI_CORE", False),
    ("mul_1", "AI_CORE", False),
    ("Identity", "AI_CORE", False),
    ("ResourceApplyKerasMomentum", "AI_CORE", False),
    ("IsFinite", "AI_CORE", False),
    ("All", "AI_CPU", False),
    ("Select", "AI_CORE", False),
    ("AssignAddVariableOp", "AI_CORE", False),
    ("NoOp", "HOST", False),
    ("clip/Minimum", "AI_CORE", False),
    ("clip/Maximum", "AI_CORE", False),
    ("mul_2", "AI_CORE", False),
    ("add", "AI_CORE", False),
    ("Sqrt", "AI_CORE", False),
    ("truediv", "AI_CORE", False),
    ("sub", "AI_CORE", False),
    ("Identity_1", "AI_CORE", False),
    ("ReadVariableOp_1", "AI_CORE", False),
    ("Cast_1", "AI_CORE", False),
    ("Square", "AI_CORE", False),
    ("Sum", "AI_CORE", False),
]


def resnet50_like_plan() -> Any:
    """A plan the size and shape of a ResNet-50 Keras training step (~7k ops, real Keras scope names).

    Synthetic: the browser test measures the renderer, which must not wait for a TensorFlow trace.
    """
    from npu_jupyter._plan.model import Plan, Subgraph

    ops: list[Any] = [_decision("IteratorGetNext", "IteratorGetNext", "HOST", [])]
    prev = "IteratorGetNext"
    outputs: dict[str, str] = {}
    layers = _resnet50_layers()
    for layer, kind in layers:
        chain = prev
        for suffix, engine, to16 in _FORWARD[kind]:
            name = f"resnet50/{layer}/{suffix}"
            ops.append(
                _decision(name, suffix.split("/")[-1].rstrip("_0123456789") or suffix, engine, [chain], to16=to16)
            )
            chain = name
        outputs[layer] = prev = chain
    ops.append(_decision("loss/Mean", "Mean", "AI_CORE", [prev]))
    grad = "loss/Mean"
    for layer, kind in reversed(layers):
        chain = grad
        for suffix, engine, to16 in _GRAD[kind]:
            name = f"gradient_tape/resnet50/{layer}/{suffix}"
            op_type = suffix.split("/")[-1].rstrip("_0123456789")
            ops.append(
                _decision(name, op_type, engine, [chain, outputs[layer]], to16=to16, float_op=engine != "AI_CPU")
            )
            chain = name
        grad = chain
        for var in _VARIABLES.get(kind, []):
            chain = grad
            for step, engine, _ in _UPDATE:
                name = f"SGD/SGD/update_{layer}_{var}/{step}"
                ops.append(_decision(name, step.rstrip("_0123456789"), engine, [chain], float_op=engine != "HOST"))
                chain = name
    from npu_jupyter._plan.model import Transfer

    device = [d.name for d in ops if d.engine != "HOST"]
    return Plan(
        ops={d.name: d for d in ops},
        subgraphs=[Subgraph("GeOp1_0", device)],
        transfers=[
            Transfer("IteratorGetNext", ops[1].name, "IteratorGetNext:0", "float32", "h2d", 224 * 224 * 3 * 4 * 32)
        ],
        warnings=["AI CPU ops split the graph into smaller device launches"],
        soc="Ascend910",
        precision_mode="allow_fp32_to_fp16",
        config_changes={"precision_mode": "allow_fp32_to_fp16"},
        title="Plan of ResNet-50 train step (Ascend910, allow_fp32_to_fp16)",
    )


def wide_plan() -> Any:
    """48 independent ops side by side (no scopes to collapse): a drawing far wider than any cell."""
    from npu_jupyter._plan.model import Plan, Subgraph

    ops = [_decision(f"matmul_{k}", "MatMul", "AI_CORE", [], to16=True) for k in range(48)]
    return Plan(
        ops={d.name: d for d in ops},
        subgraphs=[Subgraph("GeOp1_0", [d.name for d in ops])],
        soc="Ascend910",
        precision_mode="allow_fp32_to_fp16",
        title="Plan of 48 branches",
    )


def tutorial_comparison() -> Any:
    """A comparison shaped like tutorial 04's: 218 tensors in dump order, 20 of them differ (scattered)."""
    import npu_jupyter  # noqa: F401 - registers the display layer's HTML renderers
    from npu_jupyter._runtime.observe.compare import Comparison, Row

    rows = []
    for k in range(218):
        name = f"gradients/sequential_1/dense_{k}/MatMul_grad/MatMul_1" if k % 11 == 3 else f"op_{k}/Identity"
        err = 1e-3 * (k % 7 + 1) if k % 11 == 3 else 0.0
        rows.append(Row(k % 2, name, "output:0", (32, 64), 1.0 - err / 10, err, err * 3, err / 2, err / 4))
    return Comparison(rows, [], [], title="Comparison of two dumps")


def tutorial_sweep() -> Any:
    """A sweep shaped like tutorial 03's: nine modes, three the adapter would refuse, one overflow."""
    import npu_jupyter  # noqa: F401
    from npu_jupyter._sweep import SweepRow, SweepTable

    refusals = {
        "must_keep_origin_dtype": "conv (Conv2D): no AI Core or AI CPU kernel supports float32 under "
        "must_keep_origin_dtype: the graph fails to compile",
        "allow_fp32_to_bf16": "Current soc not support dtype of BFloat16 (allow_fp32_to_bf16 on Ascend910)",
        "allow_mix_precision_bf16": "Current soc not support dtype of BFloat16 (allow_mix_precision_bf16 on Ascend910)",
    }
    modes = [
        "force_fp32",
        "cube_fp16in_fp32out",
        "must_keep_origin_dtype",
        "allow_fp32_to_fp16",
        "allow_fp32_to_bf16",
        "allow_mix_precision",
        "allow_mix_precision_fp16",
        "allow_mix_precision_bf16",
        "force_fp16",
    ]
    rows = [
        SweepRow(
            mode,
            wall_ms=0.404 + k / 100,
            ops_changed=k,
            max_abs=0.00203,
            max_rel=0.00222,
            cosine=0.999998,
            worst_op="sequential_1/conv2d_1/Relu",
            rel_rmse=0.000434,
            worst_op_rel_rmse=0.000415,
            first_overflow="sequential_1/conv2d_1/Square" if mode == "force_fp16" else None,
            plan_errors=[refusals[mode]] if mode in refusals else [],
            est_step_ms=0.03066,
            est_step_vs_fp32=0.99,
            est_memory_bytes=510_669,
            est_memory_vs_fp32=0.97,
            timed_steps=3,
        )
        for k, mode in enumerate(modes)
    ]
    return SweepTable(rows, ["probs:0"])


def keras_run_report() -> Any:
    """A Keras train step run with --dump --profile --reference: bookkeeping around the user's layers,
    one AI CPU op, an overflow deep in a scope, per-op times, drift and estimates."""
    from npu_jupyter._plan.model import Plan, Subgraph
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._runtime.report_records import FunctionInfo
    from npu_jupyter.cost.attach import CostEstimate

    ops: list[Any] = []

    def add(name: str, op_type: str, engine: str = "AI_CORE", *, to16: bool = False, float_op: bool = True) -> str:
        ops.append(_decision(name, op_type, engine, [ops[-1].name] if ops else [], to16=to16, float_op=float_op))
        return name

    add("iterator", "IteratorGetNext", "HOST")
    for k in range(12):
        add(f"StatefulPartitionedCall/adam/update_{k}/ReadVariableOp", "ReadVariableOp")
        add(f"StatefulPartitionedCall/adam/update_{k}/ResourceApplyAdam", "ResourceApplyAdam")
        add(f"StatefulPartitionedCall/metrics/mean_{k}/AssignAddVariableOp", "AssignAddVariableOp")
    for k in range(4):
        add(f"sequential_1_1/conv2d_{k}_1/convolution", "Conv2D", to16=True)
        add(f"sequential_1_1/conv2d_{k}_1/Relu", "Relu", to16=True)
    overflow = add("sequential_1_1/regularization/squared_activations/Square", "Square", to16=True)
    add("sequential_1_1/compile_metrics/accuracy/Bitcast", "Bitcast", "AI_CPU", float_op=False)
    plan = Plan(
        ops={d.name: d for d in ops},
        subgraphs=[Subgraph("GeOp1_0", [d.name for d in ops if d.engine != "HOST"])],
        soc="Ascend910",
        precision_mode="allow_mix_precision",
        config_changes={"precision_mode": "allow_mix_precision"},
        title=f"{len(ops)} ops · TF2 adapter (npu_device): whole function on the NPU · allow_mix_precision "
        "(precision_mode) · Ascend910",
    )
    names = [d.name for d in ops]
    drift = {
        n: {"max_abs": 0.002 * (k + 1), "max_rel": 0.01 * (k + 1), "cos": 0.9999} for k, n in enumerate(names[-8:])
    }
    # The overflowed op's errors are inf/NaN (null in the payload): the report must render anyway.
    drift[overflow] = {"max_abs": float("inf"), "max_rel": float("inf"), "cos": float("nan")}
    return RunReport(
        plan=plan,
        fetches=["__inference_multi_step_on_iterator_578"],
        steps=4,
        wall_ms=12.5,
        reference_wall_ms=9.0,
        op_times_us={n: 5.0 + (k % 9) for k, n in enumerate(names)},
        drift=drift,
        overflow_ops=[overflow],
        first_overflow=overflow,
        dump_dir="npu_dump",
        trace_file="npu_prof/trace_step_0.json",
        cost=CostEstimate(est_us=dict.fromkeys(names, 5.0)),
        function=FunctionInfo("Keras fit (train function)", "__inference_multi_step_on_iterator_578"),
    )


def parity_markers() -> dict[str, Any]:
    """The marker payload of the view-parity test (every field set) and the text each field shows."""
    return json.loads((REPO / "labextension" / "test" / "parity-payload.json").read_text(encoding="utf-8"))


def write_report_notebook(path: Path, plan: Any, *, budget: int | None = None) -> dict[str, Any]:
    """Write a one-cell notebook whose output is the plan's MIME bundle; return the bundle.

    ``budget`` raises the payload's byte budget (the default 1 MB truncates a 7k-op plan), so the
    render time is measured on every op of a training graph.
    """
    import nbformat

    from npu_jupyter._display.mime import MIME_TYPE, mimebundle, report_payload

    bundle = mimebundle(plan)
    if budget is not None:
        bundle[MIME_TYPE] = report_payload(plan, budget=budget)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell("npu_jupyter.plan(train_op)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return bundle


def write_html_notebook(path: Path, obj: Any, source: str) -> dict[str, Any]:
    """A one-cell notebook whose output is ``obj``'s HTML and text, as IPython shows it; return the bundle."""
    import nbformat

    bundle = {"text/html": obj._repr_html_(), "text/plain": repr(obj)}
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=bundle, execution_count=1)]
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return bundle


def write_payload_notebook(path: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """A one-cell notebook whose output is a ready payload (and its text fallback); return the bundle."""
    import nbformat

    from npu_jupyter._display import text
    from npu_jupyter._display.mime import MIME_TYPE

    bundle = {MIME_TYPE: payload, "text/plain": text.render(payload)}
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell("report")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return bundle


def _this_trees_extension(base: Path) -> dict[str, str]:
    """Environment that makes JupyterLab load the extension built from this tree, when it is built.

    The venv may have another checkout's build installed (an editable install points at it); a data
    dir first on ``JUPYTER_PATH`` wins, so the browser tests check the renderer of the code under test.
    """
    built = REPO / "labextension" / "npu_jupyter_lab" / "labextension"  # outputDir in labextension/package.json
    if not (built / "package.json").is_file():
        return {}
    data = base / "data"
    (data / "labextensions").mkdir(parents=True)
    (data / "labextensions" / "npu-jupyter").symlink_to(built, target_is_directory=True)
    paths = [str(data)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    return {"JUPYTER_PATH": os.pathsep.join(paths)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - localhost only
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer {url} in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """JupyterLab from this venv on a free localhost port with a token, in a temp root dir.

    Config, runtime, settings and workspace dirs are temporary so nothing a developer configured
    leaks in; the labextension comes from the installed package (share/jupyter/labextensions).
    """
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    # No "receive Jupyter news?" toast over the screenshot.
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    port = _free_port()
    token = secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    env.update(_this_trees_extension(base))
    # ipykernel forwards what native code writes to descriptor 2 into the cell's output unless it runs
    # under pytest (it checks PYTEST_CURRENT_TEST); the kernels here must show what a user's would.
    env.pop("PYTEST_CURRENT_TEST", None)
    log = base / "lab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.port_retries=0",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:  # CI containers run as root; the server refuses that unless told
        cmd.append("--allow-root")
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/api/status?token={token}", proc, log)
        yield {"base": f"http://127.0.0.1:{port}", "token": token, "root": root, "log": log}
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and the kernels it started (its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def drive_browser(
    script: str, config: dict[str, Any], lab_server: dict[str, Any], *, timeout: float = 600, show_seen: bool = False
) -> dict[str, Any]:
    """Run one browser driver (``tests/ui/<script>``) over ``config``; return the JSON it printed last.

    The config gets the Lab server's address and token, Chromium's path and the artifacts folder. A
    driver that crashed, printed nothing or reported ``fatal`` fails the test with its stderr and the
    Lab log (and, with ``show_seen``, what it had observed so far).
    """
    node = shutil.which("node")
    if node is None or not (UI_DIR / "node_modules" / "playwright-core").is_dir() or not CHROMIUM.exists():
        pytest.fail("the browser test needs node, tests/ui/node_modules and /usr/bin/chromium: run .ci/ui_setup.sh")
    ARTIFACTS.mkdir(exist_ok=True)
    path = lab_server["root"].parent / (Path(script).stem + ".json")
    base = {"base": lab_server["base"], "token": lab_server["token"], "chromium": str(CHROMIUM)}
    path.write_text(json.dumps({**base, "artifacts": str(ARTIFACTS), **config}))
    done = subprocess.run(
        [node, str(UI_DIR / script), str(path)],
        cwd=UI_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"browser driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    results: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if "fatal" in results:
        seen = f"seen so far: {json.dumps(results)[:3000]}\n" if show_seen else ""
        pytest.fail(
            f"browser driver stopped: {results['fatal']}\n{seen}lab log:\n{lab_server['log'].read_text()[-3000:]}"
        )
    return results


@pytest.fixture(scope="session")
def ui_helpers() -> SimpleNamespace:
    """This module's notebook writers and plans, for browser-test modules (conftest is not importable)."""
    return SimpleNamespace(
        artifacts=ARTIFACTS,
        chromium=CHROMIUM,
        ui_dir=UI_DIR,
        drive_browser=drive_browser,
        small_training_plan=small_training_plan,
        write_payload_notebook=write_payload_notebook,
        write_report_notebook=write_report_notebook,
    )


@pytest.fixture(scope="module")
def browser_run(lab_server: dict[str, Any]) -> dict[str, Any]:
    """Write the three report notebooks, drive Chromium over them once, return what it observed."""
    root: Path = lab_server["root"]
    bundles = {
        "report": write_report_notebook(root / "report.ipynb", small_training_plan()),
        "hostile": write_report_notebook(root / "hostile.ipynb", hostile_plan()),
        "big": write_report_notebook(root / "resnet50_train.ipynb", resnet50_like_plan(), budget=4_000_000),
        "parity": write_payload_notebook(root / "parity.ipynb", parity_markers()["payload"]),
        "wide": write_report_notebook(root / "wide.ipynb", wide_plan()),
        "keras": write_report_notebook(root / "keras_run.ipynb", keras_run_report()),
        "compare": write_html_notebook(root / "compare.ipynb", tutorial_comparison(), "comparison"),
        "sweep": write_html_notebook(root / "sweep.ipynb", tutorial_sweep(), "table"),
    }
    (root / "npu_dump").mkdir()
    (root / "npu_dump" / "step_0.json").write_text("{}")
    results = drive_browser(
        "lab_renderer.mjs",
        {
            "notebooks": {
                "report": "report.ipynb",
                "hostile": "hostile.ipynb",
                "big": "resnet50_train.ipynb",
                "parity": "parity.ipynb",
                "wide": "wide.ipynb",
                "keras": "keras_run.ipynb",
                "compare": "compare.ipynb",
                "sweep": "sweep.ipynb",
            },
            "clickOp": "gradients/dense/Relu_grad/ReluGrad",
        },
        lab_server,
    )
    results["bundles"] = bundles
    return results
