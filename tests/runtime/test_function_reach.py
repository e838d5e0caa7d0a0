"""An inf/NaN that stays inside a traced function: no finding, as for a session's unfetched overflow.

Trial: a TF2 attention step with a ``-1e9`` mask under ``allow_mix_precision`` (the mask's ``add`` is
``-inf`` in float16, the softmax reads it as 0, loss and weights stay finite) reported "First
non-finite value: add ... values inside the function became non-finite", where the same program in a
TF1 session is no finding and, with ``--reference``, notes "Overflows that did not reach the results".
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter._runtime.functions.reach import stayed_inside

needs_functions = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _masked_attention_step():
    """A tf.function training step whose -1e9 causal mask overflows in float16 and reaches nothing."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    q = tf.Variable(rng.normal(size=(8, 8)).astype("float32"))
    x = tf.constant(rng.normal(size=(2, 4, 8)).astype("float32"))
    mask = tf.constant(np.tril(np.ones((4, 4), "float32")))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            h = tf.einsum("bsd,de->bse", x, q)
            logits = tf.matmul(h, h, transpose_b=True)
            logits = tf.add(logits, (1.0 - mask) * -1e9, name="masked")
            loss = tf.reduce_mean(tf.matmul(tf.nn.softmax(logits), h) ** 2)
        q.assign_sub(0.01 * tape.gradient(loss, q))
        return loss

    return step, x, q


@needs_functions
def test_a_masked_overflow_that_reaches_no_result_is_no_finding_and_the_report_says_so():
    from npu_jupyter._display.mime import report_payload

    step, x, q = _masked_attention_step()
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, reference=True) as emulation:
        losses = [float(step(x)) for _ in range(2)]
    (report,) = emulation.reports.values()
    assert all(np.isfinite(losses)) and np.isfinite(q.numpy()).all()
    assert not np.isfinite(report.drift["masked"]["rel_rmse"])  # it did go -inf in float16 ...
    assert report.non_finite is None  # ... but reached neither the loss nor the weights
    notes = report_payload(report)["notes"]
    assert any(n.startswith("Overflows that did not reach the results: masked went inf/NaN") for n in notes)


@needs_functions
def test_an_overflow_a_variable_write_reads_stays_a_finding_though_the_return_is_finite():
    import tensorflow as tf

    v = tf.Variable(np.zeros((2, 2), "float32"))
    a = tf.constant(np.full((2, 2), 300.0, "float32"))

    @tf.function
    def step(a):
        big = tf.matmul(a, a, name="big")  # 180000: inf in float16
        v.assign(tf.identity(big, name="copy"))  # a pass-through the thinned flags would drop
        return tf.reduce_sum(a, name="fine")

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        out = step(a).numpy()
    (report,) = emulation.reports.values()
    assert np.isfinite(out) and not np.isfinite(v.numpy()).all()
    flagged = {w.op for observer in emulation._observers.values() for w in observer.flagged}
    assert "copy" in flagged  # the write's value keeps its flag: whether an inf left the body is read there
    assert report.non_finite is not None and report.non_finite.first_op == "big"


def test_values_that_cannot_be_read_or_bodies_without_provenance_leave_it_undecided():
    """A Keras function's Optional (a variant) hides its values; a body with no provenance is not checked."""
    provenance = SimpleNamespace(sinks=set(), float_inputs={}, exact_constants=set(), nonfinite_constants=set())
    observer = SimpleNamespace(provenance=provenance, callees={}, flagged=[])
    observers = {"f": observer}
    assert stayed_inside([np.float32(1.0)], [], observers)  # type: ignore[arg-type]
    variant = SimpleNamespace(dtype=SimpleNamespace(is_numpy_compatible=False))
    assert not stayed_inside([variant], [], observers)  # type: ignore[arg-type]
    assert not stayed_inside([], [], observers)  # type: ignore[arg-type]
    blind = {"f": SimpleNamespace(provenance=None, callees={}, flagged=[])}
    assert not stayed_inside([np.float32(1.0)], [], blind)  # type: ignore[arg-type]
    provenance.sinks = {("w", 0)}  # a write reads an unflagged value: cannot tell
    assert not stayed_inside([np.float32(1.0)], [], observers)  # type: ignore[arg-type]
