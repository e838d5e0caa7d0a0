"""ResNet-50 with dynamic input shapes: Face-ResNet50 (CACD2000 face classification) from the model zoo.

Carried over from ``TrainResNet.py`` / ``ResNet.py``: the bottleneck ResNet-50 (7x7/2 stem, max-pool,
[3, 4, 6, 3] three-layer residual blocks with a projection shortcut on the first of each stage,
global average pool, one FC), batch norm after every conv, a ``tf.data`` dataset with an
*initializable* iterator built in the training graph (``MakeIterator`` sits next to the train op),
placeholders with a ``None`` batch dimension that the loop feeds from ``next_element``,
``sparse_softmax_cross_entropy`` summed, ``exponential_decay`` + Momentum(0.9), and the script's
session config: ``dynamic_input`` + ``dynamic_graph_execute_mode=lazy_recompile`` with remapping and
memory optimisation off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import batch_norm, conv2d, dense, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "ResNet"
IDIOMS = ("tfdata_initializable_iterator", "dynamic_input_shapes", "batch_norm_update_ops")
SOURCE = "TensorFlow/built-in/cv/image_classification/Face-ResNet50_ID1372_for_TensorFlow (TrainResNet.py, ResNet.py)"

SIZE = 32  # script: 224
WIDTH_DIVISOR = 8  # script: 64..2048 channels
CLASSES = 16  # script: 1200 identities (label_1200.npy)
BATCHES = (2, 3, 2)  # the batch size changes per step: what dynamic_input is for
STAGES = ((3, 64, 256, 1), (4, 128, 512, 2), (6, 256, 1024, 2), (3, 512, 2048, 2))  # blocks, mid, out, stride


def _block(x, mid: int, out: int, stride: int, project: bool, name: str):
    """Three-layer bottleneck with BN after each conv; projection shortcut on the first block of a stage."""
    shortcut = x
    if project:
        shortcut = batch_norm(conv2d(x, out, 1, stride, name=name + "_ShortcutConv"), True, name + "_bn_sc")
    y = tf.nn.relu(batch_norm(conv2d(x, mid, 1, stride, name=name + "_lovalConv1"), True, name + "_bn1"))
    y = tf.nn.relu(batch_norm(conv2d(y, mid, 3, 1, name=name + "_lovalConv2"), True, name + "_bn2"))
    y = batch_norm(conv2d(y, out, 1, 1, name=name + "_lovalConv3"), True, name + "_bn3")
    return tf.nn.relu(tf.add(shortcut, y))


def build(files_dir: Path) -> CorpusModel:
    rng = np.random.RandomState(0)
    images_np = rng.rand(16, SIZE, SIZE, 3).astype(np.float32) * 255.0
    labels_np = rng.randint(1, CLASSES + 1, size=16).astype(np.int64)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(0)

        def generator():
            for i in range(images_np.shape[0]):
                yield images_np[i], labels_np[i] - 1

        ds = tf.data.Dataset.from_generator(
            generator, (tf.float32, tf.int64), (tf.TensorShape([SIZE, SIZE, 3]), tf.TensorShape([]))
        )
        ds = ds.shuffle(buffer_size=16, seed=0).batch(BATCHES[0]).repeat(4).prefetch(1)
        iterator = v1.data.make_initializable_iterator(ds)
        next_element = iterator.get_next()

        images = v1.placeholder(tf.float32, shape=[None, SIZE, SIZE, 3], name="images")
        labels = v1.placeholder(tf.int64, shape=[None], name="labels")
        bgr = tf.reverse(images, axis=[-1]) - tf.constant([103.939, 116.779, 123.68])
        x = tf.nn.relu(batch_norm(conv2d(bgr, 64 // WIDTH_DIVISOR, 7, 2, name="conv1"), True, "bn_conv1"))
        x = tf.nn.max_pool2d(x, 3, 2, "SAME", name="pool1")
        for stage, (blocks, mid, out, stride) in enumerate(STAGES, start=1):
            for b in range(blocks):
                x = _block(
                    x,
                    mid // WIDTH_DIVISOR,
                    out // WIDTH_DIVISOR,
                    stride if b == 0 else 1,
                    b == 0,
                    f"block{stage}_{b + 1}",
                )
        pool = tf.reduce_mean(x, axis=[1, 2], name="pool2")  # the script's 7x7 VALID avg-pool on a 7x7 map
        logits = dense(pool, CLASSES, name="fc1200")
        with v1.name_scope("cost"):
            cost = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=labels))
        with v1.name_scope("train"):
            global_steps = tf.Variable(0, name="global_step", trainable=False)
            lr = v1.train.exponential_decay(0.001, global_steps, 8 * 40, 0.1, staircase=True)
            with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
                train = v1.train.MomentumOptimizer(lr, 0.9).minimize(cost, global_step=global_steps)
        init = v1.global_variables_initializer()

    def feed(step: int) -> dict:
        batch = BATCHES[step % len(BATCHES)]
        idx = np.random.RandomState(step).choice(16, batch, replace=False)
        return {images: images_np[idx], labels: labels_np[idx] - 1}

    return CorpusModel(
        name="resnet50_dynamic",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=[init, iterator.initializer],
        train_fetches=[cost, train],
        loss=cost.name,
        config={
            "kind": "session",
            "parameter_map": {"dynamic_input": True, "dynamic_graph_execute_mode": "lazy_recompile"},
            "rewrite_options": {"remapping": "OFF", "memory_optimization": "OFF"},
        },
        feed_fn=feed,
        notes=(
            "Images 32x32 (script 224), channels /8, 16 classes (script 1200), batch 2/3/2 per step so "
            "the input shape really changes (script 32). Real block counts [3,4,6,3]. The script feeds "
            "the placeholders with sess.run(next_element); feed_fn draws the same kind of batch directly "
            "(the dataset and its MakeIterator stay in the training graph). The script's BN is "
            "tf.layers.batch_normalization(training=True); here a raw-op BN whose moving averages go to "
            "UPDATE_OPS and the train op depends on them (the zoo ResNet idiom). Global mean pool replaces "
            "the 7x7 VALID avg-pool (same result on the script's 7x7 map)."
        ),
        extra={"next_element": next_element},
    )
