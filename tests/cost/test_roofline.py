"""The device cost model: roofline per op from shapes and decided dtypes, summed per step."""

from __future__ import annotations

import json

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._plan.planner import plan
from npu_jupyter.cost import estimate, soc_figures
from npu_jupyter.cost.roofline import BASIS


def _dense(batch=64, width=1024):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [batch, width], name="x")
        w = tf.compat.v1.get_variable("w", [width, width])
        y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="y")
        tf.reduce_sum(y, name="loss")
    return g


def _conv(batch=8):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [batch, 32, 32, 16], name="x")
        k = tf.compat.v1.get_variable("k", [3, 3, 16, 32])
        y = tf.nn.conv2d(x, k, strides=1, padding="SAME", name="conv")
        loss = tf.reduce_mean(tf.nn.relu(y), name="loss")
        tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return g


def test_matmul_flops_come_from_the_shapes_and_fp16_runs_at_the_published_cube_rate():
    g = _dense()
    cost = estimate(plan(g, {"precision_mode": "force_fp16"}, fetches=["loss"]), g)
    mm = cost.ops["mm"]
    assert mm.flops == 2 * 64 * 1024 * 1024
    assert (mm.unit, mm.dtype) == ("cube", "float16")
    figures = soc_figures("Ascend910")
    assert figures.cube_tflops["float16"] == 256.0
    compute_us = mm.flops / (256.0 * 1e6)
    memory_us = mm.bytes / (figures.hbm_gbps * 1e3)
    assert mm.est_us == pytest.approx(max(compute_us, memory_us) + figures.aicore_launch_us)
    # bytes: x and w read, y written, all float16
    assert mm.bytes == 2 * (64 * 1024 + 1024 * 1024 + 64 * 1024)


def test_conv_and_its_gradients_count_kernel_window_flops():
    g = _conv()
    cost = estimate(plan(g, {"precision_mode": "allow_fp32_to_fp16"}, fetches=["train"]), g)
    per_output = 3 * 3 * 16
    assert cost.ops["conv"].flops == 2 * (8 * 32 * 32 * 32) * per_output
    grads = [
        c
        for c in cost.ops.values()
        if c.name.endswith("Conv2DBackpropFilter") or c.name.endswith("Conv2DBackpropInput")
    ]
    assert grads and all(c.flops == 2 * (8 * 32 * 32 * 32) * per_output for c in grads)


def test_lower_precision_is_estimated_faster_and_smaller_than_float32_and_ranks_like_the_cann_docs():
    """CANN's ATC docs rank performance fp16 >= mixed_float16 > origin (must_keep_origin_dtype)."""
    g = _conv(batch=32)
    costs = {
        mode: estimate(plan(g, {"precision_mode": mode}, fetches=["train"]), g)
        for mode in ("must_keep_origin_dtype", "allow_mix_precision", "force_fp16")
    }
    keep, mixed, fp16 = (costs[m] for m in ("must_keep_origin_dtype", "allow_mix_precision", "force_fp16"))
    assert fp16.step_ms <= mixed.step_ms < keep.step_ms
    assert fp16.memory_bytes <= mixed.memory_bytes < keep.memory_bytes
    assert fp16.step_ratio_fp32 < 1.0 and fp16.memory_ratio_fp32 < 1.0
    assert keep.memory_ratio_fp32 == pytest.approx(1.0)


def test_host_ops_cost_the_device_nothing_but_their_transfers_cost_pcie_time():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [256, 256], name="x")
        y = tf.nn.relu(x, name="y")
        s = tf.strings.as_string(y, name="text")  # a host op in mixed computing
        tf.strings.length(s, name="n")
    p = plan(g, {"mix_compile_mode": True}, fetches=["n"])
    cost = estimate(p, g)
    assert cost.ops["text"].unit == "host" and cost.ops["text"].est_us == 0.0
    assert p.transfers and cost.transfer_us > 0
    moved = sum(t.bytes for t in p.transfers if t.bytes is not None)
    figures = soc_figures("Ascend910")
    assert cost.transfer_us == pytest.approx(
        moved / (figures.pcie_gbps * 1e3) + len(p.transfers) * figures.transfer_latency_us
    )


def test_unknown_dimensions_are_counted_and_said_in_the_basis():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        tf.nn.relu(x, name="y")
    cost = estimate(plan(g, fetches=["y"]), g)
    assert cost.guessed_shapes >= 1
    assert "unknown before the run" in cost.basis and BASIS in cost.basis
    block = cost.payload()
    assert set(block) == {"step_ms", "memory_bytes", "step_ratio_fp32", "memory_ratio_fp32", "launch_share", "basis"}
    json.dumps(block)


def test_a_small_models_step_is_mostly_launch_cost_and_a_large_ones_is_not():
    small, large = _dense(batch=2, width=8), _dense(batch=2048, width=4096)
    tiny = estimate(plan(small, {"precision_mode": "force_fp16"}, fetches=["loss"]), small)
    big = estimate(plan(large, {"precision_mode": "force_fp16"}, fetches=["loss"]), large)
    assert tiny.launch_share is not None and tiny.launch_share > 0.9
    assert tiny.step_ratio_fp32 is not None and tiny.step_ratio_fp32 > 0.95  # why it shows about 1.00x float32
    assert big.launch_share is not None and big.launch_share < 0.5
    assert big.step_ratio_fp32 is not None and big.step_ratio_fp32 < 0.9
    assert tiny.payload()["launch_share"] == tiny.launch_share


def test_every_soc_figure_names_its_source():
    for soc in ("Ascend910", "Ascend910B"):
        figures = soc_figures(soc)
        for name in (
            "cube_tflops",
            "vector_tflops",
            "hbm_gbps",
            "pcie_gbps",
            "aicore_launch_us",
            "aicpu_gflops",
            "aicpu_launch_us",
            "transfer_latency_us",
        ):
            assert figures.sources.get(name), (soc, name)
    assert soc_figures("Ascend910B3").approximate and not soc_figures("Ascend910A").approximate
