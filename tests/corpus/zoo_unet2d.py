"""2-D U-Net (ISBI membrane segmentation) from the model zoo (``2D_Unet_ID2337``).

Carried over from ``model.py`` / ``main.py``: the U-Net of ``unet()`` -- four down stages of two 3x3
ReLU convs + 2x2 max-pool (dropout 0.5 after the fourth stage and the bottleneck), a 1024-channel
bottleneck, four up stages of 2x2 nearest upsampling + 2x2 ReLU conv, skip concatenation and two 3x3
ReLU convs, a 2-channel 3x3 conv and a 1x1 sigmoid output; ``binary_crossentropy`` + accuracy;
``Adam(1e-4)`` wrapped by the script's NPU loss-scale optimizer; and the Keras session config:
``precision_mode=allow_mix_precision``, ``dynamic_input`` and ``dynamic_graph_execute_mode=lazy_recompile``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import conv2d, loss_scaled_apply, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "Segmentation"
IDIOMS = ("dynamic_input_shapes",)
SOURCE = "TensorFlow/built-in/cv/image_segmentation/2D_Unet_ID2337_for_TensorFlow (model.py, main.py)"

W = 8  # channel divisor (script: 64..1024)
SIZES = (32, 48, 32)  # the image side changes per step (script: 256); dynamic_input is on
BATCH = 2  # script: 2


def _conv(x, filters, kernel, name, activation=tf.nn.relu):
    return activation(conv2d(x, max(filters // W, 1), kernel, name=name))


def _unet(inputs, training):
    skips = []
    net = inputs
    for i, filters in enumerate((64, 128, 256, 512), start=1):
        net = _conv(_conv(net, filters, 3, f"conv{i}a"), filters, 3, f"conv{i}b")
        if i == 4:
            net = tf.nn.dropout(net, rate=0.5, seed=8) if training else net
        skips.append(net)
        net = tf.nn.max_pool2d(net, 2, 2, "VALID")
    net = _conv(_conv(net, 1024, 3, "conv5a"), 1024, 3, "conv5b")
    net = tf.nn.dropout(net, rate=0.5, seed=9) if training else net
    for i, (filters, skip) in enumerate(zip((512, 256, 128, 64), reversed(skips)), start=6):
        size = tf.shape(skip)[1:3]
        up = _conv(tf.image.resize(net, size, method="nearest"), filters, 2, f"up{i}")
        net = tf.concat([skip, up], axis=3)
        net = _conv(_conv(net, filters, 3, f"conv{i}a"), filters, 3, f"conv{i}b")
    net = _conv(net, 2 * W, 3, "conv9c")
    return _conv(net, 1, 1, "conv10", activation=tf.identity)


def build(files_dir: Path) -> CorpusModel:
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(5)
        image = v1.placeholder(tf.float32, [None, None, None, 1], name="input_1")
        mask = v1.placeholder(tf.float32, [None, None, None, 1], name="conv10_target")
        logits = _unet(image, training=True)
        prob = tf.nn.sigmoid(logits, name="conv10/Sigmoid")
        eps = 1e-7
        clipped = tf.clip_by_value(prob, eps, 1 - eps)
        loss = tf.reduce_mean(-(mask * tf.math.log(clipped) + (1 - mask) * tf.math.log(1 - clipped)), name="loss")
        accuracy = tf.reduce_mean(tf.cast(tf.equal(mask, tf.round(prob)), tf.float32), name="accuracy")
        train_op = loss_scaled_apply(v1.train.AdamOptimizer(1e-4), loss, init_scale=2.0**32, dynamic=True)
        init = v1.global_variables_initializer()

    def feed(step: int) -> dict:
        rng = np.random.RandomState(20 + step)
        side = SIZES[step % len(SIZES)]
        img = rng.rand(BATCH, side, side, 1).astype(np.float32)
        return {image: img, mask: (img > 0.5).astype(np.float32)}

    return CorpusModel(
        name="unet2d",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=[init],
        train_fetches=[loss, accuracy, train_op],
        loss=loss.name,
        config={
            "kind": "session",
            "parameter_map": {
                "precision_mode": "allow_mix_precision",
                "dynamic_input": True,
                "dynamic_graph_execute_mode": "lazy_recompile",
            },
        },
        feed_fn=feed,
        notes=(
            "The script is Keras (model.fit_generator on a Keras session configured by "
            "set_keras_session_npu_config); Keras 3 has no TF1 graph mode, so the same layers are raw "
            "tf.compat.v1 ops and the step is what fit runs: [loss, accuracy, train_op]. Images 32/48/32 "
            "px per step (script 256, fixed) so dynamic_input sees real shape changes; channels /8; random "
            "images with thresholded masks. The script's npu optimizer wrapper is rebuilt from raw ops "
            "(dynamic loss scale)."
        ),
    )
