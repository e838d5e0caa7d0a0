"""DCGAN (CelebA branch) from the model zoo (``DCGAN_ID2196``): two Adam optimizers, summaries, nesting.

Carried over from ``model.py`` / ``ops.py`` / ``main.py``: generator linear(z -> gf*8 x s16 x s16) +
BN + ReLU, three ``conv2d_transpose`` stride-2 layers with BN + ReLU, a last deconv + tanh;
discriminator four 5x5/2 convs with leaky ReLU(0.2) (BN on layers 2-4) + linear; the discriminator
applied twice with variable reuse; ``sigmoid_cross_entropy`` losses d_real/d_fake/g; histogram,
image and scalar summaries merged into ``d_sum`` / ``g_sum``; two ``AdamOptimizer(lr, beta1=0.5)``
each wrapped in ``NPULossScaleOptimizer(ExponentialUpdateLossScaleManager(2**32, 1000, 2, 0.5))``
and minimized over the ``d_`` / ``g_`` variables; session config ``use_off_line`` +
``precision_mode=allow_mix_precision`` with remapping and memory optimisation off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import batch_norm, loss_scaled_apply, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "DCGAN"
IDIOMS = ("several_optimizers", "summaries", "nested_fetches", "loss_scaling_isfinite")
SOURCE = "TensorFlow/built-in/cv/image_synthesis/DCGAN_ID2196_for_TensorFlow (model.py, ops.py, main.py)"

BATCH = 4  # script: 64
OUT = 16  # script: 64x64 output
GF = DF = 8  # script: 64
Z_DIM = 20  # script: 100


def _linear(x, units: int, name: str):
    with v1.variable_scope(name):
        w = v1.get_variable(
            "Matrix", [int(x.shape[-1]), units], initializer=v1.random_normal_initializer(0.0, 0.02, seed=4)
        )
        b = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        return tf.matmul(x, w) + b


def _deconv(x, out_shape, name: str):
    with v1.variable_scope(name):
        w = v1.get_variable(
            "w", [5, 5, out_shape[-1], int(x.shape[-1])], initializer=v1.random_normal_initializer(stddev=0.02, seed=5)
        )
        b = v1.get_variable("biases", [out_shape[-1]], initializer=v1.zeros_initializer())
        y = tf.nn.conv2d_transpose(x, w, output_shape=out_shape, strides=[1, 2, 2, 1])
        return tf.reshape(tf.nn.bias_add(y, b), out_shape)


def _conv(x, filters: int, name: str):
    with v1.variable_scope(name):
        w = v1.get_variable(
            "w", [5, 5, int(x.shape[-1]), filters], initializer=v1.truncated_normal_initializer(stddev=0.02, seed=6)
        )
        b = v1.get_variable("biases", [filters], initializer=v1.zeros_initializer())
        return tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"), b)


def _lrelu(x):
    return tf.maximum(x, 0.2 * x)


def _generator(z):
    s2, s4, s8, s16 = OUT // 2, OUT // 4, OUT // 8, OUT // 16
    with v1.variable_scope("generator"):
        h0 = tf.reshape(_linear(z, GF * 8 * s16 * s16, "g_h0_lin"), [-1, s16, s16, GF * 8])
        h0 = tf.nn.relu(batch_norm(h0, True, "g_bn0", decay=0.9, epsilon=1e-5, updates="inline"))
        h1 = tf.nn.relu(batch_norm(_deconv(h0, [BATCH, s8, s8, GF * 4], "g_h1"), True, "g_bn1", 0.9, 1e-5, "inline"))
        h2 = tf.nn.relu(batch_norm(_deconv(h1, [BATCH, s4, s4, GF * 2], "g_h2"), True, "g_bn2", 0.9, 1e-5, "inline"))
        h3 = tf.nn.relu(batch_norm(_deconv(h2, [BATCH, s2, s2, GF], "g_h3"), True, "g_bn3", 0.9, 1e-5, "inline"))
        return tf.nn.tanh(_deconv(h3, [BATCH, OUT, OUT, 3], "g_h4"))


def _discriminator(image, reuse: bool):
    with v1.variable_scope("discriminator", reuse=reuse):
        h0 = _lrelu(_conv(image, DF, "d_h0_conv"))
        h1 = _lrelu(batch_norm(_conv(h0, DF * 2, "d_h1_conv"), True, "d_bn1", 0.9, 1e-5, "inline"))
        h2 = _lrelu(batch_norm(_conv(h1, DF * 4, "d_h2_conv"), True, "d_bn2", 0.9, 1e-5, "inline"))
        h3 = _lrelu(batch_norm(_conv(h2, DF * 8, "d_h3_conv"), True, "d_bn3", 0.9, 1e-5, "inline"))
        logits = _linear(tf.reshape(h3, [BATCH, -1]), 1, "d_h4_lin")
        return tf.nn.sigmoid(logits), logits


def build(files_dir: Path) -> CorpusModel:
    rng = np.random.RandomState(2)
    real = (rng.rand(BATCH * 3, OUT, OUT, 3).astype(np.float32) * 2.0) - 1.0
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(2)
        inputs = v1.placeholder(tf.float32, [BATCH, OUT, OUT, 3], name="real_images")
        z = v1.placeholder(tf.float32, [None, Z_DIM], name="z")
        z_sum = v1.summary.histogram("z", z)
        fake = _generator(z)
        d_real, d_logits = _discriminator(inputs, reuse=False)
        d_fake, d_logits_ = _discriminator(fake, reuse=True)
        d_sum = v1.summary.histogram("d", d_real)
        d__sum = v1.summary.histogram("d_", d_fake)
        g_img = v1.summary.image("G", fake)
        xent = tf.nn.sigmoid_cross_entropy_with_logits
        d_loss_real = tf.reduce_mean(xent(logits=d_logits, labels=tf.ones_like(d_real)))
        d_loss_fake = tf.reduce_mean(xent(logits=d_logits_, labels=tf.zeros_like(d_fake)))
        g_loss = tf.reduce_mean(xent(logits=d_logits_, labels=tf.ones_like(d_fake)), name="g_loss")
        d_loss = tf.add(d_loss_real, d_loss_fake, name="d_loss")
        g_sum = v1.summary.merge(
            [z_sum, d__sum, g_img, v1.summary.scalar("d_loss_fake", d_loss_fake), v1.summary.scalar("g_loss", g_loss)]
        )
        d_sum_all = v1.summary.merge(
            [z_sum, d_sum, v1.summary.scalar("d_loss_real", d_loss_real), v1.summary.scalar("d_loss", d_loss)]
        )
        t_vars = v1.trainable_variables()
        d_vars = [v for v in t_vars if "d_" in v.name]
        g_vars = [v for v in t_vars if "g_" in v.name]
        d_optim = loss_scaled_apply(v1.train.AdamOptimizer(0.0002, beta1=0.5), d_loss, d_vars, init_scale=2.0**32)
        g_optim = loss_scaled_apply(v1.train.AdamOptimizer(0.0002, beta1=0.5), g_loss, g_vars, init_scale=2.0**32)
        init = v1.global_variables_initializer()

    def feed(step: int) -> dict:
        batch_z = np.random.RandomState(10 + step).uniform(-1, 1, [BATCH, Z_DIM]).astype(np.float32)
        return {inputs: real[step * BATCH : (step + 1) * BATCH], z: batch_z}

    return CorpusModel(
        name="dcgan",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=[init],
        train_fetches=[[d_optim, d_sum_all], [g_optim, g_sum], {"d_loss": d_loss, "g_loss": g_loss}],
        loss=d_loss.name,
        config={
            "kind": "session",
            "parameter_map": {"use_off_line": True, "precision_mode": "allow_mix_precision"},
            "rewrite_options": {"remapping": "OFF", "memory_optimization": "OFF"},
        },
        feed_fn=feed,
        notes=(
            "Output 16x16 (script 64x64 from 108 crops), gf/df 8 (script 64), z 20 (script 100), batch 4 "
            "(script 64), random images. The script runs [d_optim, d_sum] then [g_optim, g_sum] twice in "
            "separate sess.run calls; here one step fetches both optimizers and both summaries in one "
            "nested structure ([[d_optim, d_sum], [g_optim, g_sum], {d_loss, g_loss}]) so a single run "
            "graph has two train ops (the corpus' several-optimizers case). extra['script_runs'] keeps "
            "the script's own three-call sequence. Loss-scale optimizer rebuilt from raw ops."
        ),
        extra={"script_runs": [[d_optim, d_sum_all], [g_optim, g_sum], [g_optim, g_sum]]},
    )
