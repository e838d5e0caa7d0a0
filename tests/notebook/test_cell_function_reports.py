"""%%npu on TF2 code, as a user sees it: a traced function's report is about that function, and its alarms are true.

Each test runs a cell through ``%%npu`` in a real IPython shell and reads what the cell displayed: the
report payload (what the JupyterLab view draws) and its HTML and text fallbacks.
"""

from __future__ import annotations

import re

import pytest
from IPython.utils.capture import capture_output

from npu_jupyter._display.mime import MIME_TYPE
from npu_jupyter._runtime.functions.emulator import KERAS3_NOTE, TF2_RULE_NOTE
from npu_jupyter._runtime.functions.emulator import supported as _function_emulation_supported

pytestmark = pytest.mark.skipif(
    not _function_emulation_supported(), reason="traced functions are emulated on TensorFlow >= 2.14 only"
)
tf = pytest.importorskip("tensorflow")


def _run(ip, line, cell, setup=""):
    """(report payloads, every displayed output) of a %%npu cell."""
    if setup:
        ip.run_cell(setup).raise_error()
    with capture_output() as cap:
        ip.run_cell_magic("npu", line, cell)
    return [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data], cap.outputs


def _function_of(report, op):
    return report["functions"][op.get("f", 0)]["label"]


# -- 1. A function's report is about that function ----------------------------------------------------

NESTED = """
import numpy as np, tensorflow as tf
w = tf.Variable(np.random.default_rng(0).normal(size=(8, 4)).astype('float32'))
@tf.function
def inner(x):
    return tf.matmul(x, w)
@tf.function
def outer(x):
    y = inner(x)
    return tf.reduce_sum(tf.nn.relu(y) * 2.0 + 1.0) + tf.reduce_mean(y) - tf.reduce_max(y)
x = tf.constant(np.random.default_rng(1).normal(size=(4, 8)).astype('float32'))
"""


def test_the_report_of_a_function_shows_its_plan_and_counts_what_it_calls(ip):
    """outer() calls @tf.function inner() (a MatMul): the report on outer counts inner's float16 MatMul."""
    (report,), outputs = _run(ip, "--precision allow_mix_precision", "v = outer(x)\n", NESTED)
    assert report["title"].startswith("Calls of outer: ")  # the Python name, not __inference_outer_<uid>
    assert [f["label"] for f in report["functions"]] == ["outer", "inner"]
    assert report["summary"]["ops"] == sum(f["ops"] for f in report["functions"]) == len(report["ops"])
    lowered = [op for op in report["ops"] if op["d0"] != op["d1"]]
    assert report["summary"]["precision_changed"] == len(lowered) >= 1
    assert any(op["t"] == "MatMul" and _function_of(report, op) == "inner" for op in lowered)
    assert report["run"]["rounded_tensors"] >= 3  # the MatMul's two inputs and its output
    text, page = outputs[0].data["text/plain"], outputs[0].data["text/html"]
    assert "(outer and the 1 function it calls)" in text and "the counts above cover all of them" in text
    assert re.search(r"MatMul \(in inner\) \[MatMul\] AI_CORE float32->float16", text)
    # the table expands into the called function: a Function column and one section per function
    assert "<th" in page and ">Function</th>" in page
    assert "All other ops of outer (" in page and "All other ops of inner, called (" in page


GAN = """
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
g_w = tf.Variable(rng.normal(size=(8, 16)).astype('float32') * 0.3)
d_w = tf.Variable(rng.normal(size=(16, 1)).astype('float32') * 0.3)
@tf.function
def generate(z):
    return tf.nn.relu(tf.matmul(z, g_w))
@tf.function
def discriminate(x):
    return tf.matmul(x, d_w)
@tf.function
def train_step(z):
    with tf.GradientTape(persistent=True) as tape:
        fake = generate(z)
        score = discriminate(fake)
        g_loss = tf.reduce_mean(tf.nn.softplus(-score))
        d_loss = tf.reduce_mean(tf.nn.softplus(score))
    g_w.assign_sub(0.01 * tape.gradient(g_loss, g_w))
    d_w.assign_sub(0.01 * tape.gradient(d_loss, d_w))
    return g_loss, d_loss
z = tf.constant(rng.normal(size=(16, 8)).astype('float32'))
"""


