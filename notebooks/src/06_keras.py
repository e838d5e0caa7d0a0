# %% [markdown]
# # 06 · Keras and `tf.function` code under `%%npu`
#
# Most TensorFlow code written today is TensorFlow 2: Keras `model.fit` and `tf.function` training
# loops. On an Ascend server such code reaches the NPU through the TF2 adapter, `npu_device`
# (TensorFlow 2.6.5). This notebook shows what npu_jupyter does with it:
#
# 1. `%%npu --precision MODE` around `model.fit(...)` plans every traced function the cell runs (the
#    Keras train step) and trains it in the decided precisions on the CPU emulator,
# 2. the report per function: which ops the plan lowers to float16, how many calls, CPU time,
# 3. a float32-keeping mode matches a plain run exactly; a custom `GradientTape` loop works the same way,
# 4. the same options as `npu_device` code for your training script.
#
# What is emulated and what is not is listed at the end.

# %%
%load_ext npu_jupyter

# %%
# NBVAL_IGNORE_OUTPUT
import keras
import numpy as np
import tensorflow as tf

# %% [markdown]
# ## 1. A small Keras CNN and its float32 baseline
#
# `train()` builds the same model from the same seed every time, so runs differ only by precision.

# %%
rng = np.random.default_rng(0)
images = rng.normal(size=(64, 8, 8, 3)).astype("float32")
labels = rng.integers(0, 10, 64)


def train(epochs=3):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.layers.Input((8, 8, 3)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model.fit(images, labels, epochs=epochs, batch_size=16, verbose=0).history["loss"]


float32_losses = train()
print("float32 losses:", [round(x, 4) for x in float32_losses])

# %% [markdown]
# ## 2. The same training under `allow_mix_precision`
#
# `%%npu` plans the traced train function as the adapter would (here: convolution and matmul on
# AI Core in float16, the loss in float32) and runs it with every tensor the plan lowers rounded
# through float16. The report below the cell is one per function, with its call count; its times are
# wall-clock time of the emulation on this CPU, not NPU time. (The report's numbers change from run to run, so the
# checks below compare the losses instead.)

# %%
%%npu --precision allow_mix_precision
# NBVAL_IGNORE_OUTPUT
mixed_losses = train()

# %% [markdown]
# The losses differ from float32 by float16-sized amounts — the effect the precision mode has:

# %%
print("allow_mix_precision losses differ:", mixed_losses != float32_losses)
print("largest relative difference below 1%:",
      max(abs(a - b) / abs(b) for a, b in zip(mixed_losses, float32_losses)) < 0.01)

# %% [markdown]
# ## 3. A mode that keeps float32 matches the plain run exactly
#
# `must_keep_origin_dtype` never lowers precision: nothing is rewritten, and the losses are the float32
# ones bit for bit.

# %%
%%npu --precision must_keep_origin_dtype --quiet
kept_losses = train()

# %%
print("must_keep_origin_dtype equals float32:", kept_losses == float32_losses)

# %% [markdown]
# ## 4. A custom `GradientTape` loop
#
# Any `tf.function` works the same way: here a two-layer regression trained by hand.

# %%
x = tf.constant(rng.normal(size=(32, 16)).astype("float32"))
y = tf.constant(rng.normal(size=(32, 1)).astype("float32"))


def tape_losses(steps=4):
    init = np.random.default_rng(2)
    w1 = tf.Variable(init.normal(size=(16, 32)).astype("float32") * 0.3)
    w2 = tf.Variable(init.normal(size=(32, 1)).astype("float32") * 0.3)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.05 * g1)
        w2.assign_sub(0.05 * g2)
        return loss

    return [float(train_step()) for _ in range(steps)]


plain_tape = tape_losses()

# %%
%%npu --precision force_fp16
# NBVAL_IGNORE_OUTPUT
fp16_tape = tape_losses()

# %%
print("force_fp16 changed the loss trajectory:", fp16_tape != plain_tape)

