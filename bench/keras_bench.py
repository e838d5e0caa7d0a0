"""Keras on the emulator: an emulated ``model.fit`` step against a plain one, as same-run ratios.

Run: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/keras_bench.py [--quick]``

Two Keras 3 models — a small CNN (two conv blocks, batch 32 at 32x32x3) and a small Transformer
encoder (2 blocks, width 64, 4 heads, sequence 32, batch 16) — train with ``fit`` three ways on the same
data: plain, under :class:`npu_jupyter._runtime.functions.emulator.FunctionEmulation` with a float32-preserving
mode (``must_keep_origin_dtype``: the function is planned but nothing is rewritten), and under
``allow_mix_precision`` (storage rounding). Each side is warmed (traced once), then timed over
interleaved blocks of epochs; medians per step are compared. Target: float32-preserving ≤ 1.3×.
All times are wall-clock times measured on this CPU (perf_counter), not NPU times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np


def cnn(keras):
    inputs = keras.layers.Input((32, 32, 3))
    h = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    outputs = keras.layers.Dense(10)(h)
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(256, 32, 32, 3)).astype("float32"), rng.integers(0, 10, 256))
    return keras.Model(inputs, outputs), data, 32


def transformer(keras):
    inputs = keras.layers.Input((32,), dtype="int32")
    h = keras.layers.Embedding(1000, 64)(inputs)
    for _ in range(2):
        attended = keras.layers.MultiHeadAttention(4, 16)(h, h)
        h = keras.layers.LayerNormalization()(h + attended)
        ff = keras.layers.Dense(128, activation="relu")(h)
        h = keras.layers.LayerNormalization()(h + keras.layers.Dense(64)(ff))
    outputs = keras.layers.Dense(10)(keras.layers.GlobalAveragePooling1D()(h))
    rng = np.random.default_rng(0)
    data = (rng.integers(0, 1000, (128, 32)).astype("int32"), rng.integers(0, 10, 128))
    return keras.Model(inputs, outputs), data, 16


def step_ms(build, config, blocks: int, epochs: int, reference: bool = False) -> list[float]:
    """Per-step CPU milliseconds of ``fit`` for ``blocks`` timed blocks (after one warm-up epoch).

    ``reference``: also measure drift (a float32 shadow of each function body).
    """
    import keras

    from npu_jupyter._runtime.functions.emulator import FunctionEmulation

    keras.utils.set_random_seed(0)
    model, (x, y), batch = build(keras)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    steps = len(x) // batch
    times = []
    context = FunctionEmulation(config, reference=reference) if config is not None else None
    if context is not None:
        context.__enter__()
    try:
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # warm-up: trace (and plan, rewrite)
        for _ in range(blocks):
            start = time.perf_counter()
            model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0)
            times.append((time.perf_counter() - start) * 1000.0 / (steps * epochs))
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer blocks (a smoke run)")
    args = parser.parse_args()
    blocks, epochs = (2, 1) if args.quick else (5, 2)
    print(
        f"load average before: {os.getloadavg()[0]:.2f} (wall-clock times of the emulation measured on this CPU, not NPU times)"
    )
    for label, build in (("CNN", cnn), ("Transformer", transformer)):
        plain, kept, mixed = [], [], []
        for _ in range(blocks):  # interleave the three sides so machine load hits them alike
            plain += step_ms(build, None, 1, epochs)
            kept += step_ms(build, {"precision_mode": "must_keep_origin_dtype"}, 1, epochs)
            mixed += step_ms(build, {"precision_mode": "allow_mix_precision"}, 1, epochs)
        base = statistics.median(plain)
        print(
            f"{label:12} plain {base:7.2f} ms/step | must_keep_origin_dtype "
            f"{statistics.median(kept) / base:5.2f}x | allow_mix_precision {statistics.median(mixed) / base:5.2f}x"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
