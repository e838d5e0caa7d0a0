"""TF2 code on the emulator: Keras fit and GradientTape loops run in the plan's precisions, then restored."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._display.mime import report_payload
from npu_jupyter._runtime.functions import emulator as functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")


def _keras_cnn_losses(config, epochs=3):
    """Loss per epoch of a small Keras 3 CNN trained with a fixed seed (under the emulation if config)."""
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
    if config is None:
        return model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history["loss"], None, None
    with functions.FunctionEmulation(config) as emulation:
        losses = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history["loss"]
    after = model.fit(x, y, epochs=1, batch_size=16, verbose=0).history["loss"]
    return losses, emulation, after


def _rule_notes(report):
    """The report's notes but the set-up time (tests/runtime/test_functions.py checks that one on its own)."""
    return [n for n in report.notes if not n.startswith("Emulation set-up: ")]


def test_keras_fit_under_mixed_precision_trains_with_float16_rounding():
    plain, _, _ = _keras_cnn_losses(None)
    losses, emulation, _ = _keras_cnn_losses({"precision_mode": "allow_mix_precision"})
    assert losses != plain  # the rounding changed the trajectory
    assert np.allclose(losses, plain, rtol=1e-2)  # ... by float16-sized amounts
    (report,) = emulation.reports.values()
    assert report.steps == 12  # 3 epochs x 4 batches
    assert report.plan is not None and any(d.dtype_after == "float16" for d in report.plan.ops.values())
    assert any("Conv2D" in op or "convolution" in op for op in report.emulation)
    assert _rule_notes(report) == [functions.KERAS3_NOTE, functions.TF2_RULE_NOTE]  # Keras 3 traced the graph


def test_must_keep_origin_dtype_matches_a_plain_run_bit_for_bit():
    plain, _, _ = _keras_cnn_losses(None)
    losses, emulation, _ = _keras_cnn_losses({"precision_mode": "must_keep_origin_dtype"})
    assert losses == plain
    (report,) = emulation.reports.values()
    assert report.emulation == {}


def test_leaving_the_emulation_restores_the_original_functions():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 3)).astype("float32")
    weights = model.get_weights()
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}):
        model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    model.set_weights(weights)
    after = model.fit(x, y, epochs=1, batch_size=32, verbose=0).history["loss"]
    model.set_weights(weights)
    plain = model.fit(x, y, epochs=1, batch_size=32, verbose=0).history["loss"]
    assert after == plain


def _tape_losses(config, steps=4):
    """A custom GradientTape training loop in a tf.function (a two-layer MLP)."""
    import tensorflow as tf

    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(32, 16)).astype("float32"))
    y = tf.constant(rng.normal(size=(32, 1)).astype("float32"))
    w1 = tf.Variable(rng.normal(size=(16, 32)).astype("float32") * 0.3)
    w2 = tf.Variable(rng.normal(size=(32, 1)).astype("float32") * 0.3)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.05 * g1)
        w2.assign_sub(0.05 * g2)
        return loss

    if config is None:
        return [float(train_step()) for _ in range(steps)], None
    with functions.FunctionEmulation(config) as emulation:
        losses = [float(train_step()) for _ in range(steps)]
    return losses, emulation


def test_a_gradient_tape_loop_trains_in_the_decided_precision():
    plain, _ = _tape_losses(None)
    losses, emulation = _tape_losses({"precision_mode": "allow_mix_precision"})
    assert losses != plain and np.allclose(losses, plain, rtol=1e-2)
    (report,) = emulation.reports.values()
    assert report.steps == 4 and any("MatMul" in op for op in report.emulation)
    same, _ = _tape_losses({"precision_mode": "must_keep_origin_dtype"})
    assert same == plain


def test_a_non_finite_function_output_is_reported():
    import tensorflow as tf

    big = tf.constant([60000.0, 70000.0])

    @tf.function
    def scale():
        return tf.matmul(tf.reshape(big, (1, 2)), tf.constant([[2.0], [2.0]]))

    plain = scale().numpy()
    assert np.isfinite(plain).all()  # float32 holds 260000
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        out = scale().numpy()
    assert not np.isfinite(out).all()  # float16 tops out at 65504
    (report,) = emulation.reports.values()
    assert report.non_finite.step == 0 and any("non-finite" in w for w in report.warnings)


# ------------------------------------------------------------------ observation inside functions


