# %% [markdown]
# # 03 · Precision modes: what each one does to a small CNN
#
# Ascend AI Cores are built for float16: the **cube** units that run Conv2D and MatMul take float16 on
# the Ascend 910. The session option `precision_mode` decides what happens to a float32 model:
#
# | mode | what it does |
# |---|---|
# | `allow_fp32_to_fp16` | training default on Ascend 910: cube ops go to float16, other ops keep float32 where the AI Core supports it |
# | `force_fp16` | every op that supports float16 runs in float16 |
# | `force_fp32` / `cube_fp16in_fp32out` | keep float32 where supported; cube ops read float16, write float32 |
# | `must_keep_origin_dtype` | never change a dtype; an op the AI Core cannot run in float32 goes to AI CPU |
# | `allow_mix_precision` (`_fp16`, `_bf16`) | automatic mixed precision with white / black / gray op lists |
# | `allow_fp32_to_bf16` | like allow_fp32_to_fp16, with bfloat16 |
#
# This notebook runs one small CNN under each of them on the emulator and measures what the decided
# precisions do to the numbers (**drift** against a float32 reference), then shows the two ways to pin
# parts of a model back to float32: `keep_dtype_scope` and a `modify_mixlist` file.

# %%
# NBVAL_IGNORE_OUTPUT
%load_ext npu_jupyter
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

import npu_jupyter
from npu_jupyter import scope

tf.compat.v1.disable_eager_execution()

# %% [markdown]
# ## 1. The model
#
# A CNN small enough to run in a fraction of a second, written with `tf.nn` ops so that every op type
# is visible: Conv2D → FusedBatchNormV3 → Relu → MaxPool → MatMul → Softmax. The weights and the input
# are fixed NumPy arrays, so every run sees the same numbers. The input is scaled up a little so float16
# rounding shows.
#
# `keep_fp32_head=True` builds the classifier head inside `keep_dtype_scope` (section 4).

# %%
rng = np.random.default_rng(0)
IMAGES = (rng.normal(size=(8, 16, 16, 3)) * 4.0).astype(np.float32)
KERNEL = (rng.normal(size=(3, 3, 3, 16)) * 0.5).astype(np.float32)
DENSE = (rng.normal(size=(8 * 8 * 16, 10)) * 0.05).astype(np.float32)


def build_cnn(keep_fp32_head: bool = False):
    """images -> conv -> batch norm -> relu -> max pool -> dense -> softmax; returns the probabilities."""
    import contextlib

    images = tf.constant(IMAGES, name="images")
    kernel = tf.constant(KERNEL, name="kernel")
    conv = tf.nn.conv2d(images, kernel, strides=1, padding="SAME", name="conv")
    scale = tf.ones([16], name="bn_scale")
    offset = tf.zeros([16], name="bn_offset")
    bn, _, _ = tf.compat.v1.nn.fused_batch_norm(conv, scale, offset, is_training=True, name="bn")
    relu = tf.nn.relu(bn, name="relu")
    pool = tf.nn.max_pool2d(relu, ksize=2, strides=2, padding="VALID", name="pool")
    flat = tf.reshape(pool, [8, -1], name="flat")
    head = scope.keep_dtype_scope() if keep_fp32_head else contextlib.nullcontext()
    with head:
        logits = tf.matmul(flat, tf.constant(DENSE, name="dense_w"), name="logits")
        probs = tf.nn.softmax(logits, name="probs")
    return probs


graph = tf.Graph()
with graph.as_default():
    probs = build_cnn()
print([op.type for op in graph.get_operations() if op.type not in ("Const", "Reshape")])

# %% [markdown]
# ## 2. One mode: decisions and drift
#
# Plan the graph under the Ascend 910 training default, `allow_fp32_to_fp16`. Only the cube ops change:
# Conv2D and MatMul compute in float16. MaxPool also shows float16: on the Ascend 910 its AI Core kernel
# has no float32 version.

# %%
def precisions(p, names=("conv", "bn", "relu", "pool", "logits", "probs")):
    """One line per op: engine, dtype before -> after, and why."""
    for name in names:
        d = p.ops[name]
        print(f"  {name:7} {d.op_type:16} {d.engine:8} {d.dtype_before} -> {d.dtype_after:8} {d.precision_reason}")


p = npu_jupyter.plan(graph, {"precision_mode": "allow_fp32_to_fp16"}, fetches=["probs"])
print(p.summary())
precisions(p)

# %% [markdown]
# Now run it. `%%npu --precision MODE` sets the mode for one cell; `reference=True` on the session
# runs a float32 reference of the same step alongside and records, for every op, how far the emulated
# result drifted from it (`report.drift`: max absolute error, max relative error, cosine similarity).
# The rendered report then has a drift column: sort it to find the op that loses the most.

