"""The one rule for "which op drifted most" (``_runtime/observe/drift_ranking.py``), below every view."""

from __future__ import annotations

import math

import pytest
from drift_cases import DRIFTED, NOTHING_DRIFTED, PLAN, ZEROS, drift_op, report

from npu_jupyter._display.drift import drift_text, worst_drift_names
from npu_jupyter._plan.model import Plan
from npu_jupyter._runtime.observe.drift_ranking import (
    CANCELLED_NOTE,
    NEAR_ZERO_NOTE,
    assess,
    cancellation_marks,
    worst_drift,
    worst_fetch_drift,
    worst_op_figure,
    worst_ops,
)


def test_the_worst_op_is_ranked_by_relative_rmse_without_copies_or_zero_drift():
    assert worst_ops(PLAN, DRIFTED, 3) == ["dnn/MatMul", "dnn/near_zero", "loss"]
    assert worst_ops(PLAN, DRIFTED, 3) == worst_drift_names(PLAN, report(DRIFTED))  # the report's line


def test_nothing_drifted_names_no_op():
    assert worst_ops(PLAN, NOTHING_DRIFTED, 1) == []
    assert worst_ops(PLAN, {}, 1) == []
    assert ZEROS not in worst_ops(PLAN, DRIFTED, 10)


def test_the_fetch_drift_is_the_worst_fetch_by_the_same_rank():
    drift = {"loss": {"max_rel": 9.0, "rel_rmse": 1e-4}, "acc": {"max_rel": 0.1, "rel_rmse": 0.02}}
    assert worst_fetch_drift(drift, ["loss:0", "acc:0", "train"]) == drift["acc"]
    assert worst_fetch_drift(drift, ["train"]) is None
    non_finite = {"loss": {"rel_rmse": math.nan}, "acc": {"rel_rmse": 0.02}}
    assert worst_fetch_drift(non_finite, ["acc:0", "loss:0"]) is non_finite["loss"]  # NaN ranks first


# A conv bias before a BatchNorm (the ModelZoo CircleLossMNIST trial): its gradient sums 128 values per
# channel whose sum is 0, so its float32 reference is rounding noise (2e-8) and its rel. RMSE (666) is noise.
def _cancel_row(rel_rmse: float, rmse: float, ref_rms: float | None, size: float, **extra: float) -> dict[str, float]:
    row = {"max_abs": rmse * 3, "max_rel": rel_rmse * 10, "cos": 0.5, "rmse": rmse, "rel_rmse": rel_rmse, "step": 0}
    if ref_rms is not None:  # a row stored before ref_rms existed has neither field
        row.update(ref_rms=ref_rms, size=size)
    return {**row, **extra}


def _bias_before_batch_norm(old: bool = False) -> list[dict]:
    """dx (AddN) -> BiasAddGrad (cancelled) -> Identity -> Adam's Sub, Mul; and a MatMul that really drifts."""
    scale = None if old else 1e-3
    return [
        {"t": "AddN", "i": [], "dr": _cancel_row(1e-3, 1e-6, scale, 1024)},
        {"t": "BiasAddGrad", "i": [0], "dr": _cancel_row(666.0, 1.3e-5, None if old else 2e-8, 8)},
        {"t": "Identity", "i": [1], "dr": _cancel_row(666.0, 1.3e-5, None if old else 2e-8, 8)},
        {"t": "Sub", "i": [2], "dr": _cancel_row(666.0, 1.3e-5, None if old else 2e-8, 8)},
        {"t": "Mul", "i": [3], "dr": _cancel_row(66.6, 1.3e-6, None if old else 2e-9, 8)},
        {"t": "MatMul", "i": [0], "dr": _cancel_row(0.2, 0.2, None if old else 1.0, 1024)},
    ]


def test_a_cancelled_bias_gradient_ranks_by_its_inputs_scale_and_a_real_drift_ranks_first():
    ops = _bias_before_batch_norm()
    bases = assess(ops)
    # its inputs' scale: dx's RMS times sqrt(1024 / 8) terms summed per output
    assert bases[1].in_rel == pytest.approx(1.3e-5 / (1e-3 * math.sqrt(128)))
    assert bases[3].from_cancelled and bases[4].from_cancelled  # Adam's moment of that gradient: noise
    assert worst_drift(ops, 3) == [5, 1, 0]  # the real drift first; the bias gradient by its honest figure
    assert drift_text(ops[1]["dr"] | {"in_rel": bases[1].in_rel}).startswith(
        f"rel. RMSE 0.00115 against its inputs' scale ({CANCELLED_NOTE}; 666 against its own reference)"
    )


