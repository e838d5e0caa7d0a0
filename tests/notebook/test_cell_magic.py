"""%%npu end to end: real TF graphs run through the emulator inside a real IPython shell.

(Part of ``npu_jupyter/_notebook/magics.py``; kept in its own module because these tests run TensorFlow.)
"""

from __future__ import annotations

import models
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from npu_jupyter._display import text
from npu_jupyter._display.mime import MIME_TYPE
from npu_jupyter._notebook.state import current_config
from npu_jupyter._runtime.functions.emulator import supported as _function_emulation_supported

needs_function_emulation = pytest.mark.skipif(
    not _function_emulation_supported(), reason="traced functions are emulated on TensorFlow >= 2.14 only"
)

tf = pytest.importorskip("tensorflow")

GRAPH = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.constant(np.full((8, 3), 0.5, np.float32), name="w")
    y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="y")
    total = tf.reduce_sum(y, name="total")
feed = {x: np.ones((4, 8), np.float32)}
"""

USER_PROTO = """
proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1)
custom = proto.graph_options.rewrite_options.custom_optimizers.add()
custom.name = "NpuOptimizer"
custom.parameter_map["use_off_line"].b = True
custom.parameter_map["precision_mode"].s = b"force_fp32"
custom.parameter_map["mix_compile_mode"].b = True
"""


def _reports(cap):
    return [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]


def test_precision_flag_beats_the_cells_own_npu_optimizer_entries_and_shows_in_the_report(ip):
    ip.run_line_magic("npu", "set precision_mode=allow_fp32_to_fp16")
    cell = (
        GRAPH
        + USER_PROTO
        + """
with tf.compat.v1.Session(graph=g, config=proto) as sess:
    value = sess.run(y, feed_dict=feed)
    kind = type(sess).__name__
"""
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16", cell)
    assert ip.user_ns["kind"] == "EmulatorSession"
    [report] = _reports(cap)
    assert report["effective_precision_mode"] == "force_fp16"
    assert report["config"]["precision_mode"] == "force_fp16"
    assert report["config"]["mix_compile_mode"] is True  # the user's own entry, no flag overrode it
    matmul = next(op for op in report["ops"] if op["n"] == "mm")
    assert (matmul["d0"], matmul["d1"]) == ("float32", "float16")
    assert "force_fp16" in cap.outputs[0].data["text/html"]
    # the user's proto object is untouched and the session config is what it was
    entries = ip.user_ns["proto"].graph_options.rewrite_options.custom_optimizers[0].parameter_map
    assert entries["precision_mode"].s == b"force_fp32"
    assert current_config().changed() == {"precision_mode": "allow_fp32_to_fp16"}


def test_repeated_runs_collapse_into_one_report_per_fetch_with_a_step_count(ip):
    cell = (
        GRAPH
        + """
sess = tf.compat.v1.Session(graph=g)
for _ in range(3):
    sess.run(y, feed_dict=feed)
    sess.run(total, feed_dict=feed)
sess.close()
"""
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_fp32_to_fp16", cell)
    reports = _reports(cap)
    assert [r["run"]["steps"] for r in reports] == [3, 3]
    assert [r["title"].split(" ")[2] for r in reports] == ["y:0:", "total:0:"]


def test_quiet_runs_the_cell_without_rendering_reports(ip):
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--quiet", GRAPH + "out = tf.compat.v1.Session(graph=g).run(total, feed)\n")
    assert ip.user_ns["out"] == pytest.approx(48.0)
    assert _reports(cap) == [] and cap.stdout == ""


def test_session_config_and_tf_session_are_restored_after_the_cell_raises(ip):
    ip.run_line_magic("npu", "set precision_mode=force_fp32")
    original = tf.compat.v1.Session
    with pytest.raises(ZeroDivisionError):
        ip.run_cell_magic("npu", "--precision force_fp16 --mix", GRAPH + "tf.compat.v1.Session(graph=g)\n1 / 0\n")
    assert tf.compat.v1.Session is original
    assert current_config().changed() == {"precision_mode": "force_fp32"}


def test_a_bad_flag_runs_nothing_and_changes_nothing(ip):
    ip.run_line_magic("npu", "set precision_mode=force_fp32")
    for line in (
        "--precision force_fp17",
        "--dump-mode everything",
        "--mix --set iterations_per_loop=8",
        "--set dump_step=abc --dump /tmp/d",
    ):
        with pytest.raises(UsageError):
            ip.run_cell_magic("npu", line, "ran = True\n")
        assert "ran" not in ip.user_ns
    assert current_config().changed() == {"precision_mode": "force_fp32"}


def test_the_cell_runs_on_a_snapshot_taken_when_it_started(ip):
    cell = (
        GRAPH
        + """
