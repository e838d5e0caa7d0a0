"""Runtime benchmarks: emulator overhead, dump throughput and profiling overhead, as same-run ratios.

Run: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/runtime_bench.py [--quick]``

1. Emulator vs a plain ``tf.compat.v1.Session`` on the same graph and feeds, for a 6-layer 256-wide MLP
   training step (batch 64) and a ResNet-50 training step (raw TF1 ops, batch 2 at 112x112):
   float32-preserving (``must_keep_origin_dtype``) and ``allow_mix_precision``. ``--resnet-batch N``
   runs ResNet-50 at another batch: at 2, about half of the values the emulation rounds and checks are
   weights and weight gradients; at 16, mostly activations.
   Targets: float32-preserving ≤ 1.10× (goal 1.05×); ``allow_mix_precision`` ≤ 1.3× (issue #23).
2. Dump throughput: the emulator's dump writer (atomic step folder, fsync, manifest) against raw
   ``np.save`` of the same tensors into a folder. Target ≥ 0.8× raw.
3. Profiling: an emulated step with ``profiling_mode`` (FULL_TRACE + Chrome trace + op_summary CSV)
   against a plain session running with FULL_TRACE alone.
4. Breakdown (``--only breakdown``): what the ``allow_mix_precision`` overhead is made of (the
   storage-rounding Casts, the finite flags, the emulator's own Python), each a paired CPU-time ratio.

Timings interleave the two sides in short blocks and report medians, because the machine is shared.
The overhead rows also give the median of paired per-block CPU-time ratios, the steadier figure on a
loaded machine (with ``--single-thread`` TensorFlow runs one thread, so no spinning thread pool counts).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np


def mlp(tf, layers: int = 6, width: int = 256, batch: int = 64):
    """A TF1 MLP training step; returns (graph, fetches, feeds, init)."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [batch, width], name="x")
        y = v1.placeholder(tf.float32, [batch, 10], name="y")
        h = x
        init = v1.glorot_uniform_initializer(seed=3)
        for i in range(layers):
            w = v1.get_variable(f"w{i}", [width, width], initializer=init)
            b = v1.get_variable(f"b{i}", [width], initializer=v1.zeros_initializer())
            h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w), b))
        wo = v1.get_variable("wo", [width, 10], initializer=init)
        logits = tf.matmul(h, wo)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
        init_op = v1.global_variables_initializer()
    rng = np.random.default_rng(0)
    feeds = {
        "x:0": rng.standard_normal((batch, width), dtype=np.float32),
        "y:0": np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)],
    }
    return g, [loss.name, train.name], feeds, init_op.name


def resnet50(tf, batch: int = 2, size: int = 112):
    """ResNet-50 (bottleneck v1, fused batch norm) training step in raw TF1 ops."""
    v1 = tf.compat.v1
    g = tf.Graph()
    init = v1.glorot_uniform_initializer(seed=5)
    counter = [0]

    def conv(x, out, k, stride):
        counter[0] += 1
        w = v1.get_variable(f"conv{counter[0]}", [k, k, int(x.shape[-1]), out], initializer=init)
        return tf.nn.conv2d(x, w, strides=stride, padding="SAME")

    def bn(x, relu=True):
        c = int(x.shape[-1])
        counter[0] += 1
        gamma = v1.get_variable(f"bn{counter[0]}/gamma", [c], initializer=v1.ones_initializer())
        beta = v1.get_variable(f"bn{counter[0]}/beta", [c], initializer=v1.zeros_initializer())
        y, _, _ = v1.nn.fused_batch_norm(x, gamma, beta, is_training=True)
        return tf.nn.relu(y) if relu else y

    def block(x, mid, out, stride):
        shortcut = x
        if stride != 1 or int(x.shape[-1]) != out:
            shortcut = bn(conv(x, out, 1, stride), relu=False)
        h = bn(conv(x, mid, 1, 1))
        h = bn(conv(h, mid, 3, stride))
        h = bn(conv(h, out, 1, 1), relu=False)
        return tf.nn.relu(h + shortcut)

    with g.as_default():
        x = v1.placeholder(tf.float32, [batch, size, size, 3], name="images")
        y = v1.placeholder(tf.int32, [batch], name="labels")
        h = bn(conv(x, 64, 7, 2))
        h = tf.nn.max_pool2d(h, 3, 2, "SAME")
        for stage, (mid, out, count) in enumerate([(64, 256, 3), (128, 512, 4), (256, 1024, 6), (512, 2048, 3)]):
            for i in range(count):
                h = block(h, mid, out, 2 if (i == 0 and stage > 0) else 1)
        h = tf.reduce_mean(h, axis=[1, 2])
        wo = v1.get_variable("fc", [2048, 1000], initializer=init)
        logits = tf.matmul(h, wo)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        train = v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss, name="train")
        init_op = v1.global_variables_initializer()
    rng = np.random.default_rng(0)
    feeds = {
        "images:0": rng.standard_normal((batch, size, size, 3), dtype=np.float32),
        "labels:0": rng.integers(0, 1000, batch).astype(np.int32),
    }
    return g, [loss.name, train.name], feeds, init_op.name


