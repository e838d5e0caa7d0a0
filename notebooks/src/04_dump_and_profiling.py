# %% [markdown]
# # 04 · Dump, compare, find overflows, profile
#
# When a model ported to Ascend trains worse than on GPU, the usual questions are:
#
# 1. *What did op X compute at step N?* → **data dump** (`enable_dump`, `dump_path`, `dump_step`,
#    `dump_mode`), read back with `npu_jupyter.load_dump`.
# 2. *Where do two runs start to differ?* → `npu_jupyter.compare`, with the metrics of the Ascend
#    accuracy comparison tool (cosine similarity, max absolute / relative error...).
# 3. *Which op overflowed float16 first?* → **overflow detection** (`enable_dump_debug`).
# 4. *Where does the time go?* → **profiling** (`profiling_mode`, `profiling_options`): a chart in the
#    report, a Chrome trace for Perfetto and an op summary CSV.
#
# All four are session options, so they work through `%npu set` and the `%%npu` flags. On the emulator
# the files are written in npu_jupyter's own layout (one `.npy` per tensor, a JSON manifest per step).

# %%
# NBVAL_IGNORE_OUTPUT
%load_ext npu_jupyter
import csv
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

import npu_jupyter

tf.compat.v1.disable_eager_execution()

# %% [markdown]
# Every file of this notebook goes into one temporary folder, deleted by the last cell. `rel()` shows
# paths relative to it.

# %%
# NBVAL_IGNORE_OUTPUT
OUT = tempfile.mkdtemp(prefix="npu_tutorial_04_")
for name in ("dump_fp16", "dump_fp32", "dump_session", "overflow", "profile"):
    os.makedirs(os.path.join(OUT, name))


def rel(path):
    return os.path.relpath(path, OUT)


OUT

# %% [markdown]
# ## The model
#
# A two-layer classifier trained with a v1 optimizer. `scale` multiplies the input: with a large
# scale the activations exceed float16's range (65504), which section 3 uses.

# %%
rng = np.random.default_rng(0)
X = rng.normal(size=(32, 16)).astype(np.float32)
Y = rng.integers(0, 4, size=32)

x = tf.compat.v1.placeholder(tf.float32, [32, 16], name="x")
y = tf.compat.v1.placeholder(tf.int64, [32], name="y")
scale = tf.compat.v1.placeholder_with_default(1.0, [], name="scale")
w1 = tf.compat.v1.get_variable("w1", initializer=(rng.normal(size=(16, 64)) * 0.3).astype(np.float32))
w2 = tf.compat.v1.get_variable("w2", initializer=(rng.normal(size=(64, 4)) * 0.3).astype(np.float32))
scaled = tf.multiply(x, scale, name="scaled")
hidden = tf.nn.relu(tf.matmul(scaled, w1, name="dense1"), name="hidden")
squares = tf.square(hidden, name="squares")
logits = tf.matmul(hidden, w2, name="logits")
loss = tf.add(tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)),
              1e-6 * tf.reduce_sum(squares), name="loss")
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, name="train")
init_op = tf.compat.v1.global_variables_initializer()
feed = {x: X, y: Y}

# %% [markdown]
# ## 1. Dump selected steps
#
# `--dump DIR` turns `enable_dump` on with `dump_path=DIR` for this cell; `--dump-step "0|2"` dumps only
# steps 0 and 2 (the adapter's syntax: `|` separates steps, `3-5` is a range); `--dump-mode all` saves
# the inputs and the outputs of every op (`input` or `output` for one side only).
#
# Steps are counted **per graph**, from 0, as on the device: the adapter compiles each distinct
# `sess.run` (its fetches and feeds) into its own graph, and each graph has its own iteration counter.
# The training runs below are steps 0-3 of the training graph, so `"0|2"` dumps the first and the third
# training step. The initializer run is step 0 of *its* graph, so it is dumped too, kept apart: the
# first graph a session runs is dumped at the top of the folder (`step_<n>/`), later ones under
# `graph_<id>/step_<n>/`, and `graphs.json` says which fetches and feeds define each graph.
#
# The run's report (below the cell) ends with the dump folder.

# %%
%%npu --precision allow_fp32_to_fp16 --dump $OUT/dump_fp16 --dump-step "0|2" --dump-mode all
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(4):
        sess.run(train_op, feed_dict=feed)

# %% [markdown]
# ### Read the dump back
#
# `npu_jupyter.load_dump(folder)` returns a `Dump`: `dump.graphs` lists the graphs in the folder, and
# `dump.steps`, `dump[step][op]` (the slots of an op: `"output:0"`, `"input:1"`...) and
# `dump.get(step, op, slot)` read the graph with the most dumped steps, here the training graph
# (`dump.graph(0)` is the initializer's). Only training steps 0 and 2 are there. Note the **dtype**: the
# dump holds each tensor in the precision the op computed it in, so `dense1` (a MatMul, float16 under
# `allow_fp32_to_fp16`) is float16.

