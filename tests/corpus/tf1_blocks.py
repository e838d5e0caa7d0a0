"""Shared TF1 building blocks for the corpus builders: the layers and optimizer wrappers zoo scripts use.

The zoo scripts build their layers with ``tf.contrib.slim`` / ``tf.layers`` and wrap optimizers with
``npu_bridge``'s ``NPULossScaleOptimizer``; none of those exist on TF 2.16+. These are small raw-op
equivalents (``tf.compat.v1`` + ``tf.nn`` only) so every corpus model builds on TF 2.6.5 and 2.16-2.21
alike, and they keep the graph structure that matters to the planner: the same op types, the same
``tf.cond`` around batch-norm statistics when ``is_training`` is a tensor, the same ``UPDATE_OPS``
collection, the same ``IsFinite`` check and loss-scale update the adapter's loss-scale optimizer adds.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import tensorflow as tf

v1 = tf.compat.v1


@contextlib.contextmanager
def tf1_control_flow() -> Iterator[None]:
    """Build ``tf.cond`` / ``tf.while_loop`` as TF 1.15 does (Switch/Merge, Enter/Exit), for this block only.

    The zoo scripts run on the adapter's TF 1.15, where control flow is v1; TF 2.x builds functional
    ``If``/``While`` ops even in a ``tf.compat.v1`` graph, which hides the branch and loop bodies from the
    graph the adapter (and the planner) partitions. The switch is process-wide, so it is flipped only while
    a model is built and restored on exit. The one copy for every corpus builder (``seq_blocks`` re-exports it).
    """
    before = v1.control_flow_v2_enabled()
    v1.disable_control_flow_v2()
    try:
        yield
    finally:
        if before:
            v1.enable_control_flow_v2()


def he_init(seed: int = 0) -> Any:
    """Variance-scaling init (slim's default for convs), seeded so every build is reproducible."""
    return v1.variance_scaling_initializer(scale=2.0, seed=seed)


def conv2d(
    x: Any,
    filters: int,
    kernel: int | Sequence[int],
    stride: int = 1,
    padding: str = "SAME",
    name: str = "conv",
    bias: bool = True,
    stddev: float | None = None,
) -> Any:
    """``Conv2D`` (+ ``BiasAdd``) with a weights variable named like slim's (``weights``/``biases``)."""
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    cin = int(x.shape[-1])
    with v1.variable_scope(name):
        init = v1.truncated_normal_initializer(stddev=stddev, seed=1) if stddev else he_init(1)
        w = v1.get_variable("weights", [kh, kw, cin, filters], initializer=init)
        y = tf.nn.conv2d(x, w, [1, stride, stride, 1], padding)
        if bias:
            b = v1.get_variable("biases", [filters], initializer=v1.zeros_initializer())
            y = tf.nn.bias_add(y, b)
    return y


def depthwise_conv2d(x: Any, stride: int = 1, name: str = "dw") -> Any:
    """3x3 ``DepthwiseConv2dNative`` (MobileNet's separable half)."""
    cin = int(x.shape[-1])
    with v1.variable_scope(name):
        w = v1.get_variable("depthwise_weights", [3, 3, cin, 1], initializer=he_init(2))
        return tf.nn.depthwise_conv2d(x, w, [1, stride, stride, 1], "SAME")


def dense(x: Any, units: int, name: str = "dense", stddev: float = 0.01) -> Any:
    """``MatMul`` + ``BiasAdd`` on the last axis (2-D input)."""
    cin = int(x.shape[-1])
    with v1.variable_scope(name):
        w = v1.get_variable("kernel", [cin, units], initializer=v1.random_normal_initializer(stddev=stddev, seed=3))
        b = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        return tf.nn.bias_add(tf.matmul(x, w), b)


def batch_norm(
    x: Any,
    training: Any,
    name: str = "bn",
    decay: float = 0.99,
    epsilon: float = 1e-3,
    updates: str = "collection",
    scale: bool = True,
) -> Any:
    """Batch norm over the last axis, as ``tf.layers.batch_normalization`` / ``slim.batch_norm`` build it.

    ``training`` is a python bool or a bool tensor; a tensor puts the statistics choice in a ``tf.cond``
    (what both libraries do through ``smart_cond``). ``updates="collection"`` adds the moving-average
    assignments to ``UPDATE_OPS`` (the script must depend on them); ``"inline"`` runs them inside the
    training branch (slim with ``updates_collections=None``, facenet's setting).
    """
    channels = int(x.shape[-1])
    with v1.variable_scope(name):
        # slim with scale=False has no gamma variable; the fused kernel gets a constant ones vector
        gamma = (
            v1.get_variable("gamma", [channels], initializer=v1.ones_initializer())
            if scale
            else tf.ones([channels], name="gamma")
        )
        beta = v1.get_variable("beta", [channels], initializer=v1.zeros_initializer())
        mean_v = v1.get_variable("moving_mean", [channels], initializer=v1.zeros_initializer(), trainable=False)
        var_v = v1.get_variable("moving_variance", [channels], initializer=v1.ones_initializer(), trainable=False)
    axes = list(range(len(x.shape) - 1))
    with v1.name_scope(name):
        if isinstance(training, bool) and not training:
            return tf.nn.batch_normalization(x, mean_v, var_v, beta, gamma, epsilon)
        if updates == "inline":
            return _inline_updates(x, training, axes, (gamma, beta, mean_v, var_v), decay, epsilon)
        if isinstance(training, bool):
            mean, var = tf.nn.moments(x, axes)
            momentum = 1.0 - decay
        else:  # tf.layers: the statistics and the update momentum are chosen by smart_cond
            mean, var = tf.cond(training, lambda: tf.nn.moments(x, axes), lambda: (mean_v, var_v))
            momentum = tf.cond(training, lambda: tf.constant(1.0 - decay), lambda: tf.constant(0.0))
        for variable, value in ((mean_v, mean), (var_v, var)):
            v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_sub(variable, (variable - value) * momentum))
        return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def _inline_updates(x: Any, training: Any, axes: list, variables: tuple, decay: float, epsilon: float) -> Any:
    """slim's ``updates_collections=None``: statistics from one ``smart_cond``, updates in a second one.

    4-D inputs take the fused kernel (slim's ``fused=None`` default); the moving-average assignments run
    inside the training branch of the second cond, and the output depends on them.
    """
    gamma, beta, mean_v, var_v = variables
    fused = len(x.shape) == 4

    def _train() -> Any:
        if fused:
            return v1.nn.fused_batch_norm(x, gamma, beta, epsilon=epsilon, is_training=True)
        mean, var = tf.nn.moments(x, axes)
        return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon), mean, var

    def _infer() -> Any:
        if fused:
            return v1.nn.fused_batch_norm(
                x, gamma, beta, mean=mean_v, variance=var_v, epsilon=epsilon, is_training=False
            )
        return tf.nn.batch_normalization(x, mean_v, var_v, beta, gamma, epsilon), mean_v, var_v

    if isinstance(training, bool):
        outputs, mean, var = _train()
    else:
        outputs, mean, var = tf.cond(training, _train, _infer)

    def _force_updates() -> Any:
        upd = [
            v1.assign_sub(mean_v, (mean_v - mean) * (1.0 - decay)),
            v1.assign_sub(var_v, (var_v - var) * (1.0 - decay)),
        ]
        with tf.control_dependencies(upd):
            return tf.identity(outputs)

    if isinstance(training, bool):
        return _force_updates()
    return tf.cond(training, _force_updates, lambda: outputs)


