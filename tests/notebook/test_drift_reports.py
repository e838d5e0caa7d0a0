"""%%npu --reference in a real IPython shell: the drift and precision lines a reviewer read line by line.

A TF1 session report (``tf.compat.v1.layers.dense`` ops under allow_mix_precision: an init run, then a training
loop) and a Keras 3 fit report listed an ``Identity`` beside the op it copies, ranked by the largest
element-wise relative error, listed zero-drift constants as the init run's largest drift, counted an
``ArgMax`` reading its producer's float16 as "changed precision", and called rounding casts "tensors".
"""

from __future__ import annotations

import re

import pytest
from IPython.utils.capture import capture_output

from npu_jupyter._display import html, text
from npu_jupyter._display.mime import MIME_TYPE, report_payload
from npu_jupyter._runtime.functions.emulator import supported as _function_emulation_supported
from npu_jupyter._runtime.observe.drift_ranking import COPY_TYPES

tf = pytest.importorskip("tensorflow")

LAYERS_GRAPH = (
    "import numpy as np, tensorflow as tf\n"
    "g = tf.Graph()\n"
    "with g.as_default():\n"
    "    tf.compat.v1.set_random_seed(0)\n"
    "    x = tf.compat.v1.placeholder(tf.float32, [16, 10], name='x')\n"
    "    y = tf.compat.v1.placeholder(tf.int64, [16], name='y')\n"
    "    def dense(v, units, name):  # tf.compat.v1.layers.dense's ops (the layers need Keras 2)\n"
    "        with tf.compat.v1.variable_scope(name):\n"
    "            k = tf.compat.v1.get_variable('kernel', [v.shape[1], units])\n"
    "            b = tf.compat.v1.get_variable('bias', [units], initializer=tf.compat.v1.zeros_initializer())\n"
    "            return tf.nn.bias_add(tf.matmul(v, k), b)\n"
    "    h = tf.nn.relu(dense(x, 32, 'd1'))\n"
    "    logits = dense(h, 5, 'd2')\n"
    "    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name='loss')\n"
    "    pred = tf.argmax(logits, 1, name='pred')\n"
    "    acc = tf.reduce_mean(tf.cast(tf.equal(pred, y), tf.float32), name='acc')\n"
    "    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
    "    init = tf.compat.v1.global_variables_initializer()\n"
    "r = np.random.default_rng(0)\n"
    "X, Y = r.normal(size=(16, 10)).astype('float32'), r.integers(0, 5, 16)\n"
)
TRAINING = (
    "with tf.compat.v1.Session(graph=g) as sess:\n"
    "    sess.run(init)\n"
    "    for i in range(3):\n"
    "        sess.run([loss, acc, train], {x: X, y: Y})\n"
)


def _fact(payload: dict, key: str) -> str:
    return next(f["text"] for f in payload["facts"] if f["key"] == key)


@pytest.fixture
def session_reports(ip):
    import npu_jupyter

    ip.run_cell(LAYERS_GRAPH)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision --reference", TRAINING)
    (shown,) = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    init, training = (report_payload(r) for r in npu_jupyter.last_reports())
    assert init["title"].startswith("Run of init") and training == shown
    return init, training


def test_the_largest_drift_names_the_ops_that_drifted_with_their_step_not_their_copies(session_reports):
    _, training = session_reports
    ops = training["ops"]
    worst = training["run"]["drift_worst"]
    assert len(worst) == 3
    assert not [ops[k]["n"] for k in worst if ops[k]["t"] in COPY_TYPES]  # the graph has tuple/control_dependency
    copies = [op for op in ops if op["t"] == "Identity" and op.get("dr") and op["dr"]["max_abs"] > 0]
    assert copies, "the graph's gradient Identity ops drifted (as their producers did)"
    listed = _fact(training, "ops.dr")
    ranks = [ops[k]["dr"]["rel_rmse"] for k in worst]
    assert ranks == sorted(ranks, reverse=True)  # ranked by the figure it shows
    for k in worst:
        assert f"{ops[k]['n']} rel. RMSE " in listed and f"step {ops[k]['dr']['step']}" in listed
    for view in (text.render(training), html.render(training)):
        assert "Largest drift vs float32, each op&#x27;s worst step" in view or "each op's worst step" in view
        assert "control_dependency rel. RMSE" not in view.split("Ops that left")[0]


def test_the_init_runs_report_lists_no_zero_drift_as_its_largest(session_reports):
    init, _ = session_reports
    assert init["run"]["drift_worst"] == []
    assert _fact(init, "ops.dr") == "none: every compared output equals its float32 reference"
    assert "Largest drift vs float32: none" in text.render(init)


def test_an_argmax_reading_float16_is_shown_but_not_counted_as_changed_precision(session_reports):
    _, training = session_reports
    (pred,) = [op for op in training["ops"] if op["n"] == "pred"]
    assert pred["d0"] == pred["d1"] == "int64" and pred["rf"] == "float16" and "rd" not in pred
    changed = [op for op in training["ops"] if op["d0"] != op["d1"] or op.get("rd")]
    assert training["summary"]["precision_changed"] == len(changed)  # pred not among them
    full = text.render(training, detail="full")
    assert "pred [ArgMax] AI_CORE inputs float16, output int64" in full
    assert "pred [ArgMax]" not in text.render(training)  # not among the ops that changed precision