def test_rows_stored_before_ref_rms_rank_as_they_did():
    assert worst_drift(_bias_before_batch_norm(old=True), 3) == [1, 3, 4]  # no scale: own figures, as before
    mixed = _bias_before_batch_norm()
    mixed[0]["dr"] = {k: v for k, v in mixed[0]["dr"].items() if k not in ("ref_rms", "size")}
    assert assess(mixed)[1].in_rel is None  # its input's scale unknown: no cancellation claimed


def test_an_overflow_and_zero_drift_are_never_taken_for_a_cancellation():
    ops = _bias_before_batch_norm()
    ops[1]["dr"] = ops[1]["dr"] | {"rel_rmse": math.inf, "max_abs": math.inf}
    ops[2]["dr"] = ops[1]["dr"]
    assert worst_drift(ops, 1) == [1]  # inf ranks first, whatever its reference's scale
    ops = _bias_before_batch_norm()
    ops[1]["dr"] = ops[1]["dr"] | {"max_abs": 0.0, "rmse": 0.0, "rel_rmse": 0.0}
    assert 1 not in worst_drift(ops, 10)


def test_only_a_sum_whose_reference_is_float32_noise_counts_as_cancelled():
    # a product 1e6 times smaller than its input (a learning rate) is not a cancellation
    ops = [
        {"t": "AddN", "i": [], "dr": _cancel_row(1e-3, 1e-3, 1.0, 64)},
        {"t": "Mul", "i": [0], "dr": _cancel_row(0.3, 3e-7, 1e-6, 64)},
        # (x + 1000) - 1000: float32 keeps the digits float16 loses: a real drift, 1e-3 of its input's scale
        {"t": "Sub", "i": [0], "dr": _cancel_row(0.165, 0.165, 1.0, 64)},
    ]
    ops[0]["dr"]["ref_rms"] = 1000.0
    bases = assess(ops)
    assert bases[1].in_rel is None and bases[2].in_rel is None
    # the product's values (RMS 1e-6) are below float16's smallest normal: listed, after the Sub in range
    assert bases[1].near_zero and worst_drift(ops, 3) == [2, 0, 1]


def test_a_consumer_of_a_multi_output_copy_with_a_cancelled_output_ranks_after_the_others():
    ops = _bias_before_batch_norm()
    # Keras's IdentityN passes every gradient on; its row is its worst output, the cancelled one
    ops[2] = {"t": "IdentityN", "i": [1, 0, 5], "dr": ops[1]["dr"]}
    bases = assess(ops)
    assert bases[3].maybe_cancelled and not bases[3].from_cancelled
    assert worst_drift(ops, 6) == [5, 1, 0, 3, 4]  # the IdentityN itself (a copy) is never named


def test_the_sweep_and_zoo_get_the_ranked_figure_and_the_payload_the_marks():
    plan = Plan(
        ops={
            d.name: d
            for d in (
                drift_op("dx", "AddN"),
                drift_op("grad", "BiasAddGrad", "dx"),
                drift_op("m", "Sub", "grad"),
            )
        }
    )
    ops = _bias_before_batch_norm()
    drift = {"dx": ops[0]["dr"], "grad": ops[1]["dr"], "m": ops[3]["dr"]}
    name, figure, cancelled = worst_op_figure(plan, drift)
    assert (name, cancelled) == ("grad", True) and figure == pytest.approx(1.3e-5 / (1e-3 * math.sqrt(128)))
    assert cancellation_marks(plan, drift) == {"grad": {"in_rel": figure}, "m": {"from_cancelled": True}}


def _sized(rel_rmse: float, ref_rms: float, **extra: float) -> dict[str, float]:
    """A drift row with its float32 reference's RMS (the rmse follows: rel_rmse x ref_rms)."""
    return _cancel_row(rel_rmse, rel_rmse * ref_rms, ref_rms, 64, cos=0.99, **extra)