def _overflowing_keras_fit(config, epochs=1):
    """A Keras 3 MLP whose first Dense layer outputs ~66000 (> 65504, the float16 maximum)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.layers.Input((4,)),
            keras.layers.Dense(8, kernel_initializer=keras.initializers.Constant(300.0), name="big"),
            keras.layers.Dense(1, name="out"),
        ]
    )
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.uniform(55, 60, size=(32, 4)).astype("float32")
    y = rng.normal(size=(32, 1)).astype("float32")
    with functions.FunctionEmulation(config) as emulation:
        history = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0).history
    return history, emulation


def test_keras_fit_overflowing_float16_names_the_first_non_finite_op():
    history, emulation = _overflowing_keras_fit({"precision_mode": "allow_mix_precision"})
    assert not np.isfinite(history["loss"]).all()
    (report,) = emulation.reports.values()
    finding = report.non_finite
    # the Dense layer's MatMul is the first op stored in float16 beyond its range (inside the nested
    # one_step_on_data function the Keras train function calls)
    assert finding.first_op.endswith("big_1/MatMul") and finding.op_type == "MatMul"
    assert finding.decided_dtype == "float16" and finding.rounded is True and finding.step == 0
    assert report_payload(report)["run"]["nonfinite"]["first_op"] == finding.first_op  # the one record, shown
    assert any(finding.first_op in w and "65504" in w for w in report.warnings)
    assert finding.first_op in report.plan.ops  # the op of the function whose plan the report shows
    history, emulation = _overflowing_keras_fit({"precision_mode": "must_keep_origin_dtype"})
    assert np.isfinite(history["loss"]).all()  # float32 holds the values: nothing to report
    (report,) = emulation.reports.values()
    assert report.non_finite is None and report.overflow_ops == []


def test_a_gradient_tape_loop_overflowing_float16_names_the_first_non_finite_op():
    import tensorflow as tf

    rng = np.random.default_rng(3)
    x = tf.constant(rng.uniform(50, 60, size=(8, 4)).astype("float32"))
    w1 = tf.Variable(np.full((4, 8), 300.0, np.float32))
    w2 = tf.Variable(rng.normal(size=(8, 1)).astype("float32"))

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            hidden = tf.matmul(x, w1, name="wide")
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2, name="narrow")))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(1e-9 * g1)
        w2.assign_sub(1e-9 * g2)
        return loss

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        losses = [float(train_step()) for _ in range(2)]
    assert not np.isfinite(losses).all()
    (report,) = emulation.reports.values()
    finding = report.non_finite
    assert finding.first_op == "wide" and finding.decided_dtype == "float16" and finding.rounded
    assert finding.outputs == (0,)  # the loss the function returned


def test_a_nested_function_s_op_is_named_with_its_function():
    import tensorflow as tf

    big = tf.constant(np.full((2, 2), 200.0, np.float32))

    @tf.function
    def inner(a):
        return tf.matmul(a, a, name="square") + 1.0

    @tf.function
    def outer():
        padded = tf.pad(big, [[0, 0], [0, 0]])
        more = tf.concat([padded, padded], 0)
        return tf.reduce_sum(inner(tf.identity(big))) + tf.reduce_sum(more) * tf.reduce_sum(more * 2.0)

    with functions.FunctionEmulation({"precision_mode": "force_fp16"}) as emulation:
        out = outer().numpy()
    assert not np.isfinite(out)
    (report,) = emulation.reports.values()
    finding = report.non_finite
    assert finding.op_type == "MatMul" and finding.first_op.endswith("/square")  # 2 * 200 * 200 = 80000
    assert finding.function != report.fetches[0] and finding.first_op.startswith(finding.function)


def test_overflow_detection_flags_ops_even_when_nothing_is_rounded(tmp_path):
    import tensorflow as tf

    @tf.function
    def blow_up(x):
        return tf.reduce_sum(tf.exp(x, name="grow"))

    config = {"precision_mode": "must_keep_origin_dtype", "enable_dump_debug": True, "dump_path": str(tmp_path)}
    with functions.FunctionEmulation(config) as emulation:
        blow_up(tf.constant([1.0, 2.0]))  # finite
        blow_up(tf.constant([1.0, 100.0]))  # exp(100) overflows float32
    (report,) = emulation.reports.values()
    assert report.emulation == {}  # nothing rounded: the observer alone made the rewrite
    assert report.first_overflow == "grow" and "grow" in report.overflow_ops
    assert report.first_overflow_by_step == {1: "grow"}
    from npu_jupyter._runtime.observe.dump import load_dump

    dump = load_dump(str(tmp_path))
    assert dump.steps == [1]  # the overflow dump of the call that overflowed
    step = dump[1]
    assert step.first_overflow == "grow" and step.manifest["dump_mode"] == "overflow"
    assert np.isinf(step["grow"][0]).any()


def test_the_first_overflow_is_the_first_overflowing_call_s_not_the_last_one_s(tmp_path):
    """A report's "First overflow" is the op that overflowed first, in the earliest call that overflowed.

    ModelZoo DIN under force_fp16: call 0 overflowed in the attention mask's Mul, later calls (NaN weights)
    first in the embedding lookup; the report named the lookup as "First overflow" next to "First
    non-finite value: ...mul_1 at step 0".
    """
    import tensorflow as tf

    @tf.function
    def two_exps(x, y):
        return tf.exp(x, name="grow_x") + tf.exp(y, name="grow_y")

    config = {"precision_mode": "must_keep_origin_dtype", "enable_dump_debug": True, "dump_path": str(tmp_path)}

    def two_calls():
        two_exps(tf.constant([100.0]), tf.constant([1.0]))  # exp(100) overflows float32 in grow_x
        two_exps(tf.constant([1.0]), tf.constant([100.0]))  # ... then in grow_y only

    with functions.FunctionEmulation(config) as emulation:
        two_calls()
    (report,) = emulation.reports.values()
    assert report.first_overflow_by_step == {0: "grow_x", 1: "grow_y"}
    assert report.first_overflow == "grow_x"


def test_a_function_reading_a_variable_another_function_made_non_finite_says_the_variable_held_it(tmp_path):
    """ModelZoo DIN under force_fp16: fit's train step made the embedding table NaN; evaluate's report named
    its embedding lookup with "an input or the op itself (log(0), 0/0, ...)" and advised a float32 shadow,
    which reads the same variable."""
    import tensorflow as tf

    table = tf.Variable(np.ones((4, 2), np.float32))

    @tf.function
    def train_step(x):
        table.assign_add(tf.math.log(x, name="log") * tf.ones((4, 2)))  # log(-1): NaN written into the table
        return tf.reduce_sum(x)

    @tf.function
    def eval_step(ids):
        return tf.reduce_sum(tf.gather(table, ids))

    config = {"precision_mode": "must_keep_origin_dtype", "enable_dump_debug": True, "dump_path": str(tmp_path)}

    def fit_then_evaluate():
        train_step(tf.constant(-1.0))
        eval_step(tf.constant([0, 2]))

    with functions.FunctionEmulation(config) as emulation:
        fit_then_evaluate()
    train, evaluate = emulation.reports.values()
    assert train.non_finite is not None and train.non_finite.where == "log"
    finding = evaluate.non_finite
    assert finding is not None and finding.op_type == "ResourceGather"
    assert "it reads a variable whose values were already inf/NaN, put there by a write" in finding.reason
    assert "log(0)" not in finding.reason and "run with reference=True" not in finding.reason


def test_dump_round_trips_through_load_dump_with_the_decided_dtypes(tmp_path):
    import tensorflow as tf

    from npu_jupyter._runtime.observe.dump import load_dump

    w = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))

    @tf.function
    def layer(x):
        return tf.nn.relu(tf.matmul(x, w, name="project"), name="act")

    config = {
        "precision_mode": "allow_mix_precision",
        "enable_dump": True,
        "dump_path": str(tmp_path),
        "dump_step": "0|2",
    }
    inputs = [tf.constant(np.full((2, 3), v, np.float32)) for v in (0.1, 0.2, 0.3)]
    with functions.FunctionEmulation(config) as emulation:
        outputs = [layer(x).numpy() for x in inputs]
    (report,) = emulation.reports.values()
    assert report.dump.steps == (
        0,
        2,
    ) and report.dump_dir == str(tmp_path.resolve())
    dump = load_dump(str(tmp_path))
    assert dump.steps == [0, 2]
    project = next(t for t in dump[2].tensors if t.op == "project" and t.kind == "output")
    assert project.decided_dtype == "float16" and project.value.dtype == np.float16
    # the stored value is the rounded one: the float16 rounding of the product of float16-rounded inputs
    half = [a.astype(np.float16).astype(np.float32) for a in (inputs[2].numpy(), w.numpy())]
    expected = (half[0] @ half[1]).astype(np.float16)
    # exact on every CPU: each product lies 145x farther from a float16 rounding boundary than float32
    # summation in any order can move it
    assert np.array_equal(project.value, expected)
    assert np.array_equal(dump[2]["act"][0].astype(np.float32), outputs[2])
    assert dump[0].manifest["function"] == report.fetches[0]


def test_observer_nodes_are_added_only_when_a_feature_asks(tmp_path):
    import tensorflow as tf
    from tensorflow.python.eager import context

    from npu_jupyter._runtime.functions.observe_nodes import OBSERVE_SCOPE

    @tf.function
    def affine(x):
        return x * 2.0 + 1.0

    x = tf.constant([1.0, 2.0])
    affine(x)
    name = affine.get_concrete_function(x).function_def.signature.name

    def observer_nodes():
        return [n.name for n in context.context().get_function_def(name).node_def if OBSERVE_SCOPE in n.name]

    with functions.FunctionEmulation(
        {"precision_mode": "must_keep_origin_dtype", "enable_dump": True, "dump_path": str(tmp_path)}
    ):
        affine(x)
        dumping = observer_nodes()
    with functions.FunctionEmulation({"precision_mode": "must_keep_origin_dtype"}):
        affine(x)
        plain = observer_nodes()
    assert dumping and plain == []
    assert observer_nodes() == []  # the original definition is back


def test_the_dump_budget_stops_dumping_with_a_clear_warning(tmp_path):
    import tensorflow as tf

    from npu_jupyter._runtime.observe.dump import load_dump

    @tf.function
    def wide(x):
        return tf.tile(x, [64, 1], name="tiled") * 2.0

    config = {"precision_mode": "must_keep_origin_dtype", "enable_dump": True, "dump_path": str(tmp_path)}
    x = tf.constant(np.ones((1, 256), np.float32))

    def four_calls():
        for _ in range(4):
            wide(x)

    emulation = functions.FunctionEmulation(config, dump_budget_bytes=200_000)
    with emulation, pytest.warns(RuntimeWarning, match="dump budget exceeded"):
        four_calls()
    (report,) = emulation.reports.values()
    assert report.steps == 4 and report.dump.steps == (0,)
    assert any("dump budget exceeded" in w for w in report.warnings)
    dump = load_dump(str(tmp_path))
    assert dump.steps == [0] and 1 in dump.skipped


def test_a_first_call_over_the_budget_is_named_by_its_function_in_the_next_functions_report(tmp_path):
    """A train step's call 0 overruns the budget; the valid step's report quotes it by the train step's name."""
    import tensorflow as tf

    @tf.function
    def train_step(x):
        return tf.tile(x, [64, 1], name="tiled") * 2.0

    @tf.function
    def valid_step(x):
        return x + 1.0

    config = {"precision_mode": "must_keep_origin_dtype", "enable_dump": True, "dump_path": str(tmp_path)}
    x = tf.constant(np.ones((1, 256), np.float32))

    def an_epoch():
        train_step(x)
        valid_step(x)

    emulation = functions.FunctionEmulation(config, dump_budget_bytes=20_000)
    with emulation, pytest.warns(RuntimeWarning, match="dump budget exceeded"):
        an_epoch()
    train, valid = emulation.reports.values()
    (stop,) = [w for w in train.warnings if w.startswith("dump budget exceeded")]
    assert stop.startswith("dump budget exceeded: call 0 of __inference_train_step_")
    assert "call 0 and later calls are not dumped" in stop
    (quoted,) = [w for w in valid.warnings if "dumping stopped earlier" in w]
    assert quoted.startswith("call 0 of __inference_valid_step_") and f"({stop})" in quoted