def loss_scaled_apply(
    opt: Any,
    loss: Any,
    var_list: Sequence[Any] | None = None,
    global_step: Any = None,
    init_scale: float = 2.0**32,
    dynamic: bool = True,
    incr_every_n_steps: int = 1000,
    decr_every_n_nan_or_inf: int = 2,
    decr_ratio: float = 0.5,
    clip_norm: float | None = None,
) -> Any:
    """What ``NPULossScaleOptimizer`` adds around ``opt``: scaled loss, unscaled grads, finite check.

    ``dynamic`` follows ``ExponentialUpdateLossScaleManager``: a step whose gradients are not all finite
    is skipped (``tf.cond``) and the scale shrinks; otherwise the scale grows every
    ``incr_every_n_steps`` good steps. A fixed manager (``FixedLossScaleManager``) only scales.
    ``clip_norm`` clips each unscaled gradient with ``clip_by_norm`` (YOLOv3's idiom).
    """
    with v1.variable_scope(None, default_name="loss_scale"):
        scale = v1.get_variable("loss_scale", [], initializer=v1.constant_initializer(init_scale), trainable=False)
        good = v1.get_variable("good_steps", [], tf.int32, initializer=v1.zeros_initializer(), trainable=False)
        bad = v1.get_variable("bad_steps", [], tf.int32, initializer=v1.zeros_initializer(), trainable=False)
    gvs = opt.compute_gradients(loss * scale, var_list=var_list)
    gvs = [(g / scale, v) for g, v in gvs if g is not None]
    if clip_norm is not None:
        gvs = [(tf.clip_by_norm(g, clip_norm), v) for g, v in gvs]
    if not dynamic:
        return opt.apply_gradients(gvs, global_step=global_step)
    all_finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g, _ in gvs], name="all_finite")

    def _apply() -> Any:
        step = opt.apply_gradients(gvs, global_step=global_step)
        with tf.control_dependencies([step]):
            grow = tf.equal(good + 1, incr_every_n_steps)
            new_scale = v1.assign(scale, tf.where(grow, scale * 2.0, scale))
            new_good = v1.assign(good, tf.where(grow, 0, good + 1))
            return tf.group(new_scale, new_good, v1.assign(bad, 0))

    def _skip() -> Any:
        shrink = tf.equal(bad + 1, decr_every_n_nan_or_inf)
        new_scale = v1.assign(scale, tf.where(shrink, tf.maximum(scale * decr_ratio, 1.0), scale))
        new_bad = v1.assign(bad, tf.where(shrink, 0, bad + 1))
        return tf.group(new_scale, new_bad, v1.assign(good, 0))

    return tf.cond(all_finite, _apply, _skip, name="loss_scale_update")