def test_an_op_whose_float32_values_are_near_zero_ranks_after_ops_in_range_and_says_why():
    """Trial (DIN): a Sum of tiny values (float32 RMS 3e-9, flushed by float16) led the list with rel. RMSE 1."""
    ops = [
        {"t": "Placeholder", "i": [], "dr": None},
        {"t": "Sum", "i": [0], "dr": _sized(1.0, 3e-9)},  # its inputs are tiny too: not a cancellation
        {"t": "MatMul", "i": [0], "dr": _sized(0.01, 1.0)},
        {"t": "Mul", "i": [2], "dr": _sized(0.002, 0.5)},
    ]
    assert worst_drift(ops, 3) == [2, 3, 1]  # kept in the list, after the ops whose values are in range
    assert assess(ops)[1].near_zero and not assess(ops)[2].near_zero
    assert NEAR_ZERO_NOTE in drift_text(ops[1]["dr"])
    assert all(NEAR_ZERO_NOTE not in drift_text(ops[k]["dr"]) for k in (2, 3))  # silent for values in range
    zeros = {"max_abs": 0.0, "max_rel": 0.0, "cos": 1.0, "rmse": 0.0, "rel_rmse": 0.0, "ref_rms": 0.0, "size": 16}
    assert NEAR_ZERO_NOTE not in drift_text(zeros)  # a constant of zeros (03_precision_modes' bn_offset): no drift


def test_near_zero_leaves_an_overflow_first_and_a_cancelled_sum_to_its_own_note():
    overflow = {"t": "Exp", "i": [], "dr": _sized(math.nan, 1e-9)}
    in_range = {"t": "MatMul", "i": [], "dr": _sized(0.01, 1.0)}
    assert worst_drift([in_range, overflow], 2) == [1, 0]  # inf/NaN first whatever its scale
    assert NEAR_ZERO_NOTE not in drift_text(overflow["dr"])
    cancelled = _bias_before_batch_norm()
    bases = assess(cancelled)
    assert bases[1].in_rel is not None and not bases[1].near_zero  # ranked by its inputs' scale instead
    assert NEAR_ZERO_NOTE not in drift_text({**cancelled[1]["dr"], "in_rel": bases[1].in_rel})


def test_a_batch_norm_whose_batch_mean_cancels_is_not_named_the_largest_drift():
    """ModelZoo ghostnet_tf2 under allow_mix_precision with %%npu --reference: "Largest drift vs float32:
    .../batch_normalization_75/FusedBatchNormV3 rel. RMSE 4.51, max abs 2.15e-06, cos -0.0375". Its row is its
    worst output, the batch mean (16 values) of a zero-mean input (8192 values of RMS 0.5): a float32
    reference of 5e-7 is rounding noise, as a cancelled bias gradient's is; a MatMul that drifted 1% ranks first."""
    ops = [
        {"t": "DepthwiseConv2dNative", "i": [], "dr": _cancel_row(1e-3, 5e-4, 0.5, 8192)},
        {"t": "FusedBatchNormV3", "i": [0], "dr": _cancel_row(4.51, 2.3e-6, 5e-7, 16)},
        {"t": "MatMul", "i": [], "dr": _cancel_row(0.01, 0.01, 1.0, 1024)},
    ]
    bases = assess(ops)
    assert bases[1].in_rel == pytest.approx(2.3e-6 / (0.5 * math.sqrt(8192 / 16)))  # against its input's scale
    assert worst_drift(ops, 3)[0] == 2
    # a batch norm whose worst output is y (as large as its input, not cancelled) keeps its own figure
    y_row = [ops[0], {"t": "FusedBatchNormV3", "i": [0], "dr": _cancel_row(4.51, 4.5, 1.0, 8192)}, ops[2]]
    assert assess(y_row)[1].in_rel is None and worst_drift(y_row, 3)[0] == 1


