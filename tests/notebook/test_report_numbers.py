"""%%npu in a real IPython shell: every number of a report means what its label says (issue 19 §2).

A function's time is the mean per call, with its fastest and slowest call; per-op CPU times leave the
warm-up step out; a report numbers its steps one way (dumps, profile files, non-finite findings).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import models
import numpy as np
import pytest
from IPython.utils.capture import capture_output

from npu_jupyter._display.mime import MIME_TYPE, report_payload
from npu_jupyter._runtime.functions.emulator import supported as _function_emulation_supported

needs_function_emulation = pytest.mark.skipif(
    not _function_emulation_supported(), reason="traced functions are emulated on TensorFlow >= 2.14 only"
)

tf = pytest.importorskip("tensorflow")

KERAS_FIT = (
    "import numpy as np, keras\n"
    "def fit(epochs=2, **kw):\n"
    "    keras.utils.set_random_seed(0)\n"
    "    m = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(8, name='dense1'),\n"
    "                          keras.layers.Dense(4, name='dense2')])\n"
    "    m.compile(optimizer='sgd', loss='mse')\n"
    "    r = np.random.default_rng(0)\n"
    "    x, y = r.normal(size=(48, 6)).astype('float32'), r.normal(size=(48, 4)).astype('float32')\n"
    "    return m.fit(x, y, epochs=epochs, batch_size=16, verbose=0, **kw).history['loss']\n"
)

TF1_TRAINING = (
    "import numpy as np, tensorflow as tf\n"
    "g = tf.Graph()\n"
    "with g.as_default():\n"
    "    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name='x')\n"
    "    w = tf.compat.v1.get_variable('w', initializer=np.full((8, 3), 0.5, np.float32))\n"
    "    loss = tf.reduce_sum(tf.matmul(x, w, name='mm'), name='loss')\n"
    "    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
    "    init = tf.compat.v1.global_variables_initializer()\n"
)
# init, then three training steps; the third feeds 1e4, whose float16 product overflows (4 x 8 x 1e4 x 0.5)
TF1_STEPS = (
    "with tf.compat.v1.Session(graph=g) as sess:\n"
    "    sess.run(init)\n"
    "    for i in range(3):\n"
    "        sess.run([loss, train], {x: np.full((4, 8), 1.0 + 1e4 * (i == 2), np.float32)})\n"
)


def _reports(cap):
    return [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]


def _text(cap):
    return "\n".join(out.data.get("text/plain", "") for out in cap.outputs)


@needs_function_emulation
def test_a_functions_time_is_the_mean_per_call_with_its_fastest_and_slowest_call(ip):
    """Issue 19: 21 calls of about 5.3 ms read "151.83 ms per step" (the total over the calls)."""
    import npu_jupyter

    ip.run_cell(KERAS_FIT)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision", "fit(epochs=2)\n")
    (payload,) = _reports(cap)
    (report,) = npu_jupyter.last_reports()
    assert report.steps == 6 and payload["run"]["steps"] == 6  # 2 epochs x 3 batches
    timing = report.timing
    assert report.wall_ms == pytest.approx(timing.total_ms / 6)
    assert timing.min_ms <= report.wall_ms <= timing.max_ms < timing.total_ms
    label = payload["labels"]["wall_ms"]
    assert label.startswith("mean per call over 6 calls: min ") and "wall-clock time of the emulation" in label
    shown = re.search(
        r"6 calls · ([0-9.]+) ms \(mean per call over 6 calls: min ([0-9.]+) ms, max ([0-9.]+)", _text(cap)
    )
    assert shown is not None, _text(cap)
    mean, low, high = (float(v) for v in shown.groups())
    assert low <= mean <= high


PLAIN_TRAIN_STEP = """
import tensorflow as tf
w = tf.Variable(tf.ones([4, 2]))
@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss
"""


@needs_function_emulation
def test_a_function_calling_no_other_function_counts_calls_in_every_view(ip):
    """A tf.function with no callees has no call tree in its payload: its report read "4 steps"
    beside "mean per call over 4 calls", because the views guessed the unit from the call tree."""
    ip.run_cell(PLAIN_TRAIN_STEP)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16", "for _ in range(4):\n    train_step(tf.ones([3, 4]))\n")
    (payload,) = _reports(cap)
    assert payload["run"]["unit"] == "call" and payload["run"]["steps"] == 4
    out, page = _text(cap), _html(cap)
    assert "Run: backend emulator · 4 calls · " in out and "4 steps" not in out
    assert "4 calls" in page and "4 steps" not in page


def test_a_session_time_is_the_mean_per_step_with_its_fastest_slowest_and_first_step(ip):
    """Review: "14.77 ms per step" was a mean that included the warm-up step, and said neither."""
    import npu_jupyter

    ip.run_cell(TF1_TRAINING)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_fp32_to_fp16", TF1_STEPS)
    (payload,) = _reports(cap)
    (report,) = [r for r in npu_jupyter.last_reports() if r.fetches != ["init"]]  # the init run is folded away
    timing = report.timing
    assert report.steps == 3 and report.wall_ms == pytest.approx(timing.total_ms / 3)
    # the text renders the payload, which keeps the mean to 3 decimals: formatting report.wall_ms itself
    # to 2 decimals gave another last digit about once in 15 runs (18.9151 -> 18.92, 18.915 -> 18.91)
    assert payload["run"]["wall_ms"] == pytest.approx(report.wall_ms, abs=5e-4)
    expected = (
        f"3 steps · {payload['run']['wall_ms']:.2f} ms (mean per step over 3 steps: min {timing.min_ms:.2f} ms, "
        f"max {timing.max_ms:.2f} ms, the first {timing.first_ms:.2f} ms (TensorFlow's warm-up); "
        "wall-clock time of the emulation on this CPU)"
    )
    assert f"Run: backend emulator · {expected}" in _text(cap)
    assert payload["labels"]["wall_ms"].startswith("mean per step over 3 steps: ")
    assert "ms per step (" not in _text(cap)  # the label says the aggregate; "per step" is not said twice


def test_a_later_graphs_report_shows_its_own_dump_folder(ip, tmp_path):
    """Review: the training run's report showed the cell's dump root, whose step_0 is the init graph's."""
    dump = tmp_path / "dump"
    ip.run_cell(TF1_TRAINING)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision allow_fp32_to_fp16 --dump {dump} --dump-step 0|1|2", TF1_STEPS)
    (payload,) = _reports(cap)
    assert payload["run"]["dump_dir"] == str(dump / "graph_1")
    assert sorted(p.name for p in (dump / "graph_1").iterdir()) == ["step_0", "step_1", "step_2"]
    assert f"Dump folder: {dump / 'graph_1'}" in _text(cap)


