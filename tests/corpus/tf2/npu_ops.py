"""The ``npu_ops.py`` the ModelZoo's PointNet (and other TF2 Keras samples) ship next to the script.

Written for npu_jupyter's corpus from the shipped file (facts, not code): ``dropout`` keeps each element
with probability ``keep_prob`` through the adapter's op library, ``gen_npu_ops.drop_out_gen_mask`` then
``gen_npu_ops.drop_out_do_mask``, with the shipped argument checks (graph mode only, floating ``x``,
``keep_prob`` in (0, 1], ``keep_prob == 1`` returns ``x``). Only ``dropout`` is here: the script uses
nothing else of the file (its LARS / LAMB / LSTM wrappers call fused kernels the emulation lacks).
"""

import numbers

import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.framework import random_seed

from npu_device import gen_npu_ops


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    if context.executing_eagerly():
        raise RuntimeError("tf.dropout() is not compatible with eager execution.")
    x = tf.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(
            "x has to be a floating point tensor since it's going to be scaled. Got a %s tensor instead." % x.dtype
        )
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
        raise ValueError("keep_prob must be a scalar tensor or a float in the range (0, 1], got %g" % keep_prob)
    if isinstance(keep_prob, float) and keep_prob == 1:
        return x
    seed, seed2 = random_seed.get_seed(seed)
    if noise_shape is None:
        noise_shape = tf.shape(x)
    gen_out = gen_npu_ops.drop_out_gen_mask(noise_shape, keep_prob, seed, seed2, name)
    return gen_npu_ops.drop_out_do_mask(x, gen_out, keep_prob, name)
