"""Would the device's float16 tensors overflow? The float32 range of what the plan stores in half precision.

Run: ``.venv/bin/python bench/half_range.py [--models zoo_resnet50_dynamic,zoo_yolov3] [--steps 6]``

When an emulated corpus run goes inf/NaN, the question is whether the device would too, or whether the
emulation is at fault. This trains each model in a plain float32 ``tf.compat.v1.Session`` (this CPU) and
reads, every step, the largest absolute value of each tensor the planner decides the device stores in
float16 under the script's own NPU config. A value past 65504 (the float16 maximum) in float32 becomes
inf on the device as well, so an emulated overflow at that op is what the device would do, not an
emulation artefact. Printed per step: the loss, the largest such value and its op, and how many of those
tensors passed 65504. The values are measured on this CPU in float32; the float16 decisions are the
planner's predictions.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

FLOAT16_MAX = 65504.0


def half_tensors(model: Any, config: Any) -> list[Any]:
    """The float32 outputs the plan of the script's fetches stores in float16."""
    import npu_jupyter

    plan = npu_jupyter.plan(model.graph, config, fetches=model.train_fetches)
    out = []
    for name, decision in plan.ops.items():
        op = model.graph.get_operation_by_name(name)
        for slot, tensor in enumerate(op.outputs):
            decided = decision.output_dtypes[slot] if slot < len(decision.output_dtypes) else ""
            if decided == "float16" and tensor.dtype.base_dtype.name == "float32":
                out.append(tensor)
    return out


def check_model(name: str, steps: int) -> list[str]:
    """One line per float32 training step of one model."""
    import numpy as np
    import tensorflow as tf
    from corpus import runner

    with tempfile.TemporaryDirectory(prefix="half_range_") as tmp:
        model = runner.build(name, Path(tmp) / "files")
        tensors = half_tensors(model, runner.npu_config(model))
        if not tensors:
            return [f"{name}: the plan stores no float32 tensor in float16"]
        with model.graph.as_default():
            largest = [tf.reduce_max(tf.abs(t)) for t in tensors]
            loss = model.graph.get_tensor_by_name(model.loss)
        lines = []
        with tf.compat.v1.Session(graph=model.graph) as session:
            for op in model.init:
                session.run(op)
            for fetches, feed in model.extra.get("before_training", []):
                session.run(fetches, feed)
            for step in range(steps):
                feed = model.feed_fn(step) if model.feed_fn else None
                out = session.run({"train": model.train_fetches, "loss": loss, "max": largest}, feed_dict=feed)
                values = np.asarray(out["max"], dtype=np.float64)
                worst = int(np.nanargmax(values))
                over = int(np.sum(values > FLOAT16_MAX))
                lines.append(
                    f"{name} step {step}: float32 loss {out['loss']:.4g} | largest of {len(tensors)} float16-stored "
                    f"tensors {values[worst]:.4g} at {tensors[worst].op.name} | past 65504: {over}"
                )
        return lines


def main(argv: list[str]) -> int:
    """Check the chosen models (default: the three whose emulated runs go non-finite in the corpus)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="zoo_resnet50_dynamic,zoo_yolov3,zoo_inception_resnet_v2")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    print("float32 values measured on this CPU; float16 decisions predicted by the planner")
    for name in args.models.split(","):
        try:
            for line in check_model(name.strip(), args.steps):
                print(line, flush=True)
        except Exception as error:  # one model's failure must not hide the others
            print(f"{name}: {type(error).__name__}: {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
