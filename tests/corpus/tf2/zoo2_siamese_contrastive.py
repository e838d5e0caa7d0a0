"""Siamese network with a contrastive loss, after ModelZoo ``TensorFlow2/built-in/keras_sample/cv/siamese_contrastive_ID2538_for_TensorFlow2.X/siamese_contrastive.py``.

Written for npu_jupyter's corpus from that script (facts carried over, code written here): ``import
npu_device`` first, its argparse flags and ``npu_config()`` with every adapter call as the script makes
it, then ``npu_device.open().as_default()``; image pairs (same class = 1, other class = 0), a shared
embedding network (BatchNormalization, two tanh Conv2D + AveragePooling, Dense 10 tanh), a ``Lambda``
Euclidean distance, BatchNormalization, a sigmoid Dense; the contrastive loss with margin 1, RMSprop,
``metrics=["accuracy"]``, a ``TimeHistory`` callback, and ``fit`` with ``validation_data``.
Changed: data and sizes only — MNIST (``keras.datasets.mnist.load_data``) is replaced by 48 random
train / 16 random validation images, ``batch_size`` 16 -> 8 and ``epochs`` 10 -> 1; the script's
matplotlib import and plotting after training are left out (no display, no training).
"""

import npu_device
import argparse
import ast

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=8, help="batch_size")  # script: 16
parser.add_argument("--epochs", type=int, default=1, help="batch_size")  # script: 10
parser.add_argument("--log_steps", type=int, default=3750, help="steps per log")
parser.add_argument("--precision_mode", default="allow_mix_precision", type=str)
parser.add_argument("--over_dump", dest="over_dump", type=ast.literal_eval)
parser.add_argument("--data_dump_flag", dest="data_dump_flag", type=ast.literal_eval)
parser.add_argument("--data_dump_step", default="10")
parser.add_argument("--profiling", dest="profiling", type=ast.literal_eval)
parser.add_argument("--profiling_dump_path", default="/home/data", type=str)
parser.add_argument("--over_dump_path", default="/home/data", type=str)
parser.add_argument("--data_dump_path", default="/home/data", type=str)
parser.add_argument("--use_mixlist", dest="use_mixlist", type=ast.literal_eval)
parser.add_argument("--fusion_off_flag", dest="fusion_off_flag", type=ast.literal_eval)
parser.add_argument("--mixlist_file", default="ops_info.json", type=str)
parser.add_argument("--fusion_off_file", default="fusion_switch.cfg", type=str)
args = parser.parse_args()


def npu_config():
    if args.data_dump_flag:
        npu_device.global_options().dump_config.enable_dump = True
        npu_device.global_options().dump_config.dump_path = args.data_dump_path
        npu_device.global_options().dump_config.dump_step = args.data_dump_step
        npu_device.global_options().dump_config.dump_mode = "all"

    if args.over_dump:
        npu_device.global_options().dump_config.enable_dump_debug = True
        npu_device.global_options().dump_config.dump_path = args.over_dump_path
        npu_device.global_options().dump_config.dump_debug_mode = "all"

    if args.profiling:
        npu_device.global_options().profiling_config.enable_profiling = True
        profiling_options = (
            '{"output":"' + args.profiling_dump_path + '", "training_trace":"on", "task_trace":"on", '
            '"aicpu":"on", "aic_metrics":"PipeUtilization", "fp_point":"", "bp_point":""}'
        )
        npu_device.global_options().profiling_config.profiling_options = profiling_options
    npu_device.global_options().precision_mode = args.precision_mode
    if args.use_mixlist and args.precision_mode == "allow_mix_precision":
        npu_device.global_options().modify_mixlist = args.mixlist_file
    if args.fusion_off_flag:
        npu_device.global_options().fusion_switch_file = args.fusion_off_file
    npu_device.open().as_default()


npu_config()

import time
import random
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

epochs = args.epochs
batch_size = args.batch_size
margin = 1  # Margin for contrastive loss.

# data: random 28x28 "digits" with labels 0-9 (the script loads MNIST)
rng = np.random.RandomState(0)
random.seed(0)
x_train, y_train = rng.rand(48, 28, 28).astype("float32"), np.arange(48) % 10
x_val, y_val = rng.rand(16, 28, 28).astype("float32"), np.arange(16) % 10


