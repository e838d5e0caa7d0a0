"""Fetch-set bench: what a session pays for its first training step and for each *new* small fetch set.

Run: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/fetchset_bench.py [--rounds 3] [--precision allow_mix_precision]``

A TF1 script does more than train: it initialises variables, reads the global step or a variable for a
log line, and closes its input queues at the end. Each of those is a new fetch set, that is a new run
graph: TensorFlow builds a new executor for it, and the emulator plans it and decides whether a rewritten
variant is needed. This bench times, in one process, a plain ``tf.compat.v1.Session`` and an
``EmulatorSession`` on the same ResNet-50 graph (``runtime_bench.resnet50``: raw TF1 ops, batch 2 at
112x112; plus a global step, a learning-rate placeholder fed a Python float as scripts feed it, and a
queue), for:

* the first training step (init run before it, not timed), and the second one;
* the first run of each new small fetch set after training: the queue's close op, a variable read, the
  global step, the variables' initializer; then the same fetch set again ("again").

Each round makes fresh sessions of both kinds (a first run happens once per session), rounds alternate
which side goes first, and the medians over rounds are printed with the ratio emulator/plain, per CPU
time (``time.process_time``, all threads: the steadier figure on a shared machine) and wall time. Every
figure is measured on this CPU; none is an NPU time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime_bench import resnet50

#: (label, what it fetches) of the new small fetch sets, run after training in this order.
SMALL = ("queue close", "variable read", "global_step read", "init op")


def model(tf: Any) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """ResNet-50 with a global step, a fed learning rate and a queue: (graph, fetch sets, feeds)."""
    v1 = tf.compat.v1
    g, _, feeds, _ = resnet50(tf)
    with g.as_default():
        loss = g.get_tensor_by_name("loss:0")
        step = v1.train.get_or_create_global_step()
        rate = v1.placeholder(tf.float32, [], name="learning_rate")
        train = v1.train.GradientDescentOptimizer(rate).minimize(loss, global_step=step, name="train_fed")
        queue = v1.FIFOQueue(8, [tf.int32], shapes=[[2]], name="labels_queue")
        close = queue.close(cancel_pending_enqueues=True)
        init = v1.global_variables_initializer()
        weights = g.get_tensor_by_name("fc:0")
    sets = {
        "train": [loss, train],
        "queue close": close,
        "variable read": weights,
        "global_step read": step,
        "init op": init,
    }
    return g, sets, {**feeds, "learning_rate:0": 0.01}  # a Python float, as scripts feed a learning rate


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def one_session(make: Callable[[], Any], sets: dict[str, Any], feeds: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Times of one fresh session: first and second training step, then each small fetch set twice."""
    sess = make()
    try:
        sess.run(sets["init op"])
        out = {"first step": timed(lambda: sess.run(sets["train"], feeds))}
        out["second step"] = timed(lambda: sess.run(sets["train"], feeds))
        for label in SMALL:
            out[label] = timed(lambda: sess.run(sets[label]))
            out[f"{label} again"] = timed(lambda: sess.run(sets[label]))
        return out
    finally:
        sess.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh session pairs (medians over them)")
    parser.add_argument("--precision", default="allow_mix_precision", help="precision_mode of the emulator")
    args = parser.parse_args()
    import tensorflow as tf

    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g, sets, feeds = model(tf)
    cfg = NpuConfig(precision_mode=args.precision)
    sides = {
        "plain": lambda: tf.compat.v1.Session(graph=g, config=cfg.to_config_proto()),
        "emulator": lambda: EmulatorSession(cfg, g),
    }
    times: dict[str, list[dict[str, tuple[float, float]]]] = {side: [] for side in sides}
    for k in range(args.rounds):
        order = list(sides) if k % 2 == 0 else list(reversed(sides))
        for side in order:
            times[side].append(one_session(sides[side], sets, feeds))
    print(
        f"ResNet-50 ({len(g.get_operations())} ops), {args.precision}, {args.rounds} rounds, "
        f"load average {os.getloadavg()[0]:.2f}; medians per run, measured on this CPU"
    )
    print(
        f"{'run':24} {'plain CPU s':>11} {'emu CPU s':>10} {'CPU ratio':>9}   {'plain wall s':>12} {'emu wall s':>10} {'wall ratio':>10}"
    )
    for row in times["plain"][0]:
        plain = [statistics.median(t[row][i] for t in times["plain"]) for i in (0, 1)]
        emu = [statistics.median(t[row][i] for t in times["emulator"]) for i in (0, 1)]
        print(
            f"{row:24} {plain[0]:11.3f} {emu[0]:10.3f} {emu[0] / plain[0]:8.2f}x   "
            f"{plain[1]:12.3f} {emu[1]:10.3f} {emu[1] / plain[1]:9.2f}x"
        )


if __name__ == "__main__":
    main()