def test_a_gan_train_step_counts_the_precision_changes_of_the_functions_it_calls(ip):
    (report,), _ = _run(ip, "--precision allow_mix_precision", "for _ in range(2): out = train_step(z)\n", GAN)
    assert report["title"].startswith("Calls of train_step: ")
    assert report["functions"][0]["label"] == "train_step"
    assert {"generate", "discriminate"} <= {f["label"] for f in report["functions"]}
    lowered = {_function_of(report, op) for op in report["ops"] if op["d0"] != op["d1"]}
    assert {"generate", "discriminate"} <= lowered  # the callees' float16 MatMuls count for train_step


def test_a_tf_keras_loss_scale_optimizer_fit_reports_the_train_function_not_a_cond_branch(ip):
    pytest.importorskip("tf_keras")
    setup = (
        "import numpy as np, tf_keras\n"
        "tf_keras.utils.set_random_seed(0)\n"
        "m = tf_keras.Sequential([tf_keras.layers.Dense(16, activation='relu', input_shape=(6,)),\n"
        "                         tf_keras.layers.Dense(3)])\n"
        "opt = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.Adam(1e-3))\n"
        "m.compile(optimizer=opt, loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))\n"
        "r = np.random.default_rng(0)\n"
        "x, y = r.normal(size=(32, 6)).astype('float32'), r.integers(0, 3, 32)\n"
    )
    reports, _ = _run(ip, "--precision allow_mix_precision", "m.fit(x, y, epochs=1, batch_size=16, verbose=0)\n", setup)
    (report,) = [r for r in reports if "Keras fit" in r["title"]]
    # review: "Calls of Keras fit (train function) (train_function)" said the function's name twice
    assert report["title"].startswith("Calls of Keras fit (train function): ")
    assert report["functions"][0]["label"] == "train_function"
    assert any(f["label"].startswith("cond") for f in report["functions"][1:])  # its branches are callees
    own = [op for op in report["ops"] if "f" not in op]
    assert any(op["t"] == "MatMul" and op["d1"] == "float16" for op in own)  # the model runs in train_function
    assert report["summary"]["precision_changed"] >= sum(op["d0"] != op["d1"] for op in own) > 0


KERAS_FIT = """
import numpy as np, keras
def fit():
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(16, activation='relu'), keras.layers.Dense(3)])
    m.compile(optimizer='adam', loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])
    r = np.random.default_rng(0)
    x, y = r.normal(size=(32, 6)).astype('float32'), r.integers(0, 3, 32)
    return m.fit(x, y, epochs=1, batch_size=16, verbose=0, validation_data=(x[:16], y[:16])).history['loss']
"""


def test_keras_fit_titles_only_its_step_functions_and_says_the_tf2_rule_once(ip):
    """Adam's initialize_variables folds into "also ran" instead of taking fit's title; one TF2-rule note."""
    reports, outputs = _run(ip, "--precision allow_mix_precision", "h = fit()\n", KERAS_FIT)
    titles = [re.sub(r" \([^()]*\)$", "", r["title"].split(": ")[0]) for r in reports]  # less the Python name
    assert titles == ["Calls of Keras fit (train function)", "Calls of Keras fit's validation (test function)"]
    also = [out.data["text/plain"] for out in outputs if MIME_TYPE not in out.data]
    assert any(
        line.startswith("also ran: variable initialisation (initialize_variables), run during Keras fit")
        for line in also
    )
    assert [TF2_RULE_NOTE in r.get("notes", []) for r in reports] == [True, False]