def test_a_bad_dump_path_fails_before_anything_is_emulated(tmp_path):
    from npu_jupyter._options.errors import NpuConfigError

    with pytest.raises(NpuConfigError, match="dump_path"):
        functions.FunctionEmulation({"enable_dump": True, "dump_path": str(tmp_path / "missing")})


def test_a_jit_compiled_function_runs_without_xla_so_it_is_rounded_and_observed(tmp_path):
    import tensorflow as tf

    @tf.function
    def helper(x):
        return tf.matmul(x, x, name="product") * 3.0

    @tf.function(jit_compile=True)
    def compiled(x):
        return helper(x) + 1.0

    config = {"precision_mode": "force_fp16", "enable_dump_debug": True, "dump_path": str(tmp_path)}
    x = tf.constant(np.full((2, 2), 0.1, np.float32))
    plain = compiled(x).numpy()
    with functions.FunctionEmulation(config) as emulation:
        rounded = compiled(x).numpy()  # under XLA the float16 round trips would be simplified away
        overflowed = compiled(tf.constant(np.full((2, 2), 200.0, np.float32))).numpy()
    assert not np.array_equal(rounded, plain)
    assert not np.isfinite(overflowed).all()
    (report,) = emulation.reports.values()
    assert any("jit_compile=True is off" in note for note in report.notes)
    assert report.first_overflow is not None and report.first_overflow.endswith("product")
    assert np.array_equal(compiled(x).numpy(), plain)  # XLA again after the emulation


