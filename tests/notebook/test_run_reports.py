"""Collapsing a cell's run reports: one per (session, fetches, plan), times averaged per run."""

from __future__ import annotations

import pytest

from npu_jupyter._notebook.run_reports import (
    arrange,
    cell_reports,
    collapse,
    dedupe_warnings,
    initializer_note,
    is_initializer_run,
)
from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._runtime.observe.step_record import StepRecord, add_time
from npu_jupyter._runtime.report import RunReport


def _plan(*names: str) -> Plan:
    return Plan(
        ops={
            n: OpDecision(
                name=n,
                op_type="Add",
                placement="device",
                engine="AI_CORE",
                placement_reason="ok",
                dtype_before="float32",
                dtype_after="float16",
                precision_reason="fp16",
            )
            for n in names
        }
    )


class _Session:
    """What the cell hands over: an object with the runtime's ``reports`` list."""

    def __init__(self, reports):
        self.reports = reports


def test_alternating_fetches_collapse_per_fetch_in_first_run_order():
    plan = _plan("a", "b")
    runs = [RunReport(plan, fetches=[f], wall_ms=ms) for f, ms in (("a", 1.0), ("b", 5.0), ("a", 3.0), ("b", 7.0))]
    reports = cell_reports([_Session(runs)])
    assert [(r.fetches, r.steps, r.wall_ms) for r in reports] == [(["a"], 2, 2.0), (["b"], 2, 6.0)]


def test_a_folded_reports_time_label_counts_every_folded_step_and_its_spread():
    """Alternating runs fold into one report: its label must not keep the last part's count and spread."""
    plan = _plan("a", "b")
    runs = []
    for fetch, times in (("a", [9.0, 1.0]), ("b", [5.0]), ("a", [3.0, 2.0]), ("b", [7.0])):
        report = RunReport(plan, fetches=[fetch], steps=0)
        for index, ms in enumerate(times):
            add_time(report, StepRecord("step", fetch, index, plan, ms))
        runs.append(report)
    a, b = cell_reports([_Session(runs)])
    assert (a.steps, a.wall_ms) == (4, pytest.approx(3.75))
    assert (a.timing.total_ms, a.timing.first_ms, a.timing.min_ms, a.timing.max_ms) == (15.0, 9.0, 1.0, 9.0)
    assert a.labels["wall_ms"].startswith("mean per step over 4 steps: min 1.00 ms, max 9.00 ms, the first 9.00 ms")
    assert b.labels["wall_ms"].startswith("mean per step over 2 steps: min 5.00 ms, max 7.00 ms, the first 5.00 ms")


def test_a_folded_report_keeps_the_dumps_findings_and_warnings_of_every_part_not_the_last_parts():
    """ModelZoo STNet_ID2360 evaluates the loss every 10th step: its training graph's runs are ten reports
    folded into one. The cell said "Dumped steps: none of this report's 99 steps" of steps 0 and 12 it had
    dumped, and a NaN fed at step 3 became "First non-finite value: ... at step 20" (the last part's)."""
    from npu_jupyter._runtime.report_records import DumpRecord, NonFiniteFinding

    plan = _plan("a", "b")
    nan = NonFiniteFinding(3, "x", "x", "fed", "Step 3: fetch a is non-finite")
    later = NonFiniteFinding(20, "read", "read", "held", "Step 20: fetch a is non-finite")
    parts = [
        RunReport(
            plan,
            fetches=["a"],
            steps=10,
            dump=DumpRecord((0,), "/d/graph_2"),
            non_finite=nan,
            warnings=["soft placement", nan.message, "Step 4: fetch a is non-finite"],
        ),
        RunReport(plan, fetches=["b"]),
        RunReport(plan, fetches=["a"], steps=10, dump=DumpRecord((12,), "/d/graph_2"), warnings=["soft placement"]),
        RunReport(plan, fetches=["b"]),
        RunReport(
            plan,
            fetches=["a"],
            steps=10,
            non_finite=later,
            warnings=["soft placement", later.message],
            first_overflow_by_step={21: "mm"},
            notes=["n"],
        ),
    ]
    train, _ = cell_reports([_Session(parts)])
    assert train.steps == 30 and train.dump == DumpRecord((0, 12), "/d/graph_2")
    assert train.non_finite is nan  # the first finding, not the last part's
    assert train.warnings == ["soft placement", nan.message, "Step 4: fetch a is non-finite"]  # step 20: a later step
    assert train.first_overflow_by_step == {21: "mm"} and train.notes == ["n"]


