# %% [markdown]
# # 01 · Quick start: configure, run, read the report, export the config
#
# This notebook shows the whole npu_jupyter loop in five minutes:
#
# 1. load the extension,
# 2. choose Ascend session options with `%npu set`,
# 3. run one TF1-style training step under `%%npu`,
# 4. read the report: **where** every op runs (AI Core, AI CPU or host) and **in which precision**,
# 5. export the options as the Python code your training script needs.
#
# No NPU is needed. Without the Ascend adapter (`npu_bridge`) installed, npu_jupyter uses its
# **emulator**: it makes the adapter's placement and precision decisions, then runs the graph on the CPU
# with those precisions, so the numbers you see are the numbers the decided precisions give.
# On a machine with Ascend NPUs and the adapter, the same cells run on the real device.

# %% [markdown]
# ## 1. Load the extension
#
# `%load_ext npu_jupyter` registers the `%npu` (line) and `%%npu` (cell) magics. It does not import
# TensorFlow, so it is instant.

# %%
%load_ext npu_jupyter

# %% [markdown]
# We build graphs TF1-style (`tf.compat.v1`, graph mode), the style most Ascend training scripts use.
# Loading the extension keeps TensorFlow's C++ start-up messages out of the notebook
# (`%config NpuMagics.verbose = True` lets them in) and, as the line above says, makes `tf.keras` Keras 2
# as on the adapter's TensorFlow, so TF1 layers such as `tf.compat.v1.layers.dense` work.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.reset_default_graph()

# %% [markdown]
# ## 2. Choose session options with `%npu set`
#
# Every option of the adapter's `NpuOptimizer` is available under its `custom_op.parameter_map` key.
# Here we ask for the float16-friendly precision mode used by most Ascend 910 training scripts and turn
# mixed computing off (full offload: everything the device can run goes to the device).
#
# A value is checked when you set it: try `%npu set precision_mode=fp16` to see the error and the
# allowed values (nothing changes when a line has an error).

# %%
%npu set precision_mode=allow_fp32_to_fp16 mix_compile_mode=false

# %% [markdown]
# `%npu` (or `%npu show`) shows the options you set, plus any problem or warning about the combination.
# Options you did not set keep the adapter's default. The "read by" column says which side of the
# Ascend adapter reads each option: the TF1 adapter (`npu_bridge`, this notebook's sessions), the TF2
# adapter (`npu_device.global_options()`, for Keras and `tf.function` code, under the name shown), or
# both. `mix_compile_mode` is TF1 only: `npu_device` places ops its own way.

# %%
%npu

# %% [markdown]
# The same config is a Python object, `npu_jupyter.current_config()`; `changed()` lists only what you set.

# %%
import npu_jupyter

config = npu_jupyter.current_config()
print(config.changed())

# %% [markdown]
# ## 3. Build a tiny model and run one training step under `%%npu`
#
# A two-layer classifier written the TF1 way: placeholders, variables and a v1 optimizer
# (`tf.compat.v1.train.MomentumOptimizer`). Nothing NPU-specific is in the model code.

# %%
rng = np.random.default_rng(0)
x_data = rng.normal(size=(32, 16)).astype(np.float32)
y_data = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=32)]

x = tf.compat.v1.placeholder(tf.float32, [None, 16], name="x")
y = tf.compat.v1.placeholder(tf.float32, [None, 4], name="y")
init = tf.compat.v1.initializers.glorot_uniform(seed=1)
w1 = tf.compat.v1.get_variable("w1", [16, 32], initializer=init)
b1 = tf.compat.v1.get_variable("b1", [32], initializer=tf.compat.v1.zeros_initializer())
w2 = tf.compat.v1.get_variable("w2", [32, 4], initializer=init)
hidden = tf.nn.relu(tf.matmul(x, w1) + b1, name="hidden")
logits = tf.matmul(hidden, w2, name="logits")
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
train_op = tf.compat.v1.train.MomentumOptimizer(0.1, momentum=0.9).minimize(loss, name="train_op")
init_op = tf.compat.v1.global_variables_initializer()

