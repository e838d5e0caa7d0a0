"""Check the device cost model against published Ascend 910 training figures.

Run: ``.venv/bin/python bench/cost_model_check.py [--batch 256] [--modes ...]``

Builds the Keras ResNet-50 training step (224x224x3, 1000 classes: forward, loss, gradients, SGD with
momentum) as a ConcreteFunction, plans it for the Ascend910 under each precision mode and prints the
cost model's estimated NPU step time and memory (``npu_jupyter.cost``), each vs float32, next to:

* MindSpore's published ResNet-50 v1.5 training throughput on one Ascend 910, mixed precision:
  2115 images/s at batch 256 (MindSpore 0.5 benchmark page), 1787 images/s at batch 32 (0.2);
* the performance ranking the CANN ATC docs give for ``precision_mode_v2``:
  fp16 >= mixed_float16 > origin (force_fp16 >= allow_mix_precision > must_keep_origin_dtype).

Everything printed as "est." is an estimate of the model; nothing here runs on a device, and the CPU
time this script takes says nothing about the NPU. The ratio printed ("est. / published") is what to
read: how far the roofline's lower bound is from a measured throughput.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PUBLISHED = {256: 2115.0, 32: 1787.0}  # images/s, 1x Ascend 910, mixed precision (MindSpore benchmarks)
MODES = ("must_keep_origin_dtype", "allow_fp32_to_fp16", "allow_mix_precision", "force_fp16")


def resnet50_step(batch: int):
    """The Keras ResNet-50 training step at ImageNet size, traced (never run)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(
        weights=None, input_shape=(224, 224, 3), classes=1000, classifier_activation=None
    )
    optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    optimizer.build(model.trainable_variables)

    @tf.function(input_signature=(tf.TensorSpec([batch, 224, 224, 3], tf.float32), tf.TensorSpec([batch], tf.int32)))
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    train_step.model = model
    return train_step.get_concrete_function(), sum(int(v.numpy().size) * 4 for v in model.trainable_variables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    from npu_jupyter._plan.planner import plan
    from npu_jupyter.cost import estimate
    from npu_jupyter.cost.shapes import graph_facts

    started = time.perf_counter()
    fn, weight_bytes = resnet50_step(args.batch)
    facts = graph_facts(fn.graph)
    print(
        f"ResNet-50 train step, batch {args.batch}, {len(facts)} graph ops; trainable weights "
        f"{weight_bytes / 2**20:.0f} MiB in float32 (captured variables: not in the estimate's memory)"
    )
    print(f"{'mode':24} {'est. ms/step':>12} {'vs fp32':>8} {'est. img/s':>10} {'est. activations':>16} {'vs fp32':>8}")
    results = {}
    for mode in args.modes.split(","):
        cost = estimate(plan(fn, {"precision_mode": mode}), fn.graph, facts=facts)
        results[mode] = cost
        print(
            f"{mode:24} {cost.step_ms:12.2f} {cost.step_ratio_fp32:8.2f} {args.batch / cost.step_ms * 1e3:10.0f} "
            f"{cost.memory_bytes / 2**30:13.2f} GiB {cost.memory_ratio_fp32:8.2f}"
        )
    if "allow_mix_precision" in results:
        print("where allow_mix_precision's estimated time goes (unit, bound: ms):")
        shares: dict = {}
        for op in results["allow_mix_precision"].ops.values():
            key = (op.unit, op.bound)
            shares[key] = shares.get(key, 0.0) + op.est_us / 1e3
        for (unit, bound), ms in sorted(shares.items(), key=lambda kv: -kv[1])[:6]:
            print(f"  {unit:7} {bound or '-':8} {ms:9.2f}")
    published = PUBLISHED.get(args.batch)
    if published and "allow_mix_precision" in results:
        est = args.batch / results["allow_mix_precision"].step_ms * 1e3
        print(
            f"published (MindSpore, 1x Ascend 910, mixed, batch {args.batch}): {published:.0f} img/s; "
            f"est. / published = {est / published:.2f}"
        )
    order = [m for m in ("force_fp16", "allow_mix_precision", "must_keep_origin_dtype") if m in results]
    if len(order) == 3:
        fp16, mixed, origin = (results[m].step_ms for m in order)
        agrees = fp16 <= mixed < origin
        print(
            f"CANN ranking fp16 >= mixed_float16 > origin: {'agrees' if agrees else 'DISAGREES'} "
            f"(est. {fp16:.2f} <= {mixed:.2f} < {origin:.2f} ms)"
        )
    print(f"(this script's own CPU wall time: {time.perf_counter() - started:.0f} s, measured on this CPU)")


if __name__ == "__main__":
    main()
