"""Knowledge distillation, after ModelZoo ``TensorFlow2/built-in/keras_sample/cv/knowledge_disti_ID2517_for_TensorFlow2.X/knowledge_distillation.py``.

Written for npu_jupyter's corpus from that script (facts carried over, code written here): ``import
npu_device`` first, its argparse flags and ``npu_config()`` with every adapter call as the script makes
it, then ``npu_device.open().as_default()``; a ``Distiller(keras.Model)`` that overrides ``compile``,
``train_step`` (teacher forward pass outside the tape, student loss + KL distillation loss on
temperature-softened softmaxes weighted by ``alpha``, gradients of the student only,
``compiled_metrics.update_state``) and ``test_step``; a Conv2D teacher (256/512 filters) and a smaller
student (16/32), teacher trained with ``fit`` and ``evaluate``d first, then the distiller, then a
student from scratch, each with ``SparseCategoricalAccuracy``.
Changed: data and sizes only — ``mnist.npz`` under ``--data_path`` is replaced by 96 random train and 32
random test images (three training steps of the default batch of 32), the teacher's filters shrink 256/512 -> 16/32, ``--epoch`` 2 -> 1 and the
distiller's and scratch student's ``epochs=3`` -> 1.
"""

import npu_device

import ast
import argparse

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--data_path", default="/home/data", type=str)
parser.add_argument("--epoch", default=1, type=int)  # script: 2
parser.add_argument("--eval_static", dest="eval_static", type=ast.literal_eval)
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


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super(Distiller, self).__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super(Distiller, self).compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def train_step(self, data):
        x, y = data
        teacher_predictions = self.teacher(x, training=False)
        with tf.GradientTape() as tape:
            student_predictions = self.student(x, training=True)
            student_loss = self.student_loss_fn(y, student_predictions)
            distillation_loss = self.distillation_loss_fn(
                tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                tf.nn.softmax(student_predictions / self.temperature, axis=1),
            )
            loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        trainable_vars = self.student.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        self.compiled_metrics.update_state(y, student_predictions)
        results = {m.name: m.result() for m in self.metrics}
        results.update({"student_loss": student_loss, "distillation_loss": distillation_loss})
        return results

    def test_step(self, data):
        x, y = data
        y_prediction = self.student(x, training=False)
        student_loss = self.student_loss_fn(y, y_prediction)
        self.compiled_metrics.update_state(y, y_prediction)
        results = {m.name: m.result() for m in self.metrics}
        results.update({"student_loss": student_loss})
        return results


teacher = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),  # script: 256 filters
        layers.LeakyReLU(alpha=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),  # script: 512 filters
        layers.Flatten(),
        layers.Dense(10),
    ],
    name="teacher",
)
student = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(alpha=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(10),
    ],
    name="student",
)
student_scratch = keras.models.clone_model(student)

# data: random images and labels (the script loads mnist.npz from --data_path)
rng = np.random.RandomState(0)
x_train, y_train = rng.randint(0, 256, (96, 28, 28)).astype("uint8"), rng.randint(0, 10, 96)
x_test, y_test = rng.randint(0, 256, (32, 28, 28)).astype("uint8"), rng.randint(0, 10, 32)
if args.eval_static:
    x_test = x_test[:9984]
    y_test = y_test[:9984]
x_train = np.reshape(x_train.astype("float32") / 255.0, (-1, 28, 28, 1))
x_test = np.reshape(x_test.astype("float32") / 255.0, (-1, 28, 28, 1))

teacher.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
teacher.fit(x_train, y_train, epochs=args.epoch, verbose=2)
teacher.evaluate(x_test, y_test, verbose=2)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(
    optimizer=keras.optimizers.Adam(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
    student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    distillation_loss_fn=keras.losses.KLDivergence(),
    alpha=0.1,
    temperature=10,
)
distiller.fit(x_train, y_train, epochs=1, verbose=2)  # script: epochs=3
distiller.evaluate(x_test, y_test, verbose=2)

student_scratch.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
student_scratch.fit(x_train, y_train, epochs=1, verbose=2)  # script: epochs=3
student_scratch.evaluate(x_test, y_test, verbose=2)
