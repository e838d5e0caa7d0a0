"""Inception-ResNet-v2 (every block type, ~2/3 of its repeats) under mixed computing: FaceNet softmax training.

Carried over from ``src/train_softmax.py`` / ``src/facenet.py`` / ``src/models/inception_resnet_v2.py``
(``--model_def models.inception_resnet_v2``): a string ``FIFOQueue`` of (path, label, control) fed with
``enqueue_many`` and drained by ``create_input_pipeline`` (``ReadFile``, ``DecodeImage``, control-flag
``tf.cond`` s for rotate/crop/flip/standardisation, ``batch_join`` with a ``QueueRunner``) -- all inside
``npu_scope.without_npu_compile_scope()`` as the NPU branch of the script builds it; the network with
every block type (stem, Mixed_5b, block35 (scale 0.17), Mixed_6a, block17 (0.10), Mixed_7a, block8
(0.20) + a last block8 without activation, Conv2d_7b, avg-pool, dropout,
bottleneck), slim batch norm (decay 0.995, eps 1e-3, no gamma, ``updates_collections=None`` so the
updates run in a ``tf.cond`` on ``phase_train``), L2 weight decay, the logits layer, prelogits-norm
and center loss in REGULARIZATION_LOSSES, ``exponential_decay`` of a fed learning rate, loss-average
EMA with scalar summaries, Adam(eps 0.1) under ``NPULossScaleOptimizer(FixedLossScaleManager(2097156))``,
the variables' EMA (0.9999), ``summary.merge_all``; the script's fetch list (``reg_losses`` nested);
and the NPU session config: ``use_off_line``, ``mix_compile_mode``, ``precision_mode=allow_fp32_to_fp16``
and ``customize_dtypes`` pointing at the shipped ``switch_config.txt`` (written into ``files_dir``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import batch_norm, conv2d, dense, loss_scaled_apply, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "Inception-ResNet"
IDIOMS = (
    "large_graph",
    "mixed_computing_scope",
    "queue_runner",
    "string_ops",
    "ema",
    "summaries",
    "cond_in_training",
    "nested_fetches",
)
SOURCE = (
    "TensorFlow/built-in/cv/image_classification/Facenet_ID0122_for_TensorFlow "
    "(src/train_softmax.py, src/facenet.py, src/models/inception_resnet_v2.py, switch_config.txt)"
)

IMAGE = 80  # script: 160 (Inception-ResNet needs >= 75)
FILE_SIZE = 90  # stored images are larger and randomly cropped, as in the script
W = 8  # channel divisor (script: full width)
BATCH = 2  # script: 90
CLASSES = 10
# Block repeats (script: 10 x block35, 20 x block17, 9 x block8, then the last block8). At the script's
# counts the training graph has ~56k ops and its first plain step took ~3 min under load; 6/12/6 keeps
# every block type and the script's proportions and lands at ~37.7k ops, the issue's ~40k size class
# (measured per block: block35 ~1.57k ops, block17 and block8 ~1.12k each, the rest ~8.2k).
REPEATS = {"block35": 6, "block17": 12, "block8": 6}
EMBEDDING = 512 // W
CONTROL = (
    2 + 4 + 8
)  # RANDOM_CROP | RANDOM_FLIP | FIXED_STANDARDIZATION (--random_crop --random_flip --use_fixed_image_standardization)

# The customize_dtypes file the zoo script ships (switch_config.txt), line for line.
_SWITCH_TYPES = (
    ("MatMul", "float32,float32"),
    ("MatMulV2", "float32,float32"),
    ("BatchMatMul", "float32,float32"),
    ("BatchMatMulV2", "float32,float32"),
)
_SWITCH_HALF = (
    "Conv2D:InputDtype:float16,float16",
    "Conv2DBackpropInputD:InputDtype:float16,float16",
    "Conv2DBackpropInput:int32,InputDtype:float16,float16",
    "Conv2DTransposeD:InputDtype:float16,float16",
    "Conv2DTranspose:InputDtype:int32,float16,float16",
    "Conv2DBackpropFilterD:InputDtype:float16,float16",
    "Conv2DBackpropFilter:InputDtype:float16,int32,float16",
    "DepthwiseConv2D:InputDtype:float16,float16",
    "DepthwiseConv2DBackpropInputD:InputDtype:float16,float16",
    "DepthwiseConv2DBackpropInput:InputDtype:int32,float16,float16",
    "DepthwiseConv2DBackpropFilterD:InputDtype:float16,float16",
    "DepthwiseConv2DBackpropFilter:InputDtype:float16,int32,float16",
    "Deconvolution:InputDtype:float16,float16",
    "Conv3D:InputDtype:float16,float16",
    "Conv3DBackpropInputD:InputDtype:float16,float16",
    "Conv3DBackpropInput:InputDtype:int32,float16,float16",
    "Conv3DTransposeD:InputDtype:float16,float16",
    "Conv3DTranspose:InputDtype:int32,float16,float16",
    "Conv3DBackpropFilterD:InputDtype:float16,float16",
    "Conv3DBackpropFilter:InputDtype:float16,int32,float16",
)


def switch_config_text() -> str:
    """The shipped file's text (its Conv2DBackpropInput line really lacks ``InputDtype:`` before int32)."""
    lines = [f"OpType::{op}:InputDtype:{dtypes},OutputDtype:float32" for op, dtypes in _SWITCH_TYPES]
    lines += [f"OpType::{spec},OutputDtype:float32" for spec in _SWITCH_HALF]
    return "\n".join(lines) + "\n"