def test_observing_keras_fit_on_some_calls_changes_no_number(tmp_path):
    """Calls dump_step skips leave the values node dead; the nested train step must still return."""
    from npu_jupyter._runtime.observe.dump import load_dump

    plain, _, _ = _keras_cnn_losses(None, epochs=2)
    config = {
        "precision_mode": "must_keep_origin_dtype",
        "enable_dump": True,
        "enable_dump_debug": True,
        "dump_path": str(tmp_path),
        "dump_step": "1|6",
    }
    observed, emulation, _ = _keras_cnn_losses(config, epochs=2)
    assert observed == plain  # observation reads the values, it changes none
    (report,) = emulation.reports.values()
    assert (
        report.steps == 8
        and report.dump.steps
        == (
            1,
            6,
        )
        and report.non_finite is None
    )
    assert load_dump(str(tmp_path)).steps == [1, 6]


def test_function_reports_place_ops_by_the_npu_device_rule():
    import tensorflow as tf

    w = tf.Variable(tf.ones([4]))

    @tf.function
    def step(x):
        w.assign_sub(0.1 * x)
        return tf.math.lgamma(w + 2.0) * x

    x = tf.ones([4])
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        step(x)
    (report,) = emulation.reports.values()
    ops = report.plan.ops.values()
    assert all(d.placement_reason.startswith("npu_device: ") for d in ops)
    # npu_device's rule, not the TF1 mixed-computing one: the unsupported op alone goes to the CPU,
    # the variable (an NPU resource substitute) and the ops reading it stay on the NPU
    assert [d.op_type for d in ops if d.placement == "host" and d.op_type != "Placeholder"] == ["Lgamma"]
    assert all(d.placement == "device" for d in ops if d.op_type in ("ReadVariableOp", "AssignSubVariableOp"))
    assert "TF2 adapter (npu_device)" in report.plan.title
    assert _rule_notes(report) == [functions.TF2_RULE_NOTE]  # no Keras here: no Keras 3 note
    assert "npu_device NodePlacer" in functions.TF2_RULE_NOTE