# %% [markdown]
# ## 5. Profiling the train function
#
# `--profile DIR` traces every call of every function the cell runs with TensorFlow's profiler: the
# report gets per-op times, and each call leaves a Chrome trace (open it in Perfetto) and an Ascend-style
# op summary in `DIR/<function>/`. These are CPU times of the emulation on this machine, labelled so,
# never NPU times. The report is titled by the Keras entry point that ran the function, and its plan,
# counts and times cover the functions it calls (Keras 3's `one_step_on_data`, named `<function>/<op>`).

# %%
import tempfile
from pathlib import Path

import npu_jupyter

profile_dir = Path(tempfile.mkdtemp(prefix="npu_keras_profile_"))

# %%
%%npu --precision allow_mix_precision --profile $profile_dir --quiet
profiled_losses = train(epochs=1)

# %%
(report,) = npu_jupyter.last_reports()  # the last %%npu cell's reports: one per traced function
folder = Path(report.trace_file).parent
print(report.steps, "profiled calls; files per call:", sorted(p.name for p in folder.iterdir())[:2])
timed_types = {report.plan.ops[name].op_type for name in report.op_times_us if name in report.plan.ops}
print("the convolution and its gradients have CPU times:",
      {"Conv2D", "Conv2DBackpropFilter"} <= timed_types)

# %% [markdown]
# ## 6. The options as `npu_device` code
#
# On an Ascend server with TensorFlow 2.6.5, the TF2 adapter takes the options on
# `npu_device.global_options()`. `to_code(api="tf2")` writes that code; options only the TF1 adapter
# reads (mixed computing, `iterations_per_loop`, ...) are listed in a comment instead.

# %%
config = npu_jupyter.NpuConfig(precision_mode="allow_mix_precision", enable_dump=True, dump_path="/tmp",
                               dump_step="0|2", mix_compile_mode=True)
print(config.to_code(api="tf2"))

# %% [markdown]
# ## What is emulated, and what is not
#
# - **Placement** of TF2 code is predicted with the TF2 adapter's own rule (`npu_device`'s
#   NodePlacer): a function whose ops are all supported compiles whole on the NPU; otherwise the
#   unsupported ops, and ops joined to them by string/resource/variant tensors, run on the CPU. Every
#   reason starts with `npu_device:`; the report's note lists what is approximated (the bundled op
#   list, variables taken to be created on the NPU, each function planned on its own).
# - **Precision** is emulated by storage rounding inside the traced function (`Cast` to float16 and
#   back where the plan lowers a tensor); the function is swapped for the cell only.
# - **Dump and overflow inside functions**: observer nodes hand the stored (rounded) tensors to the
#   emulator during each call, so `enable_dump` writes each call `dump_step` selects (step = call
#   index, read with `npu_jupyter.load_dump`), and a call whose values go inf/NaN names the first op
#   that did, with its decided dtype.
# - **Drift inside functions** (`%%npu --reference`): a rerun would read the next batch and update the
#   weights twice, so each function body instead gets a float32 *shadow* of its ops, computed in the
#   same call from the same weights and batch; each op's stored value is compared with its shadow.
#   Calls into other functions, variable reads and the iterator are where the shadow starts again, so
#   drift does not accumulate across function boundaries.
# - **Profiling inside functions** (`--profile`): TensorFlow's profiler traces each call; times are CPU
#   times of the emulation, never NPU times.
# - Needs TensorFlow ≥ 2.14 (the emulator's function path); on older TensorFlow the cell says its
#   flags had no effect on TF2 code.
#
# ## What to try next
#
# - `%%npu --precision force_fp16` around your own `model.fit` and compare the loss curves.
# - `%%npu --precision allow_mix_precision --reference` adds each op's drift against float32 to the
#   train function's report (it costs several times the step's CPU time).
# - `npu_jupyter.plan(fn.get_concrete_function(...), config, adapter="tf2")` shows the plan of one
#   function as `npu_device` would place it.
# - Notebook 03 compares all precision modes on a TF1 graph, with drift per op.
