"""The typed records of a RunReport: each adds a step by returning a new record, the old one unchanged."""

from __future__ import annotations

import pytest

from npu_jupyter._runtime.report_records import DumpRecord, ProfileRecord, SkippedDump, Timing


def test_timing_keeps_the_total_and_the_first_fastest_and_slowest_step():
    empty = Timing()
    timing = empty.add(9.0).add(2.0).add(4.0)
    assert (timing.total_ms, timing.first_ms, timing.min_ms, timing.max_ms) == (15.0, 9.0, 2.0, 9.0)
    assert empty == Timing()  # frozen: a report copied for display never changes under it
    with pytest.raises(AttributeError):
        timing.total_ms = 0.0  # type: ignore[misc]


def test_a_dump_record_lists_dumped_and_skipped_steps_in_order():
    record = DumpRecord().dumped(0, "/d").skipping(1, "over budget").dumped(2, "/d/graph_1")
    assert record.steps == (0, 2) and record.graph_dir == "/d/graph_1"
    assert record.skipped == (SkippedDump(1, "over budget"),)


def test_per_op_times_leave_the_warm_up_out_once_a_later_step_was_profiled():
    warm = ProfileRecord().added(0, {"mm": 20_000.0}, cast_us=3.0)
    assert warm.op_times_us() == {"mm": 20_000.0} and warm.steps == 1
    assert warm.label("CPU time").startswith("step 0 only, TensorFlow's warm-up included")
    timed = warm.added(1, {"mm": 40.0}, 1.0).added(2, {"mm": 60.0}, 1.0)
    assert timed.op_times_us() == {"mm": 50.0} and (timed.steps, timed.timed_steps) == (3, 2)
    assert timed.label("CPU time") == "over 2 profiled steps, step 0 (warm-up) left out; CPU time"
    later_only = ProfileRecord().added(4, {"mm": 40.0}, 1.0)
    assert later_only.label("CPU time") == "over 1 profiled step; CPU time"


def test_timings_and_profiles_of_two_reports_of_one_run_fold_in_order():
    from npu_jupyter._runtime.report_records import ProfileRecord, Timing

    first, later = Timing().add(9.0).add(1.0), Timing().add(5.0)
    folded = first.then(later)
    assert (folded.total_ms, folded.first_ms, folded.min_ms, folded.max_ms) == (15.0, 9.0, 1.0, 9.0)
    assert Timing().then(later) == later and first.then(Timing()) == first
    assert Timing().add(9.0, 4).add(1.0, 5).then(Timing().add(5.0, 0)).first_index == 4  # the first report's first
    warm = ProfileRecord().added(0, {"mm": 900.0}, 1.0).added(1, {"mm": 20.0}, 1.0)
    after = ProfileRecord().added(2, {"mm": 10.0}, 2.0)
    profile = warm.then(after)
    assert (profile.steps, profile.timed_steps, profile.cast_us) == (3, 2, 2.0)
    assert profile.op_times_us() == {"mm": 15.0}  # the warm-up's 900 µs stay out
    assert profile.label("CPU") == "over 2 profiled steps, step 0 (warm-up) left out; CPU"
    assert profile.label("CPU", "call") == "over 2 profiled calls, call 0 (warm-up) left out; CPU"  # a function's


def test_a_functions_calls_split_by_caller_only_when_some_came_from_elsewhere_than_its_title_says():
    """Trial (DIN_ID2641): fit's validation and evaluate run one test function, titled "Keras evaluate"."""
    from npu_jupyter._runtime.report_records import FunctionInfo

    info = FunctionInfo("Keras evaluate (test function)", "f", titled="in Keras evaluate")
    own = info.called("in Keras evaluate").called("in Keras evaluate")
    assert own.callers == (("in Keras evaluate", 2),) and own.calls_split() == ()  # the title says it all
    mixed = (
        info.called("during Keras fit (validation)").called("in Keras evaluate").called("during Keras fit (validation)")
    )
    assert mixed.calls_split() == (("during Keras fit (validation)", 2), ("in Keras evaluate", 1))  # first seen first
    validation = info.called("during Keras fit (validation)")
    assert validation.calls_split() == (("during Keras fit (validation)", 1),)  # none was evaluate's own
    assert info.callers == ()  # frozen: each call returns a new record