def test_a_report_says_how_long_the_set_up_before_the_first_call_took():
    """Trial densenet_ID3534: a user's timer measured 94.8 s for the first 3 steps, the report's calls summed
    to about 53 s; the 42 s of planning and rewriting before the first call showed nowhere."""
    import tensorflow as tf

    @tf.function
    def step(x):
        return tf.nn.relu(tf.matmul(x, x))

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        step(tf.ones((2, 2)))
        step(tf.ones((2, 2)))
    (report,) = emulation.reports.values()
    (said,) = [n for n in report.notes if n.startswith("Emulation set-up: ")]
    amount, unit = said.split()[2:4]
    assert float(amount) > 0 and unit in ("ms", "s") and "wall-clock on this CPU before the first call" in said
    assert "the call times above do not include it" in said and "planning and rewriting the function;" in said
    assert said in str(report), "shown in the report"


def test_an_emulated_call_runs_without_grappler_and_puts_the_users_call_options_back(monkeypatch):
    """Trial ID2562: grappler made most of a Keras train function's first emulated call under --reference (24.5 s
    of it with grappler, 4.8 s without): the emulated call runs with the meta-optimizer off, and only that call."""
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.eager import context

    seen = []
    call_function = context.Context.call_function

    def recording(self, name, tensor_inputs, num_outputs):  # the eager call of a function, by name
        config = config_pb2.ConfigProto.FromString(self.function_call_options.config_proto_serialized)
        seen.append(config.graph_options.rewrite_options.disable_meta_optimizer)
        return call_function(self, name, tensor_inputs, num_outputs)

    monkeypatch.setattr(context.Context, "call_function", recording)

    @tf.function
    def step(x):
        return x * 2.0

    before = context.context().function_call_options
    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}) as emulation:
        out = step(tf.constant(1.5)).numpy()
    assert out == 3.0 and emulation.reports  # the call was emulated
    assert seen == [True]  # the options the call ran under
    assert context.context().function_call_options is before
    step(tf.constant(1.0))
    assert seen[-1] is False  # a plain call after the emulation: the context's own options