def _flag(control, field: int):
    return tf.equal(tf.math.floormod(tf.math.floordiv(control, field), 2), 1)


def _input_pipeline(queue, batch_size):
    """facenet.create_input_pipeline with one preprocessing thread (script: 4)."""
    filenames, label, control = queue.dequeue()
    images = []
    for filename in tf.unstack(filenames):
        image = tf.image.decode_image(tf.io.read_file(filename), 3, expand_animations=False)
        image = tf.cond(_flag(control[0], 1), lambda: tf.image.rot90(image), lambda: tf.identity(image))
        image = tf.cond(
            _flag(control[0], 2),
            lambda: tf.image.random_crop(image, (IMAGE, IMAGE, 3), seed=3),
            lambda: tf.image.resize_with_crop_or_pad(image, IMAGE, IMAGE),
        )
        image = tf.cond(
            _flag(control[0], 4), lambda: tf.image.random_flip_left_right(image, seed=4), lambda: tf.identity(image)
        )
        image = tf.cond(
            _flag(control[0], 8),
            lambda: (tf.cast(image, tf.float32) - 127.5) / 128.0,
            lambda: tf.image.per_image_standardization(tf.cast(image, tf.float32)),
        )
        image = tf.cond(_flag(control[0], 16), lambda: tf.image.flip_left_right(image), lambda: tf.identity(image))
        image.set_shape((IMAGE, IMAGE, 3))
        images.append(image)
    return v1.train.batch_join(
        [[images, label]],
        batch_size=batch_size,
        shapes=[(IMAGE, IMAGE, 3), ()],
        enqueue_many=True,
        capacity=4 * 100,
        allow_smaller_final_batch=True,
    )