def interleaved(a, b, blocks: int, per_block: int) -> tuple[float, float]:
    """Median seconds per call of ``a`` and ``b``, alternating blocks of calls to share the noise."""
    ta, tb = [], []
    for _ in range(blocks):
        for fn, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            for _ in range(per_block):
                fn()
            out.append((time.perf_counter() - start) / per_block)
    return statistics.median(ta), statistics.median(tb)


def paired_cpu_ratio(a, b, blocks: int, per_block: int) -> float:
    """Median over blocks of CPU(b) / CPU(a), each block timing ``a`` then ``b`` back to back.

    CPU time (``time.process_time``, all threads) of adjacent blocks shares the machine's state, so on a
    loaded machine this ratio stays steady where wall-clock medians do not; with ``--single-thread``
    (one TensorFlow thread) no thread pool spins inflate it.
    """
    ratios = []
    for _ in range(blocks):
        cpu = []
        for fn in (a, b):
            start = time.process_time()
            for _ in range(per_block):
                fn()
            cpu.append(time.process_time() - start)
        ratios.append(cpu[1] / cpu[0])
    return statistics.median(ratios)


def bench_overhead(tf, name, build, modes, blocks, per_block) -> None:
    """Emulator vs plain sessions on the same graph and feeds.

    Two baselines: a plain session with the *same* ConfigProto the emulator hands its inner session
    (``config.to_config_proto()``: remapping and memory optimization OFF, as the adapter requires) —
    the emulator's own overhead — and a plain session with TensorFlow's default config, which shows
    what the adapter's required grappler settings cost on a CPU.
    """
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g, fetches, feeds, init = build(tf)
    default = tf.compat.v1.Session(graph=g)
    default.run(init)
    for mode in modes:
        cfg = NpuConfig(precision_mode=mode)
        same = tf.compat.v1.Session(graph=g, config=cfg.to_config_proto())
        same.run(init)
        emu = EmulatorSession(cfg, g)
        emu.run(init)
        for sess in (emu, same, default):  # warm up: build the private graph, run grappler, outside timing
            sess.run(fetches, feeds)
        t_same, t_emu = interleaved(
            lambda: same.run(fetches, feeds), lambda: emu.run(fetches, feeds), blocks, per_block
        )
        t_default, t_emu2 = interleaved(
            lambda: default.run(fetches, feeds), lambda: emu.run(fetches, feeds), max(3, blocks // 2), per_block
        )
        cpu_ratio = paired_cpu_ratio(
            lambda: same.run(fetches, feeds), lambda: emu.run(fetches, feeds), blocks * 4, per_block
        )
        summary = emu.last_report.plan.summary()
        casts = sum(len(run.roundings) for run in emu._exec.runs.values())  # per run graph
        print(
            f"{name:9} {mode:23} same-config plain {t_same * 1e3:8.3f} ms  emulator {t_emu * 1e3:8.3f} ms  "
            f"ratio {t_emu / t_same:5.3f}x (paired CPU {cpu_ratio:5.3f}x) | vs TF-default config {t_emu2 / t_default:5.3f}x  "
            f"(ops {summary['ops']}, precision changed {summary['precision_changed']}, rounded tensors {casts})"
        )
        emu.close()
        same.close()
    default.close()


def bench_breakdown(tf, name, build, blocks, per_block) -> None:
    """What the emulator's ``allow_mix_precision`` overhead is made of, as paired CPU-time ratios to a plain run.

    The same step four ways, each a compiled callable (no ``Session.run`` Python in any of them) except the
    plain baseline and the emulator themselves: the user's graph; the emulated run graph without its
    finite flags (storage-rounding Casts only); with them; and the emulator's whole ``run``.
    """
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession
    from npu_jupyter._runtime.session.fast_run import FastRuns

    g, fetches, feeds, init = build(tf)
    cfg = NpuConfig(precision_mode="allow_mix_precision")
    plain = tf.compat.v1.Session(graph=g, config=cfg.to_config_proto())
    plain.run(init)
    emu = EmulatorSession(cfg, g)
    emu.run(init)
    emu.run(fetches, feeds)
    ex = emu._exec
    run = next(r for r in ex.runs.values() if r.flags is not None)
    steps = [run.tensor_name(fetches[0]), run.op_name(fetches[1])]
    private_feeds = {run.feed_name(k): v for k, v in feeds.items()}
    plain_fast = FastRuns(plain, g)
    sides = {
        "user graph, callable": lambda: plain_fast.run([fetches, []], feeds),
        "+ Casts (no flags)": lambda: ex.fast.run([steps, []], private_feeds),
        "+ Casts + flags": lambda: ex.fast.run([steps, [run.flags[0]]], private_feeds),
        "emulator run()": lambda: emu.run(fetches, feeds),
    }
    base = lambda: plain.run(fetches, feeds)  # noqa: E731
    parts = ", ".join(f"{k} {paired_cpu_ratio(base, f, blocks, per_block):5.3f}x" for k, f in sides.items())
    computed = len(set(run.flag_take)) if run.flag_take is not None else len(run.flags[1])
    print(
        f"{name:9} breakdown vs plain Session.run (paired CPU): {parts}  "
        f"({len(run.flags[1])} flags, {computed} computed: the others share an input's flag)"
    )
    emu.close()
    plain.close()


def bench_fixed_cost(tf, blocks: int) -> None:
    """Per-run fixed cost on a one-op graph: what the emulator adds to every ``run`` in absolute terms."""
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
        y = tf.add(x, 1.0, name="y")
    cfg = NpuConfig(precision_mode="must_keep_origin_dtype")
    plain = tf.compat.v1.Session(graph=g, config=cfg.to_config_proto())
    emu = EmulatorSession(cfg, g)
    feeds = {x: np.ones(4, np.float32)}
    emu.run(y, feeds)
    plain.run(y, feeds)
    t_plain, t_emu = interleaved(lambda: plain.run(y, feeds), lambda: emu.run(y, feeds), blocks, 200)
    print(
        f"fixed cost one-op graph: plain {t_plain * 1e6:7.1f} us  emulator {t_emu * 1e6:7.1f} us  "
        f"(+{(t_emu - t_plain) * 1e6:.1f} us per run)"
    )
    emu.close()
    plain.close()


def bench_dump(tf, blocks: int) -> None:
    """Dump writer vs raw np.save of the same MLP tensors."""
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.observe import dump as dump_mod
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g, fetches, feeds, init = mlp(tf)
    root = Path(tempfile.mkdtemp(prefix="npu_dump_bench_"))
    try:
        (root / "emu").mkdir()
        cfg = NpuConfig(enable_dump=True, dump_path=str(root / "emu"), dump_mode="all")
        with EmulatorSession(cfg, g) as sess:
            sess.run(init)
            sess.run(fetches, feeds)
        loaded = dump_mod.load_dump(root / "emu")
        # steps count per graph: the training run is step 0 of its graph (the later one, which load_dump reads)
        arrays = [(t, np.asarray(t.value)) for t in loaded.tensors() if t.step == 0]
        entries = [dump_mod.DumpEntry(t.op, t.op_type, t.kind, t.slot, a, t.decided_dtype) for t, a in arrays]
        total = sum(a.nbytes for _, a in arrays)
        writer = dump_mod.DumpWriter(str(root / "emu"), budget_bytes=1 << 40)
        raw_dir = root / "raw"
        raw_dir.mkdir()
        step = [100]

        def ours():
            writer.write_step(step[0], entries)
            step[0] += 1

        def raw():
            folder = raw_dir / f"s{step[0]}"
            folder.mkdir()
            for i, (_, a) in enumerate(arrays):
                np.save(folder / f"{i}.npy", a)
            step[0] += 1

        t_raw, t_ours = interleaved(raw, ours, blocks, 3)
        print(
            f"dump       {len(arrays)} tensors, {total / 1e6:.2f} MB/step: raw np.save {total / t_raw / 1e6:8.1f} MB/s, "
            f"emulator dump {total / t_ours / 1e6:8.1f} MB/s  throughput ratio {t_raw / t_ours:5.3f}x"
        )
        writer_sync = dump_mod.DumpWriter(str(root / "emu"), budget_bytes=1 << 40, fsync_data=True)

        def ours_sync():
            writer_sync.write_step(step[0], entries)
            step[0] += 1

        t_raw2, t_s = interleaved(raw, ours_sync, max(3, blocks // 2), 3)
        print(f"dump       with per-file fsync (fsync_data=True): throughput ratio {t_raw2 / t_s:5.3f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_profile(tf, blocks: int, per_block: int) -> None:
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    g, fetches, feeds, init = mlp(tf)
    out = tempfile.mkdtemp(prefix="npu_prof_bench_")
    try:
        plain = tf.compat.v1.Session(graph=g)
        plain.run(init)
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        cfg = NpuConfig(
            precision_mode="must_keep_origin_dtype",
            profiling_mode=True,
            profiling_options=json.dumps({"output": out, "training_trace": "on"}),
        )
        emu = EmulatorSession(cfg, g)
        emu.run(init)
        emu.run(fetches, feeds)

        def traced():
            plain.run(fetches, feeds, options=options, run_metadata=tf.compat.v1.RunMetadata())

        t_trace, t_emu = interleaved(traced, lambda: emu.run(fetches, feeds), blocks, per_block)
        print(
            f"profile    FULL_TRACE plain {t_trace * 1e3:8.3f} ms  emulator profiling {t_emu * 1e3:8.3f} ms  "
            f"ratio {t_emu / t_trace:5.3f}x"
        )
        emu.close()
        plain.close()
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, skip ResNet-50")
    parser.add_argument("--only", choices=["fixed", "overhead", "breakdown", "dump", "profile"], help="run one part")
    parser.add_argument(
        "--single-thread", action="store_true", help="one TensorFlow thread (steadier ratios on a shared machine)"
    )
    parser.add_argument(
        "--resnet-batch",
        type=int,
        default=2,
        metavar="N",
        help="ResNet-50's batch (default 2: a step's extra work is then mostly per weight, not per activation)",
    )
    args = parser.parse_args()
    if args.single_thread:  # read by TensorFlow when a session's config leaves the thread counts at 0
        os.environ["TF_NUM_INTEROP_THREADS"] = os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
    import tensorflow as tf

    blocks = 5 if args.quick else 15
    resnet = functools.partial(resnet50, batch=args.resnet_batch)
    resnet_name = "resnet50" if args.resnet_batch == 2 else f"resnet50/b{args.resnet_batch}"
    parts = [args.only] if args.only else ["fixed", "overhead", "breakdown", "dump", "profile"]
    if "fixed" in parts:
        bench_fixed_cost(tf, blocks)
    if "overhead" in parts:
        bench_overhead(tf, "mlp", mlp, ["must_keep_origin_dtype", "allow_mix_precision"], blocks, 40)
        if not args.quick:
            bench_overhead(tf, resnet_name, resnet, ["must_keep_origin_dtype", "allow_mix_precision"], 5, 2)
    if "breakdown" in parts:
        bench_breakdown(tf, "mlp", mlp, blocks * 2, 40)
        if not args.quick:
            bench_breakdown(tf, resnet_name, resnet, 5, 2)
    if "dump" in parts:
        bench_dump(tf, blocks)
    if "profile" in parts:
        bench_profile(tf, blocks, 10)


if __name__ == "__main__":
    main()