@pytest.mark.skipif(not _function_emulation_supported(), reason="traced functions are emulated on TF >= 2.14 only")
def test_a_keras_fit_report_counts_rounding_casts_as_casts_and_lists_no_copy(ip):
    import npu_jupyter

    ip.run_cell(
        "import numpy as np, keras\n"
        "keras.utils.set_random_seed(0)\n"
        "m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(8, name='dense1', activation='relu'),\n"
        "                      keras.layers.Dense(4, name='dense2')])\n"
        "m.compile(optimizer='sgd', loss='mse')\n"
        "r = np.random.default_rng(0)\n"
        "xs, ys = r.normal(size=(48, 6)).astype('float32'), r.normal(size=(48, 4)).astype('float32')\n"
    )
    with capture_output() as cap:
        ip.run_cell_magic(
            "npu", "--precision allow_mix_precision --reference", "m.fit(xs, ys, epochs=1, batch_size=16, verbose=0)\n"
        )
    (payload,) = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    (report,) = npu_jupyter.last_reports()
    casts = report.rounded_tensors
    assert casts and f"Emulated: {casts} half-precision roundings (one per op input or output" in text.render(payload)
    assert "tensors rounded" not in text.render(payload)
    ops = payload["ops"]
    assert payload["run"]["drift_worst"]
    assert not [ops[k]["n"] for k in payload["run"]["drift_worst"] if ops[k]["t"] in COPY_TYPES]


BIAS_BEFORE_BATCH_NORM = (
    "import numpy as np, tensorflow as tf\n"
    "tf.random.set_seed(0)\n"
    "conv = tf.Variable(tf.random.normal([3, 3, 1, 8], stddev=0.3), name='conv_kernel')\n"
    "cbias = tf.Variable(tf.random.normal([8], stddev=0.1), name='conv_bias')\n"
    "dense = tf.Variable(tf.random.normal([8 * 8 * 8, 4], stddev=0.05), name='dense_kernel')\n"
    "dbias = tf.Variable(tf.zeros([4]), name='dense_bias')\n"
    "opt = tf.keras.optimizers.Adam(0.01)\n"
    "@tf.function\n"
    "def step(x, y):\n"
    "    with tf.GradientTape() as tape:\n"
    "        h = tf.nn.bias_add(tf.nn.conv2d(x, conv, 1, 'SAME'), cbias)\n"
    "        mean, var = tf.nn.moments(h, [0, 1, 2])\n"
    "        h = tf.nn.relu(tf.nn.batch_normalization(h, mean, var, None, None, 1e-3))\n"
    "        logits = tf.nn.bias_add(tf.matmul(tf.reshape(h, [-1, 8 * 8 * 8]), dense), dbias)\n"
    "        logits = tf.subtract(tf.add(logits, 1000.0), 1000.0, name='unshift')  # float16 loses the digits\n"
    "        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))\n"
    "    vs = [conv, cbias, dense, dbias]\n"
    "    opt.apply_gradients(zip(tape.gradient(loss, vs), vs))\n"
    "    return loss\n"
    "r = np.random.default_rng(0)\n"
    "X, Y = r.normal(size=(16, 8, 8, 1)).astype('float32'), r.integers(0, 4, 16)\n"
)


@pytest.mark.skipif(not _function_emulation_supported(), reason="traced functions are emulated on TF >= 2.14 only")
def test_a_conv_bias_gradient_before_a_batch_norm_is_no_false_alarm_and_a_real_drift_ranks_first(ip):
    """The CircleLossMNIST trial: BatchNorm cancels the conv bias, so its gradient's float32 reference is
    rounding noise ("rel. RMSE 550"): it and its Adam moments were ranked first, above real drift.
    """
    ip.run_cell(BIAS_BEFORE_BATCH_NORM)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision --reference", "step(X, Y)\n")
    (payload,) = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    ops = payload["ops"]
    (grad,) = [op for op in ops if op["t"] == "BiasAddGrad" and op["n"].startswith("gradient_tape/BiasAdd/")]
    assert grad["dr"]["rel_rmse"] > 10  # its own reference is noise ...
    assert grad["dr"]["in_rel"] < 0.01  # ... against the data it sums, it drifts as float16 rounds
    # Adam's moments of that gradient, which Keras 3 reads through one IdentityN of every gradient: maybe
    # noise, ranked after the sound figures (an unread Identity of the gradient was marked from_cancelled
    # here until the emulation stopped running ops TensorFlow prunes). Keras 3 names a process's second
    # Adam "adam_1", as in a suite run.
    fed = [op["n"] for op in ops if op.get("dr", {}).get("from_cancelled") or op.get("dr", {}).get("maybe_cancelled")]
    assert any(re.match(r"adam(_\d+)?/(Sub|Mul)_\d+$", name) for name in fed)
    worst = [ops[k]["n"] for k in payload["run"]["drift_worst"]]
    assert worst[0] == "unshift" and not set(worst) & set(fed)
    listed = _fact(payload, "ops.dr")
    assert listed.startswith("unshift rel. RMSE ") and f"rel. RMSE {grad['dr']['rel_rmse']:.3g}," not in listed
    if grad["n"] in worst:  # listed by its honest figure, saying why
        assert f"{grad['n']} rel. RMSE {grad['dr']['in_rel']:.3g} against its inputs' scale" in listed