def test_same_fetches_on_a_replanned_identical_graph_are_one_report_but_other_sessions_are_not():
    first, again = _plan("a"), _plan("a")
    reports = cell_reports(
        [
            _Session([RunReport(first, fetches=["a"]), RunReport(again, fetches=["a"])]),
            _Session([RunReport(first, fetches=["a"])]),
        ]
    )
    assert [r.steps for r in reports] == [2, 1]


def test_collapse_weights_times_by_steps_and_keeps_every_overflow():
    plan = _plan("a", "b")
    one = RunReport(plan, steps=3, wall_ms=1.0, op_times_us={"a": 10.0}, overflow_ops=["b"], first_overflow="b")
    two = RunReport(
        plan, steps=1, wall_ms=5.0, op_times_us={"a": 2.0}, overflow_ops=["a", "b"], trace_file="/tmp/trace.json"
    )
    merged = collapse([one, two])
    assert merged.steps == 4 and merged.wall_ms == 2.0
    assert merged.op_times_us == {"a": 8.0}
    assert merged.overflow_ops == ["b", "a"] and merged.first_overflow == "b"
    assert merged.trace_file == "/tmp/trace.json"


def test_collapse_keeps_each_ops_worst_drift_of_every_run_not_the_last_runs():
    plan = _plan("a", "b")
    worse = {"max_abs": 0.5, "max_rel": 1.0, "cos": 0.99, "rel_rmse": 0.02, "step": 1}
    better = {"max_abs": 0.9, "max_rel": 9.0, "cos": 1.0, "rel_rmse": 0.001, "step": 4}
    one = RunReport(plan, steps=3, drift={"a": worse, "b": better})
    two = RunReport(plan, steps=2, drift={"a": better})
    merged = collapse([one, two])
    assert merged.drift == {"a": worse, "b": better}


def test_a_folded_reference_time_is_the_mean_over_the_steps_that_ran_a_reference():
    """Was dropped when any folded report had none, and weighted by steps rather than reference steps."""
    plan = _plan("a")
    with_ref = RunReport(plan, steps=4, wall_ms=1.0, reference_wall_ms=2.0, reference_steps=1)
    without = RunReport(plan, steps=3, wall_ms=1.0)
    more_ref = RunReport(plan, steps=1, wall_ms=1.0, reference_wall_ms=6.0, reference_steps=3)
    merged = collapse([with_ref, without, more_ref])
    assert merged.reference_steps == 4
    assert merged.reference_wall_ms == pytest.approx((2.0 * 1 + 6.0 * 3) / 4)
    assert collapse([without, RunReport(plan, steps=2, wall_ms=1.0)]).reference_wall_ms is None


@pytest.fixture(scope="module")
def training_plans():
    """Plans of a real TF1 training graph: its initialiser, Adam's minimize op, a Saver restore."""
    tf = pytest.importorskip("tensorflow")
    from npu_jupyter._plan.planner import plan

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.compat.v1.get_variable("w", [8, 3])
        b = tf.compat.v1.get_variable("b", [3], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b), name="loss")
        tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss, name="train_op")
        tf.compat.v1.global_variables_initializer()  # named "init"
        tf.compat.v1.variables_initializer([b], name="setup_b")
        tf.compat.v1.train.Saver()
    names = ("init", "setup_b", "train_op", "save/restore_all", "loss")
    return {name: plan(g, fetches=[name]) for name in names}


def test_only_plans_that_just_assign_initial_values_are_initializer_runs(training_plans):
    verdicts = {name: is_initializer_run(RunReport(p, fetches=[name])) for name, p in training_plans.items()}
    # renamed initialisers count; the NoOp of minimize and the Saver's restore NoOp do not
    assert verdicts == {"init": True, "setup_b": True, "train_op": False, "save/restore_all": False, "loss": False}
    both = RunReport(training_plans["train_op"], fetches=["train_op", "loss:0"])
    assert not is_initializer_run(both)


