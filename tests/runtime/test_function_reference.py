"""Drift inside traced functions: a float32 shadow of each body, compared with the stored values in the same call."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._runtime.functions import emulator as functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _matmul_function():
    """``relu(x @ w) * 2`` in a tf.function, with its float32 inputs."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x_value = rng.normal(size=(8, 16)).astype("float32")
    w_value = rng.normal(size=(16, 4)).astype("float32")
    w = tf.Variable(w_value)

    @tf.function
    def project(x):
        return tf.nn.relu(tf.matmul(x, w, name="mm")) * 2.0

    return project, tf.constant(x_value), x_value, w_value


def _definition(function, *args):
    from tensorflow.python.eager import context

    name = function.get_concrete_function(*args).function_def.signature.name
    return context.context().get_function_def(name)


def _half(value):
    return value.astype(np.float16).astype(np.float32)


def test_drift_of_a_rounded_matmul_is_its_float16_error_against_a_plain_float32_matmul():
    """force_fp16 stores the MatMul's inputs and output in float16; the shadow multiplies in float32."""
    from npu_jupyter._runtime.observe.compare import metrics

    project, x, x_value, w_value = _matmul_function()
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        project(x)
    (report,) = emulation.reports.values()
    stored = _half(_half(x_value) @ _half(w_value))  # what the device stores
    expected = metrics(stored, x_value @ w_value)  # against plain float32 of the same inputs
    got = report.drift["mm"]
    assert got["max_abs"] == pytest.approx(expected["max_abs"], rel=1e-3)
    assert got["max_rel"] == pytest.approx(expected["max_rel"], rel=1e-3)
    assert got["rmse"] == pytest.approx(expected["rmse"], rel=1e-3)
    assert got["accumulated_rel"] == pytest.approx(expected["accumulated_rel"], rel=1e-3)
    assert got["cos"] == pytest.approx(expected["cosine"], abs=1e-9)
    assert 1e-4 < got["accumulated_rel"] < 2e-3  # float16 keeps ~11 bits: relative error ~ 1e-3
    assert got["rel_rmse"] == pytest.approx(expected["rel_rmse"], rel=1e-3)
    assert got["step"] == 0  # the call it was measured in
    assert got["ref_rms"] == pytest.approx(expected["ref_rms"], rel=1e-6) and got["size"] == expected["size"]
    fields = {"max_abs", "max_rel", "cos", "rmse", "accumulated_rel", "rel_rmse", "ref_rms", "size", "step"}
    assert set(got) == fields  # as sessions


def test_nothing_rounded_means_zero_drift():
    project, x, _, _ = _matmul_function()
    with functions.FunctionEmulation({"precision_mode": "must_keep_origin_dtype"}, reference=True) as emulation:
        project(x)
        project(x)
    (report,) = emulation.reports.values()
    assert report.emulation == {} and report.steps == 2
    assert {"mm", "Relu", "mul"} <= set(report.drift)
    for row in report.drift.values():
        assert row["max_abs"] == 0.0 and row["max_rel"] == 0.0 and row["rmse"] == 0.0 and row["cos"] == 1.0


def test_no_shadow_node_is_added_when_drift_is_off():
    from npu_jupyter._runtime.functions.reference import REF_SUFFIX, REFERENCE_SCOPE

    project, x, _, _ = _matmul_function()
    project(x)
    original = _definition(project, x)
    with functions.FunctionEmulation({"precision_mode": "must_keep_origin_dtype"}) as emulation:
        project(x)
        unchanged = _definition(project, x)
    assert unchanged == original  # a float32-preserving cell runs the original function
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        project(x)
        rounded = _definition(project, x)
    assert not any(REF_SUFFIX in n.name or REFERENCE_SCOPE in n.name for n in rounded.node_def)
    (report,) = emulation.reports.values()
    assert report.drift == {}
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True):
        project(x)
        shadowed = _definition(project, x)
    assert any(n.name == "mm" + REF_SUFFIX for n in shadowed.node_def)
    assert _definition(project, x) == original  # leaving the emulation puts the original back


