"""MobileNet v1 on CIFAR-10 from the model zoo (``MobileNetV1_ID0093``), mixed precision with loss scaling.

Carried over from ``train.py`` / ``mobilenet.py``: flat 3072-float input reshaped NCHW->NHWC, the
MobileNet v1 body (3x3/2 stem then 13 depthwise-separable blocks, each depthwise 3x3 + BN + ReLU and
pointwise 1x1 + BN + ReLU), a 7x7 SAME avg-pool, dense(512) + BN + leaky ReLU(0.1), dense(10),
squeeze; BN with ``training=is_train`` placeholder (a ``tf.cond``) and UPDATE_OPS; an
``ExponentialMovingAverage(0.99)`` over the trainable variables that the train op depends on; Adam
wrapped in ``NPULossScaleOptimizer`` with ``ExponentialUpdateLossScaleManager(2**32, 1000, 2, 0.5)``
(``allow_mix_precision`` branch); fetches ``[loss, accuracy, train_op, predict, y_true]``; session
config ``use_off_line`` + ``precision_mode`` (the run script passes ``allow_mix_precision``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import batch_norm, conv2d, dense, depthwise_conv2d, loss_scaled_apply, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "MobileNet/VGG"
IDIOMS = ("ema", "batch_norm_update_ops", "cond_in_training", "loss_scaling_isfinite")
SOURCE = "TensorFlow/built-in/cv/image_classification/MobileNetV1_ID0093_for_TensorFlow (train.py, mobilenet.py)"

WIDTH_DIVISOR = 4
# (pointwise channels, depthwise stride) of the 13 separable blocks of MobileNet v1
BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)
BATCH = 4  # script: 128


def build(files_dir: Path) -> CorpusModel:
    rng = np.random.RandomState(1)
    data = rng.rand(12, 3072).astype(np.float32)
    labels_np = rng.randint(0, 10, size=12).astype(np.int64)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(1)
        x = v1.placeholder(tf.float32, shape=(None, 3072), name="input_data")
        y_true = v1.placeholder(tf.int64, shape=(None,), name="input_label")
        is_train = v1.placeholder(tf.bool, name="is_train")
        net = tf.transpose(tf.reshape(x, [-1, 3, 32, 32]), perm=[0, 2, 3, 1])
        with v1.variable_scope("MobileNet"):
            net = tf.nn.relu(
                batch_norm(conv2d(net, 32 // WIDTH_DIVISOR, 3, 2, name="conv0", bias=False), is_train, "bn0")
            )
            for i, (channels, stride) in enumerate(BLOCKS, start=1):
                net = tf.nn.relu(batch_norm(depthwise_conv2d(net, stride, name=f"dw{i}"), is_train, f"dw{i}_bn"))
                net = tf.nn.relu(
                    batch_norm(
                        conv2d(net, channels // WIDTH_DIVISOR, 1, name=f"pw{i}", bias=False), is_train, f"pw{i}_bn"
                    )
                )
            pooled = tf.nn.avg_pool2d(net, 7, 1, "SAME", name="Avg_pooling")
            flat = tf.reduce_mean(pooled, axis=[1, 2])
            dense1 = dense(flat, 512 // WIDTH_DIVISOR, name="dense1")
            relu1 = tf.nn.leaky_relu(batch_norm(dense1, is_train, "bn1"), 0.1)
            logits = tf.identity(dense(relu1, 10, name="dense2"), name="sqz")
            prediction = tf.nn.softmax(logits, name="prediction")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits))
        predict = tf.argmax(prediction, 1)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(predict, y_true), tf.float64))
        moving_ave = v1.train.ExponentialMovingAverage(0.99).apply(v1.trainable_variables())
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            with tf.control_dependencies([moving_ave]):
                train_op = loss_scaled_apply(
                    v1.train.AdamOptimizer(0.001),
                    loss,
                    init_scale=2.0**32,
                    dynamic=True,
                    incr_every_n_steps=1000,
                    decr_every_n_nan_or_inf=2,
                    decr_ratio=0.5,
                )
        init = v1.global_variables_initializer()

    def feed(step: int) -> dict:
        idx = np.arange(step * BATCH, (step + 1) * BATCH) % len(data)
        return {x: data[idx], y_true: labels_np[idx], is_train: True}

    return CorpusModel(
        name="mobilenet_v1",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=[init],
        train_fetches=[loss, accuracy, train_op, predict, y_true],
        loss=loss.name,
        config={
            "kind": "session",
            "parameter_map": {"use_off_line": True, "precision_mode": "allow_mix_precision"},
            "rewrite_options": {"remapping": "OFF"},
        },
        feed_fn=feed,
        notes=(
            "CIFAR-size input kept (32x32); channels /4; batch 4 (script 128); random data instead of "
            "the CIFAR pickles. All 13 separable blocks kept. NPULossScaleOptimizer with the exponential "
            "manager is rebuilt from raw ops (scaled loss, unscaled grads, IsFinite over all grads, "
            "tf.cond skip/apply, scale update) since npu_bridge is not importable here."
        ),
    )