# %%
%%npu --precision allow_fp32_to_fp16
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session(graph=graph) as sess:
    sess.run(probs, reference=True)
    report = sess.last_report

# %% [markdown]
# The drift of the model's output (`probs`) and of each op. Cosine similarity close to 1 means the
# result as a whole is preserved; the maximum absolute error is the largest single difference. The
# maximum relative error is dominated by elements close to zero (after the conv and the relu, a value of
# 1e-4 that becomes 0 is a 100 % error), so read it together with the other two.

# %%
# NBVAL_IGNORE_OUTPUT
def show_drift(report, names=("conv", "bn", "relu", "pool", "logits", "probs")):
    for name in names:
        d = report.drift[name]
        print(f"  {name:7} max_abs={d['max_abs']:.1e}  max_rel={d['max_rel']:.1e}  cosine={d['cos']:.6f}")


show_drift(report)

# %% [markdown]
# The numbers differ slightly between machines, so the notebook test checks the facts behind them
# instead: under `allow_fp32_to_fp16` the output is close to float32 but not identical.

# %%
out = report.drift["probs"]
print("output drift > 0:", out["max_abs"] > 0, "| cosine > 0.99:", out["cos"] > 0.99)

# %% [markdown]
# ## 3. Every mode, side by side
#
# First the decisions: for each precision mode, which dtype each op of the CNN gets (planning only, no
# run). Read a row to see a mode, a column to see an op.

# %%
MODES = ["force_fp32", "cube_fp16in_fp32out", "must_keep_origin_dtype", "allow_fp32_to_fp16",
         "allow_fp32_to_bf16", "allow_mix_precision", "allow_mix_precision_fp16",
         "allow_mix_precision_bf16", "force_fp16"]
OPS = ["conv", "bn", "relu", "pool", "logits", "probs"]

plans = {mode: npu_jupyter.plan(graph, {"precision_mode": mode}, fetches=["probs"]) for mode in MODES}
print(f"{'mode':26}" + "".join(f"{op:>9}" for op in OPS) + "  changed  AI CPU  errors")
for mode, p in plans.items():
    cells = "".join(f"{p.ops[op].dtype_after:>9}" for op in OPS)
    s = p.summary()
    print(f"{mode:26}{cells}  {s['precision_changed']:7}  {s['ai_cpu']:6}  {len(p.errors):6}")

# %% [markdown]
# Things to notice:
#
# * `force_fp32` and `cube_fp16in_fp32out` keep float32 outputs (the cube ops read float16 inputs and
#   write float32), except where the AI Core has only a float16 kernel: MaxPool.
# * `must_keep_origin_dtype` changes nothing, so ops the AI Core cannot run in float32 (MaxPool and
#   MatMul here) move to **AI CPU** (the "AI CPU" column), and Conv2D, which has no float32 kernel at all
#   on the Ascend 910, makes the graph fail to compile (the "errors" column; the messages are below).
# * the two bfloat16 modes are errors on the Ascend 910, which has no bfloat16: they need the 910B.
# * the mixed modes follow the white list (Conv2D, MatMul → float16), the black list (kept float32)
#   and the gray list (follow their inputs).
# * `force_fp16` lowers everything that supports float16.
#
# The plans with errors, and what they say:

# %%
for mode, p in plans.items():
    for error in p.errors:
        print(f"{mode}: {error}")

# %% [markdown]
# Then the sweep: `npu_jupyter.sweep` runs the step under each mode, each with a float32 reference, and
# tabulates first the **cost model's estimate** of the NPU step time and memory, each vs float32
# (a roofline over the Ascend 910's published peak rates: an estimate, not a measurement, see
# `docs/cost-model.md`), then the number of ops that changed precision, the output drift and the op
# that drifted most, and last the **wall-clock time of the emulation on this CPU** (each mode warmed up, median of 3 steps).
# That CPU time includes the emulator's rounding casts and says nothing about NPU speed. (Times vary
# between runs, so this table is not compared by the notebook test.)

# %%
# NBVAL_IGNORE_OUTPUT
table = npu_jupyter.sweep(build_cnn, modes=MODES)
table

# %% [markdown]
# The emulator computes every mode, also those whose plan has errors, so you can see their drift; on a
# real device those graphs would not compile, so their time and memory columns read "refused" instead
# of a number. `row.refused` is what the table marks "refused" (the reasons are in `row.plan_errors`);
# `row.error` would say the emulator could not run a mode at all. The decisions in the table are
# deterministic; the drift is only compared coarsely:

# %%
for row in table.rows:
    print(f"{row.mode:26} ops changed={row.ops_changed:2}  refused={row.refused!s:5}  "
          f"drift: {'none' if row.max_abs == 0 else 'small' if row.cosine > 0.99 else 'LARGE'}")