def test_stateful_ops_are_never_shadowed_and_state_changes_once_per_call():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    from npu_jupyter._runtime.functions.reference import REF_SUFFIX

    counter = tf.Variable(0.0)
    w = tf.Variable(np.full((4, 4), 0.5, np.float32))

    @tf.function
    def step(x):
        noise = tf.random.uniform([4, 4], seed=1)  # a stateful random op
        counter.assign_add(1.0)
        y = tf.matmul(x, w + noise)
        w.assign(w * 0.5)
        return tf.reduce_sum(y) + counter

    x = tf.ones([2, 4])
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, reference=True) as emulation:
        for _ in range(3):
            step(x)
        definition = _definition(step, x)
    assert float(counter.numpy()) == 3.0  # the shadow wrote nothing: one increment per call
    assert np.allclose(w.numpy(), 0.5 * 0.5**3)
    names = {n.name: n for n in definition.node_def}
    shadows = [n for n in definition.node_def if n.name.endswith(REF_SUFFIX)]
    assert shadows
    for node in shadows:
        assert not op_def_registry.get(node.op).is_stateful, node.op
        assert not any(ref.startswith("^") for ref in node.input)  # control inputs are dropped
        assert node.name[: -len(REF_SUFFIX)] in names  # a shadow of a node of the original body
    stateful_types = {"RandomUniform", "AssignAddVariableOp", "AssignVariableOp", "ReadVariableOp"}
    assert stateful_types <= {n.op for n in definition.node_def}
    assert not stateful_types & {n.op for n in shadows}
    (report,) = emulation.reports.values()
    assert report.steps == 3 and report.drift


def test_observer_nodes_and_the_emulations_casts_get_no_shadow():
    """allow_mix_precision adds Cast round trips and DebugNumericSummaryV2 flags; only the body is shadowed."""
    from npu_jupyter._runtime.functions.observe_nodes import OBSERVE_SCOPE
    from npu_jupyter._runtime.functions.reference import REF_SUFFIX

    project, x, _, _ = _matmul_function()
    project(x)
    original = {n.name for n in _definition(project, x).node_def}
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, reference=True):
        project(x)
        definition = _definition(project, x)
    added_casts = [n for n in definition.node_def if n.op == "Cast" and n.name not in original]
    assert added_casts and any(n.op == "DebugNumericSummaryV2" for n in definition.node_def)
    shadowed = {n.name[: -len(REF_SUFFIX)] for n in definition.node_def if n.name.endswith(REF_SUFFIX)}
    assert shadowed and shadowed <= original
    assert not any(OBSERVE_SCOPE in name for name in shadowed)


def test_a_nested_function_is_shadowed_in_its_own_body_and_its_call_is_a_source():
    import tensorflow as tf

    from npu_jupyter._runtime.functions.reference import REF_SUFFIX

    w = tf.constant(np.random.default_rng(3).normal(size=(16, 16)).astype("float32"))  # no resource input

    @tf.function
    def inner(x):
        return tf.matmul(x, w, name="inner_mm")

    @tf.function
    def outer(x):
        return tf.reduce_sum(inner(x) * 3.0, name="total")

    x = tf.constant(np.random.default_rng(4).normal(size=(4, 16)).astype("float32"))
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        outer(x)
        outer_def = _definition(outer, x)
    (report,) = emulation.reports.values()
    assert any(name.endswith("inner_mm") and row["max_abs"] > 0 for name, row in report.drift.items())
    calls = [n.name for n in outer_def.node_def if n.op in ("StatefulPartitionedCall", "PartitionedCall")]
    assert calls and not any(n.name in {c + REF_SUFFIX for c in calls} for n in outer_def.node_def)


def _keras_losses(config, reference, epochs=2):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.layers.Input((8, 8, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 8, 8, 3)).astype("float32"), rng.integers(0, 10, 64)
    with functions.FunctionEmulation(config, reference=reference) as emulation:
        losses = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history["loss"]
    return losses, emulation