def test_keras_3_fit_with_accuracy_compiles_and_says_keras_3_built_the_graph(ip):
    """Keras 3's accuracy metric uses Bitcast, which CANN registers: nothing is unknown or fails to compile."""
    reports, _ = _run(ip, "--precision allow_mix_precision", "h = fit()\n", KERAS_FIT)
    assert reports and all(not r["errors"] for r in reports)
    bitcasts = [op for r in reports for op in r["ops"] if op["t"] == "Bitcast"]
    assert bitcasts and all(op["e"] != "HOST" and not op.get("approximate") for op in bitcasts)
    assert all(not any("Bitcast" in note for note in r.get("notes", [])) for r in reports)
    assert all(KERAS3_NOTE in r["notes"] for r in reports)  # the device would receive Keras 2's graph


FAILS = """
import numpy as np, tensorflow as tf
vs = [tf.Variable(tf.ones([4]) * k, name=f'v{{k}}') for k in range(4)]
@tf.function
def inner(x):
    y = {unsupported}
    for v in vs:
        y = y + v
    return y
@tf.function
def outer(x):
    return tf.reduce_sum(inner(x))
"""


@pytest.mark.parametrize(
    ("unsupported", "data"),
    [
        (
            "tf.ensure_shape(tf.numpy_function(lambda a: a * 2, [x], tf.float32), [4])",
            "It does not rest on approximate",
        ),
        ("tf.math.lgamma(x)", "This verdict rests on approximate op data: Lgamma"),
    ],
)
def test_a_function_that_fails_to_compile_is_an_error_naming_the_op_and_its_data(ip, unsupported, data):
    """Four variables passed to a call the TF2 adapter puts on the CPU: one grouped error, not four warnings."""
    (report,), outputs = _run(
        ip, "--precision allow_mix_precision", "r = outer(tf.ones([4]))\n", FAILS.format(unsupported=unsupported)
    )
    (error,) = report["errors"]
    assert error.startswith("Failed spread place <op> on cpu as has placed on npu")
    assert "fails to compile" in error and data in error
    assert "[4 times: " in error and "/ v0:0" in error and "/ v3:0" in error  # the ops it names
    assert not [w for w in report["warnings"] if "Failed spread place" in w]
    assert f"ERROR: {error}" in outputs[0].data["text/plain"]


# -- 3. Alarms are true ------------------------------------------------------------------------------

DETERMINISTIC = """
import numpy as np, keras, tensorflow as tf
tf.config.experimental.enable_op_determinism()
def fit():
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(16, activation='relu'),
                          keras.layers.Dense(3, activation='softmax')])
    m.compile(optimizer='sgd', loss='sparse_categorical_crossentropy')
    r = np.random.default_rng(0)
    x, y = r.normal(size=(64, 6)).astype('float32'), r.integers(0, 3, 64)
    return m.fit(x, y, epochs=1, batch_size=16, verbose=0).history['loss']
"""


@pytest.fixture
def deterministic_ops():
    """enable_op_determinism() is process-wide: turned off again after the test."""
    yield
    from tensorflow.python.framework import config

    config.disable_op_determinism()


@pytest.mark.parametrize(
    "line",
    [
        "--precision allow_mix_precision",
        "--precision must_keep_origin_dtype --set enable_dump_debug=True",
        "--precision force_fp32",
    ],
)
def test_a_nan_constant_masked_by_a_select_is_not_reported_as_non_finite(ip, tmp_path, deterministic_ops, line):
    """TensorFlow's deterministic sparse cross-entropy broadcasts a NaN constant that a Select masks away."""
    (report,), outputs = _run(ip, f"{line} --dump {tmp_path}", "h = fit()\n", DETERMINISTIC)
    import numpy as np

    assert np.isfinite(ip.user_ns["h"]).all()
    assert "nonfinite" not in report["run"] and report["run"]["first_overflow"] is None
    assert "BroadcastTo" not in outputs[0].data["text/plain"]


MASKED = """
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
q = tf.constant(rng.normal(size=(4, 8)).astype('float32'))
k = tf.constant(rng.normal(size=(6, 8)).astype('float32'))
mask = tf.constant(np.tril(np.ones((4, 6), bool)))
@tf.function
def attend(scale):
    scores = tf.matmul(q, k, transpose_b=True) * scale
    masked = tf.where(mask, scores, float('-inf'))  # an attention mask filled with -inf
    return tf.reduce_sum(tf.nn.softmax(masked))
@tf.function
def leaks(scale):
    scores = tf.matmul(q, k, transpose_b=True) * scale
    return tf.reduce_sum(tf.where(mask, scores, float('-inf')))  # the -inf reaches the result
"""


