# %% [markdown]
# # 02 · Mixed computing: ops the device cannot run
#
# An Ascend NPU cannot run every TensorFlow op: Python callbacks (`tf.numpy_function`, `tf.py_func`),
# string ops, most input-pipeline ops and a few data-dependent ops have no device kernel. What happens to
# them depends on one session option, `mix_compile_mode`:
#
# * **full offload** (`mix_compile_mode=False`, the adapter's default): the adapter keeps **one** device
#   cluster (a *GeOp*: a subgraph compiled for the device). Unsupported ops, and every supported op they cut
#   off from that cluster, **silently** run on the host CPU.
# * **mixed computing** (`mix_compile_mode=True`): every run of supported ops becomes its own GeOp, the
#   unsupported ops run on the host, and tensors are copied host↔device between them.
#
# This notebook shows both with npu_jupyter's plan (no run needed), then `without_npu_compile_scope`,
# the scope real Ascend scripts wrap their input pipelines and summary code in, `in_out_pair`, and what the
# partition costs in host↔device transfers.

# %%
# NBVAL_IGNORE_OUTPUT
%load_ext npu_jupyter
import numpy as np
import tensorflow as tf

import npu_jupyter
from npu_jupyter import scope

tf.compat.v1.disable_eager_execution()

# %% [markdown]
# ## 1. A model with one op the device cannot run
#
# A small classifier with a Python callback (`tf.numpy_function`, op type `PyFunc`) in the middle,
# standing in for any custom preprocessing written in NumPy.

# %%
def build_model():
    """x -> MatMul -> PyFunc (NumPy) -> Relu -> MatMul -> loss, with a v1 optimizer."""
    rng = np.random.default_rng(0)
    x = tf.compat.v1.placeholder(tf.float32, [16, 8], name="x")
    labels = tf.compat.v1.placeholder(tf.int64, [16], name="labels")
    w1 = tf.compat.v1.get_variable("w1", initializer=rng.normal(size=(8, 16)).astype(np.float32) * 0.3)
    w2 = tf.compat.v1.get_variable("w2", initializer=rng.normal(size=(16, 4)).astype(np.float32) * 0.3)
    h = tf.matmul(x, w1, name="dense1")
    clipped = tf.numpy_function(lambda a: np.clip(a, -2.0, 2.0).astype(np.float32), [h], tf.float32,
                                name="numpy_clip")
    clipped.set_shape([16, 16])
    hidden = tf.nn.relu(clipped, name="hidden")
    logits = tf.matmul(hidden, w2, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                          name="loss")
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return x, labels, loss, train


graph = tf.Graph()
with graph.as_default():
    x, labels, loss, train = build_model()
    init_op = tf.compat.v1.global_variables_initializer()

# %% [markdown]
# `npu_jupyter.plan(graph, config, fetches=...)` makes the adapter's decisions without running anything.
# The config can be an `NpuConfig` or a plain dict of options.
#
# ### Full offload
#
# Look at the **warning**: the PyFunc cuts the graph in two, the adapter keeps only the larger part on the
# device, and the ops of the other part (here the first layer: `x`, `w1`, the `dense1` MatMul...) run on
# the host CPU without any message from the real adapter. Their reason column says so.

# %%
full = npu_jupyter.plan(graph, {"mix_compile_mode": False}, fetches=["loss"])
full

# %% [markdown]
# The same facts as plain values (these lines are also what the notebook test compares):

# %%
print(full.summary())
print("host ops:", [n for n, d in full.ops.items() if d.placement == "host"])
print(full.warnings[0])

# %% [markdown]
# ### Mixed computing
#
# With `mix_compile_mode=True` only the PyFunc stays on the host. The supported ops on either side of it
# become two GeOps (`plan.subgraphs`). `plan.transfers` lists every tensor that crosses between host and
# device: `dense1` goes device→host into the callback and its result comes back host→device.

