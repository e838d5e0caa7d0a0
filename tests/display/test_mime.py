"""The report MIME payload: schema keys, de-duplicated reasons, size bound, determinism, escaping."""

from __future__ import annotations

import json

import pytest

from npu_jupyter._display import text
from npu_jupyter._display.mime import BUDGET_BYTES, MIME_TYPE, mimebundle, report_payload
from npu_jupyter._plan.model import OpDecision, Plan, Subgraph, Transfer
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import DumpRecord, NonFiniteFinding, SkippedDump
from npu_jupyter.cost.attach import CostBlock, CostEstimate

HOSTILE = "<img src=x onerror=alert(1)>"


def _decision(
    name: str,
    op_type: str = "MatMul",
    engine: str = "AI_CORE",
    before: str = "float32",
    after: str = "float32",
    inputs: list[str] | None = None,
    cluster: str | None = "GeOp1_0",
    placement_reason: str = "supported on AI Core",
    precision_reason: str = "kept",
) -> OpDecision:
    return OpDecision(
        name=name,
        op_type=op_type,
        placement="host" if engine == "HOST" else "device",
        engine=engine,
        placement_reason=placement_reason,
        dtype_before=before,
        dtype_after=after,
        precision_reason=precision_reason,
        cluster=None if engine == "HOST" else cluster,
        inputs=inputs or [],
    )


def _small_plan() -> Plan:
    ops = {
        "x": _decision("x", "Placeholder", "HOST", placement_reason="feed stays on the host"),
        HOSTILE: _decision(
            HOSTILE,
            "MatMul",
            after="float16",
            inputs=["x"],
            precision_reason="cube op goes to float16 under allow_fp32_to_fp16",
        ),
        "relu": _decision("relu", "Relu", inputs=[HOSTILE]),
    }
    return Plan(
        ops=ops,
        subgraphs=[Subgraph("GeOp1_0", [HOSTILE, "relu"])],
        transfers=[Transfer("x", HOSTILE, "x:0", "float32", "h2d", 4096)],
        warnings=[f"op {HOSTILE} is odd"],
        precision_mode="allow_fp32_to_fp16",
        config_changes={"precision_mode": "allow_fp32_to_fp16"},
    )


def test_payload_follows_schema_version_1_with_indices_into_reasons_and_ops():
    payload = report_payload(_small_plan())
    assert payload["schema"] == "npu-jupyter.report" and payload["version"] == 1
    assert payload["kind"] == "plan" and payload["truncated"] is False
    names = [op["n"] for op in payload["ops"]]
    assert names == ["x", HOSTILE, "relu"]
    matmul = payload["ops"][1]
    assert (matmul["d0"], matmul["d1"], matmul["e"], matmul["c"]) == ("float32", "float16", "AI_CORE", 0)
    assert payload["reasons"][matmul["xr"]] == "cube op goes to float16 under allow_fp32_to_fp16"
    assert matmul["i"] == [0]
    assert payload["ops"][0]["c"] == -1
    assert payload["transfers"] == [{"s": 0, "o": 0, "d": 1, "dt": "float32", "b": 4096, "dir": "h2d"}]
    assert payload["summary"]["precision_changed"] == 1 and payload["summary"]["host"] == 1


def test_reasons_are_stored_once_however_many_ops_share_them():
    ops = {f"op{i}": _decision(f"op{i}", inputs=[f"op{i - 1}"] if i else []) for i in range(50)}
    payload = report_payload(Plan(ops=ops, subgraphs=[Subgraph("GeOp1_0", list(ops))]))
    assert sorted(payload["reasons"]) == ["kept", "supported on AI Core"]