# %%
dump = npu_jupyter.load_dump(os.path.join(OUT, "dump_fp16"))
print("graphs:", dump.graphs, "| reading graph", dump.graph_id, "run as", dump.graph_info(dump.graph_id)["fetches"])
print("steps:", dump.steps, "| initializer graph's steps:", dump.graph(0).steps)
print("slots of dense1:", sorted(dump[0]["dense1"].keys()))
a = dump.get(0, "dense1", 0)
print("dense1 output:", a.dtype, a.shape)
print("hidden output:", dump.get(0, "hidden", 0).dtype)
print("tensors in step 0:", len(dump[0].tensors))

# %% [markdown]
# Each tensor record also says which op type produced it and which dtype the plan decided:

# %%
for t in dump[0].tensors[:6]:
    print(f"{t.op:28} {t.kind:6} {t.slot} {t.op_type:12} {t.dtype:8} {t.shape}")

# %% [markdown]
# ### Dump through the session config
#
# The same options can be set for every following `%%npu` cell with `%npu set`. Here: every step's
# outputs, `dump_step` unset. The two training steps are steps 0 and 1 of the training graph.

# %%
dump_dir = os.path.join(OUT, "dump_session")
%npu set enable_dump=true dump_path=$dump_dir dump_mode=output
%npu

# %%
%%npu --quiet
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(2):
        sess.run(train_op, feed_dict=feed)
session_dump = npu_jupyter.load_dump(dump_dir)
print("steps:", session_dump.steps, "| kinds:", sorted({t.kind for t in session_dump.tensors()}))

# %%
%npu unset enable_dump dump_path dump_mode

# %% [markdown]
# ## 2. Compare two runs
#
# Dump the same steps under `force_fp32` and compare the two dumps tensor by tensor.
# `npu_jupyter.compare(a, b)` treats `b` as the reference and computes, per op and slot, the metrics
# of the Ascend accuracy comparison tool. Rows with a cosine similarity below 0.99 are highlighted.

# %%
%%npu --precision force_fp32 --dump $OUT/dump_fp32 --dump-step "0|2" --dump-mode all --quiet
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(4):
        sess.run(train_op, feed_dict=feed)

# %%
# NBVAL_IGNORE_OUTPUT
comparison = npu_jupyter.compare(os.path.join(OUT, "dump_fp16"), os.path.join(OUT, "dump_fp32"))
comparison

# %% [markdown]
# `comparison.worst(n)` sorts by cosine similarity. The exact errors depend on the CPU, so the notebook
# test checks only what must hold: both dumps have the same tensors, float16 made some of them differ,
# and no tensor lost its direction (cosine above 0.99).

# %%
print("tensors compared:", len(comparison), "| only in one run:", comparison.only_a + comparison.only_b)
print("some differ:", any(r.max_abs > 0 for r in comparison.rows))
print("all cosine > 0.99:", all(r.cosine > 0.99 for r in comparison.rows))
print("output tensors of step 0 that differ:",
      sum(1 for r in comparison.rows if r.step == 0 and r.slot.startswith("output") and r.max_abs > 0))

# %% [markdown]
# ## 3. Find the first float16 overflow
#
# Run one step under `force_fp16` and feed `scale=300`: the activations of `hidden` are a few hundred,
# fine in float16, but `squares` squares them, which exceeds float16's maximum (65504) and gives `inf`;
# the loss becomes `inf`.
#
# `enable_dump_debug=true` turns overflow detection on (the adapter's "overflow dump"), with
# `dump_debug_mode` = `aicore_overflow`, `atomic_overflow` or `all`. It needs a `dump_path`. Ops whose
# outputs hold inf/NaN in their decided precision are flagged in the report (marked OVERFLOW), dumped,
# and the **first** one of the step is named: that is where to look, everything after it only propagates
# the inf.

# %%
%%npu --precision force_fp16 --set enable_dump_debug=true dump_debug_mode=all dump_path=$OUT/overflow
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    loss_value = sess.run(loss, feed_dict={**feed, scale: 300.0})
    overflow_report = sess.last_report
print("loss:", loss_value)

# %% [markdown]
# The facts from the report: the first op that overflowed, and all that did.

# %%
print("first overflow:", overflow_report.first_overflow)
print("overflowed:", overflow_report.overflow_ops)
d = overflow_report.plan.ops[overflow_report.first_overflow]
print(f"it is a {d.op_type} computed in {d.dtype_after}: {d.precision_reason}")

# %% [markdown]
# The overflowing tensors are in the dump folder, flagged:

# %%
overflow_dump = npu_jupyter.load_dump(os.path.join(OUT, "overflow"))
step = overflow_dump.steps[0]
print("step", step, "first overflow:", overflow_dump[step].first_overflow)
for t in overflow_dump[step].tensors[:4]:
    print(f"  {t.op:10} {t.dtype:8} overflow={t.overflow} holds inf: {bool(np.isinf(t.value).any())}")