# %%
mixed = npu_jupyter.plan(graph, {"mix_compile_mode": True}, fetches=["loss"])
print(mixed.summary())
print("host ops:", [n for n, d in mixed.ops.items() if d.placement == "host"])
for sub in mixed.subgraphs:
    print(f"{sub.name}: {len(sub.ops)} ops, e.g. {sub.ops[:4]}")
for t in mixed.transfers:
    print(f"{t.direction}: {t.tensor} ({t.dtype}, {t.bytes} bytes) -> {t.dst}")

# %% [markdown]
# Why did each op land where it did? Every decision carries its reason:

# %%
for name in ["dense1", "numpy_clip", "hidden", "logits"]:
    d = mixed.ops[name]
    print(f"{name:11} {d.op_type:8} {d.engine:8} {d.cluster}: {d.placement_reason}")

# %% [markdown]
# ### The training step, both ways
#
# Plans are enough to see the decisions; running shows that the emulator really executes the split
# graph. `%%npu --mix` turns mixed computing on for one cell (`--no-mix` turns it off). The report under
# the cell is the same plan plus the measured run (times vary, so this output is not compared).

# %%
%%npu --mix
# NBVAL_IGNORE_OUTPUT
rng = np.random.default_rng(1)
feed = {x: rng.normal(size=(16, 8)).astype(np.float32), labels: rng.integers(0, 4, size=16)}
with tf.compat.v1.Session(graph=graph) as sess:
    sess.run(init_op)
    for _ in range(3):
        loss_value, _ = sess.run([loss, train], feed_dict=feed)
    mixed_run = sess.last_report

# %% [markdown]
# The run used the mixed-computing plan:

# %%
print(mixed_run.plan.summary())

# %% [markdown]
# ## 2. `without_npu_compile_scope`: what real scripts keep on the host
#
# The adapter's `npu_scope.without_npu_compile_scope()` marks every op created inside it to stay on
# the host. In public Ascend model scripts it wraps three kinds of code:
#
# * **input pipelines**: TF1 queues (`slice_input_producer`, `batch`) or `tf.data`, often with a
#   `py_func` for augmentation;
# * **summary and statistics code** that keeps float64 variables and writes `ScalarSummary` ops;
# * a **data-dependent `tf.where(mask)`**, whose output shape depends on the values.
#
# `npu_jupyter.scope.without_npu_compile_scope()` sets exactly the attribute the adapter's scope sets
# (`_without_npu_compile`), so the graph you build here is the graph the real adapter reads.
#
# The builder below contains all three, written the way the scripts write them: a TF1 queue pipeline
# (`slice_input_producer` → a NumPy augmentation with `tf.numpy_function` → `batch`), float64 running
# statistics with a summary, and a `tf.where` on the logits. `use_scope` chooses whether they are wrapped.
# (The queue API is deprecated in TF 2 and prints warnings; the first lines of the cell silence them.)

# %%
import contextlib

tf.get_logger().setLevel("ERROR")  # the TF1 queue API's deprecation warnings


def build_script(use_scope: bool):
    """A queue input pipeline with a NumPy augmentation, a linear model, float64 loss statistics and a
    data-dependent tf.where; the host-side parts are wrapped in the scope when use_scope is True.
    Returns the fetches of one training step."""
    rng = np.random.default_rng(0)
    images = rng.normal(size=(64, 8)).astype(np.float32)
    classes = (np.arange(64) % 4).astype(np.int64)

    def maybe_scope():
        return scope.without_npu_compile_scope() if use_scope else contextlib.nullcontext()

    with maybe_scope():  # input pipeline: queues fed by a background thread, with a Python augmentation
        image, label = tf.compat.v1.train.slice_input_producer([images, classes], shuffle=False)
        image = tf.numpy_function(lambda v: (v * 0.5).astype(np.float32), [image], tf.float32, name="augment")
        image.set_shape([8])
        xb, yb = tf.compat.v1.train.batch([image, label], batch_size=16, name="input_batch")
    w = tf.compat.v1.get_variable("w", initializer=rng.normal(size=(8, 4)).astype(np.float32) * 0.3)
    logits = tf.matmul(xb, w, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits),
                          name="loss")
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    with maybe_scope():  # float64 running statistics and a summary
        total = tf.compat.v1.get_variable("loss_total", [], tf.float64, trainable=False,
                                          initializer=tf.compat.v1.zeros_initializer())
        running = tf.compat.v1.assign_add(total, tf.cast(loss, tf.float64), name="loss_total_update")
        summary = tf.compat.v1.summary.scalar("loss_total", running)
    with maybe_scope():  # data-dependent shape: indices of confident logits
        confident = tf.where(tf.greater(logits, 1.0), name="confident")
        n_confident = tf.shape(confident, name="n_confident")[0]
    return [loss.name, train.name, n_confident.name, summary.name]