def test_hostile_op_name_is_kept_as_data_in_json_and_escaped_in_html():
    bundle = mimebundle(_small_plan())
    assert bundle[MIME_TYPE]["ops"][1]["n"] == HOSTILE
    assert "<img" not in bundle["text/html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in bundle["text/html"]
    assert HOSTILE in bundle["text/plain"]  # plain text is shown as text, never parsed as HTML
    json.dumps(bundle[MIME_TYPE])  # serialisable as is


def test_payload_is_deterministic_for_the_same_plan():
    first = json.dumps(report_payload(_small_plan()))
    second = json.dumps(report_payload(_small_plan()))
    assert first == second


def _large_plan(count: int = 7000) -> Plan:
    """A training-graph-sized plan with long scoped names and many distinct reasons."""
    ops = {}
    previous: list[str] = []
    for i in range(count):
        name = f"gradients/resnet_model/block_{i // 50}/conv2d_{i}/Conv2D_grad/Conv2DBackpropFilter_{i}"
        engine = "HOST" if i % 97 == 0 else "AI_CORE"
        after = "float16" if i % 3 == 0 and engine != "HOST" else "float32"
        ops[name] = _decision(
            name,
            "Conv2DBackpropFilter",
            engine,
            after=after,
            inputs=previous[-3:],
            placement_reason=f"op type not supported on the device (variant {i % 40})",
            precision_reason=f"allow list member, reduced to float16 ({i % 25})",
        )
        previous.append(name)
    names = list(ops)
    device = [n for n in names if ops[n].engine != "HOST"]
    host = [n for n in names if ops[n].engine == "HOST"]
    transfers = [Transfer(h, device[0], f"{h}:0", "float32", "d2h", 1 << 20) for h in host]
    return Plan(
        ops=ops, subgraphs=[Subgraph("GeOp1_0", device)], transfers=transfers, precision_mode="allow_fp32_to_fp16"
    )


def test_payload_of_a_7k_op_plan_stays_under_one_megabyte_and_keeps_interesting_ops_first():
    plan = _large_plan()
    payload = report_payload(plan)
    size = len(json.dumps(payload, separators=(",", ":")))
    assert size <= BUDGET_BYTES
    if payload["truncated"]:
        kept = {op["n"] for op in payload["ops"]}
        interesting = [n for n, d in plan.ops.items() if d.engine == "HOST" or d.precision_changed]
        assert set(interesting) <= kept
    assert payload["summary"]["ops"] == 7000  # counts describe the whole plan even when truncated


def test_over_budget_payload_is_truncated_keeping_host_ops_before_plain_device_ops():
    plan = _large_plan(800)
    payload = report_payload(plan, budget=40_000)
    assert payload["truncated"] is True
    assert len(json.dumps(payload, separators=(",", ":"))) <= 40_000
    kept = [op["n"] for op in payload["ops"]]
    host = [n for n, d in plan.ops.items() if d.engine == "HOST"]
    assert set(host) <= set(kept)
    assert kept == [n for n in plan.ops if n in set(kept)]  # topological order preserved
    for op in payload["ops"]:
        assert all(0 <= i < len(kept) for i in op["i"])


def test_run_report_payload_has_run_block_times_drift_and_overflow():
    plan = _small_plan()
    run = RunReport(
        plan=plan,
        fetches=["relu:0"],
        steps=3,
        wall_ms=1.23456,
        op_times_us={HOSTILE: 12.3456, "relu": 1.0},
        drift={HOSTILE: {"max_abs": 0.5, "cos": 0.99}},
        overflow_ops=[HOSTILE],
        first_overflow=HOSTILE,
        dump_dir="/tmp/<dump>",
    )
    payload = report_payload(run)
    assert payload["kind"] == "run"
    assert payload["run"]["steps"] == 3 and payload["run"]["first_overflow"] == HOSTILE
    matmul = payload["ops"][1]
    assert matmul["us"] == 12.346 and matmul["ov"] is True and matmul["dr"] == {"cos": 0.99, "max_abs": 0.5}
    html = mimebundle(run)["text/html"]
    assert "<img" not in html and "/tmp/&lt;dump&gt;" in html


def test_report_payload_rejects_other_objects_with_a_clear_error():
    import pytest

    with pytest.raises(TypeError, match="takes a Plan or a RunReport"):
        report_payload({"ops": {}})


def _hostile_graph_def():
    """A real graph whose MatMul is renamed to markup (GraphDefs from files can hold any name)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 2], name="x")
        y = tf.matmul(x, x, name="mm")
        tf.strings.as_string(y, name="to_text")
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        if node.name == "mm":
            node.name = HOSTILE
        node.input[:] = [HOSTILE if name == "mm" else name for name in node.input]
    return graph_def


def test_planner_output_with_a_hostile_node_name_is_escaped_in_html_and_kept_in_json_and_text():
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._plan.planner import plan

    result = plan(_hostile_graph_def(), NpuConfig(precision_mode="allow_fp32_to_fp16"))
    bundle = mimebundle(result)
    assert HOSTILE in [op["n"] for op in bundle[MIME_TYPE]["ops"]]
    assert "<img" not in bundle["text/html"] and "&lt;img src=x onerror=alert(1)&gt;" in bundle["text/html"]
    assert HOSTILE in bundle["text/plain"]
    assert json.loads(json.dumps(bundle[MIME_TYPE])) == bundle[MIME_TYPE]


@pytest.mark.slow
def test_resnet50_training_plan_payload_stays_under_one_megabyte():
    import models

    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._plan.planner import plan

    result = plan(models.resnet50_train_step(), NpuConfig(precision_mode="allow_mix_precision"))
    assert len(result.ops) > 7000
    payload = report_payload(result)
    assert len(json.dumps(payload, separators=(",", ":"))) <= BUDGET_BYTES
    kept = {op["n"] for op in payload["ops"]}
    assert {name for name, d in result.ops.items() if d.precision_changed} <= kept
    assert json.dumps(report_payload(result)) == json.dumps(payload)  # deterministic


def test_plan_of_named_fetches_is_titled_like_a_run_report_without_repeating_soc_and_mode():
    plan = _small_plan()
    plan.title = "3 ops · full offload · allow_fp32_to_fp16 (precision_mode) · Ascend910"
    assert report_payload(plan)["title"] == plan.title  # nothing named: the planner's title as it is
    plan.fetches = ["loss"]
    assert report_payload(plan)["title"] == "Plan of loss (Ascend910, allow_fp32_to_fp16) · 3 ops · full offload"
    run = RunReport(plan, fetches=["loss:0"])
    assert report_payload(run)["title"].startswith("Run of loss:0: 3 ops")


def test_runs_whose_fetches_differ_after_the_third_are_titled_apart():
    # ModelZoo VGG19_ID0374 under NPUEstimator: step 1 also fetched the LoggingTensorHook's tensors, so its
    # training step was a second report, and both read "Run of IterationOp, total_loss:0, global_step/add:0, …"
    plan = _small_plan()
    head = ["IterationOp", "total_loss:0", "global_step/add:0"]
    logging_step = report_payload(RunReport(plan, fetches=[*head, "loss:0", "learning_rate:0", "Mean:0"]))
    plain_step = report_payload(RunReport(plan, fetches=[*head, "learning_rate:0"]))
    assert logging_step["title"].startswith("Run of IterationOp, total_loss:0, global_step/add:0 and 3 more: ")
    assert plain_step["title"].startswith("Run of IterationOp, total_loss:0, global_step/add:0 and 1 more: ")
    assert report_payload(RunReport(plan, fetches=head))["title"].startswith(f"Run of {', '.join(head)}: ")


def test_plan_unpickled_from_before_the_fetches_field_still_renders():
    plan = _small_plan()
    del plan.__dict__["fetches"]  # what plan_cache loads from an older pickle
    assert report_payload(plan)["title"] == "Plan (Ascend910, allow_fp32_to_fp16)"


def test_plan_payload_without_optional_facts_has_no_optional_keys_and_says_it_is_predicted():
    payload = report_payload(_small_plan())
    for key in ("notes", "cost_model", "labels"):
        assert key not in payload
    assert payload["predicted"] is True
    assert "approximate" not in payload["summary"]
    assert all("approximate" not in op and "est_us" not in op for op in payload["ops"])


def test_run_times_are_labelled_by_backend_and_the_run_can_override_a_label():
    plan = _small_plan()
    emulated = report_payload(RunReport(plan=plan, op_times_us={"x": 1.0}))
    clock = "wall-clock time of the emulation on this CPU"
    assert emulated["labels"] == {"us": clock, "wall_ms": clock}
    device = report_payload(RunReport(plan=plan, backend="ascend"))  # timed on the host around session.run
    host = (
        "wall-clock time of session.run measured on the host while the device ran the graph (not a device kernel time)"
    )
    assert device["labels"] == {"wall_ms": host}
    custom = report_payload(RunReport(plan=plan, labels={"wall_ms": "wall clock of the host"}))
    assert custom["labels"]["wall_ms"] == "wall clock of the host"


def test_optional_facts_come_from_the_reports_typed_records():
    plan = _small_plan()
    plan.notes = ["variables replicated"]
    plan.ops["x"].approximate = True  # type: ignore[attr-defined]
    run = RunReport(
        plan=plan,
        warnings=["dump budget exceeded"],
        cost=CostEstimate(CostBlock(1.23456, 2048, None, None, "910 roofline"), {HOSTILE: 2.5}),
        dump=DumpRecord(steps=(2, 0, 2), skipped=(SkippedDump(5, "over budget"),)),
        non_finite=NonFiniteFinding(1, HOSTILE, HOSTILE, "inf", "Step 1: inf"),
        predicted=False,  # e.g. read back from the device's graph dump
    )
    payload = report_payload(run)
    assert payload["notes"] == ["variables replicated"] and payload["predicted"] is False
    assert payload["summary"]["approximate"] == 1
    ops = {op["n"]: op for op in payload["ops"]}
    assert ops["x"]["approximate"] is True and ops[HOSTILE]["est_us"] == 2.5
    assert payload["cost_model"] == {
        "step_ms": 1.2346,
        "memory_bytes": 2048,
        "step_ratio_fp32": None,
        "memory_ratio_fp32": None,
        "launch_share": None,
        "basis": "910 roofline",
    }
    assert payload["labels"]["est_us"] == "estimated by the cost model"
    assert payload["run"]["dump_steps"] == [0, 2]
    assert payload["run"]["dump_skipped"] == [{"step": 5, "reason": "over budget"}]
    assert payload["run"]["nonfinite"] == {"first_op": HOSTILE, "step": 1, "reason": "inf"}
    assert "dump budget exceeded" in payload["warnings"]


def test_the_dump_folder_is_the_reports_own_graph_folder_not_the_cells_dump_root(tmp_path):
    """Review: a training run's report showed dump/ (whose step_0 is the init graph's), not dump/graph_1."""
    root = tmp_path / "dump"
    run = RunReport(
        plan=_small_plan(), dump_dir=str(root), dump=DumpRecord(steps=(0, 1), graph_dir=str(root / "graph_1"))
    )
    payload = report_payload(run)
    assert payload["run"]["dump_dir"] == str(root / "graph_1")
    assert f"Dump folder: {root / 'graph_1'}" in text.render(payload)
    first = RunReport(plan=_small_plan(), dump_dir=str(root), dump=DumpRecord(steps=(0,), graph_dir=str(root)))
    assert report_payload(first)["run"]["dump_dir"] == str(root)  # the first graph's steps are in the root


def test_a_function_report_without_a_plan_renders_what_ran():
    """A traced function with no plannable graph has ``plan=None``; its report said TypeError instead."""
    from npu_jupyter._display.mime import NO_PLAN
    from npu_jupyter._runtime.observe.step_record import StepRecord, add_time
    from npu_jupyter._runtime.report_records import FunctionInfo

    run = RunReport(plan=None, fetches=["__inference_step_7"], function=FunctionInfo("step", "__inference_step_7"))
    run.steps = 0
    for index, ms in enumerate([9.0, 2.0]):
        add_time(run, StepRecord("call", "step", index, None, ms))
    bundle = mimebundle(run)
    payload = bundle[MIME_TYPE]
    assert payload["ops"] == [] and payload["run"]["steps"] == 2
    assert payload["title"] == f"Calls of step: {NO_PLAN}"
    assert "5.50 ms (mean per call over 2 calls: min 2.00 ms, max 9.00 ms" in bundle["text/plain"]
    assert NO_PLAN in bundle["text/html"] and str(run) == bundle["text/plain"]