def test_an_attention_mask_of_minus_inf_is_no_alarm_but_a_real_overflow_is_found(ip):
    (quiet,), _ = _run(ip, "--precision allow_mix_precision", "a = float(attend(1.0))\n", MASKED)
    assert "nonfinite" not in quiet["run"] and not quiet["warnings"]
    # a scale that overflows float16 (8 x 4 x 1e4 > 65504) is a precision effect: named at the MatMul's consumer
    (loud,), _ = _run(ip, "--precision allow_mix_precision", "b = float(attend(3e4))\n")
    assert loud["run"]["nonfinite"]["first_op"] != "SelectV2"
    assert "float16" in loud["run"]["nonfinite"]["reason"]


def test_a_by_design_minus_inf_that_reaches_the_result_is_reported_as_such(ip):
    (report,), _ = _run(ip, "--precision allow_mix_precision", "c = float(leaks(1.0))\n", MASKED)
    finding = report["run"]["nonfinite"]
    assert "returned non-finite values" in finding["reason"]
    assert "by design" in finding["reason"] and "not a precision effect" in finding["reason"]


def test_a_real_float16_overflow_is_still_named_next_to_a_masked_nan_constant(ip, deterministic_ops):
    """A Keras classifier with TensorFlow's NaN constant and a layer whose float16 output overflows."""
    setup = DETERMINISTIC.replace(
        "keras.layers.Dense(16, activation='relu')",
        "keras.layers.Dense(16, activation='relu', kernel_initializer=keras.initializers.Constant(1e5))",
    )
    (report,), _ = _run(ip, "--precision allow_mix_precision", "h = fit()\n", setup)
    finding = report["run"]["nonfinite"]
    assert "BroadcastTo" not in finding["first_op"]
    assert finding["first_op"].endswith("MatMul") and "float16" in finding["reason"]


TF1_DETERMINISTIC = """
import numpy as np, tensorflow as tf
tf.config.experimental.enable_op_determinism()
g = tf.Graph()
with g.as_default():
    tf.compat.v1.set_random_seed(0)
    x = tf.compat.v1.placeholder(tf.float32, [8, 6])
    y = tf.compat.v1.placeholder(tf.int64, [8])
    w = tf.compat.v1.get_variable('w', [6, 3], initializer=tf.compat.v1.glorot_uniform_initializer())
    logits = tf.matmul(x, w, name='logits')
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    init = tf.compat.v1.global_variables_initializer()
r = np.random.default_rng(0)
feed = {x: r.normal(size=(8, 6)).astype('float32'), y: r.integers(0, 3, 8)}
"""
TF1_TRAIN = """
with tf.compat.v1.Session(graph=g) as s:
    s.run(init)
    for _ in range(2):
        s.run([train, loss], feed_dict=feed)
"""


def test_a_sessions_overflow_check_passes_over_the_nan_constant_but_finds_a_real_overflow(
    ip, tmp_path, deterministic_ops
):
    """TF1 code: enable_dump_debug flags inf/NaN per op; TensorFlow's NaN filler is not an overflow."""
    line = f"--dump {tmp_path} --set enable_dump_debug=True --precision "
    (report,), outputs = _run(ip, line + "must_keep_origin_dtype", TF1_TRAIN, TF1_DETERMINISTIC)
    assert report["run"]["first_overflow"] is None and not [op for op in report["ops"] if op.get("ov")]
    # the check ran and found nothing: the report says so (trial: it said nothing, as if no check ran)
    assert report["run"]["overflow_check"]["checked"] == 2 == report["run"]["steps"]
    assert (
        "Overflow check: no inf/NaN in 2 steps (emulated float32 storage on this CPU" in outputs[0].data["text/plain"]
    )
    big = TF1_DETERMINISTIC.replace(
        "feed = {x: r.normal(size=(8, 6)).astype('float32')", "feed = {x: 4e4 * r.normal(size=(8, 6)).astype('float32')"
    )
    (loud,), _ = _run(ip, line + "force_fp16", TF1_TRAIN, big)
    overflowed = [op["n"] for op in loud["ops"] if op.get("ov")]
    assert "logits" in overflowed and loud["run"]["first_overflow"]  # 6 x 4e4 x ~0.5 > 65504 in float16
    assert not [f for f in loud["facts"] if "no inf/NaN" in f["text"]]
    (unchecked,), outputs = _run(ip, f"--dump {tmp_path} --precision must_keep_origin_dtype", TF1_TRAIN)
    assert "overflow_check" not in unchecked["run"] and "Overflow check" not in outputs[0].data["text/plain"]