def test_a_dump_whose_steps_never_ran_says_nothing_was_dumped_and_a_dumping_run_does_not(ip, tmp_path):
    """Trial (ModelZoo text_classification_with_transformer): dump_step "10" over 8 calls dumped nothing, silently."""
    ip.run_cell(TF1_TRAINING)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--dump {tmp_path / 'late'} --dump-step 7", TF1_STEPS)
    (payload,) = _reports(cap)
    assert "dump_steps" not in payload["run"] and not list((tmp_path / "late").rglob("step_*"))
    assert "Dumped steps: none of this report's 3 steps (dump_step '7')" in _text(cap)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--dump {tmp_path / 'hit'} --dump-step 2", TF1_STEPS)
    assert "Dumped steps: 2" in _text(cap) and "none of this report" not in _text(cap)
    with capture_output() as cap:
        ip.run_cell_magic("npu", "", TF1_STEPS)
    assert "Dumped steps" not in _text(cap)


def _op_summary_us(folder: Path, op: str) -> dict[int, float]:
    """Step -> the op's duration in each ``op_summary_step_<n>.csv`` of ``folder``."""
    out = {}
    for path in folder.glob("op_summary_step_*.csv"):
        step = int(path.stem.rsplit("_", 1)[1])
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        column = next(i for i, name in enumerate(rows[0]) if name.startswith("Task Duration"))
        out[step] = sum(float(row[column]) for row in rows[1:] if row[0] == op)
    return out