def _unit(x, filters, kernel, phase_train, name, stride=1, padding="SAME"):
    """slim.conv2d with batch norm + ReLU (no bias)."""
    y = conv2d(x, max(filters // W, 4), kernel, stride, padding, name=name, bias=False)
    return tf.nn.relu(batch_norm(y, phase_train, name + "/BatchNorm", 0.995, 1e-3, "inline", scale=False))


def _residual(net, mixed, scale, activation, name):
    up = conv2d(mixed, int(net.shape[-1]), 1, name=name + "/Conv2d_1x1_up")
    net = net + scale * up
    return tf.nn.relu(net) if activation else net


def _block35(net, pt, name, scale=0.17):
    b0 = _unit(net, 32, 1, pt, name + "/B0_1x1")
    b1 = _unit(_unit(net, 32, 1, pt, name + "/B1_0a"), 32, 3, pt, name + "/B1_0b")
    b2 = _unit(_unit(_unit(net, 32, 1, pt, name + "/B2_0a"), 48, 3, pt, name + "/B2_0b"), 64, 3, pt, name + "/B2_0c")
    return _residual(net, tf.concat([b0, b1, b2], 3), scale, True, name)


def _block17(net, pt, name, scale=0.10):
    b0 = _unit(net, 192, 1, pt, name + "/B0_1x1")
    b1 = _unit(
        _unit(_unit(net, 128, 1, pt, name + "/B1_0a"), 160, [1, 7], pt, name + "/B1_0b"),
        192,
        [7, 1],
        pt,
        name + "/B1_0c",
    )
    return _residual(net, tf.concat([b0, b1], 3), scale, True, name)


def _block8(net, pt, name, scale=0.20, activation=True):
    b0 = _unit(net, 192, 1, pt, name + "/B0_1x1")
    b1 = _unit(
        _unit(_unit(net, 192, 1, pt, name + "/B1_0a"), 224, [1, 3], pt, name + "/B1_0b"),
        256,
        [3, 1],
        pt,
        name + "/B1_0c",
    )
    return _residual(net, tf.concat([b0, b1], 3), scale, activation, name)


def _network(images, pt, keep_probability):
    """inception_resnet_v2 body with ``REPEATS`` block repeats (fewer than the script's, see there)."""
    net = _unit(images, 32, 3, pt, "Conv2d_1a_3x3", 2, "VALID")
    net = _unit(net, 32, 3, pt, "Conv2d_2a_3x3", 1, "VALID")
    net = _unit(net, 64, 3, pt, "Conv2d_2b_3x3")
    net = tf.nn.max_pool2d(net, 3, 2, "VALID")
    net = _unit(net, 80, 1, pt, "Conv2d_3b_1x1", 1, "VALID")
    net = _unit(net, 192, 3, pt, "Conv2d_4a_3x3", 1, "VALID")
    net = tf.nn.max_pool2d(net, 3, 2, "VALID")
    b0 = _unit(net, 96, 1, pt, "Mixed_5b/B0")
    b1 = _unit(_unit(net, 48, 1, pt, "Mixed_5b/B1_0a"), 64, 5, pt, "Mixed_5b/B1_0b")
    b2 = _unit(_unit(_unit(net, 64, 1, pt, "Mixed_5b/B2_0a"), 96, 3, pt, "Mixed_5b/B2_0b"), 96, 3, pt, "Mixed_5b/B2_0c")
    b3 = _unit(tf.nn.avg_pool2d(net, 3, 1, "SAME"), 64, 1, pt, "Mixed_5b/B3")
    net = tf.concat([b0, b1, b2, b3], 3)
    for i in range(REPEATS["block35"]):
        net = _block35(net, pt, f"Repeat/block35_{i + 1}")
    b0 = _unit(net, 384, 3, pt, "Mixed_6a/B0", 2, "VALID")
    b1 = _unit(
        _unit(_unit(net, 256, 1, pt, "Mixed_6a/B1_0a"), 256, 3, pt, "Mixed_6a/B1_0b"),
        384,
        3,
        pt,
        "Mixed_6a/B1_1a",
        2,
        "VALID",
    )
    net = tf.concat([b0, b1, tf.nn.max_pool2d(net, 3, 2, "VALID")], 3)
    for i in range(REPEATS["block17"]):
        net = _block17(net, pt, f"Repeat_1/block17_{i + 1}")
    b0 = _unit(_unit(net, 256, 1, pt, "Mixed_7a/B0_0a"), 384, 3, pt, "Mixed_7a/B0_1a", 2, "VALID")
    b1 = _unit(_unit(net, 256, 1, pt, "Mixed_7a/B1_0a"), 288, 3, pt, "Mixed_7a/B1_1a", 2, "VALID")
    b2 = _unit(
        _unit(_unit(net, 256, 1, pt, "Mixed_7a/B2_0a"), 288, 3, pt, "Mixed_7a/B2_0b"),
        320,
        3,
        pt,
        "Mixed_7a/B2_1a",
        2,
        "VALID",
    )
    net = tf.concat([b0, b1, b2, tf.nn.max_pool2d(net, 3, 2, "VALID")], 3)
    for i in range(REPEATS["block8"]):
        net = _block8(net, pt, f"Repeat_2/block8_{i + 1}")
    net = _block8(net, pt, "Block8", activation=False)
    net = _unit(net, 1536, 1, pt, "Conv2d_7b_1x1")
    net = tf.reduce_mean(net, axis=[1, 2], name="AvgPool_1a_8x8")
    net = tf.cond(pt, lambda: tf.nn.dropout(net, rate=1.0 - keep_probability, seed=5), lambda: tf.identity(net))
    with v1.variable_scope("Bottleneck"):  # slim.fully_connected under the arg_scope: no bias, BN, no activation
        w = v1.get_variable(
            "weights", [int(net.shape[-1]), EMBEDDING], initializer=v1.glorot_uniform_initializer(seed=6)
        )
    return batch_norm(tf.matmul(net, w), pt, "Bottleneck/BatchNorm", 0.995, 1e-3, "inline", scale=False)


def _write_images(files_dir: Path) -> list[str]:
    """Eight random RGB PNGs the string pipeline reads (random pixels, seeded)."""
    rng = np.random.RandomState(7)
    paths = []
    for i in range(8):
        path = files_dir / f"face_{i}.png"
        pixels = rng.randint(0, 256, size=(FILE_SIZE, FILE_SIZE, 3)).astype(np.uint8)
        path.write_bytes(tf.io.encode_png(pixels).numpy())
        paths.append(str(path))
    return paths


def build(files_dir: Path) -> CorpusModel:
    from npu_jupyter.scope import without_npu_compile_scope

    switch_config = files_dir / "switch_config.txt"
    switch_config.write_text(switch_config_text(), encoding="utf-8")
    paths = _write_images(files_dir)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(3)
        global_step = tf.Variable(0, trainable=False, name="global_step")
        image_paths_placeholder = v1.placeholder(tf.string, shape=(None, 1), name="image_paths")
        labels_placeholder = v1.placeholder(tf.int32, shape=(None, 1), name="labels")
        batch_size_placeholder = v1.placeholder(tf.int32, name="batch_size")
        control_placeholder = v1.placeholder(tf.int32, shape=(None, 1), name="control")
        learning_rate_placeholder = v1.placeholder(tf.float32, name="learning_rate")
        phase_train_placeholder = v1.placeholder(tf.bool, name="phase_train")
        with without_npu_compile_scope():
            input_queue = tf.queue.FIFOQueue(
                capacity=2000000, dtypes=[tf.string, tf.int32, tf.int32], shapes=[(1,), (1,), (1,)]
            )
            enqueue_op = input_queue.enqueue_many(
                [image_paths_placeholder, labels_placeholder, control_placeholder], name="enqueue_op"
            )
            image_batch, label_batch = _input_pipeline(input_queue, batch_size_placeholder)
        image_batch = tf.identity(tf.identity(image_batch, "image_batch"), "input")
        label_batch = tf.identity(label_batch, "label_batch")
        prelogits = _network(image_batch, phase_train_placeholder, 0.8)
        logits = dense(prelogits, CLASSES, name="Logits", stddev=0.05)
        for var in v1.trainable_variables():
            if var.op.name.endswith(("weights", "kernel")):
                v1.add_to_collection(v1.GraphKeys.REGULARIZATION_LOSSES, 5e-4 * tf.nn.l2_loss(var))
        prelogits_norm = tf.reduce_mean(tf.norm(tf.abs(prelogits) + 1e-4, ord=1.0, axis=1))
        v1.add_to_collection(v1.GraphKeys.REGULARIZATION_LOSSES, prelogits_norm * 5e-4)
        centers = v1.get_variable("centers", [CLASSES, EMBEDDING], initializer=v1.zeros_initializer(), trainable=False)
        label = tf.reshape(label_batch, [-1])
        centers_batch = tf.gather(centers, label)
        update_centers = v1.scatter_sub(centers, label, (1 - 0.95) * (centers_batch - prelogits))
        with tf.control_dependencies([update_centers]):
            center_loss = tf.reduce_mean(tf.square(prelogits - centers_batch))
        v1.add_to_collection(v1.GraphKeys.REGULARIZATION_LOSSES, center_loss * 0.0)
        learning_rate = v1.train.exponential_decay(learning_rate_placeholder, global_step, 100 * 1000, 1.0)
        v1.summary.scalar("learning_rate", learning_rate)
        cross_entropy_mean = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_batch, logits=logits), name="cross_entropy"
        )
        v1.add_to_collection("losses", cross_entropy_mean)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.cast(label_batch, tf.int64)), tf.float32))
        regularization_losses = v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)
        total_loss = tf.add_n([cross_entropy_mean, *regularization_losses], name="total_loss")
        loss_averages = v1.train.ExponentialMovingAverage(0.9, name="avg")
        losses = [*v1.get_collection("losses"), total_loss]
        loss_averages_op = loss_averages.apply(losses)
        for item in losses:
            v1.summary.scalar(item.op.name + " (raw)", item)
            v1.summary.scalar(item.op.name, loss_averages.average(item))
        with tf.control_dependencies([loss_averages_op]):
            apply_op = loss_scaled_apply(
                v1.train.AdamOptimizer(learning_rate, 0.9, 0.999, 0.1),
                total_loss,
                v1.trainable_variables(),
                global_step,
                init_scale=2097156.0,
                dynamic=False,
            )
        averages_op = v1.train.ExponentialMovingAverage(0.9999, global_step).apply(v1.trainable_variables())
        with tf.control_dependencies([apply_op, averages_op]):
            train_op = tf.no_op(name="train")
        summary_op = v1.summary.merge_all()
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]

    count = 24
    before = [
        (
            enqueue_op,
            {
                image_paths_placeholder: np.array([[paths[i % len(paths)]] for i in range(count)]),
                labels_placeholder: np.array([[i % CLASSES] for i in range(count)], np.int32),
                control_placeholder: np.full((count, 1), CONTROL, np.int32),
            },
        )
    ]
    fetches = [
        total_loss,
        train_op,
        global_step,
        regularization_losses,
        prelogits,
        cross_entropy_mean,
        learning_rate,
        prelogits_norm,
        accuracy,
        center_loss,
        summary_op,
    ]
    return CorpusModel(
        name="inception_resnet_v2_mixed",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=fetches,
        loss=total_loss.name,
        config={
            "kind": "session",
            "parameter_map": {
                "use_off_line": True,
                "mix_compile_mode": True,
                "precision_mode": "allow_fp32_to_fp16",
                "customize_dtypes": str(switch_config),
            },
            "rewrite_options": {"remapping": "OFF"},
        },
        feed_fn=lambda step: {
            learning_rate_placeholder: 0.05,
            phase_train_placeholder: True,
            batch_size_placeholder: BATCH,
        },
        queue_runners=True,
        notes=(
            "Block repeats 6/12/6+1 (script 10/20/9+1) so the training graph is ~37.7k ops, the ~40k "
            "class the corpus needs, not ~56k; every block type is kept. Channels /8, images 80x80 cropped from 90x90 PNGs (script "
            "160 from 182), batch 2 (script 90), 10 classes, embedding 64 (script 512), one preprocessing "
            "thread (script 4) so the image order is the same in every session. The run script uses "
            "models.inception_resnet_v1; train_softmax.py takes --model_def and the repository ships "
            "models/inception_resnet_v2.py, used here. Loss-scale optimizer rebuilt from raw ops; its fixed "
            "scale 2097156 is the script's. switch_config.txt is written verbatim into files_dir."
        ),
        extra={"before_training": before},
    )