from npu_jupyter import current_config
current_config().update(precision_mode="force_fp32")   # as if the panel were edited meanwhile
sess = tf.compat.v1.Session(graph=g)
cfg = sess.config
"""
    )
    ip.run_line_magic("npu", "set precision_mode=force_fp16")
    with capture_output():
        ip.run_cell_magic("npu", "--quiet", cell)
    assert ip.user_ns["cfg"].precision_mode == "force_fp16"
    assert current_config().precision_mode == "force_fp32"  # the edit itself is kept for later cells


def test_interactive_session_becomes_the_default_npu_session(ip):
    cell = (
        GRAPH
        + """
with g.as_default():
    isess = tf.compat.v1.InteractiveSession(graph=g)
    got = total.eval(feed_dict=feed)
    default = tf.compat.v1.get_default_session()
isess.close()
"""
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", cell)
    assert ip.user_ns["default"] is ip.user_ns["isess"]
    assert ip.user_ns["got"] == pytest.approx(48.0)
    assert len(_reports(cap)) == 1


def test_last_expression_is_the_cells_value_and_a_cell_without_sessions_says_so(ip):
    with capture_output() as cap:
        value = ip.run_cell_magic("npu", "", "a = 20\na + 22\n")
    assert value == 42
    assert "created no tf.compat.v1.Session" in cap.stdout


def test_a_dump_folder_is_created_like_a_profile_folder_as_the_readme_example_needs(ip, tmp_path):
    folder = tmp_path / "new" / "dump"
    with capture_output():
        ip.run_cell_magic("npu", f"--dump {folder} --quiet", "ran = True\n")
    assert ip.user_ns.pop("ran") is True
    assert folder.is_dir()


def test_a_refused_cell_leaves_no_dump_folder_behind(ip, tmp_path):
    folder = tmp_path / "dump"
    with pytest.raises(UsageError, match="not run"):
        ip.run_cell_magic("npu", f"--dump {folder} --dump-step nonsense", "ran = True\n")
    assert "ran" not in ip.user_ns
    assert not folder.exists()


def test_the_session_wide_dump_path_keeps_the_adapters_existing_folder_rule(ip, tmp_path):
    ip.run_line_magic("npu", f"set enable_dump=true dump_path={tmp_path / 'missing'}")
    with pytest.raises(UsageError, match="dump_path must be an existing directory"):
        ip.run_cell_magic("npu", "", "ran = True\n")
    assert "ran" not in ip.user_ns


def test_a_cell_of_tf2_code_says_its_flags_did_not_affect_it(ip):
    cell = "import tensorflow as tf\nvalue = float(tf.reduce_sum(tf.ones([3])))\n"
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16", cell)
    assert ip.user_ns["value"] == 3.0
    assert "its flags (--precision force_fp16) did not affect this cell" in cap.stdout.lower()
    assert "get_concrete_function" in cap.stdout


def test_runs_before_an_error_in_the_cell_are_still_reported(ip):
    cell = GRAPH + "tf.compat.v1.Session(graph=g).run(total, feed)\nraise RuntimeError('after one run')\n"
    with capture_output() as cap, pytest.raises(RuntimeError, match="after one run"):
        ip.run_cell_magic("npu", "", cell)
    assert [r["run"]["steps"] for r in _reports(cap)] == [1]


TRAINING = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.compat.v1.get_variable("w", [8, 3])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train_op")
    init_op = tf.compat.v1.global_variables_initializer()
feed = {x: np.ones((4, 8), np.float32)}
"""