# -- A function Keras runs from two entry points says whose calls are whose ------------------------------

TWO_ENTRY_POINTS = """
import numpy as np, {keras} as keras
m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(3)])
m.compile(optimizer='sgd', loss='mse')
x, y = np.ones((32, 6), 'float32'), np.ones((32, 3), 'float32')
"""
FIT = "m.fit(x, y, epochs=2, batch_size=16, verbose=0, validation_data=(x, y))\n"
EVALUATE = "m.evaluate(x, y, batch_size=16, verbose=0)\n"


def _by_title(reports, outputs):
    """{"fit": (payload, text, html), "fit's validation": ..., "evaluate": ...} of a cell's Keras reports."""
    shown = [out.data for out in outputs if MIME_TYPE in out.data]
    out = {}
    for report, data in zip(reports, shown):
        entry = re.match(r"Calls of Keras (fit's validation|\w+) ", report["title"]).group(1)
        out[entry] = (report, data["text/plain"], data["text/html"])
    return out


@pytest.mark.parametrize("keras", ["tf_keras", "keras"])
def test_fits_validation_calls_are_not_counted_as_evaluate_calls_without_a_word(ip, keras):
    """Trial (DIN_ID2641): "Calls of Keras evaluate (test function)" counted 9 calls, 6 of them fit's validation.

    tf_keras (the adapter's Keras 2) and Keras 3 both validate by calling evaluate inside fit, on the test
    function a later evaluate runs again: one report, whose calls the run line splits.
    """
    pytest.importorskip(keras)
    reports, outputs = _run(ip, "--precision allow_mix_precision", FIT + EVALUATE, TWO_ENTRY_POINTS.format(keras=keras))
    shown = _by_title(reports, outputs)
    assert "evaluate" not in shown  # the first calls were fit's validation: the title says so, not "evaluate"
    report, page_text, page = shown["fit's validation"]
    split = [{"where": "during Keras fit (validation)", "calls": 4}, {"where": "in Keras evaluate", "calls": 2}]
    assert report["run"]["steps"] == 6 and report["run"]["calls_from"] == split
    said = "6 calls: 4 during Keras fit (validation), 2 in Keras evaluate · "
    assert said in page_text and said in page
    assert "mean per call over 6 calls" in page_text  # the time keeps its label: over all its calls
    fit_report, fit_text, _ = shown["fit"]
    assert "calls_from" not in fit_report["run"] and "· 4 calls · " in fit_text  # all fit's own: silent


@pytest.mark.parametrize("keras", ["tf_keras", "keras"])
def test_a_test_function_only_fit_validated_is_titled_so_and_one_only_evaluate_ran_says_nothing(ip, keras):
    pytest.importorskip(keras)
    reports, outputs = _run(ip, "--precision allow_mix_precision", FIT, TWO_ENTRY_POINTS.format(keras=keras))
    report, page_text, _ = _by_title(reports, outputs)["fit's validation"]
    assert report["title"].startswith("Calls of Keras fit's validation (test function)")  # not "Keras evaluate"
    assert "calls_from" not in report["run"] and "· 4 calls · " in page_text  # the title says whose they are
    reports, outputs = _run(ip, "--precision allow_mix_precision", EVALUATE)
    report, page_text, page = _by_title(reports, outputs)["evaluate"]
    assert "calls_from" not in report["run"]
    assert "· 2 calls · " in page_text and "during Keras" not in page_text + page