def test_overflows_where_float32_stayed_finite_are_said_harmless_only_when_no_result_held_inf_nan():
    """Zoo check as a user: transformer_nmt (a -1e9 attention mask) and the loss-scaled models read "ok" beside a
    worst op "not finite": the overflows lead the ranking although nothing non-finite reached the results."""
    from npu_jupyter._runtime.observe.drift_ranking import discarded_overflow_note

    inf, nan = float("inf"), float("nan")
    mask = {"max_abs": inf, "rel_rmse": inf, "rmse": inf, "ref_rms": 1e9}
    scaled = {"max_abs": nan, "rel_rmse": nan, "rmse": nan, "ref_rms": 4.7e8}
    by_design = {"max_abs": nan, "rel_rmse": nan, "rmse": nan, "ref_rms": inf}  # float32 holds inf too
    finite = {"max_abs": 0.01, "rel_rmse": 0.001, "rmse": 0.01, "ref_rms": 10.0}
    drift = {"att/Fill": mask, "grad/mul_grad/Mul": scaled, "mask_const": by_design, "dense/MatMul": finite}
    note = discarded_overflow_note(drift, non_finite_found=False)
    assert note.startswith("Overflows that did not reach the results: att/Fill, grad/mul_grad/Mul went inf/NaN")
    assert "mask_const" not in note and "dense/MatMul" not in note
    # an overflow that reached a fetch or a variable is a finding, not a harmless one: no such note
    assert discarded_overflow_note(drift, non_finite_found=True) == ""
    assert discarded_overflow_note({"dense/MatMul": finite, "mask_const": by_design}, non_finite_found=False) == ""
    many = {f"op{k}": mask for k in range(5)}
    assert "op0, op1, op2 and 2 more went inf/NaN" in discarded_overflow_note(many, non_finite_found=False)


def test_the_note_on_overflows_that_did_not_reach_the_results_does_not_call_an_absorbed_one_harmless():
    """Trial text_classification_with_switch_transformer_ID2562 under force_fp16: a layer norm's variance went
    inf in float16 (its rsqrt 0, the rows' outputs 0) and no inf reached the loss or the weights; the note said
    only that the program "discarded or masked" them, as it does a -1e9 attention mask, which changes nothing."""
    from npu_jupyter._runtime.observe.drift_ranking import discarded_overflow_note

    inf = float("inf")
    drift = {"layer_normalization/moments/variance": {"max_abs": inf, "rel_rmse": inf, "rmse": inf, "ref_rms": 9e4}}
    note = discarded_overflow_note(drift, non_finite_found=False)
    assert "Absorbed is not always harmless: a variance that overflows makes its rsqrt 0" in note
    assert note.endswith("so the drift of the ops after them says what they changed.")


def test_the_overflow_note_says_in_how_many_steps_they_happened():
    """GRU4Rec_ID0128 (initial loss scale 2**32) for one epoch: its scaled gradients overflowed in all 9 steps,
    no update was applied (global step 0), and the note said only "the first steps" skip their update."""
    from npu_jupyter._runtime.observe.drift_ranking import discarded_overflow_note

    scaled = {"max_abs": float("nan"), "rel_rmse": float("nan"), "rmse": float("nan"), "ref_rms": 4.7e8}
    note = discarded_overflow_note({"grad/MatMul": scaled}, False, overflow_steps=9, steps=9)
    assert "float32 stayed finite (in 9 of the 9 steps compared, measured), so they lead" in note
    assert "as on the device: if these are such gradients, those 9 steps applied no update. Absorbed" in note
    uncounted = discarded_overflow_note({"grad/MatMul": scaled}, False)  # a function's report counts none
    assert "steps compared" not in uncounted and "as on the device. Absorbed" in uncounted


def test_the_overflow_note_leaves_out_copies_as_the_ranking_does():
    """GRU4Rec_ID0128: the note's three names included gradients/MatMul_grad/tuple/control_dependency, an
    Identity of the MatMul gradient beside it, which the Largest drift line itself leaves out."""
    from npu_jupyter._runtime.observe.drift_ranking import discarded_overflow_note

    scaled = {"max_abs": float("nan"), "rel_rmse": float("nan"), "rmse": float("nan"), "ref_rms": 4.7e8}
    drift = {"grad/MatMul": scaled, "grad/tuple/control_dependency": scaled, "grad/Sum": scaled}
    types = {"grad/MatMul": "MatMul", "grad/tuple/control_dependency": "Identity", "grad/Sum": "Sum"}
    note = discarded_overflow_note(drift, False, op_types=types)
    assert note.startswith("Overflows that did not reach the results: grad/MatMul, grad/Sum went inf/NaN")
    # without the types (or when only copies overflowed) the names are kept as they are
    assert "control_dependency" in discarded_overflow_note(drift, False)
    only_copy = {"grad/tuple/control_dependency": scaled}
    assert "control_dependency" in discarded_overflow_note(only_copy, False, op_types=types)