def _unread_ops(graph):
    """Ops of a FuncGraph that neither its outputs nor its control outputs need (walked on the FuncGraph)."""
    needed, stack = set(), [t.op for t in graph.outputs] + list(graph.control_outputs)
    while stack:
        op = stack.pop()
        if op.name not in needed:
            needed.add(op.name)
            stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return {op.name for op in graph.get_operations()} - needed


def test_ops_the_runtime_prunes_are_not_observed_so_they_raise_no_finding(tmp_path):
    """A gradient taken through ``x / c`` also builds the gradient for the constant ``c``, which nothing
    reads: TensorFlow prunes it (as GE would), so it never runs. Observed, it ran and was reported. ModelZoo
    mnist_convnet_ID2524 (--reference) led its "Largest drift" with such a node (a dropout's
    truediv/Sum); here, under force_fp16, it alone overflows float16 (x / c^2 = 1.2e5) and was the
    "first non-finite value" of a call whose results are finite. The live gradient is observed as before."""
    import tensorflow as tf

    w = tf.Variable(np.full((1, 1), 3.0, np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(tf.ones((1, 1)), w) / tf.constant(0.005))  # 600: finite
        grad = tape.gradient(loss, w)  # 200: finite
        w.assign_sub(1e-6 * grad)
        return loss

    config = {"precision_mode": "force_fp16", "enable_dump_debug": True, "dump_path": str(tmp_path)}
    dead = _unread_ops(step.get_concrete_function().graph)
    assert "gradient_tape/truediv/mul" in dead  # -grad * x / c^2: the constant's gradient, read by nothing
    with functions.FunctionEmulation(config) as emulation:
        loss = float(step())
    with functions.FunctionEmulation({"precision_mode": "force_fp16"}, reference=True) as drifted:
        step()
    assert np.isfinite(loss)
    (report,) = emulation.reports.values()
    assert report.non_finite is None and report.overflow_ops == [] and report.first_overflow is None
    assert report.overflow_check is not None and report.overflow_check.checked == 1  # the check ran and saw nothing
    (with_drift,) = drifted.reports.values()
    assert not set(with_drift.drift) & set(dead)  # no drift row for an op that never runs
    assert any(op.startswith("gradient_tape/") for op in with_drift.drift)  # the live gradient still has one


def test_a_function_report_carries_the_cost_models_estimate_of_its_calls():
    """docs/contract.md (TF2): a traced function's report shows the estimated NPU step like a session's.

    It is the estimate of the report's plan at the shapes the function was traced for, with the argument
    each call copies to the device and the result it copies back; the same figures as estimating that
    plan on the function's graph directly, labelled as estimated, and what the zoo check and the sweep
    read."""
    import tensorflow as tf

    from npu_jupyter.cost.attach import estimate_of

    w = tf.Variable(np.ones((64, 32), np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w, name="mm")))
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    x = tf.ones((128, 64))
    blocks = {}
    for mode in ("allow_mix_precision", "must_keep_origin_dtype"):
        with functions.FunctionEmulation({"precision_mode": mode}) as emulation:
            step(x)
            step(x)
        (report,) = emulation.reports.values()
        found = report.estimate
        graph = step.get_concrete_function(x).graph
        direct = estimate_of(report.plan, graph, {"x:0": [128, 64]}, fetches=[t.name for t in graph.outputs])
        assert found is not None and direct is not None and found.block == direct.block
        assert found.est_us == direct.est_us and found.est_us["mm"] > 0
        assert "copies the run's 1 fed tensor to the device and 1 fetched tensor back" in found.block.basis
        assert report.estimate_block(None) == found.block  # the zoo check's and the sweep's figures
        assert "NPU step (estimated by the cost model, not measured)" in str(report)
        blocks[mode] = found.block
    assert blocks["must_keep_origin_dtype"].step_ratio_fp32 == 1.0
    assert blocks["allow_mix_precision"].memory_ratio_fp32 < 1.0  # the float16 MatMul's tensors are halved