# %% [markdown]
# The fixes to try: keep `squares` in float32 (`keep_dtype_scope`, or `modify_mixlist` with a mixed
# mode, see notebook 03), scale the values down, or use a precision mode that keeps vector ops in
# float32. Check the last one: under `allow_fp32_to_fp16` only the MatMuls are float16, `squares` keeps
# float32, and nothing overflows.

# %%
%%npu --precision allow_fp32_to_fp16 --set enable_dump_debug=true dump_path=$OUT/overflow --quiet
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    loss_fixed = sess.run(loss, feed_dict={**feed, scale: 300.0})
    print("first overflow:", sess.last_report.first_overflow, "| loss is finite:", bool(np.isfinite(loss_fixed)))

# %% [markdown]
# ## 4. Profile
#
# `--profile DIR` turns `profiling_mode` on and writes to `DIR` (it sets `profiling_options`'s `output`;
# set other profiling options with `%npu set profiling_options='{"output": ..., "training_trace": "on",
# "fp_point": ..., "bp_point": ...}'`).
#
# The report of a profiled run shows a **bar chart of the costliest ops** (mean time per run, share of
# the step, op type), the per-op times in its op table, and the paths of the trace and the op summary.
# The times are those of TensorFlow's CPU kernels running the emulated precisions, not NPU times: use
# them to compare runs on this machine, not to predict the device. Only the steps you asked about are
# profiled: the variable-initialisation run is not, so 3 training steps give 3 traces. TensorFlow's own
# profiler log lines stay out of the cell (`--verbose` shows them).

# %%
%%npu --profile $OUT/profile
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(3):
        sess.run(train_op, feed_dict=feed)
    profile_report = sess.last_report

# %% [markdown]
# ### Where the files are
#
# One Chrome trace (`trace_step_<n>.json`) and one op summary (`op_summary_step_<n>.csv`) per step,
# numbered as the dump numbers them: per graph, from 0. The init run is graph 0, so the training
# graph's files go under `graph_1/`, as its dump does, and its steps 0, 1, 2 are the three training
# steps. `report.trace_file` and `report.op_summary_csv` are the last step's. To look at a trace, open
# <https://ui.perfetto.dev> and drag the file in (or use `chrome://tracing`): one track per engine
# (AI Core, AI CPU, host), one slice per op.

# %%
print("trace:", rel(profile_report.trace_file))
print("op summary:", rel(profile_report.op_summary_csv))
print(sorted(os.listdir(os.path.join(OUT, "profile"))), sorted(os.listdir(os.path.dirname(profile_report.trace_file))))

# %% [markdown]
# The trace is plain JSON in the Chrome trace event format:

# %%
with open(profile_report.trace_file) as f:
    trace = json.load(f)
tracks = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
slices = [e for e in trace["traceEvents"] if e.get("ph") == "X" and "op_type" in e.get("args", {})]
print("tracks:", sorted(tracks.values()))
print("has op slices:", len(slices) > 0, "| dense1 traced:", any(e["name"] == "dense1" for e in slices))
print("note:", trace["otherData"]["note"])

# %% [markdown]
# The op summary CSV has the columns of the Ascend profiler's `op_summary` that a CPU run can fill; the
# device-only ones (task, stream and model ids, wait time, block dim, formats) are left out rather than
# filled with constants, and the times say they are CPU times of the emulation:

# %%
with open(profile_report.op_summary_csv) as f:
    rows = list(csv.DictReader(f))
print(list(rows[0].keys()))

# %% [markdown]
# and the per-op times are on the report too (`report.op_times_us`, average µs per step over the steps
# after step 0, whose times include TensorFlow's warm-up), ready to sort:

# %%
# NBVAL_IGNORE_OUTPUT
sorted(profile_report.op_times_us.items(), key=lambda kv: -kv[1])[:5]

# %% [markdown]
# ## Clean up
#
# Delete the temporary folder (skip this cell to keep the files and open the trace in Perfetto).

# %%
shutil.rmtree(OUT)
%npu reset

# %% [markdown]
# ## What to try next
#
# * `--dump-step "1-3"` dumps a range; `dump_layer` (with `%npu set`) limits the dump to named ops.
# * `compare` also takes two `RunReport`s; with `session(..., reference=True)` each report holds the per-op
#   drift against float32 (`report.drift`), no dump needed.
# * Fix the overflow of section 3 with `keep_dtype_scope` around `squares` under `force_fp16`, and check
#   that `first_overflow` is `None`. Then raise `scale` to 100000: which op overflows first now, and why
#   does `force_fp32` not help (hint: the cube ops read float16 on the Ascend 910)?
# * Profile with `%npu set profiling_options='{"output": "...", "training_trace": "on", "fp_point": "dense1", "bp_point": "train"}'`
#   to get the forward/backward markers in the trace.
# * **05_widget_panel**: the same options in a widget panel.