def test_initializer_run_follows_the_training_report_as_one_line(ip):
    cell = (
        TRAINING
        + """
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(init_op)
    for _ in range(2):
        sess.run([train_op, loss], feed)
"""
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", cell)
    [report] = _reports(cap)
    assert report["title"].startswith("Run of train_op, loss:0: ")
    assert cap.outputs[0].data[MIME_TYPE] is report  # the training report comes first
    note = cap.outputs[-1].data
    assert MIME_TYPE not in note
    assert note["text/plain"].startswith("also ran: init (variable initialisation, ")
    assert note["text/plain"].count("\n") == 0


def test_an_iterator_initializer_run_is_one_line_after_the_step_report(ip):
    """sess.run(iterator.initializer) had a full report ("NPU step time 0.000 ms", 7 host-op rows)."""
    cell = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    data = tf.compat.v1.data.Dataset.from_tensor_slices(np.ones((8, 3), np.float32)).batch(4)
    iterator = tf.compat.v1.data.make_initializable_iterator(data)
    w = tf.compat.v1.get_variable("w", [3, 1])
    loss = tf.reduce_sum(tf.matmul(iterator.get_next(), w), name="loss")
    init_op = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(init_op)
    sess.run(iterator.initializer)
    sess.run(loss)
"""
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", cell)
    [report] = _reports(cap)
    assert report["title"].startswith("Run of loss:0: ")
    note = cap.outputs[-1].data["text/plain"]
    assert note.startswith("also ran: init (variable initialisation, ")
    assert "; MakeIterator (dataset iterator initialisation, 7 ops on the host)" in note


def test_a_cell_that_only_initialises_still_gets_its_full_report(ip):
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", TRAINING + "tf.compat.v1.Session(graph=g).run(init_op)\n")
    [report] = _reports(cap)
    assert report["title"].startswith("Run of init: ")
    assert len(cap.outputs) == 1


@needs_function_emulation
def test_a_cell_of_keras_code_gets_one_report_per_traced_function(ip):
    """TF2 code under %%npu: the Keras train function is planned and trained in the decided precision."""
    setup = (
        "import numpy as np, keras\n"
        "def fit():\n"
        "    keras.utils.set_random_seed(0)\n"
        "    m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(4)])\n"
        "    m.compile(optimizer='sgd', loss='mse')\n"
        "    r = np.random.default_rng(0)\n"
        "    x, y = r.normal(size=(32, 6)).astype('float32'), r.normal(size=(32, 4)).astype('float32')\n"
        "    return m.fit(x, y, epochs=2, batch_size=16, verbose=0).history['loss']\n"
        "plain = fit()\n"
    )
    ip.run_cell(setup)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16", "emulated = fit()\n")
    (report,) = _reports(cap)
    assert report["run"]["steps"] == 4  # 2 epochs x 2 batches, one report for the train function
    assert any(op["d1"] == "float16" for op in report["ops"])
    assert ip.user_ns["emulated"] != ip.user_ns["plain"]
    assert "did not affect" not in cap.stdout


_KERAS_CNN = (
    "import numpy as np, keras, tensorflow as tf\n"
    "def fit():\n"
    "    keras.utils.set_random_seed(0)\n"
    "    m = keras.Sequential([keras.layers.Input((8, 8, 3)), keras.layers.Conv2D(8, 3, activation='relu'),\n"
    "                          keras.layers.Flatten(), keras.layers.Dense(10)])\n"
    "    m.compile(optimizer='sgd', loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))\n"
    "    r = np.random.default_rng(0)\n"
    "    x, y = r.normal(size=(64, 8, 8, 3)).astype('float32'), r.integers(0, 10, 64)\n"
    "    return m.fit(x, y, epochs=2, batch_size=16, verbose=0).history['loss']\n"
    "def tape():\n"
    "    tf.random.set_seed(0)\n"
    "    w = tf.Variable(tf.random.normal([16, 4]), name='w')\n"
    "    x = tf.random.normal([32, 16])\n"
    "    @tf.function\n"
    "    def train_step():\n"
    "        with tf.GradientTape() as g:\n"
    "            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))\n"
    "        w.assign_sub(0.1 * g.gradient(loss, w))\n"
    "        return loss\n"
    "    return [float(train_step()) for _ in range(5)]\n"
    "plain, plain_tape = fit(), tape()\n"
)


@pytest.mark.parametrize("precision", ["allow_mix_precision", "force_fp32", "must_keep_origin_dtype"])
@needs_function_emulation
def test_keras_cnn_and_a_tape_loop_train_as_the_cells_precision_decides(ip, precision):
    """The issue's acceptance, with the adapter's rule for force_fp32.

    allow_mix_precision stores float16 outputs, so the losses move by float16-sized amounts.
    must_keep_origin_dtype matches a plain run bit for bit. force_fp32 is the FE strategy FORCE_FP32
    (= cube_fp16in_fp32out): every output stays float32, but cube ops (Conv2D, MatMul and their
    gradients) read float16 inputs, so the losses differ slightly from a plain run; the issue text
    expected a match, the adapter's fusion engine says otherwise, and the emulator follows the engine.
    """
    import numpy as np

    ip.run_cell(_KERAS_CNN)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision {precision}", "emulated, emulated_tape = fit(), tape()\n")
    reports = _reports(cap)
    assert len(reports) == 2  # one for Keras' train function, one for the tape loop's function
    ns = ip.user_ns
    stored_half = [op for r in reports for op in r["ops"] if op["d1"] == "float16"]
    if precision == "must_keep_origin_dtype":
        assert ns["emulated"] == ns["plain"] and ns["emulated_tape"] == ns["plain_tape"]  # bit for bit
        assert not stored_half
        return
    assert ns["emulated"] != ns["plain"] and np.allclose(ns["emulated"], ns["plain"], rtol=1e-2)
    assert ns["emulated_tape"] != ns["plain_tape"] and np.allclose(ns["emulated_tape"], ns["plain_tape"], rtol=1e-2)
    if precision == "allow_mix_precision":
        assert stored_half
    else:  # force_fp32: no output stored in float16; the tape's MatMul reads float16
        assert not stored_half
        why = [r["reasons"][op["xr"]] for r in reports for op in r["ops"] if op["t"] == "MatMul"]
        assert why and all("cube op reads float16 and writes float32" in text for text in why)


@needs_function_emulation
def test_a_keras_cell_with_dump_names_the_first_overflowing_op_and_dumps_each_call(ip, tmp_path):
    """TF2 code under %%npu --dump: the report's run block names the first inf op; the calls are dumped."""
    from npu_jupyter._runtime.observe.dump import load_dump

    ip.run_cell(models.OVERFLOWING_KERAS_FIT_CELL)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision force_fp16 --dump {tmp_path}", "emulated = fit()\n")
    (report,) = _reports(cap)
    assert report["run"]["nonfinite"]["first_op"].endswith("MatMul")  # 4 x 60 x 300 = 72000 > 65504
    # said once: the "First non-finite value" line, not also as a warning naming the call
    assert text.render(report).count("values inside the function became non-finite") == 1
    assert report["run"]["dump_steps"] == [0, 1]
    dump = load_dump(str(tmp_path))
    assert dump.steps == [0, 1] and any(t.decided_dtype == "float16" for t in dump[0].tensors)


def test_the_last_cells_reports_are_kept_also_when_quiet(ip):
    import npu_jupyter

    cell = (
        "g = tf.Graph()\n"
        "with g.as_default():\n"
        "    v = tf.constant([1.0, 2.0]) * 3.0\n"
        "    with tf.compat.v1.Session() as s:\n"
        "        s.run(v)\n"
    )
    ip.run_cell("import tensorflow as tf")
    with capture_output():
        ip.run_cell_magic("npu", "--quiet", cell)
    (report,) = npu_jupyter.last_reports()
    assert report.steps == 1 and report.plan is not None
    with capture_output():
        ip.run_cell_magic("npu", "--quiet", "x = 1\n")  # a cell that ran nothing replaces them
    assert npu_jupyter.last_reports() == []


def test_reference_gives_a_tf1_session_cell_drift_per_op(ip):
    cell = (
        GRAPH
        + "feed = {x: np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)}\n"  # not exact in float16
        + "with tf.compat.v1.Session(graph=g) as sess:\n    sess.run(y, feed_dict=feed)\n"
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16", cell)
    (plain,) = _reports(cap)
    assert not any("dr" in op for op in plain["ops"])  # no reference unless asked
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16 --reference", cell)
    (report,) = _reports(cap)
    matmul = next(op for op in report["ops"] if op["n"] == "mm")
    assert matmul["dr"]["max_abs"] > 0 and matmul["dr"]["cos"] > 0.999
    assert "Drift vs float32" in cap.outputs[0].data["text/html"]


@needs_function_emulation
def test_reference_gives_a_keras_cell_drift_inside_its_train_function(ip):
    ip.run_cell(_KERAS_CNN.replace("plain, plain_tape = fit(), tape()\n", ""))
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision", "without = fit()\n")
    (plain,) = _reports(cap)
    assert not any("dr" in op for op in plain["ops"])
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision --reference", "drifted = fit()\n")
    (report,) = _reports(cap)
    assert ip.user_ns["drifted"] == ip.user_ns["without"]  # measuring drift changes no number
    drifted = [op for op in report["ops"] if op.get("dr")]
    assert any(op["d1"] == "float16" and op["dr"]["max_abs"] > 0 for op in drifted)
    assert "Drift vs float32" in cap.outputs[0].data["text/html"]


def test_reference_on_the_ascend_backend_says_nothing_is_compared(ip):
    ip.run_line_magic("config", "NpuMagics.backend = 'ascend'")
    try:
        with capture_output() as cap:
            ip.run_cell_magic("npu", "--reference", "x = 1\n")
    finally:
        ip.run_line_magic("config", "NpuMagics.backend = 'auto'")
    assert ip.user_ns["x"] == 1
    assert "measured by the emulator only" in cap.stdout
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--reference", "x = 2\n")  # auto without npu_bridge: the emulator
    assert "measured by the emulator only" not in cap.stdout


def test_a_script_that_fails_under_run_gets_its_traceback_not_the_no_effect_message(ip, tmp_path):
    """``%run`` shows a script's error without raising it: "eager ops ran on the CPU" would be false."""
    script = tmp_path / "train.py"
    script.write_text("raise RuntimeError('Failed open npu device 0 : bad dump_path')\n")
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", f"%run {script}\n")
    assert "Failed open npu device 0" in cap.stdout + cap.stderr  # IPython's %run showed the error
    assert "did not affect" not in cap.stdout and "no report" not in cap.stdout
    quiet = tmp_path / "quiet.py"
    quiet.write_text("x = 1\n")
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", f"%run {quiet}\n")
    assert "no report" in cap.stdout  # a script that ran and left no report still says so