def test_initializer_runs_go_last_as_one_line_unless_they_are_all_there_is(training_plans):
    init = RunReport(training_plans["init"], fetches=["init"])
    train = RunReport(training_plans["train_op"], fetches=["train_op", "loss:0"], steps=3)
    shown, collapsed = arrange([init, train])
    assert shown == [train] and collapsed == [init]
    ops = len(training_plans["init"].ops)
    assert initializer_note(collapsed) == f"also ran: init (variable initialisation, {ops} ops)"
    assert arrange([init]) == ([init], [])


def test_a_warning_repeated_by_later_reports_is_shown_in_full_once():
    text = "Full offload keeps only the largest device cluster: 1 supported ops are cut off from it. Enable it."
    first = RunReport(Plan(ops={}, warnings=[text]), fetches=["save/control_dependency:0"])
    other = RunReport(Plan(ops={}, warnings=["something else"]), fetches=["train_op"])
    again = RunReport(Plan(ops={}, warnings=[text, "something new"]), fetches=["save/restore_all"])
    out = dedupe_warnings([first, other, again])
    assert out[0] is first and out[1] is other
    assert out[2].plan.warnings == [
        (
            "Same warning as the report of save/control_dependency:0 above: "
            "Full offload keeps only the largest device cluster"
        ),
        "something new",
    ]
    assert again.plan.warnings == [text, "something new"]  # the session's own report is untouched


def test_a_function_report_without_a_plan_passes_through_the_cells_steps():
    """``RunReport.plan`` is None for a traced function with no plannable graph: nothing here may fail on it."""
    from npu_jupyter._runtime.report_records import FunctionInfo

    info = FunctionInfo("step", "__inference_step_3")
    bare = [RunReport(None, fetches=["__inference_step_3"], function=info, steps=2, wall_ms=ms) for ms in (1.0, 3.0)]
    planned = RunReport(_plan("a"), fetches=["a"], warnings=[])
    (folded, other) = cell_reports([_Session([bare[0], planned, bare[1]])])
    assert folded.plan is None and (folded.steps, folded.wall_ms) == (4, 2.0)
    shown, init = arrange([folded, other])
    assert (shown, init) == ([folded, other], [])
    assert dedupe_warnings(shown)[0] is folded
    helper = FunctionInfo("variable initialisation", "__inference_initialize_variables_1", helper="initializer")
    init_run = RunReport(None, fetches=["__inference_initialize_variables_1"], function=helper)
    assert arrange([init_run, folded]) == ([folded], [init_run])
    assert initializer_note([init_run]) == "also ran: variable initialisation (0 ops)"


def test_folded_ascend_runs_keep_the_hosts_clock_in_their_label():
    """Folding re-derived only the emulator's label: folded ascend runs kept the last part's count."""
    plan = _plan("a", "b")
    runs = []
    for fetch, times in (("a", [900.0, 4.0]), ("b", [5.0]), ("a", [3.0])):
        report = RunReport(plan, backend="ascend", fetches=[fetch], steps=0)
        for index, ms in enumerate(times):
            add_time(report, StepRecord("step", fetch, index, plan, ms))
        runs.append(report)
    a, _ = cell_reports([_Session(runs)])
    assert a.labels["wall_ms"].startswith("mean per step over 3 steps: min 3.00 ms, max 900.00 ms, the first 900.00")
    assert a.labels["wall_ms"].endswith(
        "session.run measured on the host while the device ran the graph (not a device kernel time)"
    )


def test_collapse_says_the_shapes_varied_when_its_reports_started_at_different_batches():
    """Trial (texting_ID0193): a cell's one report of an evaluation run that fed 40 rows, then 60."""
    plan = _plan("a")
    first, later = RunReport(plan, fed_shapes={"x:0": [40, 8]}), RunReport(plan, fed_shapes={"x:0": [60, 8]})
    assert collapse([first, later]).fed_shapes_varied
    assert collapse([first, later]).fed_shapes == {"x:0": [60, 8]}  # the estimate shown is the last report's
    again = RunReport(plan, fed_shapes={"x:0": [40, 8]})
    assert not collapse([first, again]).fed_shapes_varied
