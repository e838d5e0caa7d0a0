"""Runtime test helpers: hand-made plans, so the emulator's mechanics are tested independently of the planner."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def hand_plan(graph, half_types=(), *, dtype="float16", engine="AI_CORE"):
    """A Plan that lowers every float32 input and output of ops whose type is in ``half_types``."""
    from npu_jupyter._plan.model import OpDecision, Plan

    ops = {}
    for op in graph.get_operations():
        lower = op.type in half_types

        def decide(t):
            base = t.dtype.base_dtype.name
            return dtype if lower and base == "float32" and not t.dtype._is_ref_dtype else base

        outs = [decide(t) for t in op.outputs]
        first = next((t.dtype.base_dtype.name for t in op.outputs if t.dtype.base_dtype.is_floating), None)
        before = first or (op.outputs[0].dtype.base_dtype.name if op.outputs else "")
        after = dtype if lower and before == "float32" else before
        ops[op.name] = OpDecision(
            name=op.name,
            op_type=op.type,
            placement="device",
            engine=engine,
            placement_reason="hand-made test plan",
            dtype_before=before,
            dtype_after=after,
            precision_reason="hand-made test plan",
            inputs=[t.op.name for t in op.inputs],
            input_dtypes=[decide(t) for t in op.inputs],
            output_dtypes=outs,
        )
    return Plan(ops=ops)


def hand_plan_fn(half_types=(), **kwargs):
    """A ``plan_fn`` for EmulatorSession: hand_plan of the session's graph (fetches ignored)."""

    def plan_fn(graph, config, fetches=None):
        return hand_plan(graph, half_types, **kwargs)

    return plan_fn


@pytest.fixture
def hand():
    """The hand-made plan helpers: ``hand.plan(graph, half_types)``, ``hand.plan_fn(half_types)``."""
    import types

    return types.SimpleNamespace(plan=hand_plan, plan_fn=hand_plan_fn)


@pytest.fixture
def tf():
    import tensorflow as tf

    return tf


@pytest.fixture(params=["casts", "kernel"])
def rounding(request):
    """Run the test with each storage-rounding form: TensorFlow's Cast pairs, and the built ``NpuEmuRound``.

    The kernel form is skipped, with the reason, where the kernel is not built (``./dev.sh setup``
    builds it; tests/runtime/test_round_kernel.py fails where it should have been built and was not).
    A MonkeyPatch of its own: a test's ``monkeypatch.undo()`` must not switch the form mid-test.
    """
    from npu_jupyter._runtime import round_kernel

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(round_kernel.SWITCH_ENV, "0" if request.param == "casts" else "1")
        if request.param == "kernel" and not round_kernel.in_use():
            pytest.skip(round_kernel.status())
        yield request.param