def enqueue_ops(graph):
    """The ops the queue runner threads run (each is a session run of its own)."""
    runners = graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
    return [op.name for runner in runners for op in runner.enqueue_ops]

# %% [markdown]
# ### Without the scope
#
# Plan one training step with mixed computing on but **no** scope. The dequeue op (`input_batch`) and
# the summary have no device kernel, so they stay on the host anyway. But the float64 statistics
# (`Cast`, `AssignAddVariableOp`) are offloaded, and `tf.where` (the `confident` op) goes to **AI CPU**,
# the device's slow general-purpose cores, because its output shape depends on the data.

# %%
config = npu_jupyter.NpuConfig(mix_compile_mode=True)
SCRIPT_OPS = ["input_batch", "Cast", "AssignAddVariableOp", "loss_total_1", "confident"]


def plan_script(use_scope: bool):
    """Plans of one training step and of the queue runners' enqueue runs."""
    g = tf.Graph()
    with g.as_default():
        fetches = build_script(use_scope)
    return npu_jupyter.plan(g, config, fetches=fetches), npu_jupyter.plan(g, config, fetches=enqueue_ops(g))


def where_it_runs(p, names):
    for name in names:
        d = p.ops[name]
        print(f"  {name:20} {d.op_type:20} {d.engine:8} {d.dtype_before or '-':8} {d.placement_reason}")


unscoped, unscoped_input = plan_script(use_scope=False)
print(unscoped.summary())
where_it_runs(unscoped, SCRIPT_OPS)

# %% [markdown]
# The queue runner threads run the enqueue side of the pipeline as separate session runs; their plan
# shows where the augmentation runs. Without the scope, whatever part of it the device supports is
# offloaded, with copies back and forth around the Python callback:

# %%
print(unscoped_input.summary())
print("host:", [n for n, d in unscoped_input.ops.items() if d.placement == "host"])

# %% [markdown]
# ### With the scope
#
# Wrapped the way the real scripts wrap them, the pipeline, the float64 statistics and the `tf.where`
# all stay on the host: the device gets one GeOp with only the model and its training step, no AI CPU op
# and no float64 math. The price is small: the loss and the logits are copied to the host each step
# (see section 4).

# %%
scoped, scoped_input = plan_script(use_scope=True)
print(scoped.summary())
where_it_runs(scoped, SCRIPT_OPS)
print("device clusters:", [(s.name, len(s.ops)) for s in scoped.subgraphs])
print("input pipeline:", scoped_input.summary())

# %% [markdown]
# The full report of the scoped training step; the reason column names the scope for every host op.

# %%
scoped

# %% [markdown]
# The scoped script runs under `%%npu` as it would in a training script: initialise, start the queue
# runner threads, run the steps, stop the threads. Every `sess.run`, the queue runners' included, gets
# a report; `sess.reports` holds them all (the queue threads' runs interleave with the training steps),
# and we pick the training step's by its fetches.

# %%
%%npu --mix --quiet
script_graph = tf.Graph()
with script_graph.as_default():
    script_fetches = build_script(use_scope=True)
    script_init = [tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()]
with tf.compat.v1.Session(graph=script_graph) as sess:
    sess.run(script_init)
    coord = tf.compat.v1.train.Coordinator()
    threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
    for step in range(3):
        loss_value, _, n_conf, _ = sess.run(script_fetches)
    coord.request_stop()
    coord.join(threads)
    train_reports = [r for r in sess.reports if "train" in r.fetches]
