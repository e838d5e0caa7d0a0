"""Building blocks the corpus2 models share: RNN cells, dense/norm layers and the NPU loss-scale step.

Written on raw ``tf.compat.v1`` ops so the models build the same graph on TF 2.6.5 and 2.16-2.21
(``tf.compat.v1.nn.rnn_cell`` needs Keras 2 there, and ``tf.compat.v1.layers`` needs ``tf_keras``).
The cells satisfy ``tf.compat.v1.nn.dynamic_rnn``'s duck-typed cell contract, so the time loop is the
real ``while_loop`` a TF1 script builds. The loss-scale step mirrors what npu_bridge's
``NPULossScaleOptimizer`` + ``ExponentialUpdateLossScaleManager`` put in a graph on the host side
(all-finite check with ``IsFinite`` over every gradient, ``tf.cond`` between applying and skipping,
and the scale update), as read from the public adapter sources; written here, not copied.
"""

from __future__ import annotations

from typing import Any, Sequence

from corpus.tf1_blocks import tf1_control_flow  # noqa: F401 - re-exported: the sequence models build with it


def tf1() -> Any:
    """tf.compat.v1, fetched when a builder runs (builders call it inside ``build``)."""
    import tensorflow as tf

    return tf.compat.v1


def dense(x: Any, units: int, name: str, activation: Any = None, use_bias: bool = True, stddev: float = 0.02) -> Any:
    """A fully connected layer over the last axis (what tf.layers.dense builds: MatMul + BiasAdd)."""
    v1 = tf1()
    with v1.variable_scope(name):
        depth = int(x.shape[-1])
        kernel = v1.get_variable("kernel", [depth, units], initializer=v1.truncated_normal_initializer(stddev=stddev))
        flat = v1.reshape(x, [-1, depth]) if x.shape.ndims != 2 else x
        out = v1.matmul(flat, kernel)
        if use_bias:
            bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
            out = v1.nn.bias_add(out, bias)
        if x.shape.ndims != 2:
            lead = v1.shape(x)[:-1]
            out = v1.reshape(out, v1.concat([lead, [units]], axis=0))
        return activation(out) if activation is not None else out


def layer_norm(x: Any, name: str, epsilon: float = 1e-6) -> Any:
    """Layer normalisation over the last axis (BERT/Transformer style: moments, rsqrt, gamma, beta)."""
    v1 = tf1()
    with v1.variable_scope(name):
        depth = int(x.shape[-1])
        gamma = v1.get_variable("gamma", [depth], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [depth], initializer=v1.zeros_initializer())
        mean, var = v1.nn.moments(x, axes=[-1], keep_dims=True)
        return (x - mean) * v1.rsqrt(var + epsilon) * gamma + beta


def batch_norm(x: Any, training: bool, name: str, decay: float = 0.99) -> Any:
    """Batch norm whose moving-statistics updates go to UPDATE_OPS, as tf.layers.batch_normalization does."""
    v1 = tf1()
    with v1.variable_scope(name):
        depth = int(x.shape[-1])
        gamma = v1.get_variable("gamma", [depth], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [depth], initializer=v1.zeros_initializer())
        moving_mean = v1.get_variable("moving_mean", [depth], initializer=v1.zeros_initializer(), trainable=False)
        moving_var = v1.get_variable("moving_variance", [depth], initializer=v1.ones_initializer(), trainable=False)
        if not training:
            return v1.nn.batch_normalization(x, moving_mean, moving_var, beta, gamma, 1e-3)
        axes = list(range(x.shape.ndims - 1))
        mean, var = v1.nn.moments(x, axes=axes)
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_sub(moving_mean, (moving_mean - mean) * (1 - decay)))
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_sub(moving_var, (moving_var - var) * (1 - decay)))
        return v1.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3)


class LSTMCell:
    """A basic LSTM cell (one fused gate MatMul, forget bias) usable by tf.compat.v1.nn.dynamic_rnn."""

    def __init__(self, units: int, name: str, forget_bias: float = 1.0) -> None:
        self.units = units
        self.name = name
        self.forget_bias = forget_bias

    @property
    def state_size(self) -> Any:
        return (self.units, self.units)

    @property
    def output_size(self) -> int:
        return self.units

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        v1 = tf1()
        return (v1.zeros([batch_size, self.units], dtype), v1.zeros([batch_size, self.units], dtype))

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        v1 = tf1()
        c, h = state
        with v1.variable_scope(self.name, reuse=v1.AUTO_REUSE):
            depth = int(inputs.shape[-1]) + self.units
            kernel = v1.get_variable("kernel", [depth, 4 * self.units], initializer=v1.glorot_uniform_initializer())
            bias = v1.get_variable("bias", [4 * self.units], initializer=v1.zeros_initializer())
        gates = v1.nn.bias_add(v1.matmul(v1.concat([inputs, h], axis=1), kernel), bias)
        i, j, f, o = v1.split(gates, 4, axis=1)
        new_c = c * v1.sigmoid(f + self.forget_bias) + v1.sigmoid(i) * v1.tanh(j)
        new_h = v1.tanh(new_c) * v1.sigmoid(o)
        return new_h, (new_c, new_h)