# %% [markdown]
# `table.to_records()` gives plain dicts, for pandas or a CSV file.
#
# ## 4. `keep_dtype_scope`: keep part of the model in its original dtype
#
# Under the mixed modes, real Ascend scripts wrap numerically sensitive code (box geometry, loss
# pieces, an initializer) in `npu_scope.keep_dtype_scope()`. Ops created inside keep their original
# dtype where the device supports it. `npu_jupyter.scope.keep_dtype_scope()` sets the same node
# attribute (`_keep_dtype`). Here the classifier head (`logits`, `probs`) is built inside it.
#
# Look at the reasons: the Softmax now keeps float32, but the MatMul stays float16 even inside the scope,
# because its AI Core kernel on the Ascend 910 has no float32 version. The scope keeps the original dtype
# only where the device supports it.

# %%
kept_graph = tf.Graph()
with kept_graph.as_default():
    build_cnn(keep_fp32_head=True)
print("logits has _keep_dtype:", kept_graph.get_operation_by_name("logits").get_attr("_keep_dtype"))

for label, g in [("without scope", graph), ("keep_dtype_scope", kept_graph)]:
    p = npu_jupyter.plan(g, {"precision_mode": "allow_mix_precision"}, fetches=["probs"])
    print(label)
    precisions(p, names=("conv", "logits", "probs"))

# %% [markdown]
# ## 5. `modify_mixlist`: change the mixed-precision lists
#
# The mixed modes decide per op type from three lists: **white** (always float16), **black** (always
# float32) and **gray** (follow the inputs). A `modify_mixlist` JSON file moves op types between them. Op
# types are Ascend IR names (TensorFlow's `MatMul` is `MatMulV2`, `Softmax` is `SoftmaxV2`; npu_jupyter
# accepts both spellings). The option requires an explicit mixed `precision_mode`.
#
# Put `SoftmaxV2` on the black list so the output layer runs in float32, and take `MatMulV2` off the
# white list (it becomes gray: it follows its input):

# %%
work = tempfile.mkdtemp(prefix="npu_mixlist_")
mixlist = os.path.join(work, "mixlist.json")
with open(mixlist, "w") as f:
    json.dump({"black-list": {"to-add": ["SoftmaxV2"]}, "white-list": {"to-remove": ["MatMulV2"]}}, f)

for label, options in [
    ("allow_mix_precision", {"precision_mode": "allow_mix_precision"}),
    ("+ modify_mixlist", {"precision_mode": "allow_mix_precision", "modify_mixlist": mixlist}),
]:
    p = npu_jupyter.plan(graph, options, fetches=["probs"])
    print(label, "| warnings:", p.warnings, "| errors:", p.errors)
    precisions(p, names=("conv", "logits", "probs"))

# %% [markdown]
# The same through the magics: set the options for the session and run with a reference. The report's
# precision column shows `SoftmaxV2` kept in float32.

# %%
%npu set precision_mode=allow_mix_precision modify_mixlist=$mixlist

# %%
%%npu
# NBVAL_IGNORE_OUTPUT
with tf.compat.v1.Session(graph=graph) as sess:
    sess.run(probs, reference=True)
    mixlist_report = sess.last_report

# %%
print("probs:", mixlist_report.plan.ops["probs"].dtype_after, "| logits:", mixlist_report.plan.ops["logits"].dtype_after)
print("cosine > 0.99:", mixlist_report.drift["probs"]["cos"] > 0.99)

# %% [markdown]
# A mixlist file with a mistake is reported the way GE reports it (here an unknown top-level key):

# %%
broken = os.path.join(work, "broken.json")
with open(broken, "w") as f:
    json.dump({"grey-list": {"to-add": ["Relu"]}}, f)
p = npu_jupyter.plan(graph, {"precision_mode": "allow_mix_precision", "modify_mixlist": broken}, fetches=["probs"])
print(p.errors)

# %% [markdown]
# Clean up the session config and the temporary files:

# %%
%npu reset
import shutil

shutil.rmtree(work)

# %% [markdown]
# ## What to try next
#
# * Multiply `IMAGES` by 1000 and re-run the sweep: `force_fp16` overflows float16 (max 65504). Notebook
#   **04_dump_and_profiling** shows how to find the first op that overflows.
# * Plan for the Ascend 910B (`%npu set soc_config=Ascend910B` or `npu_jupyter.plan(..., soc="Ascend910B")`),
#   whose training default is `must_keep_origin_dtype`.
# * Try the `precision_mode_v2` values (`%%npu --precision mixed_float16`).
# * Put the batch norm inside `keep_dtype_scope` instead of the head and compare the drift.
# * `%config NpuMagics.detail = "full"` to see every op in the reports.
