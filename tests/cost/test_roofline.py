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


def _copies_us(moved: int, copies: int) -> float:
    figures = soc_figures("Ascend910")
    return moved / (figures.pcie_gbps * 1e3) + copies * figures.transfer_latency_us


def test_a_run_copies_each_fed_tensor_to_the_device_and_each_fetched_tensor_back_every_step():
    # The adapter's partition pass gives the GeOp an _Arg per tensor entering it (a fed tensor comes in
    # through the session's _arg_ node) and a _Retval per tensor leaving it: both are copied every step.
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 1024], name="x")
        w = tf.compat.v1.get_variable("w", [1024, 16])
        tf.reduce_sum(tf.matmul(x, w, name="mm"), name="loss")
    p = plan(g, {"precision_mode": "allow_mix_precision"}, fetches=["loss"])
    assert estimate(p, g).run_copies == []  # no run: the plan alone moves nothing
    run = estimate(p, g, fed_shapes={"x:0": [64, 1024]}, fetched=["loss:0", "train", "loss:0"])
    assert [(c.tensor, c.direction, c.dtype, c.bytes) for c in run.run_copies] == [
        ("x:0", "h2d", "float32", 64 * 1024 * 4),  # fed in float32 although the MatMul reads float16
        ("loss:0", "d2h", "float32", 4),  # once, however often it is fetched; an op fetch copies nothing
    ]
    assert run.transfer_us == pytest.approx(_copies_us(64 * 1024 * 4 + 4, 2))
    assert run.step_ms * 1e3 == pytest.approx(sum(c.est_us for c in run.ops.values()) + run.transfer_us)
    # float32 moves the same bytes: the copies count the same on both sides of the "vs float32" ratio
    fed_only = estimate(p, g, fed_shapes={"x:0": [64, 1024]})
    assert [c.tensor for c in fed_only.run_copies] == ["x:0"]
    assert fed_only.basis.endswith(
        "each step also copies the run's 1 fed tensor to the device (256.0 KiB), counted as transfers"
    )
    fetch_only = estimate(p, g, fetched=["loss:0"])
    assert fetch_only.basis.endswith(
        "each step also copies the run's 1 fetched tensor back (4 B), counted as transfers"
    )
    assert (run.step_ms - fed_only.step_ms) * 1e3 == pytest.approx(_copies_us(4, 1))
    assert (run.fp32_step_ms - fed_only.fp32_step_ms) * 1e3 == pytest.approx(_copies_us(4, 1))
    assert "copies the run's 1 fed tensor to the device and 1 fetched tensor back (256.0 KiB)" in run.basis


def test_feeds_and_fetches_that_never_cross_to_the_device_add_no_copy():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [256, 256], name="x")
        y = tf.nn.relu(x, name="y")
        s = tf.strings.as_string(y, name="text")  # a host op in mixed computing: y crosses back anyway
        tf.strings.length(s, name="n")
        tf.compat.v1.placeholder(tf.float32, [8], name="unused")
    p = plan(g, {"mix_compile_mode": True}, fetches=["n", "y"])
    base = estimate(p, g)
    cost = estimate(p, g, fed_shapes={"x:0": [256, 256], "unused:0": [8]}, fetched=["y:0", "n:0", "x:0", "text:0"])
    # x goes to the device (y reads it); y already leaves it for the host op; n and text are host
    # tensors; a fetched tensor that is fed never leaves the host; nothing reads "unused"
    assert [(c.tensor, c.direction) for c in cost.run_copies] == [("x:0", "h2d")]
    assert cost.transfer_us - base.transfer_us == pytest.approx(_copies_us(256 * 256 * 4, 1))