# %% [markdown]
# Now the training cell. `%%npu` runs the cell with the session config; every
# `tf.compat.v1.Session` created inside it becomes an NPU session (here: the emulator).
# After the cell, one report per distinct `sess.run` renders below it.
#
# The report's first lines are the ones to read:
#
# * the **title**: number of ops, full offload or mixed computing, the precision mode, the SoC;
# * the **counts**: how many ops run on AI Core, AI CPU and the host, how many changed precision;
# * the **ops that left the device or changed precision**, each with its reason.
#
# In JupyterLab with the extension, the report is an interactive graph coloured by placement and
# precision with a sortable op table; other frontends show the HTML table.

# %%
%%npu
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    for step in range(3):
        _, loss_value = sess.run([train_op, loss], feed_dict={x: x_data, y: y_data})
    last_report = sess.last_report
print(f"loss after 3 steps: {loss_value:.3f}")

# %% [markdown]
# The report above holds run times, so it differs from run to run. The decisions do not: the report
# object is kept on the session as `sess.last_report`, and its `plan` says what went where.
# `plan.summary()` gives the counts a person reads first.

# %%
plan = last_report.plan
print(plan.title)
print(plan.summary())

# %% [markdown]
# Every op has a decision with the engine, the dtype before and after, and the reasons.
# Under `allow_fp32_to_fp16`, the **cube** ops (MatMul, Conv2D) are computed in float16 on AI Core,
# while vector ops that support float32 (Relu, the softmax loss) keep float32.

# %%
for name in ["logits", "hidden", "loss"]:
    d = plan.ops[name]
    print(f"{name:8} {d.op_type:10} {d.engine:8} {d.dtype_before} -> {d.dtype_after}: {d.precision_reason}")

# %% [markdown]
# Which ops changed precision, and which (if any) did not run on AI Core:

# %%
changed = [n for n, d in plan.ops.items() if d.precision_changed]
print("changed precision:", changed)
print("not on AI Core:", {n: d.engine for n, d in plan.ops.items() if d.engine != "AI_CORE"})

# %% [markdown]
# ## 4. One cell, other options
#
# Flags on the `%%npu` line override the session config **for that cell only**. Here the same step
# runs with `--precision force_fp32`: every output stays float32 (only the cube ops, here the MatMul,
# still read float16 inputs, as the adapter's fusion engine decides for `force_fp32`). `--quiet` skips
# the rendered report; we print the counts instead.

# %%
%%npu --precision force_fp32 --quiet
with tf.compat.v1.Session() as sess:
    sess.run(init_op)
    sess.run(train_op, feed_dict={x: x_data, y: y_data})
    print(sess.last_report.plan.summary())

# %% [markdown]
# The session config itself did not change:

# %%
print(npu_jupyter.current_config().precision_mode)

# %% [markdown]
# You can also ask for the plan of any tensor of the default graph without running anything, with
# `%npu explain NAME`. This report has no timings, so it is the same on every run.

# %%
%npu explain loss

# %% [markdown]
# ## 5. Export the config as code
#
# When you are happy with the options, `%npu code` prints the `ConfigProto` code for a
# `tf.compat.v1.Session` training script (the `NpuOptimizer` custom optimizer, as the adapter's docs
# write it) ...

# %%
%npu code

# %% [markdown]
# ... and `%npu code --estimator` the same options as `NPURunConfig` keyword arguments for an
# Estimator script.

# %%
%npu code --estimator

# %% [markdown]
# ## What to try next
#
# * `%npu help` lists every subcommand and flag; `%npu help options` every option with its allowed values.
# * Change `precision_mode` (try `force_fp16` or `must_keep_origin_dtype`) and re-run the training cell:
#   watch the "changed precision" count. Notebook **03_precision_modes** compares every mode.
# * Set a wrong value on purpose (`%npu set precision_mode=fp16`) to see the error message.
# * `%config NpuMagics.detail = "full"` makes reports list every op, not only the interesting ones.
# * **02_mixed_computing**: what happens to ops the device cannot run.
# * **04_dump_and_profiling**: dump tensors, find float16 overflows, profile.
# * **05_widget_panel**: the same config as a panel of widgets.
