"""Standard GAN on MNIST, after ModelZoo ``TensorFlow2/built-in/cv/image_synthesis/tf_v2_01_SGAN_ID3999_for_TensorFlow2.X/train.py``.

Written for npu_jupyter's corpus from that script (facts carried over, code written here): ``import
npu_device``, its ``npu_config()`` with every adapter call as the script makes it (dump / overflow /
profiling / precision_mode / mixlist / fusion switch / auto_tune, then ``npu_device.open().as_default()``),
its argparse flags, the ``npu_device.distribute`` branch for ``rank_size != 1``, two-layer MLP
generator and discriminator built from a custom ``Dense`` layer whose ``call`` is a ``@tf.function``,
models whose ``call`` is a ``@tf.function`` too, called inside the ``@tf.function`` ``train_step``
(nested traced functions), two Adam optimizers and the epoch loop over ``tf.data`` iterators.
Changed: data and sizes only — ``my_mnist.load_data`` (the script's MNIST reader) is replaced by 32
random images, and the flag defaults shrink ``batch_size`` 128 -> 8 and ``epochs`` 200 -> 1 (four steps).
"""

import ast
import argparse
import time

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers
import npu_device


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
            '"aicpu":"on", "L2": "on", "aic_metrics":"PipeUtilization", "fp_point":"", "bp_point":""}'
        )
        npu_device.global_options().profiling_config.profiling_options = profiling_options
    npu_device.global_options().precision_mode = args.precision_mode
    if args.use_mixlist and args.precision_mode == "allow_mix_precision":
        npu_device.global_options().modify_mixlist = args.mixlist_file
    if args.fusion_off_flag:
        npu_device.global_options().fusion_switch_file = args.fusion_off_file
    if args.auto_tune:
        npu_device.global_options().auto_tune_mode = "RL,GA"
    npu_device.open().as_default()


parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=8)  # script: 128
parser.add_argument("--data_path", type=str, default="./")
parser.add_argument("--epochs", default=1, type=int)  # script: 200
parser.add_argument("--lossscale", default=2)
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
parser.add_argument("--auto_tune", dest="auto_tune", type=ast.literal_eval)
parser.add_argument("--rank_size", default=1, type=int)
parser.add_argument("--device_id", default=0, type=int)
args = parser.parse_args()

npu_config()
epochs = args.epochs
batch_size = args.batch_size

# data: 32 random "images" in [0, 1) with one-hot labels (the script reads MNIST through my_mnist)
rng = np.random.RandomState(0)
train_images = rng.rand(32, 28, 28).astype(np.float32)
train_labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 32)]
if args.rank_size != 1:
    train_images = np.split(train_images, args.rank_size)[args.device_id]
    train_labels = np.split(train_labels, args.rank_size)[args.device_id]
    batch_size = batch_size // args.rank_size
train_images = train_images.reshape(train_images.shape[0], 28, 28).astype("float32")


class Dense(layers.Layer):
    def __init__(self, input_dim, units):
        super(Dense, self).__init__()
        init = tf.initializers.glorot_uniform()
        self.w = tf.Variable(initial_value=init(shape=(input_dim, units), dtype=tf.float32), trainable=True)
        self.b = tf.Variable(initial_value=tf.zeros(shape=(1, units), dtype=tf.float32), trainable=True)

    @tf.function
    def call(self, x, training=True):
        return tf.matmul(x, self.w) + self.b


class Discriminator(tf.keras.Model):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.dense1 = Dense(28 * 28, 128)
        self.dense2 = Dense(128, 1)

    @tf.function
    def call(self, x, training=True):
        x = tf.reshape(x, [-1, 784])
        hidden = tf.nn.relu(self.dense1(x, training))
        return tf.nn.sigmoid(self.dense2(hidden, training))


class Generator(tf.keras.Model):
    def __init__(self):
        super(Generator, self).__init__()
        self.dense1 = Dense(100, 128)
        self.dense2 = Dense(128, 784)

    @tf.function
    def call(self, x, training=True):
        hidden = tf.nn.relu(self.dense1(x, training))
        image = tf.nn.sigmoid(self.dense2(hidden, training))
        return tf.reshape(image, [-1, 28, 28])


d = Discriminator()
g = Generator()
cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=False)


def d_loss(real_output, fake_output):
    real_loss = cross_entropy(tf.ones_like(real_output), real_output)
    fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
    return real_loss + fake_loss


def g_loss(fake_output):
    return cross_entropy(tf.ones_like(fake_output), fake_output)


if args.rank_size != 1:
    generator_optimizer = npu_device.distribute.npu_distributed_keras_optimizer_wrapper(tf.keras.optimizers.Adam(1e-4))
    discriminator_optimizer = npu_device.distribute.npu_distributed_keras_optimizer_wrapper(
        tf.keras.optimizers.Adam(1e-5)
    )
else:
    generator_optimizer = tf.keras.optimizers.Adam(1e-4)
    discriminator_optimizer = tf.keras.optimizers.Adam(1e-5)

if args.rank_size != 1:
    training_vars = g.trainable_variables
    npu_device.distribute.broadcast(training_vars, root_rank=0)
    training_vars2 = d.trainable_variables
    npu_device.distribute.broadcast(training_vars2, root_rank=0)

z_dim = 100
z = tf.random.uniform([batch_size, z_dim], -1.0, 1.0)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        generated_images = g(z, training=True)
        real_output = d(images, training=True)
        fake_output = d(generated_images, training=True)
        gen_loss = g_loss(fake_output)
        disc_loss = d_loss(real_output, fake_output)
    gradients_of_generator = gen_tape.gradient(gen_loss, g.trainable_variables)
    gradients_of_discriminator = disc_tape.gradient(disc_loss, d.trainable_variables)
    generator_optimizer.apply_gradients(zip(gradients_of_generator, g.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(gradients_of_discriminator, d.trainable_variables))
    return gen_loss, disc_loss


def train(train_images, train_labels, epochs):
    index = list(range(train_images.shape[0]))
    images_batches = iter(tf.data.Dataset.from_tensor_slices(train_images[index]).batch(batch_size))
    labels_batches = iter(tf.data.Dataset.from_tensor_slices(train_labels[index]).batch(batch_size))
    for epoch in range(epochs):
        while True:
            try:
                x_real_batch = next(images_batches)
                y_label_batch = next(labels_batches)
                start_time = time.time()
                gen_loss, disc_loss = train_step(x_real_batch, y_label_batch)
                total_time = time.time() - start_time
            except StopIteration:
                np.random.shuffle(index)
                images_batches = iter(tf.data.Dataset.from_tensor_slices(train_images[index]).batch(batch_size))
                labels_batches = iter(tf.data.Dataset.from_tensor_slices(train_labels[index]).batch(batch_size))
                break
        print(
            "Time for epoch {} gen_loss: {:.4f} disc_loss: {:.4f} s/step: {:.4f}".format(
                epoch + 1, gen_loss, disc_loss, total_time
            )
        )


train(train_images, train_labels, epochs)
