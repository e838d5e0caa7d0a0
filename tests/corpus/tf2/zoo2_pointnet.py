"""PointNet point-cloud classification, after ModelZoo ``TensorFlow2/built-in/cv/image_classification/pointnet_ID2531_for_TensorFlow2.X/pointnet.py``.

Written for npu_jupyter's corpus from that script (facts carried over, code written here): ``import
npu_convert_dropout`` and ``import npu_device`` (the script ships ``npu_convert_dropout.py`` and
``npu_ops.py``, which swap Keras' Dropout for the adapter's DropOutGenMask/DropOutDoMask ops), its
argparse flags and ``npu_config()`` with every adapter call as the script makes it, then
``npu_device.open().as_default()``; the T-net (Conv1D+BN+ReLU 32/64/512, global max pool, Dense+BN+ReLU
256/128, a Dense initialised to the identity with an orthogonal regulariser, then ``Dot``), used on the
points and on the 32 features; the classifier Conv1D 32/32/32/64/512, max pool, Dense 256 + Dropout
0.3, Dense 128 + Dropout 0.3, softmax; ``compile`` with
``npu_device.train.optimizer.NpuLossScaleOptimizer(keras.optimizers.Adam(learning_rate=0.001))``,
``sparse_categorical_crossentropy`` and ``metrics=["sparse_categorical_accuracy"]``; ``fit`` with
``validation_data``; the jitter-and-shuffle augmentation of the training set.
Changed: data and sizes only — ModelNet10 meshes sampled with trimesh are replaced by random point
clouds (24 train, 8 test, 64 points instead of 2048), ``batch_size`` 32 -> 8 and ``epochs`` 20 -> 1; the
trimesh/matplotlib imports (data reading and plots), the plotting and ``model.save_weights`` (saving,
not training; Keras 3 has no TF-format weights) are left out.
"""

import os
import argparse
import ast
import time

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers
import npu_convert_dropout
import npu_device


def parse_args():
    parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data_path", default="./", help="""directory to data""")
    parser.add_argument("--batch_size", default=8, type=int, help="""batch size for 1p""")  # script: 32
    parser.add_argument("--epochs", default=1, type=int, help="""epochs""")  # script: 20
    parser.add_argument("--part_steps", default=False, type=bool, help="part step, default is Fasle")
    parser.add_argument("--drop_remainder", default="True", type=ast.literal_eval)
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
    args, unknown_args = parser.parse_known_args()
    if len(unknown_args) > 0:
        for bad_arg in unknown_args:
            print("ERROR: Unknown command line arg: %s" % bad_arg)
        raise ValueError("Invalid command line arg(s)")
    return args


args = parse_args()


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
tf.random.set_seed(1234)

DATA_DIR = os.path.join(args.data_path, "ModelNet10/")
NUM_POINTS = 64  # script: 2048
NUM_CLASSES = 10
BATCH_SIZE = args.batch_size
EPOCHS = args.epochs


def parse_dataset(num_points=2048):
    """Random point clouds in the unit cube, one label per cloud (the script samples ModelNet10 meshes)."""
    rng = np.random.RandomState(0)
    train_points = rng.rand(24, num_points, 3)
    test_points = rng.rand(8, num_points, 3)
    train_labels = np.arange(24) % NUM_CLASSES
    test_labels = np.arange(8) % NUM_CLASSES
    class_map = {i: "class_%d" % i for i in range(NUM_CLASSES)}
    return train_points, test_points, train_labels, test_labels, class_map


train_points, test_points, train_labels, test_labels, CLASS_MAP = parse_dataset(NUM_POINTS)


def augment(points, label):
    points += tf.random.uniform(points.shape, -0.005, 0.005, dtype=tf.float64)
    points = tf.random.shuffle(points)
    return points, label


train_dataset = tf.data.Dataset.from_tensor_slices((train_points, train_labels))
test_dataset = tf.data.Dataset.from_tensor_slices((test_points, test_labels))
train_dataset = (
    train_dataset.shuffle(len(train_points)).map(augment).batch(BATCH_SIZE, drop_remainder=args.drop_remainder)
)
test_dataset = test_dataset.shuffle(len(test_points)).batch(BATCH_SIZE, drop_remainder=args.drop_remainder)


def conv_bn(x, filters):
    x = layers.Conv1D(filters, kernel_size=1, padding="valid")(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


def dense_bn(x, filters):
    x = layers.Dense(filters)(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


class OrthogonalRegularizer(keras.regularizers.Regularizer):
    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.eye = tf.eye(num_features)

    def __call__(self, x):
        x = tf.reshape(x, (-1, self.num_features, self.num_features))
        xxt = tf.tensordot(x, x, axes=(2, 2))
        xxt = tf.reshape(xxt, (-1, self.num_features, self.num_features))
        return tf.reduce_sum(self.l2reg * tf.square(xxt - self.eye))


def tnet(inputs, num_features):
    bias = keras.initializers.Constant(np.eye(num_features).flatten())
    reg = OrthogonalRegularizer(num_features)
    x = conv_bn(inputs, 32)
    x = conv_bn(x, 64)
    x = conv_bn(x, 512)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 256)
    x = dense_bn(x, 128)
    x = layers.Dense(
        num_features * num_features, kernel_initializer="zeros", bias_initializer=bias, activity_regularizer=reg
    )(x)
    feat_t = layers.Reshape((num_features, num_features))(x)
    return layers.Dot(axes=(2, 1))([inputs, feat_t])


inputs = keras.Input(shape=(NUM_POINTS, 3))
x = tnet(inputs, 3)
x = conv_bn(x, 32)
x = conv_bn(x, 32)
x = tnet(x, 32)
x = conv_bn(x, 32)
x = conv_bn(x, 64)
x = conv_bn(x, 512)
x = layers.GlobalMaxPooling1D()(x)
x = dense_bn(x, 256)
x = layers.Dropout(0.3)(x)
x = dense_bn(x, 128)
x = layers.Dropout(0.3)(x)
outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="pointnet")

model.compile(
    loss="sparse_categorical_crossentropy",
    optimizer=npu_device.train.optimizer.NpuLossScaleOptimizer(keras.optimizers.Adam(learning_rate=0.001)),
    metrics=["sparse_categorical_accuracy"],
)
if args.part_steps:
    model.fit(train_dataset, epochs=EPOCHS, validation_data=test_dataset, steps_per_epoch=60)
else:
    model.fit(train_dataset, epochs=EPOCHS, validation_data=test_dataset)