def make_pairs(x, y):
    """Each image with one image of its class (label 1) and one of another class (label 0)."""
    num_classes = max(y) + 1
    digit_indices = [np.where(y == i)[0] for i in range(num_classes)]
    pairs, labels = [], []
    for idx1 in range(len(x)):
        label1 = y[idx1]
        pairs += [[x[idx1], x[random.choice(digit_indices[label1])]]]
        labels += [1]
        label2 = random.randint(0, num_classes - 1)
        while label2 == label1:
            label2 = random.randint(0, num_classes - 1)
        pairs += [[x[idx1], x[random.choice(digit_indices[label2])]]]
        labels += [0]
    return np.array(pairs), np.array(labels).astype("float32")


pairs_train, labels_train = make_pairs(x_train, y_train)
pairs_val, labels_val = make_pairs(x_val, y_val)
x_train_1, x_train_2 = pairs_train[:, 0], pairs_train[:, 1]
x_val_1, x_val_2 = pairs_val[:, 0], pairs_val[:, 1]


def euclidean_distance(vects):
    x, y = vects
    sum_square = tf.math.reduce_sum(tf.math.square(x - y), axis=1, keepdims=True)
    return tf.math.sqrt(tf.math.maximum(sum_square, tf.keras.backend.epsilon()))


input = layers.Input((28, 28, 1))
x = tf.keras.layers.BatchNormalization()(input)
x = layers.Conv2D(4, (5, 5), activation="tanh")(x)
x = layers.AveragePooling2D(pool_size=(2, 2))(x)
x = layers.Conv2D(16, (5, 5), activation="tanh")(x)
x = layers.AveragePooling2D(pool_size=(2, 2))(x)
x = layers.Flatten()(x)
x = tf.keras.layers.BatchNormalization()(x)
x = layers.Dense(10, activation="tanh")(x)
embedding_network = keras.Model(input, x)

input_1 = layers.Input((28, 28, 1))
input_2 = layers.Input((28, 28, 1))
tower_1 = embedding_network(input_1)
tower_2 = embedding_network(input_2)
merge_layer = layers.Lambda(euclidean_distance)([tower_1, tower_2])
normal_layer = tf.keras.layers.BatchNormalization()(merge_layer)
output_layer = layers.Dense(1, activation="sigmoid")(normal_layer)
siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)


def loss(margin=1):
    def contrastive_loss(y_true, y_pred):
        square_pred = tf.math.square(y_pred)
        margin_square = tf.math.square(tf.math.maximum(margin - (y_pred), 0))
        return tf.math.reduce_mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss


siamese.compile(loss=loss(margin=margin), optimizer="RMSprop", metrics=["accuracy"])


class TimeHistory(tf.keras.callbacks.Callback):
    def __init__(self, batch_size, log_steps, initial_step=0):
        self.batch_size = batch_size
        super(TimeHistory, self).__init__()
        self.steps_before_epoch = initial_step
        self.last_log_step = initial_step
        self.log_steps = log_steps
        self.steps_in_epoch = 0
        self.start_time = None

    @property
    def global_steps(self):
        return self.steps_before_epoch + self.steps_in_epoch

    def on_epoch_begin(self, epoch, logs=None):
        if not self.start_time:
            self.start_time = time.time()
        self.epoch_start = time.time()

    def on_batch_end(self, batch, logs=None):
        self.steps_in_epoch = batch + 1
        if self.global_steps - self.last_log_step >= self.log_steps:
            elapsed = time.time() - self.start_time
            print(
                "TimeHistory: %.2f seconds between steps %d and %d" % (elapsed, self.last_log_step, self.global_steps)
            )
            self.last_log_step = self.global_steps
            self.start_time = None

    def on_epoch_end(self, epoch, logs=None):
        self.steps_before_epoch += self.steps_in_epoch
        self.steps_in_epoch = 0


history = siamese.fit(
    [x_train_1, x_train_2],
    labels_train,
    validation_data=([x_val_1, x_val_2], labels_val),
    batch_size=batch_size,
    epochs=epochs,
    verbose=2,
    callbacks=[TimeHistory(args.batch_size, args.log_steps)],
)