def test_keras_fit_with_drift_trains_exactly_as_without_and_shows_drift_on_lowered_ops():
    from npu_jupyter._runtime.functions.reference import DRIFT_NOTE

    mixed = {"precision_mode": "allow_mix_precision"}
    plain, _ = _keras_losses(mixed, reference=False)
    losses, emulation = _keras_losses(mixed, reference=True)
    assert losses == plain  # the shadow never changes the emulated numbers
    (report,) = emulation.reports.values()
    assert report.steps == 8 and DRIFT_NOTE in report.notes
    lowered = list(report.emulation)  # named as the report names ops (function/op in called functions)
    convolution = [op for op in lowered if op.endswith("convolution") and op in report.drift]
    assert convolution and all(report.drift[op]["max_abs"] > 0 for op in convolution)
    assert report.drift[convolution[0]]["cos"] > 0.999
    # a view (Identity, Reshape ...) of a compared tensor takes its row instead of a second comparison
    main = report.function.plan_function
    aliases = [(fn, view, target) for fn, ref in emulation._references.items() for view, target in ref.aliases]
    assert aliases
    for fn, view, target in aliases:
        watched = emulation._references[fn].watched
        assert view not in watched and target in watched
        named = [op if fn == main else f"{fn}/{op}" for op, _ in (view, target)]
        if "IdentityN" not in view[0]:  # an IdentityN's row is the worst of several outputs
            assert report.drift[named[0]] == report.drift[named[1]]
    kept, emulation = _keras_losses({"precision_mode": "must_keep_origin_dtype"}, reference=True)
    (report,) = emulation.reports.values()
    assert report.drift and all(row["max_abs"] == 0.0 for row in report.drift.values())


def test_drift_shows_in_the_report_views():
    from npu_jupyter._display.mime import report_payload

    project, x, _, _ = _matmul_function()
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        project(x)
    (report,) = emulation.reports.values()
    ops = {op["n"]: op for op in report_payload(report)["ops"]}
    assert ops["mm"]["dr"]["max_abs"] > 0


def _tape_losses(reference, steps=4):
    """A custom GradientTape training loop in a tf.function, under allow_mix_precision."""
    import tensorflow as tf

    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(32, 16)).astype("float32"))
    y = tf.constant(rng.normal(size=(32, 1)).astype("float32"))
    w1 = tf.Variable(rng.normal(size=(16, 8)).astype("float32") * 0.3)
    w2 = tf.Variable(rng.normal(size=(8, 1)).astype("float32") * 0.3)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) - y))
        for var, grad in zip((w1, w2), tape.gradient(loss, [w1, w2])):
            var.assign_sub(0.1 * grad)
        return loss

    config = {"precision_mode": "allow_mix_precision"}
    with functions.FunctionEmulation(config, reference=reference) as emulation:
        losses = [float(train_step()) for _ in range(steps)]
    return losses, emulation


def test_a_gradient_tape_loop_with_drift_trains_exactly_as_without():
    plain, _ = _tape_losses(reference=False)
    losses, emulation = _tape_losses(reference=True)
    assert losses == plain
    (report,) = emulation.reports.values()
    assert report.steps == 4
    assert any("MatMul" in op and row["max_abs"] > 0 for op, row in report.drift.items())