@needs_function_emulation
def test_costliest_ops_leave_the_warm_up_call_out_and_say_so(ip, tmp_path):
    """Issue 19: the first (tracing, warm-up) call ranked dense1/MatMul at 20,657 µs against 39 µs."""
    ip.run_cell(KERAS_FIT)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision allow_mix_precision --profile {tmp_path}", "fit(epochs=2)\n")
    (payload,) = _reports(cap)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    matmul = next(
        op for op in payload["ops"] if op["n"].endswith("dense1_1/MatMul") or op["n"].endswith("dense1/MatMul")
    )
    body_name = re.sub(r"^__inference_[^/]+/", "", matmul["n"])  # a called function's op: <function>/<op>
    per_step = _op_summary_us(folder, body_name)
    assert sorted(per_step) == list(range(6))  # every call profiled, numbered from 0 like the calls
    later = [per_step[k] for k in range(1, 6)]
    assert matmul["us"] == pytest.approx(sum(later) / len(later), rel=1e-3, abs=2e-3)
    label = payload["labels"]["us"]
    assert "over 5 profiled calls, call 0 (warm-up) left out" in label and "wall-clock time of the emulation" in label
    assert "call 0 (warm-up) left out" in _text(cap)


def test_alternating_runs_fold_into_reports_whose_op_times_leave_the_warm_up_out(ip, tmp_path):
    """Alternating train/loss runs fold per fetch: the folded per-op times said "over 1 profiled step"
    and averaged the warm-up step's times in (a 21 ms MatMul among 20 µs ones)."""
    ip.run_cell(TF1_TRAINING)
    cell = (
        "with tf.compat.v1.Session(graph=g) as sess:\n"
        "    sess.run(init)\n"
        "    for i in range(3):\n"
        "        sess.run(train, {x: np.ones((4, 8), np.float32)})\n"
        "        sess.run(loss, {x: np.ones((4, 8), np.float32)})\n"
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--profile {tmp_path}", cell)
    payloads = _reports(cap)
    assert [p["run"]["steps"] for p in payloads] == [3, 3]
    for payload in payloads:
        assert payload["labels"]["us"].startswith("over 2 profiled steps, step 0 (warm-up) left out")
        assert payload["labels"]["wall_ms"].startswith("mean per step over 3 steps: ")
    (report,) = [p for p in payloads if p["title"].startswith("Run of loss:0")]
    per_step = _op_summary_us(Path(report["run"]["op_summary_csv"]).parent, "mm")
    assert sorted(per_step) == [0, 1, 2]
    (mm,) = [op for op in report["ops"] if op["n"] == "mm"]
    assert mm["us"] == pytest.approx((per_step[1] + per_step[2]) / 2, rel=1e-3, abs=2e-3)


def test_a_single_profiled_warm_up_step_is_labelled_as_such(ip, tmp_path):
    ip.run_cell(TF1_TRAINING)
    once = TF1_STEPS.replace("range(3)", "range(1)")
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--profile {tmp_path}", once)
    (payload,) = _reports(cap)
    assert payload["labels"]["us"].startswith("step 0 only, TensorFlow's warm-up included")
    assert any(op.get("us") for op in payload["ops"])


def test_a_session_report_numbers_dumps_profiles_and_findings_by_one_step_count(ip, tmp_path):
    """Issue 19: "trace_step_3" next to "Dumped steps: 0, 1, 2", and "at step 1: Step 1: …" doubled."""
    dump, prof = tmp_path / "dump", tmp_path / "prof"
    ip.run_cell(TF1_TRAINING)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision force_fp16 --dump {dump} --dump-step 0|1|2 --profile {prof}", TF1_STEPS)
    (payload,) = _reports(cap)
    run = payload["run"]
    assert run["steps"] == 3 and run["dump_steps"] == [0, 1, 2]
    assert Path(run["trace_file"]).name == "trace_step_2.json"  # the last of steps 0, 1, 2
    traces = sorted(p.name for p in Path(run["trace_file"]).parent.glob("trace_step_*.json"))
    assert traces == ["trace_step_0.json", "trace_step_1.json", "trace_step_2.json"]
    assert Path(run["trace_file"]).parent.name == "graph_1"  # as the dump: the init run is graph 0
    assert sorted(p.name for p in (dump / "graph_1").iterdir()) == ["step_0", "step_1", "step_2"]
    assert run["nonfinite"]["step"] == 2  # the third training step, as numbered in the dump
    assert not run["nonfinite"]["reason"].startswith("Step")
    text = _text(cap)
    assert "First non-finite value: loss at step 2: fetch loss:0 is non-finite" in text
    assert "Step 2: Step" not in text and "at step 2: Step" not in text


@needs_function_emulation
def test_a_function_report_says_the_call_index_once(ip, tmp_path):
    ip.run_cell(models.OVERFLOWING_KERAS_FIT_CELL)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision force_fp16 --dump {tmp_path}", "fit()\n")
    (payload,) = _reports(cap)
    nonfinite = payload["run"]["nonfinite"]
    assert nonfinite["step"] == 0 and payload["run"]["dump_steps"] == [0, 1]
    assert "call 0" not in nonfinite["reason"].lower()
    assert re.search(r"at step 0: (The call|In this call)", _text(cap))


CUSTOMIZE_HALF_IN = (
    "OpType::MatMul:InputDtype:float16,float16,OutputDtype:float32\n"
    "OpType::BatchMatMulV2:InputDtype:float16,float16,OutputDtype:float32\n"
)
ATTENTION_GRAPH = (
    "import numpy as np, tensorflow as tf\n"
    "g = tf.Graph()\n"
    "with g.as_default():\n"
    "    q = tf.compat.v1.placeholder(tf.float32, [2, 4, 8], name='q')\n"
    "    w = tf.constant(np.full((8, 8), 0.1, np.float32), name='w')\n"
    "    proj = tf.reshape(tf.matmul(tf.reshape(q, [8, 8]), w, name='proj'), [2, 4, 8])\n"
    "    scores = tf.linalg.matmul(proj, q, transpose_b=True, name='scores')\n"
    "    out = tf.reduce_sum(tf.nn.softmax(scores), name='out')\n"
    "feed = {q: np.full((2, 4, 8), 0.3, np.float32)}\n"
)


def test_input_only_lowering_counts_as_changed_precision(ip, tmp_path):
    """Issue 19: customize_dtypes "float16 in, float32 out" showed "0 changed precision" while the
    Transformer's 114 MatMul/BatchMatMulV2 read float16."""
    rules = tmp_path / "half_in.cfg"
    rules.write_text(CUSTOMIZE_HALF_IN)
    ip.run_cell(ATTENTION_GRAPH)
    cell = "with tf.compat.v1.Session(graph=g) as sess:\n    sess.run(out, feed)\n"
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision allow_fp32_to_fp16 --set customize_dtypes={rules}", cell)
    (payload,) = _reports(cap)
    ops = {op["n"]: op for op in payload["ops"]}
    for name in ("proj", "scores"):
        assert ops[name]["d0"] == ops[name]["d1"] == "float32" and ops[name]["rd"] == "float16"
    assert payload["summary"]["precision_changed"] >= 2
    text = _text(cap)
    assert "proj [MatMul] AI_CORE float32 (reads float16)" in text
    assert f"{payload['summary']['precision_changed']} changed precision" in text
    assert "(reads float16)" in cap.outputs[0].data["text/html"]


def _dense_graph(batch):
    """x [batch, 512] @ w [512, 512], reduced; ``batch`` None leaves the batch to the feed."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [batch, 512], name="x")
        w = tf.constant(np.full((512, 512), 0.01, np.float32), name="w")
        tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name="mm")), name="total")
    return g


def test_the_estimate_of_a_run_uses_the_batch_it_fed_in_the_cell_and_on_last_report(ip):
    """Issue 19: a placeholder of batch None fed 64 rows was estimated as a batch of 1."""
    from npu_jupyter import plan
    from npu_jupyter.cost import estimate

    ip.user_ns["g"] = _dense_graph(None)
    cell = (
        "import numpy as np\n"
        "sess = tf.compat.v1.Session(graph=g)\n"
        "sess.run('total:0', {'x:0': np.ones((64, 512), np.float32)})\n"
    )
    ip.run_cell("import tensorflow as tf")
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision", cell)
    (payload,) = _reports(cap)
    static = _dense_graph(64)  # the same graph with the fed batch written in
    expected = estimate(
        plan(static, {"precision_mode": "allow_mix_precision"}, fetches=["total:0"]),
        static,
        fed_shapes={"x:0": [64, 512]},  # and each step copies the fed x to the device and total back
        fetched=["total:0"],
    )
    assert len(expected.run_copies) == 2
    shown = payload["cost_model"]
    assert shown["memory_bytes"] == expected.memory_bytes
    assert shown["step_ms"] == pytest.approx(expected.step_ms, abs=1e-4)  # the payload keeps 4 decimals
    assert "counted as 1" not in shown["basis"]  # no dimension was guessed
    last = report_payload(ip.user_ns["sess"].last_report)["cost_model"]  # session().last_report agrees
    assert last["memory_bytes"] == shown["memory_bytes"] and last["step_ms"] == pytest.approx(
        shown["step_ms"], abs=1e-4
    )
    ip.user_ns["sess"].close()


CONV_TRAINING = (
    "import numpy as np, tensorflow as tf\n"
    "g = tf.Graph()\n"
    "with g.as_default():\n"
    "    x = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 3], name='x')\n"
    "    f = tf.compat.v1.get_variable('f', initializer=np.full((3, 3, 3, 4), 0.1, np.float32))\n"
    "    loss = tf.reduce_sum(tf.nn.conv2d(x, f, 1, 'SAME', name='conv'), name='loss')\n"
    "    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
    "    init = tf.compat.v1.global_variables_initializer()\n"
    "feed = {x: np.ones((4, 8, 8, 3), np.float32)}\n"
)


def test_a_mode_that_fails_to_compile_is_shown_refused_not_with_an_estimated_time(ip):
    """Issue 19: float32 Conv2D gradients under must_keep_origin_dtype on the Ascend910 got a step time."""
    ip.run_cell(CONV_TRAINING)
    cell = "with tf.compat.v1.Session(graph=g) as sess:\n    sess.run(init)\n    sess.run([loss, train], feed)\n"
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision must_keep_origin_dtype", cell)
    payload = _reports(cap)[0]
    assert payload["errors"] and "fails to compile" in payload["errors"][0]
    cost = payload["cost_model"]
    assert cost["step_ms"] is None and cost["memory_bytes"] is None and cost["basis"].startswith("refused")
    assert not any("est_us" in op for op in payload["ops"])
    text = _text(cap)
    assert "NPU step (estimated by the cost model, not measured): refused: the adapter would not compile" in text
    assert " ms" not in text.split("NPU step (", 1)[1].split("\n", 1)[0]
    # the same graph under a mode that compiles keeps its estimate
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision", cell)
    assert _reports(cap)[0]["cost_model"]["step_ms"] > 0


def test_the_sweep_shows_a_refused_mode_as_refused_in_every_time_column(ip):
    ip.run_cell(CONV_TRAINING)
    ip.run_cell(
        "import npu_jupyter\n"
        "table = npu_jupyter.sweep(g, [loss, train], feed, modes=['allow_mix_precision', 'must_keep_origin_dtype'],"
        " steps=1, progress=False)\n"
    )
    table = ip.user_ns["table"]
    keep, mix = table["must_keep_origin_dtype"], table["allow_mix_precision"]
    assert keep.refused and keep.est_step_ms is None and keep.est_memory_bytes is None
    assert not mix.refused and mix.est_step_ms > 0
    line = next(line for line in repr(table).splitlines() if line.startswith("must_keep_origin_dtype"))
    cells = line.split()  # mode, est ms, vs fp32, est memory, vs fp32, changed, max_rel, cos, CPU ms, worst op
    assert cells[1:5] == ["refused"] * 4 and cells[8] == "refused"
    assert "refused" in table._repr_html_() and "so it has no step time" in table._repr_html_()


# ---------------------------------------------------------------------------------------- dumps (§4)


@needs_function_emulation
def test_load_dump_opens_the_train_functions_dump_after_fit_with_validation_data(ip, tmp_path):
    """Issue 19: after fit(..., validation_data=...) load_dump opened the evaluate function's dump (a tie
    of dumped calls went to the later graph)."""
    from npu_jupyter._runtime.observe.dump import load_dump

    ip.run_cell(KERAS_FIT)
    cell = "fit(epochs=1, validation_data=(np.ones((32, 6), 'float32'), np.ones((32, 4), 'float32')))\n"
    with capture_output():
        ip.run_cell_magic("npu", f"--precision allow_mix_precision --dump {tmp_path} --dump-step 0|1", cell)
    dump = load_dump(tmp_path)
    assert len(dump.graphs) == 2 and len(dump.graph(0).steps) == len(dump.graph(1).steps) == 2  # a tie
    assert any("gradient_tape" in t.op for t in dump.tensors())  # the train step's gradients
    assert dump.graph_info(dump.graph_id)["role"] == "training"
    (other,) = [g for g in dump.graphs if g != dump.graph_id]
    assert dump.graph_info(other).get("role", "") == ""
    assert not any("gradient_tape" in t.op for t in dump.graph(other).tensors())


def test_an_initializer_dump_leaves_the_budget_to_the_training_steps(ip, tmp_path, monkeypatch):
    """Issue 19: a YOLOv3-size initializer dump (1.4 GiB) used up the budget and no training step was dumped."""
    from npu_jupyter._runtime.observe.dump import load_dump

    monkeypatch.setenv("NPU_JUPYTER_DUMP_BUDGET", "3MB")
    ip.run_cell(
        "import numpy as np, tensorflow as tf\n"
        "g = tf.Graph()\n"
        "with g.as_default():\n"
        "    x = tf.compat.v1.placeholder(tf.float32, [8, 256], name='x')\n"
        "    w = tf.compat.v1.get_variable('w', initializer=tf.ones([256, 1024]))\n"  # 1 MiB of weights
        "    loss = tf.reduce_sum(tf.matmul(x, w, name='mm'), name='loss')\n"
        "    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
        "    init = tf.compat.v1.global_variables_initializer()\n"
    )
    cell = (
        "with tf.compat.v1.Session(graph=g) as sess:\n"
        "    sess.run(init)\n"
        "    sess.run([loss, train], {x: np.ones((8, 256), np.float32)})\n"
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--dump {tmp_path} --dump-step 0", cell)
    (payload,) = [p for p in _reports(cap) if p["run"].get("dump_steps")]
    assert payload["run"]["dump_steps"] == [0] and not payload["run"].get("dump_skipped")
    dump = load_dump(tmp_path)
    assert dump.graph_info(dump.graph_id)["role"] == "training" and dump.steps == [0]
    assert dump[0]["mm"][0].shape == (8, 1024)
    init = dump.graph(0)
    assert init.graph_info(0)["role"] == "initializer" and init[0].manifest["dump_data"] == "stats"
    assert not list(tmp_path.glob("step_0/*.npy"))  # statistics only: no tensor files, no budget spent
    assert "budget" not in _text(cap)


def _html(cap):
    return "\n".join(out.data.get("text/html", "") for out in cap.outputs)


def test_a_profiled_dumped_tf1_report_with_a_reference_labels_each_number_whose_and_how_aggregated(ip, tmp_path):
    """Review of a whole `--profile --dump --reference` report: "CPU time" named wall-clock readings, the
    reference's mean said no count, the costliest ops were "per run", the estimates said no unit of work
    and the chart's shares said not of what."""
    dump, prof = tmp_path / "dump", tmp_path / "prof"
    ip.run_cell(TF1_TRAINING)
    line = f"--precision allow_fp32_to_fp16 --reference --dump {dump} --dump-step 0|1|2 --profile {prof}"
    with capture_output() as cap:
        ip.run_cell_magic("npu", line, TF1_STEPS)
    out, page = _text(cap), _html(cap)
    (payload,) = _reports(cap)
    reference = payload["run"]["reference_wall_ms"]
    assert (
        f"float32 reference: {reference:.2f} ms (mean per step over the 3 steps that ran it; wall-clock time of "
        "the float32 reference run on this CPU)" in out
    )
    assert "wall-clock time of the emulation on this CPU)\n" in out  # the Run line
    assert "Costliest ops (mean per step, over 2 profiled steps, step 0 (warm-up) left out; wall-clock" in out
    assert "Estimated costliest ops (NPU time per step, estimated by the cost model, not measured)" in out
    assert re.search(r"[0-9.]+ µs \([0-9]+% of total\)", page)
    for view in (out, page):
        assert "CPU time" not in view and "per run" not in view and "measured on the device" not in view


@needs_function_emulation
def test_a_keras_fit_report_counts_calls_and_says_per_call(ip, tmp_path):
    """A function's report counted its calls as "6 steps" next to "mean per call over 6 calls"."""
    ip.run_cell(KERAS_FIT)
    with capture_output() as cap:
        ip.run_cell_magic("npu", f"--precision allow_mix_precision --reference --profile {tmp_path}", "fit(epochs=2)\n")
    out, page = _text(cap), _html(cap)
    assert "Run: backend emulator · 6 calls · " in out and "6 steps" not in out
    assert "Costliest ops (mean per call, over 5 profiled calls, call 0 (warm-up) left out; wall-clock" in out
    for view in (out, page):
        assert "CPU time" not in view and "per run" not in view