print(train_reports[-1].plan.summary())
print("training steps run:", sum(r.steps for r in train_reports))

# %% [markdown]
# ## 3. `in_out_pair`: offload exactly one range
#
# For online inference the adapter can offload only the ops **between** named inputs and outputs
# (`in_out_pair`, with mixed computing on). The value is a list of `[inputs, outputs]` pairs of node
# names. Here we offload the second half of the model from section 1, from `hidden` to `logits`:

# %%
pair = npu_jupyter.plan(graph, {"mix_compile_mode": True, "in_out_pair": "[[['hidden'], ['logits']]]"},
                        fetches=["logits"])
print(pair.summary())
where_it_runs(pair, ["dense1", "numpy_clip", "hidden", "logits"])

# %% [markdown]
# A range that contains an op the device cannot run is refused by the adapter. The plan reports it in
# `plan.errors` (the adapter's own message) instead of pretending it works:

# %%
bad_pair = npu_jupyter.plan(graph, {"mix_compile_mode": True, "in_out_pair": "[[['dense1'], ['logits']]]"},
                            fetches=["logits"])
print(bad_pair.errors)

# %% [markdown]
# ## 4. What the partition costs
#
# Every GeOp is a separate device launch, and every tensor in `plan.transfers` is a copy across PCIe
# each step. `plan.summary()` counts both; `transfer_bytes` adds up the tensor sizes (when the shapes are
# known). Compare the three ways of running the section 1 model:

# %%
for label, p in [("full offload", full), ("mixed computing", mixed), ("in_out_pair", pair)]:
    s = p.summary()
    print(f"{label:16} clusters={s['clusters']} host ops={s['host']:2} transfers={s['transfers']} "
          f"({s['transfer_bytes']} bytes per step)")

# %% [markdown]
# And for the script of section 2, with and without the scope:

# %%
for label, p in [("no scope", unscoped), ("with scope", scoped)]:
    s = p.summary()
    print(f"{label:11} clusters={s['clusters']} AI CPU ops={s['ai_cpu']} host ops={s['host']:2} "
          f"transfers={s['transfers']} ({s['transfer_bytes']} bytes per step)")
    for t in p.transfers:
        print(f"    {t.direction} {t.tensor:12} {t.dtype:8} {t.bytes} bytes -> {t.dst}")

# %% [markdown]
# Reading these numbers:
#
# * **Full offload** has the fewest transfers here only because the whole first half of the model
#   (including the `dense1` MatMul) silently runs on the host CPU. Fewer copies, but slow compute, and no
#   message from the real adapter: this is the case the plan's warning is for.
# * **Mixed computing** runs every supported op on the device and pays with two GeOp launches and a
#   copy each way around the callback, every step.
# * A few hundred bytes per step is free; megabytes per step (activations crossing back and forth around
#   a Python callback in the middle of a network) can cost more than the compute they save. Then move the
#   host op to the edge of the graph (into the input pipeline) so that only the inputs cross, once.
# * Each entry of `plan.transfers` is one GeOp argument or result, as the adapter builds them: a tensor
#   leaving a device cluster is listed once, and a host tensor entering a cluster once per cluster, even
#   when several ops inside read it (`t.consumers` lists them).
#
# ## What to try next
#
# * Replace the `tf.numpy_function` of section 1 by a string op (`tf.strings.as_string` then
#   `tf.strings.to_number`) and plan again: string ops are host ops too.
# * Run the section 1 training cell with `%%npu --no-mix` and read the report's warning.
# * Set mixed computing for the whole session with `%npu set mix_compile_mode=true`, then check
#   `%npu` for the rules that come with it (e.g. `iterations_per_loop` must be 1).
# * `%npu explain NAME` plans the default graph for one tensor without running it.
# * Notebook **03_precision_modes** looks at the other half of every decision: the precision.