def test_the_in_graph_sums_finish_into_compare_metrics():
    """The nine sums, finished in Python, give compare.metrics' five numbers (zeros, inf included)."""
    from npu_jupyter._runtime.functions.reference import finish
    from npu_jupyter._runtime.observe.compare import metrics

    def sums(a, b):
        a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
        diff = np.abs(a - b)
        with np.errstate(all="ignore"):
            rel = diff / np.maximum(np.abs(b), 1e-7)
            return [diff.max(initial=-np.inf), rel.max(initial=-np.inf), diff.sum(), np.abs(b).sum(),
                    (diff * diff).sum(), (a * b).sum(), (a * a).sum(), (b * b).sum(), a.size]  # fmt: skip

    rng = np.random.default_rng(5)
    b = rng.normal(size=100)
    for a, ref in [(b + rng.normal(size=100) * 1e-3, b), (np.zeros(4), np.zeros(4)), (np.zeros(3), b[:3])]:
        got, want = finish(sums(a, ref)), metrics(a, ref)
        assert got["cos"] == pytest.approx(want["cosine"], abs=1e-12)
        for key in ("max_abs", "max_rel", "rmse", "accumulated_rel", "rel_rmse"):
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-300)
    assert finish(sums([], []))["max_abs"] == 0.0 and finish(sums([], []))["cos"] == 1.0
    for size in (2, 3, 4, 41):  # identical tensors: cosine exactly 1 whatever dot / |a||b| rounds to
        same = np.linspace(-3, 3, size)
        assert finish(sums(same, same))["cos"] == 1.0
    overflowed = finish(sums([np.inf, 1.0], [70000.0, 1.0]))
    assert overflowed["max_abs"] == np.inf and np.isnan(overflowed["cos"])


def test_each_op_keeps_its_worst_drift_over_calls_and_the_call_it_came_from():
    from types import SimpleNamespace

    from npu_jupyter._runtime.functions.reference import merge_drift

    def row(rel, max_abs=0.1):  # the reference's scale is 1 (norm2_b = size): rmse = rel
        return [max_abs, 5.0, rel, 1.0, rel**2, 1.0, 1.0, 1.0, 1.0]

    report = SimpleNamespace(drift={})
    names = {"f": lambda op: op, "g": lambda op: f"g/{op}"}
    merge_drift(report, [("f", [("a", 0), ("a", 1)], np.array([row(0.1), row(0.3)]))], lambda fn, op: names[fn](op), 0)
    merge_drift(report, [("f", [("a", 0)], np.array([row(0.2, max_abs=9.0)]))], lambda fn, op: names[fn](op), 1)
    merge_drift(report, [("g", [("b", 0)], np.array([row(0.5)]))], lambda fn, op: names[fn](op), 2)
    merge_drift(report, [("h", [("c", 0)], np.array([row(9.0)]))], lambda fn, op: None, 3)  # another report's
    # worst by relative RMSE (not by max_abs: call 1's larger max_abs has the smaller rel. RMSE)
    assert report.drift["a"]["rel_rmse"] == pytest.approx(0.3) and report.drift["a"]["step"] == 0
    assert report.drift["g/b"]["rel_rmse"] == pytest.approx(0.5) and report.drift["g/b"]["step"] == 2
    assert set(report.drift) == {"a", "g/b"}
    merge_drift(report, [("f", [("a", 0)], np.array([row(np.nan)]))], lambda fn, op: names[fn](op), 4)
    assert np.isnan(report.drift["a"]["rel_rmse"]) and report.drift["a"]["step"] == 4  # NaN counts as worse


def test_a_float16_overflow_shows_as_infinite_drift_against_the_finite_float32_shadow():
    import tensorflow as tf

    big = tf.constant([[60000.0, 70000.0]])

    @tf.function
    def scale():
        return tf.matmul(big, tf.constant([[2.0], [2.0]]), name="scaled")

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        out = scale().numpy()
    assert not np.isfinite(out).all()
    (report,) = emulation.reports.values()
    row = report.drift["scaled"]
    assert row["max_abs"] == np.inf and np.isnan(row["cos"])  # float16 inf against float32's 260000


def test_a_consumer_that_rounds_nothing_itself_reads_the_rounded_output():
    """Consumers read what the device stored: the rounded output, also when they do not round their inputs.

    (Found through drift: a function body's GraphDef spells slot 0 as ``op:0``, which the rewiring of
    rounded outputs missed, so an ``IdentityN`` after a rounded MatMul read the float32 product.)
    """
    import tensorflow as tf

    # Seed 39: every exact product lies 8x farther from a float16 rounding boundary than float32 summation
    # in any order can move it, so the exact comparison holds whatever order the CPU's kernel sums in.
    rng = np.random.default_rng(39)
    x_value, w_value = rng.normal(size=(4, 16)).astype("float32"), rng.normal(size=(16, 4)).astype("float32")
    w = tf.constant(w_value)

    @tf.function
    def passed_on(x):
        return tf.identity_n([tf.matmul(x, w, name="mm")], name="pass")[0]

    x = tf.constant(x_value)
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        out = passed_on(x).numpy()
    (report,) = emulation.reports.values()
    assert "mm" in report.emulation and "pass" not in report.emulation
    np.testing.assert_array_equal(out, _half(_half(x_value) @ _half(w_value)))