class GRUCell:
    """A GRU cell (reset/update gates, candidate) usable by dynamic_rnn or called one step at a time."""

    def __init__(self, units: int, name: str, activation: Any = None) -> None:
        self.units = units
        self.name = name
        self.activation = activation

    @property
    def state_size(self) -> int:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return tf1().zeros([batch_size, self.units], dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        v1 = tf1()
        act = self.activation or v1.tanh
        with v1.variable_scope(self.name, reuse=v1.AUTO_REUSE):
            depth = int(inputs.shape[-1]) + self.units
            gate_kernel = v1.get_variable(
                "gates/kernel", [depth, 2 * self.units], initializer=v1.glorot_uniform_initializer()
            )
            gate_bias = v1.get_variable("gates/bias", [2 * self.units], initializer=v1.ones_initializer())
            cand_kernel = v1.get_variable(
                "candidate/kernel", [depth, self.units], initializer=v1.glorot_uniform_initializer()
            )
            cand_bias = v1.get_variable("candidate/bias", [self.units], initializer=v1.zeros_initializer())
        gates = v1.sigmoid(v1.nn.bias_add(v1.matmul(v1.concat([inputs, state], 1), gate_kernel), gate_bias))
        r, u = v1.split(gates, 2, axis=1)
        cand = act(v1.nn.bias_add(v1.matmul(v1.concat([inputs, r * state], 1), cand_kernel), cand_bias))
        new_h = u * state + (1 - u) * cand
        return new_h, new_h


def dynamic_loss_scale_step(
    optimizer: Any,
    loss: Any,
    var_list: Sequence[Any],
    *,
    init_loss_scale: float,
    incr_every_n_steps: int,
    decr_every_n_nan_or_inf: int,
    decr_ratio: float,
    clip_norm: float | None = None,
    clip_global: bool = False,
    global_step: Any = None,
) -> tuple[Any, Any]:
    """The graph NPULossScaleOptimizer(opt, ExponentialUpdateLossScaleManager(...)).minimize(loss) builds.

    Scales the loss, unscales the gradients, checks every gradient with IsFinite (reduce_all over the
    per-gradient checks), optionally clips (per-tensor clip_by_norm or clip_by_global_norm, as the BERT
    script switches), then ``tf.cond`` applies the update only when all are finite, and the scale is
    grown after ``incr_every_n_steps`` good steps or shrunk after ``decr_every_n_nan_or_inf`` bad ones.
    Returns (train_op, loss_scale variable).
    """
    v1 = tf1()
    with v1.variable_scope("loss_scale_manager"):
        scale = v1.get_variable("loss_scale", [], initializer=v1.constant_initializer(init_loss_scale), trainable=False)
        good = v1.get_variable("good_steps", [], v1.int32, initializer=v1.zeros_initializer(), trainable=False)
        bad = v1.get_variable("bad_steps", [], v1.int32, initializer=v1.zeros_initializer(), trainable=False)
    grads = v1.gradients(loss * scale, list(var_list))
    grads = [g / scale for g in grads]
    with v1.name_scope("all_finite"):
        is_finite = v1.reduce_all(v1.stack([v1.reduce_all(v1.is_finite(g)) for g in grads]))
    if clip_norm is not None:
        if clip_global:
            grads, _ = v1.clip_by_global_norm(grads, clip_norm)
        else:
            grads = [v1.clip_by_norm(g, clip_norm) for g in grads]
    pairs = list(zip(grads, var_list))

    def apply() -> Any:
        """Apply only on finite gradients (the script's optimizer, then the step counter)."""
        return v1.group(optimizer.apply_gradients(pairs, global_step=global_step))

    apply_op = v1.cond(is_finite, apply, v1.no_op, name="apply_grads")

    def grow() -> Any:
        """A good step: count it, double the scale after incr_every_n_steps of them."""
        ready = good + 1 >= incr_every_n_steps
        new_scale = v1.where(ready, scale * 2.0, scale)
        return v1.group(v1.assign(scale, new_scale), v1.assign(good, v1.where(ready, 0, good + 1)), v1.assign(bad, 0))

    def shrink() -> Any:
        """An overflow: count it, multiply the scale by decr_ratio after decr_every_n_nan_or_inf of them."""
        ready = bad + 1 >= decr_every_n_nan_or_inf
        new_scale = v1.where(ready, v1.maximum(scale * decr_ratio, 1.0), scale)
        return v1.group(v1.assign(scale, new_scale), v1.assign(bad, v1.where(ready, 0, bad + 1)), v1.assign(good, 0))

    with v1.control_dependencies([apply_op]):
        update_scale = v1.cond(is_finite, grow, shrink, name="update_loss_scale")
    return v1.group(apply_op, update_scale), scale