def test_the_same_nan_in_the_shadow_is_no_drift_but_a_float16_overflow_still_is():
    """A NaN the float32 program makes by design (dropped later by a select) ranked as the worst drift."""
    import tensorflow as tf

    @tf.function
    def masked(x):
        with_nan = tf.add(tf.constant([np.nan, 0.0, 0.0]), x, name="with_nan")  # NaN in float32 too
        big = tf.multiply(x, 30000.0, name="big")  # 2.5 x 30000 overflows float16 only
        return tf.where(tf.math.is_nan(with_nan), tf.zeros_like(x), with_nan) + big

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        masked(tf.constant([1.0, 2.0, 2.5]))
    (report,) = emulation.reports.values()
    same = report.drift["with_nan"]
    assert same["max_abs"] == pytest.approx(0.0) and same["rel_rmse"] == pytest.approx(0.0) and same["cos"] == 1.0
    assert report.drift["big"]["max_abs"] == np.inf  # only the emulation went inf: still a drift


def test_a_non_finite_finding_with_the_reference_on_does_not_say_float32_was_not_checked():
    import tensorflow as tf

    big = tf.constant([[60000.0, 70000.0]])

    @tf.function
    def scale():
        return tf.matmul(big, tf.constant([[2.0], [2.0]]), name="scaled") * 1.0

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
        scale()
    (report,) = emulation.reports.values()
    assert report.non_finite is not None and report.non_finite.where.endswith("scaled")
    assert "not checked" not in report.non_finite.message
    assert "drift against the float32 shadow" in report.non_finite.message


def test_the_drift_note_is_whole_sentences_that_say_where_the_shadows_time_goes():
    """Review: the note ended mid-sentence ("… the shadow's CPU time is part of each call's")."""
    from npu_jupyter._runtime.functions.reference import DRIFT_NOTE

    assert DRIFT_NOTE.endswith(".") and not DRIFT_NOTE.endswith("call's")
    assert "each call's wall-clock time includes it; the per-op times leave it out." in DRIFT_NOTE


def test_the_shared_inf_nan_are_masked_only_on_calls_where_a_sum_is_not_finite_with_the_same_numbers():
    """The dozen masking ops per tensor sit behind a Switch; a masked call and an unmasked one agree."""
    import tensorflow as tf

    from npu_jupyter._runtime.functions.reference import REFERENCE_SCOPE

    @tf.function
    def scaled(x):
        return tf.multiply(x, 30000.0, name="big") + 1.0

    def drift(values):
        with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as emulation:
            scaled(tf.constant(values))
        (report,) = emulation.reports.values()
        definition = emulation._handled[report.fetches[0]][0].definition
        return {k: v for k, v in report.drift["big"].items() if k != "step"}, definition

    with_nan, definition = drift([np.nan, 1.7])  # NaN in the shadow too: masked, then compared
    finite, _ = drift([1.7])
    assert with_nan == finite and finite["max_abs"] > 0
    nodes = {node.name: node for node in definition.node_def}

    def behind_a_switch(name, seen=()):  # a node with a dead input is dead (not run)
        node = nodes[name]
        inputs = [ref.lstrip("^").split(":")[0] for ref in node.input]
        return node.op == "Switch" or any(
            behind_a_switch(i, (*seen, name)) for i in inputs if i in nodes and i not in seen
        )

    masking = [n.name for n in definition.node_def if REFERENCE_SCOPE in n.name and n.op in ("IsNan", "SelectV2")]
    assert masking and all(behind_a_switch(name) for name in masking)
